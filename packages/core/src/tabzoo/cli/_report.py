"""Report folders, Markdown tables and bar-chart PNGs shared by ``tabzoo demo`` and ``tabzoo bench``.

A report never overwrites another: an explicit ``--out`` that already holds files is refused, and
the default dated folder gets a ``-2``, ``-3``, ... suffix when the date is taken.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tabzoo.errors import TabzooInputError

__all__ = ["new_report_dir", "machine", "md_table", "bar_grid", "fmt"]


def new_report_dir(out: str | None, prefix: str, root: str | Path = ".") -> Path:
    """Create and return the folder a report is written to.

    :param out: the user's ``--out``; refused when it exists and is not empty.
    :param prefix: default folder name before the date, e.g. ``"tabzoo-demo"``.
    :param root: where the default folder is made.
    :raises TabzooInputError: ``out`` holds files (nothing is overwritten).
    """
    if out is not None:
        path = Path(out)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise TabzooInputError(
                f"--out {path} already exists and is not empty; a report never overwrites another. "
                "Pick a new folder, or leave --out out to get a new dated one."
            )
        path.mkdir(parents=True, exist_ok=True)
        return path
    day = _dt.date.today().isoformat()
    base = Path(root) / f"{prefix}-{day}"
    for i in range(1, 1000):
        path = base if i == 1 else base.with_name(f"{base.name}-{i}")
        try:
            path.mkdir(parents=True, exist_ok=False)
            return path
        except FileExistsError:
            continue
    raise TabzooInputError(f"{base}-2 .. -999 all exist; pass --out with a new folder.")


def machine() -> dict[str, Any]:
    """The machine a report was made on: platform, cores, torch and its threads."""
    import torch

    return {
        "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(), "cuda": torch.cuda.is_available(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
    }


def fmt(value: Any, digits: int = 4) -> str:
    """A table cell: floats to ``digits`` significant digits, None to ``-``."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value).replace("|", "\\|")


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def bar_grid(path: Path, panels: Sequence[dict[str, Any]], title: str, *, ncols: int = 3) -> Path | None:
    """One horizontal bar chart per panel, in a grid; written to ``path`` (PNG).

    :param panels: dicts ``{"title", "labels": [str], "values": [float], "highlight": [bool],
        "xlabel", "log": bool}``; highlighted bars (the plugin's own model) are drawn darker.
    :returns: ``path``, or ``None`` when matplotlib is missing or there is nothing to draw.
    """
    from tabzoo.cli._extras import is_missing

    if not panels or is_missing("matplotlib"):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    ncols = min(ncols, len(panels))
    nrows = -(-len(panels) // ncols)
    height = max(1.6, 0.32 * max(len(p["labels"]) for p in panels) + 1.0)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, height * nrows), squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        values = [float("nan") if v is None else float(v) for v in panel["values"]]
        colors = ["#1f4e79" if h else "#9bb7d4" for h in panel.get("highlight", [False] * len(values))]
        ax.barh(range(len(values)), values, color=colors)
        ax.set_yticks(range(len(values)), [str(label)[:34] for label in panel["labels"]], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(str(panel["title"])[:60], fontsize=9)
        ax.set_xlabel(panel.get("xlabel", ""), fontsize=8)
        if panel.get("log") and all(v > 0 for v in values if v == v):
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        for i, v in enumerate(values):
            if v == v:
                ax.text(v, i, f" {v:.3g}", va="center", fontsize=7)
        ax.tick_params(axis="x", labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    from tabzoo.files import write_via

    write_via(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)
    return path
