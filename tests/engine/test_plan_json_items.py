"""The `items` member of a diff in the JSON plan and the saved plan: written when a list diff
has edits, read back exactly, optional for plans written without it, checked for shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.errors import PlanShapeError
from reconciler.plan.changes import (
    Action,
    Change,
    FieldDiff,
    ItemEdit,
    Plan,
    PolicyEdit,
    PolicyListDetail,
)
from reconciler.plan.json_form import plan_from_dict, plan_to_dict
from reconciler.plan.planfile import load_plan
from reconciler.report.plan_json import render_json
from tests.fixtures.planfiles import write_plan

BEFORE = [f"10.0.0.{i}/32" for i in range(60)]
AFTER = [*BEFORE[:7], "10.9.9.9/32", *BEFORE[8:]]
EDITS = (
    ItemEdit("remove", 7, None, "10.0.0.7/32", None),
    ItemEdit("insert", None, 7, None, "10.9.9.9/32"),
)
POLICY_BEFORE = {"name": "office", "match": [{"remoteIp": {"notIn": BEFORE}}]}
POLICY_AFTER = {"name": "office", "match": [{"remoteIp": {"notIn": AFTER}}]}


def _plan() -> Plan:
    diff = FieldDiff("match[0].remoteIp.notIn", BEFORE, AFTER, items=EDITS)
    command = FieldDiff(
        "runtime.command",
        ["a", "b"],
        ["a", "c"],
        items=(ItemEdit("change", 1, 1, "b", "c"),),
    )
    policies = Change(
        "policies.shop/web/production",
        "policies",
        Action.UPDATE,
        before={"policies": [POLICY_BEFORE]},
        after={"policies": [POLICY_AFTER]},
        detail=PolicyListDetail(
            (PolicyEdit("change", 0, 0, POLICY_BEFORE, POLICY_AFTER, (diff,)),)
        ),
    )
    settings_change = Change(
        "settings.shop/web/production",
        "settings",
        Action.UPDATE,
        before={"runtime.command": ["a", "b"]},
        after={"runtime.command": ["a", "c"]},
        diffs=(command, FieldDiff("runtime.vCpus", 0.5, 1)),
    )
    return Plan(changes=(policies, settings_change))


def test_items_are_written_next_to_the_whole_lists():
    data = json.loads(render_json(_plan()))
    policy_diff = data["changes"][0]["policy_edits"][0]["diffs"][0]
    assert policy_diff["before"] == BEFORE and policy_diff["after"] == AFTER
    assert policy_diff["items"][1] == {
        "op": "insert",
        "before_index": None,
        "after_index": 7,
        "before": None,
        "after": "10.9.9.9/32",
    }
    command, vcpus = data["changes"][1]["diffs"]
    assert command["items"] == [
        {"op": "change", "before_index": 1, "after_index": 1, "before": "b", "after": "c"}
    ]
    # a diff without edits has exactly the members it always had
    assert set(vcpus) == {"path", "before", "after", "sensitive", "known_after_apply"}


def test_the_saved_plan_keeps_the_items_and_apply_reads_it_back(tmp_path: Path):
    path = tmp_path / "plan.json"
    write_plan(_plan(), path, manifest_files=["platform/shop.yaml"])
    loaded = load_plan(path).plan
    assert loaded == _plan()
    detail = loaded.changes[0].detail
    assert isinstance(detail, PolicyListDetail)
    assert detail.edits[0].diffs[0].items == EDITS


def test_a_plan_written_without_items_still_loads():
    data = plan_to_dict(_plan())
    data["changes"][1]["diffs"][0].pop("items")
    loaded = plan_from_dict(data)
    assert loaded.changes[1].diffs[0].items == ()
    assert loaded.changes[1].diffs[0].after == ["a", "c"]


@pytest.mark.parametrize(
    ("member", "value", "problem"),
    [
        ("op", "keep", "must be one of insert, remove, change"),
        ("before_index", -1, "must not be negative"),
        ("after_index", "7", "expected an integer"),
    ],
)
def test_a_broken_item_names_its_path(member: str, value: object, problem: str):
    data = plan_to_dict(_plan())
    data["changes"][1]["diffs"][0]["items"][0][member] = value
    with pytest.raises(PlanShapeError) as raised:
        plan_from_dict(data)
    assert raised.value.path == f"changes[1].diffs[0].items[0].{member}"
    assert problem in raised.value.problem


def test_a_value_json_cannot_hold_is_refused_by_its_path():
    """`plan_from_dict` reads parsed JSON: a Python object no JSON text gives is not kept."""
    data = plan_to_dict(_plan())
    data["changes"][1]["diffs"][0]["items"][0]["before"] = {"10.0.0.7/32"}
    with pytest.raises(PlanShapeError) as raised:
        plan_from_dict(data)
    assert raised.value.path == "changes[1].diffs[0].items[0].before"
    assert "expected a JSON value" in raised.value.problem


plain_values = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8)
indexes = st.none() | st.integers(0, 100)
item_edits = st.builds(
    ItemEdit,
    op=st.sampled_from(["insert", "remove", "change"]),
    before_index=indexes,
    after_index=indexes,
    before=plain_values,
    after=plain_values,
)


@settings(max_examples=60, deadline=None)
@given(
    before=st.lists(plain_values, max_size=6),
    after=st.lists(plain_values, max_size=6),
    items=st.lists(item_edits, max_size=4).map(tuple),
)
def test_any_items_survive_the_json_form(before: list, after: list, items: tuple) -> None:
    diff = FieldDiff("build.watchPaths", before, after, items=items)
    plan = Plan(
        changes=(
            Change("settings.shop/web/production", "settings", Action.UPDATE, None, None, (diff,)),
        )
    )
    assert plan_from_dict(json.loads(render_json(plan))) == plan
