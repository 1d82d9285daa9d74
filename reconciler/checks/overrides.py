"""What a manifest turns off or down: the decisions about the checks that a reviewer must see.

A pull request can silence a rule in a line of a new file (`checks: {secrets-writeonly: "off"}`)
or waive it on one object. Findings cannot show that (a silenced rule finds nothing), so every
such decision is part of the plan in its own right: a rule set below its default severity (off,
or an error rule made a warning) and every waiver, with its reason and where it was written.

Compared with the manifest of the branch a pull request merges into (`plan --base-ref REF`),
each override is also marked `added`, `changed` or `removed`, so a change of the checks alone
is a change of the plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from reconciler.checks.registry import RULES, Severity
from reconciler.checks.settings import RuleSettings
from reconciler.diagnostics import INFO, Diagnostic
from reconciler.json_types import JsonValue
from reconciler.manifest.model import ChecksSettings, Position
from reconciler.manifest.problems import format_path

OverrideKind = Literal["off", "lowered", "waiver"]
OverrideChange = Literal["added", "changed", "removed"]
_RANK: dict[Severity, int] = {"off": 0, "warning": 1, "error": 2}


@dataclass(frozen=True, order=True)
class Override:
    """One rule turned off or lowered for the whole workspace, or waived on one object.

    `path` is where in the manifest, as problems name it (`checks.secrets-writeonly`,
    `projects.shop.apps.web.checks.production-healthcheck`); `severity` is the severity the
    manifest sets (None for a waiver) and `default` the rule's own; `reason` a waiver's.
    `change` is set only when the plan was compared with a base (`plan --base-ref`)."""

    position: Position | None
    path: str
    rule: str
    kind: OverrideKind
    default: Severity
    severity: Severity | None = None
    reason: str | None = None
    change: OverrideChange | None = None

    @property
    def identity(self) -> tuple[str, str]:
        """What stays the same when the override's content changes: the rule and the path."""
        return self.rule, self.path

    @property
    def content(self) -> tuple[Severity | None, str | None]:
        return self.severity, self.reason

    @property
    def description(self) -> str:
        """`rule production-healthcheck waived on projects.shop.apps.web: a batch worker`."""
        if self.kind == "waiver":
            owner = self.path.removesuffix(f".checks.{self.rule}")
            return f"{self.rule} waived for {owner}: {self.reason}"
        return f"{self.rule} set to {self.severity} (default: {self.default})"

    @property
    def diagnostic(self) -> Diagnostic:
        """The override as a note at the place it was written, as `validate` prints it."""
        if self.position is None:
            return Diagnostic(INFO, self.description, path=self.path)
        return Diagnostic.at(self.position, self.path, self.description, INFO)

    @property
    def located(self) -> str:
        """`file:line:column: path: description`, as problems and findings read."""
        return self.diagnostic.located_message

    def to_json(self) -> dict[str, JsonValue]:
        position = self.position
        return {
            "rule": self.rule,
            "kind": self.kind,
            "path": self.path,
            "file": position.file if position else None,
            "line": position.line if position else None,
            "column": position.column if position else None,
            "setting": self.severity,
            "default_severity": self.default,
            "reason": self.reason,
            "change": self.change,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Override:
        """Inverse of `to_json` (a saved plan shown again); KeyError or TypeError for another
        shape."""
        file = data["file"]
        position = None if file is None else Position(file, data["line"], data["column"])
        if position is not None and not (
            isinstance(file, str) and isinstance(data["line"], int)
            and isinstance(data["column"], int)
        ):  # fmt: skip
            raise TypeError("position")
        kind, default, setting, change = (
            data["kind"], data["default_severity"], data["setting"], data["change"]
        )  # fmt: skip
        if (
            kind not in get_args(OverrideKind)
            or default not in _RANK
            or (setting is not None and setting not in _RANK)
            or (change is not None and change not in get_args(OverrideChange))
        ):
            raise TypeError("override")
        reason = data["reason"]
        if not all(isinstance(data[k], str) for k in ("rule", "path")) or not (
            reason is None or isinstance(reason, str)
        ):
            raise TypeError("override")
        return cls(position, data["path"], data["rule"], kind, default, setting, reason, change)


def overrides(settings: ChecksSettings) -> tuple[Override, ...]:
    """Every rule the settings set below its default, and every waiver, in manifest order (a
    waiver written in an app's `defaults` counts once, though both environments inherit it)."""
    judged = RuleSettings(settings)
    found: set[Override] = set()
    for rule in RULES:
        severity = judged.severity(rule)
        if _RANK[severity] < _RANK[rule.default_severity]:
            found.add(
                Override(
                    settings.positions.get(f"checks.{rule.id}"),
                    f"checks.{rule.id}",
                    rule.id,
                    "off" if severity == "off" else "lowered",
                    rule.default_severity,
                    severity,
                )
            )
    defaults = {rule.id: rule.default_severity for rule in RULES}
    seen: set[tuple[str, Position | None]] = set()
    for scope, waivers in settings.waivers.items():
        for rule_id, waiver in waivers.items():
            if (rule_id, waiver.pos) in seen:
                continue  # inherited from an app's defaults: the one the manifest wrote
            seen.add((rule_id, waiver.pos))
            found.add(
                Override(
                    waiver.pos,
                    format_path((*_scope_path(scope), "checks", rule_id)),
                    rule_id,
                    "waiver",
                    defaults.get(rule_id, "off"),
                    reason=waiver.reason,
                )
            )
    return tuple(sorted(found, key=_order))


def compared(now: tuple[Override, ...], base: tuple[Override, ...]) -> tuple[Override, ...]:
    """`now`, each marked `added` or `changed` against `base`, followed by what `base` had and
    `now` no longer has (`removed`); an override alike on both sides is left unmarked."""
    before = {override.identity: override for override in base}
    after = {override.identity for override in now}
    marked = [
        _marked(o, None if o.identity in before else "added")
        if o.identity not in before or before[o.identity].content == o.content
        else _marked(o, "changed")
        for o in now
    ]
    removed = [_marked(o, "removed") for o in base if o.identity not in after]
    return (*marked, *removed)


def _marked(override: Override, change: OverrideChange | None) -> Override:
    return dataclasses.replace(override, change=change)


def _scope_path(scope: tuple[str, ...]) -> tuple[str, ...]:
    names = ("projects", "apps", "environments")
    return tuple(part for pair in zip(names, scope, strict=False) for part in pair)


def _order(override: Override) -> tuple[str, int, int, str]:
    position = override.position
    if position is None:
        return ("", 0, 0, override.path)
    return (position.file, position.line, position.column, override.path)
