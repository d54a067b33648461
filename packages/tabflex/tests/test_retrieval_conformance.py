"""The retrieval context (local contexts of the core's prediction path, issue 28 item 2) passes the conformance kit.

The case runs a tiny TabFlex through :class:`~tabzoo_tabflex.TabFlexClassifier` with
``context_strategy="local"`` and clusters of 16 rows, so every query row is answered from the context of
its nearest cluster of context rows: the kit checks that a query's prediction still depends only on the
context (order-free) and on that row (query equivariance and independence), no label of a query row is
read, and outputs are deterministic and finite.
"""

from __future__ import annotations

import torch
from tabzoo.testing import parametrize_with_checks
from tabzoo_tabflex.conformance import make_retrieval_case


@parametrize_with_checks([make_retrieval_case()], max_examples=3)
def test_retrieval_conformance(case, check) -> None:
    torch.set_num_threads(1)
    check(case)
