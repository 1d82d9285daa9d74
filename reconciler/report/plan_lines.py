"""What text and markdown rendering share: headings, value formatting, diff lines.

A change's body is a list of `Line`s (symbol, depth, text); the text renderer
indents them Terraform-style and colours the symbol, the markdown renderer puts
the symbol in column 0 so GitHub's `diff` highlighting colours the line.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reconciler.escaping import clean
from reconciler.plan.changes import (
    ABSENT,
    SENSITIVE,
    UNKNOWN,
    Action,
    Change,
    FieldDiff,
    ItemEdit,
    Note,
    PlanValue,
    PolicyEdit,
    PolicyListDetail,
    SecretRef,
    VariableDetail,
    max_deletes_note,
)
from reconciler.plan.golive import NEXT_DEPLOYMENT_NOTE, change_note
from reconciler.plan.permissions import compact

if TYPE_CHECKING:
    from reconciler.checks.findings import Finding
    from reconciler.checks.overrides import Override
    from reconciler.plan.changes import Plan
    from reconciler.policy_tests.effect import OutcomeChange

NEUTRAL = " "
"""The symbol of a line that changes nothing (comments, hidden-item counts)."""

CONTEXT = "context"
"""The symbol of an unchanged line of text shown around changed ones (a line diff's context)."""

WIDE = 100
"""Characters past which a value is not printed on one line: lists are split into their items
(or only the items that changed are shown), mappings into their fields."""

SHORT_LIST = 5
"""Lists of at most this many items that fit in `WIDE` are shown whole, `[...] -> [...]`."""

LINE_CONTEXT = 2
"""Unchanged lines shown on each side of a changed line of text, as `diff -U2` would."""

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
    """One line of a change's body. An update of one value (`~ path = a -> b`) also has its
    two sides in `pair` (`path = a`, `path = b`): the markdown shows them as a `-` and a `+`
    line, which GitHub colours, where the text form keeps Terraform's one line. A `~` line
    without `pair` is a header (a list's or a policy's), whose changes follow."""

    symbol: str
    depth: int
    text: str
    pair: tuple[str, str] | None = None


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


# --------------------------------------------------------------------------- notes and findings

SHOWN_SUBJECTS = 3
"""The environments, apps or places a note names before it counts the rest: a plan of 200 apps
says which environments need a deployment in one short line, not in 2,000 characters (the JSON
names every one)."""


def abbreviated(subjects: Sequence[str], shown: int = SHOWN_SUBJECTS) -> str:
    """`a, b, c and 97 more`; every subject when one more would be all that is left out."""
    if len(subjects) <= shown + 1:
        return ", ".join(subjects)
    return f"{', '.join(subjects[:shown])} and {len(subjects) - shown} more"


def plan_notes(plan: Plan, *, from_manifest: bool = True) -> list[Note]:
    """The plan's notes as `shown_notes` shows them, but for the one on --max-deletes, which the
    renderers say beside the summary; `from_manifest`: with the manifest's own warnings."""
    repeated = max_deletes_note(len(plan.deletions), plan.max_deletes)
    return shown_notes(
        note
        for note in plan.notes
        if note.message != repeated and (from_manifest or not note.from_manifest)
    )


def shown_notes(notes: Iterable[Note]) -> list[Note]:
    """Each note once, as text and markdown show it (before their own escaping): notes alike
    but for their subject (one per environment or app) as their group's one sentence, where the
    first of them stood, and a long list of subjects in any note shortened to a few and a
    count."""
    groups: dict[tuple[str, str], list[Note]] = {}
    order: list[Note | tuple[str, str]] = []
    for note in notes:
        if note.group is None:
            order.append(note)
            continue
        key = (note.severity, note.group)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(note)
    shown: list[Note] = []
    for item in order:
        if not isinstance(item, tuple) or len(groups[item]) == 1:
            note = item if not isinstance(item, tuple) else groups[item][0]
            shown.append(Note(note.severity, _shortened(note), note.address))
            continue
        members = groups[item]
        subjects = [subject for note in members for subject in note.subjects]
        sentence = (
            item[1]  # replaced, never str.format: a saved plan's text is not a format string
            .replace("{count}", str(len(subjects)))
            .replace("{subjects}", abbreviated(subjects))
        )
        shown.append(Note(members[0].severity, sentence))
    return shown


def _shortened(note: Note) -> str:
    listed = ", ".join(note.subjects)
    if len(note.subjects) <= SHOWN_SUBJECTS + 1 or listed not in note.message:
        return note.message
    return note.message.replace(listed, abbreviated(note.subjects), 1)


def finding_lines(findings: Iterable[Finding]) -> list[str]:
    """`Warning: file:line:column: path: message [rule]` for each finding; a message a rule
    gives in more places than a few is one line naming some of them and counting the rest
    (`reconciler validate` lists each)."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        groups.setdefault((finding.label, finding.text), []).append(finding)
    lines: list[str] = []
    for (label, text), found in groups.items():
        if len(found) <= SHOWN_SUBJECTS + 1:
            lines += [finding.labelled for finding in found]
            continue
        places = abbreviated([finding.place for finding in found])
        lines.append(f"{label}: {text}, in {len(found)} places: {places}")
    return lines


# --------------------------------------------------------------------------- permissions

PERMISSIONS_HEADING = "Permissions needed by apply"


def listed_permissions(plan: Plan, *, every: bool = False) -> tuple[str, ...]:
    """What a plan lists for its apply: the fewest strings that cover it
    (reconciler/plan/permissions.py), or with `every` each string (`--show-permissions`)."""
    return plan.permissions if every else compact(plan.permissions)


def permissions_heading(plan: Plan, listed: Sequence[str]) -> str:
    """`Permissions needed by apply:`, saying so when the list is the short form of a longer
    one."""
    if list(listed) == list(plan.permissions):
        return f"{PERMISSIONS_HEADING}:"
    return (
        f"{PERMISSIONS_HEADING} (reads as wildcards; --show-permissions lists each of the "
        f"{len(plan.permissions)} strings):"
    )


# --------------------------------------------------------------------------- check overrides

OVERRIDES_HEADING = "Checks the manifests turn off or down (rules below their default, waivers):"
_OVERRIDE_SYMBOLS = {"added": "+", "changed": "~", "removed": "-", None: " "}


def override_lines(overrides: Iterable[Override]) -> list[str]:
    """One line per override, `+`/`~`/`-` when it was added, changed or removed since the base
    the plan was compared with: `+ platform/x.yaml:3:5: checks.query-logging: query-logging set
    to off (default: warning)`."""
    return [
        f"{_OVERRIDE_SYMBOLS[o.change]} {clean(o.located)}"
        + (" (removed)" if o.change == "removed" else "")
        for o in overrides
    ]


def overrides_summary(overrides: Iterable[Override]) -> str:
    """`Check overrides since the base: 1 added, 2 removed.`; empty when none changed."""
    counts = {"added": 0, "changed": 0, "removed": 0}
    for override in overrides:
        if override.change is not None:
            counts[override.change] += 1
    parts = [f"{count} {word}" for word, count in counts.items() if count]
    return f"Check overrides since the base: {', '.join(parts)}." if parts else ""


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


def diff_lines(diff: FieldDiff, depth: int = 0) -> list[Line]:
    """`~ runtime.vCpus = 0.5 -> 1`, or where one line would bury the change, a header with the
    list items or the lines of text that changed. A sensitive value is one masked line."""
    if diff.sensitive or diff.known_after_apply:
        return [diff_line(diff, depth)]
    if diff.items and _both_lists(diff) and not _short_lists(diff):
        return item_lines(diff, depth)
    if _is_text(diff.before) and _is_text(diff.after) and _multiline(diff.before, diff.after):
        return text_diff_lines(diff, depth)
    if diff.before is ABSENT and diff.after is not ABSENT:
        return value_lines("+", diff.path, diff.after, depth)
    if diff.after is ABSENT and diff.before is not ABSENT:
        return value_lines("-", diff.path, diff.before, depth)
    return [diff_line(diff, depth)]


def diff_line(diff: FieldDiff, depth: int = 0) -> Line:
    """`~ runtime.vCpus = 0.5 -> 1`; `+`/`-` when the field appears or disappears."""
    before = _side(diff, diff.before, is_after=False)
    after = _side(diff, diff.after, is_after=True)
    if diff.before is ABSENT and diff.after is not ABSENT:
        return Line("+", depth, f"{clean(diff.path)} = {after}")
    if diff.after is ABSENT and diff.before is not ABSENT:
        return Line("-", depth, f"{clean(diff.path)} = {before}")
    path = clean(diff.path)
    return Line(
        "~", depth, f"{path} = {before} -> {after}", (f"{path} = {before}", f"{path} = {after}")
    )


def _side(diff: FieldDiff, value: Any, *, is_after: bool) -> str:
    if is_after and diff.known_after_apply:
        return UNKNOWN
    if diff.sensitive and value is not None and value != UNKNOWN:
        return SENSITIVE
    return format_value(value)


def _both_lists(diff: FieldDiff) -> bool:
    return isinstance(diff.before, list | tuple) and isinstance(diff.after, list | tuple)


def _short_lists(diff: FieldDiff) -> bool:
    """Both lists short enough that `[...] -> [...]` reads better than item by item."""
    longest = max(_length(diff.before), _length(diff.after))
    return longest <= SHORT_LIST and len(diff_line(diff).text) <= WIDE


def item_lines(diff: FieldDiff, depth: int = 0) -> list[Line]:
    """A list diff as the items inserted, removed or changed, the unchanged ones counted:

    ~ match[1].remoteIp.notIn: 60 items -> 60 items
        - [7] = "10.0.0.7/32"
        + [7] = "10.0.0.8/32"
          # (59 unchanged items hidden)
    """
    header = f"{clean(diff.path)}: {_items(diff.before)} -> {_items(diff.after)}"
    lines = [Line("~", depth, header), *(_item_line(edit, depth + 1) for edit in diff.items)]
    unchanged = _length(diff.after) - sum(edit.op != "remove" for edit in diff.items)
    if unchanged > 0:
        lines.append(_hidden_count(unchanged, "unchanged item", depth + 1))
    return lines


def _length(value: PlanValue) -> int:
    """How many items a list side of a diff has (none for any other value)."""
    return len(value) if isinstance(value, list | tuple) else 0


def _items(value: Any) -> str:
    return plural(len(value), "item") if isinstance(value, list | tuple) else format_value(value)


def _item_line(edit: ItemEdit, depth: int) -> Line:
    if edit.op == "insert":
        return Line("+", depth, f"{_index(edit.after_index)} = {format_value(edit.after)}")
    if edit.op == "remove":
        return Line("-", depth, f"{_index(edit.before_index)} = {format_value(edit.before)}")
    index = _index(edit.after_index)
    if edit.before_index != edit.after_index:  # moved by insertions or removals before it
        index = f"[{edit.before_index} -> {edit.after_index}]"
    before, after = format_value(edit.before), format_value(edit.after)
    sides = (f"{_index(edit.before_index)} = {before}", f"{_index(edit.after_index)} = {after}")
    return Line("~", depth, f"{index} = {before} -> {after}", sides)


def _is_text(value: Any) -> bool:
    return isinstance(value, str) or value is None or value is ABSENT


def _multiline(*values: Any) -> bool:
    return any(isinstance(value, str) and "\n" in value for value in values)


def text_diff_lines(diff: FieldDiff, depth: int = 0) -> list[Line]:
    """A change of multi-line text as a line diff: the changed lines with a little context,
    runs of unchanged lines counted (a certificate with one line changed is three lines,
    not both values on one line)."""
    symbol = "+" if diff.before is ABSENT else "-" if diff.after is ABSENT else "~"
    sizes = [_line_count(v) for v in (diff.before, diff.after) if v is not ABSENT]
    lines = [Line(symbol, depth, f"{clean(diff.path)}: {' -> '.join(sizes)}")]
    old, old_ends = _text_lines(diff.before)
    new, new_ends = _text_lines(diff.after)
    if old != new:
        lines += _changed_lines(old, new, depth + 1)
    if isinstance(diff.before, str) and isinstance(diff.after, str) and old_ends != new_ends:
        what = "added" if new_ends else "removed"
        lines.append(Line(NEUTRAL, depth + 1, f"# (line break at the end {what})"))
    return lines


def _line_count(value: Any) -> str:
    return plural(len(_text_lines(value)[0]), "line") if isinstance(value, str) else "null"


def _text_lines(value: Any) -> tuple[list[str], bool]:
    """The lines of a text (none for null or absent) and whether it ends with a line break.

    A YAML block scalar (`CERT: |`) ends with one; it is not shown as an empty last line.
    """
    if not isinstance(value, str):
        return [], False
    lines = value.split("\n")
    ends_with_break = len(lines) > 1 and lines[-1] == ""
    return (lines[:-1] if ends_with_break else lines), ends_with_break


def _changed_lines(old: list[str], new: list[str], depth: int) -> list[Line]:
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    lines: list[Line] = []
    shown_up_to = 0  # lines of `old` shown or counted so far
    for group in matcher.get_grouped_opcodes(LINE_CONTEXT):
        if group[0][1] > shown_up_to:
            lines.append(_hidden_count(group[0][1] - shown_up_to, "unchanged line", depth))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [Line(CONTEXT, depth, clean(text)) for text in old[i1:i2]]
                continue
            lines += [Line("-", depth, clean(text)) for text in old[i1:i2]]
            lines += [Line("+", depth, clean(text)) for text in new[j1:j2]]
        shown_up_to = group[-1][2]
    if shown_up_to < len(old):
        lines.append(_hidden_count(len(old) - shown_up_to, "unchanged line", depth))
    return lines


def _hidden_count(count: int, what: str, depth: int, what_plural: str | None = None) -> Line:
    """`# (59 unchanged items hidden)`: what is left out so the changes stand out."""
    return Line(NEUTRAL, depth, f"# ({plural(count, what, what_plural)} hidden)")


def value_lines(symbol: str, path: str, value: Any, depth: int = 0) -> list[Line]:
    """`+ path = value`; a value too wide for one line is split: multi-line text into its lines,
    a list into its items (`[0]`, `[1]`, ...), a mapping into its fields."""
    if isinstance(value, str) and "\n" in value:
        lines, _ = _text_lines(value)
        header = Line(symbol, depth, f"{clean(path)}: {plural(len(lines), 'line')}")
        return [header, *(Line(symbol, depth + 1, clean(text)) for text in lines)]
    line = Line(symbol, depth, f"{clean(path)} = {format_value(value)}")
    if len(line.text) <= WIDE or not value or isinstance(value, SecretRef):
        return [line]
    if isinstance(value, Mapping):
        return [
            split
            for sub_path, item in flatten(value, f"{path}.")
            for split in value_lines(symbol, sub_path, item, depth)
        ]
    if isinstance(value, list | tuple):
        header = Line(symbol, depth, f"{clean(path)}: {plural(len(value), 'item')}")
        return [
            header,
            *(
                split
                for index, item in enumerate(value)
                for split in value_lines(symbol, _index(index), item, depth + 1)
            ),
        ]
    return [line]


def attribute_lines(symbol: str, mapping: Mapping[str, Any] | None, depth: int = 0) -> list[Line]:
    if not mapping:
        return []
    return [line for path, v in flatten(mapping) for line in value_lines(symbol, path, v, depth)]


def change_body(change: Change) -> list[Line]:
    """The attribute lines of a change (without heading and notes), ending with where its
    secret value is read: a reviewer sees what a merge would read, never the value."""
    lines = _attribute_body(change)
    if isinstance(change.detail, VariableDetail):
        source = clean(str(change.detail.secret_source))
        lines.append(Line(NEUTRAL, 0, f"# value read from {source}"))
    return lines


def _attribute_body(change: Change) -> list[Line]:
    if isinstance(change.detail, PolicyListDetail) and change.detail.edits:
        lines = policy_lines(change.detail.edits)
        for diff in change.diffs:
            if not diff.path.startswith("policies"):
                lines += diff_lines(diff)
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
            if not change.diffs:
                return attribute_lines("-", change.before) + attribute_lines("+", change.after)
            changed = {d.path for d in change.diffs}
            created = {
                path: value
                for path, value in flatten(change.after or {})
                if not _covers(changed, path)
            }
            return _diff_body(change.diffs) + attribute_lines("+", created)
        case Action.BLOCKED:
            return []
    return _diff_body(change.diffs)


def _diff_body(diffs: Iterable[FieldDiff], depth: int = 0) -> list[Line]:
    return [line for diff in diffs for line in diff_lines(diff, depth)]


def _covers(paths: set[str], path: str) -> bool:
    return any(path == p or path.startswith(p + ".") for p in paths)


def note_lines(change: Change, *, outcomes: bool = True) -> list[str]:
    """The notes under a change. That an environment's change reaches traffic only from its
    next deployment is said once for the whole plan, in the note naming the environments that
    need one; an app's or a project's, which reaches other environments, is said here.
    `outcomes`: with the policy tests whose verdict the change turns."""
    notes = list(change.notes)
    if change.action is Action.BLOCKED and not any("deleteProtection" in n for n in notes):
        notes.append(LIFT_PROTECTION)
    if outcomes and isinstance(change.detail, PolicyListDetail):
        notes += [outcome_line(o) for o in change.detail.test_outcomes]
    goes_live = change_note(change)
    if (
        goes_live is not None
        and goes_live != NEXT_DEPLOYMENT_NOTE
        and not any("next deployment" in n for n in notes)
    ):
        notes.append(goes_live)
    return [clean(note) for note in notes]


def outcome_line(outcome: OutcomeChange) -> str:
    """`policy test 'admin is closed' changes: GET /admin from 1.2.3.4: deny -> allow (was x)`."""
    return f"policy test {outcome.name!r} changes: {outcome}"


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
    return _hidden_count(count, "unchanged policy", 0, "unchanged policies")


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
    return [Line("~", 0, title), *_diff_body(edit.diffs, depth=1)]


def _whole_policy(symbol: str, index: int | None, policy: Mapping[str, Any] | None) -> list[Line]:
    policy = dict(policy or {})
    name = policy.pop("name", None)
    title = _index(index) + (f" name = {format_value(name)}" if name is not None else "")
    return [Line(symbol, 0, title), *attribute_lines(symbol, policy, depth=1)]


def _index(index: int | None) -> str:
    return f"[{'?' if index is None else index}]"
