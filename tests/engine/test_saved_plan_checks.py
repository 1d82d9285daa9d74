"""`check_saved_plan`: every refusal names the variables (addresses) it concerns and says what
happened, so a reviewer knows whether a secret moved or the plan file was edited."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.apply import SecretResolver, check_saved_plan
from reconciler.errors import ApplyRefused, ReconcilerError
from reconciler.plan.changes import Action, Change, Plan, SecretRef, SecretSource, VariableDetail
from reconciler.plan.secrets import fingerprint
from reconciler.sensitive import Secret
from tests.engine.apply_plans import (
    call,
    domain,
    env_body,
    new_app_changes,
    plan_of,
    policies,
    project_create,
    variable_removals,
    variables,
)

KEY = b"fingerprint-key-for-unit-tests"
TOKEN = "variable.shop/web/production/TOKEN"


def _secret_change(value: str, *, action: Action = Action.UPDATE) -> Change:
    """TOKEN sent from `fromEnv SHOP_TOKEN`, fingerprinted as `value`."""
    ref = SecretRef("fromEnv:SHOP_TOKEN", fingerprint(KEY, TOKEN, Secret(value)))
    item = {"key": "TOKEN", "value": ref, "kind": "writeonly"}
    body = env_body("shop", "web", "production", variables=[item])
    return Change(
        TOKEN,
        "variable",
        action,
        {"key": "TOKEN"},
        {"key": "TOKEN"},
        calls=(call("environments.setEnvironmentVariables", body),),
        detail=VariableDetail(SecretSource("fromEnv", "SHOP_TOKEN")),
    )


def _every_kind() -> Plan:
    """A plan with a change of every resource kind (the variables' batch among them)."""
    return plan_of(
        project_create("shop"),
        new_app_changes("shop", "web", variable_count=3),
        variable_removals("shop", "web", "preview", ["OLD"]),
        policies("shop", "web", "preview"),
        domain("shop", "web", "production", "shop.example.com"),
    )


def _resolver(values: dict[str, str]) -> SecretResolver:
    def resolve(ref: SecretRef) -> Secret:
        name = ref.source.partition(":")[2]
        if name not in values:
            raise ReconcilerError(f"the environment variable {name} is not set")
        return Secret(values[name])

    return resolve


def _rebuilt(current: Plan) -> Plan:
    """`current` as the plan rebuilt from a manifest that declares TOKEN's source."""
    return dataclasses.replace(current, declared_secrets={TOKEN: "fromEnv:SHOP_TOKEN"})


def _refusal(saved: Plan, current: Plan, values: dict[str, str], key: bytes | None = KEY) -> str:
    with pytest.raises(ApplyRefused) as refused:
        check_saved_plan(saved, _rebuilt(current), resolve=_resolver(values), fingerprint_key=key)
    return str(refused.value)


@given(data=st.data())
def test_an_edited_call_of_any_kind_is_refused_naming_its_address(data: st.DataObject) -> None:
    current = _every_kind()
    carriers = [c for c in current.changes if c.calls]
    target = data.draw(st.sampled_from(carriers))
    edit = data.draw(st.sampled_from(["drop", "body", "action"]))
    if edit == "drop":
        changes = tuple(c for c in current.changes if c is not target)
    else:
        first = target.calls[0]
        edited = dataclasses.replace(first, body={**first.body, "edited": True})
        replacement = (
            dataclasses.replace(target, calls=(edited, *target.calls[1:]))
            if edit == "body"
            else dataclasses.replace(target, action=Action.REPLACE)
        )
        changes = tuple(replacement if c is target else c for c in current.changes)
    message = _refusal(dataclasses.replace(current, changes=changes), current, {})
    named = message.partition("the saved plan's calls for ")[2].partition(" differ")[0]
    assert target.address in named.split(", ")  # a dropped batch names each variable it sent
    assert "was edited after it was saved" in message
    assert "secrets changed" not in message


def test_a_secret_rotated_since_the_plan_is_named_with_its_source() -> None:
    saved = plan_of(_secret_change("reviewed"))
    message = _refusal(saved, saved, {"SHOP_TOKEN": "rotated"})
    assert f"{TOKEN}: the value of fromEnv SHOP_TOKEN changed since the plan was saved" in message
    assert "rotated" not in message and "reviewed" not in message  # no value, ever


def test_a_secret_the_plan_leaves_alone_but_that_changed_is_named() -> None:
    """The saved plan does not touch TOKEN; the plan rebuilt now updates it (its value no longer
    matches the platform's fingerprint): the secret changed, the file was not edited."""
    message = _refusal(plan_of(), plan_of(_secret_change("new")), {"SHOP_TOKEN": "new"})
    assert f"{TOKEN}: the value of fromEnv SHOP_TOKEN changed since the plan was saved" in message
    assert "no longer matches the fingerprint on the platform" in message
    assert "edited" not in message


def test_a_secret_the_plan_updates_that_now_matches_the_platform_is_named() -> None:
    message = _refusal(plan_of(_secret_change("old")), plan_of(), {"SHOP_TOKEN": "old"})
    assert f"{TOKEN}: the value of fromEnv SHOP_TOKEN changed since the plan was saved" in message
    assert "the plan's update is outdated" in message


def test_a_secret_missing_now_is_named_as_missing_not_as_a_key_problem() -> None:
    message = _refusal(plan_of(), plan_of(_secret_change("any")), {})
    assert f"{TOKEN}: the environment variable SHOP_TOKEN is not set" in message
    assert "RECONCILER_FINGERPRINT_KEY" not in message and "edited" not in message


def test_a_missing_fingerprint_key_names_the_secrets_it_cannot_check() -> None:
    saved = plan_of(_secret_change("reviewed"))
    message = _refusal(saved, saved, {"SHOP_TOKEN": "reviewed"}, key=None)
    assert "RECONCILER_FINGERPRINT_KEY is not set now" in message
    assert TOKEN in message


def test_a_plan_saved_before_sources_were_recorded_still_names_the_variable() -> None:
    old = dataclasses.replace(_secret_change("reviewed"), detail=None)
    message = _refusal(plan_of(old), plan_of(old), {"SHOP_TOKEN": "rotated"})
    assert f"{TOKEN}: the value of fromEnv:SHOP_TOKEN changed" in message


def test_an_unchanged_plan_passes() -> None:
    saved = plan_of(_every_kind().changes[0], _secret_change("same"))
    resolve = _resolver({"SHOP_TOKEN": "same"})
    check_saved_plan(saved, _rebuilt(saved), resolve=resolve, fingerprint_key=KEY)


@pytest.mark.parametrize("declared", [None, "fromEnv:SHOP_OTHER"])
def test_a_secret_the_manifest_does_not_declare_for_its_variable_is_read_never(
    declared: str | None,
) -> None:
    saved = plan_of(_secret_change("reviewed"))
    current = dataclasses.replace(saved, declared_secrets={TOKEN: declared} if declared else {})
    read: list[SecretRef] = []

    def resolve(ref: SecretRef) -> Secret:
        read.append(ref)
        return Secret("reviewed")

    with pytest.raises(ApplyRefused) as refused:
        check_saved_plan(saved, current, resolve=resolve, fingerprint_key=KEY)
    shown = declared or "no secret source"
    assert (
        f"{TOKEN}: the saved plan sends fromEnv:SHOP_TOKEN, but the manifest declares {shown}"
    ) in str(refused.value)
    assert read == []


def test_a_batch_that_lost_a_secret_now_matching_the_platform_names_that_secret_alone() -> None:
    """The saved batch sends NODE_ENV and TOKEN; rebuilt now, TOKEN matches the platform, so
    the batch sends NODE_ENV alone: NODE_ENV was not edited, TOKEN's plan is outdated."""
    node_env = {"key": "NODE_ENV", "value": "production", "kind": "recoverable"}
    token = {"key": "TOKEN", "value": SecretRef("fromEnv:SHOP_TOKEN"), "kind": "writeonly"}

    def batch(*items: dict[str, object]) -> Change:
        body = env_body("shop", "web", "production", variables=list(items))
        return Change(
            "variable.shop/web/production/NODE_ENV",
            "variable",
            Action.UPDATE,
            {},
            {},
            calls=(call("environments.setEnvironmentVariables", body),),
        )

    carried = dataclasses.replace(_secret_change("old"), calls=(), depends_on=(batch().address,))
    saved, current = plan_of(batch(node_env, token), carried), plan_of(batch(node_env))
    message = _refusal(saved, current, {"SHOP_TOKEN": "old"})
    assert "NODE_ENV" not in message
    assert f"{TOKEN}: " in message and "the plan's update is outdated" in message


def test_a_field_added_beside_a_variables_batch_is_refused_naming_each_variable() -> None:
    """What a batch sends is compared per variable; a field added to the batch's body goes
    with every variable's part, so the edit cannot hide behind the split."""
    current = plan_of(variables("shop", "web", "production", ["A", "B"]))
    carrier = current.changes[0]
    batch = carrier.calls[0]
    edited = dataclasses.replace(batch, body={**batch.body, "variable": {"key": "X", "value": "1"}})
    saved = dataclasses.replace(
        current,
        changes=(dataclasses.replace(carrier, calls=(edited,)), *current.changes[1:]),
    )
    message = _refusal(saved, current, {})
    named = message.partition("the saved plan's calls for ")[2].partition(" differ")[0]
    assert named.split(", ") == [
        "variable.shop/web/production/A",
        "variable.shop/web/production/B",
    ]
