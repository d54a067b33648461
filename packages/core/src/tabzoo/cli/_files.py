"""Safe output files for the ``tabzoo`` commands: :mod:`tabzoo.files`, re-exported here (the CLI's
name for it; :mod:`tabzoo.batch` sits below the CLI and imports :mod:`tabzoo.files` directly)."""

from __future__ import annotations

from tabzoo.files import check_output, os, same_file, write_text, write_via

__all__ = ["check_output", "os", "same_file", "write_text", "write_via"]
