"""What a rule found, where, how severe, and whether a waiver silences it.

A rule yields `Hit`s; `judge` (settings.py) gives each its severity from the `checks:` block
and its waiver from the objects, making a `Finding`. Findings that are not waived become
`Problem`s, so `validate` prints them exactly as it prints its own errors and warnings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from reconciler.manifest.model import Position, Scope
from reconciler.manifest.problems import Problem

FindingSeverity = Literal["error", "warning"]


@dataclass(frozen=True)
class Hit:
    """One place a rule is not satisfied, before the settings say how much it matters.

    `scope` is the object the hit belongs to (a waiver there or above it silences it); `path`
    is where in the manifest, as validate's problems name it (`projects.shop.apps.web`)."""

    rule: str
    scope: Scope
    position: Position
    path: str
    message: str


@dataclass(frozen=True, order=True)
class Finding:
    position: Position
    rule: str
    path: str
    message: str
    severity: FindingSeverity
    waived: str | None = None
    """The reason of the waiver that silences it; a waived finding fails nothing."""

    @property
    def fails(self) -> bool:
        return self.severity == "error" and self.waived is None

    def to_problem(self) -> Problem:
        """The finding as validate's errors and warnings read (not for a waived one)."""
        return Problem.at(self.position, self.path, self.text, self.severity)

    @property
    def text(self) -> str:
        """The message with its rule id, and the waiver's reason when waived."""
        if self.waived is None:
            return f"{self.message} [{self.rule}]"
        return f"{self.message} [{self.rule} waived: {self.waived}]"

    def __str__(self) -> str:
        if self.waived is None:
            return str(self.to_problem())
        return f"note: {Problem.at(self.position, self.path, self.text).located_message}"

    @property
    def labelled(self) -> str:
        """`Error: file:line:column: path: message [rule]` (Warning, Waived), as the plan's
        text lists its notes."""
        label = "Waived" if self.waived is not None else self.severity.capitalize()
        located = Problem.at(self.position, self.path, self.text).located_message
        return f"{label}: {located}"

    def to_json(self) -> dict[str, str | int | None]:
        return {
            **Problem.at(self.position, self.path, self.message, self.severity).to_json(),
            "rule": self.rule,
            "waived": self.waived,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        """Inverse of `to_json` (a saved plan shown again); KeyError or TypeError for another
        shape."""
        severity = data["severity"]
        if severity not in ("error", "warning"):
            raise TypeError("severity")
        return cls(
            Position(_text(data["file"]), _count(data["line"]), _count(data["column"])),
            _text(data["rule"]),
            _text(data["path"]),
            _text(data["message"]),
            severity,
            None if data["waived"] is None else _text(data["waived"]),
        )


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("expected an integer")
    return value
