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
C`` in the same pass. fp32 throughout.

v4 fuses what surrounds the recurrence in a Mamba block (as Mamba's CUDA kernel does), so none of
it is a separate ``[L, D]`` pass with its own autograd node: the step size ``delta = f(delta_raw +
bias) * scale`` (``f`` = softplus or the identity; ``scale`` one number per position), the ``D x``
skip and the output gate ``y * silu(z)``; the backward returns the gradients of ``delta_raw``,
``bias``, ``scale``, ``D`` and ``z`` from the same pass. Softplus and sigmoid use the vectorisable
``fast_exp`` (softplus's ``log1p`` as a short ``atanh`` series), within 2e-7 relative of fp64.

v6: the backward keeps ``exp(delta A)`` of the segment it recomputes (one exp per element of the
backward where it took two; ~3% of a ``[1, 512]`` backward call, ~9% at ``[1, 4096]``, measured side by
side with v5; the gradients move by rounding, ~1e-7 relative in norm), and the library also holds
the short-sequence softmax attention of :mod:`tabzoo.kernels.attention` (``attn_fwd``, ``attn_bwd``:
its ``cpu_fused`` backend).

v7: the library also holds Ramba's structural attention over gathered tokens (``gat_fwd``,
``gat_bwd``: :mod:`tabzoo.kernels.gathered_attention`'s ``cpu_fused``), reading each row's keys and
values in place from the ``qkv`` projection and writing the output in token order; the scan, conv
and short attention are unchanged. :mod:`tabzoo.kernels.bimamba` calls the scan and conv of this
library directly (both directions of Ramba's mixer as one autograd node).

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
minutes were measured at load 20 on 2 cores). The same library holds the compiled backend of
:mod:`tabzoo.kernels.causal_conv` (``conv_fwd``, ``conv_bwd``) and of ``masked_attention``'s ``cpu_fused``. When it fails the backend reports itself
unavailable and dispatch picks the next one; the failure is logged once.

Measured for v3 (without the fused prologue and gate; one thread, CPU ms, load ~2, ``D = 128, N =
16``, the kernel calls alone; forward / backward): ``[1, 512]`` 0.19 / 0.48 against 0.41 / 3.65 for the ``[D, N]`` layout of v2 (whose
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
NAME = "tabzoo_scan_cpu_v7"  # the extension's name: change it with the source

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

// softplus(v) = max(v, 0) + log1p(e), e = exp(-|v|) in (0, 1]: log1p(e) = 2 atanh(s), s = e / (2 + e)
// <= 1/3, by its odd series to s^15 (truncation < 1e-8 relative); no libm call, so it vectorises
static inline float softplus_f(float v) {
  const float e = fast_exp(-std::fabs(v));
  const float s = e / (2.f + e), s2 = s * s;
  float p = 1.f / 15.f;
  p = p * s2 + 1.f / 13.f; p = p * s2 + 1.f / 11.f; p = p * s2 + 1.f / 9.f; p = p * s2 + 1.f / 7.f;
  p = p * s2 + 1.f / 5.f; p = p * s2 + 1.f / 3.f; p = p * s2 + 1.f;
  return std::max(v, 0.f) + 2.f * s * p;
}

static inline float sigmoid_f(float v) {
  const float e = fast_exp(-std::fabs(v));
  const float r = 1.f / (1.f + e);
  return v >= 0.f ? r : e * r;
}

static inline int64_t at_pos(int64_t s, int64_t L, bool rev) { return rev ? L - 1 - s : s; }

// A per-thread scratch buffer of at least n floats, kept between calls (its size is bounded by the
// model's widths, SEGMENT x N x D, not by L): a std::vector per call of the backward's segment
// buffers (~1 MB at D 128, N 16) is above glibc's mmap threshold, so it can be mapped and
// page-faulted in anew on every call (inside Ramba's forward + backward a [1, 512] backward call
// took 0.90 ms, alone 0.47). Measured side by side in Ramba at 512 tokens: forward + backward
// 21.36 against 21.69 ms with per-call vectors (median of 7, load ~3.7): small
static inline float *scratch(std::vector<float> &buf, size_t n) {
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// The step sizes of one position: sp = f(raw + bias) (f = softplus or the identity), dt = sp scale, u = dt x
static inline void prep_row(int64_t D, bool softplus, float scale, const float *__restrict__ raw,
                            const float *__restrict__ bias, const float *__restrict__ x, float *__restrict__ sp,
                            float *__restrict__ dt, float *__restrict__ u) {
  if (softplus) {
    for (int64_t d = 0; d < D; ++d) sp[d] = softplus_f(raw[d] + bias[d]);
  } else {
    for (int64_t d = 0; d < D; ++d) sp[d] = raw[d] + bias[d];
  }
  for (int64_t d = 0; d < D; ++d) { dt[d] = sp[d] * scale; u[d] = dt[d] * x[d]; }
}

// The output of one position after the state rows: y += Dskip x; with a gate z, ypre = y, y *= silu(z)
static inline void finish_row(int64_t D, const float *__restrict__ x, const float *__restrict__ Dv,
                              const float *__restrict__ z, float *__restrict__ y, float *__restrict__ ypre) {
  for (int64_t d = 0; d < D; ++d) y[d] += Dv[d] * x[d];
  if (z != nullptr) {
    for (int64_t d = 0; d < D; ++d) { ypre[d] = y[d]; y[d] *= z[d] * sigmoid_f(z[d]); }
  }
}

// The gradient reaching the pre-gate output (gp) and the gate's (gz) of one position
static inline void gate_grad_row(int64_t D, const float *__restrict__ gy, const float *__restrict__ z,
                                 const float *__restrict__ ypre, float *__restrict__ gp, float *__restrict__ gz) {
  for (int64_t d = 0; d < D; ++d) {
    const float sg = sigmoid_f(z[d]);
    gp[d] = gy[d] * z[d] * sg;
    gz[d] = gy[d] * ypre[d] * sg * (1.f + z[d] * (1.f - sg));
  }
}

// One state row n of one backward step (a function of its own: with every pointer a restrict
// parameter the loop over d vectorises; inside the lambda gcc re-reads captured pointers and does not)
static inline void bwd_row(int64_t D, float bn, float cn, const float *__restrict__ An, const float *__restrict__ dt,
                           const float *__restrict__ an, const float *__restrict__ gyt, const float *__restrict__ u,
                           const float *__restrict__ hpn, const float *__restrict__ hcn, float *__restrict__ Gn,
                           float *__restrict__ gAn, float *__restrict__ sum_gb, float *__restrict__ sum_qa,
                           float *__restrict__ out) {
  float gc = 0.f, gb = 0.f;
  for (int64_t d = 0; d < D; ++d) {
    const float a = an[d];  // exp(dt A), kept by the recompute (rec_row): one exp per element, not two
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

// The gradients of one position from the state-row sums: x, the raw step size, the bias and D
// accumulators; returns the gradient of the position's scale (a sum over d)
static inline float post_row(int64_t D, bool softplus, float scale, const float *__restrict__ raw,
                             const float *__restrict__ bias, const float *__restrict__ x, const float *__restrict__ Dv,
                             const float *__restrict__ sp, const float *__restrict__ dt, const float *__restrict__ gp,
                             const float *__restrict__ sum_gb, const float *__restrict__ sum_qa,
                             float *__restrict__ gx, float *__restrict__ graw, float *__restrict__ gbias,
                             float *__restrict__ gD) {
  float gs = 0.f;
  for (int64_t d = 0; d < D; ++d) {
    gx[d] = dt[d] * sum_gb[d] + gp[d] * Dv[d];
    gD[d] += gp[d] * x[d];
    const float gdt = x[d] * sum_gb[d] + sum_qa[d];  // d loss / d dt
    gs += gdt * sp[d];
    graw[d] = gdt * scale;
  }
  if (softplus) {
    for (int64_t d = 0; d < D; ++d) graw[d] *= sigmoid_f(raw[d] + bias[d]);
  }
  for (int64_t d = 0; d < D; ++d) gbias[d] += graw[d];
  return gs;
}

// One state row n of one forward step, in place: h = exp(dt A) h + u B_n, y += h C_n (restrict, as above)
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
                           const float *__restrict__ u, const float *__restrict__ hp, float *__restrict__ hc,
                           float *__restrict__ an) {
  for (int64_t d = 0; d < D; ++d) {
    const float a = fast_exp(dt[d] * An[d]);
    an[d] = a;
    hc[d] = a * hp[d] + u[d] * bn;
  }
}

// The state of one sequence is kept state-major, h[n][d] (d contiguous): every inner loop runs over
// d (D wide, vectorised with no horizontal sum); the sums over n accumulate into D-vectors, and only
// the backward's sums over d (the gradients of B, C and the scale) reduce, once per (t, n) or per t.
// Dv, bias: [D] (zeros when absent); scale: [nb, L] (ones when absent); z: [nb, L, D] or empty.
std::vector<torch::Tensor> scan_fwd(torch::Tensor x, torch::Tensor delta, torch::Tensor A, torch::Tensor B,
                                    torch::Tensor C, torch::Tensor Dv, torch::Tensor bias, torch::Tensor scale,
                                    torch::Tensor z, bool softplus, bool reverse, int64_t K) {
  const int64_t nb = x.size(0), L = x.size(1), D = x.size(2), N = A.size(1);
  const int64_t nseg = (L + K - 1) / K;
  const bool gated = z.numel() > 0;
  auto y = torch::empty({nb, L, D}, x.options());
  auto ypre = gated ? torch::empty({nb, L, D}, x.options()) : torch::empty({0}, x.options());
  auto hs = torch::empty({nb, nseg, N, D}, x.options());
  auto At = A.t().contiguous();  // [N, D]
  const float *__restrict__ px = x.data_ptr<float>();
  const float *__restrict__ pd = delta.data_ptr<float>();
  const float *__restrict__ pA = At.data_ptr<float>();
  const float *__restrict__ pB = B.data_ptr<float>();
  const float *__restrict__ pC = C.data_ptr<float>();
  const float *__restrict__ pDv = Dv.data_ptr<float>();
  const float *__restrict__ pbias = bias.data_ptr<float>();
  const float *__restrict__ pscale = scale.data_ptr<float>();
  const float *pz = gated ? z.data_ptr<float>() : nullptr;
  float *pypre = gated ? ypre.data_ptr<float>() : nullptr;
  float *__restrict__ py = y.data_ptr<float>();
  float *__restrict__ phs = hs.data_ptr<float>();
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    static thread_local std::vector<float> hbuf_, small_;
    float *__restrict__ h = scratch(hbuf_, N * D);
    float *sm = scratch(small_, 3 * D);
    float *uv = sm, *dtv = sm + D, *spv = sm + 2 * D;
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(h, h + N * D, 0.f);
      for (int64_t s = 0; s < L; ++s) {
        if (s % K == 0) std::copy(h, h + N * D, phs + (b * nseg + s / K) * N * D);
        const int64_t t = at_pos(s, L, reverse), row = (b * L + t) * D;
        const float *__restrict__ Bt = pB + (b * L + t) * N;
        const float *__restrict__ Ct = pC + (b * L + t) * N;
        float *__restrict__ yt = py + row;
        prep_row(D, softplus, pscale[b * L + t], pd + row, pbias, px + row, spv, dtv, uv);
        std::fill(yt, yt + D, 0.f);
        for (int64_t n = 0; n < N; ++n) fwd_row(D, Bt[n], Ct[n], pA + n * D, dtv, uv, h + n * D, yt);
        finish_row(D, px + row, pDv, gated ? pz + row : nullptr, yt, gated ? pypre + row : nullptr);
      }
    }
  });
  return {y, hs, ypre};
}

std::vector<torch::Tensor> scan_bwd(torch::Tensor x, torch::Tensor delta, torch::Tensor A, torch::Tensor B,
                                    torch::Tensor C, torch::Tensor Dv, torch::Tensor bias, torch::Tensor scale,
                                    torch::Tensor z, torch::Tensor ypre, torch::Tensor gy, torch::Tensor hs,
                                    bool softplus, bool reverse, int64_t K) {
  const int64_t nb = x.size(0), L = x.size(1), D = x.size(2), N = A.size(1);
  const int64_t nseg = (L + K - 1) / K;
  const bool gated = z.numel() > 0;
  auto gx = torch::empty_like(x), gd = torch::empty_like(delta);
  auto gB = torch::empty_like(B), gC = torch::empty_like(C);
  auto gscale = torch::empty({nb, L}, x.options());
  auto gz = gated ? torch::empty_like(z) : torch::empty({0}, x.options());
  auto gAb = torch::zeros({nb, N, D}, A.options());
  auto gDb = torch::zeros({nb, D}, A.options()), gbb = torch::zeros({nb, D}, A.options());
  auto At = A.t().contiguous();  // [N, D]
  const float *__restrict__ px = x.data_ptr<float>();
  const float *__restrict__ pd = delta.data_ptr<float>();
  const float *__restrict__ pA = At.data_ptr<float>();
  const float *__restrict__ pB = B.data_ptr<float>();
  const float *__restrict__ pC = C.data_ptr<float>();
  const float *__restrict__ pDv = Dv.data_ptr<float>();
  const float *__restrict__ pbias = bias.data_ptr<float>();
  const float *__restrict__ pscale = scale.data_ptr<float>();
  const float *pz = gated ? z.data_ptr<float>() : nullptr;
  const float *pypre = gated ? ypre.data_ptr<float>() : nullptr;
  const float *__restrict__ pgy = gy.data_ptr<float>();
  const float *__restrict__ phs = hs.data_ptr<float>();
  float *__restrict__ pgx = gx.data_ptr<float>();
  float *__restrict__ pgd = gd.data_ptr<float>();
  float *__restrict__ pgB = gB.data_ptr<float>();
  float *__restrict__ pgC = gC.data_ptr<float>();
  float *__restrict__ pgs = gscale.data_ptr<float>();
  float *pgz = gated ? gz.data_ptr<float>() : nullptr;
  float *__restrict__ pgAb = gAb.data_ptr<float>();
  float *__restrict__ pgDb = gDb.data_ptr<float>();
  float *__restrict__ pgbb = gbb.data_ptr<float>();
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    static thread_local std::vector<float> states_, rows_;
    float *hb = scratch(states_, ((K + 1) + K + 1) * N * D);  // states, exp(dt A), G
    float *rb = scratch(rows_, 3 * D + 3 * K * D);
    float *hbuf = hb, *abuf = hb + (K + 1) * N * D;
    float *__restrict__ G = hb + (2 * K + 1) * N * D;  // a_{t+1} G_{t+1}, carried backwards
    float *sgb = rb, *sqa = rb + D, *gpv = rb + 2 * D;
    float *ubuf = rb + 3 * D, *dtbuf = ubuf + K * D, *spbuf = dtbuf + K * D;
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(G, G + N * D, 0.f);
      float *__restrict__ gA = pgAb + b * N * D;
      for (int64_t seg = nseg - 1; seg >= 0; --seg) {
        const int64_t s0 = seg * K, s1 = std::min(L, s0 + K);
        std::copy(phs + (b * nseg + seg) * N * D, phs + (b * nseg + seg + 1) * N * D, hbuf);
        for (int64_t s = s0; s < s1; ++s) {  // recompute the segment's step sizes and states
          const int64_t t = at_pos(s, L, reverse), row = (b * L + t) * D, k = (s - s0) * D;
          const float *__restrict__ Bt = pB + (b * L + t) * N;
          const float *__restrict__ hp = hbuf + (s - s0) * N * D;
          float *__restrict__ hc = hbuf + (s - s0 + 1) * N * D;
          prep_row(D, softplus, pscale[b * L + t], pd + row, pbias, px + row, spbuf + k, dtbuf + k, ubuf + k);
          for (int64_t n = 0; n < N; ++n) rec_row(D, Bt[n], pA + n * D, dtbuf + k, ubuf + k, hp + n * D, hc + n * D,
                                                  abuf + ((s - s0) * N + n) * D);
        }
        for (int64_t s = s1 - 1; s >= s0; --s) {
          const int64_t t = at_pos(s, L, reverse), row = (b * L + t) * D, k = (s - s0) * D;
          const float *__restrict__ Bt = pB + (b * L + t) * N;
          const float *__restrict__ Ct = pC + (b * L + t) * N;
          const float *__restrict__ hp = hbuf + (s - s0) * N * D;
          const float *__restrict__ hc = hbuf + (s - s0 + 1) * N * D;
          const float *gp = pgy + row;
          if (gated) {
            gate_grad_row(D, pgy + row, pz + row, pypre + row, gpv, pgz + row);
            gp = gpv;
          }
          std::fill(sgb, sgb + D, 0.f);
          std::fill(sqa, sqa + D, 0.f);
          for (int64_t n = 0; n < N; ++n) {
            float out[2];
            bwd_row(D, Bt[n], Ct[n], pA + n * D, dtbuf + k, abuf + ((s - s0) * N + n) * D, gp, ubuf + k, hp + n * D,
                    hc + n * D, G + n * D, gA + n * D, sgb, sqa, out);
            pgC[(b * L + t) * N + n] = out[0];
            pgB[(b * L + t) * N + n] = out[1];
          }
          pgs[b * L + t] = post_row(D, softplus, pscale[b * L + t], pd + row, pbias, px + row, pDv, spbuf + k,
                                    dtbuf + k, gp, sgb, sqa, pgx + row, pgd + row, pgbb + b * D, pgDb + b * D);
        }
      }
    }
  });
  return {gx, gd, gAb.sum(0).t().contiguous(), gB, gC, gDb.sum(0), gbb.sum(0), gscale, gz};
}

// Softmax attention of short sequences (tabzoo.kernels.attention's cpu_fused backend): q [B, H, Q, E],
// k, v [B, H, K, E] with any strides except a unit one along E; kmask [B, K] (1 = may attend) or
// empty. One (b, h) pair per task, the scores of one query in a K-vector, the loops over E
// vectorised. out [B, Q, H, E] (token-major: the caller's transpose back to [B, H, Q, E] is a view);
// lse [B, H, Q] the log-sum-exp of each query's scaled scores, +inf for a query with no allowed key
// (its output and gradients are 0).
static inline float dot_e(int64_t E, const float *__restrict__ a, const float *__restrict__ b) {
  float s = 0.f;
  for (int64_t e = 0; e < E; ++e) s += a[e] * b[e];
  return s;
}

static inline void axpy_e(int64_t E, float w, const float *__restrict__ x, float *__restrict__ y) {
  for (int64_t e = 0; e < E; ++e) y[e] += w * x[e];
}

std::vector<torch::Tensor> attn_fwd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor kmask,
                                    double scale_d) {
  const int64_t B = q.size(0), H = q.size(1), Q = q.size(2), E = q.size(3), K = k.size(2);
  const float scale = static_cast<float>(scale_d);
  auto out = torch::zeros({B, Q, H, E}, q.options());
  auto lse = torch::empty({B, H, Q}, q.options());
  const float *pq = q.data_ptr<float>(), *pk = k.data_ptr<float>(), *pv = v.data_ptr<float>();
  const float *pm = kmask.numel() > 0 ? kmask.data_ptr<float>() : nullptr;
  float *po = out.data_ptr<float>(), *pl = lse.data_ptr<float>();
  const int64_t qs0 = q.stride(0), qs1 = q.stride(1), qs2 = q.stride(2);
  const int64_t ks0 = k.stride(0), ks1 = k.stride(1), ks2 = k.stride(2);
  const int64_t vs0 = v.stride(0), vs1 = v.stride(1), vs2 = v.stride(2);
  at::parallel_for(0, B * H, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> sv(K);
    for (int64_t bh = i0; bh < i1; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const float *mb = pm != nullptr ? pm + b * K : nullptr;
      for (int64_t i = 0; i < Q; ++i) {
        const float *qi = pq + b * qs0 + h * qs1 + i * qs2;
        float m = -INFINITY;
        for (int64_t j = 0; j < K; ++j) {
          if (mb != nullptr && mb[j] == 0.f) { sv[j] = -INFINITY; continue; }
          sv[j] = scale * dot_e(E, qi, pk + b * ks0 + h * ks1 + j * ks2);
          m = std::max(m, sv[j]);
        }
        float *oi = po + ((b * Q + i) * H + h) * E;
        if (m == -INFINITY) { pl[bh * Q + i] = INFINITY; continue; }
        float l = 0.f;
        for (int64_t j = 0; j < K; ++j) {
          if (sv[j] == -INFINITY) continue;
          const float p = std::exp(sv[j] - m);
          l += p;
          axpy_e(E, p, pv + b * vs0 + h * vs1 + j * vs2, oi);
        }
        const float inv = 1.f / l;
        for (int64_t e = 0; e < E; ++e) oi[e] *= inv;
        pl[bh * Q + i] = m + std::log(l);
      }
    }
  });
  return {out, lse};
}

// The gradients of attn_fwd: go [B, H, Q, E] (any strides, unit along E), out and lse as attn_fwd
// returned them; gq [B, Q, H, E], gk and gv [B, K, H, E] (token-major, as out). The probabilities are
// recomputed from lse: p = exp(s - lse), ds = p (go . v_j - go . out_i).
std::vector<torch::Tensor> attn_bwd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor kmask,
                                    torch::Tensor out, torch::Tensor lse, torch::Tensor go, double scale_d) {
  const int64_t B = q.size(0), H = q.size(1), Q = q.size(2), E = q.size(3), K = k.size(2);
  const float scale = static_cast<float>(scale_d);
  auto gq = torch::zeros({B, Q, H, E}, q.options());
  auto gk = torch::zeros({B, K, H, E}, q.options()), gv = torch::zeros({B, K, H, E}, q.options());
  const float *pq = q.data_ptr<float>(), *pk = k.data_ptr<float>(), *pv = v.data_ptr<float>();
  const float *pm = kmask.numel() > 0 ? kmask.data_ptr<float>() : nullptr;
  const float *po = out.data_ptr<float>(), *pl = lse.data_ptr<float>(), *pg = go.data_ptr<float>();
  float *pgq = gq.data_ptr<float>(), *pgk = gk.data_ptr<float>(), *pgv = gv.data_ptr<float>();
  const int64_t qs0 = q.stride(0), qs1 = q.stride(1), qs2 = q.stride(2);
  const int64_t ks0 = k.stride(0), ks1 = k.stride(1), ks2 = k.stride(2);
  const int64_t vs0 = v.stride(0), vs1 = v.stride(1), vs2 = v.stride(2);
  const int64_t gs0 = go.stride(0), gs1 = go.stride(1), gs2 = go.stride(2);
  at::parallel_for(0, B * H, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t bh = i0; bh < i1; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const float *mb = pm != nullptr ? pm + b * K : nullptr;
      for (int64_t i = 0; i < Q; ++i) {
        const float li = pl[bh * Q + i];
        if (li == INFINITY) continue;
        const float *qi = pq + b * qs0 + h * qs1 + i * qs2;
        const float *gi = pg + b * gs0 + h * gs1 + i * gs2;
        const float di = dot_e(E, gi, po + ((b * Q + i) * H + h) * E);
        float *gqi = pgq + ((b * Q + i) * H + h) * E;
        for (int64_t j = 0; j < K; ++j) {
          if (mb != nullptr && mb[j] == 0.f) continue;
          const float *kj = pk + b * ks0 + h * ks1 + j * ks2;
          const float p = std::exp(scale * dot_e(E, qi, kj) - li);
          const float ds = p * (dot_e(E, gi, pv + b * vs0 + h * vs1 + j * vs2) - di) * scale;
          axpy_e(E, ds, kj, gqi);
          axpy_e(E, ds, qi, pgk + ((b * K + j) * H + h) * E);
          axpy_e(E, p, gi, pgv + ((b * K + j) * H + h) * E);
        }
      }
    }
  });
  return {gq, gk, gv};
}

// Ramba's structural attention over gathered tokens (tabzoo.kernels.gathered_attention's cpu_fused):
// qkv [T, 3 H E] (q | k | v, head-major in each), q_tok [R, Qm] and k_tok [R, Km] flat token ids of
// each row's queries and keys (-1 = none). Every token is a query of at most one row, so the
// forward's writes are disjoint; out [T, H E] (0 for tokens that are no row's query or whose row has
// no key), lse [T, H] (+inf there). The keys are read in place: no gathered copy of q, k or v.
std::vector<torch::Tensor> gat_fwd(torch::Tensor qkv, torch::Tensor q_tok, torch::Tensor k_tok, int64_t H,
                                   double scale_d) {
  const int64_t T = qkv.size(0), HE3 = qkv.size(1), HE = HE3 / 3, E = HE / H;
  const int64_t R = q_tok.size(0), Qm = q_tok.size(1), Km = k_tok.size(1);
  const float scale = static_cast<float>(scale_d);
  auto out = torch::zeros({T, HE}, qkv.options());
  auto lse = torch::full({T, H}, INFINITY, qkv.options());
  const float *p = qkv.data_ptr<float>();
  const int64_t *pq = q_tok.data_ptr<int64_t>(), *pk = k_tok.data_ptr<int64_t>();
  float *po = out.data_ptr<float>(), *pl = lse.data_ptr<float>();
  at::parallel_for(0, R, 1, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> keys(Km);
    std::vector<float> sv(Km);
    for (int64_t r = r0; r < r1; ++r) {
      int64_t nk = 0;
      for (int64_t j = 0; j < Km; ++j) if (pk[r * Km + j] >= 0) keys[nk++] = pk[r * Km + j];
      if (nk == 0) continue;
      for (int64_t i = 0; i < Qm; ++i) {
        const int64_t t = pq[r * Qm + i];
        if (t < 0) continue;
        for (int64_t h = 0; h < H; ++h) {
          const float *qi = p + t * HE3 + h * E;
          float m = -INFINITY;
          for (int64_t j = 0; j < nk; ++j) {
            sv[j] = scale * dot_e(E, qi, p + keys[j] * HE3 + HE + h * E);
            m = std::max(m, sv[j]);
          }
          float *oi = po + t * HE + h * E;
          float l = 0.f;
          for (int64_t j = 0; j < nk; ++j) {
            const float w = std::exp(sv[j] - m);
            l += w;
            axpy_e(E, w, p + keys[j] * HE3 + 2 * HE + h * E, oi);
          }
          const float inv = 1.f / l;
          for (int64_t e = 0; e < E; ++e) oi[e] *= inv;
          pl[t * H + h] = m + std::log(l);
        }
      }
    }
  });
  return {out, lse};
}

// The gradient of gat_fwd with respect to qkv [T, 3 H E], from go [T, H E] and the saved out, lse.
// The queries' gradients are disjoint per row; the keys' and values' are shared between rows (a
// relational neighbour is a key of several rows), so with several threads each accumulates into a
// buffer of its own, summed at the end.
torch::Tensor gat_bwd(torch::Tensor qkv, torch::Tensor q_tok, torch::Tensor k_tok, torch::Tensor out,
                      torch::Tensor lse, torch::Tensor go, int64_t H, double scale_d) {
  const int64_t T = qkv.size(0), HE3 = qkv.size(1), HE = HE3 / 3, E = HE / H;
  const int64_t R = q_tok.size(0), Qm = q_tok.size(1), Km = k_tok.size(1);
  const float scale = static_cast<float>(scale_d);
  auto g = torch::zeros({T, HE3}, qkv.options());
  const int64_t nt = std::min<int64_t>(at::get_num_threads(), std::max<int64_t>(R, 1));
  auto acc = nt > 1 ? torch::zeros({nt, T, 2 * HE}, qkv.options()) : torch::empty({0}, qkv.options());
  const float *p = qkv.data_ptr<float>(), *po = out.data_ptr<float>(), *pl = lse.data_ptr<float>();
  const float *pg = go.data_ptr<float>();
  const int64_t *pq = q_tok.data_ptr<int64_t>(), *pk = k_tok.data_ptr<int64_t>();
  float *pgq = g.data_ptr<float>();
  float *pacc = nt > 1 ? acc.data_ptr<float>() : nullptr;
  const int64_t grain = nt > 1 ? (R + nt - 1) / nt : R;
  at::parallel_for(0, R, std::max<int64_t>(grain, 1), [&](int64_t r0, int64_t r1) {
    const int64_t tid = nt > 1 ? std::min<int64_t>(at::get_thread_num(), nt - 1) : 0;
    // the k and v gradients of token s, head h: base + s * stride + (0 | HE) + h E
    float *base = nt > 1 ? pacc + tid * T * 2 * HE : pgq + HE;
    const int64_t stride = nt > 1 ? 2 * HE : HE3;
    std::vector<int64_t> keys(Km);
    for (int64_t r = r0; r < r1; ++r) {
      int64_t nk = 0;
      for (int64_t j = 0; j < Km; ++j) if (pk[r * Km + j] >= 0) keys[nk++] = pk[r * Km + j];
      if (nk == 0) continue;
      for (int64_t i = 0; i < Qm; ++i) {
        const int64_t t = pq[r * Qm + i];
        if (t < 0) continue;
        for (int64_t h = 0; h < H; ++h) {
          const float li = pl[t * H + h];
          if (li == INFINITY) continue;
          const float *qi = p + t * HE3 + h * E;
          const float *gi = pg + t * HE + h * E;
          const float di = dot_e(E, gi, po + t * HE + h * E);
          float *gqi = pgq + t * HE3 + h * E;
          for (int64_t j = 0; j < nk; ++j) {
            const int64_t s = keys[j];
            const float *kj = p + s * HE3 + HE + h * E;
            const float w = std::exp(scale * dot_e(E, qi, kj) - li);
            const float ds = w * (dot_e(E, gi, p + s * HE3 + 2 * HE + h * E) - di) * scale;
            axpy_e(E, ds, kj, gqi);
            axpy_e(E, ds, qi, base + s * stride + h * E);
            axpy_e(E, w, gi, base + s * stride + HE + h * E);
          }
        }
      }
    }
  });
  if (nt > 1) g.narrow(1, HE, 2 * HE).add_(acc.sum(0));
  return g;
}

// The depthwise causal convolution of tabzoo.kernels.causal_conv (token-major, fp32):
// pre[t] = bias + sum_k w[k] x[t -+ (K-1-k)], out[t] = act(pre[t]) mask[t]; wT [K, D], mask [nb, L].
static inline void conv_pre_row(int64_t D, int64_t K, int64_t L, int64_t t, bool rev, const float *__restrict__ xb,
                                const float *__restrict__ w, const float *__restrict__ bias, float *__restrict__ pre) {
  for (int64_t d = 0; d < D; ++d) pre[d] = bias[d];
  for (int64_t k = 0; k < K; ++k) {
    const int64_t src = rev ? t + (K - 1 - k) : t - (K - 1 - k);
    if (src < 0 || src >= L) continue;
    const float *__restrict__ xs = xb + src * D;
    const float *__restrict__ wk = w + k * D;
    for (int64_t d = 0; d < D; ++d) pre[d] += wk[d] * xs[d];
  }
}

static inline void conv_act_row(int64_t D, bool silu, float m, const float *__restrict__ pre, float *__restrict__ out) {
  if (silu) {
    for (int64_t d = 0; d < D; ++d) out[d] = pre[d] * sigmoid_f(pre[d]) * m;
  } else {
    for (int64_t d = 0; d < D; ++d) out[d] = pre[d] * m;
  }
}

// gp = g m act'(pre); returns sum_d g act(pre) (the gradient of the mask)
static inline float conv_grad_row(int64_t D, bool silu, float m, const float *__restrict__ pre,
                                  const float *__restrict__ g, float *__restrict__ gp, float *__restrict__ gbias) {
  float gm = 0.f;
  if (silu) {
    for (int64_t d = 0; d < D; ++d) {
      const float sg = sigmoid_f(pre[d]);
      gm += g[d] * pre[d] * sg;
      gp[d] = g[d] * m * sg * (1.f + pre[d] * (1.f - sg));
    }
  } else {
    for (int64_t d = 0; d < D; ++d) { gm += g[d] * pre[d]; gp[d] = g[d] * m; }
  }
  for (int64_t d = 0; d < D; ++d) gbias[d] += gp[d];
  return gm;
}

torch::Tensor conv_fwd(torch::Tensor x, torch::Tensor wT, torch::Tensor bias, torch::Tensor mask, bool silu,
                       bool reverse) {
  const int64_t nb = x.size(0), L = x.size(1), D = x.size(2), K = wT.size(0);
  auto out = torch::empty_like(x);
  const float *__restrict__ px = x.data_ptr<float>();
  const float *__restrict__ pw = wT.data_ptr<float>();
  const float *__restrict__ pb = bias.data_ptr<float>();
  const float *__restrict__ pm = mask.data_ptr<float>();
  float *__restrict__ po = out.data_ptr<float>();
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> pre(D);
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t t = 0; t < L; ++t) {
        conv_pre_row(D, K, L, t, reverse, px + b * L * D, pw, pb, pre.data());
        conv_act_row(D, silu, pm[b * L + t], pre.data(), po + (b * L + t) * D);
      }
    }
  });
  return out;
}

std::vector<torch::Tensor> conv_bwd(torch::Tensor x, torch::Tensor wT, torch::Tensor bias, torch::Tensor mask,
                                    torch::Tensor g, bool silu, bool reverse) {
  const int64_t nb = x.size(0), L = x.size(1), D = x.size(2), K = wT.size(0);
  auto gx = torch::empty_like(x);
  auto gm = torch::empty_like(mask);
  auto gwb = torch::zeros({nb, K, D}, x.options()), gbb = torch::zeros({nb, D}, x.options());
  const float *__restrict__ px = x.data_ptr<float>();
  const float *__restrict__ pw = wT.data_ptr<float>();
  const float *__restrict__ pb = bias.data_ptr<float>();
  const float *__restrict__ pm = mask.data_ptr<float>();
  const float *__restrict__ pg = g.data_ptr<float>();
  float *__restrict__ pgx = gx.data_ptr<float>();
  float *__restrict__ pgm = gm.data_ptr<float>();
  float *__restrict__ pgw = gwb.data_ptr<float>();
  float *__restrict__ pgb = gbb.data_ptr<float>();
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> pre(D), gp(L * D);
    for (int64_t b = b0; b < b1; ++b) {
      const float *__restrict__ xb = px + b * L * D;
      for (int64_t t = 0; t < L; ++t) {  // the gradient reaching each pre-activation
        conv_pre_row(D, K, L, t, reverse, xb, pw, pb, pre.data());
        pgm[b * L + t] = conv_grad_row(D, silu, pm[b * L + t], pre.data(), pg + (b * L + t) * D, gp.data() + t * D,
                                       pgb + b * D);
      }
      for (int64_t s = 0; s < L; ++s) {  // x[s] fed tap k of position s +- (K-1-k)
        float *__restrict__ gxs = pgx + (b * L + s) * D;
        const float *__restrict__ xs = xb + s * D;
        for (int64_t d = 0; d < D; ++d) gxs[d] = 0.f;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t t = reverse ? s - (K - 1 - k) : s + (K - 1 - k);
          if (t < 0 || t >= L) continue;
          const float *__restrict__ gpt = gp.data() + t * D;
          const float *__restrict__ wk = pw + k * D;
          float *__restrict__ gwk = pgw + (b * K + k) * D;
          for (int64_t d = 0; d < D; ++d) { gxs[d] += wk[d] * gpt[d]; gwk[d] += gpt[d] * xs[d]; }
        }
      }
    }
  });
  return {gx, gwb.sum(0), gbb.sum(0), gm};
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
    return load_inline(name=NAME, cpp_sources=[_SOURCE], functions=["scan_fwd", "scan_bwd", "conv_fwd", "conv_bwd", "attn_fwd", "attn_bwd",
                                                                  "gat_fwd", "gat_bwd"],
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
                D: torch.Tensor | None, delta_bias: torch.Tensor | None, delta_scale: torch.Tensor | None,
                z: torch.Tensor | None, delta_softplus: bool, reverse: bool) -> torch.Tensor:
        f32 = lambda t: t.float().contiguous()  # noqa: E731
        d = x.shape[-1]
        ins = [f32(t) for t in (x, delta, A, B, C)]
        extra = [f32(D) if D is not None else x.new_zeros(d, dtype=torch.float32),
                 f32(delta_bias) if delta_bias is not None else x.new_zeros(d, dtype=torch.float32),
                 f32(delta_scale) if delta_scale is not None else x.new_ones(x.shape[:2], dtype=torch.float32),
                 f32(z) if z is not None else x.new_empty(0, dtype=torch.float32)]
        y, hs, ypre = _module().scan_fwd(*ins, *extra, bool(delta_softplus), reverse, SEGMENT)
        ctx.save_for_backward(*ins, *extra, ypre, hs)
        ctx.flags = (bool(delta_softplus), reverse)
        ctx.given = (D, delta_bias, delta_scale, z)
        ctx.dtypes = tuple(t.dtype if t is not None else None for t in (x, delta, A, B, C, D, delta_bias, delta_scale, z))
        return y.to(x.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, gy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, delta, A, B, C, dv, bias, scale, z, ypre, hs = ctx.saved_tensors
        softplus, reverse = ctx.flags
        gx, gd, ga, gb, gc, g_dv, g_bias, g_scale, g_z = _module().scan_bwd(
            x, delta, A, B, C, dv, bias, scale, z, ypre, gy.float().contiguous(), hs, softplus, reverse, SEGMENT)
        grads = [gx, gd, ga, gb, gc, g_dv, g_bias, g_scale, g_z]
        out: list[torch.Tensor | None] = [g.to(dt) if dt is not None else None
                                          for g, dt in zip(grads, ctx.dtypes, strict=True)]
        return (*out, None, None)


def selective_scan_cpu(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                       D: torch.Tensor | None = None, reverse: bool = False, delta_bias: torch.Tensor | None = None,
                       delta_softplus: bool = False, delta_scale: torch.Tensor | None = None,
                       z: torch.Tensor | None = None) -> torch.Tensor:
    """The compiled one-pass scan (see the module docstring), with the step-size prologue
    (``delta_bias``, ``delta_softplus``, ``delta_scale``), the ``D`` skip and the ``silu(z)``
    gate computed inside it: ``[batch, L, D]`` in the dtype of ``x``."""
    return _Scan.apply(x, delta, A, B, C, D, delta_bias, delta_scale, z, bool(delta_softplus), bool(reverse))
