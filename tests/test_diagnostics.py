"""One `Diagnostic` for validation's problems, the checks' findings and a plan's notes: the text,
JSON and order each of them had as a type of its own stay what they were."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.checks.findings import to_problem
from reconciler.checks.overrides import Override
from reconciler.diagnostics import INFO, Diagnostic
from reconciler.escaping import clean
from reconciler.manifest.model import Position
from reconciler.manifest.problems import Problem
from reconciler.plan.changes import Note

HERE = Position("m.yaml", 3, 7)


def finding(rule: str, path: str, message: str, waiver: str | None = None) -> Diagnostic:
    return Diagnostic.at(HERE, path, message, "warning", rule=rule, waiver=waiver)


def test_problems_sort_by_place_then_path_then_message() -> None:
    later = Problem.at(Position("m.yaml", 4, 1), "a", "a")
    b_path = Problem.at(HERE, "projects.b", "a")
    a_path_z = Problem.at(HERE, "projects.a", "z")
    a_path_a = Problem.at(HERE, "projects.a", "a")
    whole_file = Problem.for_file("m.yaml", "too large")
    assert sorted([later, b_path, a_path_z, a_path_a, whole_file]) == [
        whole_file, a_path_a, a_path_z, b_path, later
    ]  # fmt: skip


def test_findings_sort_by_place_then_rule_before_path() -> None:
    # a finding's rule sorts before its path, as it did; validate lists the rule in the message
    second = finding("b-rule", "projects.a", "m")
    first = finding("a-rule", "projects.z", "m")
    assert sorted([second, first]) == [first, second]
    listed = sorted(to_problem(f) for f in (second, first))
    assert [p.path for p in listed] == ["projects.a", "projects.z"]
    assert listed[0].message == "m [b-rule]" and listed[0].rule is None


def test_each_kind_reads_as_it_did() -> None:
    assert str(Problem.at(HERE, "p", "bad")) == "m.yaml:3:7: p: bad"
    assert str(Problem.at(HERE, "p", "odd", "warning")) == "warning: m.yaml:3:7: p: odd"
    assert str(Problem.for_file("x.yaml", "file is empty")) == "x.yaml: file is empty"
    assert str(finding("query-logging", "p", "logs")) == "warning: m.yaml:3:7: p: logs [query-logging]"
    waived = finding("query-logging", "p", "logs", waiver="audited")
    assert str(waived) == "note: m.yaml:3:7: p: logs [query-logging waived: audited]"
    assert waived.labelled == "Waived: m.yaml:3:7: p: logs [query-logging waived: audited]"
    assert not waived.fails and Diagnostic.at(HERE, "p", "x", rule="r").fails
    assert Note("info", "3 apps unmanaged").label == "Note"


def test_an_override_without_a_place_is_a_note_naming_its_path() -> None:
    override = Override(None, "checks.query-logging", "query-logging", "off", "warning", "off")
    assert str(override.diagnostic) == (
        "note: checks.query-logging: query-logging set to off (default: warning)"
    )
    placed = Override(HERE, "checks.query-logging", "query-logging", "off", "warning", "off")
    assert placed.located == "m.yaml:3:7: checks.query-logging: " + placed.description


@given(st.text())
def test_a_note_without_a_place_is_its_label_and_its_escaped_text(text: str) -> None:
    # `export`'s notes on stderr: what the platform named, one line whatever it holds
    assert Diagnostic(INFO, text).labelled == f"Note: {clean(text)}"


def test_text_forms_escape_what_the_manifest_wrote() -> None:
    evil = Diagnostic.at(Position("a\nb.yaml", 1, 2), "p", "x\x1b[2Jy", "warning", rule="r")
    assert "\n" not in str(evil) and "\x1b" not in evil.labelled
    assert evil.place == "a\\x0ab.yaml:1:2"


@pytest.mark.parametrize("waiver", [None, "a batch worker"])
def test_a_finding_reads_back_from_its_json(waiver: str | None) -> None:
    found = finding("production-healthcheck", "projects.shop", "no check", waiver)
    data = found.to_json()
    assert data == {
        "file": "m.yaml", "line": 3, "column": 7, "path": "projects.shop",
        "message": "no check", "severity": "warning",
        "rule": "production-healthcheck", "waived": waiver,
    }  # fmt: skip
    assert Diagnostic.finding_from_json(data) == found
    with pytest.raises(TypeError):
        Diagnostic.finding_from_json({**data, "severity": "info"})


def test_a_problem_json_has_no_rule_and_names_the_apps_of_a_shared_block() -> None:
    shared = Problem.at(HERE, "templates.web", "bad", uses=("shop/a", "shop/b"))
    assert "rule" not in shared.to_json() and shared.to_json()["uses"] == ["shop/a", "shop/b"]
    assert shared == Problem.at(HERE, "templates.web", "bad")  # the apps only shorten text
    assert str(shared).endswith("bad (used by 2 apps: shop/a, shop/b)")


def test_notes_alike_but_for_how_they_shorten_are_one() -> None:
    one = Note("warning", "a, b", "app.x", subjects=("a", "b"), group="{count} envs")
    assert one == Note("warning", "a, b", "app.x") and len({one, Note("warning", "a, b", "app.x")}) == 1
    assert one != Note("info", "a, b", "app.x")
