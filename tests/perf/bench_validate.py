"""Benchmark: load + validate a generated manifest, against the YAML parser alone.

Run: .venv/bin/python tests/perf/bench_validate.py [APPS] [PROJECTS] [--growth]
(or `pytest tests/perf/bench_validate.py -s -m perf`). Prints, for one file, the CPU time of
`load_manifest` (what `reconciler validate` runs) beside `yaml.load(CSafeLoader)` of the same
file and their ratio (target: at most 1.5), the peak memory, how the time splits between the
stages, and the machine's load before and after. PyYAML's loader is timed twice: as a caller
gets it, and with the cyclic garbage collector paused as `load_manifest` pauses it (the
collector's rescans of a large heap are most of a plain `yaml.load`: the stricter baseline).
With --growth: the CPU per app at 1,000 and at 10,000 apps, and their ratio (target: 1.2); the
10,000 apps are ten files of 1,000 (one file of them would pass the 10 MiB a manifest may have).
Each figure is the best of a few runs, interleaved, so a busy machine inflates it least.
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # runnable as a script

from reconciler.collector import collector_paused
from reconciler.manifest.build import build_manifest
from reconciler.manifest.document import locator, merge_files
from reconciler.manifest.load import load_files
from reconciler.manifest.model import Manifest, listed
from reconciler.manifest.schema import schema_problems
from reconciler.manifest.semantic import semantic_problems
from reconciler.manifest.validate import load_manifest
from tests.fixtures.manifests import generated_workspace

TARGET_SECONDS = 10.0
TARGET_RATIO = 1.5
TARGET_GROWTH = 1.2
RUNS = 3


def measure(apps: int = 2000, projects: int = 20) -> float:
    """Print the figures for one generated file; return validate's wall time (run_all)."""
    print(f"machine load before: {_load()}")
    with _workspace(apps, projects) as path:
        size = path.stat().st_size
        text = path.read_text(encoding="utf-8")
        best = _best_of(
            RUNS,
            validate=lambda: _check_apps(load_manifest([path]), apps),
            parser=lambda: yaml.load(text, Loader=yaml.CSafeLoader),
            parser_gc_paused=lambda: _gc_paused(lambda: yaml.load(text, Loader=yaml.CSafeLoader)),
        )
        peak_mb = _peak_rss_mb()  # before the stages load it again
        stages = _stages(path)
    cpu, wall = best["validate"]
    parser, parser_paused = best["parser"][0], best["parser_gc_paused"][0]
    print(
        f"load+validate: {apps} apps in {projects} projects ({size / 1e6:.1f} MB): "
        f"{wall:.2f} s ({wall / apps * 1000:.2f} ms per app; {cpu:.2f} s of CPU, which "
        f"is what other processes on a busy machine do not inflate); peak RSS {peak_mb:.0f} MB"
    )
    print(
        f"  CPU, best of {RUNS}: validate {cpu:.2f} s | yaml.load(CSafeLoader) {parser:.2f} s, "
        f"ratio {cpu / parser:.2f} | the same with the garbage collector paused (as validate "
        f"runs) {parser_paused:.2f} s, ratio {cpu / parser_paused:.2f} (target <= {TARGET_RATIO})"
    )
    print("  CPU by stage: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in stages))
    print(f"machine load after: {_load()}")
    return wall


def measure_growth(small: int = 1000, large: int = 10000) -> float:
    """Print validate's CPU per app at `small` and `large` apps; return their ratio."""
    print(f"machine load before: {_load()}")
    with _workspace(small, small // 100) as small_path, _workspace_files(large) as directory:
        best = _best_of(
            2,
            small=lambda: _check_apps(load_manifest([small_path]), small),
            large=lambda: _check_apps(load_manifest([directory]), large),
        )
    per_app = {small: best["small"][0] / small, large: best["large"][0] / large}
    ratio = per_app[large] / per_app[small]
    print(
        f"validate CPU per app: {per_app[small] * 1000:.3f} ms at {small} apps, "
        f"{per_app[large] * 1000:.3f} ms at {large} apps; ratio {ratio:.2f} "
        f"(target <= {TARGET_GROWTH})"
    )
    print(f"machine load after: {_load()}")
    return ratio


@contextmanager
def _workspace(apps: int, projects: int) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "workspace.yaml"
        path.write_text(generated_workspace(apps, projects), encoding="utf-8")
        yield path


@contextmanager
def _workspace_files(apps: int, per_file: int = 1000) -> Iterator[Path]:
    """`apps` apps in files of `per_file`, each file's projects (and hosts) named apart."""
    with tempfile.TemporaryDirectory() as directory:
        for index in range(apps // per_file):
            text = generated_workspace(per_file, per_file // 100)
            path = Path(directory) / f"part-{index:02d}.yaml"
            path.write_text(text.replace("team-", f"part{index:02d}-team-"), encoding="utf-8")
        yield Path(directory)


def _best_of(runs: int, **subjects: Callable[[], object]) -> dict[str, tuple[float, float]]:
    """(CPU, wall) seconds of each subject, the best of `runs`, the subjects interleaved."""
    best: dict[str, tuple[float, float]] = {}
    for _ in range(runs):
        for name, subject in subjects.items():
            gc.collect()
            started, cpu_started = time.perf_counter(), time.process_time()
            subject()
            timing = (time.process_time() - cpu_started, time.perf_counter() - started)
            best[name] = min(best.get(name, timing), timing)
    return best


def _check_apps(manifest: Manifest, apps: int) -> None:
    assert sum(len(listed(p.apps)) for p in manifest.projects) == apps


def _gc_paused(subject: Callable[[], object]) -> None:
    with collector_paused():  # as load_manifest pauses it
        subject()


def _load() -> str:
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)  # bytes there, KiB here


def _stages(path: Path) -> list[tuple[str, float]]:
    with collector_paused():  # as load_manifest does
        return _timed_stages(path)


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
        schema_problems(loaded.data, locator(loaded))
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
    arguments = [a for a in sys.argv[1:] if a != "--growth"]
    if "--growth" in sys.argv:
        measure_growth()
    else:
        measure(*[int(a) for a in arguments[:2]])
