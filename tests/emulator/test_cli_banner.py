"""What `reconciler emulator` prints at start: the key only when it made the key up, and a clear
message (no "internal error") when nobody reads its output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from reconciler.cli import emulator as emulator_cli
from reconciler.cli import main


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Print the banner, then return at once instead of serving."""

    class NoServer:
        def __init__(self, _config: Any) -> None:
            pass

        def run(self, sockets: Any) -> None:
            return None

    monkeypatch.setattr(emulator_cli, "_server_class", lambda: NoServer)


def _banner(env: dict[str, str | None]) -> str:
    result = CliRunner().invoke(main, ["emulator", "--port", "0"], env=env)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.usefixtures("no_server")
def test_a_generated_key_is_printed_so_it_can_be_used() -> None:
    output = _banner({"RECONCILER_API_KEY": None})
    key_line = next(line for line in output.splitlines() if line.startswith("API key: "))
    assert key_line.removeprefix("API key: ").startswith("dev_")


@pytest.mark.usefixtures("no_server")
def test_a_key_from_the_environment_is_named_not_printed() -> None:
    output = _banner({"RECONCILER_API_KEY": "my-real-platform-key"})
    assert "my-real-platform-key" not in output
    assert "API key: the value of RECONCILER_API_KEY" in output.splitlines()
    assert output.splitlines()[-1] == "Emulator stopped."


@pytest.mark.usefixtures("no_server")
@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
def test_listening_beyond_the_loopback_says_what_it_exposes(host: str, warned: bool) -> None:
    """Beyond the loopback, whoever reaches the address can call the API with the key: the
    emulator says so at start (its admin calls still need a loopback Host)."""
    result = CliRunner().invoke(
        main, ["emulator", "--host", host, "--port", "0"], env={"RECONCILER_API_KEY": "k"}
    )
    assert result.exit_code == 0, result.output
    assert ("Warning: listening on 0.0.0.0, not on this machine's loopback" in result.output) is (
        warned
    )


def test_a_closed_stdout_stops_with_a_clear_message() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read the banner
    try:
        finished = subprocess.run(
            [sys.executable, "-m", "reconciler", "emulator", "--port", "0"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=30,
            env={**os.environ, "RECONCILER_API_KEY": "k"},
        )
    finally:
        os.close(write_end)
    assert finished.returncode == 1
    assert "internal error" not in finished.stderr and "Traceback" not in finished.stderr
    assert "Exception ignored" not in finished.stderr
    assert finished.stderr.startswith("Error: the standard output was closed"), finished.stderr


def test_a_reader_that_left_while_it_served_is_no_error_at_the_stop() -> None:
    """`reconciler emulator | head -3`: the reader leaves after the banner; stopping cleanly
    then has nobody to tell, and that is no failure."""
    process = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "emulator", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RECONCILER_API_KEY": "k"},
    )
    try:
        banner = [process.stdout.readline() for _ in range(3)]
        base_url = banner[0].split()[-1]
        # an answer proves it serves (and handles Ctrl-C itself) before the reader leaves
        answer = httpx.post(f"{base_url}/v1/projects.listProjects", json={}, timeout=60)
        assert answer.status_code == 401  # no key sent: still an answer
        process.stdout.close()  # the reader leaves
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert "Error" not in stderr and "Exception ignored" not in stderr
