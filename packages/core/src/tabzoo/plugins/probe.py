"""The child process of plugin discovery (:mod:`tabzoo.plugins.discovery`).

``python -m tabzoo.plugins.probe '{"plugin": "reason", ...}'`` loads every entry point of the
``tabzoo`` group except the named ones (recorded as import failures with their reason), printing
``<MARK>start\\t<name>`` before and ``<MARK>done\\t<name>`` after each, and finally
``<MARK>listing\\t<json>`` with :func:`~tabzoo.plugins.discovery.describe` of the registry.
"""

from __future__ import annotations

import json
import sys
import warnings


def main(argv: list[str]) -> int:
    from tabzoo.plugins.discovery import MARK, describe
    from tabzoo.plugins.manager import PluginRegistry

    excluded = json.loads(argv[0]) if argv else {}
    out = sys.stdout

    def progress(tag: str, name: str) -> None:
        out.write(f"{MARK}{tag}\t{name}\n")
        out.flush()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # failures are in the listing
        reg = PluginRegistry()
        reg.load_entry_points(excluded=excluded, progress=progress)
        out.write(f"{MARK}listing\t{json.dumps(describe(reg))}\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
