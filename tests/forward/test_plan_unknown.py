"""The plan and what it does not know: unknown members never make a change by themselves,
are kept or carried on writes, and a write that would remove them says so and is refused
before any write unless allowed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reconciler.errors import ApplyRefused, UnexpectedResponse
from reconciler.manifest.model import (
    UNSET,
    Environment,
    Healthcheck,
    LiteralValue,
    Policy,
    Region,
    Runtime,
    Variable,
    freeze,
)
from reconciler.pipeline import ApplyLimits, raise_if_unsafe
from reconciler.plan.changes import Plan
from reconciler.plan.json_form import plan_from_dict, plan_to_dict
from reconciler.plan.kinds.base import Location
from reconciler.plan.kinds.policies import (
    LivePolicy,
    PoliciesKind,
    plan_policies,
    read_policies,
    removed_unknowns,
)
from reconciler.plan.kinds.settings import plan_settings, read_environment, unmanaged_members
from reconciler.plan.kinds.variables import READ_OPERATION, live_variables, plan_variables
from reconciler.plan.planner import unmanaged_note

REF = Location("proj_1", "app_1", "production", "env_1")
DENY = {"action": "ACTION_DENY"}


def deny(name: str = "deny", **opaque: Any) -> Policy:
    return Policy(name, True, (), "firewall", freeze(DENY), opaque=freeze(opaque))


def policies(*listed: Policy) -> Environment:
    return Environment("production", policies=listed)


# --- policies --------------------------------------------------------------------------------


def test_members_only_the_live_list_has_make_no_change() -> None:
    live = [
        {"id": "pol_1", "name": "deny", "enabled": True, "firewall": {**DENY, "statusCode": 429}}
    ]
    assert plan_policies("shop", "web", policies(deny()), read_policies(live), REF) is None


def test_members_the_manifest_writes_are_compared_exactly() -> None:
    live = [{"name": "deny", "enabled": True, "firewall": {**DENY, "statusCode": 429}}]
    wanted = policies(deny(firewall={"statusCode": 403}))
    change = plan_policies("shop", "web", wanted, read_policies(live), REF)
    assert change is not None and not change.unknown_removed
    assert change.calls[0].body["policies"][0]["firewall"] == {**DENY, "statusCode": 403}


def test_a_change_that_drops_what_reconciler_does_not_know_names_it() -> None:
    live = [
        {"name": "limit", "enabled": True, "rateLimit": {"perMinute": 5}},
        {"name": "deny", "enabled": True, "firewall": {**DENY, "statusCode": 429}},
    ]
    change = plan_policies("shop", "web", policies(deny(), deny("other")), read_policies(live), REF)
    assert change is not None
    assert change.unknown_removed == (
        'policies[0] "limit": rateLimit',
        'policies[1] "deny": firewall.statusCode',
    )
    assert any("--allow-unknown-removal" in note for note in change.notes)
    kept = policies(deny(firewall={"statusCode": 429}), deny("other"))
    still = plan_policies("shop", "web", kept, read_policies(live), REF)
    assert still is not None and still.unknown_removed == ('policies[0] "limit": rateLimit',)


def test_a_policy_of_the_same_name_carries_the_unknown_members_wherever_it_is() -> None:
    before = [{"name": "a", "enabled": True, "match": [{"country": {"in": ["DE"]}}], "x": 1}]
    after = [{"name": "b", "enabled": True}, {"name": "a", "enabled": False, "x": 2,
              "match": [{"path": {"path": {"prefix": "/"}}}, {"country": {"in": ["FR"]}}]}]  # fmt: skip
    assert removed_unknowns(before, after) == ()


class _Listing:
    """A platform whose `gateway.listPolicies` answers `policies`."""

    def __init__(self, *policies: dict[str, Any]) -> None:
        self.policies = list(policies)

    async def list_all(self, operation: str, body: Any, **_: Any) -> list[dict[str, Any]]:
        assert operation == "gateway.listPolicies"
        return self.policies


def _read(*listed: dict[str, Any]) -> tuple[LivePolicy, ...]:
    return asyncio.run(PoliciesKind().read(_Listing(*listed), REF))


@pytest.mark.parametrize(
    "malformed",
    [
        {"name": 5, "enabled": True},
        {"enabled": True},
        {"name": "deny", "enabled": True, "match": {"path": {"path": {"prefix": "/"}}}},
        {"name": "deny", "enabled": True, "match": ["/admin"]},
        {"name": "deny", "enabled": "yes"},
        {"name": "deny", "enabled": True, "firewall": "ACTION_DENY"},
    ],
)
def test_a_malformed_policy_is_an_unexpected_response_naming_the_operation(
    malformed: dict[str, Any],
) -> None:
    with pytest.raises(UnexpectedResponse, match=r"^gateway\.listPolicies: ") as raised:
        _read({"name": "ok", "enabled": True, "firewall": DENY}, malformed)
    assert raised.value.operation == "gateway.listPolicies"


def test_a_policy_of_an_unknown_kind_is_read_whole_and_shown() -> None:
    limit = {"id": "pol_1", "name": "limit", "enabled": True, "rateLimit": {"perMinute": 5}}
    (read,) = _read(limit)
    assert (read.name, read.raw) == ("limit", limit)
    assert read.canonical == {"name": "limit", "enabled": True, "rateLimit": {"perMinute": 5}}
    change = plan_policies("shop", "web", policies(deny()), (read,), REF)
    assert change is not None and change.before == {"policies": [read.canonical]}
    assert change.unknown_removed == ('policies[0] "limit": rateLimit',)


def test_the_unknown_members_of_a_known_policy_are_read_and_kept() -> None:
    country = {"country": {"in": ["DE"]}}
    firewall = {**DENY, "statusCode": 429}
    deny_429 = {"name": "deny", "enabled": True, "match": [country], "firewall": firewall, "x": 1}
    (read,) = _read({"id": "pol_1", **deny_429})
    assert read.raw == {"id": "pol_1", **deny_429}
    assert read.canonical == deny_429


# --- settings --------------------------------------------------------------------------------

LIVE: dict[str, Any] = {
    "id": "env_1",
    "slug": "production",
    "tier": "gold",
    "runtime": {
        "port": 8080,
        "gpu": {"kind": "a100", "count": 1},
        "healthcheck": {"method": "GET", "path": "/h", "grpcService": "health"},
    },
    "build": {"cacheDir": ".cache"},
    "regions": [
        {"name": "fra", "replicas": {"min": 1, "max": 2, "burst": 3}, "zone": "a"},
        {"name": "iad", "replicas": {"min": 1, "max": 2}, "zone": "b"},
    ],
}


def settings(**fields: Any) -> Environment:
    return Environment("production", **fields)


def test_unknown_settings_members_make_no_change_and_are_reported() -> None:
    environment = settings(
        runtime=Runtime(port=8080, healthcheck=Healthcheck("GET", "/h")),
        regions=(Region("fra", 1, 2), Region("iad", 1, 2)),
    )
    assert plan_settings("shop", "web", environment, read_environment(LIVE), REF) is None
    assert unmanaged_members(environment, LIVE) == [
        "tier",
        "runtime.gpu",
        "runtime.healthcheck.grpcService",
        "build.cacheDir",
        "regions[fra].replicas.burst",
        "regions[fra].zone",
        "regions[iad].zone",
    ]


def test_whole_objects_are_sent_with_the_live_members_of_the_same_object() -> None:
    environment = settings(
        runtime=Runtime(healthcheck=Healthcheck("GET", "/new")),
        regions=(Region("iad", 1, 4), Region("fra", 2, 2)),
    )
    change = plan_settings("shop", "web", environment, read_environment(LIVE), REF)
    assert change is not None and not change.unknown_removed
    body = change.calls[0].body
    assert body["healthcheck"]["grpcService"] == "health"
    assert body["regions"] == [
        {"name": "iad", "replicas": {"min": 1, "max": 4}, "zone": "b"},
        {"name": "fra", "replicas": {"min": 2, "max": 2, "burst": 3}, "zone": "a"},
    ]
    assert "gpu" not in body and "tier" not in body  # updateSettings leaves them as they are


def test_opaque_members_are_compared_where_written_and_sent_merged() -> None:
    same = settings(runtime=Runtime(opaque=freeze({"gpu": {"kind": "a100"}})))
    assert plan_settings("shop", "web", same, read_environment(LIVE), REF) is None
    other = settings(
        opaque=freeze({"tier": "silver"}),
        runtime=Runtime(opaque=freeze({"gpu": {"kind": "h100"}})),
        regions=(Region("fra", 1, 2, freeze({"zone": "c"})), Region("iad", 1, 2)),
    )
    change = plan_settings("shop", "web", other, read_environment(LIVE), REF)
    assert change is not None
    body = change.calls[0].body
    assert body["gpu"] == {"kind": "h100", "count": 1}
    assert body["tier"] == "silver"
    assert body["regions"][0]["zone"] == "c"
    assert [d.path for d in change.diffs] == [
        "regions",
        "opaque.tier",
        "runtime.opaque.gpu.kind",
    ]


def test_clearing_the_health_check_or_dropping_a_region_names_what_goes_with_it() -> None:
    environment = settings(runtime=Runtime(healthcheck=None), regions=(Region("fra", 1, 2),))
    change = plan_settings("shop", "web", environment, read_environment(LIVE), REF)
    assert change is not None
    assert change.unknown_removed == (
        "runtime.healthcheck (cleared): grpcService",
        "regions[iad] (left out of the list): zone",
    )


# --- variables ---------------------------------------------------------------------------------


def test_a_variable_of_an_unknown_kind_is_never_pruned_and_replacing_it_says_so() -> None:
    live = live_variables(READ_OPERATION, [
        {"key": "SEALED", "kind": "sealed"},
        {"key": "OLD", "kind": "recoverable", "value": "1"},
    ])  # fmt: skip
    planned = plan_variables(
        "shop", "web", Environment("production", variables=()), live, REF,
        prune=True, fingerprint_key=None,
    )  # fmt: skip
    assert [c.address.rsplit("/", 1)[1] for c in planned.changes] == ["OLD"]
    assert planned.unmanaged == [("variable.shop/web/production/SEALED", "kind 'sealed'")]
    listed = Environment(
        "production", variables=(Variable("SEALED", LiteralValue("x"), "recoverable"),)
    )
    planned = plan_variables("shop", "web", listed, live, REF, prune=True, fingerprint_key=None)
    change = next(c for c in planned.changes if c.address.endswith("/SEALED"))
    assert change.unknown_removed == ("kind 'sealed'",)


# --- the plan: one note, the refusal, the JSON ---------------------------------------------------


def test_the_unmanaged_note_groups_a_few_by_address_then_counts() -> None:
    fields = [("settings.a", "x"), ("settings.a", "y"), ("policies.b", "p")] + [
        ("settings.c", f"m{i}") for i in range(5)
    ]
    note = unmanaged_note(fields)
    assert "8 unmanaged field(s)" in note.message
    assert "settings.a: x, y; policies.b: p; settings.c: m0, m1; and 3 more" in note.message


def test_apply_refuses_a_plan_that_removes_what_it_does_not_know_unless_allowed() -> None:
    live = [{"name": "limit", "enabled": True, "rateLimit": {"perMinute": 5}}]
    change = plan_policies("shop", "web", policies(deny()), read_policies(live), REF)
    assert change is not None
    plan = Plan((change,))
    with pytest.raises(ApplyRefused) as refused:
        raise_if_unsafe(plan, ApplyLimits())
    assert "policies.shop/web/production: policies[0]" in refused.value.message
    assert "--allow-unknown-removal" in (refused.value.hint or "")
    raise_if_unsafe(plan, ApplyLimits(allow_unknown_removal=True))
    assert plan_from_dict(plan_to_dict(plan)).changes[0].unknown_removed == change.unknown_removed
    assert "unknown_removed" not in plan_to_dict(Plan((plan_policies(
        "shop", "web", policies(deny()), [], REF),)))["changes"][0]  # fmt: skip


def test_unset_is_unmanaged() -> None:
    assert Environment("production").runtime is UNSET
