"""``RambaModel``: cell embeddings, Ramba blocks and type-specific heads (paper §4, App. C).

Cell embedding (App. C.1, eq. 25): ``x = e_schema + alpha * tanh(W_s [s] + b) + e_value`` with
``e_schema = RMSNorm(W_col h("table : column"))`` from the frozen text encoder and a
type-specific ``e_value``: numeric ``RMSNorm(W [z])``; datetime ``RMSNorm(W [z, log-age])``;
boolean ``RMSNorm(W [v])``; text / categorical ``RMSNorm(W_text h(value))``. Masked and missing
cells replace ``e_value`` by learned per-type vectors (the value is never read). SEP tokens are a
learned vector plus the schema embedding of the column they open.

Block (App. C.5, pre-norm RMSNorm): ``H' = X + GatedBiSSM(N(X))``,
``H'' = H' + Attn_intra(N(H'))``, ``H = H'' + Attn_rel(N(H''))``. With ``mixer="dense"`` the SSM is
replaced by full attention over all tokens (:class:`~tabzoo_ramba.layers.DenseMixer`): the dense
relational-transformer baseline of the benchmarks.

Heads: numeric (Huber, in z-units of the column), boolean (BCE logit) and text/categorical (a
query vector scored against the projected text embeddings of candidate strings, CE).
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import torch
import torch.nn.functional as F
from tabzoo.errors import TabzooInputError
from torch import nn

from tabzoo_ramba.config import PRESETS, RambaConfig, make_config
from tabzoo_ramba.layers import DenseMixer, GatedBiSSM, RMSNorm, StructuralAttention
from tabzoo_ramba.serialize import BOOL, MASKED, MISSING, NUM, OBSERVED, SEP, TEXT, TIME
from tabzoo_ramba.structure import gate_index, row_structure, to_device

__all__ = ["RambaConfig", "RambaModel", "PRESETS", "build", "make_config"]


class _Block(nn.Module):
    def __init__(self, c: RambaConfig) -> None:
        super().__init__()
        self.n1, self.n2, self.n3 = RMSNorm(c.d_model), RMSNorm(c.d_model), RMSNorm(c.d_model)
        self.ssm: GatedBiSSM | DenseMixer = (DenseMixer(c.d_model, c.n_heads) if c.mixer == "dense"
                               else GatedBiSSM(c.d_model, c.d_state, c.d_conv, c.expand, c.d_text, c.d_gate))
        self.intra = StructuralAttention(c.d_model, c.n_heads, "intra")
        self.rel = StructuralAttention(c.d_model, c.n_heads, "rel")

    def forward(self, x: torch.Tensor, gate: torch.Tensor, pad: torch.Tensor, struct: dict[str, Any],
                impl: str, keep: torch.Tensor | None = None) -> torch.Tensor:
        """``keep`` = ``(~pad)[..., None]`` as ``x``'s dtype (built here when not given)."""
        keep = (~pad)[..., None].to(x.dtype) if keep is None else keep
        x = x + self.ssm(self.n1(x), gate, pad, keep) * keep
        x = x + self.intra(self.n2(x), struct, impl) * keep
        return x + self.rel(self.n3(x), struct, impl) * keep


def _mlp(d: int, d_ff: int, out: int) -> nn.Sequential:
    return nn.Sequential(RMSNorm(d), nn.Linear(d, d_ff), nn.GELU(), nn.Linear(d_ff, out))


class RambaModel(nn.Module):
    """Ramba over collated batches (:func:`tabzoo_ramba.serialize.collate`).

    ``forward(batch) -> Z [B, L, D]``; :meth:`predict_target` reads the head of each sequence's
    target cell; :meth:`mlm_loss` is the masked-cell pretraining loss (:meth:`pretrain_loss`, the
    core pretraining loop's hook).
    """

    architecture = "ramba"

    def __init__(self, config: dict[str, Any] | RambaConfig | None = None) -> None:
        super().__init__()
        c = make_config(config)
        if c.text_encoder == "auto":  # record the concrete encoder, so a checkpoint says which it saw
            from tabzoo_ramba.text import resolve_encoder

            c = replace(c, text_encoder=resolve_encoder("auto"))
        self.cfg = c
        d = c.d_model
        self.schema_proj, self.schema_norm = nn.Linear(c.d_text, d), RMSNorm(d)
        self.text_proj, self.text_norm = nn.Linear(c.d_text, d), RMSNorm(d)
        self.num_proj, self.num_norm = nn.Linear(1, d), RMSNorm(d)
        self.time_proj, self.time_norm = nn.Linear(2, d), RMSNorm(d)
        self.bool_proj, self.bool_norm = nn.Linear(1, d), RMSNorm(d)
        self.scale_proj = nn.Linear(1, d)
        self.alpha = nn.Parameter(torch.tensor(0.1))
        self.sep = nn.Parameter(torch.randn(d) * 0.02)
        self.mask_vec = nn.Parameter(torch.randn(5, d) * 0.02)  # per type (index = kind)
        self.null_vec = nn.Parameter(torch.randn(5, d) * 0.02)
        self.blocks = nn.ModuleList(_Block(c) for _ in range(c.n_layers))
        self.norm = RMSNorm(d)
        self.num_head = _mlp(d, c.d_ff, 1)
        self.bool_head = _mlp(d, c.d_ff, 1)
        self.text_head = _mlp(d, c.d_ff, d)

    @property
    def config(self) -> dict[str, Any]:
        """The JSON config (for checkpoints)."""
        return asdict(self.cfg)

    # ------------------------------------------------------------------ embedding
    def embed(self, batch: dict[str, Any]) -> torch.Tensor:
        """Cell embeddings ``[B, L, D]``."""
        kind, state, val = batch["kind"], batch["state"], batch["val"]
        schema = self.schema_norm(self.schema_proj(batch["schema_emb"]))[batch["col"]]
        v = torch.zeros_like(schema)
        z = val[..., :1]
        for k, proj, norm, inp in ((NUM, self.num_proj, self.num_norm, z), (BOOL, self.bool_proj, self.bool_norm, z),
                                   (TIME, self.time_proj, self.time_norm, val)):
            sel = (kind == k)[..., None].to(v.dtype)
            v = v + sel * norm(proj(inp))
        if batch["text_emb"].shape[0]:
            tv = self.text_norm(self.text_proj(batch["text_emb"]))
            tsel = (kind == TEXT) & (batch["text"] >= 0)
            v = v + tsel[..., None].to(v.dtype) * tv[batch["text"].clamp(min=0)]
        obs = (state == OBSERVED) & (kind != SEP)
        v = v * obs[..., None].to(v.dtype)
        v = v + (state == MASKED)[..., None].to(v.dtype) * self.mask_vec[kind]
        v = v + (state == MISSING)[..., None].to(v.dtype) * self.null_vec[kind]
        v = v + (kind == SEP)[..., None].to(v.dtype) * self.sep
        sc = self.alpha * torch.tanh(self.scale_proj(batch["scale"][..., None])) * obs[..., None].to(v.dtype)
        x = schema + v + sc
        return x * (~batch["pad"])[..., None].to(x.dtype)

    def gate_inputs(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Distinct (current column, target column) schema-embedding pairs ``s_curr, s_tgt
        [P, d_text]`` and the pair index of every token ``[B, L]``. Without a target column
        (pretraining) the current column is its own target."""
        s = batch["schema_emb"]
        gi = batch.get("gate_index")
        if gi is None:  # a batch collated without it: built here (one host read)
            gi = to_device(gate_index(batch["col"].cpu().numpy(), batch["target_col"].cpu().numpy(), s.shape[0]),
                           s.device)
        return s[gi["curr"]], s[gi["tgt"]], gi["inv"]

    def gates(self, batch: dict[str, Any]) -> list[torch.Tensor]:
        """Schema gate of each block per token ``[B, L]`` in (0, 1); 0 on padding (eq. 28)."""
        keep = (~batch["pad"]).to(batch["val"].dtype)
        if not self.cfg.gating or self.cfg.mixer == "dense":
            return [keep for _ in self.blocks]
        s_curr, s_tgt, inv = self.gate_inputs(batch)
        pairs = torch.cat([s_curr, s_tgt], -1)  # once for every block
        return [blk.ssm.gate_of(pairs)[inv] * keep for blk in self.blocks]

    # ------------------------------------------------------------------ trunk
    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        """Final token states ``Z [B, L, D]``. The index structure (``batch["struct"]``) and the
        gate pairs (``batch["gate_index"]``) come from collation; a batch without them (or with
        another ``max_rel_rows``) has them built here, at one host read each."""
        struct = batch.get("struct")
        if struct is None or struct["max_rel_rows"] != self.cfg.max_rel_rows:  # not built in collation
            struct = row_structure(batch["row"], batch["edges"], int(batch["n_rows"]), self.cfg.max_rel_rows)
        x = self.embed(batch)
        keep = (~batch["pad"])[..., None].to(x.dtype)  # once per forward, not per block
        for blk, gate in zip(self.blocks, self.gates(batch), strict=True):
            x = blk(x, gate, batch["pad"], struct, self.cfg.attention, keep)
        return self.norm(x)

    # ------------------------------------------------------------------ heads
    def predict_target(self, batch: dict[str, Any], z: torch.Tensor | None = None) -> torch.Tensor:
        """Head output at each sequence's target cell ``[B]``: a logit (boolean target) or a value
        in z-units of the target column (numeric / datetime target)."""
        pos = batch["target_pos"]
        if (pos < 0).any():
            raise TabzooInputError("a sequence has no target cell; serialize with a TargetSpec naming the target")
        z = self(batch) if z is None else z
        zt = z[torch.arange(z.shape[0], device=z.device), pos]
        kind = batch["kind"][torch.arange(z.shape[0], device=z.device), pos]
        num = self.num_head(zt).squeeze(-1)
        logit = self.bool_head(zt).squeeze(-1)
        return torch.where(kind == BOOL, logit, num)

    def text_logits(self, zq: torch.Tensor, text_emb: torch.Tensor) -> torch.Tensor:
        """Scores ``[Q, n_strings]`` of the candidate strings for query states ``zq [Q, D]``."""
        cand = self.text_norm(self.text_proj(text_emb))
        return self.text_head(zq) @ cand.T / cand.shape[-1] ** 0.5

    def pretrain_loss(self, batch: dict[str, Any]) -> torch.Tensor:
        """The scalar masked-cell loss of a collated batch (:func:`tabzoo.train.pretrain` calls it)."""
        return self.mlm_loss(batch)[0]

    def mlm_loss(self, batch: dict[str, Any], huber_delta: float = 1.0) -> tuple[torch.Tensor, dict[str, float]]:
        """Masked-cell loss over ``batch["mlm"]`` positions: Huber (numeric, datetime), BCE
        (boolean), CE over the batch's strings (text / categorical); mean over masked cells."""
        bi, pi = batch["mlm"]
        if len(bi) == 0:
            raise TabzooInputError("no masked cells in the batch; serialize with mask_rate > 0")
        state = batch["state"].clone()
        state[bi, pi] = MASKED
        z = self({**batch, "state": state})[bi, pi]
        kind = batch["kind"][bi, pi]
        val = batch["val"][bi, pi, 0]
        total = z.new_zeros(())
        parts: dict[str, float] = {}
        sel = (kind == NUM) | (kind == TIME)
        if sel.any():
            loss = F.huber_loss(self.num_head(z[sel]).squeeze(-1), val[sel], delta=huber_delta, reduction="sum")
            total, parts["huber"] = total + loss, float(loss.detach()) / int(sel.sum())
        sel = kind == BOOL
        if sel.any():
            loss = F.binary_cross_entropy_with_logits(self.bool_head(z[sel]).squeeze(-1), val[sel], reduction="sum")
            total, parts["bce"] = total + loss, float(loss.detach()) / int(sel.sum())
        sel = kind == TEXT
        if sel.any():
            logits = self.text_logits(z[sel], batch["text_emb"])
            loss = F.cross_entropy(logits, batch["text"][bi, pi][sel], reduction="sum")
            total, parts["ce"] = total + loss, float(loss.detach()) / int(sel.sum())
        return total / len(bi), parts


def build(config: dict[str, Any] | None = None) -> RambaModel:
    """The registry's builder."""
    return RambaModel(config)
