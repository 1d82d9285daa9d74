"""The one boundary through which every byte leaving the process goes: standard output,
standard error, the files written for the user (plan files, exported manifests), and the
bodies of the notifications posted to webhooks (`outgoing_json`, reconciler/report/notify).

Nothing is redacted here by content: secret values are `reconciler.sensitive.Secret`s, which
no renderer can print, and a redaction that depends on what a secret holds would tell a pull
request's manifest which of its guesses is the secret (see `reconciler.sensitive`). A plan is
checked for write-only values in plain (`reconciler.plan.secret_guard`) before any rendering of
it is written. Nothing else in reconciler writes to the streams: ruff's banned-api rule (TID251,
see pyproject.toml) refuses `print`, `click.echo`, `sys.stdout`, `sys.stderr` and rich consoles
outside this module and the emulator.

Standard output that fails does so with a message, not a traceback.

Output can fail for reasons outside reconciler: the reader of a pipe left (`reconciler plan |
head`, EPIPE), the disk is full (`reconciler schema > /dev/full`), the descriptor was closed
(`reconciler schema >&-`). While a command runs, `sys.stdout` is a `GuardedOutput`: the first
failed write raises `OutputError` (a `ReconcilerError`: one line on stderr, exit 1), and from
then on whatever is written is dropped, so that code that must finish its work (an apply that
has started writing to the platform) can go on, and the exit still reports the failure.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from reconciler.errors import OutputClosedError, OutputError, PlainSecretError, PlanFileError
from reconciler.files import write_atomically
from reconciler.plan.changes import Plan
from reconciler.plan.secret_guard import check_no_plain_secrets

if TYPE_CHECKING:
    from rich.console import Console


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
    """Put a `GuardedOutput` in front of `sys.stdout` (restore it with `release_stdout`).
    Whatever writes to it while a command runs (click, rich) passes the boundary."""
    guard = GuardedOutput(sys.stdout)
    sys.stdout = guard
    return guard


def release_stdout(guard: GuardedOutput) -> None:
    if sys.stdout is guard:
        sys.stdout = guard.stream


# --- what the rest of reconciler writes through ----------------------------------------------


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Write `text` (and a line break) to standard output, or standard error with `err`."""
    click.echo(text, file=sys.stderr if err else sys.stdout, nl=nl)


def echo_plan(plan: Plan, text: str) -> None:
    """Write a rendering of `plan` to standard output, once the plan is checked to hold no
    write-only value in plain (`PlainSecretError` otherwise)."""
    check_no_plain_secrets(plan)
    echo(text, nl=False)


def ask(question: str) -> str:
    """The answer typed to `question` (the question goes to standard output)."""
    return str(click.prompt(question, default="", show_default=False, prompt_suffix=" "))


_colour = {"off": False}


def turn_colour_off() -> None:
    """`--no-color`: no colour, bold or italics in anything this command prints."""
    _colour["off"] = True


def reset_colour() -> None:
    """Colour as the environment says (each command starts so)."""
    _colour["off"] = False


def colour_allowed() -> bool:
    """Whether styling is allowed at all: not with --no-color, nor with NO_COLOR set (any
    value). Where it is, it is still used only on a terminal."""
    return not _colour["off"] and "NO_COLOR" not in os.environ


def console(*, err: bool = False) -> Console:
    """A rich console writing to standard output (or error) through this boundary; with
    colour off, it writes no style at all (rich alone keeps bold and italics under NO_COLOR)."""
    from rich.console import Console

    stream = sys.stderr if err else sys.stdout
    if colour_allowed():
        return Console(file=stream)
    return Console(file=stream, color_system=None)


def stdout_is_terminal() -> bool:
    """Whether standard output is a terminal (progress bars, colour, tables)."""
    return is_terminal(sys.stdout)


def stderr_is_terminal() -> bool:
    """Whether standard error is a terminal (progress while reading live state)."""
    return is_terminal(sys.stderr)


def is_terminal(stream: TextIO | None) -> bool:
    """Whether `stream` is a terminal; False for none, a closed one, or one without isatty."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        return False


def discard_stdout() -> None:
    """Point standard output at /dev/null, so the flush at exit does not fail again."""
    discard_pending(sys.stdout)


def write_file(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write a file for the user atomically (`reconciler.files.write_atomically`); OSError as
    the write raises it. `text` is a str: a `Secret` cannot have been formatted into it."""
    write_atomically(path, text, mode=mode)


def write_plan_file(path: Path, plan: Plan, text: str) -> None:
    """Save a plan file (mode 0600): the plan checked, then `text` written; every problem is a
    `PlanFileError`."""
    try:
        check_no_plain_secrets(plan)
        write_file(path, text, mode=0o600)
    except (PlainSecretError, OutputError) as error:
        raise PlanFileError(f"refusing to save the plan to {path}: {error.message}") from None
    except OSError as error:
        raise PlanFileError(f"cannot write plan file {path}: {error.strerror}") from None


def outgoing_json(payload: Mapping[str, Any]) -> bytes:
    """The UTF-8 JSON of a body posted out of the process (a notification). No secret value
    can be in it: a `Secret` refuses to be encoded, which is an `OutputError` here."""
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    except TypeError:
        raise OutputError("refusing to post a body that would hold a secret value") from None
    return text.encode("utf-8")
