"""Generated README blocks: the text between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->``.

One implementation for every ``benchmarks/*_readme.py`` generator: find the blocks of a README,
re-render them from their result files, list the stale ones, and the generators' shared command line
(print / ``--write`` / ``--check``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

Render = Callable[[str], str]


def blocks_in(text: str) -> dict[str, str]:
    """name -> the text between ``<!-- results:name -->`` and ``<!-- /results:name -->`` (stripped)."""
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"<!-- results:([\w-]+) -->\n(.*?)\n<!-- /results:\1 -->",
                                                                text, flags=re.S)}


def write_blocks(text: str, names: Iterable[str], render: Render) -> str:
    """``text`` with each of its blocks named in ``names`` replaced by ``render(name)``."""
    known = set(names)
    for name in blocks_in(text):
        if name in known:
            text = re.sub(rf"(<!-- results:{name} -->\n).*?(\n<!-- /results:{name} -->)",
                          lambda m, n=name: m.group(1) + render(n) + m.group(2), text, flags=re.S)
    return text


def stale_blocks(text: str, names: Iterable[str], render: Render) -> list[str]:
    """The blocks of ``names`` missing from ``text`` or disagreeing with ``render``."""
    found = blocks_in(text)
    return [n for n in names if found.get(n) != render(n)]


def block_cli(argv: list[str] | None, readme: Path, names: Iterable[str], render: Render, doc: str | None,
              script: str) -> int:
    """Print the blocks; ``--write`` rewrites them in ``readme``; ``--check`` exits 1 on a stale one."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the blocks in the README")
    mode.add_argument("--check", action="store_true", help="exit 1 when a block is missing or stale")
    a, text, names = parser.parse_args(argv), readme.read_text(encoding="utf-8"), list(names)
    if a.write:
        readme.write_text(write_blocks(text, names, render), encoding="utf-8")
        return 0
    if a.check:
        bad = stale_blocks(text, names, render)
        for n in bad:
            print(f"{readme}: block {n} is missing or disagrees with its result file; run {script} --write",
                  file=sys.stderr)
        return 1 if bad else 0
    print("\n\n".join(f"<!-- results:{n} -->\n{render(n)}\n<!-- /results:{n} -->" for n in names))
    return 0
