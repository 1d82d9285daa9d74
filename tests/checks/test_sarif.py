"""SARIF output, validated against the official SARIF 2.1.0 JSON schema.

sarif-schema-2.1.0.json beside this file is the OASIS schema as published in the SARIF
specification repository:
https://github.com/oasis-tcs/sarif-spec/blob/main/sarif-2.1/schema/sarif-schema-2.1.0.json
(its `id`: https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from jsonschema import Draft4Validator

from reconciler.checks.registry import RULES
from reconciler.cli import main
from tests.checks.conftest import Write

SCHEMA = Path(__file__).with_name("sarif-schema-2.1.0.json")


@functools.cache
def _validator() -> Draft4Validator:
    schema = json.loads(SCHEMA.read_text())
    Draft4Validator.check_schema(schema)
    return Draft4Validator(schema)


def sarif_of(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["validate", "--format", "sarif", *args])
    log = json.loads(result.stdout)
    errors = [f"{list(e.path)}: {e.message}" for e in _validator().iter_errors(log)]
    assert not errors
    return result.exit_code, log


def test_the_schema_is_the_official_one() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema["id"] == (
        "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    )
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]


def test_findings_are_results_at_their_place_with_the_rules_described(write: Write) -> None:
    waiver = 'checks: {query-logging: {"off": true, reason: no tokens in URLs}}'
    logging = "policies: [{name: q, enabled: true, logging: {query: true, requestBody: true}}]"
    path = write(production=logging + "\n" + waiver, image="nginx:latest")
    code, log = sarif_of("-f", str(path))
    assert code == 1  # the body-logging error
    [run] = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["manifest", *(rule.id for rule in RULES)]
    results = {r["ruleId"]: r for r in run["results"]}
    assert set(results) == {"production-body-logging", "query-logging", "pinned-images"}
    body = results["production-body-logging"]
    assert body["level"] == "error" and rules[body["ruleIndex"]]["id"] == body["ruleId"]
    physical = body["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == path.as_uri()
    assert physical["region"] == {"startLine": 11, "startColumn": 24}
    waived = results["query-logging"]
    assert waived["suppressions"] == [{"kind": "inSource", "justification": "no tokens in URLs"}]
    assert "suppressions" not in results["pinned-images"]
    assert results["pinned-images"]["level"] == "warning"


def test_a_relative_path_stays_relative(write: Write, monkeypatch: Any) -> None:
    path = write(image="nginx:latest")
    monkeypatch.chdir(path.parent)
    _, log = sarif_of("-f", path.name)
    [result] = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "m.yaml"


def test_an_invalid_manifest_is_results_of_the_manifest_rule(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("version: 1\nprojects:\n  Shop: {}\n")
    code, log = sarif_of("-f", str(path))
    assert code == 1
    [result] = log["runs"][0]["results"]
    assert result["ruleId"] == "manifest" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 3


def test_a_clean_manifest_is_a_log_without_results(write: Write) -> None:
    code, log = sarif_of("-f", str(write()))
    assert code == 0 and log["runs"][0]["results"] == []
