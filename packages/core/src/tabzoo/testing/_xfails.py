"""Reading expected-failure files: ``{case: {check: reason}}`` as JSON or TOML (torch-free)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tabzoo.errors import TabzooInputError


def load_xfails(path: str | Path | None) -> dict[str, dict[str, str]]:
    """Parse an xfails file; every entry needs a non-empty reason.

    :raises TabzooInputError: when the file is missing, unparsable or malformed.
    """
    if path is None:
        return {}
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TabzooInputError(f"cannot read the xfails file {p}: {exc}; pass an existing JSON or TOML file.") from exc
    try:
        data = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise TabzooInputError(f"the xfails file {p} is not valid {'TOML' if p.suffix == '.toml' else 'JSON'}: {exc}.") from exc
    from tabzoo.testing.case import is_reason, links_test

    if not isinstance(data, dict) or not all(
        isinstance(v, dict) and all(is_reason(r) and links_test(r) for r in v.values()) for v in data.values()
    ):
        raise TabzooInputError(
            f"the xfails file {p} must map case -> check -> reason (at least one sentence saying why, naming the test "
            'that shows the failure), e.g. {"tabflex": {"query_independence": "Query rows attend to each other by '
            'design, shown by tests/test_masks.py::test_query_rows_read_each_other."}}.'
        )
    return {str(c): {str(k): str(r) for k, r in v.items()} for c, v in data.items()}
