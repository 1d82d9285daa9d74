"""`reconciler test` results (reconciler/policy_tests/run.py) as text (people), JSON
(`format_version` 1.0) or JUnit XML (CI).

The JSON shape is a contract: `{"format_version": "1.0", "results": [{"environment", "name",
"expected", "actual", "decidedBy", "loggedBy", "passed"}], "summary": {"passed", "failed"}}`.
A live run adds `"skipped": N` to the summary and, on a skipped result, `"skipped": reason`
(with `actual` and `passed` null) and `"host"` on results that were sent.

Names, requests and reasons come from the manifest (and a live run's server): text and JUnit
show each through `reconciler.escaping.clean`, so a line break or escape sequence in a test's
name never starts a line of its own (a forged `PASS`) or reaches the terminal, and the XML is
well-formed whatever a name holds. JSON keeps the text exact (its encoder escapes it).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby
from typing import Any

from reconciler.escaping import clean
from reconciler.policy_tests.run import TestResult, describe, summary

FORMAT_VERSION = "1.0"
_LABEL = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}


def render_text(results: Sequence[TestResult]) -> str:
    lines: list[str] = []
    for environment, grouped in groupby(results, key=lambda r: r.environment):
        lines.append(environment)
        for result in grouped:
            lines.append(f"  {_LABEL[result.status]}  {result.name}")
            lines += [f"        {line}" for line in _details(result)]
    lines.append(_summary_line(results))
    return "\n".join(map(clean, lines)) + "\n"


def _details(result: TestResult) -> list[str]:
    if result.status == "skipped":
        return [f"skipped: {result.skip_reason}"]
    if result.status == "passed":
        return []
    where = f" ({result.position})" if result.position else ""
    sent = f" to {result.host}" if result.host else ""
    return [
        f"{describe(result.test)}{sent}{where}",
        *result.failures,
        *result.explanation.split("\n"),
    ]


def _summary_line(results: Sequence[TestResult]) -> str:
    counts = summary(results)
    if not results:
        return "No policy tests to run."
    parts = [f"{counts['passed']} passed", f"{counts['failed']} failed"]
    if counts["skipped"]:
        parts.append(f"{counts['skipped']} skipped")
    return ", ".join(parts) + "."


def render_json(results: Sequence[TestResult], *, live: bool = False) -> str:
    counts = summary(results)
    totals: dict[str, int] = {"passed": counts["passed"], "failed": counts["failed"]}
    if live:
        totals["skipped"] = counts["skipped"]
    document = {
        "format_version": FORMAT_VERSION,
        "results": [_result_json(result, live=live) for result in results],
        "summary": totals,
    }
    return json.dumps(document, indent=2) + "\n"


def _result_json(result: TestResult, *, live: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "environment": result.environment,
        "name": result.name,
        "expected": result.test.expect,
        "actual": result.actual,
        "decidedBy": result.decided_by,
        "loggedBy": None if result.logged_by is None else list(result.logged_by),
        "passed": None if result.status == "skipped" else result.passed,
    }
    if live:
        if result.status == "skipped":
            item["skipped"] = result.skip_reason
        else:
            item["host"] = result.host
    return item


def render_junit(results: Sequence[TestResult]) -> str:
    """One `testsuite` per environment, one `testcase` per test (a `failure` holding why, or
    `skipped` with the reason)."""
    counts = summary(results)
    root = ET.Element(
        "testsuites",
        name="reconciler policy tests",
        tests=str(len(results)),
        failures=str(counts["failed"]),
        skipped=str(counts["skipped"]),
        errors="0",
    )
    for environment, grouped in groupby(results, key=lambda r: r.environment):
        _suite(root, environment, list(grouped))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _suite(root: ET.Element, environment: str, results: list[TestResult]) -> None:
    counts = summary(results)
    suite = ET.SubElement(
        root,
        "testsuite",
        name=clean(environment),
        tests=str(len(results)),
        failures=str(counts["failed"]),
        skipped=str(counts["skipped"]),
        errors="0",
    )
    for result in results:
        case = ET.SubElement(
            suite, "testcase", name=clean(result.name), classname=clean(environment)
        )
        if result.position is not None:
            case.set("file", clean(result.position.file))
            case.set("line", str(result.position.line))
        if result.status == "failed":
            failure = ET.SubElement(
                case,
                "failure",
                message=clean("; ".join(result.failures)),
                type="PolicyTestFailure",
            )
            failure.text = "\n".join(map(clean, _details(result)))
        elif result.status == "skipped":
            ET.SubElement(case, "skipped", message=clean(result.skip_reason))
