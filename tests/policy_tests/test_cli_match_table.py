"""Every rule of the spec's match table, through `reconciler test` end to end: a manifest holds
the policies and a test of each request, the command reads it, evaluates and reports.

Each case runs the true expectation and its opposite side by side, so a rule evaluated the
wrong way fails one of the two, and the report must name the outcome that really happened."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reconciler.policy_tests.choices import split_target
from tests.policy_tests.cli_helpers import (
    Sample,
    firewall,
    logging,
    manifest_text,
    run_json,
    write,
)
from tests.policy_tests.test_match_table import OPEN_CHOICES, SPEC_RULES, Row


def sample_of(row: Row) -> Sample:
    path, query = split_target(row.target)
    return Sample(
        name=row.rule,
        path=path,
        query={name: values if len(values) > 1 else values[0] for name, values in query.items()},
        headers=row.headers,
        method=row.method,
        client_ip=row.client_ip or "198.51.100.1",
        expect="deny" if row.matches else "allow",
    )


def check_both_ways(
    tmp_path: Path, policies: list[dict[str, Any]], samples: list[Sample]
) -> list[dict[str, Any]]:
    """Run the samples and their opposites; return the results of the samples."""
    opposites = [
        Sample(**{**s.__dict__, "name": f"{s.name} (opposite)"}).flipped() for s in samples
    ]
    manifest = write(tmp_path, manifest_text(policies, [*samples, *opposites]))
    code, report = run_json("-f", manifest)
    results = report["results"]
    truths, wrong = results[: len(samples)], results[len(samples) :]
    assert code == 1
    assert [r["passed"] for r in truths] == [True] * len(samples), truths
    assert [r["passed"] for r in wrong] == [False] * len(samples), wrong
    for sample, result, opposite in zip(samples, truths, wrong, strict=True):
        assert result["actual"] == sample.expect == opposite["actual"]
        assert opposite["expected"] != sample.expect
    assert report["summary"] == {"passed": len(samples), "failed": len(samples)}
    return truths


def sendable(row: Row) -> bool:
    """A manifest's test request comes from an IP address (no Unix socket, no unknown client)."""
    try:
        ipaddress.ip_address(row.client_ip or "")
    except ValueError:
        return False
    return True


ROWS = [row for row in SPEC_RULES + OPEN_CHOICES if sendable(row)]


@pytest.mark.parametrize("row", ROWS, ids=[row.rule for row in ROWS])
def test_each_member_rule_of_the_match_table(tmp_path: Path, row: Row) -> None:
    [result] = check_both_ways(tmp_path, [firewall("rule", row.member)], [sample_of(row)])
    assert result["decidedBy"] == ("rule" if row.matches else None)


@dataclass(frozen=True)
class ListCase:
    rule: str
    policies: list[dict[str, Any]]
    samples: list[Sample]


ADMIN = {"path": {"path": {"prefix": "/admin"}}}
POST = {"method": {"methods": ["POST"]}}
OFFICE = {"remoteIp": {"in": ["203.0.113.0/24"]}}

LIST_CASES = [
    ListCase(
        "every item of match must match",
        [firewall("admin-post", ADMIN, POST)],
        [
            Sample("both match", "/admin", "deny", method="POST", decided_by="admin-post"),
            Sample("only the path matches", "/admin", "allow", method="GET"),
            Sample("only the method matches", "/shop", "allow", method="POST"),
        ],
    ),
    ListCase(
        "every member of one item must match",
        [firewall("admin-post", {**ADMIN, **POST})],
        [
            Sample("both members match", "/admin/x", "deny", method="POST"),
            Sample("one member misses", "/admin/x", "allow", method="PUT"),
        ],
    ),
    ListCase(
        "a missing match applies to every request",
        [firewall("everything")],
        [Sample("any request", "/anything", "deny", decided_by="everything")],
    ),
    ListCase(
        "an empty match applies to every request",
        [{**firewall("everything"), "match": []}],
        [Sample("any request", "/", "deny", method="OPTIONS", decided_by="everything")],
    ),
    ListCase(
        "a disabled policy is skipped",
        [firewall("off", ADMIN, enabled=False), logging("log-off", enabled=False)],
        [Sample("admin passes", "/admin", "allow", logged_by=[])],
    ),
    ListCase(
        "logging records and evaluation goes on",
        [logging("log-all"), logging("log-admin", ADMIN), firewall("deny-admin", ADMIN)],
        [
            Sample(
                "logged twice then denied",
                "/admin",
                "deny",
                decided_by="deny-admin",
                logged_by=["log-all", "log-admin"],
            ),
            Sample("logged once, allowed", "/shop", "allow", logged_by=["log-all"]),
        ],
    ),
    ListCase(
        "the first firewall policy that applies ends evaluation",
        [
            firewall("first", ADMIN),
            logging("log-after", ADMIN),
            firewall("second", ADMIN),
            firewall("office", OFFICE),
        ],
        [
            Sample("first decides", "/admin", "deny", decided_by="first", logged_by=[]),
            Sample(
                "a later one decides what the first lets through",
                "/shop",
                "deny",
                client_ip="203.0.113.5",
                decided_by="office",
                logged_by=[],
            ),
        ],
    ),
]


@pytest.mark.parametrize("case", LIST_CASES, ids=[case.rule for case in LIST_CASES])
def test_each_list_rule_of_the_gateway(tmp_path: Path, case: ListCase) -> None:
    results = check_both_ways(tmp_path, case.policies, case.samples)
    for sample, result in zip(case.samples, results, strict=True):
        if sample.decided_by is not None:
            assert result["decidedBy"] == sample.decided_by
        if sample.logged_by is not None:
            assert result["loggedBy"] == list(sample.logged_by)


def test_a_wrong_deciding_policy_or_logging_list_fails_the_test(tmp_path: Path) -> None:
    policies = [logging("log-admin", ADMIN), firewall("first", ADMIN), firewall("second", ADMIN)]
    samples = [
        Sample("decided by the second?", "/admin", "deny", decided_by="second"),
        Sample("logged by nothing?", "/admin", "deny", logged_by=[]),
        Sample("right", "/admin", "deny", decided_by="first", logged_by=["log-admin"]),
    ]
    code, report = run_json("-f", write(tmp_path, manifest_text(policies, samples)))
    assert code == 1
    assert [r["passed"] for r in report["results"]] == [False, False, True]
    assert report["results"][0]["decidedBy"] == "first"
    assert report["results"][1]["loggedBy"] == ["log-admin"]
