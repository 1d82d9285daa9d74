"""The collector's pause: full passes wait, young cycles are still freed, and the manifest's
load and the plan run inside it (the reason: reconciler/collector.py)."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from reconciler.collector import collector_paused
from reconciler.manifest.validate import load_manifest
from reconciler.plan.planner import PlanOptions, build_plan
from tests.engine.large_plans import InstantClient, large_manifest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@contextmanager
def passes() -> Iterator[list[int]]:
    """The generation of each collector pass that runs in the block."""
    generations: list[int] = []

    def record(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            generations.append(info["generation"])

    gc.callbacks.append(record)
    try:
        yield generations
    finally:
        gc.callbacks.remove(record)


def grow_long_lived_heap() -> list[list[int]]:
    """Enough surviving containers that the collector, left alone, makes a full pass."""
    return [[i] for i in range(400_000)]


@contextmanager
def heap_out_of_sight() -> Iterator[None]:
    """What the process already holds moves out of the collector's sight, so the heap the test
    grows decides whether a full pass is due (CPython makes one only when the long-lived objects
    added since the last are a quarter of those it found then), not the test worker's history."""
    gc.freeze()
    gc.collect()
    try:
        yield
    finally:
        gc.unfreeze()


def test_a_growing_heap_gets_full_passes_without_the_pause() -> None:
    with heap_out_of_sight(), passes() as generations:
        kept = grow_long_lived_heap()
    assert 2 in generations, "the heap was not large enough to show the pause's effect"
    del kept


def test_no_full_pass_runs_while_paused_and_the_thresholds_come_back() -> None:
    before = gc.get_threshold()
    with heap_out_of_sight(), passes() as generations, collector_paused():
        kept = grow_long_lived_heap()
    assert 2 not in generations
    assert gc.get_threshold() == before
    del kept


class Node:
    next: Node | None = None


def test_cycles_that_die_young_are_still_freed_while_paused() -> None:
    freed: list[int] = []
    with collector_paused():
        for number in range(100):
            cycle = Node()
            cycle.next = cycle
            weakref.finalize(cycle, freed.append, number)
            del cycle
        kept = [[] for _ in range(20_000)]  # surviving allocations trigger young passes
        assert len(freed) == 100
    del kept


def test_the_thresholds_come_back_after_an_error_and_when_nested() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), collector_paused():
        with collector_paused():
            pass
        assert gc.get_threshold()[2] > before[2]
        raise RuntimeError("boom")
    assert gc.get_threshold() == before


def test_the_plan_is_built_while_paused() -> None:
    thresholds: list[tuple[int, int, int]] = []

    class Observed(InstantClient):
        async def list_all(self, operation: str, body: Any, **extra: Any) -> list[Any]:
            thresholds.append(gc.get_threshold())
            return await super().list_all(operation, body, **extra)

    before = gc.get_threshold()
    asyncio.run(build_plan(large_manifest(3), Observed(3), PlanOptions(max_deletes=3)))
    assert thresholds and all(found[2] > before[2] for found in thresholds)
    assert gc.get_threshold() == before


def test_the_manifest_is_loaded_while_paused() -> None:
    thresholds: list[tuple[int, int, int]] = []

    def observe(kind: str, member: Any) -> list[str]:
        thresholds.append(gc.get_threshold())
        return []

    before = gc.get_threshold()
    load_manifest([EXAMPLES / "image-app.yaml"], member_checks=[observe])
    assert thresholds and all(found[2] > before[2] for found in thresholds)
    assert gc.get_threshold() == before


def test_plans_built_at_once_bring_full_passes_back_when_the_last_ends() -> None:
    """Pauses that overlap end in any order (here the first begun ends first, while the
    second still runs)."""
    before = gc.get_threshold()

    class Slow(InstantClient):
        def __init__(self, apps: int, delay: float) -> None:
            super().__init__(apps)
            self.delay = delay

        async def list_all(self, operation: str, body: Any, **extra: Any) -> list[Any]:
            await asyncio.sleep(self.delay)
            return await super().list_all(operation, body, **extra)

    async def both() -> None:
        await asyncio.gather(
            build_plan(large_manifest(3), Slow(3, 0.0), PlanOptions(max_deletes=3)),
            build_plan(large_manifest(3), Slow(3, 0.05), PlanOptions(max_deletes=3)),
        )

    try:
        asyncio.run(both())
        assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)


EXITING = """
import atexit, gc, sys
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))  # runs last
from reconciler.collector import skip_collection_at_exit
skip_collection_at_exit()
skip_collection_at_exit()  # once, however often a process runs a command
print("frozen while running:", gc.get_freeze_count() > 0)
gc.collect()
"""


def test_objects_are_frozen_at_exit_only() -> None:
    """The collector works as usual while a command runs; at exit its last walk is skipped."""
    done = subprocess.run(
        [sys.executable, "-c", EXITING], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines() == ["frozen while running: False", "frozen at exit: True"]
