"""Standard output that fails with a message, not a traceback.

Output can fail for reasons outside reconciler: the reader of a pipe left (`reconciler plan |
head`, EPIPE), the disk is full (`reconciler schema > /dev/full`), the descriptor was closed
(`reconciler schema >&-`). While a command runs, `sys.stdout` is a `GuardedOutput`: the first
failed write raises `OutputError` (a `ReconcilerError`: one line on stderr, exit 1), and from
then on whatever is written is dropped, so that code that must finish its work (an apply that
has started writing to the platform) can go on, and the exit still reports the failure.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, TextIO

from reconciler.errors import OutputClosedError, OutputError


class GuardedOutput:
    """A text stream in front of the real standard output (None when the process started with
    it closed); see the module's docstring."""

    encoding = "utf-8"  # when there is no stream; the stream's own otherwise (see __getattr__)
    errors = "strict"

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.failure: OutputError | None = None
        self.failure_accepted = False
        """Set by a command for which output failing is no error (see `accept_output_failure`)."""

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click probes for a binary stream by writing b""
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.failure is not None or not text:
            return len(text)
        if self.stream is None:
            raise self._failed(None)
        try:
            return self.stream.write(text)
        except (OSError, ValueError) as error:  # ValueError: the stream itself was closed
            raise self._failed(error) from None

    def flush(self) -> None:
        if self.failure is not None or self.stream is None:
            return
        try:
            self.stream.flush()
        except (OSError, ValueError) as error:
            raise self._failed(error) from None

    def isatty(self) -> bool:
        try:
            return self.stream is not None and self.stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        if self.stream is None:
            raise AttributeError(name)
        return getattr(self.stream, name)

    def _failed(self, error: OSError | ValueError | None) -> OutputError:
        self.failure = _describe(error)
        if self.stream is not None:
            discard_pending(self.stream)
        return self.failure


def discard_pending(stream: TextIO) -> None:
    """Point the stream's descriptor at /dev/null: what it still buffers is flushed there at
    exit, instead of failing again with an "Exception ignored" report."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError, AttributeError):  # not a real file (captured in tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)


def _describe(error: OSError | ValueError | None) -> OutputError:
    if isinstance(error, OSError) and error.errno == errno.EPIPE:
        return OutputClosedError(
            "cannot write to standard output: its reader closed it (broken pipe); "
            "the rest of the output was dropped",
            hint="read the whole output, or redirect it to a file",
        )
    if error is None or isinstance(error, ValueError):
        return OutputError(
            "cannot write to standard output: it is closed",
            hint="run the command with its output redirected to a file (or /dev/null)",
        )
    return OutputError(
        f"cannot write to standard output: {error.strerror or error}; "
        "the rest of the output was dropped",
        hint="check where the output goes (a full disk?), or redirect it elsewhere",
    )


def accept_output_failure() -> None:
    """Output failing now is expected (a server whose reader left before it stopped): the exit
    does not report it."""
    if isinstance(sys.stdout, GuardedOutput):
        sys.stdout.failure_accepted = True


def guard_stdout() -> GuardedOutput:
    """Put a `GuardedOutput` in front of `sys.stdout` (restore with `release_stdout`)."""
    guard = GuardedOutput(sys.stdout)
    sys.stdout = guard  # type: ignore[assignment]
    return guard


def release_stdout(guard: GuardedOutput) -> None:
    if sys.stdout is guard:
        sys.stdout = guard.stream  # type: ignore[assignment]
