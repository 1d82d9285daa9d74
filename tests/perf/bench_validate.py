"""Benchmark: load + validate a generated 2,000-app manifest.

Run: .venv/bin/python tests/perf/bench_validate.py [APPS] [PROJECTS]
(or `pytest tests/perf/bench_validate.py -s -m perf`). Prints the total, the time per app, the
peak memory (resident set, Linux and macOS) and how the time splits between the stages.
"""

from __future__ import annotations

import gc
import resource
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # runnable as a script

from reconciler.manifest.build import build_manifest
from reconciler.manifest.document import locator, merge_files
from reconciler.manifest.load import load_files
from reconciler.manifest.model import listed
from reconciler.manifest.schema import schema_problems
from reconciler.manifest.semantic import semantic_problems
from reconciler.manifest.validate import load_manifest
from tests.fixtures.manifests import generated_workspace

TARGET_SECONDS = 10.0


def measure(apps: int = 2000, projects: int = 20) -> float:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "workspace.yaml"
        path.write_text(generated_workspace(apps, projects), encoding="utf-8")
        size = path.stat().st_size
        started, cpu_started = time.perf_counter(), time.process_time()
        manifest = load_manifest([path])
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        peak_mb = _peak_rss_mb()  # before the stages load it again
        assert sum(len(listed(p.apps)) for p in manifest.projects) == apps
        del manifest
        stages = _stages(path)
    print(
        f"load+validate: {apps} apps in {projects} projects ({size / 1e6:.1f} MB): "
        f"{elapsed:.2f} s ({elapsed / apps * 1000:.2f} ms per app; {cpu:.2f} s of CPU, which "
        f"is what other processes on a busy machine do not inflate); peak RSS {peak_mb:.0f} MB"
    )
    print("  CPU by stage: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in stages))
    return elapsed


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)  # bytes there, KiB here


def _stages(path: Path) -> list[tuple[str, float]]:
    gc.disable()  # as load_manifest does
    try:
        return _timed_stages(path)
    finally:
        gc.enable()


def _timed_stages(path: Path) -> list[tuple[str, float]]:
    timings: list[tuple[str, float]] = []
    clock = time.process_time()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.process_time()
        timings.append((name, now - clock))
        clock = now

    files = load_files([path])
    lap("yaml")
    for loaded in files:
        schema_problems(loaded.data, locator(loaded.values, loaded.keys, loaded.display))
    lap("schema")
    document, _ = merge_files(files)
    semantic_problems(document)
    lap("semantic")
    build_manifest(document)
    lap("model")
    return timings


@pytest.mark.perf
def test_two_thousand_apps_validate_well_under_target() -> None:
    assert measure() < TARGET_SECONDS


if __name__ == "__main__":
    measure(*[int(a) for a in sys.argv[1:3]])
