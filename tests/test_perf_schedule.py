"""The benchmarks' lower bound (tests/perf/schedule.py): the figures in the README rest on it."""

from __future__ import annotations

import pytest

from tests.perf.schedule import (
    RecordedCall,
    data_dependencies,
    ideal_rounds,
    strict_rounds,
)


def plan_reads(projects: int, apps: int, reads_per_app: int) -> list[set[int]]:
    """getProject -> listApps -> each app's reads, per project: the shape of a converged plan."""
    predecessors: list[set[int]] = []
    for _ in range(projects):
        get_project = len(predecessors)
        predecessors.append(set())
        list_apps = len(predecessors)
        predecessors.append({get_project})
        predecessors.extend({list_apps} for _ in range(apps * reads_per_app))
    return predecessors


def test_independent_calls_take_calls_over_parallelism() -> None:
    assert ideal_rounds([set()] * 41, 10) == 5
    assert ideal_rounds([], 10) == 0


def test_a_chain_takes_its_length_whatever_the_parallelism() -> None:
    chain = [set()] + [{i} for i in range(5)]
    assert ideal_rounds(chain, 10) == 6 == strict_rounds(chain, 10)


def test_a_plan_cannot_fill_its_slots_before_it_knows_the_ids() -> None:
    # 1 project, 10 apps, 4 reads each: 1 + 1 + ceil(40 / 10) rounds, not ceil(42 / 10).
    reads = plan_reads(1, 10, 4)
    assert strict_rounds(reads, 10) == 5
    assert ideal_rounds(reads, 10) == 6


def test_many_projects_overlap_their_chains() -> None:
    # 50 projects: projects, then apps, then app reads, with every slot busy in every round.
    reads = plan_reads(50, 20, 4)
    assert ideal_rounds(reads, 10) == strict_rounds(reads, 10) == 4100 // 10


def test_longest_chain_first_beats_taking_calls_in_order() -> None:
    # Ten independent calls listed first, then a chain of three: in order would take 2 + 3.
    predecessors: list[set[int]] = [set() for _ in range(10)] + [set(), {10}, {11}]
    assert ideal_rounds(predecessors, 10) == 3


def test_a_cycle_is_refused() -> None:
    with pytest.raises(ValueError, match="cycle"):
        ideal_rounds([{1}, {0}], 2)


def test_dependencies_follow_the_ids_and_cursors_that_answers_produced() -> None:
    calls = [
        RecordedCall({"project": "shop"}, {"data": {"id": "proj_1", "slug": "shop"}}),
        RecordedCall(
            {"project": "proj_1"}, {"data": [{"id": "app_1"}], "pagination": {"cursor": "c1"}}
        ),
        RecordedCall(
            {"project": "proj_1", "cursor": "c1"},
            {"data": [{"id": "app_2"}], "pagination": {"cursor": ""}},
        ),
        RecordedCall(
            {"project": "proj_1", "app": "app_2", "environment": "production"}, {"data": []}
        ),
        RecordedCall(
            {"project": "proj_1", "app": "app_1", "environment": "production"}, {"data": []}
        ),
        RecordedCall({"domain": "www.example.com"}, None),
    ]
    assert data_dependencies(calls) == [set(), {0}, {0, 1}, {0, 2}, {0, 1}, set()]
