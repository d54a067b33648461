"""Issue 24 items 5 and 8: ``tabzoo --help``/``--version`` import no plugin and no torch (plugin
commands load only when they run); an unexpected error is one line, its traceback only with --debug."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
from tabzoo import cli

PROBE = """
import sys
from tabzoo.cli import main
try:
    main([{arg!r}])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m == "torch" or m.startswith("tabzoo_"))
print("HEAVY", heavy)
"""


@pytest.mark.parametrize("arg", ["--version", "--help"])
def test_help_and_version_import_no_plugin_and_no_torch(arg: str) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE.format(arg=arg)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout, out.stdout


def test_version_alone_builds_no_parser(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "build_parser", lambda argv=None: pytest.fail("--version built the parser"))
    assert cli.main(["--version"]) == 0
    from tabzoo import __version__

    assert capsys.readouterr().out == f"tabzoo-core {__version__}\n"


def test_the_subcommand_is_found_after_options() -> None:
    assert cli._command_of(["-v", "--debug", "ramba", "--steps", "3"]) == "ramba"
    assert cli._command_of(["--help"]) is None


def _boom(args: argparse.Namespace) -> int:
    raise ValueError("an internal slip")


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = cli.build_parser

    def patched(argv: object = None) -> argparse.ArgumentParser:
        parser = real(argv)  # type: ignore[arg-type]
        parser._subparsers._group_actions[0].choices["plugins"].set_defaults(func=_boom)  # type: ignore[union-attr]
        return parser

    monkeypatch.setattr(cli, "build_parser", patched)
    assert cli.main(["plugins"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ValueError: an internal slip" in err and "--debug" in err
    with pytest.raises(ValueError, match="internal slip"):
        cli.main(["--debug", "plugins"])


WARNS = """
import sys, warnings
from tabzoo import cli
real = cli.build_parser

def warn(args):
    warnings.warn("the context was subsampled to 1,024 rows;\\n  pass max_context to keep more", UserWarning)
    return 0

def patched(argv=None):
    parser = real(argv)
    parser._subparsers._group_actions[0].choices["plugins"].set_defaults(func=warn)
    return parser

cli.build_parser = patched
sys.exit(cli.main(sys.argv[1:]))
"""


def test_a_warning_is_one_line_without_its_source_line_and_debug_keeps_pythons() -> None:
    """Issue 24 item 8: a user sees ``tabzoo: warning: <message> (<category>)``, not a file, line
    number and source line of tabzoo's internals; ``--debug`` shows Python's own format."""
    run = [sys.executable, "-W", "always", "-c", WARNS]
    err = subprocess.run([*run, "plugins"], capture_output=True, text=True, timeout=120).stderr
    assert err == ("tabzoo: warning: the context was subsampled to 1,024 rows; pass max_context to keep more "
                   "(UserWarning)\n"), err
    err = subprocess.run([*run, "--debug", "plugins"], capture_output=True, text=True, timeout=120).stderr
    assert err.startswith("<string>:7: UserWarning: the context was subsampled"), err


def test_a_plugin_command_that_is_not_installed_names_the_install_command(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "_plugin_commands", lambda sub, wanted: None)  # as without tabzoo-ramba
    monkeypatch.setattr(cli, "_installed", lambda dist: False)
    assert cli.main(["ramba", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "tabzoo-ramba, which is not installed" in err and "uv build --package tabzoo-ramba" in err
    assert "invalid choice" not in err


def test_an_installed_plugin_command_that_did_not_load_says_where_to_look(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "_plugin_commands", lambda sub, wanted: None)  # registered nothing
    monkeypatch.setattr(cli, "_installed", lambda dist: True)
    assert cli.main(["ramba", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "installed but did not load" in err and "tabzoo plugins" in err


def test_help_lists_installed_plugin_commands_without_loading_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_installed", lambda dist: True)
    monkeypatch.setattr(cli, "_plugin_commands", lambda sub, wanted: pytest.fail("help loaded a plugin command"))
    assert "from tabzoo-ramba" in cli.build_parser(["--help"]).format_help()


COMMAND_PLUGIN = """
import argparse
from tabzoo.plugins import ArchitectureSpec, CommandSpec, ModelPlugin

def add_parser(sub):
    p = sub.add_parser("toycmd", help="a toy command")
    p.add_argument("--n", type=int, default=1)
    p.set_defaults(func=lambda args: 40 + args.n)

plugin = ModelPlugin(ArchitectureSpec(name="toy_cmd_arch", build=lambda c: None, kind="other"),
                     commands=[CommandSpec("toycmd", add_parser, help="a toy command")])
"""


def test_a_plugin_command_is_registered_through_the_hook(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    from _fake_dists import make_dist
    from tabzoo.plugins import reset_registry

    root = Path(str(tmp_path))
    make_dist(root, "tz-cmd", "tzcmd", "tz_cmd_plugin", COMMAND_PLUGIN)
    info = next(root.glob("tz_cmd*.dist-info"))
    (info / "entry_points.txt").write_text("[tabzoo]\ntzcmd = tz_cmd_plugin:plugin\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tzcmd")
    reset_registry()
    try:
        assert cli.main(["toycmd", "--n", "2"]) == 42
    finally:
        reset_registry()
