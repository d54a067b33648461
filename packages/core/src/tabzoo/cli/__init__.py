"""The ``tabzoo`` command line. Each subcommand lives in its own module and imports lazily."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from importlib import import_module
from typing import Any

from tabzoo.errors import TabzooError

#: commands that plugins of this repository add, and the distribution that adds each
PLUGIN_COMMANDS = {"ramba": "tabzoo-ramba"}


def command_modules() -> list[str]:
    """Every ``tabzoo.cli.*_cmd`` module, sorted. Each defines ``add_parser(subparsers)``, which
    sets ``func`` (args -> exit code) on its parser and imports heavy code only inside ``func``."""
    import pkgutil

    import tabzoo.cli as pkg

    return sorted(
        f"{pkg.__name__}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if m.name.endswith("_cmd")
    )


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``tabzoo`` parser. Plugins' subcommands load only when ``argv`` runs one: ``tabzoo --help``
    and ``--version`` import no plugin (the help names the plugin commands of installed
    distributions of this repository, from their metadata; ``tabzoo plugins`` lists every one)."""
    from tabzoo import __version__

    parser = argparse.ArgumentParser(
        prog="tabzoo", description="Deep learning on tables.",
        epilog="Plugins add subcommands too (they load when run); `tabzoo plugins` lists them.")
    parser.add_argument("--version", action="version", version=f"tabzoo-core {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for path in command_modules():
        import_module(path).add_parser(sub)
    wanted = _command_of(sys.argv[1:] if argv is None else argv)
    if wanted is not None and wanted not in sub.choices:
        _plugin_commands(sub, wanted)
    _list_known_plugin_commands(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first argument that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def _list_known_plugin_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """List the commands of this repository's installed plugins by name (from the distribution's
    metadata: nothing is imported), so ``tabzoo --help`` shows them."""
    for name, dist in sorted(PLUGIN_COMMANDS.items()):
        if name not in sub.choices and _installed(dist):
            sub.add_parser(name, help=f"from {dist} (tabzoo {name} --help)", add_help=False)


def _installed(dist: str) -> bool:
    """Whether the distribution ``dist`` is installed (its metadata only; nothing is imported)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution(dist)
    except PackageNotFoundError:
        return False
    return True


def _plugin_commands(sub: argparse._SubParsersAction, wanted: str) -> None:  # type: ignore[type-arg]
    """Add the plugin subcommand ``wanted``: plugins register :class:`~tabzoo.plugins.CommandSpec`
    through the ``tabzoo_register_commands`` hook (e.g. ``tabzoo ramba``). Only ``wanted``'s parser
    is imported; a broken one is one warning line and the core commands still work."""
    from tabzoo.errors import AmbiguousPluginError
    from tabzoo.plugins import get_registry

    log = logging.getLogger(__name__)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # `tabzoo plugins` reports plugins that failed to load
        registry = get_registry()
    try:
        registry.check_name("commands", wanted)
    except AmbiguousPluginError as exc:
        log.warning("%s", exc)
        return
    entry = registry.items["commands"].get(wanted)
    if entry is None:
        return
    dist = entry.record.distribution
    try:
        entry.obj.load()(sub)
    except BaseException as exc:  # noqa: BLE001 - a plugin must not break the core CLI
        if isinstance(exc, KeyboardInterrupt):
            raise
        log.warning("plugin command %r of %s could not load (%s: %s); reinstall %s.", wanted, dist,
                    type(exc).__name__, exc, dist)
        if wanted not in sub.choices:
            sub.add_parser(wanted, help=f"from {dist}: broken", add_help=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tabzoo`` console script; returns the exit code."""
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        from tabzoo import __version__

        print(f"tabzoo-core {__version__}")  # what argparse's version action prints, without building the parser
        return 0
    parser = build_parser(argv)
    wanted = _command_of(sys.argv[1:] if argv is None else argv)
    sub = parser._subparsers._group_actions[0] if parser._subparsers else None  # type: ignore[union-attr]
    choices: dict[str, Any] = dict(sub.choices or {}) if sub is not None else {}  # the subcommands' parsers
    runnable = wanted in choices and choices[wanted].get_default("func") is not None  # not a listing only
    if wanted in PLUGIN_COMMANDS and not runnable:
        dist = PLUGIN_COMMANDS[wanted]
        if _installed(dist):
            print(f"tabzoo: error: `tabzoo {wanted}` comes with {dist}, which is installed but did not load; "
                  f"`tabzoo plugins` says why (TABZOO_DISABLE_PLUGINS / TABZOO_LOAD_PLUGINS, or an error).",
                  file=sys.stderr)
            return 2
        from tabzoo.plugins.records import install_command

        print(f"tabzoo: error: `tabzoo {wanted}` comes with {dist}, which is not installed. From a clone of "
              f"this repository: {install_command(dist)} (README, 'Installing only one model').", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if not args.debug:  # a warning is one line for users: no file, line number nor source line
        warnings.formatwarning = _one_line_warning
    try:
        return int(args.func(args) or 0)
    except TabzooError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"tabzoo: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (``tabzoo plugins | head``): not an error of ours. Point stdout at
        # devnull so the interpreter's final flush does not raise a second time.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - the last guard: one clear line, the traceback with --debug
        if args.debug:
            raise
        print(f"tabzoo: error: {type(exc).__name__}: {exc}\nThis is a bug in tabzoo or a plugin, not in your "
              f"input: rerun with --debug for the traceback and report it with that output.", file=sys.stderr)
        return 1
    finally:
        warnings.formatwarning = _FORMAT_WARNING


_FORMAT_WARNING = warnings.formatwarning


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      line: str | None = None) -> str:
    """``tabzoo: warning: <message> (<category>)``: what a user sees of a warning (``--debug``: Python's own)."""
    text = " ".join(str(message).split())
    return f"tabzoo: warning: {text} ({category.__name__})\n"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
