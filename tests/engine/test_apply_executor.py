"""The executor against a fake platform: order, concurrency, failures, creates, summary."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reconciler.apply import ApplyOptions, ApplyResult, CallGraph, Outcome, check_safety, execute
from reconciler.errors import ApplyRefused, Conflict, NotFound, PreconditionFailed, ReconcilerError
from reconciler.plan.changes import Action, Change, Plan
from reconciler.plan.secrets import fingerprint, with_fingerprint
from reconciler.sensitive import Secret
from tests.engine.apply_plans import (
    FakePlatform,
    app_create,
    app_delete,
    call,
    domain,
    new_app_changes,
    plan_of,
    policies,
    project_create,
    project_delete,
    secret,
    server_error,
    settings,
    variable_removals,
    variables,
)

SECRET_VALUE = "s3cr3t-sentinel-value"


def resolve(ref: Any) -> Secret:
    if ref.source == "fromEnv:PRESENT":
        return Secret(SECRET_VALUE)
    raise ReconcilerError(f"secret {ref.source} is not available")


async def _no_sleep(_: float) -> None:
    return None


def run(plan: Plan, platform: FakePlatform, **options: Any) -> ApplyResult:
    return asyncio.run(
        execute(plan, platform, resolve=resolve, options=ApplyOptions(**options), sleep=_no_sleep)
    )


def outcomes(result: ApplyResult) -> dict[str, Outcome]:
    return {r.change.address: r.outcome for r in result.results}


# --- order ----------------------------------------------------------------------


def test_parents_are_created_before_their_children() -> None:
    platform = FakePlatform(latency=0.001)
    result = run(plan_of(project_create("shop"), new_app_changes("shop", "web")), platform)

    assert result.complete
    ops = platform.operations()
    assert ops[0] == "projects.createProject"
    assert ops[1] == "apps.createApp"
    assert set(ops[2:]) == {
        "environments.updateSettings",
        "environments.setEnvironmentVariables",
        "gateway.setPolicies",
    }


def test_environment_phases_run_in_the_designed_order() -> None:
    p, a, env = "shop", "web", "production"
    plan = plan_of(
        # listed in reverse on purpose: the order comes from the executor, not the list
        policies(p, a, env),
        variable_removals(p, a, env, ["OLD"]),
        variables(p, a, env, ["NEW"]),
        settings(p, a, env),
        domain(p, a, env, "new.example.com"),
        domain(p, a, env, "old.example.com", Action.DELETE),
    )
    platform = FakePlatform(latency=0.001)
    assert run(plan, platform).complete
    assert platform.operations() == [
        "domains.deleteDomain",
        "domains.createDomain",
        "environments.updateSettings",
        "environments.setEnvironmentVariables",
        "environments.removeEnvironmentVariables",
        "gateway.setPolicies",
    ]


def test_environments_run_in_parallel_with_each_other() -> None:
    plan = plan_of(*(settings("shop", f"app{i}", "production") for i in range(5)))
    platform = FakePlatform(latency=0.01)
    run(plan, platform, parallelism=10)
    assert platform.max_in_flight == 5


def test_app_and_project_deletions_come_last() -> None:
    plan = plan_of(
        project_delete("old"),
        app_delete("old", "legacy"),
        app_delete("shop", "gone"),
        project_create("new"),
        new_app_changes("new", "api"),
        settings("shop", "web", "preview"),
    )
    platform = FakePlatform(latency=0.001)
    assert run(plan, platform).complete
    ops = platform.operations()
    assert ops[-3:-1] == ["apps.deleteApp", "apps.deleteApp"]
    assert ops[-1] == "projects.deleteProject"
    first_delete = ops.index("apps.deleteApp")
    assert all(not op.endswith(("deleteApp", "deleteProject")) for op in ops[:first_delete])


def test_a_domain_moving_between_environments_is_deleted_before_it_is_created() -> None:
    host = "shop.example.com"
    plan = plan_of(
        domain("shop", "web", "preview", host),
        domain("shop", "web", "production", host, Action.DELETE),
    )
    platform = FakePlatform(latency=0.001)
    assert run(plan, platform).complete
    assert platform.operations() == ["domains.deleteDomain", "domains.createDomain"]


def test_a_dependency_cycle_is_refused_before_anything_is_sent() -> None:
    first = Change(
        "settings.s/a/production",
        "settings",
        Action.UPDATE,
        {},
        {},
        calls=(call("environments.updateSettings", {}),),
        depends_on=("policies.s/a/production",),
    )
    second = Change(
        "policies.s/a/production",
        "policies",
        Action.UPDATE,
        {},
        {},
        calls=(call("gateway.setPolicies", {}),),
        depends_on=("settings.s/a/production",),
    )
    with pytest.raises(ApplyRefused, match="cycle"):
        CallGraph(plan_of(first, second))


def test_depth_counts_the_longest_chain_of_calls() -> None:
    graph = CallGraph(plan_of(project_create("shop"), new_app_changes("shop", "web")))
    # createProject -> createApp -> settings -> variables -> policies
    assert graph.depth() == 5
    assert len(graph.nodes) == 5


# --- concurrency ----------------------------------------------------------------


@pytest.mark.parametrize("parallelism", [1, 3, 8])
def test_calls_in_flight_never_exceed_parallelism(parallelism: int) -> None:
    plan = plan_of(*(new_app_changes("shop", f"app{i}") for i in range(12)))
    platform = FakePlatform(latency=0.002)
    assert run(plan, platform, parallelism=parallelism).complete
    assert platform.max_in_flight == parallelism


# --- failures -------------------------------------------------------------------


def test_a_failed_create_skips_its_dependents_and_spares_independent_work() -> None:
    def fail(operation: str, body: Any, attempt: int) -> Any:
        if operation == "apps.createApp" and body["slug"] == "broken":
            return Conflict(
                'apps.createApp: app "broken" already exists in project "shop" (409)',
                operation=operation,
                status=409,
            )
        return None

    plan = plan_of(new_app_changes("shop", "broken"), new_app_changes("shop", "fine"))
    platform = FakePlatform(fail=fail)
    result = run(plan, platform)

    by_address = {r.change.address: r for r in result.results}
    assert not result.complete
    failed = by_address["app.shop/broken"]
    assert failed.outcome is Outcome.FAILED
    assert failed.error == 'apps.createApp: app "broken" already exists in project "shop" (409)'
    for address in ("settings.shop/broken/production", "policies.shop/broken/production"):
        assert by_address[address].outcome is Outcome.SKIPPED
        assert by_address[address].blocked_by == ("app.shop/broken",)
    assert by_address["variable.shop/broken/production/K1"].outcome is Outcome.SKIPPED
    assert all(
        r.outcome is Outcome.DONE
        for a, r in by_address.items()
        if a.startswith(
            ("app.shop/fine", "settings.shop/fine", "variable.shop/fine", "policies.shop/fine")
        )
    )
    assert not any(body.get("app") == "broken" for _, body in platform.log)


def test_a_failed_phase_does_not_skip_later_phases_of_the_environment() -> None:
    def fail(operation: str, body: Any, attempt: int) -> Any:
        if operation == "environments.updateSettings":
            return server_error(operation)
        return None

    plan = plan_of(settings("s", "a", "production"), policies("s", "a", "production"))
    result = run(plan, FakePlatform(fail=fail))
    assert outcomes(result) == {
        "settings.s/a/production": Outcome.FAILED,
        "policies.s/a/production": Outcome.DONE,
    }


def test_a_failed_batch_fails_exactly_the_variables_it_carried() -> None:
    keys = [f"K{i:02}" for i in range(60)]

    def fail(operation: str, body: Any, attempt: int) -> Any:
        if operation == "environments.setEnvironmentVariables" and len(body["variables"]) == 10:
            return server_error(operation)
        return None

    result = run(plan_of(variables("s", "a", "production", keys)), FakePlatform(fail=fail))
    state = outcomes(result)
    assert [k for k in keys if state[f"variable.s/a/production/{k}"] is Outcome.FAILED] == keys[50:]
    assert all(state[f"variable.s/a/production/{k}"] is Outcome.DONE for k in keys[:50])
    failed = result.with_outcome(Outcome.FAILED)
    assert all(
        r.error == "environments.setEnvironmentVariables: server error (500)" for r in failed
    )


def test_a_blocked_deletion_is_never_sent_and_leaves_apply_incomplete() -> None:
    plan = plan_of(app_delete("shop", "keep", Action.BLOCKED), settings("shop", "web", "preview"))
    platform = FakePlatform()
    result = run(plan, platform)
    assert "apps.deleteApp" not in platform.operations()
    assert outcomes(result)["app.shop/keep"] is Outcome.BLOCKED
    assert outcomes(result)["settings.shop/web/preview"] is Outcome.DONE
    assert not result.complete


def test_changes_that_need_a_blocked_change_are_skipped() -> None:
    blocked = app_delete("shop", "old", Action.BLOCKED)
    dependent = project_delete("shop")
    dependent = Change(**{**dependent.__dict__, "depends_on": ("app.shop/old",)})
    result = run(plan_of(blocked, dependent), platform := FakePlatform())
    assert platform.log == []
    skipped = result.with_outcome(Outcome.SKIPPED)
    assert [(r.change.address, r.blocked_by) for r in skipped] == [
        ("project.shop", ("app.shop/old",))
    ]


def test_a_protected_deletion_refused_by_the_platform_is_reported() -> None:
    def fail(operation: str, body: Any, attempt: int) -> Any:
        if operation == "apps.deleteApp":
            return PreconditionFailed(
                'apps.deleteApp: app "old" has delete protection on (412)',
                operation=operation,
                status=412,
            )
        return None

    result = run(plan_of(app_delete("shop", "old")), FakePlatform(fail=fail))
    [failed] = result.with_outcome(Outcome.FAILED)
    assert failed.calls[0].status == 412
    assert "delete protection" in (failed.error or "")


# --- creating exactly once -----------------------------------------------------


def test_an_ambiguous_create_that_took_effect_is_found_by_rereading() -> None:
    platform = FakePlatform(
        fail=lambda op, body, attempt: server_error(op) if op == "apps.createApp" else None,
        process_then_fail=True,
    )
    result = run(plan_of(new_app_changes("shop", "web")), platform)

    assert result.complete
    assert platform.operations().count("apps.createApp") == 1
    assert platform.index("apps.getApp", app="web") > platform.index("apps.createApp")
    created = next(r for r in result.results if r.change.address == "app.shop/web")
    assert created.calls[0].reread
    assert created.calls[0].data["appId"] == "app_web"
    assert platform.apps == {("shop", "web")}


def test_an_ambiguous_create_that_did_not_take_effect_is_sent_again() -> None:
    def fail(operation: str, body: Any, attempt: int) -> Any:
        return (
            server_error(operation)
            if operation == "projects.createProject" and attempt == 1
            else None
        )

    platform = FakePlatform(fail=fail)
    result = run(plan_of(project_create("shop")), platform)
    assert result.complete
    assert platform.operations() == [
        "projects.createProject",
        "projects.getProject",
        "projects.createProject",
    ]
    assert platform.projects == {"shop"}


def test_a_conflict_after_an_ambiguous_attempt_means_the_first_attempt_worked() -> None:
    # the first send times out before the platform commits; the re-read sees nothing; the
    # platform then commits; the second send gets 409: the object is ours, found by re-reading
    platform = FakePlatform()
    sends = 0

    async def flaky_call(operation: str, body: Any) -> Any:
        nonlocal sends
        if operation == "domains.createDomain":
            sends += 1
            if sends == 1:
                raise server_error(operation)
            if sends == 2:
                platform.domains.add(body["domain"])
                raise Conflict("in use", operation=operation, status=409)
        return await FakePlatform.call(platform, operation, body)

    platform.call = flaky_call  # type: ignore[method-assign]
    result = run(plan_of(domain("s", "a", "production", "x.example.com")), platform)
    assert result.complete
    assert sends == 2


def test_ambiguous_creates_are_retried_a_bounded_number_of_times() -> None:
    platform = FakePlatform(
        fail=lambda op, body, attempt: server_error(op) if op == "apps.createApp" else None
    )
    result = run(plan_of(app_create("shop", "web", depends=False)), platform, create_attempts=3)
    assert platform.operations().count("apps.createApp") == 3
    assert not result.complete
    assert result.with_outcome(Outcome.FAILED)[0].error == "apps.createApp: server error (500)"


def test_an_unambiguous_create_failure_is_not_retried() -> None:
    platform = FakePlatform(
        fail=lambda op, body, attempt: NotFound("no project", operation=op, status=404)
    )
    run(plan_of(app_create("ghost", "web", depends=False)), platform)
    assert platform.operations() == ["apps.createApp"]


# --- secrets and safety --------------------------------------------------------


def test_secrets_are_resolved_only_in_the_sent_body() -> None:
    changes = variables("s", "a", "production", ["TOKEN"], value=secret("PRESENT"))
    plan = plan_of(changes)
    platform = FakePlatform()
    result = run(plan, platform)
    assert platform.log[0][1]["variables"][0]["value"] == SECRET_VALUE
    assert SECRET_VALUE not in repr(result)
    assert SECRET_VALUE not in repr(plan)


def test_a_secret_the_plan_could_not_fingerprint_is_fingerprinted_when_sent() -> None:
    late = variables("s", "a", "production", ["TOKEN"], value=secret("PRESENT"))
    items = late[0].calls[0].body["variables"]
    items[0]["kind"] = "writeonly"
    items[0]["description"] = "payment key"
    platform = FakePlatform()
    run(plan_of(late), platform, fingerprint_key=b"key")
    sent = platform.log[0][1]["variables"][0]
    assert sent["description"] == with_fingerprint(
        "payment key", fingerprint(b"key", "variable.s/a/production/TOKEN", Secret(SECRET_VALUE))
    )
    assert items[0]["description"] == "payment key"  # the plan itself is left as it was


def test_a_missing_secret_is_refused_naming_its_source() -> None:
    plan = plan_of(variables("s", "a", "production", ["TOKEN"], value=secret("MISSING")))
    with pytest.raises(ApplyRefused) as refused:
        check_safety(plan, max_deletes=10, allow_replace=False, resolve=resolve)
    assert "variable.s/a/production/TOKEN: secret fromEnv:MISSING is not available" in str(
        refused.value
    )


def test_too_many_deletions_are_refused() -> None:
    plan = plan_of(variable_removals("s", "a", "production", [f"K{i}" for i in range(11)]))
    with pytest.raises(ApplyRefused, match="deletes 11 objects, more than --max-deletes 10"):
        check_safety(plan, max_deletes=10, allow_replace=False, resolve=resolve)
    check_safety(plan, max_deletes=11, allow_replace=False, resolve=resolve)


def test_a_replace_needs_allow_replace() -> None:
    replace = Change(
        "app.s/a",
        "app",
        Action.REPLACE,
        {},
        {},
        calls=(call("apps.deleteApp", {}), call("apps.createApp", {"slug": "a"}, creates=True)),
    )
    with pytest.raises(ApplyRefused, match="--allow-replace"):
        check_safety(plan_of(replace), max_deletes=10, allow_replace=False, resolve=resolve)
    check_safety(plan_of(replace), max_deletes=10, allow_replace=True, resolve=resolve)


def app_replace() -> Change:
    """app.s/r replaced: deleted, then created again."""
    return Change(
        "app.s/r",
        "app",
        Action.REPLACE,
        {},
        {},
        calls=(
            call("apps.deleteApp", {"project": "s", "app": "r"}),
            call("apps.createApp", {"project": "s", "slug": "r"}, creates=True),
        ),
    )


# --- summary ----------------------------------------------------------------------


def test_counts_follow_terraform() -> None:
    replace = app_replace()
    plan = plan_of(
        project_create("s"),
        settings("s", "a", "production"),
        replace,
        app_delete("s", "gone"),
        variable_removals("s", "a", "production", ["X", "Y"]),
    )
    result = run(plan, FakePlatform())
    assert result.complete
    assert result.counts() == (2, 1, 4)


def test_new_domains_carry_their_dns_records() -> None:
    result = run(plan_of(domain("s", "a", "production", "shop.example.com")), FakePlatform())
    [new] = result.new_domains()
    assert new.host == "shop.example.com"
    assert new.dns_records[0]["type"] == "CNAME"


def test_an_updated_parent_orders_its_children_but_its_failure_does_not_skip_them() -> None:
    def fail(operation: str, body: Any, attempt: int) -> Any:
        return server_error(operation) if operation == "apps.updateApp" else None

    rename_free_update = Change(
        "app.shop/web",
        "app",
        Action.UPDATE,
        {"name": "A"},
        {"name": "B"},
        calls=(call("apps.updateApp", {"project": "shop", "app": "web", "name": "B"}),),
    )
    platform = FakePlatform(fail=fail, latency=0.001)
    result = run(plan_of(settings("shop", "web", "production"), rename_free_update), platform)
    assert platform.operations() == ["apps.updateApp", "environments.updateSettings"]
    assert outcomes(result) == {
        "settings.shop/web/production": Outcome.DONE,
        "app.shop/web": Outcome.FAILED,
    }


def test_a_batched_secret_is_refused_under_its_own_address() -> None:
    changes = variables("s", "a", "production", ["PLAIN", "TOKEN"])
    changes[0].calls[0].body["variables"][1]["value"] = secret("MISSING")
    with pytest.raises(
        ApplyRefused, match=r"variable\.s/a/production/TOKEN: secret fromEnv:MISSING"
    ):
        check_safety(plan_of(changes), max_deletes=10, allow_replace=False, resolve=resolve)


def test_a_replace_waits_out_the_background_cleanup_of_the_deleted_app() -> None:
    def fail(operation: str, body: Any, attempt: int) -> Any:
        if operation == "apps.createApp" and attempt <= 2:
            return Conflict(
                'apps.createApp: app "r" conflicts (409)', operation=operation, status=409
            )
        return None

    replace = app_replace()
    platform = FakePlatform(fail=fail)
    result = run(plan_of(replace), platform)
    assert result.complete
    assert platform.operations() == ["apps.deleteApp"] + ["apps.createApp"] * 3


def test_a_conflict_on_a_plain_create_is_reported_at_once() -> None:
    platform = FakePlatform(
        fail=lambda op, body, attempt: Conflict("taken (409)", operation=op, status=409)
    )
    result = run(plan_of(app_create("s", "taken", depends=False)), platform)
    assert platform.operations() == ["apps.createApp"]
    assert result.with_outcome(Outcome.FAILED)[0].error == "taken (409)"
