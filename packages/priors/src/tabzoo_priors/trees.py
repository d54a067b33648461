"""Random decision trees evaluated for many datasets, nodes and rows at once.

Every tree is stored as a complete binary tree of the maximum depth ``D`` (heap layout: internal
node ``i`` has children ``2i + 1`` and ``2i + 2``). A tree of depth ``d < D`` is emulated by
letting all leaves below one depth-``d`` node share its value, so shallow and deep trees run in
the same batched traversal.
"""

from __future__ import annotations

import torch

__all__ = ["tree_layer"]


def tree_layer(
    h_in: torch.Tensor, n_out: int, n_trees: int, depth: tuple[int, int], g: torch.Generator,
    n_inputs: torch.Tensor | None = None, return_parents: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Evaluate ``n_out * n_trees`` random trees per dataset on the nodes ``h_in``.

    :param h_in: ``[batch, rows, inputs]`` parent node values.
    :param n_out: number of output nodes.
    :param n_trees: trees per output node (their outputs are averaged).
    :param depth: ``(min, max)`` depth; each tree draws its depth uniformly.
    :param g: generator on ``h_in.device``.
    :param n_inputs: ``[batch]``: dataset ``i`` splits only on its first ``n_inputs[i]`` inputs
        (default: all of them).
    :param return_parents: also return ``[batch, inputs, n_out]`` bool, True where an output's
        trees split on an input (its parents in the DAG).
    :return: ``[batch, rows, n_out]`` (and the parents).
    """
    b, n, n_in = h_in.shape
    dev, dt = h_in.device, h_in.dtype
    d_max = depth[1]
    n_internal = (1 << d_max) - 1
    n_leaves = 1 << d_max
    m = n_out * n_trees
    if n_inputs is None:
        feat = torch.randint(0, n_in, (b, m, n_internal), generator=g, device=dev)
    else:
        u = torch.rand(b, m, n_internal, generator=g, device=dev)
        feat = (u * n_inputs.view(b, 1, 1)).long().clamp(0, n_in - 1)
    # threshold: midpoint of the split feature's values at two random rows (a random threshold
    # that rarely isolates a handful of extreme rows in a leaf)
    rows = torch.randint(0, n, (b, m, 2 * n_internal), generator=g, device=dev)
    flat = h_in.reshape(b, n * n_in)
    feat2 = feat.repeat(1, 1, 2)
    thr = flat.gather(1, (rows * n_in + feat2).view(b, -1)).view(b, m, 2, n_internal).mean(2)
    # leaf values: Gaussian or uniform per dataset; depth-d trees repeat each value 2^(D-d) times
    gauss = torch.rand(b, 1, 1, generator=g, device=dev) < 0.5
    vals = torch.where(
        gauss,
        torch.randn(b, m, n_leaves, generator=g, device=dev, dtype=dt),
        torch.rand(b, m, n_leaves, generator=g, device=dev, dtype=dt) * 2 - 1,
    )
    d = torch.randint(depth[0], d_max + 1, (b, m, 1), generator=g, device=dev)
    shift = d_max - d
    leaf_ids = torch.arange(n_leaves, device=dev).view(1, 1, -1)
    vals = vals.gather(2, (leaf_ids >> shift) << shift)
    # batched traversal, one level at a time
    feat_flat = feat.view(b, m * n_internal)
    thr_flat = thr.view(b, m * n_internal)
    base = (torch.arange(m, device=dev) * n_internal).view(1, 1, m)
    pos = torch.zeros(b, n, m, dtype=torch.long, device=dev)
    for _ in range(d_max):
        idx = (base + pos).view(b, n * m)
        f = feat_flat.gather(1, idx).view(b, n, m)
        t = thr_flat.gather(1, idx).view(b, n, m)
        x = h_in.gather(2, f)
        pos = 2 * pos + 1 + (x > t).long()
    leaf = pos - n_internal
    out = vals.view(b, m * n_leaves).gather(
        1, ((torch.arange(m, device=dev) * n_leaves).view(1, 1, m) + leaf).view(b, n * m)
    )
    out = out.view(b, n, n_out, n_trees).mean(-1)
    if not return_parents:
        return out
    # internal node i lies at level floor(log2(i + 1)); a depth-d tree uses levels < d
    ids = torch.arange(1, n_internal + 1, device=dev)
    level = torch.zeros_like(ids)
    for k in range(1, d_max):
        level += (ids >= (1 << k)).long()
    used = (level.view(1, 1, -1) < d).to(dt)  # [b, m, n_internal]
    parents = torch.zeros(b, n_out, n_in, device=dev, dtype=dt).scatter_add_(
        2, feat.view(b, n_out, n_trees * n_internal), used.view(b, n_out, n_trees * n_internal)
    )
    return out, (parents > 0).transpose(1, 2)
