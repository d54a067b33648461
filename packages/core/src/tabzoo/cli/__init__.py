"""The ``tabzoo`` command line. Each subcommand lives in its own module and imports lazily."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from importlib import import_module

from tabzoo.errors import TabzooError


def command_modules() -> list[str]:
    """Every ``tabzoo.cli.*_cmd`` module, sorted. Each defines ``add_parser(subparsers)``, which
    sets ``func`` (args -> exit code) on its parser and imports heavy code only inside ``func``."""
    import pkgutil

    import tabzoo.cli as pkg

    return sorted(
        f"{pkg.__name__}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if m.name.endswith("_cmd")
    )


def build_parser() -> argparse.ArgumentParser:
    from tabzoo import __version__

    parser = argparse.ArgumentParser(prog="tabzoo", description="Deep learning on tables.")
    parser.add_argument("--version", action="version", version=f"tabzoo-core {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for path in command_modules():
        import_module(path).add_parser(sub)
    _plugin_commands(sub)
    return parser


def _plugin_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Subcommands from plugins: entry points in the ``tabzoo.cli`` group name modules with
    ``add_parser(subparsers)`` (e.g. ``tabzoo ramba``). A broken one is logged and skipped."""
    from importlib.metadata import entry_points

    for ep in sorted(entry_points(group="tabzoo.cli"), key=lambda e: e.name):
        if ep.name in sub.choices:
            logging.getLogger(__name__).warning("plugin command %r clashes with a core command; skipped", ep.name)
            continue
        try:
            ep.load().add_parser(sub)
        except Exception as exc:  # a plugin must not break the core CLI
            logging.getLogger(__name__).warning("plugin command %r could not load: %s", ep.name, exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tabzoo`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except TabzooError as exc:
        print(f"tabzoo: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (``tabzoo plugins | head``): not an error of ours. Point stdout at
        # devnull so the interpreter's final flush does not raise a second time.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
