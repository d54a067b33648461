"""Ramba's layers: schema-gated bidirectional selective SSM and sparse structural attention.

* :class:`GatedBiSSM` (paper §4.3, App. C.3): Mamba-style block per direction (depthwise conv,
  input-dependent ``delta, B, C``), with ``delta`` multiplied by the schema gate
  ``g = sigmoid(w . GELU(W [s_curr; s_tgt]) + b)``; the recurrence runs through
  ``tabzoo.kernels.selective_scan`` (forward and ``reverse=True``), the two directions are merged
  by a linear layer. Padding has ``g = 0`` and ``x = 0``, so the state passes through it unchanged.
* :class:`StructuralAttention` (§4.4, App. C.4): softmax attention restricted to the cells of one
  row (intra-entity) or to the cells of the rows linked by a foreign key (relational, both
  directions). Two exact implementations: ``"gather"`` (default; packs each row's queries and its
  allowed keys, cost O(rows x cells x neighbour cells), linear in L) and ``"masked"`` (the same
  masks as :mod:`tabzoo.masks` objects through ``tabzoo.kernels.masked_attention``, which picks
  the block-sparse flex_attention backend where it is supported, e.g. on GPU). Where the compiled
  CPU library runs (fp32, no autocast), ``"gather"`` is one ``tabzoo.kernels.gathered_attention``
  call over the rows' token ids, and the SSM's two directions one ``bimamba_inner`` call.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from tabzoo.errors import KernelNotSupportedError
from tabzoo.kernels import (
    PARAMS_BIMAMBA,
    causal_conv1d,
    masked_attention,
    select_backend,
    selective_scan,
)
from tabzoo.kernels.op_registry import Backend
from torch import nn

from tabzoo_ramba.structure import row_structure

__all__ = ["RMSNorm", "GatedBiSSM", "DenseMixer", "StructuralAttention", "row_structure"]


def _fused(op: str, inputs: dict[str, Any]) -> Backend | None:
    """The backend ``op`` would run ``inputs`` on, when it is a fused one (not the reference); None
    otherwise (no backend fits, or only the reference: the eager chain of per-op kernels then runs,
    which dispatches each of its ops on its own, e.g. to a GPU backend)."""
    try:
        backend = select_backend(op, **inputs)
    except KernelNotSupportedError:
        return None
    return None if backend.name == "reference" else backend


class RMSNorm(nn.Module):
    """RMS normalisation over the last dim with a learned gain."""

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x * rsqrt(mean(x^2) + eps) * weight`` as one op (torch's ``rms_norm``: the same
        numbers, bitwise on CPU; one launch instead of five on a GPU)."""
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)


class _Direction(nn.Module):
    def __init__(self, d_inner: int, d_state: int, d_conv: int, dt_rank: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(d_inner, d_inner, d_conv, groups=d_inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(d_inner, dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(dt_rank, d_inner)
        a = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(d_inner, 1)
        self.A_log = nn.Parameter(torch.log(a))
        self.D = nn.Parameter(torch.ones(d_inner))
        dt = torch.exp(torch.rand(d_inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1
        self.dt_rank, self.d_state = dt_rank, d_state

    def causal_conv(self, x: torch.Tensor, reverse: bool, mask: torch.Tensor | None = None,
                    activation: str | None = None) -> torch.Tensor:
        """The depthwise conv of ``self.conv`` along L, causal in scan order: ``x [B, L, E]`` ->
        ``[B, L, E]``; ``out[t] = act(bias + sum_k w[k] x[t -+ (K-1-k)]) * mask[t]`` (``-``
        forward, ``+`` reverse) through ``tabzoo.kernels.causal_conv1d`` (one compiled pass where
        the CPU library is built; torch's depthwise conv1d is slow on CPU). Equal to
        ``conv(x.transpose(1, 2))[..., :L]`` (flipped around it for ``reverse``) up to rounding."""
        return causal_conv1d(x, self.conv.weight[:, 0, :], self.conv.bias, reverse=reverse, activation=activation,
                             mask=mask)

    def forward(self, x: torch.Tensor, gate: torch.Tensor, reverse: bool, open_: torch.Tensor | None = None,
                z: torch.Tensor | None = None) -> torch.Tensor:
        """``x [B, L, E]`` (zero on padding), ``gate [B, L]``, ``open_`` = ``(gate > 0)`` as ``x``'s
        dtype ``[B, L]`` (computed here when not given), ``z [B, L, E]`` the output gate (``y *
        silu(z)``, none when not given) -> ``[B, L, E]``. The step size ``softplus(W dt + b) * gate``,
        the ``D`` skip and the ``silu(z)`` gate are the scan op's own arguments (one fused pass where
        the compiled scan is built)."""
        xc = self.causal_conv(x, reverse, (gate > 0).to(x.dtype) if open_ is None else open_, "silu")
        dt, b, c = self.x_proj(xc).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        return selective_scan(xc, F.linear(dt, self.dt_proj.weight), -torch.exp(self.A_log), b, c, self.D,
                              reverse=reverse, delta_bias=self.dt_proj.bias, delta_softplus=True, delta_scale=gate, z=z)


class GatedBiSSM(nn.Module):
    """Schema-dynamic-gated bidirectional selective SSM, ``[B, L, D] -> [B, L, D]``."""

    def __init__(self, d_model: int, d_state: int, d_conv: int, expand: int, d_text: int, d_gate: int) -> None:
        super().__init__()
        e = expand * d_model
        self.in_proj = nn.Linear(d_model, 2 * e)
        dt_rank = max(1, math.ceil(d_model / 16))
        self.fwd = _Direction(e, d_state, d_conv, dt_rank)
        self.bwd = _Direction(e, d_state, d_conv, dt_rank)
        self.gate_in = nn.Linear(2 * d_text, d_gate)
        self.gate_out = nn.Linear(d_gate, 1)
        nn.init.constant_(self.gate_out.bias, 2.0)  # gates start mostly open
        self.merge = nn.Linear(2 * e, d_model)

    @staticmethod
    def _params(suffix: str, d: _Direction) -> dict[str, torch.Tensor]:
        """One direction's parameters under ``tabzoo.kernels.bimamba_inner``'s names."""
        values = (d.conv.weight[:, 0, :], d.conv.bias, d.x_proj.weight, d.dt_proj.weight, d.dt_proj.bias, d.A_log, d.D)
        return {f"{k}_{suffix}": v for k, v in zip(PARAMS_BIMAMBA, values, strict=True)}

    def gate(self, s_curr: torch.Tensor, s_tgt: torch.Tensor) -> torch.Tensor:
        """Schema gate per column: ``s_curr [K, d_text]``, ``s_tgt [K, d_text]`` -> ``[K]`` in (0, 1)."""
        return self.gate_of(torch.cat([s_curr, s_tgt], -1))

    def gate_of(self, pairs: torch.Tensor) -> torch.Tensor:
        """:meth:`gate` of the concatenated pairs ``[K, 2 d_text]`` -> ``[K]``."""
        return torch.sigmoid(self.gate_out(F.gelu(self.gate_in(pairs)))).squeeze(-1)

    def forward(self, h: torch.Tensor, gate: torch.Tensor, pad: torch.Tensor,
                keep: torch.Tensor | None = None) -> torch.Tensor:
        """``h [B, L, D]``, ``gate [B, L]`` (0 on padding), ``pad [B, L]`` -> ``[B, L, D]``; ``keep`` =
        ``(~pad)[..., None]`` as ``h``'s dtype (built here when not given)."""
        keep = (~pad)[..., None].to(h.dtype) if keep is None else keep
        x, z = self.in_proj(h).chunk(2, dim=-1)
        x = x * keep  # not masked_fill: a bool mask over [B, L, E] is slow on CPU
        open_ = (gate > 0).to(x.dtype)  # once for both directions
        inputs = {"x": x, "z": z, "gate": gate, "open_": open_, **self._params("f", self.fwd),
                  **self._params("b", self.bwd)}
        fused = _fused("bimamba_inner", inputs)
        if fused is not None:  # both directions as one op (the compiled CPU library, fp32, no autocast)
            return self.merge(fused.fn(**inputs))
        # the scan takes a contiguous z: made so once here for both directions (each copied it)
        z = z.contiguous()
        yf = self.fwd(x, gate, False, open_, z)
        yb = self.bwd(x, gate, True, open_, z)
        return self.merge(torch.cat([yf, yb], dim=-1))


class DenseMixer(nn.Module):
    """Full softmax attention over every non-padding token, ``[B, L, D] -> [B, L, D]``: the dense
    (Relational-Transformer style) stand-in for :class:`GatedBiSSM`, quadratic in L. Same call
    signature; the schema gate is ignored (that model has none)."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.h = n_heads

    def forward(self, h: torch.Tensor, gate: torch.Tensor, pad: torch.Tensor,
                keep: torch.Tensor | None = None) -> torch.Tensor:
        """``h [B, L, D]``, ``gate [B, L]`` (unused), ``pad [B, L]``, ``keep`` (unused) -> ``[B, L, D]``."""
        b, n, d = h.shape
        q, k, v = (t.reshape(b, n, self.h, d // self.h).transpose(1, 2) for t in self.qkv(h).chunk(3, -1))
        o = masked_attention(q, k, v, (~pad)[:, None, None, :])
        return self.out(o.transpose(1, 2).reshape(b, n, d))


class StructuralAttention(nn.Module):
    """Multi-head attention under the intra-entity or relational mask (pre-norm outside)."""

    def __init__(self, d_model: int, n_heads: int, kind: str) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} must be divisible by n_heads {n_heads}")
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.h, self.kind = n_heads, kind

    def forward(self, x: torch.Tensor, struct: dict[str, Any], impl: str = "gather") -> torch.Tensor:
        """``x [B, L, D]`` -> ``[B, L, D]``; SEP and padding tokens get 0 (before ``out``'s bias)."""
        qkv = self.qkv(x)
        if impl == "masked":
            q, k, v = qkv.chunk(3, dim=-1)
            return self.out(self._masked(q, k, v, struct))
        if "row_tok" in struct:
            bsz, length, d3 = qkv.shape
            keys = struct["row_tok"] if self.kind == "intra" else struct["rel_keys"]
            inputs = {"qkv": qkv.reshape(bsz * length, d3), "q_tok": struct["row_tok"], "k_tok": keys,
                      "n_heads": self.h, "scale": None}
            fused = _fused("gathered_attention", inputs)
            if fused is not None:  # one compiled pass, no gathered copies, output in token order
                return self.out(fused.fn(**inputs).view(bsz, length, d3 // 3))
        return self.out(self._gather(qkv, struct))

    def _gather(self, qkv: torch.Tensor, struct: dict[str, Any]) -> torch.Tensor:
        """Each row's queries against its allowed keys, packed per size group ``[R_g, H, Q_g, dh]``
        by index_select (one for q, k and v together where queries and keys are the same tokens),
        put back in token order by one gather (``tok_slot``); SEP, padding and rows without keys
        get 0. ``qkv [B, L, 3D]`` -> ``[B, L, D]``."""
        bsz, length, d3 = qkv.shape
        d = d3 // 3
        dh = d // self.h
        flat = qkv.reshape(bsz * length, 3, self.h, dh)

        def heads(t: torch.Tensor, rows: int, width: int) -> torch.Tensor:  # [R_g W, H, dh] -> [R_g, H, W, dh]
            return t.view(rows, width, self.h, dh).transpose(1, 2)

        outs = []
        for q_idx, k_idx, (rows, q_w, k_w), mask in struct[self.kind]["groups"]:
            # unbind, not [:, i]: its backward is one stack, where three selects each zero-filled
            # and copied a buffer of the gathered size (the largest share of this layer's backward)
            q, k, v = flat.index_select(0, q_idx).unbind(1)
            if k_idx is not q_idx:
                _, k, v = flat.index_select(0, k_idx).unbind(1)
            oo = masked_attention(heads(q, rows, q_w), heads(k, rows, k_w), heads(v, rows, k_w), mask)
            outs.append(oo.transpose(1, 2).reshape(-1, d))
        outs.append(qkv.new_zeros(1, d))
        return torch.cat(outs).index_select(0, struct[self.kind]["tok_slot"]).view(bsz, length, d)

    def _masked(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, struct: dict[str, Any]) -> torch.Tensor:
        from tabzoo.masks import edges as edge_mask
        from tabzoo.masks import same_group

        bsz, length, d = q.shape
        dh = d // self.h
        outs = []
        for i in range(bsz):
            ids = struct["row"][i].clone()
            cell = ids >= 0
            ids[~cell] = -1 - torch.arange(length, device=ids.device)[~cell]  # SEP / pad: own group
            if self.kind == "intra":
                mask = same_group(ids)
            else:
                e = struct["pairs"]  # both directions, already capped
                mask = edge_mask(e[:, 0], e[:, 1], group_ids=ids)
            qi, ki, vi = (t[i].reshape(length, self.h, dh).transpose(0, 1)[None] for t in (q, k, v))
            oi = masked_attention(qi, ki, vi, mask)[0].transpose(0, 1).reshape(length, d)
            outs.append(oi * cell[:, None].to(oi.dtype))
        return torch.stack(outs)
