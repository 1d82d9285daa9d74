"""Validating a manifest costs work and memory in proportion to its size.

Work is counted, not timed: function calls while loading and validating, and the peak of
memory traced, for a workspace and one four times larger (in one project, so a scan of a
project's apps per app would show; spread over as many files, so would a scan per file; and
with an error in every app, so would one per problem). Linear growth is about 4x; work per
item that scans the others is about 16x.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import pytest

from reconciler.manifest.validate import ManifestInvalid, load_manifest
from tests.fixtures.counting import counted_calls
from tests.fixtures.manifests import generated_workspace

SMALL = 30
GROWTH = 4
LINEAR_BOUND = 5  # linear is GROWTH plus a constant's share; quadratic is GROWTH**2
MEMORY_BOUND = 6  # the position maps double in size at powers of two, so a step can add ~2x
MEMORY_PER_BYTE = 50
"""Peak memory traced per byte of manifest. PyYAML's nodes (two `Mark`s each, the whole tree
beside its data) made it about 75; it is about 35."""


def one_project(directory: Path, apps: int) -> list[Path]:
    path = directory / "workspace.yaml"
    path.write_text(generated_workspace(apps, projects=1), encoding="utf-8")
    return [path]


def file_per_project(directory: Path, apps: int) -> list[Path]:
    for index in range(apps):
        text = generated_workspace(1, projects=1).replace("team-000", f"team-{index:05d}")
        (directory / f"team-{index:05d}.yaml").write_text(text, encoding="utf-8")
    return [directory]


def error_per_app(directory: Path, apps: int) -> list[Path]:
    path = directory / "workspace.yaml"
    text = generated_workspace(apps, projects=1).replace("vCpus: 1,", "vCpus: 0.3,")
    path.write_text(text, encoding="utf-8")
    return [path]


def validate(paths: list[Path]) -> None:
    with suppress(ManifestInvalid):
        load_manifest(paths)


def work(write: Callable[[Path, int], list[Path]], directory: Path, apps: int) -> int:
    paths = write(directory, apps)
    with counted_calls() as calls:
        validate(paths)
    return calls[0]


def peak_memory(paths: list[Path]) -> int:
    tracemalloc.start()
    try:
        validate(paths)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("write", [one_project, file_per_project, error_per_app])
def test_validation_work_grows_linearly(
    write: Callable[[Path, int], list[Path]], tmp_path: Path
) -> None:
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small = work(write, tmp_path / "small", SMALL)
    large = work(write, tmp_path / "large", SMALL * GROWTH)
    assert large / small < LINEAR_BOUND, (small, large)


def test_validation_memory_grows_linearly_and_stays_a_small_multiple_of_the_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small_paths = one_project(tmp_path / "small", SMALL * 2)
    large_paths = one_project(tmp_path / "large", SMALL * 2 * GROWTH)
    small, large = peak_memory(small_paths), peak_memory(large_paths)
    assert large / small < MEMORY_BOUND, (small, large)
    size = large_paths[0].stat().st_size
    assert large < MEMORY_PER_BYTE * size, (large, size)
