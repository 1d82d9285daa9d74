"""`reconciler` as a real process: stdin on a pseudo-terminal (so it asks, as for a person),
output read as it comes, signals sent at an observed moment.

Tests wait for a line of output, never for a fixed time, so a loaded machine only makes them
slower: every wait has a generous deadline and fails with everything the process printed.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reconciler.emulator.app import EmulatorConfig
from tests.fixtures.cli import ISOLATED_ENV, CliResult
from tests.fixtures.emulator import API_KEY

DEADLINE = 120.0  # seconds; a healthy run takes a fraction of that even under load


def _sigint_default() -> None:
    # as a terminal's foreground job has it, whatever the suite inherited: a suite started in
    # the background (`bash .ci/run &`, a runner's detached job) has SIGINT ignored, and its
    # children would inherit that and never see the Ctrl-C the tests send
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Collector:
    """Reads one stream to its end in a thread; `wait_for` blocks until a text shows up."""

    def __init__(self, stream: object) -> None:
        self._stream = stream
        self._text = ""
        self._ended = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        read = self._stream.read1  # type: ignore[attr-defined]
        while chunk := read(65536):
            with self._changed:
                self._text += chunk.decode("utf-8", "replace")
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    @property
    def text(self) -> str:
        with self._changed:
            return self._text

    def wait_for(self, wanted: str, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: wanted in self._text or self._ended, timeout)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class CliProcess:
    """`python -m reconciler ARGS`; with `terminal_stdin` its stdin is a pseudo-terminal."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        terminal_stdin: bool = False,
        cwd: str | None = None,
        sigint_ignored: bool = False,
    ) -> None:
        """`sigint_ignored`: started as a shell starts a background job (`command &`), with
        SIGINT ignored; SIGTERM must still stop it with the summary."""
        isolated = (*ISOLATED_ENV, "RECONCILER_BASE_URL", "RECONCILER_API_KEY")
        environment = {k: v for k, v in os.environ.items() if k not in isolated}
        environment["NO_COLOR"] = "1"
        for name, value in (env or {}).items():
            if value is None:
                environment.pop(name, None)
            else:
                environment[name] = value
        self._terminal: int | None = None
        stdin: int = subprocess.DEVNULL
        if terminal_stdin:
            self._terminal, stdin = pty.openpty()
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "reconciler", *args],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            cwd=cwd,
            preexec_fn=_sigint_ignored if sigint_ignored else _sigint_default,
        )
        if terminal_stdin:
            os.close(stdin)
        self._stdout = _Collector(self.popen.stdout)
        self._stderr = _Collector(self.popen.stderr)

    def __enter__(self) -> CliProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def wait_for_stdout(self, wanted: str, timeout: float = DEADLINE) -> None:
        self._wait(self._stdout, wanted, timeout)

    def wait_for_stderr(self, wanted: str, timeout: float = DEADLINE) -> None:
        self._wait(self._stderr, wanted, timeout)

    def _wait(self, collector: _Collector, wanted: str, timeout: float) -> None:
        if not collector.wait_for(wanted, timeout) or wanted not in collector.text:
            self.popen.kill()
            raise AssertionError(
                f"{wanted!r} never appeared; stdout:\n{self._stdout.text}\n"
                f"stderr:\n{self._stderr.text}"
            )

    def type(self, text: str) -> None:
        """Type `text` on the terminal (as a person would, Enter as a newline)."""
        assert self._terminal is not None, "started without terminal_stdin"
        os.write(self._terminal, text.encode())

    def send_signal(self, number: signal.Signals) -> None:
        self.popen.send_signal(number)

    def finish(self, timeout: float = DEADLINE) -> CliResult:
        """Wait for the exit (failing, after killing it, past `timeout`)."""
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(
                f"still running after {timeout}s; stdout:\n{self._stdout.text}\n"
                f"stderr:\n{self._stderr.text}"
            ) from None
        finally:
            if self._terminal is not None:
                os.close(self._terminal)
                self._terminal = None
        self._stdout.join(DEADLINE)
        self._stderr.join(DEADLINE)
        return CliResult(code, self._stdout.text, self._stderr.text)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        if self._terminal is not None:
            os.close(self._terminal)
            self._terminal = None


def run(args: Sequence[str], *, env: Mapping[str, str | None] | None = None) -> CliResult:
    """Run `reconciler ARGS` to its end (stdin empty, not a terminal)."""
    process = CliProcess(args, env=env)
    try:
        return process.finish()
    finally:
        process.kill()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    """Poll `condition` (a cheap in-process check) until true; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never happened")
        time.sleep(0.01)


def holding_emulator(start_emulator: Any, operation: str, hold_ms: int) -> Any:
    """A fresh emulator that holds every `operation` call `hold_ms` before answering, and a
    function that waits until the first one has arrived (it is then in flight)."""
    server = start_emulator(EmulatorConfig(dev_key=API_KEY))
    server.set_faults([{"operation": operation, "latencyMs": hold_ms}])
    rule = server.emulator.faults.rules[0]
    server.wait_for_held_call = lambda: wait_until(
        lambda: rule.fired >= 1, f"the emulator receiving {operation}"
    )
    return server
