"""What is wrong with a manifest, and where: the currency of loading and validation.

Every stage (YAML loading, JSON Schema, semantic rules) reports `Problem`s
instead of raising on the first one, so a user sees everything wrong in one
run. `ManifestInvalid` carries them all to the CLI.

A problem is an error (the platform spec refuses the value, or the manifest
cannot mean anything) or a warning (the platform accepts the value, but it is
very likely a mistake). Warnings never make a manifest invalid: a live state
the platform accepts must export to a manifest that plans, so only the spec
itself may refuse a value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace

from reconciler.diagnostics import ERROR, WARNING, Diagnostic, Path, Severity, format_path
from reconciler.errors import ReconcilerError

__all__ = [
    "ERROR",
    "WARNING",
    "ManifestInvalid",
    "Path",
    "Problem",
    "Severity",
    "format_path",
    "merge_uses",
    "split_by_severity",
]

Problem = Diagnostic
"""A manifest's error or warning: a `Diagnostic` with a place in a file (`Problem.at`,
`Problem.for_file`), severity `error` or `warning`."""


def merge_uses(problems: Iterable[Problem]) -> list[Problem]:
    """One problem for each place and message, naming every app it was found for."""
    uses: dict[Problem, dict[str, None]] = defaultdict(dict)
    for problem in problems:
        uses[problem].update(dict.fromkeys(problem.uses))
    return [replace(problem, uses=tuple(sorted(found))) for problem, found in uses.items()]


def split_by_severity(problems: Iterable[Problem]) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings), each sorted by place and without duplicates (one for each place
    and message, naming every app a problem of a shared block was found for)."""
    unique = sorted(merge_uses(problems))
    return [p for p in unique if not p.is_warning], [p for p in unique if p.is_warning]


class ManifestInvalid(ReconcilerError):
    """The manifest cannot be used; `problems` lists every error found, sorted by place,
    and `warnings` what else was suspicious (the message names only the errors)."""

    exit_code = 1

    def __init__(self, problems: Iterable[Problem], warnings: Iterable[Problem] = ()) -> None:
        self.problems: tuple[Problem, ...] = tuple(sorted(set(problems)))
        self.warnings: tuple[Problem, ...] = tuple(sorted(set(warnings)))
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        lines = [f"the manifest has {count} {noun}:"]
        lines += [f"  {problem}" for problem in self.problems]
        super().__init__("\n".join(lines))
