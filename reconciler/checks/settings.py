"""The meaning of the `checks:` block and of the waivers on objects.

A rule's setting is a severity (`production-healthcheck: error`) or a mapping with an
optional `severity` and the rule's parameters. A rule that is off by default and is given
parameters without a severity is on, as an error: writing `allowed-regions: {allowed: [fra]}`
and seeing nothing would be the silent failure these rules exist to prevent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.checks.findings import Finding, Hit
from reconciler.checks.registry import RULES_BY_ID, Rule, Severity
from reconciler.manifest.model import ChecksSettings, Scope, Waiver


@dataclass(frozen=True)
class RuleSettings:
    """The `checks:` settings of one manifest, asked rule by rule."""

    settings: ChecksSettings

    def severity(self, rule: Rule) -> Severity:
        setting = self.settings.rules.get(rule.id)
        if isinstance(setting, str):
            return setting  # type: ignore[return-value]  # the schema allows only severities
        if setting is None:
            return rule.default_severity
        if "severity" in setting:
            return setting["severity"]  # type: ignore[no-any-return]
        has_params = any(param.name in setting for param in rule.params)
        return "error" if has_params and rule.default_severity == "off" else rule.default_severity

    def is_on(self, rule: Rule) -> bool:
        return self.severity(rule) != "off"

    def param(self, rule: Rule, name: str) -> Any:
        setting = self.settings.rules.get(rule.id)
        if isinstance(setting, Mapping) and name in setting:
            return setting[name]
        return rule.param(name).default

    def waiver(self, rule: str, scope: Scope) -> Waiver | None:
        """The waiver nearest to the object: its own, else its app's, else its project's."""
        for end in range(len(scope), 0, -1):
            waiver = self.settings.waivers.get(scope[:end], {}).get(rule)
            if waiver is not None:
                return waiver
        return None

    def judge(self, hits: Iterable[Hit]) -> list[Finding]:
        """The findings of the hits of rules that are on, sorted by place."""
        findings = []
        for hit in hits:
            severity = self.severity(RULES_BY_ID[hit.rule])
            if severity == "off":
                continue
            waiver = self.waiver(hit.rule, hit.scope)
            findings.append(
                Finding.at(
                    hit.position,
                    hit.path,
                    hit.message,
                    severity,
                    rule=hit.rule,
                    waiver=None if waiver is None else waiver.reason,
                )
            )
        return sorted(set(findings))
