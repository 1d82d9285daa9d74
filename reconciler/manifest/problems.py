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
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from reconciler.errors import ReconcilerError
from reconciler.escaping import clean
from reconciler.manifest.model import Position

Path = tuple[str | int, ...]
"""A place in the document tree: mapping keys and list indexes."""

Severity = Literal["error", "warning"]
ERROR: Severity = "error"
WARNING: Severity = "warning"


def format_path(path: Path) -> str:
    """`("projects", "shop", "policies", 1)` -> `projects.shop.policies[1]`; a key's control
    and invisible characters escaped (`reconciler.escaping.clean`): keys are the manifest's."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{clean(part)}" if text else clean(part)
    return text


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with a manifest. `line`/`column` are 1-based; 0 when the
    problem concerns a whole file (missing, unreadable, too large)."""

    file: str
    line: int
    column: int
    path: str
    message: str
    severity: Severity = ERROR
    uses: tuple[str, ...] = field(default=(), compare=False)
    """For a problem inside a shared block (a template, an `appDefaults`): the apps it was
    found for (`project/app`), so a block used by many is reported once (`merge_uses`)."""

    @classmethod
    def at(
        cls,
        position: Position,
        path: Path | str,
        message: str,
        severity: Severity = ERROR,
        uses: tuple[str, ...] = (),
    ) -> Problem:
        text = path if isinstance(path, str) else format_path(path)
        return cls(position.file, position.line, position.column, text, message, severity, uses)

    @classmethod
    def for_file(cls, file: str, message: str) -> Problem:
        return cls(file, 0, 0, "", message)

    @property
    def is_warning(self) -> bool:
        return self.severity == WARNING

    @property
    def located_message(self) -> str:
        """`file:line:column: path: message`, without the severity; a problem in a shared
        block ends with the apps it was found for. One line, whatever the manifest wrote: the
        file's name and the message (which may quote a key or a waiver's reason) are escaped
        (`reconciler.escaping.clean`), as the path is, so that no text of a manifest starts a
        line of its own in a log (where `::add-mask::` is a command) or a comment."""
        file = clean(self.file)
        where = file if self.line == 0 else f"{file}:{self.line}:{self.column}"
        message = clean(self.message + _used_by(self.uses))
        return f"{where}: {self.path}: {message}" if self.path else f"{where}: {message}"

    def __str__(self) -> str:
        # errors keep their historical form; a warning says so first, as compilers do
        return f"warning: {self.located_message}" if self.is_warning else self.located_message

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
        }
        if self.uses:
            found["uses"] = list(self.uses)
        return found


SHOWN_USES = 10
"""Apps a problem in a shared block names in text (JSON lists them all)."""


def _used_by(uses: tuple[str, ...]) -> str:
    if not uses:
        return ""
    shown = ", ".join(uses[:SHOWN_USES])
    more = f" and {len(uses) - SHOWN_USES} more" if len(uses) > SHOWN_USES else ""
    noun = "app" if len(uses) == 1 else "apps"
    return f" (used by {len(uses)} {noun}: {shown}{more})"


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
