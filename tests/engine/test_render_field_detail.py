"""Rendering of field-level detail: list items, line diffs of multi-line text, long values
split over lines, and secrets that stay masked whatever the diff holds."""

from __future__ import annotations

import json
import re

from reconciler.plan.changes import ABSENT, Action, Change, FieldDiff, ItemEdit, Plan
from reconciler.report.plan_json import render_json, render_markdown, render_text

SENTINEL = "SENTINEL-4b1d-secret-line"
SENSITIVE = "(sensitive value)"
TEXT = "".join(f"line {i:02d}\n" for i in range(30))


def _update(*diffs: FieldDiff, address: str = "variable.shop/web/production/CERT") -> Plan:
    change = Change(address, "variable", Action.UPDATE, before=None, after=None, diffs=diffs)
    return Plan(changes=(change,))


def _body(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(" {"))
    return lines[start + 1 : lines.index("    }", start)]


def _markdown_body(text: str) -> list[str]:
    """The one change's lines in the diff block, without its `@@` heading."""
    start = text.index("```diff\n") + len("```diff\n")
    lines = text[start : text.index("\n```", start)].splitlines()
    assert lines[0].startswith("@@ ") and lines[0].endswith(" @@")
    return lines[1:]


# --------------------------------------------------------------------------- lists


def test_a_short_list_is_shown_whole_even_with_item_edits():
    diff = FieldDiff(
        "runtime.command",
        ["serve"],
        ["serve", "-v"],
        items=(ItemEdit("insert", None, 1, None, "-v"),),
    )
    assert _body(render_text(_update(diff))) == ['      ~ runtime.command = ["serve"] -> ["serve", "-v"]']  # fmt: skip


def test_a_few_long_items_are_shown_item_by_item():
    long = "x" * 60
    diff = FieldDiff(
        "build.watchPaths",
        [long, "a"],
        [long, "b"],
        items=(ItemEdit("remove", 1, None, "a", None), ItemEdit("insert", None, 1, None, "b")),
    )
    assert _body(render_text(_update(diff))) == [
        "      ~ build.watchPaths: 2 items -> 2 items",
        '          - [1] = "a"',
        '          + [1] = "b"',
        "            # (1 unchanged item hidden)",
    ]


def test_item_edits_on_values_that_are_not_lists_fall_back_to_one_line():
    diff = FieldDiff("name", "a" * 150, None, items=(ItemEdit("remove", 0, None, "a", None),))
    assert _body(render_text(_update(diff))) == [f'      ~ name = "{"a" * 150}" -> null']


def test_an_inserted_policy_with_a_long_list_is_split_into_items():
    ips = [f"198.51.100.{i}/32" for i in range(60)]
    policy = {"name": "deny", "match": [{"remoteIp": {"in": ips}}]}
    change = Change(
        "policies.shop/web/production",
        "policies",
        Action.CREATE,
        before=None,
        after=policy,
    )
    body = _body(render_text(Plan(changes=(change,))))
    assert body[:4] == [
        '      + name = "deny"',
        "      + match: 1 item",
        "          + [0].remoteIp.in: 60 items",
        '              + [0] = "198.51.100.0/32"',
    ]
    assert len(body) == 2 + 1 + 60
    assert max(map(len, render_markdown(Plan(changes=(change,))).splitlines())) < 200


# --------------------------------------------------------------------------- text


def test_two_distant_changed_lines_are_two_hunks_with_counts_between():
    after = TEXT.replace("line 03", "LINE 03").replace("line 25", "LINE 25")
    body = _body(render_text(_update(FieldDiff("value", TEXT, after))))
    assert body == [
        "      ~ value: 30 lines -> 30 lines",
        "            # (1 unchanged line hidden)",
        "            line 01",
        "            line 02",
        "          - line 03",
        "          + LINE 03",
        "            line 04",
        "            line 05",
        "            # (17 unchanged lines hidden)",
        "            line 23",
        "            line 24",
        "          - line 25",
        "          + LINE 25",
        "            line 26",
        "            line 27",
        "            # (2 unchanged lines hidden)",
    ]


def test_lines_added_at_the_end_and_the_final_line_break():
    body = _body(render_text(_update(FieldDiff("value", "a\nb\nc\nd\n", "a\nb\nc\nd\ne"))))
    assert body == [
        "      ~ value: 4 lines -> 5 lines",
        "            # (2 unchanged lines hidden)",
        "            c",
        "            d",
        "          + e",
        "            # (line break at the end removed)",
    ]
    only_break = _body(render_text(_update(FieldDiff("value", "a\nb", "a\nb\n"))))
    assert only_break == [
        "      ~ value: 2 lines -> 2 lines",
        "            # (line break at the end added)",
    ]


def test_text_appearing_clearing_and_created_is_one_line_per_line():
    appears = FieldDiff("description", ABSENT, "first\nsecond\n")
    cleared = FieldDiff("note", "old\ntext", None)
    assert _body(render_text(_update(appears, cleared))) == [
        "      + description: 2 lines",
        "          + first",
        "          + second",
        "      ~ note: 2 lines -> null",
        "          - old",
        "          - text",
    ]
    created = Change(
        "variable.shop/web/production/CERT",
        "variable",
        Action.CREATE,
        before=None,
        after={"key": "CERT", "kind": "recoverable", "value": "one\ntwo\n"},
    )
    assert _body(render_text(Plan(changes=(created,)))) == [
        '      + key = "CERT"',
        '      + kind = "recoverable"',
        "      + value: 2 lines",
        "          + one",
        "          + two",
    ]


def test_markdown_context_lines_have_no_symbol_and_colour_leaves_them_plain():
    plan = _update(FieldDiff("value", TEXT, TEXT.replace("line 10", "LINE 10")))
    assert _markdown_body(render_markdown(plan)) == [
        "  value: 30 lines -> 30 lines",
        "#     (8 unchanged lines hidden)",
        "      line 08",
        "      line 09",
        "-     line 10",
        "+     LINE 10",
        "      line 11",
        "      line 12",
        "#     (17 unchanged lines hidden)",
    ]
    coloured = render_text(plan, color=True)
    assert "            line 09\n" in coloured
    assert "\x1b[32m+\x1b[0m LINE 10" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == render_text(plan)


def test_control_characters_in_lines_are_shown_inert():
    plan = _update(FieldDiff("value", "a\nb", "a\n\x1b[2Jb\r"))
    for output in (render_text(plan), render_markdown(plan)):
        assert "\x1b" not in output and "\r" not in output
        assert "\\x1b[2Jb\\x0d" in output


# --------------------------------------------------------------------------- secrets


def test_a_sensitive_multi_line_value_is_never_shown_not_even_as_a_line_diff():
    """Even if a bug put the value itself in a sensitive diff, every format masks it."""
    before = TEXT.replace("line 05", SENTINEL)
    after = TEXT.replace("line 05", SENTINEL + "-new")
    diff = FieldDiff(
        "value",
        before,
        after,
        sensitive=True,
        items=(ItemEdit("change", 5, 5, SENTINEL, SENTINEL),),
    )
    plan = _update(diff)
    text = render_text(plan)
    assert _body(text) == [f"      ~ value = {SENSITIVE} -> {SENSITIVE}"]
    outputs = [text, render_text(plan, color=True), render_markdown(plan), render_json(plan)]
    for output in outputs:
        assert SENTINEL not in output and "line 04" not in output
        assert SENSITIVE in output
    (json_diff,) = json.loads(render_json(plan))["changes"][0]["diffs"]
    assert "items" not in json_diff
    assert json_diff["before"] == json_diff["after"] == SENSITIVE
