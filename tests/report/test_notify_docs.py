"""The notifications guide documents the generic body reconciler posts: its example has the
body's shape, and its tables list every field, in order, and nothing else."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

from reconciler.plan.changes import Action, Change, Plan
from reconciler.report.notify import EVENTS, URL_VARIABLES, Ending, plan_notification
from reconciler.report.notify.bodies import webhook_body
from reconciler.report.notify.ci import RunLink
from reconciler.report.notify.events import ChangeItem, DeploymentItem, ErrorItem

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "notifications.md"
TEXT = GUIDE.read_text()


def table_after(heading: str) -> list[list[str]]:
    """The rows (cells, the header and rule left out) of the first table after `heading`."""
    section = TEXT.split(f"\n{heading}\n", 1)[1]
    rows = re.search(r"\n(\|.*\|\n)+", section)
    assert rows, f"no table after {heading}"
    lines = rows.group(0).strip().split("\n")[2:]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


def names(heading: str) -> list[str]:
    return [row[0].strip("`") for row in table_after(heading)]


def a_body() -> dict[str, object]:
    plan = Plan(changes=(Change("variable.a/b/c/D", "variable", Action.UPDATE, {}, {}),))
    notification = plan_notification(plan, Ending(2), in_sync=False)
    assert notification is not None
    return webhook_body(notification)


def test_the_field_table_lists_every_field_of_the_body_in_order() -> None:
    assert names("## The generic JSON body") == list(a_body())


def test_each_object_has_its_table() -> None:
    for heading, kind in (
        ("### A change", ChangeItem),
        ("### A deployment", DeploymentItem),
        ("### The error", ErrorItem),
        ("### The run", RunLink),
    ):
        assert names(heading) == [f.name for f in fields(kind)], heading


def test_the_example_has_the_shape_of_a_body() -> None:
    example = json.loads(re.search(r"```json\n(.*?)```", TEXT, re.S).group(1))  # type: ignore[union-attr]
    body = a_body()
    assert list(example) == list(body)
    assert example["format_version"] == body["format_version"]
    assert list(example["changes"][0]) == [f.name for f in fields(ChangeItem)]
    assert list(example["run"]) == [f.name for f in fields(RunLink)]


def test_the_documented_events_and_variables_are_those_of_the_code() -> None:
    documented = {row[0].strip("`") for row in table_after("## What each command posts")}
    assert documented == set(EVENTS)
    assert names("## Turning it on") == list(URL_VARIABLES)
