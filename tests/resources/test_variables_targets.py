"""plan_variables with `selected` (the `--target`s): batches are formed from the selected
variables only, so every call carries exactly the variables the plan shows as changes."""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.manifest.model import Environment, FromEnv, LiteralValue, Variable
from reconciler.plan.changes import Action, Change
from reconciler.plan.kinds.base import Location
from reconciler.plan.kinds.variables import (
    READ_OPERATION,
    LiveVariables,
    VariablesPlan,
    live_variables,
    plan_variables,
)
from reconciler.plan.targets import Scope

REF = Location("proj_12345678", "app_12345678", "production", "env_12345678")
ADDRESS = "variable.shop/web/production"
SET = "environments.setEnvironmentVariables"
REMOVE = "environments.removeEnvironmentVariables"


def keys(numbers: Iterable[int]) -> list[str]:
    return [f"V{i:03}" for i in numbers]


def answer(numbers: Iterable[int], value: str = "old") -> list[dict[str, str]]:
    return [{"key": key, "kind": "recoverable", "value": value} for key in keys(numbers)]


def live(numbers: Iterable[int], value: str = "old") -> LiveVariables:
    return live_variables(READ_OPERATION, answer(numbers, value))


def plan(variables: Iterable[Variable], current, *targets: str) -> VariablesPlan:
    environment = Environment("production", variables=tuple(variables))
    return plan_variables(
        "shop", "web", environment, current, REF, prune=True, fingerprint_key=None,
        selected=Scope.parse(targets).covers,
    )  # fmt: skip


def literals(numbers: Iterable[int], value: str = "new") -> list[Variable]:
    return [Variable(key, LiteralValue(value), "recoverable") for key in keys(numbers)]


def sent(changes: Iterable[Change]) -> list[tuple[str, list[str]]]:
    """(operation, keys or names in its body) for every call, in plan order."""
    return [
        (
            call.operation.name,
            [v["key"] if isinstance(v, dict) else v for v in call.body["variables"]],
        )
        for change in changes
        for call in change.calls
    ]


def short(change: Change) -> str:
    return change.address.rsplit("/", 1)[1]


def test_a_variable_targeted_alone_is_sent_alone_with_no_batch_note_or_dependency():
    # V120..V129 change and V000..V009 are gone: one set batch and one remove batch untargeted
    manifest = literals(range(10, 120), "old") + literals(range(120, 130))
    result = plan(manifest, live(range(130)), f"{ADDRESS}/V125", f"{ADDRESS}/V005")
    assert [(short(c), c.action) for c in result.changes] == [
        ("V125", Action.UPDATE),
        ("V005", Action.DELETE),
    ]
    assert sent(result.changes) == [(SET, ["V125"]), (REMOVE, ["V005"])]
    assert all(c.notes == () and c.depends_on == () for c in result.changes)


def test_targeted_variables_of_one_batch_share_one_call_in_manifest_order():
    targets = [f"{ADDRESS}/{key}" for key in ("V128", "V121", "V124")]
    result = plan(literals(range(130)), live(range(130)), *targets)
    assert sent(result.changes) == [(SET, ["V121", "V124", "V128"])]
    carrier, *rest = result.changes
    assert carrier.notes == (f"its {SET} call also sends 2 other variable(s) of this environment",)
    assert [c.depends_on for c in rest] == [(carrier.address,), (carrier.address,)]


def test_a_subtree_target_batches_its_variables_fifty_a_call():
    result = plan(literals(range(120)), live(range(120, 180)), ADDRESS)
    assert [(op, len(body)) for op, body in sent(result.changes)] == [
        (SET, 50), (SET, 50), (SET, 20), (REMOVE, 50), (REMOVE, 10),
    ]  # fmt: skip
    assert [key for op, body in sent(result.changes) if op == SET for key in body] == keys(
        range(120)
    )
    assert len(result.changes) == 180


def test_a_target_elsewhere_plans_nothing_here():
    result = plan(literals(range(3)), live(range(5, 8)), "variable.shop/web/preview")
    assert result.changes == []


def test_untargeted_variables_are_not_reported_as_missing_or_compared_by_presence(monkeypatch):
    monkeypatch.delenv("TARGETS_MISSING_SECRET", raising=False)
    manifest = [
        Variable("MISSING", FromEnv("TARGETS_MISSING_SECRET"), "writeonly"),
        Variable("TOKEN", LiteralValue("t"), "writeonly"),
        *literals([1]),
    ]
    current = live_variables(READ_OPERATION, [{"key": "TOKEN", "kind": "writeonly"}, *answer([1])])
    result = plan(manifest, current, f"{ADDRESS}/V001")
    assert result.missing_sources == [] and result.compared_by_presence == []
    everything = plan(manifest, current, ADDRESS)
    assert everything.missing_sources == [f"fromEnv TARGETS_MISSING_SECRET ({ADDRESS}/MISSING)"]
    assert everything.compared_by_presence == [f"{ADDRESS}/TOKEN"]


def test_without_targets_everything_is_selected():
    environment = Environment("production", variables=tuple(literals(range(60))))
    result = plan_variables(
        "shop", "web", environment, live(range(60, 62)), REF, prune=True, fingerprint_key=None
    )
    assert [(op, len(body)) for op, body in sent(result.changes)] == [
        (SET, 50), (SET, 10), (REMOVE, 2),
    ]  # fmt: skip
