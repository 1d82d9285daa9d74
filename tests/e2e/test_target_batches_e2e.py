"""`--target` on variables: the batch calls carry exactly the targeted variables.

Variables are written in batches (one `setEnvironmentVariables` of up to 50 per
environment, then `removeEnvironmentVariables` of up to 50 names). A target that
names one variable must send that variable alone, and a target over a subtree
batches all of its variables together. What is sent is checked in the emulator's
state: every variable a set call writes gets a new `_seq`, and a removed one is
gone, so comparing the variables table before and after an apply shows exactly
which keys the calls carried. The request log counts the calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_apply_e2e import apply, plan, write_manifest, writes

ADDRESS = "variable.many/web/production"
SET = "environments.setEnvironmentVariables"
REMOVE = "environments.removeEnvironmentVariables"

ALL_KEYS = [f"V{i:03}" for i in range(130)]
REMOVED = [f"V{i:03}" for i in (*range(0, 10), *range(110, 120))]  # 20 deletions
CHANGED = [f"V{i:03}" for i in range(120, 130)]  # 10 updates


def many_manifest(values: dict[str, str]) -> str:
    items = "".join(f"              {key}: {value}\n" for key, value in values.items())
    return (
        "version: 1\nprojects:\n  many:\n    name: Many\n    apps:\n      web:\n"
        "        name: Web\n        oci: {image: ghcr.io/acme/web:1}\n"
        "        environments:\n          production:\n            variables:\n" + items
    )


def original_values() -> dict[str, str]:
    return {key: f"a{key}" for key in ALL_KEYS}


def edited_values() -> dict[str, str]:
    """The audit's edit: 20 variables dropped from the manifest, 10 with a new value."""
    values = {key: value for key, value in original_values().items() if key not in REMOVED}
    values.update({key: f"b{key}" for key in CHANGED})
    return values


def variables_table(emulator: Any) -> dict[str, dict[str, Any]]:
    """The production environment's variables as the emulator stores them (with `_seq`)."""
    tables = [t for t in emulator.state()["variables"].values() if t]
    assert len(tables) == 1
    return tables[0]


def written_keys(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """Keys a set call wrote between the two snapshots (each write gives a new `_seq`)."""
    return {k for k in after if k not in before or after[k]["_seq"] != before[k]["_seq"]}


def addresses(keys: Iterable[str]) -> list[str]:
    return [f"{ADDRESS}/{key}" for key in keys]


def plan_json(emulator: Any, manifest: str, *args: str) -> dict[str, Any]:
    result = plan(emulator, "-f", manifest, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def calls(planned: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for change in planned["changes"] for call in change["calls"]]


def sent_keys(call: dict[str, Any]) -> list[str]:
    """The variable keys of a set call's body, or the names of a remove call's body."""
    items = call["body"]["variables"]
    return [item["key"] if isinstance(item, dict) else item for item in items]


def actions(planned: dict[str, Any]) -> dict[str, str]:
    return {change["address"]: change["action"] for change in planned["changes"]}


def dependency_notes(planned: dict[str, Any]) -> list[str]:
    return [n["message"] for n in planned["notes"] if "outside the targets" in n["message"]]


@pytest.fixture
def edited(emulator: Any, tmp_path: Path) -> str:
    """130 variables applied, then the manifest edited: 20 to delete, 10 to update."""
    manifest = write_manifest(tmp_path, many_manifest(original_values()))
    created = apply(emulator, "-f", manifest, "--auto-approve")
    assert created.exit_code == 0, created.output
    return write_manifest(tmp_path, many_manifest(edited_values()))


def test_a_targeted_update_sends_only_that_variable(emulator: Any, edited: str) -> None:
    target = f"{ADDRESS}/V125"
    planned = plan_json(emulator, edited, "--target", target)
    assert actions(planned) == {target: "update"}
    assert planned["summary"] == {"add": 0, "change": 1, "destroy": 0, "blocked": 0}
    (call,) = calls(planned)
    assert call["operation"] == SET
    assert call["body"]["variables"] == [{"key": "V125", "value": "bV125", "kind": "recoverable"}]
    assert planned["changes"][0]["notes"] == []  # no "also sends N other variable(s)"
    assert dependency_notes(planned) == []
    before = variables_table(emulator)
    writes_before = len(writes(emulator))

    result = apply(emulator, "-f", edited, "--target", target, "--auto-approve")

    assert result.exit_code == 0, result.output
    assert "Apply complete! Resources: 0 added, 1 changed, 0 destroyed." in result.output
    assert writes(emulator)[writes_before:] == [SET]
    after = variables_table(emulator)
    assert written_keys(before, after) == {"V125"}
    assert after["V125"]["value"] == "bV125"
    untouched = {k: v for k, v in after.items() if k != "V125"}
    assert untouched == {k: v for k, v in before.items() if k != "V125"}
    remaining = plan_json(emulator, edited)
    assert actions(remaining) == {
        **dict.fromkeys(addresses(k for k in CHANGED if k != "V125"), "update"),
        **dict.fromkeys(addresses(REMOVED), "delete"),
    }


def test_a_targeted_delete_removes_only_that_variable_and_max_deletes_counts_it(
    emulator: Any, edited: str
) -> None:
    pair = ["--target", f"{ADDRESS}/V115", "--target", f"{ADDRESS}/V116"]
    planned = plan_json(emulator, edited, *pair)
    assert actions(planned) == dict.fromkeys(addresses(["V115", "V116"]), "delete")
    assert [(c["operation"], sent_keys(c)) for c in calls(planned)] == [(REMOVE, ["V115", "V116"])]
    before = variables_table(emulator)
    writes_before = len(writes(emulator))

    refused = apply(emulator, "-f", edited, *pair, "--max-deletes", "1", "--auto-approve")

    assert refused.exit_code == 1
    assert "the plan deletes 2 objects, more than --max-deletes 1" in refused.output
    assert len(writes(emulator)) == writes_before

    one = apply(
        emulator, "-f", edited, "--target", f"{ADDRESS}/V115", "--max-deletes", "1",
        "--auto-approve",
    )  # fmt: skip

    assert one.exit_code == 0, one.output
    assert "Apply complete! Resources: 0 added, 0 changed, 1 destroyed." in one.output
    assert writes(emulator)[writes_before:] == [REMOVE]
    assert variables_table(emulator) == {k: v for k, v in before.items() if k != "V115"}
    remaining = plan_json(emulator, edited)
    assert actions(remaining) == {
        **dict.fromkeys(addresses(CHANGED), "update"),
        **dict.fromkeys(addresses(k for k in REMOVED if k != "V115"), "delete"),
    }


def test_a_saved_targeted_plan_holds_and_sends_only_the_targeted_variables(
    emulator: Any, edited: str, tmp_path: Path
) -> None:
    saved = tmp_path / "plan.json"
    targets = ["--target", f"{ADDRESS}/V121", "--target", f"{ADDRESS}/V005"]
    result = plan(emulator, "-f", edited, *targets, "--out", str(saved))
    assert result.exit_code == 0, result.output
    assert "Plan: 0 to add, 1 to change, 1 to destroy." in result.output
    assert [(c["operation"], sent_keys(c)) for c in calls(json.loads(saved.read_text()))] == [
        (SET, ["V121"]),
        (REMOVE, ["V005"]),
    ]
    before = variables_table(emulator)

    applied = apply(emulator, str(saved), "--max-deletes", "1", "--auto-approve")

    assert applied.exit_code == 0, applied.output
    assert "Apply complete! Resources: 0 added, 1 changed, 1 destroyed." in applied.output
    after = variables_table(emulator)
    assert written_keys(before, after) == {"V121"}
    assert set(before) - set(after) == {"V005"}


@pytest.mark.parametrize("target", [ADDRESS, "app.many/web", "project.many"])
def test_a_subtree_target_batches_all_its_variables_together(
    emulator: Any, edited: str, target: str
) -> None:
    planned = plan_json(emulator, edited, "--target", target)
    assert [(c["operation"], sent_keys(c)) for c in calls(planned)] == [
        (SET, CHANGED),
        (REMOVE, REMOVED),
    ]
    assert planned["summary"] == {"add": 0, "change": 10, "destroy": 20, "blocked": 0}
    assert dependency_notes(planned) == []


def carried_addresses(planned: dict[str, Any], operation: str) -> list[str]:
    """The variable addresses that the plan's `operation` calls carry in their bodies."""
    return [
        f"{ADDRESS}/{key}"
        for call in calls(planned)
        if call["operation"] == operation
        for key in sent_keys(call)
    ]


@pytest.mark.parametrize(
    "targets",
    [
        [f"{ADDRESS}/V125"],
        [f"{ADDRESS}/V115"],
        [f"{ADDRESS}/V000", f"{ADDRESS}/V119", f"{ADDRESS}/V129"],
        [f"{ADDRESS}/V050"],  # unchanged: nothing to send
        ["variable.many"],
        [],
    ],
)
def test_every_call_carries_exactly_the_changes_the_plan_counts(
    emulator: Any, edited: str, targets: list[str]
) -> None:
    planned = plan_json(emulator, edited, *(a for t in targets for a in ("--target", t)))
    by_action = actions(planned)
    updated = [a for a, action in by_action.items() if action == "update"]
    deleted = [a for a, action in by_action.items() if action == "delete"]
    assert carried_addresses(planned, SET) == updated
    assert carried_addresses(planned, REMOVE) == deleted
    assert planned["summary"]["change"] == len(updated)
    assert planned["summary"]["destroy"] == len(deleted)
    assert dependency_notes(planned) == []


def test_the_dependency_note_names_what_a_targeted_variable_needs(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, many_manifest({"V000": "a", "V001": "b", "V002": "c"}))
    target = f"{ADDRESS}/V001"

    planned = plan_json(emulator, manifest, "--target", target)

    assert actions(planned) == {
        "project.many": "create",
        "app.many/web": "create",
        target: "create",
    }
    assert [(c["operation"], sent_keys(c)) for c in calls(planned) if c["operation"] == SET] == [
        (SET, ["V001"])
    ]
    assert dependency_notes(planned) == [
        "2 change(s) outside the targets are included because targeted changes depend on them: "
        "project.many, app.many/web"
    ]
