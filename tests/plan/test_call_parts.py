"""`Kind.call_parts`: what a call sends for each change it decides, the unit apply's checks of
a saved plan compare and find secrets in. Nothing a call sends may fall outside its parts (an
edit there would go unseen), and a batch the planner makes is split exactly where its kind's
`batch_keys` says it decides other changes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from reconciler.apply import ApplyOptions, execute, secret_refs
from reconciler.emulator.app import EmulatorConfig, create_app
from reconciler.manifest.validate import load_manifest
from reconciler.plan import kinds
from reconciler.plan.changes import Call, Change, Plan, SecretRef
from reconciler.plan.kinds.variables import SET_OPERATION
from reconciler.plan.planner import PlanOptions, build_plan
from reconciler.plan.secrets import resolve_ref
from reconciler.platform.client import PlatformClient
from tests.engine.apply_plans import call as make_call
from tests.engine.apply_plans import (
    domain,
    env_body,
    new_app_changes,
    plan_of,
    policies,
    project_create,
    secret,
    variable_removals,
    variables,
)

KEY = "call-parts-key"


def variables_of(names: list[str]) -> list[Change]:
    return variables("shop", "web", "production", names)


variable_names = st.lists(
    st.from_regex(r"[A-Z][A-Z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=120
)


def _every_kind(names: list[str], secret_keys: set[str]) -> Plan:
    return plan_of(
        project_create("shop"),
        new_app_changes("shop", "other"),
        variables("shop", "web", "production", names, secrets=secret_keys),
        variable_removals("shop", "web", "preview", names),
        policies("shop", "web", "preview"),
        domain("shop", "web", "production", "shop.example.com"),
    )


def _refs(value: Any) -> list[int]:
    if isinstance(value, SecretRef):
        return [id(value)]
    if isinstance(value, dict):
        return [i for item in value.values() for i in _refs(item)]
    if isinstance(value, (list, tuple)):
        return [i for item in value for i in _refs(item)]
    return []


def _check_parts(change: Change, call: Call) -> None:
    """The parts give back the whole call, and split it where `batch_keys` says it decides
    other changes: one part per variable, each with every other field of the call."""
    kind = kinds.get(change.kind)
    parts = list(kind.call_parts(change, call))
    decided = kind.batch_keys(call)
    if not decided:
        assert parts == [(change.address, call.body)]
        return
    environment = change.address.rsplit("/", 1)[0]
    assert sorted(address for address, _ in parts) == sorted(f"{environment}/{k}" for k in decided)
    assert [item for _, part in parts for item in part["variables"]] == list(call.body["variables"])
    for _, part in parts:
        assert {**part, "variables": call.body["variables"]} == call.body


@given(names=variable_names.map(lambda k: list(dict.fromkeys(k))), data=st.data())
def test_every_call_of_every_kind_is_sent_whole_by_its_parts(
    names: list[str], data: st.DataObject
) -> None:
    secret_keys = set(data.draw(st.lists(st.sampled_from(names), unique=True)))
    plan = _every_kind(names, secret_keys)
    assert {c.kind for c in plan.changes} == set(kinds.names())
    for change in plan.changes:
        for call in change.calls:
            _check_parts(change, call)
            parts = kinds.get(change.kind).call_parts(change, call)
            assert sorted(i for _, part in parts for i in _refs(part)) == sorted(_refs(call.body))
    # each secret is named under its own variable, whichever change carries its batch
    owners = {address: ref.source for address, ref in secret_refs(plan)}
    assert owners == {f"variable.shop/web/production/{k}": f"fromEnv:{k}" for k in secret_keys}


@pytest.mark.parametrize(
    ("operation", "variables"),
    [
        ("environments.updateSettings", [{"key": "A", "value": secret("A")}]),  # not a batch
        ("environments.setEnvironmentVariables", []),
        ("environments.setEnvironmentVariables", {"key": "A", "value": secret("A")}),
        ("environments.removeEnvironmentVariables", "A"),
    ],
)
def test_a_call_no_batch_decides_is_one_part_holding_all_it_sends(
    operation: str, variables: Any
) -> None:
    """A saved plan is untrusted input: a variable's call that is not a well-formed batch is
    compared, and has its secrets found, whole."""
    body = env_body("shop", "web", "production", variables=variables)
    change = variables_of(["A"])[0]
    call = make_call(operation, body)
    assert list(kinds.get("variable").call_parts(change, call)) == [(change.address, body)]


def test_a_field_beside_a_batch_is_in_every_part() -> None:
    body = env_body("shop", "web", "production", variables=[{"key": "A"}, {"key": "B"}])
    body["variable"] = {"key": "C", "value": secret("C")}
    change = variables_of(["A", "B"])[0]
    parts = list(kinds.get("variable").call_parts(change, make_call(SET_OPERATION, body)))
    assert [address for address, _ in parts] == [
        "variable.shop/web/production/A",
        "variable.shop/web/production/B",
    ]
    assert all(part["variable"] == body["variable"] for _, part in parts)


def _manifest(variables: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "version": 1,
            "projects": {
                "shop": {
                    "name": "Shop",
                    "apps": {
                        "web": {
                            "oci": {"image": "ghcr.io/acme/web:1"},
                            "environments": {"production": {"variables": variables}},
                        }
                    },
                }
            },
        }
    )


async def _planned_batches(tmp: Path) -> Plan:
    """The real planner's plan from 60 live variables (K0-K59) to 60 in the manifest (K30-K79
    and ten secrets): 60 sets, in batches of 50 and 10, and 30 removals in one batch."""
    before = {f"K{i}": "old" for i in range(60)}
    after: dict[str, Any] = {f"K{i}": "new" for i in range(30, 80)}
    after.update({f"S{i}": {"fromEnv": f"SHOP_S{i}"} for i in range(10)})
    app = create_app(EmulatorConfig(dev_key=KEY, seed=1))
    async with PlatformClient("http://local", KEY, transport=httpx.ASGITransport(app=app)) as c:
        live = await _plan(c, tmp / "before.yaml", before)
        await execute(live, c, resolve=resolve_ref, options=ApplyOptions())
        return await _plan(c, tmp / "after.yaml", after)


async def _plan(client: PlatformClient, path: Path, variables: dict[str, Any]) -> Plan:
    path.write_text(_manifest(variables), encoding="utf-8")
    return await build_plan(load_manifest([path]), client, PlanOptions(max_deletes=100))


def test_the_planners_batches_are_split_per_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(10):
        monkeypatch.setenv(f"SHOP_S{i}", f"secret-{i}")
    plan = asyncio.run(_planned_batches(tmp_path))
    batches = [
        (change, call)
        for change in plan.changes
        for call in change.calls
        if kinds.get(change.kind).batch_keys(call)
    ]
    assert sorted(len(call.body["variables"]) for _, call in batches) == [10, 30, 50]
    for change in plan.changes:
        for call in change.calls:
            _check_parts(change, call)
    owners = {address: ref.source for address, ref in secret_refs(plan)}
    assert owners == {f"variable.shop/web/production/S{i}": f"fromEnv:SHOP_S{i}" for i in range(10)}
