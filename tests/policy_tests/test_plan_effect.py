"""A plan that changes an environment's policy list shows the policy tests whose outcome it
turns, in text, markdown and JSON (saved plans keep them), evaluated against the live list."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import PlanShapeError
from reconciler.plan.changes import PolicyListDetail
from reconciler.plan.json_form import plan_from_dict, plan_to_dict
from reconciler.policy_tests.effect import OutcomeChange, changed_outcomes
from tests.fixtures.cli import CliResult
from tests.policy_tests.cli_helpers import Sample, firewall, logging, manifest_text, write

ADMIN = {"path": {"path": {"prefix": "/admin"}}}
OFFICE = {"remoteIp": {"notIn": ["203.0.113.0/24"]}}
ADMIN_ONLY = firewall("admin-only-from-office", ADMIN, OFFICE)
OPEN_DOOR = firewall("block-door", {"path": {"path": {"exact": "/door"}}})
SAMPLES = [
    Sample("admin is closed to the internet", "/admin/users", "deny"),
    Sample("office reaches admin", "/admin/users", "allow", client_ip="203.0.113.4"),
    Sample("the door", "/door", "allow"),
    Sample("home", "/", "allow"),
]
LINE_ADMIN = "GET /admin/users from 198.51.100.7: allow -> deny (admin-only-from-office)"
LINE_DOOR = "GET /door from 198.51.100.7: deny -> allow (was block-door)"

Cli = Callable[..., CliResult]


def applied_then_changed(cli: Cli, tmp_path: Path) -> Path:
    """Live: [log-all, block-door]; the manifest: [log-all, admin-only-from-office]."""
    before = write(tmp_path, manifest_text([logging("log-all"), OPEN_DOOR], []), "before.yaml")
    assert cli("apply", "-f", str(before), "--auto-approve").exit_code == 0
    return write(tmp_path, manifest_text([logging("log-all"), ADMIN_ONLY], SAMPLES))


def test_text_plan_shows_the_tests_whose_outcome_changes(cli: Cli, tmp_path: Path) -> None:
    manifest = applied_then_changed(cli, tmp_path)
    result = cli("plan", "-f", str(manifest))
    assert result.exit_code == 0, result.output
    assert f"    # policy test 'admin is closed to the internet' changes: {LINE_ADMIN}" in (
        result.stdout
    )
    assert f"    # policy test 'the door' changes: {LINE_DOOR}" in result.stdout
    assert "office reaches admin" not in result.stdout  # allowed before and after
    assert "'home'" not in result.stdout


def test_markdown_and_json_plans_show_them_and_a_saved_plan_keeps_them(
    cli: Cli, tmp_path: Path
) -> None:
    manifest = applied_then_changed(cli, tmp_path)
    markdown = html.unescape(cli("plan", "-f", str(manifest), "--format", "markdown").stdout)
    # beside the result line, never folded: a verdict that turns is what a reviewer must see
    warning = markdown[: markdown.index("```diff")]
    assert "**Policy tests whose verdict this plan changes:**" in warning
    assert (
        "> - <code>policies.shop/web/production</code>: **admin is closed to the internet**: "
        f"{LINE_ADMIN}"
    ) in warning
    saved = tmp_path / "plan.json"
    shown = cli("plan", "-f", str(manifest), "--format", "json", "--out", str(saved))
    [change] = [c for c in json.loads(shown.stdout)["changes"] if c["kind"] == "policies"]
    assert change["policy_test_changes"] == [
        {
            "name": "admin is closed to the internet",
            "request": "GET /admin/users from 198.51.100.7",
            "before": "allow",
            "after": "deny",
            "policy": "admin-only-from-office",
        },
        {
            "name": "the door",
            "request": "GET /door from 198.51.100.7",
            "before": "deny",
            "after": "allow",
            "policy": "block-door",
        },
    ]
    plan = plan_from_dict(json.loads(saved.read_text()))
    [policies] = [c for c in plan.changes if c.kind == "policies"]
    assert isinstance(policies.detail, PolicyListDetail)
    assert [str(o) for o in policies.detail.test_outcomes] == [LINE_ADMIN, LINE_DOOR]


def test_a_plan_without_tests_or_without_a_policy_change_shows_none(
    cli: Cli, tmp_path: Path
) -> None:
    policies = [logging("log-all"), ADMIN_ONLY]
    manifest = write(tmp_path, manifest_text(policies, SAMPLES))
    first = cli("plan", "-f", str(manifest), "--format", "json")
    [change] = [c for c in json.loads(first.stdout)["changes"] if c["kind"] == "policies"]
    # the app is created: its tests against an empty live list
    assert [o["name"] for o in change["policy_test_changes"]] == ["admin is closed to the internet"]
    assert cli("apply", "-f", str(manifest), "--auto-approve").exit_code == 0
    again = cli("plan", "-f", str(manifest))
    assert "policy test" not in again.stdout
    assert "No changes." in again.stdout


def test_changed_outcomes_compares_verdicts_only() -> None:
    tests = _model_tests()
    same_verdict = changed_outcomes([ADMIN_ONLY], [firewall("renamed", ADMIN, OFFICE)], tests)
    assert same_verdict == ()
    assert changed_outcomes([], [ADMIN_ONLY], tests) == (
        OutcomeChange(
            "admin is closed to the internet",
            "GET /admin/users from 198.51.100.7",
            "allow",
            "deny",
            "admin-only-from-office",
        ),
    )


def test_a_saved_plan_with_a_malformed_outcome_is_refused() -> None:
    from reconciler.plan.changes import Action, Change, Plan

    change = Change(
        "policies.shop/web/production",
        "policies",
        Action.UPDATE,
        None,
        None,
        detail=PolicyListDetail(),
    )
    data: dict[str, Any] = plan_to_dict(Plan((change,)))
    assert data["changes"][0]["policy_test_changes"] == []
    data["changes"][0]["policy_test_changes"] = [{"name": "x", "before": 1}]
    with pytest.raises(PlanShapeError, match="policy_test_changes"):
        plan_from_dict(data)
    del data["changes"][0]["policy_test_changes"]  # a plan saved before they existed
    assert plan_from_dict(data).changes[0].detail == PolicyListDetail()


def _model_tests() -> list[Any]:
    from reconciler.manifest.model import PolicyTest

    return [
        PolicyTest(s.name, s.method, s.path, s.client_ip, s.expect)  # type: ignore[arg-type]
        for s in SAMPLES
    ]
