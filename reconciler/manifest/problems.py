"""What is wrong with a manifest, and where: the currency of loading and validation.

Every stage (YAML loading, JSON Schema, semantic rules) reports `Problem`s
instead of raising on the first one, so a user sees everything wrong in one
run. `ManifestInvalid` carries them all to the CLI.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reconciler.errors import ReconcilerError
from reconciler.manifest.model import Position

Path = tuple[str | int, ...]
"""A place in the document tree: mapping keys and list indexes."""


def format_path(path: Path) -> str:
    """`("projects", "shop", "policies", 1)` -> `projects.shop.policies[1]`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
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

    @classmethod
    def at(cls, position: Position, path: Path | str, message: str) -> Problem:
        text = path if isinstance(path, str) else format_path(path)
        return cls(position.file, position.line, position.column, text, message)

    @classmethod
    def for_file(cls, file: str, message: str) -> Problem:
        return cls(file, 0, 0, "", message)

    def __str__(self) -> str:
        where = self.file if self.line == 0 else f"{self.file}:{self.line}:{self.column}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"

    def to_json(self) -> dict[str, str | int]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
        }


class ManifestInvalid(ReconcilerError):
    """The manifest cannot be used; `problems` lists everything found, sorted by place."""

    exit_code = 1

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(sorted(set(problems)))
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        lines = [f"the manifest has {count} {noun}:"]
        lines += [f"  {problem}" for problem in self.problems]
        super().__init__("\n".join(lines))
