"""Findings and manifest problems as a SARIF 2.1.0 log, for code-scanning annotations.

Every text a manifest wrote (a message quoting a key, a waiver's reason) is escaped as the text
output escapes it (`reconciler.escaping.clean`): one line, nothing invisible, in an annotation
too; file names are percent-encoded URI references.

GitHub's upload-sarif (and other code-scanning tools) show each result on the line it names in
the pull request. A waived finding is a result with an in-source suppression carrying the
waiver's reason, so the tools list it as dismissed instead of hiding it. What the manifests turn
off or down is in the log too, whether or not it silenced a finding: a rule set below its default
as a rule configuration override of the run's invocation, a waiver as a notification of the tool's
configuration at the waiver's place.
tests/checks/test_sarif.py validates the output against the OASIS schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from reconciler import __version__
from reconciler.checks.findings import Finding
from reconciler.checks.overrides import Override
from reconciler.checks.registry import RULES, Rule
from reconciler.diagnostics import Diagnostic
from reconciler.escaping import clean
from reconciler.manifest.problems import Problem

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://acme.github.io/reconciler/guides/checks/"
MANIFEST_RULE = "manifest"
"""The rule id of what validation itself refuses or warns about (schema and platform rules)."""
_LEVELS = {"error": "error", "warning": "warning", "off": "none"}


def render_sarif(
    findings: Sequence[Finding],
    problems: Iterable[Problem] = (),
    overrides: Iterable[Override] = (),
) -> str:
    return json.dumps(sarif_log(findings, problems, overrides), indent=2) + "\n"


def sarif_log(
    findings: Sequence[Finding],
    problems: Iterable[Problem] = (),
    overrides: Iterable[Override] = (),
) -> dict[str, Any]:
    rules = [_manifest_rule(), *(_rule(rule) for rule in RULES)]
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    results = [
        _result(diagnostic, index[diagnostic.rule or MANIFEST_RULE])
        for diagnostic in (*problems, *findings)
    ]
    present = [override for override in overrides if override.change != "removed"]
    invocation = {
        "executionSuccessful": True,
        "ruleConfigurationOverrides": [
            _configuration_override(override, index[override.rule])
            for override in present
            if override.kind != "waiver"
        ],
        "toolConfigurationNotifications": [
            _waiver_notification(override, index[override.rule])
            for override in present
            if override.kind == "waiver"
        ],
    }
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "reconciler",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "invocations": [invocation],
                "results": results,
            }
        ],
    }


def _manifest_rule() -> dict[str, Any]:
    return {
        "id": MANIFEST_RULE,
        "name": "ManifestValid",
        "shortDescription": {"text": "The manifest is valid YAML, schema and platform rules."},
        "help": {"text": "Fix the value as the message says; `reconciler validate` lists all."},
        "defaultConfiguration": {"level": "error"},
    }


def _rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": "".join(part.capitalize() for part in rule.id.split("-")),
        "shortDescription": {"text": rule.rationale},
        "help": {"text": rule.fix},
        "helpUri": f"{INFORMATION_URI}#{rule.id}",
        "defaultConfiguration": {"level": _LEVELS[rule.default_severity]},
        "properties": {"stage": rule.stage},
    }


def _location(file: str, line: int, column: int, path: str) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(file)}}
    if line > 0:
        physical["region"] = {"startLine": line, "startColumn": max(column, 1)}
    location: dict[str, Any] = {"physicalLocation": physical}
    if path:
        location["logicalLocations"] = [{"fullyQualifiedName": path}]
    return location


def _uri(file: str) -> str:
    """A relative path stays relative (code scanning resolves it from the repository root),
    percent-encoded as a URI reference is (a line break, a space, `#` in a file's name); an
    absolute one becomes a file URI."""
    path = Path(file)
    return path.as_uri() if path.is_absolute() else quote(path.as_posix(), safe="/")


def _result(diagnostic: Diagnostic, rule_index: int) -> dict[str, Any]:
    """A problem of validation (the `manifest` rule) or a finding of a built-in check."""
    result: dict[str, Any] = {
        "ruleId": diagnostic.rule or MANIFEST_RULE,
        "ruleIndex": rule_index,
        "level": diagnostic.severity,
        "message": {"text": clean(diagnostic.message)},
        "locations": [
            _location(diagnostic.file or "", diagnostic.line, diagnostic.column, diagnostic.path)
        ],
    }
    if diagnostic.waiver is not None:
        result["suppressions"] = [
            {"kind": "inSource", "justification": clean(diagnostic.waiver)}
        ]
    return result


def _configuration_override(override: Override, rule_index: int) -> dict[str, Any]:
    """A rule the manifests set below its default: off (disabled) or a lower level."""
    configuration: dict[str, Any] = (
        {"enabled": False}
        if override.severity == "off"
        else {"level": _LEVELS[override.severity or "off"]}
    )
    return {
        "descriptor": {"id": override.rule, "index": rule_index},
        "configuration": configuration,
        "properties": {"manifestPath": override.path, **_place(override)},
    }


def _waiver_notification(override: Override, rule_index: int) -> dict[str, Any]:
    """A waiver, at the place it was written, with its reason."""
    notification: dict[str, Any] = {
        "level": "note",
        "message": {"text": clean(override.description)},
        "associatedRule": {"id": override.rule, "index": rule_index},
    }
    position = override.position
    if position is not None:
        notification["locations"] = [
            _location(position.file, position.line, position.column, override.path)
        ]
    return notification


def _place(override: Override) -> dict[str, Any]:
    position = override.position
    if position is None:
        return {}
    return {"file": position.file, "line": position.line, "column": position.column}
