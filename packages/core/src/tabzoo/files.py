"""Safe output files for every ``tabzoo`` command and API that writes (``tabzoo.cli``, ``tabzoo.batch``).

Two rules, in one place:

* :func:`check_output` refuses an output that already exists (unless ``--overwrite``) and an
  output that is one of the command's own inputs (always; compared by resolved path and by
  ``os.path.samefile``, so a symlink or a hard link is caught too).
* :func:`write_via` writes atomically: into a temporary file in the same folder, ``fsync``, then
  ``os.replace``. A full disk or a kill leaves the old file whole and no partial new one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from tabzoo.errors import TabzooInputError

__all__ = ["check_output", "same_file", "write_text", "write_via"]


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """True when ``a`` and ``b`` name the same file (same resolved path, or same inode)."""
    pa, pb = Path(a), Path(b)
    try:
        if pa.resolve() == pb.resolve():
            return True
    except (OSError, RuntimeError):  # a symlink loop: compare what exists below
        pass
    try:
        return os.path.samefile(pa, pb)
    except OSError:  # one of them does not exist
        return False


def check_output(
    path: str | os.PathLike[str],
    *,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    overwrite: bool = False,
    flag: str = "--out",
) -> Path:
    """Refuse to write ``path`` onto an input or, without ``overwrite``, onto an existing file.

    :param path: the output the command is about to write.
    :param inputs: the files the command reads (``None`` entries are skipped).
    :param overwrite: the user passed ``--overwrite``.
    :param flag: the option that named ``path``, for the message.
    :raises TabzooInputError: naming the file and the fix.
    """
    out = Path(path)
    for src in inputs:
        if src is not None and same_file(out, src):
            raise TabzooInputError(
                f"{flag} {out} is also an input of this command ({src}); writing there would destroy it. "
                f"Choose another {flag} file."
            )
    if out.is_dir():
        raise TabzooInputError(f"{flag} {out} is a folder; name a file inside it, e.g. {out / 'predictions.csv'}.")
    if out.exists() and not overwrite:
        raise TabzooInputError(
            f"{flag} {out} already exists; pass --overwrite to replace it, or choose another {flag} file."
        )
    return out


def write_via(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Run ``write(tmp)`` on a temporary file next to ``path``, fsync it, then rename it to ``path``.

    On any failure (``ENOSPC``, an exception in ``write``, Ctrl-C) the temporary file is removed and
    ``path`` keeps its old content. An ``OSError`` becomes a :class:`TabzooInputError` naming the
    file; anything else propagates unchanged.
    """
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp" + out.suffix, dir=out.parent)
    except OSError as exc:
        raise TabzooInputError(f"cannot write {out} ({exc.strerror or exc}); check the folder and its permissions.") from exc
    os.close(fd)
    tmp = Path(name)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a written file gets the usual mode
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TabzooInputError(
            f"writing {out} failed ({exc.strerror or exc}); free disk space or check permissions. "
            "Any old file there is unchanged."
        ) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(out.parent)
    return out


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, as :func:`write_via` does."""
    return write_via(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
