"""Writing files so that a reader, or an interrupted run, never sees half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write `text` to a temporary file beside `path`, flush it to disk, then rename it over
    `path`. `mode` is set before any byte is written (0o600 for files holding references to
    secrets). Raises OSError; the temporary file never outlives a failure."""
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
