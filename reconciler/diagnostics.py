"""What reconciler says about a manifest or a plan: one `Diagnostic` for every kind of it.

Validation's errors and warnings (`reconciler.manifest.problems.Problem`), the findings of the
built-in checks (`reconciler.checks.findings.Finding`), a plan's plan-wide notes
(`reconciler.plan.changes.Note`), the policy tests package's warnings about match members and
the notes `validate` prints about the checks a manifest turns off or down are all this one
type; those names are aliases of it, kept for the places that make each kind. A diagnostic has
a severity and a message, and may have:

- a place in a manifest (`file`, `line`, `column`, `path`; line 0 when it concerns a whole file,
  `file` None when it has no place in a file) or, for a plan's note, the `address` it concerns;
- the `rule` of the built-in check that found it, and the reason of the `waiver` that silences it;
- what renderings need to shorten it without changing what it says: the apps a problem of a
  shared block was found for (`uses`), the subjects a note lists and the sentence that says the
  same of several at once (`subjects`, `group`), and whether it is a warning about the manifest
  that commands print as soon as the manifest is read (`from_manifest`).

It sits at the bottom of the package so that manifest/, checks/ and plan/ all make and read the
same type; every text form of one is here (`located_message`, `__str__`, `labelled`), so that
`validate`, the plan's renderings and SARIF read the same words.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from reconciler.escaping import clean

Severity = Literal["info", "warning", "error"]
"""`info` is for notes only: validation and the checks say `error` or `warning`."""
ERROR: Severity = "error"
WARNING: Severity = "warning"
INFO: Severity = "info"

Path = tuple[str | int, ...]
"""A place in the document tree: mapping keys and list indexes."""

_LABELS: dict[Severity, str] = {"info": "Note", "warning": "Warning", "error": "Error"}


class Place(Protocol):
    """A place in a manifest file, as `reconciler.manifest.model.Position` is one."""

    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...


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


@functools.total_ordering
@dataclass(frozen=True)
class Diagnostic:
    """One thing reconciler says; `line`/`column` are 1-based. Sorted by place, then rule, path,
    message and severity. The fields that only shorten a rendering do not take part in equality:
    the same thing said twice is one diagnostic."""

    severity: Severity
    message: str
    address: str | None = None
    file: str | None = None
    line: int = 0
    column: int = 0
    path: str = ""
    rule: str | None = None
    waiver: str | None = None
    """The reason of the waiver that silences a finding; a waived finding fails nothing."""
    uses: tuple[str, ...] = field(default=(), compare=False)
    """For a problem inside a shared block (a template, an `appDefaults`): the apps it was
    found for (`project/app`), so a block used by many is reported once."""
    subjects: tuple[str, ...] = field(default=(), compare=False)
    """What the message names in a list (environments, apps, addresses), joined by ", ", so
    that a rendering can name a few and count the rest."""
    group: str | None = field(default=None, compare=False)
    """The sentence that says the same of several subjects at once, with `{count}` and
    `{subjects}`: notes alike but for their subject are shown as that one sentence."""
    from_manifest: bool = field(default=False, compare=False)
    """A plan's note that is a warning about the manifest, which commands print on stderr as
    soon as the manifest is read: the plan's text leaves it out rather than say it twice."""

    @classmethod
    def at(
        cls,
        place: Place,
        path: Path | str,
        message: str,
        severity: Severity = ERROR,
        uses: tuple[str, ...] = (),
        *,
        rule: str | None = None,
        waiver: str | None = None,
    ) -> Diagnostic:
        """At `place` in a manifest, `path` where in its tree (a path is formatted)."""
        text = path if isinstance(path, str) else format_path(path)
        return cls(
            severity,
            message,
            file=place.file,
            line=place.line,
            column=place.column,
            path=text,
            rule=rule,
            waiver=waiver,
            uses=uses,
        )

    @classmethod
    def for_file(cls, file: str, message: str) -> Diagnostic:
        """An error about a whole file (missing, unreadable, too large)."""
        return cls(ERROR, message, file=file)

    @property
    def is_warning(self) -> bool:
        return self.severity == WARNING

    @property
    def fails(self) -> bool:
        """An error not waived: it makes a manifest invalid, or a plan fail."""
        return self.severity == ERROR and self.waiver is None

    @property
    def text(self) -> str:
        """The message with the rule that found it, and the waiver's reason when waived."""
        if self.rule is None:
            return self.message
        if self.waiver is None:
            return f"{self.message} [{self.rule}]"
        return f"{self.message} [{self.rule} waived: {self.waiver}]"

    @property
    def place(self) -> str:
        """`file:line:column` (`file` alone for a whole file), the name escaped."""
        if self.file is None:
            return ""
        file = clean(self.file)
        return file if self.line == 0 else f"{file}:{self.line}:{self.column}"

    @property
    def located_message(self) -> str:
        """`file:line:column: path: message`, without the severity; a problem in a shared
        block ends with the apps it was found for. One line, whatever the manifest wrote: the
        file's name and the message (which may quote a key or a waiver's reason) are escaped
        (`reconciler.escaping.clean`), as the path is, so that no text of a manifest starts a
        line of its own in a log (where `::add-mask::` is a command) or a comment."""
        where = [self.place] if self.file is not None else []
        if self.path:
            where.append(self.path)
        return ": ".join([*where, clean(self.text + _used_by(self.uses))])

    @property
    def label(self) -> str:
        """`Error`, `Warning`, `Note`; `Waived` for a waived finding."""
        return "Waived" if self.waiver is not None else _LABELS[self.severity]

    @property
    def labelled(self) -> str:
        """`Error: file:line:column: path: message [rule]`, as the plan's text lists findings."""
        return f"{self.label}: {self.located_message}"

    def __str__(self) -> str:
        # errors keep their historical form; a warning or a note says so first, as compilers do
        if self.waiver is not None or self.severity == INFO:
            return f"note: {self.located_message}"
        return f"warning: {self.located_message}" if self.is_warning else self.located_message

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Diagnostic):
            return NotImplemented
        return self._order < other._order

    @property
    def _order(self) -> tuple[str, int, int, str, str, str, str, str, str]:
        return (
            self.file or "",
            self.line,
            self.column,
            self.rule or "",
            self.path,
            self.message,
            self.severity,
            self.waiver or "",
            self.address or "",
        )

    def to_json(self) -> dict[str, Any]:
        """A manifest's diagnostic as `validate --format json` and a plan's `findings` list it:
        a finding has its `rule` and `waived` (null, or the waiver's reason)."""
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
        if self.rule is not None:
            found |= {"rule": self.rule, "waived": self.waiver}
        return found

    @classmethod
    def finding_from_json(cls, data: Mapping[str, Any]) -> Diagnostic:
        """Inverse of `to_json` for a finding (a saved plan shown again); KeyError or TypeError
        for another shape."""
        severity = data["severity"]
        if severity not in (ERROR, WARNING):
            raise TypeError("severity")
        return cls(
            severity,
            _text(data["message"]),
            file=_text(data["file"]),
            line=_count(data["line"]),
            column=_count(data["column"]),
            path=_text(data["path"]),
            rule=_text(data["rule"]),
            waiver=None if data["waived"] is None else _text(data["waived"]),
        )


SHOWN_USES = 10
"""Apps a problem in a shared block names in text (JSON lists them all)."""


def _used_by(uses: tuple[str, ...]) -> str:
    if not uses:
        return ""
    shown = ", ".join(uses[:SHOWN_USES])
    more = f" and {len(uses) - SHOWN_USES} more" if len(uses) > SHOWN_USES else ""
    noun = "app" if len(uses) == 1 else "apps"
    return f" (used by {len(uses)} {noun}: {shown}{more})"


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("expected an integer")
    return value
