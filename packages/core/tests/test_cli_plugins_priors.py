"""``tabzoo plugins`` names the priors a plugin registers, not just "ok"."""

from tabzoo.cli.plugins_cmd import _status


def _item(**over):
    item = {"skipped": None, "loaded": True, "error": None, "failures": [], "architectures": [], "priors": []}
    item.update(over)
    return item


def test_prior_names_and_kinds_are_listed():
    status = _status(_item(priors=[{"name": "scm", "kind": "episodes"}, {"name": "rdb", "kind": "relational"}]))
    assert "prior scm (episodes)" in status and "prior rdb (relational)" in status


def test_capabilities_come_first_and_an_empty_plugin_is_ok():
    item = _item(architectures=[{"name": "m", "kind": "in-context", "capabilities": ["b", "a"]}],
                 priors=[{"name": "p", "kind": "episodes"}])
    assert _status(item) == "a, b, prior p (episodes)"
    assert _status(_item()) == "ok"
