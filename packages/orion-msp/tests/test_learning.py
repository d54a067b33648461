"""Can the network learn in context at all? (The shipped checkpoint of session 2 could not.)

Root cause found in session 3: the Perceiver memory's read step added to every row a vector that
is nearly the same for all rows of an episode but differs between episodes, several times larger
than the row-to-row variation of the row embeddings. After the ICL blocks' LayerNorm the rows (and
the label embedding) were drowned, and training sat at the chance loss. The read is now gated by a
learned scalar initialised at 0, so the memory starts as the identity.
"""

from __future__ import annotations

import torch
from tabzoo_orion_msp.config import CONFIGS
from tabzoo_orion_msp.model import OrionMSP

CHANCE = float(torch.log(torch.tensor(2.0)))


def _flip_task(seed: int, episodes: int = 4, rows: int = 96, n_context: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """``y = (x_0 > 0) xor flip`` with ``flip`` drawn per episode: only the context labels tell which.

    A model that ignores the context labels cannot beat the chance loss ``ln 2``.
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(episodes, rows, 1, generator=g)
    flip = torch.randint(0, 2, (episodes, 1), generator=g)
    return x, ((x[..., 0] > 0).long() ^ flip)


def test_memory_read_starts_as_the_identity_and_the_ungated_read_drowns_the_rows() -> None:
    x, _ = _flip_task(0)
    torch.manual_seed(0)
    model = OrionMSP("tiny")
    assert model.memory is not None and model.memory.gate is not None
    with torch.no_grad():
        h = model.row_embeddings(x, 64)
        torch.testing.assert_close(model.memory(h, 64), h, rtol=0, atol=0)
    torch.manual_seed(0)
    ungated = OrionMSP(CONFIGS["tiny"].with_(memory_gate=False))
    assert ungated.memory is not None and ungated.memory.gate is None
    with torch.no_grad():
        h = ungated.row_embeddings(x, 64)
        delta = ungated.memory(h, 64) - h
    shared = delta.mean(1).pow(2).mean().sqrt()  # the part every row of an episode gets
    # the cause of the non-learning model: the read adds an episode-level vector that is larger
    # than its own row-to-row part and than the row-to-row variation of the row embeddings
    assert shared > 3 * delta.std(1).mean(), (float(shared), float(delta.std(1).mean()))
    assert shared > 2 * h.std(1).mean(), (float(shared), float(h.std(1).mean()))


def test_a_few_dozen_steps_learn_an_in_context_task() -> None:
    """60 AdamW steps on fresh episodes of the flip task drive the query loss far below ln 2.

    Measured: the ungated model stayed at 0.696-0.698 over 80 such steps (seeds 0 and 1); the
    gated one reaches ~0.18 after 60 (~0.13 after 80).
    """
    torch.manual_seed(0)
    model = OrionMSP("tiny")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(60):
        x, y = _flip_task(step)
        logits = model(x, y[:, :64].float())[..., :2]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 2), y[:, 64:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    late = sum(losses[-20:]) / 20
    assert late < 0.45 < CHANCE, losses
    # the context labels are read: flipping them flips the prediction
    x, y = _flip_task(10_000)
    with torch.no_grad():
        p = model(x, y[:, :64].float())[..., :2].softmax(-1)[..., 1]
        q = model(x, 1 - y[:, :64].float())[..., :2].softmax(-1)[..., 1]
    assert float(((p > 0.5) != (q > 0.5)).float().mean()) > 0.8


def test_the_conformance_model_exercises_the_memory() -> None:
    from tabzoo_orion_msp.conformance import make_model

    model = make_model(0)
    assert model.memory is not None and model.memory.gate is not None
    assert bool((model.memory.gate == 1).all())  # open: the kit's numerical checks see the memory path
    x, y = _flip_task(1, episodes=1, rows=20, n_context=12)
    x2 = x.clone()
    x2[:, :12] += torch.randn(1, 12, 1)  # change only context rows -> the written memory changes
    with torch.no_grad():
        h = model.row_embeddings(x, 12)
        h2 = model.row_embeddings(x2, 12)
        assert not torch.allclose(model.memory(h, 12) - h, model.memory(h2, 12) - h2)


def test_centred_rows_keep_what_tells_rows_apart_at_unit_scale() -> None:
    """Second cause: the row stage's outputs shared a large episode-level part and collapsed (rows
    differed by 1.7% of it after 375 steps on the icl prior); centring on the context restores them."""
    g = torch.Generator().manual_seed(0)
    common = torch.randn(2, 1, 16, generator=g) * 5
    h = common + 0.05 * torch.randn(2, 30, 16, generator=g)  # rows differ by ~1% of the shared part
    c = OrionMSP.centre_rows(h, 20)
    torch.testing.assert_close(c[:, :20].mean(1), torch.zeros(2, 16), atol=1e-3, rtol=0)
    torch.testing.assert_close(c[:, :20].pow(2).mean(dim=(1, 2)), torch.ones(2), atol=0.05, rtol=0)
    assert c.std(1).mean() > 0.5  # the differences are the signal now
    # context statistics only: changing query rows moves nothing else; one context row stays finite
    h2 = h.clone()
    h2[:, 20:] += 3.0
    torch.testing.assert_close(OrionMSP.centre_rows(h2, 20)[:, :20], c[:, :20], rtol=0, atol=0)
    assert torch.isfinite(OrionMSP.centre_rows(h, 1)).all()
