"""Issue 24 (audit of the Why list): a plugin command's missing path is one ``tabzoo`` error line
(exit 2) too. ``tabzoo ramba missing.sqlite`` ended in the CLI's last guard ("This is a bug in
tabzoo or a plugin", exit 1): the core's SQLite reader raised a bare ``FileNotFoundError``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tabzoo_ramba", reason="needs tabzoo-ramba (the integration session installs it)")
from tabzoo.cli import main  # noqa: E402
from tabzoo.plugins import reset_registry  # noqa: E402


@pytest.mark.parametrize("name", ["absent.sqlite", "folder"])
def test_ramba_refuses_a_database_that_is_missing_or_a_folder(name: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("TABZOO_LOAD_PLUGINS", "TABZOO_DISABLE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    reset_registry()
    (tmp_path / "folder").mkdir()
    path = tmp_path / name
    code = main(["ramba", str(path), "--task", "delayed", "--val-start", "2013-01-01", "--test-start", "2013-02-01"])
    err = capsys.readouterr().err
    reset_registry()
    assert code == 2, err
    assert "This is a bug" not in err and "Traceback" not in err, err
    assert str(path) in err and "check the path" in err, err
    assert not (tmp_path / "absent.sqlite").exists()  # never created by opening it
