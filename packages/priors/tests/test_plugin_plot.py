"""Plugin registration and the PNG grid."""

import pytest
from tabzoo_priors import SCMPrior, plot_datasets

NAMES = {"scm", "tree_scm", "icl", "teacher", "mix", "multitab_bench", "mmoe", "npt_lookup", "relational"}


def test_hook_registers_every_prior():
    pytest.importorskip("tabzoo.plugins", reason="needs the core's tabzoo.plugins")
    from tabzoo_priors import plugin

    specs = []
    plugin.tabzoo_register_priors(specs.append)
    assert {s.name for s in specs} == NAMES
    kinds = {s.name: s.kind for s in specs}
    assert kinds["scm"] == "episodes" and kinds["relational"] == "relational"
    assert kinds["npt_lookup"] == "lookup" and kinds["multitab_bench"] == "multitask"
    prior = {s.name: s for s in specs}["scm"].create(n_rows=(32, 32))
    assert isinstance(prior, SCMPrior) and prior.config.n_rows == (32, 32)


def test_get_prior_through_entry_points():
    plugins = pytest.importorskip("tabzoo.plugins", reason="needs the core's tabzoo.plugins")
    if not hasattr(plugins, "get_prior"):
        pytest.skip("core plugins has no get_prior yet")
    prior = plugins.get_prior("tree_scm", n_rows=(32, 32))
    assert prior.sample_raw(2, seed=0).x.shape[:2] == (2, 32)


def test_plot_datasets_writes_png(tmp_path):
    pytest.importorskip("matplotlib", reason="plot extra not installed")
    r = SCMPrior(n_rows=(200, 200), n_features=(2, 8), task="mixed").sample_raw(6, seed=0)
    out = plot_datasets(r, tmp_path / "grid.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_plot_without_matplotlib_names_the_extra(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    from tabzoo.errors import TabzooInputError

    r = SCMPrior(n_rows=(32, 32)).sample_raw(1, seed=0)
    with pytest.raises(TabzooInputError, match=r"tabzoo-priors\[plot\]"):
        plot_datasets(r, "/tmp/never.png")
