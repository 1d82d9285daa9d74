"""Benchmark: load + validate a generated 2,000-app manifest.

Run: .venv/bin/python tests/perf/bench_validate.py [APPS] [PROJECTS]
(or `pytest tests/perf/bench_validate.py -s -m perf`). Prints the total and per-app time.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # runnable as a script

from reconciler.manifest.validate import load_manifest
from tests.fixtures.manifests import generated_workspace

TARGET_SECONDS = 10.0


def measure(apps: int = 2000, projects: int = 20) -> float:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "workspace.yaml"
        path.write_text(generated_workspace(apps, projects), encoding="utf-8")
        started = time.perf_counter()
        manifest = load_manifest([path])
        elapsed = time.perf_counter() - started
    loaded = sum(len(p.apps) for p in manifest.projects)
    assert loaded == apps
    size = path.stat().st_size if path.exists() else 0
    print(
        f"load+validate: {apps} apps in {projects} projects: {elapsed:.2f} s "
        f"({elapsed / apps * 1000:.2f} ms per app){f', {size} bytes' if size else ''}"
    )
    return elapsed


@pytest.mark.perf
def test_two_thousand_apps_validate_well_under_target() -> None:
    assert measure() < TARGET_SECONDS


if __name__ == "__main__":
    arguments = [int(a) for a in sys.argv[1:3]]
    measure(*arguments)
