"""The plan as a pull-request comment: result first, deletions flagged, details folded.

GitHub refuses comments of 65,536 characters or more, so the comment is cut at
a whole change (never mid-block, which would break the markup) with a note
saying how many changes were left out and where to see them.
"""

from __future__ import annotations

import html
import re

from reconciler.engine.changes import Action, Change, Plan
from reconciler.engine.render_lines import (
    NEUTRAL,
    Line,
    change_body,
    clean,
    note_lines,
    outcome,
    plural,
    summary_line,
)
from reconciler.engine.render_text import NO_CHANGES

GITHUB_COMMENT_LIMIT = 65535
_BACKTICK_RUN = re.compile(r"`+")
_LISTED_DELETIONS = 50
"""Deletions named in the warning; the folded changes below name every one."""


def render_markdown(plan: Plan, *, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """Markdown shorter than `limit` characters (cut at a whole change when needed)."""
    head = [_result(plan)]
    warnings = _warnings(plan)
    sections = [_change_section(change) for change in plan.changes]
    tail = [_permissions(plan)] if plan.has_changes and plan.permissions else []

    def text(parts: list[str]) -> str:
        return "\n\n".join(parts) + "\n"

    everything = [*head, *warnings, *sections, *tail]
    if len(text(everything)) < limit:
        return text(everything)
    # Keep the result line and as many warnings and whole changes as fit with the cut note.
    kept = list(head)
    for block in warnings:
        if len(text([*kept, block, _cut_note(len(sections))])) < limit:
            kept.append(block)
    shown = 0
    for section in sections:
        left_out = len(sections) - shown - 1
        candidate = [*kept, section] + ([_cut_note(left_out)] if left_out else [])
        if len(text(candidate)) >= limit:
            break
        kept.append(section)
        shown += 1
    if shown < len(sections):
        kept.append(_cut_note(len(sections) - shown))
    result = text(kept)
    return result if len(result) < limit else result[: max(limit - 2, 0)] + "\n"


def _result(plan: Plan) -> str:
    if not plan.changes:
        return f"**{NO_CHANGES}**"
    return "**Plan:** " + summary_line(*plan.counts())


def _warnings(plan: Plan) -> list[str]:
    blocks: list[str] = []
    if plan.deletions:
        items = [
            f"> - <code>{_escape(c.address)}</code>"
            + (" (replaced: destroyed, then created again)" if c.action is Action.REPLACE else "")
            for c in plan.deletions[:_LISTED_DELETIONS]
        ]
        if len(plan.deletions) > _LISTED_DELETIONS:
            items.append(f"> - and {len(plan.deletions) - _LISTED_DELETIONS} more")
        count = plural(len(plan.deletions), "object")
        blocks.append("\n".join([f"> [!CAUTION]\n> **This plan destroys {count}:**", *items]))
    deletions = len(plan.deletions)
    if deletions > plan.max_deletes:
        blocks.append(
            f"> [!WARNING]\n> {deletions} deletions exceed `--max-deletes` ({plan.max_deletes}): "
            "apply will refuse this plan unless `--max-deletes` is raised."
        )
    blocked = [c for c in plan.changes if c.action is Action.BLOCKED]
    if blocked:
        names = ", ".join(f"<code>{_escape(c.address)}</code>" for c in blocked)
        blocks.append(
            f"> [!NOTE]\n> {plural(len(blocked), 'deletion')} blocked by delete protection "
            f"(not counted above): {names}"
        )
    notes = [n for n in plan.notes if n.severity != "info"]
    infos = [n for n in plan.notes if n.severity == "info"]
    for note_list, label in ((notes, "WARNING"), (infos, "NOTE")):
        if note_list:
            lines = [
                f"> - {_escape(n.message)}"
                + (f" (<code>{_escape(n.address)}</code>)" if n.address else "")
                for n in note_list
            ]
            blocks.append("\n".join([f"> [!{label}]", *lines]))
    return blocks


def _change_section(change: Change) -> str:
    lines = [_diff_line(line) for line in change_body(change)]
    lines += [f"# {note}" for note in note_lines(change)]
    symbol = change.action.symbol
    summary = (
        f"<code>{_escape(symbol)}</code> <code>{_escape(change.address)}</code> "
        f"{_escape(outcome(change))}"
    )
    return f"<details><summary>{summary}</summary>\n\n{_fenced('diff', lines)}\n\n</details>"


def _diff_line(line: Line) -> str:
    # the symbol stays in column 0 so GitHub's diff highlighting colours the whole line
    symbol = "#" if line.symbol == NEUTRAL else line.symbol
    text = line.text.removeprefix("# ") if line.symbol == NEUTRAL else line.text
    return f"{symbol} {'    ' * line.depth}{text}"


def _fenced(language: str, lines: list[str]) -> str:
    """A code block whose fence is longer than any backtick run inside, so values cannot close it."""
    body = "\n".join(lines)
    longest = max((len(run) for run in _BACKTICK_RUN.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body}\n{fence}"


def _permissions(plan: Plan) -> str:
    return (
        f"<details><summary>Permissions needed by apply ({len(plan.permissions)})</summary>\n\n"
        f"{_fenced('text', [clean(p) for p in plan.permissions])}\n\n"
        "</details>"
    )


def _cut_note(left_out: int) -> str:
    return (
        f"> [!NOTE]\n> {plural(left_out, 'more change')} not shown: this comment is cut to stay "
        "under GitHub's size limit. See the CI log or run `reconciler plan` for the full plan."
    )


def _escape(text: str) -> str:
    """HTML-escape and neutralise markdown in text that lands outside code blocks."""
    escaped = html.escape(clean(text), quote=False)
    return escaped.replace("`", "&#96;").replace("*", "&#42;").replace("_", "&#95;")
