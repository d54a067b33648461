"""The ``cpu_fused`` backend of ``selective_scan``: the recurrence as one compiled C++ loop.

The eager backends stream ``L x D x N`` buffers through memory several times per call (the
``chunked`` one about eight elementwise passes plus one exp per element) and pay Python overhead
per block; on a CPU that makes the scan memory-bound and slow at short lengths. This backend
keeps the state ``h [N, D]`` of one sequence in cache and makes one pass over the inputs::

    for t in scan order:  for n:  for d:
        a = exp(delta[t, d] A[d, n]);  h[n, d] = a h[n, d] + delta[t, d] x[t, d] B[t, n]
        y[t, d] += h[n, d] C[t, n]

(the loop over ``d`` is vectorised by the compiler, ``exp`` included; it runs over the channels, so
the sums over ``n`` need no horizontal reduction, and the backward reduces only for the gradients
of ``B`` and ``C``, once per ``(t, n)``; each inner loop is a function of its own whose pointers
are ``restrict`` parameters: inside the ``parallel_for`` lambda gcc did not vectorise the
backward's). The forward saves the state entering every segment of ``SEGMENT`` positions
(``L / SEGMENT x N x D``: memory linear in L);
the backward recomputes one segment's states from it (as Mamba's kernel does) and runs
``G_t = gy_t C_t + a_{t+1} G_{t+1}`` backwards, accumulating the gradients of ``x, delta, A, B,
C`` in the same pass. fp32 throughout; ``D x`` is added by autograd outside.

When it runs (``TABZOO_SCAN_CPU``): unset (the default) = used when it is already built for this
torch installation, never built unasked (loading the built library takes well under a second);
``1`` = built on first use if needed, with a warning that says so and how long it takes; ``0`` =
off. ``python -m tabzoo.kernels.scan_build`` builds it ahead of time, with progress messages (once
per torch installation: a virtual environment, a nox session). CI sets nothing, so no CI session
ever waits on a compiler. The build uses :func:`torch.utils.cpp_extension.load_inline` (a C++
compiler and ninja must be present; ``-march=native``) in a folder of its own per torch
installation (:func:`build_directory`: torch's extension root, ``NAME`` plus a hash of the torch
version and folder), because ninja rebuilds whenever the compile command changes, and it
names the torch headers of the environment: one shared folder was rebuilt, minutes each time,
whenever a second environment loaded it. The build takes about a minute on an idle machine (11
minutes were measured at load 20 on 2 cores). When it fails the backend reports itself
unavailable and dispatch picks the next one; the failure is logged once.

Measured (one thread, CPU ms, load ~2, ``D = 128, N = 16``, the kernel calls alone; forward /
backward): ``[1, 512]`` 0.19 / 0.48 against 0.41 / 3.65 for the ``[D, N]`` layout of v2 (whose
backward loop was not vectorised); ``[1, 2048]`` 0.92 / 2.53 against 1.85 / 14.8. Earlier, against
``chunked`` (forward / forward + backward, load ~8): ``[1, 512]`` 0.22 / 0.77 against 2.5 / 7.2;
``[1, 16384]`` 10.2 / 28.7 against 67 / 221; ``[16, 452]`` 3.1 / 13.1 against 30 / 94 (v2, load
~20: ``[1, 512]`` 1.4 / 9.6 against 11.9 / 25.2).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
from pathlib import Path
from typing import Any

import torch

__all__ = ["ENV_VAR", "NAME", "SEGMENT", "available", "build", "build_directory", "built", "selective_scan_cpu"]

log = logging.getLogger("tabzoo.kernels")
SEGMENT = 64  # positions per saved state (backward recomputes a segment)
ENV_VAR = "TABZOO_SCAN_CPU"
NAME = "tabzoo_scan_cpu_v3"  # the extension's name: change it with the source

_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

// exp(z) as 2^n exp(r), |r| <= ln2/2, degree-7 Taylor (relative error < 1e-8 + rounding):
// vectorisable, unlike the libm call; arguments clamped to [-87, 88] (fp32's normal range)
static inline float fast_exp(float z) {
  z = std::min(std::max(z, -87.0f), 88.0f);
  const float n = std::floor(z * 1.44269504f + 0.5f);
  const float r = (z - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  float p = 1.f / 5040.f;
  p = p * r + 1.f / 720.f; p = p * r + 1.f / 120.f; p = p * r + 1.f / 24.f; p = p * r + 1.f / 6.f;
  p = p * r + 0.5f; p = p * r + 1.f; p = p * r + 1.f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

static inline int64_t at_pos(int64_t s, int64_t L, bool rev) { return rev ? L - 1 - s : s; }

// One state row n of one backward step (a function of its own: with every pointer a restrict
// parameter the loop over d vectorises; inside the lambda gcc re-reads captured pointers and does not)
static inline void bwd_row(int64_t D, float bn, float cn, const float *__restrict__ An, const float *__restrict__ dt,
                           const float *__restrict__ gyt, const float *__restrict__ u, const float *__restrict__ hpn,
                           const float *__restrict__ hcn, float *__restrict__ Gn, float *__restrict__ gAn,
                           float *__restrict__ sum_gb, float *__restrict__ sum_qa, float *__restrict__ out) {
  float gc = 0.f, gb = 0.f;
  for (int64_t d = 0; d < D; ++d) {
    const float a = fast_exp(dt[d] * An[d]);
    const float g = gyt[d] * cn + Gn[d];
    gc += gyt[d] * hcn[d];
    gb += g * u[d];
    sum_gb[d] += g * bn;
    const float q = g * hpn[d] * a;
    sum_qa[d] += q * An[d];
    gAn[d] += q * dt[d];
    Gn[d] = g * a;
  }
  out[0] = gc;
  out[1] = gb;
}

// One state row n of one forward step, in place: h = exp(delta A) h + u B_n, y += h C_n (restrict, as above)
static inline void fwd_row(int64_t D, float bn, float cn, const float *__restrict__ An, const float *__restrict__ dt,
                           const float *__restrict__ u, float *__restrict__ hn, float *__restrict__ yt) {
  for (int64_t d = 0; d < D; ++d) {
    const float v = fast_exp(dt[d] * An[d]) * hn[d] + u[d] * bn;
    hn[d] = v;
    yt[d] += v * cn;
  }
}

// The same step recomputed by the backward, from the previous state into the next one (no y)
static inline void rec_row(int64_t D, float bn, const float *__restrict__ An, const float *__restrict__ dt,
                           const float *__restrict__ u, const float *__restrict__ hp, float *__restrict__ hc) {
  for (int64_t d = 0; d < D; ++d) hc[d] = fast_exp(dt[d] * An[d]) * hp[d] + u[d] * bn;
}

// The state of one sequence is kept state-major, h[n][d] (d contiguous): every inner loop runs over
// d (D wide, vectorised with no horizontal sum); the sums over n accumulate into D-vectors, and only
// the backward's sums over d (the gradients of B and C) reduce, once per (t, n).
std::vector<torch::Tensor> scan_fwd(torch::Tensor x, torch::Tensor delta, torch::Tensor A, torch::Tensor B,
                                    torch::Tensor C, bool reverse, int64_t K) {
  const int64_t nb = x.size(0), L = x.size(1), D = x.size(2), N = A.size(1);
  const int64_t nseg = (L + K - 1) / K;
  auto y = torch::empty({nb, L, D}, x.options());
  auto hs = torch::empty({nb, nseg, N, D}, x.options());
  auto At = A.t().contiguous();  // [N, D]
  const float *__restrict__ px = x.data_ptr<float>();
  const float *__restrict__ pd = delta.data_ptr<float>();
  const float *__restrict__ pA = At.data_ptr<float>();
  const float *__restrict__ pB = B.data_ptr<float>();
  const float *__restrict__ pC = C.data_ptr<float>();
  float *__restrict__ py = y.data_ptr<float>();
  float *__restrict__ phs = hs.data_ptr<float>();
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> hv(N * D), uv(D);
    float *__restrict__ h = hv.data();
    float *__restrict__ u = uv.data();
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(hv.begin(), hv.end(), 0.f);
      for (int64_t s = 0; s < L; ++s) {
        if (s % K == 0) std::copy(hv.begin(), hv.end(), phs + (b * nseg + s / K) * N * D);
        const int64_t t = at_pos(s, L, reverse);
        const float *__restrict__ xt = px + (b * L + t) * D;
        const float *__restrict__ dt = pd + (b * L + t) * D;
        const float *__restrict__ Bt = pB + (b * L + t) * N;
        const float *__restrict__ Ct = pC + (b * L + t) * N;
        float *__restrict__ yt = py + (b * L + t) * D;
        for (int64_t d = 0; d < D; ++d) { u[d] = dt[d] * xt[d]; yt[d] = 0.f; }
        for (int64_t n = 0; n < N; ++n) fwd_row(D, Bt[n], Ct[n], pA + n * D, dt, u, h + n * D, yt);
      }
    }
  });
  return {y, hs};
}

std::vector<torch::Tensor> scan_bwd(torch::Tensor x, torch::Tensor delta, torch::Tensor A, torch::Tensor B,
                                    torch::Tensor C, torch::Tensor gy, torch::Tensor hs, bool reverse, int64_t K) {
  const int64_t nb = x.size(0), L = x.size(1), D = x.size(2), N = A.size(1);
  const int64_t nseg = (L + K - 1) / K;
  auto gx = torch::empty_like(x), gd = torch::empty_like(delta);
  auto gB = torch::empty_like(B), gC = torch::empty_like(C);
  auto gAb = torch::zeros({nb, N, D}, A.options());
  auto At = A.t().contiguous();  // [N, D]
  const float *__restrict__ px = x.data_ptr<float>();
  const float *__restrict__ pd = delta.data_ptr<float>();
  const float *__restrict__ pA = At.data_ptr<float>();
  const float *__restrict__ pB = B.data_ptr<float>();
  const float *__restrict__ pC = C.data_ptr<float>();
  const float *__restrict__ pgy = gy.data_ptr<float>();
  const float *__restrict__ phs = hs.data_ptr<float>();
  float *__restrict__ pgx = gx.data_ptr<float>();
  float *__restrict__ pgd = gd.data_ptr<float>();
  float *__restrict__ pgB = gB.data_ptr<float>();
  float *__restrict__ pgC = gC.data_ptr<float>();
  float *__restrict__ pgAb = gAb.data_ptr<float>();
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> hbuf((K + 1) * N * D), Gv(N * D), sgb(D), sqa(D), uv(D);
    float *__restrict__ G = Gv.data();  // a_{t+1} G_{t+1}, carried backwards
    float *__restrict__ sum_gb = sgb.data();
    float *__restrict__ sum_qa = sqa.data();
    float *__restrict__ u = uv.data();
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(Gv.begin(), Gv.end(), 0.f);
      float *__restrict__ gA = pgAb + b * N * D;
      for (int64_t seg = nseg - 1; seg >= 0; --seg) {
        const int64_t s0 = seg * K, s1 = std::min(L, s0 + K);
        std::copy(phs + (b * nseg + seg) * N * D, phs + (b * nseg + seg + 1) * N * D, hbuf.begin());
        for (int64_t s = s0; s < s1; ++s) {  // recompute the segment's states
          const int64_t t = at_pos(s, L, reverse);
          const float *__restrict__ xt = px + (b * L + t) * D;
          const float *__restrict__ dt = pd + (b * L + t) * D;
          const float *__restrict__ Bt = pB + (b * L + t) * N;
          const float *__restrict__ hp = hbuf.data() + (s - s0) * N * D;
          float *__restrict__ hc = hbuf.data() + (s - s0 + 1) * N * D;
          for (int64_t d = 0; d < D; ++d) u[d] = dt[d] * xt[d];
          for (int64_t n = 0; n < N; ++n) rec_row(D, Bt[n], pA + n * D, dt, u, hp + n * D, hc + n * D);
        }
        for (int64_t s = s1 - 1; s >= s0; --s) {
          const int64_t t = at_pos(s, L, reverse);
          const float *__restrict__ xt = px + (b * L + t) * D;
          const float *__restrict__ dt = pd + (b * L + t) * D;
          const float *__restrict__ gyt = pgy + (b * L + t) * D;
          const float *__restrict__ Bt = pB + (b * L + t) * N;
          const float *__restrict__ Ct = pC + (b * L + t) * N;
          const float *__restrict__ hp = hbuf.data() + (s - s0) * N * D;
          const float *__restrict__ hc = hbuf.data() + (s - s0 + 1) * N * D;
          for (int64_t d = 0; d < D; ++d) { u[d] = dt[d] * xt[d]; sum_gb[d] = 0.f; sum_qa[d] = 0.f; }
          for (int64_t n = 0; n < N; ++n) {
            float out[2];
            bwd_row(D, Bt[n], Ct[n], pA + n * D, dt, gyt, u, hp + n * D, hc + n * D, G + n * D, gA + n * D,
                    sum_gb, sum_qa, out);
            pgC[(b * L + t) * N + n] = out[0];
            pgB[(b * L + t) * N + n] = out[1];
          }
          float *__restrict__ gxt = pgx + (b * L + t) * D;
          float *__restrict__ gdt = pgd + (b * L + t) * D;
          for (int64_t d = 0; d < D; ++d) {
            gxt[d] = dt[d] * sum_gb[d];
            gdt[d] = xt[d] * sum_gb[d] + sum_qa[d];
          }
        }
      }
    }
  });
  return {gx, gd, gAb.sum(0).t().contiguous(), gB, gC};
}
"""


def build_directory() -> Path:
    """This torch installation's build folder (not created here): under torch's extension root
    (``TORCH_EXTENSIONS_DIR`` or its default), ``NAME-<hash of the torch version and folder>``."""
    from torch.utils.cpp_extension import get_default_build_root

    key = hashlib.sha256(f"{torch.__version__}|{Path(torch.__file__).parent}".encode()).hexdigest()[:12]
    return Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()) / f"{NAME}-{key}"


def _library() -> Path:
    from torch.utils.cpp_extension import LIB_EXT

    return build_directory() / f"{NAME}{LIB_EXT}"


def built() -> bool:
    """Whether the library is built for this torch installation (then loading it is quick)."""
    try:
        return _library().is_file()
    except OSError:  # an unreadable folder: not built, as far as this process can tell
        return False


def build(verbose: bool = False) -> Any:
    """Compile (or, when up to date, just load) the extension in :func:`build_directory`; the
    module, or raises what the compiler raised."""
    from torch.utils.cpp_extension import load_inline

    build_directory().mkdir(parents=True, exist_ok=True)
    return load_inline(name=NAME, cpp_sources=[_SOURCE], functions=["scan_fwd", "scan_bwd"],
                       extra_cflags=["-O3", "-march=native", "-ffast-math", "-fno-finite-math-only"],
                       build_directory=str(build_directory()), verbose=verbose)


def _load_built() -> Any:
    """Import the built library directly (no compiler, no ninja)."""
    spec = importlib.util.spec_from_file_location(NAME, _library())
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {_library()}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_LOADED: list[Any] = []  # the module, once loaded or built
_FAILED: set[bool] = set()  # the modes (may_build) that failed, so each is tried and logged once


def _module(may_build: bool = False) -> Any:
    """The loaded extension (loading a built library; building it first only with ``may_build``),
    or None."""
    if _LOADED:
        return _LOADED[0]
    if may_build in _FAILED or (not may_build and not built()):
        return None
    try:
        if built():
            module = _load_built()
        else:
            log.warning("selective_scan/cpu_fused: compiling the C++ scan once for this torch installation into %s "
                        "(about a minute on an idle machine, longer under load; %s=0 skips it)",
                        build_directory(), ENV_VAR)
            module = build()
    except Exception as exc:  # no compiler / ninja / headers: the next backend runs instead
        _FAILED.add(may_build)
        log.info("selective_scan/cpu_fused unavailable (%s: %s); using the next backend", type(exc).__name__, exc)
        return None
    _LOADED.append(module)
    return module


def available() -> bool:
    """Whether the backend runs (see the module doc): ``TABZOO_SCAN_CPU`` unset and the library
    built for this torch installation, or ``1`` (built now if needed); never with ``0``."""
    mode = os.environ.get(ENV_VAR, "")
    if mode not in ("", "1"):
        return False
    return _module(mode == "1") is not None


class _Scan(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                reverse: bool) -> torch.Tensor:
        ins = [t.float().contiguous() for t in (x, delta, A, B, C)]
        y, hs = _module().scan_fwd(*ins, reverse, SEGMENT)
        ctx.save_for_backward(*ins, hs)
        ctx.reverse, ctx.dtypes = reverse, tuple(t.dtype for t in (x, delta, A, B, C))
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, gy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, delta, A, B, C, hs = ctx.saved_tensors
        grads = _module().scan_bwd(x, delta, A, B, C, gy.float().contiguous(), hs, ctx.reverse, SEGMENT)
        return (*(g.to(dt) for g, dt in zip(grads, ctx.dtypes, strict=True)), None)


def selective_scan_cpu(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                       D: torch.Tensor | None = None, reverse: bool = False) -> torch.Tensor:
    """The compiled one-pass scan (see the module docstring): ``[batch, L, D]`` in the dtype of ``x``."""
    y = _Scan.apply(x, delta, A, B, C, bool(reverse))
    if D is not None:
        y = y + D.float() * x.float()
    return y.to(x.dtype)
