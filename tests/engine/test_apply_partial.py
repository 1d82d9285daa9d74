"""Changes made of several calls that fail half-way: what went through is reported and counted.

A replace is `deleteApp`, `createApp`, then `updateApp` (delete protection on); a create of a
protected app is `createApp`, then `updateApp`. The calls of one change run in order and stop
at the first failure, so everything before it took effect on the platform.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reconciler.apply import (
    ApplyOptions,
    ApplyResult,
    CallGraph,
    ChangeResult,
    Outcome,
    execute,
)
from reconciler.errors import InvalidRequest
from reconciler.plan.changes import Action, Call, Change, Plan
from reconciler.report.progress import summary_line
from tests.engine.apply_plans import FakePlatform, call, plan_of, settings, variables

REPLACE_CALLS = ("apps.deleteApp", "apps.createApp", "apps.updateApp")


def protected_app_create(p: str, a: str) -> Change:
    """A new app with `deleteProtection: true`: createApp cannot set it, an updateApp follows."""
    body = {"project": p, "name": a.title(), "slug": a, "oci": {"image": "img:1"}}
    return Change(
        f"app.{p}/{a}",
        "app",
        Action.CREATE,
        None,
        body,
        calls=(
            call("apps.createApp", body, creates=True),
            call("apps.updateApp", {"project": p, "app": a, "deleteProtection": True}),
        ),
    )


def protected_app_replace(p: str, a: str) -> Change:
    """Three calls: the git app is deleted, the image app created, its protection turned on."""
    return Change(
        f"app.{p}/{a}",
        "app",
        Action.REPLACE,
        {"sourceType": "git"},
        {"sourceType": "oci"},
        calls=(
            call("apps.deleteApp", {"project": p, "app": "app_old"}),
            call("apps.createApp", {"project": p, "slug": a, "oci": {}}, creates=True),
            call("apps.updateApp", {"project": p, "app": a, "deleteProtection": True}),
        ),
    )


def unprotect_then_delete(p: str, a: str) -> Change:
    """A protected app replaced: protection off first, then deleted and created again."""
    return Change(
        f"app.{p}/{a}",
        "app",
        Action.REPLACE,
        {"deleteProtection": True},
        {"deleteProtection": False},
        calls=(
            call("apps.updateApp", {"project": p, "app": "app_old", "deleteProtection": False}),
            call("apps.deleteApp", {"project": p, "app": "app_old"}),
            call("apps.createApp", {"project": p, "slug": a}, creates=True),
        ),
    )


def children(p: str, a: str) -> list[Change]:
    """Settings and two variables of production, needing the app (as the plan makes them)."""
    app = (f"app.{p}/{a}",)
    return [
        settings(p, a, "production", depends=app),
        *variables(p, a, "production", ["K0", "K1"], depends=app),
    ]


def failing_once(operation: str) -> Any:
    """The platform rejects `operation` (400, not ambiguous: never sent again)."""

    def fail(op: str, body: Any, attempt: int) -> Any:
        if op == operation:
            return InvalidRequest(f"{op}: rejected (400)", operation=op, status=400)
        return None

    return fail


async def _no_sleep(_: float) -> None:
    return None


def run(plan: Plan, platform: FakePlatform) -> ApplyResult:
    return asyncio.run(
        execute(plan, platform, resolve=lambda ref: "x", options=ApplyOptions(), sleep=_no_sleep)
    )


def result_of(result: ApplyResult, address: str) -> ChangeResult:
    return next(r for r in result.results if r.change.address == address)


def child_outcomes(result: ApplyResult) -> set[Outcome]:
    return {r.outcome for r in result.results if not r.change.address.startswith("app.")}


# --- a three-call change failing at each of its calls ----------------------------------


@pytest.mark.parametrize(
    ("failing", "error", "counts", "children_outcome"),
    [
        pytest.param(
            "apps.deleteApp",
            "apps.deleteApp: rejected (400)",
            (0, 0, 0),
            Outcome.SKIPPED,
            id="call 1: nothing happened",
        ),
        pytest.param(
            "apps.createApp",
            "partly applied: deleted, then apps.createApp failed: rejected (400)",
            (0, 0, 1),
            Outcome.SKIPPED,
            id="call 2: the old app is gone, the new one does not exist",
        ),
        pytest.param(
            "apps.updateApp",
            "partly applied: deleted, created, then apps.updateApp failed to turn delete "
            "protection on: rejected (400)",
            (1 + 2, 1, 1),  # the app and the two variables added, the settings changed
            Outcome.DONE,
            id="call 3: the new app exists, only its protection is missing",
        ),
    ],
)
def test_a_replace_failing_at_each_call_reports_what_went_through(
    failing: str, error: str, counts: tuple[int, int, int], children_outcome: Outcome
) -> None:
    platform = FakePlatform(fail=failing_once(failing))
    result = run(plan_of(protected_app_replace("s", "web"), children("s", "web")), platform)

    replace = result_of(result, "app.s/web")
    failed_at = REPLACE_CALLS.index(failing)
    assert replace.outcome is Outcome.FAILED
    assert replace.error == error
    assert replace.partly_applied is (failed_at > 0)
    assert replace.applied_steps == ("deleted", "created")[:failed_at]
    assert [(c.operation.name, c.ok) for c in replace.calls] == [
        (op, i < failed_at) for i, op in enumerate(REPLACE_CALLS[: failed_at + 1])
    ]
    # the calls after the failure are never sent
    assert [op for op in platform.operations() if op.startswith("apps.")] == list(
        REPLACE_CALLS[: failed_at + 1]
    )
    assert child_outcomes(result) == {children_outcome}
    assert result.counts() == counts
    assert not result.complete


def test_the_summary_line_counts_the_destroy_of_a_replace_that_could_not_create() -> None:
    platform = FakePlatform(fail=failing_once("apps.createApp"))
    result = run(plan_of(protected_app_replace("s", "web"), children("s", "web")), platform)

    assert result_of(result, "app.s/web").counted_as() == {"destroyed"}
    assert summary_line(result) == (
        "Apply incomplete! Resources: 0 added, 0 changed, 1 destroyed; "
        "1 failed, 3 skipped, 0 blocked."
    )
    skipped = result.with_outcome(Outcome.SKIPPED)
    assert {r.blocked_by for r in skipped} == {("app.s/web",)}


def test_protection_turned_off_before_a_delete_that_failed_counts_as_changed() -> None:
    platform = FakePlatform(fail=failing_once("apps.deleteApp"))
    result = run(plan_of(unprotect_then_delete("s", "web")), platform)

    replace = result_of(result, "app.s/web")
    assert replace.error == (
        "partly applied: delete protection turned off, then apps.deleteApp failed: rejected (400)"
    )
    assert replace.applied_steps == ("delete protection turned off",)
    assert replace.counted_as() == {"changed"}
    assert result.counts() == (0, 1, 0)


# --- a create whose follow-up failed ---------------------------------------------------


def test_a_create_whose_protection_update_failed_is_added_and_its_children_apply() -> None:
    platform = FakePlatform(fail=failing_once("apps.updateApp"), latency=0.001)
    result = run(plan_of(protected_app_create("s", "web"), children("s", "web")), platform)

    app = result_of(result, "app.s/web")
    assert app.outcome is Outcome.FAILED
    assert app.partly_applied
    assert app.error == (
        "partly applied: created, then apps.updateApp failed to turn delete protection on: "
        "rejected (400)"
    )
    assert app.counted_as() == {"added"}
    assert child_outcomes(result) == {Outcome.DONE}
    assert result.counts() == (3, 1, 0)
    assert summary_line(result) == (
        "Apply incomplete! Resources: 3 added, 1 changed, 0 destroyed; "
        "1 failed, 0 skipped, 0 blocked."
    )
    # the design's order holds: the app's calls, then what lives in it
    operations = platform.operations()
    assert operations[:2] == ["apps.createApp", "apps.updateApp"]
    assert sorted(operations[2:]) == [
        "environments.setEnvironmentVariables",
        "environments.updateSettings",
    ]


def test_a_create_that_failed_still_skips_its_children() -> None:
    platform = FakePlatform(fail=failing_once("apps.createApp"))
    result = run(plan_of(protected_app_create("s", "web"), children("s", "web")), platform)

    app = result_of(result, "app.s/web")
    assert not app.partly_applied
    assert app.error == "apps.createApp: rejected (400)"
    assert app.counted_as() == frozenset()
    assert child_outcomes(result) == {Outcome.SKIPPED}
    assert platform.operations() == ["apps.createApp"]
    assert result.counts() == (0, 0, 0)


def test_children_require_the_create_and_only_wait_for_its_follow_up() -> None:
    graph = CallGraph(plan_of(protected_app_create("s", "web"), children("s", "web")))
    create, protect = graph.nodes_of["app.s/web"]
    for address in ("settings.s/web/production", "variable.s/web/production/K0"):
        [child] = graph.nodes_of[address]
        assert create.index in child.requires
        assert protect.index not in child.requires
        assert protect.index in child.after


def test_children_of_a_replace_require_its_delete_and_create() -> None:
    graph = CallGraph(plan_of(protected_app_replace("s", "web"), children("s", "web")))
    delete, create, protect = graph.nodes_of["app.s/web"]
    [child] = graph.nodes_of["settings.s/web/production"]
    assert {delete.index, create.index} <= child.requires
    assert protect.index in child.after - child.requires


def test_a_done_change_counts_by_its_action() -> None:
    result = run(plan_of(protected_app_replace("s", "web")), FakePlatform())
    assert result.complete
    assert result_of(result, "app.s/web").counted_as() == {"added", "destroyed"}
    assert not result_of(result, "app.s/web").partly_applied
    assert result.counts() == (1, 0, 1)


def test_each_batch_call_of_variables_is_read_once_whatever_their_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A change without calls finds the batch call that decides it through an index of the
    calls' keys, built once: the work grows with the variables, not with their square (5,000
    variables of one environment took seconds to order)."""
    from reconciler.plan.kinds import variables as variables_kind

    reads: list[int] = []
    keys_of = variables_kind.variable_keys

    def counted(batch: Call) -> set[str]:
        reads.append(1)
        return keys_of(batch)

    monkeypatch.setattr(variables_kind, "variable_keys", counted)
    for count in (100, 1000):
        reads.clear()
        names = [f"K{i}" for i in range(count)]
        graph = CallGraph(plan_of(*variables("s", "web", "production", names)))
        batches = [node for node in graph.nodes if node.owner.kind == "variable"]
        assert len(batches) == count // 50
        assert all(len(node.covers) == 50 for node in batches)  # each decides its 50
        assert len(reads) <= len(batches)
