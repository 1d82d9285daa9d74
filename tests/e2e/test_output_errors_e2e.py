"""Standard output that cannot be written is one clear error and exit 1, for every command.

`reconciler schema > /dev/full`, a reader that left the pipe (`| head`), or a closed
descriptor used to end in "internal error", a traceback, an "Exception ignored" report, or
(closed) silently with exit 0. Real processes, since only they have real descriptors.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.processes import holding_emulator
from tests.e2e.test_apply_interrupt_e2e import WEB_WITH_VARIABLE_AND_POLICY
from tests.fixtures.cli import platform_env, shop_manifest, write_manifest

MANIFEST = shop_manifest(
    """\
    web:
      name: Web
      oci: {image: ghcr.io/acme/web:1.0}
    """
)
FAILURES = ["full-disk", "reader-left", "closed"]


def _commands(manifest: Path, state: Path) -> dict[str, list[str]]:
    local = ["--base-url", f"local:{state}"]
    return {
        "help": ["--help"],
        "schema": ["schema"],
        "schema-markdown": ["schema", "--format", "markdown"],
        "validate": ["validate", "-f", str(manifest)],
        "plan": ["plan", "-f", str(manifest), *local],
        "plan-json": ["plan", "-f", str(manifest), "--format", "json", *local],
        "plan-detailed-exitcode": ["plan", "-f", str(manifest), "--detailed-exitcode", *local],
        "export": ["export", *local],
        "status": ["status", "-f", str(manifest), *local],
    }


@pytest.fixture
def failing_stdout(request: pytest.FixtureRequest) -> Iterator[dict]:
    """How the child's standard output fails: `stdout` and `preexec_fn` for Popen."""
    failure = request.param
    if failure == "full-disk":
        if not Path("/dev/full").exists():
            pytest.skip("needs /dev/full")
        with open("/dev/full", "w") as full:
            yield {"stdout": full}
    elif failure == "reader-left":
        read_end, write_end = os.pipe()
        os.close(read_end)  # nobody reads: every write fails with EPIPE
        try:
            yield {"stdout": write_end}
        finally:
            os.close(write_end)
    else:
        yield {"stdout": subprocess.DEVNULL, "preexec_fn": lambda: os.close(1)}


COMMANDS = [
    "help",
    "schema",
    "schema-markdown",
    "validate",
    "plan",
    "plan-json",
    "plan-detailed-exitcode",
    "export",
    "status",
]
# every command with a full disk; every way to fail with the commands that print most
CASES = [(command, "full-disk") for command in COMMANDS] + [
    (command, failure)
    for command in ("schema", "plan-detailed-exitcode")
    for failure in FAILURES
    if failure != "full-disk"
]


@pytest.mark.parametrize(("command", "failing_stdout"), CASES, indirect=["failing_stdout"])
def test_an_output_that_cannot_be_written_is_one_error_and_exit_1(
    tmp_path: Path, failing_stdout: dict, command: str
) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    args = _commands(manifest, tmp_path / "state.json")[command]
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("RECONCILER_DEBUG", None)
    finished = subprocess.run(
        [sys.executable, "-m", "reconciler", *args],
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=120,
        env=env,
        **failing_stdout,
    )
    assert finished.returncode == 1, finished.stderr
    errors = [line for line in finished.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, finished.stderr
    assert errors[0].startswith("Error: cannot write to standard output: "), finished.stderr
    for noise in ("Traceback", "internal error", "Exception ignored"):
        assert noise not in finished.stderr
    assert not (tmp_path / "state.json").exists()  # reading commands wrote nothing


def test_an_apply_whose_reader_leaves_half_way_still_finishes_and_then_says_so(
    start_emulator: Any, tmp_path: Path
) -> None:
    """Stopping at the first failed line would leave the platform half changed."""
    # held a few seconds: the reader is gone before its line (and the ones after) are written
    server = holding_emulator(start_emulator, "environments.setEnvironmentVariables", 15_000)
    manifest = write_manifest(tmp_path, WEB_WITH_VARIABLE_AND_POLICY)
    applying = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "apply", "-f", str(manifest), "--auto-approve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("RECONCILER_")},
            **{k: v for k, v in platform_env(server).items() if v is not None},
        },
    )
    try:
        server.wait_for_held_call()
        applying.stdout.close()  # the reader leaves
        _, stderr = applying.communicate(timeout=120)
    finally:
        if applying.poll() is None:
            applying.kill()
    assert applying.returncode == 1, stderr
    assert stderr.startswith("Error: cannot write to standard output: its reader closed it"), stderr
    where = {"project": "shop", "app": "web", "environment": "production"}
    policies = server.call("gateway.listPolicies", where).json()["data"]
    assert [p["name"] for p in policies] == ["deny-admin"]  # the last change applied too
