"""Apply's order for slug moves, read from the calls (not from the plan's listing order).

A call that takes a slug (a create, or a rename through a pinned id) waits for the call that
frees it (a rename away, a delete); its failure skips the taker instead of letting it meet a
409; a rename right after the delete that freed its slug waits out the platform's background
cleanup of the deleted app; a cycle broken through a temporary slug is no cycle for apply.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reconciler.apply import ApplyOptions, ApplyResult, Outcome, execute
from reconciler.errors import Conflict, PermissionDenied
from reconciler.plan.changes import Action, Change, Plan
from tests.engine.apply_plans import FakePlatform, app_create, app_delete, call, plan_of, settings


async def _no_sleep(_: float) -> None:
    return None


def run(plan: Plan, platform: FakePlatform) -> ApplyResult:
    return asyncio.run(
        execute(plan, platform, resolve=lambda ref: "", options=ApplyOptions(), sleep=_no_sleep)
    )


def rename(app_id: str, old: str, *slugs: str, depends: tuple[str, ...] = ()) -> Change:
    """App `app_id` at `old` renamed through each of `slugs` in turn (the last is its key)."""
    calls = tuple(call("apps.updateApp", {"project": "p", "app": app_id, "slug": s}) for s in slugs)
    return Change(
        f"app.p/{slugs[-1]}",
        "app",
        Action.UPDATE,
        {"id": app_id, "slug": old},
        {"id": app_id, "slug": slugs[-1]},
        calls=calls,
        reason="renamed",
        depends_on=depends,
    )


def slugs_sent(platform: FakePlatform) -> list[str]:
    return [str(body.get("slug") or body.get("app")) for _, body in platform.log]


def test_a_rename_waits_for_the_rename_that_frees_its_slug_whatever_the_listing() -> None:
    taker = rename("app_v2", "api-v2", "api")
    freer = rename("app_v1", "api", "api-legacy")
    platform = FakePlatform(latency=0.001)

    result = run(plan_of(taker, freer), platform)

    assert result.complete
    assert slugs_sent(platform) == ["api-legacy", "api"]


def test_a_swap_broken_through_a_temporary_slug_runs_in_three_steps() -> None:
    # app_b moves out of the way, app_a takes its slug, app_b takes app_a's
    breaker = rename("app_b", "b", "b-renaming", "a", depends=("app.p/b",))
    other = rename("app_a", "a", "b", depends=("app.p/a",))
    platform = FakePlatform(latency=0.001)

    # what lives in the breaker waits for its last call
    result = run(plan_of(breaker, other, settings("p", "a", "production")), platform)

    assert result.complete
    assert slugs_sent(platform) == ["b-renaming", "b", "a", "a"]
    assert platform.operations()[-1] == "environments.updateSettings"


def test_a_rename_into_a_pruned_slug_follows_the_delete_and_other_work_precedes_it() -> None:
    delete = app_delete("p", "app_old")
    delete = Change(
        "app.p/app_old", "app", Action.DELETE, {"slug": "api"}, None, calls=delete.calls
    )
    taker = rename("app_v2", "api-v2", "api", depends=("app.p/app_old",))
    platform = FakePlatform(latency=0.001)

    result = run(plan_of(taker, settings("p", "web", "production"), delete), platform)

    assert result.complete
    assert platform.operations() == [
        "environments.updateSettings",  # deletions still come after unrelated work
        "apps.deleteApp",
        "apps.updateApp",
    ]


def test_a_rename_after_a_delete_waits_out_the_cleanup_of_the_deleted_app() -> None:
    def cleanup(operation: str, body: Any, attempt: int) -> Any:
        if operation == "apps.updateApp" and attempt <= 2:
            return Conflict("slug in use (409)", operation=operation, status=409)
        return None

    delete = Change(
        "app.p/app_old",
        "app",
        Action.DELETE,
        {"slug": "api"},
        None,
        calls=(call("apps.deleteApp", {"project": "p", "app": "app_old"}),),
    )
    platform = FakePlatform(fail=cleanup)

    result = run(plan_of(rename("app_v2", "api-v2", "api"), delete), platform)

    assert result.complete
    assert platform.operations() == ["apps.deleteApp"] + ["apps.updateApp"] * 3


def test_a_conflict_on_a_rename_that_follows_no_delete_is_reported_at_once() -> None:
    platform = FakePlatform(
        fail=lambda op, body, attempt: Conflict("taken (409)", operation=op, status=409)
    )
    result = run(plan_of(rename("app_a", "a", "b")), platform)
    assert platform.operations() == ["apps.updateApp"]
    assert result.with_outcome(Outcome.FAILED)[0].error == "taken (409)"


def test_when_the_rename_away_fails_what_takes_its_slug_is_skipped() -> None:
    def refuse(operation: str, body: Any, attempt: int) -> Any:
        if body.get("slug") == "api-legacy":
            return PermissionDenied("denied (403)", operation=operation, status=403)
        return None

    freer = rename("app_v1", "api", "api-legacy")
    create = app_create("p", "api", depends=False)
    platform = FakePlatform(fail=refuse)

    result = run(plan_of(create, freer), platform)

    skipped = {r.change.address: r.blocked_by for r in result.with_outcome(Outcome.SKIPPED)}
    assert skipped == {"app.p/api": ("app.p/api-legacy",)}
    assert platform.operations() == ["apps.updateApp"]
