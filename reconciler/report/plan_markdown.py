"""The plan as a pull-request comment: result first, deletions flagged, details folded.

GitHub refuses comments of 65,536 characters or more, so the comment is cut at
a whole change (never mid-block, which would break the markup) with a note
saying how many changes were left out and where to see them.
"""

from __future__ import annotations

import html
import re

from reconciler.checks.capacity import CAPACITY_HEADING, capacity_lines, shows_capacity
from reconciler.escaping import clean
from reconciler.plan.changes import Action, Change, Plan
from reconciler.plan.review import calls_digest
from reconciler.report.plan_lines import (
    CONTEXT,
    NEUTRAL,
    OVERRIDES_HEADING,
    Line,
    change_body,
    note_lines,
    outcome,
    override_lines,
    overrides_summary,
    plural,
    summary_line,
)
from reconciler.report.plan_text import NO_CHANGES

GITHUB_COMMENT_LIMIT = 65535
_BACKTICK_RUN = re.compile(r"`+")
_LISTED_DELETIONS = 50
"""Deletions named in the warning; the folded changes below name every one."""


def render_markdown(plan: Plan, *, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """Markdown shorter than `limit` characters (cut at a whole change when needed)."""
    head = _result(plan)
    warnings = _warnings(plan)
    sections = [_change_section(change) for change in plan.changes]
    tail = [_permissions(plan)] if plan.has_applicable_changes and plan.permissions else []
    if shows_capacity(plan.capacity):
        assert plan.capacity is not None
        lines = capacity_lines(plan.capacity)
        tail.insert(
            0,
            f"<details><summary>{_escape(CAPACITY_HEADING)}</summary>\n\n{_fenced('text', lines)}\n\n</details>",
        )
    footer = _digest_line(plan)
    everything = [head, *warnings, *sections, *tail, footer]
    if _joined_size(everything) < limit:
        return _join(everything)
    # The result line, then what fits of the warnings and whole changes, keeping room for the
    # note and the digest.
    note_size = max(_size(_cut_note(len(sections))), _size(_cut_note(0)))
    room = limit - _size(head) - 1 - (note_size + len(_SEPARATOR))
    room -= _size(footer) + len(_SEPARATOR)
    kept = [head]
    for block in warnings:
        if _size(block) + len(_SEPARATOR) < room:
            kept.append(block)
            room -= _size(block) + len(_SEPARATOR)
    shown = 0
    for section in sections:
        if _size(section) + len(_SEPARATOR) >= room:
            break
        kept.append(section)
        room -= _size(section) + len(_SEPARATOR)
        shown += 1
    kept.append(_cut_note(len(sections) - shown))
    kept.append(footer)
    result = _join(kept)
    while _size(result) >= limit and len(result) > 1:  # only when even the result line is too long
        result = result[: len(result) - (_size(result) - limit) - 2] + "\n"
    return result


_SEPARATOR = "\n\n"


def _join(parts: list[str]) -> str:
    return _SEPARATOR.join(parts) + "\n"


def _joined_size(parts: list[str]) -> int:
    return sum(map(_size, parts)) + len(_SEPARATOR) * (len(parts) - 1) + 1


def _size(text: str) -> int:
    """Length as GitHub counts it (UTF-16 code units: an emoji counts twice), to stay safe."""
    return len(text) + sum(ord(char) > 0xFFFF for char in text)


def _result(plan: Plan) -> str:
    checks = overrides_summary(plan.overrides)
    result = (
        f"**{NO_CHANGES}**"
        if not plan.live_differs
        else ("**Plan:** " + summary_line(*plan.counts()))
    )
    return f"{result}<br>\n**{_escape(checks)}**" if checks else result


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
    if plan.overrides:
        # beside the result, never folded: a rule silenced in a pull request is what a
        # reviewer must not miss
        label = "CAUTION" if plan.checks_changed else "NOTE"
        items = [f"> - <code>{_escape(line)}</code>" for line in override_lines(plan.overrides)]
        blocks.append("\n".join([f"> [!{label}]", f"> **{_escape(OVERRIDES_HEADING)}**", *items]))
    errors = [f for f in plan.findings if f.fails]
    warned = [f for f in plan.findings if not f.fails and f.waived is None]
    waived = [f for f in plan.findings if f.waived is not None]
    for findings, label in ((errors, "CAUTION"), (warned, "WARNING"), (waived, "NOTE")):
        if findings:
            items = [f"> - {_escape(f.labelled)}" for f in findings]
            blocks.append("\n".join([f"> [!{label}]", *items]))
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
    # the symbol stays in column 0 so GitHub's diff highlighting colours the whole line;
    # an unchanged line of text around changed ones is a diff's own context line, uncoloured
    if line.symbol == CONTEXT:
        return f"  {'    ' * line.depth}{line.text}"
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


def _digest_line(plan: Plan) -> str:
    """The digest of the calls this plan sends: what a merge's `apply --reviewed` holds the
    plan it makes again to (reconciler/plan/review.py)."""
    return (
        f"<sub>Reviewed-plan digest: <code>{calls_digest(plan)}</code> "
        "(<code>reconciler apply --reviewed</code> applies exactly these calls)</sub>"
    )


def _cut_note(left_out: int) -> str:
    if not left_out:  # everything shown, only the permissions left out
        return (
            "> [!NOTE]\n> The permissions apply needs are not shown: this comment is cut to stay "
            "under GitHub's size limit. See the CI log or run `reconciler plan` for them."
        )
    return (
        f"> [!NOTE]\n> {plural(left_out, 'more change')} not shown: this comment is cut to stay "
        "under GitHub's size limit. See the CI log or run `reconciler plan` for the full plan."
    )


_MARKDOWN_SYNTAX = str.maketrans(
    {
        **{char: f"&#{ord(char)};" for char in "`*_[]!~|\\:"},
        # a zero-width space after `@` and `#`: GitHub links mentions and issue references in
        # the rendered text, where a character reference is the character again
        "@": "@&#8203;",
        "#": "#&#8203;",
    }
)
"""Characters that make markdown (emphasis, links and images, strikethrough, tables, escapes,
`scheme:` autolinks and `:emoji:`) as character references, which are text; mentions and issue
references broken by a zero-width space. Text the manifests wrote lands outside code blocks in
findings, notes and the summary of each change: none of it can mention, link or show an image."""


def _escape(text: str) -> str:
    """HTML-escape and neutralise markdown in text that lands outside code blocks."""
    return html.escape(clean(text), quote=False).translate(_MARKDOWN_SYNTAX)
