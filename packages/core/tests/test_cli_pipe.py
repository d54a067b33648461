"""The CLI survives a reader that closes the pipe early (``tabzoo plugins --json | head -1``)."""

import subprocess
import sys


def test_piping_into_a_closed_reader_is_not_a_crash():
    proc = subprocess.run(
        f"{sys.executable} -m tabzoo.cli plugins --json | head -c 1",
        shell=True, capture_output=True, text=True, timeout=120,
        executable="/bin/bash",
    )
    assert proc.stdout == "{" or proc.stdout == "["
    assert "BrokenPipeError" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
