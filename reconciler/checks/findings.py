"""What a rule found, where, how severe, and whether a waiver silences it.

A rule yields `Hit`s; `judge` (settings.py) gives each its severity from the `checks:` block
and its waiver from the objects, making a `Finding`: a `Diagnostic` with its rule. Findings
that are not waived are listed among validate's own errors and warnings (`to_problem`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from reconciler.diagnostics import Diagnostic
from reconciler.manifest.model import Position, Scope


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


Finding = Diagnostic
"""A hit judged (`RuleSettings.judge`): a `Diagnostic` with its `rule`, the severity the
settings give the rule, and the reason of the `waiver` that silences it, if any."""


def to_problem(finding: Finding) -> Diagnostic:
    """The finding as validate's errors and warnings read it (not for a waived one): its rule
    in its message, so that it sorts among them by message, as they do."""
    return dataclasses.replace(finding, message=finding.text, rule=None, waiver=None)
