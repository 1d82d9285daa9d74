"""variables.py: per-variable changes, batched calls, secrets never shown."""

from __future__ import annotations

import asyncio

import pytest

from reconciler.errors import UnexpectedResponse
from reconciler.manifest.model import Environment, FromEnv, LiteralValue, Variable
from reconciler.plan import secrets
from reconciler.plan.changes import ABSENT, SENSITIVE, UNKNOWN, Action, SecretRef
from reconciler.plan.kinds.base import Location
from reconciler.plan.kinds.variables import (
    KIND,
    READ_OPERATION,
    LiveVariable,
    live_variables,
    plan_variables,
    unknown_of,
)
from reconciler.sensitive import Secret

REF = Location("proj_12345678", "app_12345678", "production", "env_12345678")


def literal(key, value, kind="recoverable", **kw):
    return Variable(key, LiteralValue(value), kind, **kw)


def from_env(key, name, kind="writeonly", **kw):
    return Variable(key, FromEnv(name), kind, **kw)


def plan(variables, live, *, prune=True, key=None):
    environment = Environment("production", variables=tuple(variables))
    return plan_variables(
        "shop", "web", environment, live_variables(READ_OPERATION, live), REF,
        prune=prune, fingerprint_key=key,
    )  # fmt: skip


def test_recoverable_values_compare_directly_and_description_is_kept_when_unmanaged():
    live = [
        {"key": "A", "kind": "recoverable", "value": "1", "description": "note", "createdAt": 1}
    ]
    assert plan([literal("A", "1")], live).changes == []
    (change,) = plan([literal("A", "2")], live).changes
    assert change.action is Action.UPDATE
    item = change.calls[0].body["variables"][0]
    assert item == {"key": "A", "value": "2", "kind": "recoverable", "description": "note"}
    assert [(d.path, d.before, d.after) for d in change.diffs] == [("value", "1", "2")]


def test_create_update_delete_and_prune_off():
    live = [{"key": "OLD", "kind": "recoverable", "value": "x"}]
    result = plan([literal("NEW", "v")], live)
    actions = {c.address.rsplit("/", 1)[1]: c.action for c in result.changes}
    assert actions == {"NEW": Action.CREATE, "OLD": Action.DELETE}
    remove = next(c for c in result.changes if c.action is Action.DELETE).calls[0]
    assert remove.operation.name == "environments.removeEnvironmentVariables"
    assert remove.body["variables"] == ["OLD"]
    assert remove.permission == "environment.env_12345678.remove_environment_variables"
    assert [c.action for c in plan([literal("NEW", "v")], live, prune=False).changes] == [
        Action.CREATE
    ]


def test_batches_of_fifty_each_call_once_and_the_rest_depend_on_the_carrier():
    result = plan([literal(f"K{i}", "v") for i in range(120)], [])
    carriers = [c for c in result.changes if c.calls]
    assert [len(c.calls[0].body["variables"]) for c in carriers] == [50, 50, 20]
    assert all("prune" not in c.calls[0].body for c in carriers)
    for change in result.changes:
        if not change.calls:
            assert len(change.depends_on) == 1
            assert change.depends_on[0] in {c.address for c in carriers}


def test_write_only_values_travel_as_references_and_are_never_shown(monkeypatch):
    monkeypatch.setenv("PLAN_VAR_SECRET", "the-secret-value")
    (change,) = plan([from_env("TOKEN", "PLAN_VAR_SECRET")], []).changes
    item = change.calls[0].body["variables"][0]
    assert item["value"] == SecretRef("fromEnv:PLAN_VAR_SECRET", None)
    assert change.after["value"] == SENSITIVE
    value = next(d for d in change.diffs if d.path == "value")
    assert value.sensitive and value.after == SENSITIVE and value.before is ABSENT
    assert "the-secret-value" not in repr(change)


def test_a_write_only_literal_is_a_manifest_reference():
    (change,) = plan([literal("PIN", "pin-value-x9", kind="writeonly")], []).changes
    ref = change.calls[0].body["variables"][0]["value"]
    assert ref.source == "manifest:variable.shop/web/production/PIN"
    assert secrets.resolve_ref(ref).reveal() == "pin-value-x9"
    assert "pin-value-x9" not in repr(change)


def test_missing_secret_is_known_after_apply_and_reported(monkeypatch):
    monkeypatch.delenv("PLAN_VAR_MISSING", raising=False)
    result = plan([from_env("TOKEN", "PLAN_VAR_MISSING")], [])
    (change,) = result.changes
    assert change.after["value"] == UNKNOWN
    assert next(d for d in change.diffs if d.path == "value").known_after_apply
    assert result.missing_sources == [
        "fromEnv PLAN_VAR_MISSING (variable.shop/web/production/TOKEN)"
    ]


def test_without_key_write_only_compares_by_presence_and_kind(monkeypatch):
    monkeypatch.setenv("PLAN_VAR_SECRET", "new")
    live = [{"key": "TOKEN", "kind": "writeonly"}]
    result = plan([from_env("TOKEN", "PLAN_VAR_SECRET")], live)
    assert result.changes == []
    assert result.compared_by_presence == ["variable.shop/web/production/TOKEN"]


def test_kind_change_is_an_update(monkeypatch):
    live = [{"key": "A", "kind": "recoverable", "value": "1"}]
    (change,) = plan([literal("A", "1", kind="writeonly")], live).changes
    assert change.action is Action.UPDATE
    assert ("kind", "recoverable", "writeonly") in [
        (d.path, d.before, d.after) for d in change.diffs
    ]
    # the live value is readable, but once a secret it is not shown any more
    assert change.before["value"] == SENSITIVE


def test_with_key_fingerprints_decide_and_the_description_carries_the_new_one(monkeypatch):
    key = b"fingerprint-key"
    monkeypatch.setenv("PLAN_VAR_SECRET", "v1")
    address = "variable.shop/web/production/TOKEN"
    fp = secrets.fingerprint(key, address, Secret("v1"))
    live = [
        {"key": "TOKEN", "kind": "writeonly", "description": secrets.with_fingerprint("tok", fp)}
    ]
    desired = [from_env("TOKEN", "PLAN_VAR_SECRET", description="tok")]
    assert plan(desired, live, key=key).changes == []
    monkeypatch.setenv("PLAN_VAR_SECRET", "v2")
    (change,) = plan(desired, live, key=key).changes
    new_fp = secrets.fingerprint(key, address, Secret("v2"))
    item = change.calls[0].body["variables"][0]
    assert item["description"] == secrets.with_fingerprint("tok", new_fp)
    assert item["value"].fingerprint == new_fp
    # the marker is not part of the description the user sees
    assert change.after["description"] == "tok"


def test_with_key_a_first_form_fingerprint_is_replaced_once_whatever_the_value(monkeypatch):
    """A description written before fingerprints were bound to the address: the plan does not
    compare it (that would compare a value with one at another address), it sends the value
    once more with the new form, and says so; the next plan compares the new form."""
    key = b"fingerprint-key"
    monkeypatch.setenv("PLAN_VAR_SECRET", "v1")
    old = secrets.with_fingerprint("tok", "0123456789abcdef").replace("[fp2:", "[fp:")
    live = [{"key": "TOKEN", "kind": "writeonly", "description": old}]
    desired = [from_env("TOKEN", "PLAN_VAR_SECRET", description="tok")]
    (change,) = plan(desired, live, key=key).changes
    assert change.reason == "fingerprint_first_form"
    assert "first form" in change.notes[0]
    assert [d.path for d in change.diffs] == ["value"]
    sent = change.calls[0].body["variables"][0]["description"]
    assert sent.startswith("tok [fp2:") and "[fp:" not in sent
    assert plan(desired, [{**live[0], "description": sent}], key=key).changes == []
    # without the key, the first form is a description's end like the new one: no change
    assert plan(desired, live).changes == []


def test_without_key_a_recoverable_value_read_from_a_source_is_not_read(monkeypatch):
    monkeypatch.setenv("PLAN_VAR_SECRET", "new")
    live = [{"key": "TOKEN", "kind": "recoverable", "value": "old"}]
    desired = [from_env("TOKEN", "PLAN_VAR_SECRET", kind="recoverable")]
    result = plan(desired, live)
    assert result.changes == []
    assert result.compared_by_presence == ["variable.shop/web/production/TOKEN"]
    (change,) = plan(desired, live, key=b"k").changes
    assert [d.path for d in change.diffs] == ["value"]


def test_with_key_a_value_set_without_a_fingerprint_is_sent_again(monkeypatch):
    monkeypatch.setenv("PLAN_VAR_SECRET", "v1")
    live = [{"key": "TOKEN", "kind": "writeonly"}]
    (change,) = plan([from_env("TOKEN", "PLAN_VAR_SECRET")], live, key=b"k").changes
    assert change.reason == "fingerprint_missing"


def test_variables_of_a_new_app_are_creates_without_reads():
    environment = Environment("production", variables=(literal("A", "1"),))
    result = plan_variables("shop", "web", environment, None, Location("shop", "web", "production"),
                            prune=True, fingerprint_key=None)  # fmt: skip
    (change,) = result.changes
    assert change.action is Action.CREATE
    assert change.calls[0].permission == "environment.*.set_environment_variables"


def test_an_empty_description_is_no_description():
    live = [{"key": "A", "kind": "recoverable", "value": "1"}]
    assert plan([literal("A", "1", description="")], live).changes == []
    (change,) = plan(
        [literal("A", "1", description="")], [{**live[0], "description": "old"}]
    ).changes
    assert [(d.path, d.before, d.after) for d in change.diffs] == [("description", "old", None)]


# --- what `read` parses ----------------------------------------------------------------------


class _Answering:
    """A platform whose listing of variables answers `items`."""

    def __init__(self, items):
        self.items = items

    async def list_all(self, operation, body, *, object_id=None):
        assert operation == READ_OPERATION
        return self.items


def _read(items):
    return asyncio.run(KIND.read(_Answering(items), REF))


def test_read_parses_each_variable_keeping_the_whole_answer():
    sealed = {"key": "S", "kind": "sealed", "ttl": 5, "createdAt": 3.0}
    found = _read([{"key": "A", "kind": "recoverable", "value": "1", "description": "d"}, sealed])
    assert found == (
        LiveVariable(
            "A", "recoverable", "1", "d",
            {"key": "A", "kind": "recoverable", "value": "1", "description": "d"},
        ),
        LiveVariable("S", "sealed", None, None, sealed),
    )  # fmt: skip
    # a kind the spec does not document is accepted, and with unknown members, reported
    assert unknown_of(found[1]) == ("kind 'sealed'", "ttl")


@pytest.mark.parametrize(
    ("item", "refused"),
    [
        ({"kind": "recoverable"}, "without a `key` string"),
        ({"key": 7, "kind": "recoverable"}, "without a `key` string"),
        ({"key": "", "kind": "recoverable"}, "without a `key` string"),
        ({"key": "A"}, "without a `kind` string"),
        ({"key": "A", "kind": ["recoverable"]}, "without a `kind` string"),
        ({"key": "A", "kind": "recoverable", "value": 1}, r"data\[1\]\.value is not a string"),
        ({"key": "A", "kind": "writeonly", "value": None}, r"data\[1\]\.value is not a string"),
        ({"key": "A", "kind": "writeonly", "description": {}}, "description is not a string"),
        ({"key": "A", "kind": "writeonly", "createdAt": "1"}, "createdAt is not an integer"),
    ],
)
def test_a_malformed_variable_is_an_unexpected_response_naming_the_operation(item, refused):
    with pytest.raises(UnexpectedResponse, match=refused) as raised:
        _read([{"key": "OK", "kind": "writeonly"}, item])
    assert raised.value.operation == READ_OPERATION
    assert str(raised.value).startswith(f"{READ_OPERATION}: ")
