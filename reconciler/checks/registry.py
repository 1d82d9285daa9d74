"""The built-in rules: what each one checks, why, how severe it is by default, when it runs.

The registry is the one source of truth about rules: the `checks:` part of the manifest JSON
Schema is generated from it (`checks_schema`; tests/checks/test_registry.py keeps the shipped
schema equal to it), the SARIF output names its rules from it, and docs/guides/checks.md
documents every entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "off"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "off")
Stage = Literal["static", "plan"]
"""`static` rules read the manifest alone (`validate`); `plan` rules read the plan's changes."""


@dataclass(frozen=True)
class Param:
    """A parameter of a rule, set in the top-level `checks:` block."""

    name: str
    schema: Mapping[str, Any]
    default: Any
    description: str
    example: Any


@dataclass(frozen=True)
class Rule:
    id: str
    rationale: str
    """One line: why the rule exists."""
    default_severity: Severity
    stage: Stage
    fix: str
    """What to change to satisfy the rule (the finding's help text)."""
    params: tuple[Param, ...] = ()
    workspace: bool = False
    """The rule judges the whole workspace, not an object (a finding has no object a waiver
    could be on): only the top-level `checks:` block sets it, and a waiver is refused."""

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


_REGION_NAMES = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 64}}
_REPLICAS = {"type": "integer", "minimum": 0}

RULES: tuple[Rule, ...] = (
    Rule(
        "production-healthcheck",
        "Without a health check the platform never restarts a hung production instance, "
        "and traffic keeps reaching it.",
        "warning",
        "static",
        "set runtime.healthcheck (method and path) for the production environment",
    ),
    Rule(
        "production-delete-protection",
        "Projects and apps serve production; one mistaken delete removes their deployments, "
        "domains and variables at once.",
        "off",
        "static",
        "set deleteProtection: true on the project and on each of its apps",
    ),
    Rule(
        "production-body-logging",
        "Request and response bodies carry passwords, tokens and personal data; production "
        "logs must not keep them.",
        "error",
        "static",
        "drop requestBody and responseBody from the production logging policy",
    ),
    Rule(
        "query-logging",
        "Query strings carry secrets (tokens, signed URLs), which is why the platform logs them "
        "only on request.",
        "warning",
        "static",
        "drop query from the logging policy",
    ),
    Rule(
        "secrets-writeonly",
        "A value read with fromEnv or fromFile is a secret; kind recoverable lets anyone with "
        "read access to the environment read it back.",
        "error",
        "static",
        "remove `kind: recoverable` (fromEnv and fromFile default to writeonly)",
    ),
    Rule(
        "writeonly-stays-writeonly",
        "Turning a write-only variable recoverable makes a secret readable through the API "
        "and the dashboard.",
        "error",
        "plan",
        "keep the variable writeonly, or rotate the secret and store it under a new key",
    ),
    Rule(
        "allowed-regions",
        "Data residency and cost rules allow only some regions.",
        "off",
        "static",
        "use one of the allowed regions, or add the region to checks.allowed-regions.allowed",
        (
            Param(
                "allowed",
                _REGION_NAMES,
                (),
                "The region names environments may use. Giving it without a severity turns "
                "the rule on as an error.",
                ["fra", "iad"],
            ),
        ),
    ),
    Rule(
        "replica-bounds",
        "A runaway replicas.max multiplies the bill and the workspace quota; a production "
        "replicas.min below the floor leaves no instance to fail over to.",
        "off",
        "static",
        "keep replicas.max at or below maxReplicas and production replicas.min at or above "
        "productionMinReplicas",
        (
            Param("maxReplicas", _REPLICAS, 20, "The most replicas.max a region may ask for.", 10),
            Param(
                "productionMinReplicas",
                _REPLICAS,
                2,
                "The fewest replicas.min a production region may keep.",
                2,
            ),
        ),
    ),
    Rule(
        "pinned-images",
        "An image without a digest or with the tag latest changes under the app at the next "
        "deployment, unreviewed.",
        "warning",
        "static",
        "pin the image to a version tag (other than latest) or a digest (@sha256:...)",
    ),
    Rule(
        "policy-tests",
        "A gateway policy list without sample requests can block the wrong traffic, or none, "
        "and nobody notices until production does.",
        "off",
        "static",
        "add policyTests beside the environment's policies",
    ),
    Rule(
        "capacity-limits",
        "Over the workspace quota, the platform fails deployments later with "
        "cpu_quota_exceeded, memory_quota_exceeded or storage_quota_exceeded.",
        "error",
        "plan",
        "lower vCpus, memoryMib, storageMib or replicas.max, or raise the top-level limits",
        workspace=True,
    ),
)

RULES_BY_ID: Mapping[str, Rule] = {rule.id: rule for rule in RULES}


def checks_schema() -> dict[str, Any]:
    """The schema of the top-level `checks:` block: every rule, its severity and parameters."""
    return {
        "title": "Checks",
        "type": "object",
        "description": "Severity (error, warning or off) and parameters of the built-in rules. "
        "Must agree across files. An error finding fails validate and plan.",
        "examples": [{"production-healthcheck": "error", "allowed-regions": {"allowed": ["fra"]}}],
        "additionalProperties": False,
        "properties": {rule.id: _rule_setting_schema(rule) for rule in RULES},
    }


def _rule_setting_schema(rule: Rule) -> dict[str, Any]:
    severity = {
        "title": f"Severity of {rule.id}",
        "type": "string",
        "enum": list(SEVERITIES),
        "description": f"error fails the command, warning is shown, off skips the rule. "
        f"Default {rule.default_severity}.",
        "examples": ["error"],
    }
    properties: dict[str, Any] = {"severity": severity}
    for param in rule.params:
        properties[param.name] = {
            "title": f"{rule.id}: {param.name}",
            **param.schema,
            "description": param.description,
            "examples": [param.example],
        }
    example: Any = {"severity": "error"}
    if rule.params:
        first = rule.params[0]
        example = {first.name: properties[first.name]["examples"][0]}
    return {
        "title": f"Rule {rule.id}",
        "description": f"{rule.rationale} Default severity: {rule.default_severity}.",
        "examples": [rule.default_severity, example],
        "anyOf": [
            {"type": "string", "enum": list(SEVERITIES)},
            {"type": "object", "additionalProperties": False, "properties": properties},
        ],
    }


def waivers_schema() -> dict[str, Any]:
    """The schema of an object's `checks:` block: waivers, each with its reason."""
    return {
        "title": "Waived checks",
        "type": "object",
        "description": "Rules that do not apply to this object and everything below it, each "
        'with the reason, which findings show: `{<rule>: {"off": true, reason: ...}}` '
        '(quote `"off"`: YAML 1.1 reads it as false).',
        "examples": [{"production-healthcheck": {"off": True, "reason": "a batch worker"}}],
        "additionalProperties": False,
        "properties": {rule.id: _waiver_schema(rule) for rule in RULES},
    }


def _waiver_schema(rule: Rule) -> dict[str, Any]:
    if rule.workspace:
        # Refused with its own message rather than left out: an unknown key would read as a
        # typo, and accepted it would silence nothing (its findings belong to no object).
        return {
            "title": f"{rule.id} cannot be waived here",
            "description": f"Not allowed: {rule.id} judges the whole workspace; set its "
            "severity in the top-level checks block instead.",
            "not": {},
            "errorMessage": f"{rule.id} cannot be waived on a project, app or environment: it "
            "judges the whole workspace (the platform's quotas count every environment), so "
            "no object's waiver can match its finding; set its severity for the workspace in "
            f'the top-level checks block (checks: {{{rule.id}: warning}}, or "off"), or '
            "raise the limits",
        }
    return {
        "title": f"Waiver of {rule.id}",
        "$ref": "#/$defs/waiver",
        "description": f"Turns {rule.id} off here, for the reason given.",
        "examples": [{"off": True, "reason": "agreed with the platform team"}],
    }


WAIVER_SCHEMA: dict[str, Any] = {
    "title": "Waiver",
    "type": "object",
    "description": "A rule turned off on one object; the reason is required and shown.",
    "examples": [{"off": True, "reason": "internal tool, no personal data"}],
    "additionalProperties": False,
    "required": ["off", "reason"],
    "properties": {
        "off": {
            "title": "Rule off",
            "type": "boolean",
            "const": True,
            "description": "Must be true: the rule does not apply here.",
            "examples": [True],
        },
        "reason": {
            "title": "Reason",
            "type": "string",
            "minLength": 1,
            "maxLength": 1000,
            "description": "Why the rule does not apply; every finding it silences shows it.",
            "examples": ["internal tool, no personal data"],
        },
    },
}

LIMITS_SCHEMA: dict[str, Any] = {
    "title": "Workspace limits",
    "type": "object",
    "description": "The most the workspace may run at once (the platform's quotas); a plan "
    "whose capacity ceiling exceeds one has a capacity-limits finding.",
    "examples": [{"vCpus": 64, "memoryMib": 131072, "storageMib": 1048576}],
    "additionalProperties": False,
    "properties": {
        "vCpus": {
            "title": "vCPU limit",
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Most vCPUs of every instance together.",
            "examples": [64],
        },
        "memoryMib": {
            "title": "Memory limit",
            "type": "integer",
            "minimum": 1,
            "description": "Most memory (MiB) of every instance together.",
            "examples": [131072],
        },
        "storageMib": {
            "title": "Storage limit",
            "type": "integer",
            "minimum": 0,
            "description": "Most storage (MiB) of every instance together.",
            "examples": [1048576],
        },
    },
}
