"""What text and markdown rendering share: headings, value formatting, diff lines.

A change's body is a list of `Line`s (symbol, depth, text); the text renderer
indents them Terraform-style and colours the symbol, the markdown renderer puts
the symbol in column 0 so GitHub's `diff` highlighting colours the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.engine.changes import (
    ABSENT,
    UNKNOWN,
    Action,
    Change,
    FieldDiff,
    PolicyEdit,
    SecretRef,
)
from reconciler.engine.secret_guard import SENSITIVE

NEUTRAL = " "
"""The symbol of a line that changes nothing (comments, hidden-item counts)."""

ACTION_LEGEND = {
    Action.CREATE: "create",
    Action.UPDATE: "update in-place",
    Action.DELETE: "destroy",
    Action.REPLACE: "destroy and then create replacement",
    Action.BLOCKED: "cannot be destroyed (delete protection is on; nothing is sent)",
}

_REASONS = {
    "source_type_changed": "the source type changes between git and image",
    "renamed": "renamed",
    "pruned": "not in the manifest and pruning is on",
    "delete_protected": "delete protection is on",
    "attached_elsewhere": "the domain is attached elsewhere in the workspace",
}

LIFT_PROTECTION = (
    "To delete it, first set deleteProtection: false for it in the manifest and apply, "
    "then remove it from the manifest."
)


@dataclass(frozen=True)
class Line:
    symbol: str
    depth: int
    text: str


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """Free text with control characters made visible: no escape code or line break sneaks in."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


# --------------------------------------------------------------------------- headings


def heading(change: Change) -> str:
    """`app.shop/web will be updated in-place`, with the reason where one explains it."""
    return f"{clean(change.address)} {outcome(change)}"


def outcome(change: Change) -> str:
    """What happens to the change's object: `will be created`, `must be replaced (...)`."""
    match change.action:
        case Action.CREATE:
            return "will be created"
        case Action.UPDATE:
            return "will be updated in-place"
        case Action.DELETE:
            return "will be destroyed"
        case Action.REPLACE:
            reason = describe_reason(change.reason)
            return "must be replaced" + (f" ({reason})" if reason else "")
        case Action.BLOCKED:
            return "cannot be destroyed: delete protection is on"
    raise AssertionError(change.action)


def describe_reason(reason: str | None) -> str | None:
    if reason is None:
        return None
    return clean(_REASONS.get(reason, reason.replace("_", " ")))


def block_label(change: Change) -> str:
    """`app "shop/web"`: the kind and the address without its kind prefix."""
    name = change.address.split(".", 1)[1] if "." in change.address else change.address
    return f"{change.kind} {_quote(name)}"


def summary_line(add: int, change: int, destroy: int) -> str:
    return f"{add} to add, {change} to change, {destroy} to destroy."


def plural(count: int, word: str, plural_word: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural_word or word + 's')}"


# --------------------------------------------------------------------------- values


def format_value(value: Any) -> str:
    """A value as a reviewer reads it: strings quoted, no secrets, markers bare."""
    if isinstance(value, SecretRef):
        return SENSITIVE
    if value is ABSENT:
        return "(absent)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if value in (UNKNOWN, SENSITIVE) else _quote(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Mapping):
        value = redact_writeonly(value)
        inner = ", ".join(f"{_key(k)} = {format_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return _quote(str(value))


def _quote(text: str) -> str:
    # JSON escapes C0 controls; `clean` catches DEL and C1 (0x9b is a CSI on some terminals)
    return clean(json.dumps(text, ensure_ascii=False))


def _key(key: Any) -> str:
    text = str(key)
    return text if text.replace("_", "").isalnum() and text.isascii() else _quote(text)


def redact_writeonly(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    """A write-only variable's display form with its value hidden, whatever the caller put there."""
    if mapping.get("kind") == "writeonly" and "value" in mapping:
        value = mapping["value"]
        if value != UNKNOWN:
            return {**mapping, "value": SENSITIVE}
    return mapping


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Nested mappings as dotted paths (`runtime.vCpus`), matching FieldDiff paths."""
    for key, value in redact_writeonly(mapping).items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from flatten(value, f"{path}.")
        else:
            yield path, value


# --------------------------------------------------------------------------- bodies


def diff_line(diff: FieldDiff, depth: int = 0) -> Line:
    """`~ runtime.vCpus = 0.5 -> 1`; `+`/`-` when the field appears or disappears."""
    before = _side(diff, diff.before, is_after=False)
    after = _side(diff, diff.after, is_after=True)
    if diff.before is ABSENT and diff.after is not ABSENT:
        return Line("+", depth, f"{clean(diff.path)} = {after}")
    if diff.after is ABSENT and diff.before is not ABSENT:
        return Line("-", depth, f"{clean(diff.path)} = {before}")
    return Line("~", depth, f"{clean(diff.path)} = {before} -> {after}")


def _side(diff: FieldDiff, value: Any, *, is_after: bool) -> str:
    if is_after and diff.known_after_apply:
        return UNKNOWN
    if diff.sensitive and value is not None and value != UNKNOWN:
        return SENSITIVE
    return format_value(value)


def attribute_lines(symbol: str, mapping: Mapping[str, Any] | None, depth: int = 0) -> list[Line]:
    if not mapping:
        return []
    return [
        Line(symbol, depth, f"{clean(path)} = {format_value(v)}") for path, v in flatten(mapping)
    ]


def change_body(change: Change) -> list[Line]:
    """The attribute lines of a change (without heading and notes)."""
    if change.policy_edits:
        lines = policy_lines(change.policy_edits)
        lines += [diff_line(d) for d in change.diffs if not d.path.startswith("policies")]
        return lines
    match change.action:
        case Action.CREATE:
            if change.after:
                return attribute_lines("+", change.after)
        case Action.DELETE:
            if change.before:
                return attribute_lines("-", change.before)
        case Action.REPLACE:
            # what forces the replacement first, then everything the new object gets
            changed = {d.path for d in change.diffs}
            created = [
                line for line in attribute_lines("+", change.after) if not _covers(changed, line)
            ]
            if not change.diffs:
                return attribute_lines("-", change.before) + created
            return [diff_line(d) for d in change.diffs] + created
        case Action.BLOCKED:
            return []
    return [diff_line(d) for d in change.diffs]


def _covers(paths: set[str], line: Line) -> bool:
    path = line.text.split(" = ", 1)[0]
    return any(path == p or path.startswith(p + ".") for p in paths)


def note_lines(change: Change) -> list[str]:
    notes = list(change.notes)
    if change.action is Action.BLOCKED and not any("deleteProtection" in n for n in notes):
        notes.append(LIFT_PROTECTION)
    return [clean(note) for note in notes]


def policy_lines(edits: Iterable[PolicyEdit]) -> list[Line]:
    """An ordered list as its alignment: inserts, removals, changes; runs of kept ones counted."""
    lines: list[Line] = []
    kept = 0
    for edit in edits:
        if edit.op == "keep":
            kept += 1
            continue
        if kept:
            lines.append(_hidden(kept))
            kept = 0
        lines.extend(_edit_lines(edit))
    if kept:
        lines.append(_hidden(kept))
    return lines


def _hidden(count: int) -> Line:
    return Line(NEUTRAL, 0, f"# ({plural(count, 'unchanged policy', 'unchanged policies')} hidden)")


def _edit_lines(edit: PolicyEdit) -> list[Line]:
    if edit.op == "insert":
        return _whole_policy("+", edit.after_index, edit.after)
    if edit.op == "remove":
        return _whole_policy("-", edit.before_index, edit.before)
    index = _index(edit.after_index)
    if edit.before_index is not None and edit.before_index != edit.after_index:
        index = f"[{edit.before_index} -> {edit.after_index}]"
    name = (edit.after or edit.before or {}).get("name")
    title = f"{index} name = {format_value(name)}" if name is not None else index
    return [Line("~", 0, title)] + [diff_line(d, depth=1) for d in edit.diffs]


def _whole_policy(symbol: str, index: int | None, policy: Mapping[str, Any] | None) -> list[Line]:
    policy = dict(policy or {})
    name = policy.pop("name", None)
    title = _index(index) + (f" name = {format_value(name)}" if name is not None else "")
    return [Line(symbol, 0, title), *attribute_lines(symbol, policy, depth=1)]


def _index(index: int | None) -> str:
    return f"[{'?' if index is None else index}]"
