"""`reconciler validate` with the built-in checks: how findings read, fail, and are waived."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.checks.registry import RULES, SEVERITIES, Rule
from reconciler.checks.settings import RuleSettings
from reconciler.cli import main
from reconciler.manifest.validate import ManifestInvalid, load_manifest
from tests.checks.conftest import Write
from tests.checks.manifests import findings_of

BODY_LOGGING = """
policies:
  - name: log-api
    enabled: true
    logging: {requestBody: true}
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


def test_an_error_finding_fails_validate_with_its_place_and_rule(write: Write) -> None:
    path = write(production=BODY_LOGGING)
    code, out, err = run("validate", "-f", str(path))
    assert code == 1
    assert out == (
        f"{path}:12:17: projects.shop.apps.web.environments.production.policies[0]: "
        "policy 'log-api' logs requestBody in production [production-body-logging]\n"
    )
    assert err == "1 problem found.\n"


def test_a_warning_finding_is_printed_on_stderr_and_fails_only_with_strict(write: Write) -> None:
    path = write(image="nginx:latest")
    code, out, err = run("validate", "-f", str(path))
    assert code == 0 and out.startswith("Valid: 1 file")
    assert err.startswith(f"warning: {path}:8:14: projects.shop.apps.web.oci.image: ")
    assert "[pinned-images]" in err
    assert run("validate", "--strict", "-f", str(path))[0] == 1


def test_a_waiver_silences_a_finding_and_shows_its_reason(write: Write) -> None:
    waiver = 'checks: {production-body-logging: {"off": true, reason: audited payloads}}'
    path = write(production=BODY_LOGGING + waiver)
    code, out, err = run("validate", "-f", str(path))
    assert code == 0 and out.startswith("Valid:")
    assert err == (
        f"note: {path}:12:17: projects.shop.apps.web.environments.production.policies[0]: "
        "policy 'log-api' logs requestBody in production "
        "[production-body-logging waived: audited payloads]\n"
        f"note: {path}:15:22: projects.shop.apps.web.environments.production.checks."
        "production-body-logging: production-body-logging waived for "
        "projects.shop.apps.web.environments.production: audited payloads\n"
    )


def test_a_waiver_covers_its_object_and_everything_below_it(write: Write) -> None:
    waiver = 'checks: {query-logging: {"off": true, reason: "no tokens in our URLs"}}'
    logging = "policies: [{name: q, enabled: true, logging: {query: true}}]"
    on_app = write("app.yaml", production=logging, preview=logging, app=waiver)
    on_project = write("project.yaml", production=logging, project=waiver)
    on_preview = write("preview.yaml", production=logging, preview=logging + "\n" + waiver)
    on_defaults = write("defaults.yaml", production=logging, app="defaults:\n  " + waiver)
    assert [f.waiver for f in findings_of(on_app)] == ["no tokens in our URLs"] * 2
    assert [f.waiver for f in findings_of(on_project)] == ["no tokens in our URLs"]
    assert [f.waiver for f in findings_of(on_defaults)] == ["no tokens in our URLs"]
    waived = {f.path.split(".")[5]: f.waiver for f in findings_of(on_preview)}
    assert waived == {"production": None, "preview": "no tokens in our URLs"}


def test_a_waiver_needs_a_reason(write: Write) -> None:
    path = write(production='checks: {query-logging: {"off": true}}')
    code, out, _ = run("validate", "-f", str(path))
    assert code == 1
    assert (
        f"{path}:11:37: " in out and "checks.query-logging: missing required field 'reason'" in out
    )


CAPACITY_WAIVER = 'checks: {capacity-limits: {"off": true, reason: "batch jobs scale to zero"}}'


@pytest.mark.parametrize(
    ("parts", "line", "column", "path"),
    [
        ({"project": CAPACITY_WAIVER}, 5, 14, "projects.shop"),
        ({"app": CAPACITY_WAIVER}, 9, 18, "projects.shop.apps.web"),
        ({"app": "defaults:\n  " + CAPACITY_WAIVER}, 10, 20, "projects.shop.apps.web.defaults"),
        (
            {"production": "runtime: {port: 8080}\n" + CAPACITY_WAIVER},
            12,
            22,
            "projects.shop.apps.web.environments.production",
        ),
    ],
    ids=["project", "app", "defaults", "environment"],
)
def test_a_capacity_limits_waiver_on_an_object_is_refused_at_its_place(
    write: Write, parts: dict[str, str], line: int, column: int, path: str
) -> None:
    """The finding is about the whole workspace, so no waiver on an object could match it:
    refused, never accepted and ignored."""
    manifest = write(**parts)
    code, out, _ = run("validate", "-f", str(manifest), "--format", "json")
    assert code == 1
    [problem] = json.loads(out)
    assert (problem["line"], problem["column"]) == (line, column), problem
    assert problem["path"] == f"{path}.checks.capacity-limits"
    assert problem["message"].startswith(
        "capacity-limits cannot be waived on a project, app or environment: it judges the "
        "whole workspace"
    )
    assert "checks: {capacity-limits: warning}" in problem["message"]


def test_an_unknown_rule_is_refused_with_a_suggestion(write: Write) -> None:
    path = write(checks="querry-logging: error")
    code, out, _ = run("validate", "-f", str(path))
    assert code == 1 and "did you mean 'query-logging'?" in out


def test_json_gives_each_finding_its_rule_and_waiver(write: Write) -> None:
    path = write(image="nginx:latest", production=BODY_LOGGING)
    code, out, _ = run("validate", "-f", str(path), "--format", "json")
    items = json.loads(out)
    assert code == 1
    assert [(i["severity"], i["rule"], i["waived"]) for i in items] == [
        ("error", "production-body-logging", None),
        ("warning", "pinned-images", None),
    ]
    assert items[0]["line"] == 12 and items[0]["message"].startswith("policy 'log-api'")


def test_the_checks_block_merges_across_files_like_prune(tmp_path: Path, write: Write) -> None:
    first = write("a.yaml", checks="query-logging: error")
    same = tmp_path / "b.yaml"
    same.write_text("version: 1\nchecks:\n  query-logging: error\nprojects: {}\n")
    assert run("validate", "-f", str(first), "-f", str(same))[0] == 0
    other = tmp_path / "c.yaml"
    other.write_text("version: 1\nchecks: {query-logging: warning}\nlimits: {vCpus: 4}\n")
    code, out, _ = run("validate", "-f", str(first), "-f", str(other))
    assert code == 1
    assert f"{other}:2:9: checks: differs from the checks settings at {first}:3:3" in out


@settings(max_examples=40, deadline=None)
@given(
    rule=st.sampled_from(RULES),
    severity=st.sampled_from(SEVERITIES),
    other=st.sampled_from(SEVERITIES),
    mapping_first=st.booleans(),
)
def test_a_setting_in_its_two_forms_in_two_files_is_the_same_setting(
    rule: Rule, severity: str, other: str, mapping_first: bool
) -> None:
    """`rule: error` and `rule: {severity: error}` say the same; files must agree on what they
    say, not on how they write it."""
    short = f'version: 1\nchecks:\n  {rule.id}: "{severity}"\n'
    mapping = f'version: 1\nchecks:\n  {rule.id}: {{severity: "{other}"}}\n'
    with tempfile.TemporaryDirectory() as directory:
        first, second = Path(directory, "a.yaml"), Path(directory, "b.yaml")
        first.write_text(mapping if mapping_first else short)
        second.write_text(short if mapping_first else mapping)
        if severity != other:
            with pytest.raises(ManifestInvalid) as refused:
                load_manifest([first, second])
            [problem] = refused.value.problems
            assert problem.message.startswith("differs from the checks settings at ")
            return
        manifest = load_manifest([first, second])
    assert RuleSettings(manifest.checks).severity(rule) == severity


def test_the_checks_block_of_one_file_applies_to_the_projects_of_another(
    tmp_path: Path, write: Write
) -> None:
    project = write(
        "project.yaml", preview="policies: [{name: q, enabled: true, logging: {query: true}}]"
    )
    settings = tmp_path / "settings.yaml"
    settings.write_text("version: 1\nchecks: {query-logging: error}\n")
    code, out, _ = run("validate", "-f", str(settings), "-f", str(project))
    assert code == 1 and "[query-logging]" in out
