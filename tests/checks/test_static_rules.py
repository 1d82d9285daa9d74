"""Every static rule with a manifest that breaks it and one that satisfies it, each turned on
(rules off by default are switched on in the `checks:` block of the case)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reconciler.checks.registry import RULES
from reconciler.checks.static import is_pinned, static_findings
from reconciler.manifest.build import build_manifest
from reconciler.manifest.document import merge_files
from reconciler.manifest.load import read_files
from tests.checks.conftest import Write
from tests.checks.manifests import findings_of, manifest_text, rules_found

LOG_BODY = """
policies:
  - name: log-api
    enabled: true
    logging: {requestHeaders: true, %s: true}
"""


@dataclass(frozen=True)
class Case:
    rule: str
    breaks: dict[str, str]
    keeps: dict[str, str]
    line: int | None = None
    """The line of the finding in the breaking manifest, when the case pins it."""
    also: dict[str, str] = field(default_factory=dict)
    """Parts both manifests share (the `checks:` block turning the rule on)."""


CASES = [
    Case(
        "production-healthcheck",
        {"production": "runtime: {port: 8080}"},
        {"production": "runtime: {port: 8080, healthcheck: {method: GET, path: /up}}"},
        line=13,
        also={"checks": "production-healthcheck: warning"},
    ),
    Case(
        "production-healthcheck",  # an explicit null removes it: the same finding
        {"production": "runtime: {port: 8080, healthcheck: null}"},
        {
            "preview": "runtime: {port: 8080}",
            "production": "runtime: {healthcheck: {method: GET, path: /}}",
        },
        also={"checks": "production-healthcheck: error"},
    ),
    Case(
        "production-delete-protection",
        {"app_protection": "false"},
        {},
        line=9,
        also={"checks": "production-delete-protection: error"},
    ),
    Case(
        "production-body-logging",
        {"production": LOG_BODY % "requestBody"},
        {"production": LOG_BODY % "responseHeaders"},
        line=12,
    ),
    Case(
        "production-body-logging",
        {"production": LOG_BODY % "responseBody"},
        {"preview": LOG_BODY % "responseBody"},
    ),
    Case(
        "query-logging",
        {"preview": LOG_BODY % "query"},
        {"preview": LOG_BODY % "responseHeaders"},
        line=14,
    ),
    Case(
        "secrets-writeonly",
        {"production": "variables: {TOKEN: {fromEnv: TOKEN, kind: recoverable}}"},
        {"production": "variables: {TOKEN: {fromEnv: TOKEN}, MODE: {value: x, kind: recoverable}}"},
        line=11,
    ),
    Case(
        "allowed-regions",
        {
            "production": "regions: [{name: fra, replicas: {min: 2, max: 4}}, {name: sfo, replicas: {min: 2, max: 4}}]"
        },
        {"production": "regions: [{name: fra, replicas: {min: 2, max: 4}}]"},
        also={"checks": "allowed-regions: {allowed: [fra, iad]}"},
    ),
    Case(
        "replica-bounds",
        {"production": "regions: [{name: fra, replicas: {min: 2, max: 11}}]"},
        {"production": "regions: [{name: fra, replicas: {min: 2, max: 10}}]"},
        also={"checks": "replica-bounds: {maxReplicas: 10}"},
    ),
    Case(
        "replica-bounds",
        {"production": "regions: [{name: fra, replicas: {min: 1, max: 3}}]"},
        {"preview": "regions: [{name: fra, replicas: {min: 0, max: 3}}]"},
        also={"checks": "replica-bounds: warning"},
    ),
    Case(
        "pinned-images",
        {"image": "ghcr.io/acme/web:latest"},
        {"image": "ghcr.io/acme/web@sha256:" + "a" * 64},
    ),
    Case(
        "policy-tests",
        {"production": "policies: [{name: p, enabled: true, firewall: {action: ACTION_DENY}}]"},
        {"production": "policies: []"},
        also={"checks": "policy-tests: warning"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}-{i}" for i, c in enumerate(CASES)])
def test_rule_finds_what_breaks_it_and_nothing_else(case: Case, write: Write) -> None:
    breaking = write("breaks.yaml", **{**case.also, **case.breaks})
    keeping = write("keeps.yaml", **{**case.also, **case.keeps})
    found = [f for f in findings_of(breaking) if f.rule == case.rule]
    assert found, f"{case.rule} found nothing in:\n{breaking.read_text()}"
    if case.line is not None:
        assert {f.line for f in found} == {case.line}
        assert all(f.file == str(breaking) and f.column > 0 for f in found)
    assert case.rule not in rules_found(keeping)


def test_every_static_rule_has_a_case() -> None:
    static = {rule.id for rule in RULES if rule.stage == "static"}
    assert static == {case.rule for case in CASES}


def test_a_rule_that_is_off_finds_nothing(write: Write) -> None:
    path = write(production=LOG_BODY % "requestBody", checks='production-body-logging: "off"')
    assert "production-body-logging" not in rules_found(path)
    assert "production-healthcheck" in rules_found(write("on.yaml", healthcheck=False))
    turned_off = write("off.yaml", healthcheck=False, checks='production-healthcheck: "off"')
    assert "production-healthcheck" not in rules_found(turned_off)


def test_the_severity_comes_from_the_checks_block(write: Write) -> None:
    default = findings_of(write(preview=LOG_BODY % "query"))
    raised = findings_of(
        write("raised.yaml", preview=LOG_BODY % "query", checks="query-logging: error")
    )
    assert [f.severity for f in default] == ["warning"]
    assert [f.severity for f in raised] == ["error"]
    keyed = findings_of(
        write("keyed.yaml", preview=LOG_BODY % "query", checks="query-logging: {severity: error}")
    )
    assert [f.severity for f in keyed] == ["error"]


def test_parameters_without_a_severity_turn_an_off_rule_on_as_an_error(write: Write) -> None:
    region = "regions: [{name: sfo, replicas: {min: 2, max: 2}}]"
    path = write(production=region, checks="allowed-regions: {allowed: [fra]}")
    [finding] = [f for f in findings_of(path) if f.rule == "allowed-regions"]
    assert finding.severity == "error"
    assert "'sfo' is not allowed; allowed: fra" in finding.message
    warned = write(
        "warned.yaml",
        production=region,
        checks="allowed-regions: {severity: warning, allowed: [fra]}",
    )
    assert [f.severity for f in findings_of(warned) if f.rule == "allowed-regions"] == ["warning"]


def test_replica_bounds_parameters_have_defaults(write: Write) -> None:
    path = write(
        production="regions: [{name: fra, replicas: {min: 1, max: 21}}]",
        checks="replica-bounds: warning",
    )
    messages = sorted(f.message for f in findings_of(path) if f.rule == "replica-bounds")
    assert messages == [
        "replicas.max 21 in fra is above 20",
        "replicas.min 1 in fra is below the production floor of 2",
    ]


@pytest.mark.parametrize(
    ("image", "pinned"),
    [
        ("nginx:1.27", True),
        ("ghcr.io/acme/web@sha256:" + "0" * 64, True),
        ("registry.example.com:5000/web:2", True),
        ("nginx:latest", False),
        ("registry.example.com:5000/web", False),
        ("nginx", False),
    ],
)
def test_is_pinned(image: str, pinned: bool) -> None:
    assert is_pinned(image) is pinned


def test_policy_tests_reads_policy_tests_from_the_environment_or_defaults(tmp_path: Path) -> None:
    """`policyTests` is read as written, from the environment or from `defaults`. The schema
    that accepts it comes with the policy tests themselves, so this builds the model from the
    merged document, past the schema."""
    policies = "policies: [{name: p, enabled: true, firewall: {action: ACTION_DENY}}]"
    text = manifest_text(checks="policy-tests: warning", production=policies)
    both = text.replace(
        "        environments:\n", "        defaults: {policyTests: []}\n        environments:\n"
    )
    path = tmp_path / "m.yaml"
    path.write_text(both)
    files, problems = read_files([path])
    assert not problems
    manifest = build_manifest(merge_files(files)[0])
    assert manifest.checks.tested_environments == {
        ("shop", "web", "production"),
        ("shop", "web", "preview"),
    }
    assert not [f for f in static_findings(manifest) if f.rule == "policy-tests"]
    path.write_text(text)
    assert [f.rule for f in findings_of(path)] == ["policy-tests"]
