"""The plan as a terminal reads it, in Terraform's vocabulary and layout."""

from __future__ import annotations

from reconciler.checks.capacity import CAPACITY_HEADING, capacity_lines, shows_capacity
from reconciler.escaping import clean
from reconciler.plan.changes import Action, Change, Note, Plan
from reconciler.report.plan_lines import (
    ACTION_LEGEND,
    CONTEXT,
    NEUTRAL,
    OVERRIDES_HEADING,
    Line,
    block_label,
    change_body,
    finding_lines,
    heading,
    listed_permissions,
    note_lines,
    override_lines,
    overrides_summary,
    permissions_heading,
    plan_notes,
    plural,
    summary_line,
)

NO_CHANGES = "No changes. Live state matches the manifest."

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_COLOURS = {
    "+": "\x1b[32m",  # green
    "~": "\x1b[33m",  # yellow
    "-": "\x1b[31m",  # red
    "-/+": "\x1b[35m",  # magenta
    "!": "\x1b[35m",
}
_SEVERITY_COLOUR = {"info": "", "warning": "\x1b[33m", "error": "\x1b[31m"}


class _Paint:
    """ANSI styling that is a no-op when colour is off, so no escape code can slip through."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, style: str) -> str:
        return f"{style}{text}{_RESET}" if self.enabled and style else text

    def symbol(self, symbol: str) -> str:
        return self(symbol, _COLOURS.get(symbol, ""))


def render_text(plan: Plan, *, color: bool = False, show_permissions: bool = False) -> str:
    """The plan as a terminal shows it: each change, then what the plan moves of the capacity
    ceilings, the checks' overrides and findings, each plan-wide note once, the summary and the
    permissions apply needs (the fewest strings that cover them; every one with
    `show_permissions`)."""
    paint = _Paint(color)
    out: list[str] = []
    if plan.live_differs:
        out += _legend(plan, paint)
        intro = (
            "Reconciler will perform the following actions:"
            if plan.has_applicable_changes
            else "Nothing can be applied: every change of this plan is blocked."
        )
        out += ["", intro, ""]
        for change in plan.changes:
            out += _change(change, paint)
            out.append("")
    if shows_capacity(plan.capacity):
        assert plan.capacity is not None
        out += [CAPACITY_HEADING, *capacity_lines(plan.capacity), ""]
    if plan.overrides:
        out += [OVERRIDES_HEADING, *(f"  {line}" for line in override_lines(plan.overrides)), ""]
    if plan.findings:
        out += [clean(line) for line in finding_lines(plan.findings)]
        out.append("")
    # the manifest's warnings were printed on stderr when it was read
    notes = plan_notes(plan, from_manifest=False)
    if notes:
        out += [_note(note, paint) for note in notes]
        out.append("")
    out += _summary(plan, paint, show_permissions)
    return "\n".join(out) + "\n"


def _legend(plan: Plan, paint: _Paint) -> list[str]:
    used = {c.action for c in plan.changes}
    lines = ["Resource actions are indicated with the following symbols:"]
    for action, meaning in ACTION_LEGEND.items():
        if action in used:
            lines.append(f"{paint.symbol(action.symbol):>{_width(action.symbol, paint)}} {meaning}")
    return lines


def _width(symbol: str, paint: _Paint) -> int:
    """Right-align symbols to three columns; escape codes take no screen space."""
    return 3 + (len(paint.symbol(symbol)) - len(symbol))


def _change(change: Change, paint: _Paint) -> list[str]:
    lines = [paint(f"  # {heading(change)}", _BOLD)]
    body = change_body(change)
    if change.action is not Action.BLOCKED:
        symbol = change.action.symbol
        lines.append(f"{paint.symbol(symbol):>{_width(symbol, paint)}} {block_label(change)} {{")
        lines += [_body_line(line, paint) for line in body]
        lines.append("    }")
    lines += [f"    # {note}" for note in note_lines(change)]
    return lines


def _body_line(line: Line, paint: _Paint) -> str:
    indent = "      " + "    " * line.depth
    if line.symbol in (NEUTRAL, CONTEXT):
        return f"{indent}  {line.text}"
    return f"{indent}{paint.symbol(line.symbol)} {line.text}"


def _note(note: Note, paint: _Paint) -> str:
    label = paint(f"{note.label}:", _SEVERITY_COLOUR[note.severity])
    where = f" ({clean(note.address)})" if note.address else ""
    return f"{label} {clean(note.message)}{where}"


def _summary(plan: Plan, paint: _Paint, show_permissions: bool) -> list[str]:
    blocked = sum(c.action is Action.BLOCKED for c in plan.changes)
    checks = overrides_summary(plan.overrides)
    if not plan.live_differs:
        return [paint(NO_CHANGES, _BOLD), *([checks] if checks else [])]
    lines = [paint("Plan:", _BOLD) + " " + summary_line(*plan.counts())]
    if checks:
        lines.append(checks)
    if blocked:
        lines.append(
            f"{plural(blocked, 'deletion')} blocked by delete protection "
            f"(not counted above; nothing is sent for {'it' if blocked == 1 else 'them'})."
        )
    deletions = len(plan.deletions)
    if deletions > plan.max_deletes:
        lines.append(
            paint("Warning:", _SEVERITY_COLOUR["warning"])
            + f" this plan destroys {plural(deletions, 'object')}, more than --max-deletes "
            f"({plan.max_deletes}): apply will refuse it unless you raise --max-deletes."
        )
    if plan.has_applicable_changes and plan.permissions:
        listed = listed_permissions(plan, every=show_permissions)
        lines += ["", permissions_heading(plan, listed)]
        lines += [f"  {clean(permission)}" for permission in listed]
    return lines
