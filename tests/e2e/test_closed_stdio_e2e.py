"""A command started with standard input or error closed (`<&-`, `2>&-`) runs as with them
open. The event loop is uvloop's where it can be, and libuv aborts the process when it closes
a descriptor below 3, which a closed one hands to the next socket or epoll instance: the
command must pick asyncio's loop then (reconciler/cli/event_loop.py). Closed standard output
is tests/e2e/test_output_errors_e2e.py's case."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.cli import shop_manifest, write_manifest

MANIFEST = shop_manifest(
    """\
    web:
      name: Web
      oci: {image: ghcr.io/acme/web:1.0}
    """
)


@pytest.mark.parametrize("closed", [0, 2], ids=["stdin", "stderr"])
def test_a_plan_with_a_closed_standard_descriptor_runs_to_its_end(
    tmp_path: Path, closed: int
) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "reconciler",
            "plan",
            "-f",
            str(manifest),
            "--detailed-exitcode",
            "--base-url",
            f"local:{tmp_path / 'state.json'}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.close(closed),
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert finished.returncode == 2, (finished.returncode, finished.stdout)  # changes to make
    assert "Plan: 2 to add" in finished.stdout
