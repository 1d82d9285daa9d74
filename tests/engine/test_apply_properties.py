"""Properties of the executor over generated plans with generated failures.

Whatever the plan and whichever calls fail: nothing is sent before what it
requires succeeded; a change is skipped exactly when something it requires did
not make its object exist (a failed follow-up after a create, such as turning
delete protection on, skips nothing); every call is sent at most once; app and
project deletions come after all other work; what a failed change sent before
its failure is reported; a rerun of what did not apply (with the platform
healed) completes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.apply import ApplyOptions, ApplyResult, ChangeResult, Outcome, execute
from reconciler.errors import InvalidRequest
from reconciler.plan.changes import Action, Change, Plan
from tests.engine.apply_plans import (
    FakePlatform,
    app_create,
    app_delete,
    call,
    domain,
    plan_of,
    policies,
    project_create,
    variable_removals,
    variables,
)
from tests.engine.apply_plans import (
    settings as settings_change,
)

ENVIRONMENTS = ("production", "preview")


@st.composite
def plans(draw: Any) -> Plan:
    changes: list[Change] = []
    for p in range(draw(st.integers(1, 2))):
        project = f"p{p}"
        new_project = draw(st.booleans())
        if new_project:
            changes.append(project_create(project))
        for a in range(draw(st.integers(1, 3))):
            app = f"a{a}"
            kind = draw(st.sampled_from(["create", "existing", "delete"]))
            if kind == "delete" and not new_project:
                changes.append(app_delete(project, app))
                continue
            parent: tuple[str, ...] = ()
            if kind == "create" or new_project:
                created = app_create(project, app, depends=new_project)
                if draw(st.booleans()):
                    created = _protected(created)
                changes.append(created)
                parent = (f"app.{project}/{app}",)
            for env in draw(st.sets(st.sampled_from(ENVIRONMENTS), max_size=2)):
                if draw(st.booleans()):
                    changes.append(settings_change(project, app, env, depends=parent))
                keys = [f"K{i}" for i in range(draw(st.integers(0, 3)))]
                if keys:
                    changes.extend(variables(project, app, env, keys, depends=parent))
                if draw(st.booleans()) and not parent:
                    changes.extend(variable_removals(project, app, env, ["OLD"]))
                if draw(st.booleans()):
                    changes.append(policies(project, app, env, depends=parent))
                if draw(st.booleans()) and not parent:
                    changes.append(domain(project, app, env, f"{app}.{project}.{env}.example.com"))
    return plan_of(changes)


def _protected(create: Change) -> Change:
    """The app's create followed by the updateApp that turns its delete protection on."""
    body = create.calls[0].body
    protect = call(
        "apps.updateApp",
        {"project": body["project"], "app": body["slug"], "deleteProtection": True},
    )
    return dataclasses.replace(create, calls=(*create.calls, protect))


def _failing(addresses: set[str], follow_ups: set[str]) -> Any:
    """Every call for `addresses` fails; for `follow_ups`, only the protection updates."""

    def fail(operation: str, body: Any, attempt: int) -> Any:
        target = _target_of(body)
        if any(target in address for address in addresses) or (
            "deleteProtection" in body and any(target in address for address in follow_ups)
        ):
            return InvalidRequest(f"{operation}: rejected (400)", operation=operation, status=400)
        return None

    return fail


def _exists(result: ChangeResult) -> bool:
    """Whether the object of `result` exists now: it was applied, or its create went through."""
    return result.outcome is Outcome.DONE or any(c.ok and c.operation.creates for c in result.calls)


def _what_remains(result: ChangeResult) -> Change:
    """What the next plan would send for a change that did not apply: the calls after the ones
    that went through (an app created without its protection is only updated)."""
    return dataclasses.replace(
        result.change, calls=result.change.calls[len(result.applied_calls) :]
    )


def _target_of(body: Any) -> str:
    """A string that identifies the object a fake call works on, found in its change's address."""
    if "domain" in body:
        return str(body["domain"])
    parts = [body.get("project"), body.get("app") or body.get("slug"), body.get("environment")]
    return "/".join(str(p) for p in parts if p)


async def _no_sleep(_: float) -> None:
    return None


def _run(plan: Plan, platform: FakePlatform) -> ApplyResult:
    return asyncio.run(
        execute(plan, platform, resolve=lambda ref: "x", options=ApplyOptions(), sleep=_no_sleep)
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans(), data=st.data())
def test_failures_never_break_the_order_and_reruns_complete(plan: Plan, data: Any) -> None:
    addresses = [c.address for c in plan.changes]
    failing = (
        set(data.draw(st.sets(st.sampled_from(addresses), max_size=3))) if addresses else set()
    )
    follow_ups = (
        set(data.draw(st.sets(st.sampled_from(addresses), max_size=2))) if addresses else set()
    )
    platform = FakePlatform(fail=_failing(failing, follow_ups))
    result = _run(plan, platform)
    outcome = {r.change.address: r for r in result.results}

    # a change is done only when what it requires exists; skipped exactly when it does not
    for r in result.results:
        if r.outcome is Outcome.DONE:
            assert all(_exists(outcome[d]) for d in r.change.depends_on)
        if r.outcome is Outcome.SKIPPED:
            assert r.blocked_by
            assert all(not _exists(outcome[b]) for b in r.blocked_by)
        if r.outcome is Outcome.FAILED:
            # the calls before the failure went through, and the report says so
            assert r.calls and not r.calls[-1].ok and all(c.ok for c in r.calls[:-1])
            assert r.partly_applied == (r.error or "").startswith("partly applied: ")
    # no create or update is sent twice (failures here are not ambiguous)
    sent = [(op, tuple(sorted(map(str, body.items())))) for op, body in platform.log]
    assert len(sent) == len(set(sent))
    # deletions of apps and projects come after every other call
    operations = platform.operations()
    deletions = [i for i, op in enumerate(operations) if op in ("apps.deleteApp",)]
    others = [i for i, op in enumerate(operations) if op not in ("apps.deleteApp",)]
    if deletions and others:
        assert min(deletions) > max(others)
    # the platform heals; applying what did not apply completes it
    if not result.complete:
        rest = Plan(
            tuple(_what_remains(r) for r in result.results if r.outcome is not Outcome.DONE)
        )
        healed = FakePlatform(
            projects=set(platform.projects), apps=set(platform.apps), domains=set(platform.domains)
        )
        assert _run(rest, healed).complete


def test_the_generator_makes_interesting_plans() -> None:
    """Guard against a generator that only ever yields trivial plans."""
    seen: set[Action] = set()

    @settings(max_examples=40, deadline=None)
    @given(plan=plans())
    def collect(plan: Plan) -> None:
        seen.update(c.action for c in plan.changes)

    collect()
    assert {Action.CREATE, Action.UPDATE, Action.DELETE} <= seen
