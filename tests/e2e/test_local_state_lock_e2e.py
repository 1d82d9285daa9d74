"""One writer at a time on a `--base-url local:PATH` state file, shown with real processes.

Two applies on one state file used to both exit 0, the last one saving over the first one's
work (a whole project lost). Now an apply holds the state's lock for its whole run (the
confirmation included), a second writer is refused at once, naming the file and the holder,
and commands that only read take a snapshot without waiting or blocking anyone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.cli.apply import CONFIRMATION
from tests.e2e.processes import CliProcess, run
from tests.fixtures.cli import write_manifest

ALPHA = """\
version: 1
projects:
  alpha:
    name: Alpha
"""
BETA = """\
version: 1
projects:
  beta:
    name: Beta
"""


@pytest.fixture
def manifests(tmp_path: Path) -> tuple[Path, Path]:
    directory = tmp_path / "manifests"
    directory.mkdir()
    return write_manifest(directory, ALPHA, "alpha.yaml"), write_manifest(
        directory, BETA, "beta.yaml"
    )


def _projects(state: Path) -> list[str]:
    return sorted(p["slug"] for p in json.loads(state.read_text())["projects"].values())


def test_a_second_apply_is_refused_while_the_first_runs_and_nothing_is_lost(
    tmp_path: Path, manifests: tuple[Path, Path]
) -> None:
    alpha, beta = manifests
    state = tmp_path / "state.json"
    local = ["--base-url", f"local:{state}"]
    with CliProcess(["apply", "-f", str(alpha), *local], terminal_stdin=True) as first:
        first.wait_for_stdout(CONFIRMATION)  # planned, holding the lock, waiting for a person

        second = run(["apply", "-f", str(beta), "--auto-approve", *local])
        assert second.exit_code == 1, second.output
        assert (
            f"the state file {state} is in use by process {first.pid} (reconciler apply)"
            in second.stderr
        )
        assert "nothing was changed" in second.stderr and "Traceback" not in second.output
        assert "Apply complete" not in second.stdout

        # reading commands neither wait nor block: they read the last saved state
        reading = run(["plan", "-f", str(beta), "--detailed-exitcode", *local])
        assert reading.exit_code == 2, reading.output

        first.type("yes\n")
        finished = first.finish()
    assert finished.exit_code == 0, finished.output
    assert _projects(state) == ["alpha"]

    retried = run(["apply", "-f", str(beta), "--auto-approve", *local])
    assert retried.exit_code == 0, retried.output
    assert _projects(state) == ["alpha", "beta"]  # the second writer saw the first's work
    both = run(["plan", "-f", str(alpha), "-f", str(beta), "--detailed-exitcode", *local])
    assert both.exit_code == 0, both.output


def test_an_emulator_serving_a_state_file_keeps_other_writers_out(
    tmp_path: Path, manifests: tuple[Path, Path]
) -> None:
    alpha, _ = manifests
    state = tmp_path / "state.json"
    with CliProcess(["emulator", "--port", "0", "--state", str(state)]) as server:
        server.wait_for_stdout("Press Ctrl-C to stop.")
        applied = run(["apply", "-f", str(alpha), "--auto-approve", "--base-url", f"local:{state}"])
        assert applied.exit_code == 1, applied.output
        assert f"is in use by process {server.pid} (reconciler emulator)" in applied.stderr
        another = run(["emulator", "--port", "0", "--state", str(state)])
        assert another.exit_code == 1, another.output
        assert f"is in use by process {server.pid} (reconciler emulator)" in another.stderr
        assert "Emulator listening" not in another.stdout
    assert not state.exists()  # nobody wrote behind the server's back
