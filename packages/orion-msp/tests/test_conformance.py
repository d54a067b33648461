"""The orion-msp case passes the kit; the paper's mask is caught breaking query independence."""

from __future__ import annotations

import torch
from tabzoo.testing import check_conformance, parametrize_with_checks
from tabzoo.testing.fixtures import assert_checkpoint_round_trip
from tabzoo_orion_msp.conformance import make_case, make_paper_case


@parametrize_with_checks([make_case()], max_examples=4)
def test_conformance(case, check) -> None:
    torch.set_num_threads(1)
    check(case)


def test_the_kit_reports_the_paper_mask_as_breaking_query_independence() -> None:
    checks = ["query_independence", "context_order_invariance", "query_equivariance", "no_context_query_leak",
              "label_leak", "determinism"]
    results = {r.check: r for r in check_conformance(make_paper_case(), on_fail=None, checks=checks, max_examples=3)}
    qi = results["query_independence"]
    assert qi.status == "failed"
    assert "query row" in qi.message and qi.reproducer.get("path")  # a witness path on the masks
    # kit v2 never trusts context_repr: it also watches query outputs, and a query row that reads other
    # query rows moves exactly as a context<-query leak would, so the conservative verdict is "failed"
    assert results["no_context_query_leak"].status == "failed"
    # everything else the paper variant claims still holds
    for name in ("context_order_invariance", "query_equivariance", "label_leak", "determinism"):
        assert results[name].status == "passed", results[name]


def test_plugin_registers_the_architecture_and_case() -> None:
    from tabzoo.plugins import get_architecture, list_conformance_cases

    spec = get_architecture("orion-msp")
    assert {"in_context", "query_independence", "context_order_invariance", "linear_in_features"} <= spec.capabilities
    assert spec.pretrained == ("orion-msp-small",)
    model = spec.create({"preset": "tiny"})
    assert model.cfg.d == 8 and not model.cfg.query_sees_query
    assert spec.create({"preset": "tiny", "query_sees_query": True}).cfg.query_sees_query
    names = [getattr(c, "name", c) for c in list_conformance_cases()]
    assert "orion-msp" in names and "orion-msp-paper-mask" not in names


def test_checkpoint_config_round_trip(tmp_path) -> None:  # load_model(stem) rebuilds it through the registry
    assert_checkpoint_round_trip(make_case(), tmp_path, torch.randn(1, 10, 4), torch.tensor([[0.0, 1, 2, 0, 1, 2]]))


def test_a_fresh_process_finds_the_registered_case_by_name_and_plugin_without_factory() -> None:
    from dataclasses import replace

    from tabzoo.testing.checks.fresh import fresh_process_probe, locate

    case = replace(make_case(), factory=None)  # new closures at every make_case() call
    where = locate(case)
    assert where is not None and where["name"] == "orion-msp" and where.get("plugin")
    probe, how = fresh_process_probe(case, 0, 0)
    assert probe is not None, how
