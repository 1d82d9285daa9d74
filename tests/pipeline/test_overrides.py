"""A rule turned off or down, and every waiver, is part of the plan in every form: text,
markdown (beside the result), JSON, SARIF; validate shows them too. Compared with the base a
pull request merges into (`plan --base-ref`), a change of the checks alone changes the plan."""

from __future__ import annotations

import html
import json
import subprocess
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.checks.overrides import Override, compared, overrides
from reconciler.checks.registry import RULES, SEVERITIES
from reconciler.checks.settings import RuleSettings
from reconciler.manifest.model import ChecksSettings
from tests.fixtures.cli import Seed, run_cli, write_manifest

APP = """\
version: 1
projects:
  shop:
    apps:
      web:
        oci: {image: ghcr.io/acme/web:1.0}
        environments:
          production:
            runtime: {port: 8080, healthcheck: {method: GET, path: /healthz}}
"""
TURNED_OFF = 'version: 1\nchecks:\n  secrets-writeonly: "off"\n'
WAIVED = (
    APP
    + '            checks: {query-logging: {"off": true, reason: "@team ![x](y) `no tokens`"}}\n'
)


def repository(tmp_path: Path) -> Path:
    """A git repository whose main branch holds the app and no override."""
    root = tmp_path / "repo"
    (root / "platform").mkdir(parents=True)
    write_manifest(root / "platform", APP, "shop.yaml")
    for command in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "."],
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "main"],
    ):
        subprocess.run(command, cwd=root, check=True)
    return root


def test_a_pull_request_that_only_turns_a_rule_off_changes_the_plan(
    cli: Any, seed: Seed, tmp_path: Path, monkeypatch: Any
) -> None:
    root = repository(tmp_path)
    monkeypatch.chdir(root)
    assert cli("apply", "-f", "platform/", "--auto-approve").exit_code == 0
    write_manifest(root / "platform", TURNED_OFF, "checks.yaml")  # the pull request's new file

    text = cli("plan", "-f", "platform/", "--base-ref", "main", "--detailed-exitcode")
    assert text.exit_code == 2, text.output
    assert "No changes. Live state matches the manifest." in text.stdout
    assert (
        "  + platform/checks.yaml:3:22: checks.secrets-writeonly: secrets-writeonly set to off "
        "(default: error)"
    ) in text.stdout
    assert "Check overrides since the base: 1 added." in text.stdout

    markdown = cli("plan", "-f", "platform/", "--base-ref", "main", "--format", "markdown")
    head = markdown.stdout.split("\n\n", 2)
    assert "Check overrides since the base: 1 added." in html.unescape(head[0])
    assert head[1].startswith("> [!CAUTION]") and "secrets-writeonly set to off" in head[1]

    document = json.loads(
        cli("plan", "-f", "platform/", "--base-ref", "main", "--format", "json").stdout
    )
    [override] = document["overrides"]
    assert (override["rule"], override["kind"], override["change"]) == (
        "secrets-writeonly",
        "off",
        "added",
    )
    assert (override["file"], override["line"]) == ("platform/checks.yaml", 3)

    sarif = json.loads(cli("plan", "-f", "platform/", "--format", "sarif").stdout)
    [configured] = sarif["runs"][0]["invocations"][0]["ruleConfigurationOverrides"]
    assert configured["descriptor"]["id"] == "secrets-writeonly"
    assert configured["configuration"] == {"enabled": False}

    # Without a base, the override is listed but is no change: main's drift job stays at 0.
    drift = cli("plan", "-f", "platform/", "--detailed-exitcode")
    assert drift.exit_code == 0 and "secrets-writeonly set to off" in drift.stdout


def test_turning_a_rule_back_on_is_a_change_too(
    cli: Any, seed: Seed, tmp_path: Path, monkeypatch: Any
) -> None:
    root = repository(tmp_path)
    write_manifest(root / "platform", TURNED_OFF, "checks.yaml")
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "off"],
        cwd=root,
        check=True,
    )
    monkeypatch.chdir(root)
    assert cli("apply", "-f", "platform/", "--auto-approve").exit_code == 0
    (root / "platform" / "checks.yaml").unlink()
    result = cli("plan", "-f", "platform/", "--base-ref", "main", "--detailed-exitcode")
    assert result.exit_code == 2, result.output
    assert "secrets-writeonly set to off (default: error) (removed)" in result.stdout


def test_validate_shows_what_is_turned_off_in_text_json_and_sarif(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, APP + TURNED_OFF.removeprefix("version: 1\n"), "m.yaml")
    text = run_cli(["validate", "-f", str(path)])
    assert text.exit_code == 0
    assert (
        f"note: {path}:11:22: checks.secrets-writeonly: secrets-writeonly set to off "
        "(default: error)"
    ) in text.stderr
    items = json.loads(run_cli(["validate", "-f", str(path), "--format", "json"]).stdout)
    assert [(i["severity"], i["rule"], i["kind"]) for i in items] == [
        ("note", "secrets-writeonly", "off")
    ]
    log = json.loads(run_cli(["validate", "-f", str(path), "--format", "sarif"]).stdout)
    [configured] = log["runs"][0]["invocations"][0]["ruleConfigurationOverrides"]
    assert configured["descriptor"]["id"] == "secrets-writeonly"


def test_a_waiver_shows_with_its_reason_escaped_in_the_pull_request_comment(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    path = write_manifest(tmp_path, WAIVED)
    markdown = cli("plan", "-f", str(path), "--format", "markdown").stdout
    waiver = next(line for line in markdown.splitlines() if "query-logging waived" in line)
    # mentions are never linked inside <code>; image and code syntax are character references
    assert waiver.startswith("> - <code>") and waiver.endswith("</code>")
    assert "![x](y)" not in waiver and "&#33;&#91;x&#93;(y)" in waiver
    assert "`" not in waiver
    log = json.loads(cli("plan", "-f", str(path), "--format", "sarif").stdout)
    [notified] = log["runs"][0]["invocations"][0]["toolConfigurationNotifications"]
    assert notified["associatedRule"]["id"] == "query-logging"
    assert notified["locations"][0]["physicalLocation"]["region"]["startLine"] == 10


severities = st.sampled_from(SEVERITIES)


@settings(max_examples=200)
@given(st.dictionaries(st.sampled_from([r.id for r in RULES]), severities))
def test_an_override_is_every_rule_below_its_default_and_nothing_else(
    rules: dict[str, str],
) -> None:
    settings_ = ChecksSettings(rules=rules)
    found = {o.rule: o for o in overrides(settings_)}
    rank = {"off": 0, "warning": 1, "error": 2}
    judged = RuleSettings(settings_)
    for rule in RULES:
        below = rank[judged.severity(rule)] < rank[rule.default_severity]
        assert (rule.id in found) == below, rule.id
    assert compared(tuple(found.values()), tuple(found.values())) == tuple(found.values())
    marked = compared(tuple(found.values()), ())
    assert all(o.change == "added" for o in marked)
    removed = compared((), tuple(found.values()))
    assert all(o.change == "removed" for o in removed)
    assert all(isinstance(o, Override) for o in removed)
