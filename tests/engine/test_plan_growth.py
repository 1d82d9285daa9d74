"""The planner's work grows linearly with the apps of a project.

Work is counted, not timed: how many times an item of the manifest's collections (projects,
apps, environments and their variables, domains, policies) or of the live apps is gone over,
and how many function calls planning makes. For four times the apps, linear work is about
four times as much; work per change or per app that scans a collection (as ordering did with
a list and `.index` per change, and matching each app with a scan of the live apps) about
sixteen times.
"""

from __future__ import annotations

import asyncio

from reconciler.plan.planner import PlanOptions, build_plan
from tests.engine.large_plans import InstantClient, Visits, large_manifest
from tests.fixtures.counting import counted_calls

SMALL = 150
GROWTH = 4
LINEAR_BOUND = 5  # linear is GROWTH plus a constant's share; quadratic is GROWTH**2


def work(apps: int) -> tuple[int, int]:
    """(items of the manifest and of the live apps gone over, function calls) for a plan of
    `apps` apps."""
    visits = Visits()
    desired = large_manifest(apps, visits.collection)
    client = InstantClient(apps, visits.listing)
    visits.count = 0
    with counted_calls() as calls:
        plan = asyncio.run(build_plan(desired, client, PlanOptions(max_deletes=apps)))
    assert len(plan.changes) == 4 * apps + apps // 10
    return visits.count, calls[0]


def test_planning_work_grows_linearly_with_the_apps_of_a_project() -> None:
    small_visits, small_calls = work(SMALL)
    large_visits, large_calls = work(SMALL * GROWTH)
    assert large_visits / small_visits < LINEAR_BOUND, (small_visits, large_visits)
    assert large_calls / small_calls < LINEAR_BOUND, (small_calls, large_calls)
