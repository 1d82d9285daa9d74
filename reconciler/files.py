"""Writing files so that a reader, or an interrupted run, never sees half of one."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from reconciler.errors import NotARegularFile

_KINDS = (
    (stat.S_ISLNK, "a symbolic link", "the link itself, not the file it points to"),
    (stat.S_ISDIR, "a directory", "the directory"),
    (stat.S_ISCHR, "a device", "the device node"),
    (stat.S_ISBLK, "a device", "the device node"),
    (stat.S_ISFIFO, "a named pipe", "the pipe"),
    (stat.S_ISSOCK, "a socket", "the socket"),
)


def check_replaceable(path: Path) -> None:
    """Refuse `path` unless it is absent or a regular file.

    Every file reconciler writes goes to a temporary file renamed over `path`: over a
    symbolic link that replaces the link (its target never gets the content), over a device
    such as /dev/null it replaces the device node itself. Raises `NotARegularFile`; other
    problems (no permission, a missing directory) are left to the write, which says them.
    """
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    for is_kind, kind, replaced in _KINDS:
        if is_kind(mode):
            raise NotARegularFile(
                f"{path} is {kind}, not a regular file; refusing to replace it",
                hint=f"give the path of a regular file, or of one that does not exist yet "
                f"(the file is written beside it and renamed over it, which would replace "
                f"{replaced})",
            )


def write_atomically(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write `text` to a temporary file beside `path`, flush it to disk, then rename it over
    `path`. `mode` is set before any byte is written (0o600 for files holding references to
    secrets). Raises `NotARegularFile` for a path that is neither absent nor a regular file
    (see `check_replaceable`), else OSError; the temporary file never outlives a failure."""
    check_replaceable(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
