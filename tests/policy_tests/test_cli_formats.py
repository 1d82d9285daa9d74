"""`reconciler test`'s outputs and exit codes: the JSON contract, JUnit XML that CI can read,
text that says why a test failed, --target, and an invalid manifest."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from tests.policy_tests.cli_helpers import (
    Sample,
    firewall,
    logging,
    manifest_text,
    run_json,
    run_test,
    write,
)

ADMIN = {"path": {"path": {"prefix": "/admin"}}}
OFFICE = {"remoteIp": {"notIn": ["203.0.113.0/24"]}}
POLICIES = [logging("log-all"), firewall("admin-only-from-office", ADMIN, OFFICE)]
PASSING = Sample(
    "admin is closed to the internet",
    "/admin/users",
    "deny",
    decided_by="admin-only-from-office",
    logged_by=["log-all"],
)
FAILING = Sample("office reaches admin", "/admin/users", "allow", client_ip="198.51.100.9")


def two_environments(tmp_path: Path) -> Path:
    """shop/web/production with a passing and a failing test, shop/api/preview with one passing."""
    document = yaml.safe_load(manifest_text(POLICIES, [PASSING, FAILING]))
    other = yaml.safe_load(manifest_text(POLICIES, [PASSING], app="api", environment="preview"))
    document["projects"]["shop"]["apps"]["api"] = other["projects"]["shop"]["apps"]["api"]
    return write(tmp_path, yaml.safe_dump(document, sort_keys=False))


def test_json_is_the_documented_contract(tmp_path: Path) -> None:
    code, report = run_json("-f", two_environments(tmp_path))
    assert code == 1
    assert report == {
        "format_version": "1.0",
        "results": [
            {
                "environment": "shop/web/production",
                "name": "admin is closed to the internet",
                "expected": "deny",
                "actual": "deny",
                "decidedBy": "admin-only-from-office",
                "loggedBy": ["log-all"],
                "passed": True,
            },
            {
                "environment": "shop/web/production",
                "name": "office reaches admin",
                "expected": "allow",
                "actual": "deny",
                "decidedBy": "admin-only-from-office",
                "loggedBy": ["log-all"],
                "passed": False,
            },
            {
                "environment": "shop/api/preview",
                "name": "admin is closed to the internet",
                "expected": "deny",
                "actual": "deny",
                "decidedBy": "admin-only-from-office",
                "loggedBy": ["log-all"],
                "passed": True,
            },
        ],
        "summary": {"passed": 2, "failed": 1},
    }


def test_junit_has_one_suite_per_environment_and_carries_the_failure(tmp_path: Path) -> None:
    result = run_test("-f", two_environments(tmp_path), "--format", "junit")
    assert result.exit_code == 1
    root = ET.fromstring(result.stdout.encode())
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "1", "0")
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert list(suites) == ["shop/web/production", "shop/api/preview"]
    production = suites["shop/web/production"]
    assert (production.get("tests"), production.get("failures")) == ("2", "1")
    cases = {case.get("name"): case for case in production.iter("testcase")}
    assert cases["admin is closed to the internet"].find("failure") is None
    failure = cases["office reaches admin"].find("failure")
    assert failure is not None
    assert failure.get("message") == "expected allow, got deny by 'admin-only-from-office'"
    assert "#1 'admin-only-from-office' (firewall): applied, blocked the request (403)" in (
        failure.text or ""
    )
    assert cases["office reaches admin"].get("file", "").endswith("platform.yaml")
    assert suites["shop/api/preview"].get("failures") == "0"


def test_text_says_which_policy_decided_and_which_member_did_not_match(tmp_path: Path) -> None:
    samples = [Sample("office is blocked?", "/admin", "deny", client_ip="203.0.113.4")]
    result = run_test("-f", write(tmp_path, manifest_text(POLICIES, samples)))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "shop/web/production",
        "  FAIL  office is blocked?",
        f"        GET /admin from 203.0.113.4 ({tmp_path / 'platform.yaml'}:27:15)",
        "        expected deny, got allow",
        "        allowed: no firewall policy applied",
        "          #0 'log-all' (logging): applied, recorded the request",
        "          #1 'admin-only-from-office' (firewall): did not apply, match[1].remoteIp: "
        "client IP 203.0.113.4 is inside 203.0.113.0/24 (notIn)",
        "0 passed, 1 failed.",
    ]


def test_all_passing_exits_0(tmp_path: Path) -> None:
    result = run_test("-f", write(tmp_path, manifest_text(POLICIES, [PASSING])))
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("  PASS  admin is closed to the internet\n1 passed, 0 failed.\n")


def test_target_limits_the_run_to_environments_under_it(tmp_path: Path) -> None:
    manifest = two_environments(tmp_path)
    code, report = run_json("-f", manifest, "--target", "app.shop/api")
    assert code == 0
    assert [r["environment"] for r in report["results"]] == ["shop/api/preview"]
    code, report = run_json("-f", manifest, "--target", "policies.shop/web/production")
    assert code == 1 and len(report["results"]) == 2
    bad = run_test("-f", manifest, "--target", "shop/web")
    assert bad.exit_code == 1 and "invalid address 'shop/web'" in bad.stderr


def test_an_invalid_manifest_exits_1_with_its_problems(tmp_path: Path) -> None:
    samples = [Sample("bad", "/admin", "deny", decided_by="log-all")]
    result = run_test("-f", write(tmp_path, manifest_text(POLICIES, samples)))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "decidedBy names a firewall policy of its list" in result.stderr
    assert "platform.yaml:" in result.stderr


def test_a_manifest_without_tests_runs_none_and_passes(tmp_path: Path) -> None:
    result = run_test("-f", write(tmp_path, manifest_text(POLICIES, [])))
    assert (result.exit_code, result.stdout) == (0, "No policy tests to run.\n")
