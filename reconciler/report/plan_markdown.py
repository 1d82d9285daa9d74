"""The plan as a pull-request comment: what a reviewer must see, without a click.

The result line first, then every object destroyed or replaced, the checks turned off or down,
the policy tests whose verdict changes, findings and plan-wide notes (each once), then every
change with the values it changes in a `diff` block (an update as a `-` and a `+` line, which
GitHub colours), the capacity ceilings that move, and, folded because it is long and
secondary, the permissions apply needs. The last line is the digest of the plan's calls,
which a merge's `apply --reviewed` holds the plan it makes again to.

GitHub refuses comments of 65,536 characters or more, and the GitHub Action puts a heading
above the plan, so the comment stays under `COMMENT_LIMIT`: past it, the permissions are left
out first, then the capacity ceilings, then whole changes from the end, and a note says
exactly what was left out and where the whole plan is. The result line, the destroyed
objects, the checks turned off and the digest are never left out.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Sequence

from reconciler.checks.capacity import CAPACITY_HEADING, capacity_lines, shows_capacity
from reconciler.escaping import clean
from reconciler.plan.changes import Action, Change, Plan, PolicyListDetail
from reconciler.plan.review import calls_digest
from reconciler.report.plan_lines import (
    CONTEXT,
    NEUTRAL,
    OVERRIDES_HEADING,
    Line,
    change_body,
    finding_lines,
    listed_permissions,
    note_lines,
    outcome,
    override_lines,
    overrides_summary,
    plan_notes,
    plural,
    summary_line,
)
from reconciler.report.plan_text import NO_CHANGES

GITHUB_COMMENT_LIMIT = 65536
"""GitHub refuses a comment of this many characters (UTF-16 code units) or more."""
HEADING_ROOM = 1024
"""Left for a heading above the plan in the same comment (the GitHub Action's markers and
title take about 250)."""
COMMENT_LIMIT = GITHUB_COMMENT_LIMIT - HEADING_ROOM
"""The markdown plan is shorter than this."""

_BACKTICK_RUN = re.compile(r"`+")
_LISTED_DELETIONS = 50
"""Deletions named in the warning; the changes below name every one."""
_LISTED_LEFT_OUT = 2000
"""Characters of addresses the cut note may spend naming the changes it leaves out."""
_SEPARATOR = "\n\n"
WHOLE_PLAN = (
    "<code>reconciler plan</code> prints it, and <code>reconciler show PLANFILE</code> shows a "
    "plan saved with <code>--out</code>"
)
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`\\]+")


def render_markdown(
    plan: Plan,
    *,
    limit: int = COMMENT_LIMIT,
    show_permissions: bool = False,
    full_plan_url: str | None = None,
) -> str:
    """Markdown shorter than `limit` characters; `full_plan_url` is where the whole plan can
    be read when something is left out (a CI run's artifacts), `show_permissions` lists every
    permission string instead of the fewest that cover them."""
    head = [_result(plan), *_warnings(plan)]
    sections = [_change_lines(change) for change in plan.changes]
    capacity = _capacity(plan)
    permissions = _permissions(plan, show_permissions)
    footer = _digest_line(plan)
    whole = [*head, *_changes(sections), *capacity, *permissions, footer]
    if _joined_size(whole) < limit:
        return _join(whole)
    left_out = _LeftOut(plan, full_plan_url, show_permissions)
    return _cut(plan, head, sections, [*capacity, *permissions], footer, limit, left_out)


def _cut(
    plan: Plan,
    head: list[str],
    sections: list[list[str]],
    tail: list[str],
    footer: str,
    limit: int,
    left_out: _LeftOut,
) -> str:
    """What fits: the head and the digest always; the changes that fit, in order; the
    capacity ceilings and the permissions if every change fits and room is left; and the note
    saying what is left out."""

    def assemble(shown: int, parts: Sequence[str]) -> str:
        left_out.start = shown
        left_out.parts = [p for p in _tail_parts(plan, tail) if p not in parts]
        kept = [block for block, p in zip(tail, _tail_parts(plan, tail), strict=True) if p in parts]
        return _join([*head, *_changes(sections[:shown]), *kept, left_out.note(), footer])

    fence = 2 * len(_fenced("diff", [line for s in sections for line in s]).split("\n", 1)[0])
    base = _joined_size([*head, footer]) + len(_SEPARATOR) * 2 + fence + 2
    shown, used = 0, 0
    for index, section in enumerate(sections):
        size = sum(_size(line) + 1 for line in section)
        left_out.start, left_out.parts = index + 1, _tail_parts(plan, tail)
        if base + used + size + _size(left_out.note()) >= limit:
            break
        shown, used = index + 1, used + size
    parts: list[str] = []
    if shown == len(sections):  # room left for the capacity, then the permissions?
        for part in _tail_parts(plan, tail):
            if _size(assemble(shown, [*parts, part])) < limit:
                parts.append(part)
    result = assemble(shown, parts)
    while _size(result) >= limit and shown > 0:  # the estimate was short: one change fewer
        shown -= 1
        result = assemble(shown, parts)
    if _size(result) < limit:
        return result
    # only when the head alone is too long (thousands of destroyed objects or findings): keep
    # its start, then the digest, which stays whole unless the limit is shorter than it
    start = _join(head).rstrip("\n")
    keep = limit - _size(footer) - len(_SEPARATOR) - 2
    if keep < _size(_result(plan)):  # a limit this short keeps the result line, if anything
        return _prefix(start, limit - 2) + "\n"
    return _prefix(start, keep) + _SEPARATOR + footer + "\n"


def _prefix(text: str, most: int) -> str:
    """The longest start of `text` whose size is at most `most`."""
    while text and _size(text) > most:
        text = text[: max(0, min(len(text) - 1, most - (_size(text) - len(text))))]
    return text


def _tail_parts(plan: Plan, tail: list[str]) -> list[str]:
    """What each block after the changes is: `capacity`, `permissions`."""
    parts = ["capacity"] if shows_capacity(plan.capacity) else []
    return [*parts, "permissions"][: len(tail)]


class _LeftOut:
    """What a cut comment leaves out (the changes from `start` on, the `parts` after them),
    and the note saying so."""

    def __init__(self, plan: Plan, full_plan_url: str | None, every: bool) -> None:
        self.plan = plan
        self.full_plan_url = full_plan_url
        self.every = every
        self.start = len(plan.changes)
        self.parts: list[str] = []

    def note(self) -> str:
        items: list[str] = []
        count = len(self.plan.changes) - self.start
        if count:
            items.append(f"> - {plural(count, 'change')}: {self._addresses()}")
        if "capacity" in self.parts:
            items.append("> - the capacity ceilings the plan moves")
        if "permissions" in self.parts:
            listed = len(listed_permissions(self.plan, every=self.every))
            items.append(f"> - the permissions apply needs ({plural(listed, 'string')})")
        return "\n".join(
            [
                "> [!WARNING]",
                "> **Left out to fit one comment:**",
                *items,
                ">",
                f"> The whole plan: {self._where()}",
            ]
        )

    def _where(self) -> str:
        url = self.full_plan_url
        if url is not None and _URL.fullmatch(url):
            return f"<{url}>"
        return WHOLE_PLAN

    def _addresses(self) -> str:
        """The addresses left out, as many as `_LISTED_LEFT_OUT` characters hold."""
        named: list[str] = []
        spent = 0
        for change in itertools.islice(self.plan.changes, self.start, None):
            text = f"<code>{_escape(change.address)}</code>"
            if named and spent + len(text) > _LISTED_LEFT_OUT:
                break
            named.append(text)
            spent += len(text) + 2
        more = len(self.plan.changes) - self.start - len(named)
        return ", ".join(named) + (f" and {more} more" if more else "")


def _join(parts: Sequence[str]) -> str:
    return _SEPARATOR.join(parts) + "\n"


def _joined_size(parts: Sequence[str]) -> int:
    if not parts:
        return 0
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
    """The blocks under the result line: destroyed objects, the deletion limit, blocked
    deletions, check overrides, policy tests whose verdict changes, findings, notes."""
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
    verdicts = [
        f"> - <code>{_escape(change.address)}</code>: **{_escape(changed.name)}**: "
        f"{_escape(str(changed))}"
        for change in plan.changes
        if isinstance(change.detail, PolicyListDetail)
        for changed in change.detail.test_outcomes
    ]
    if verdicts:
        heading = "> **Policy tests whose verdict this plan changes:**"
        blocks.append("\n".join(["> [!WARNING]", heading, *verdicts]))
    errors = [f for f in plan.findings if f.fails]
    warned = [f for f in plan.findings if not f.fails and f.waiver is None]
    waived = [f for f in plan.findings if f.waiver is not None]
    for findings, label in ((errors, "CAUTION"), (warned, "WARNING"), (waived, "NOTE")):
        if findings:
            items = [f"> - {_escape(line)}" for line in finding_lines(findings)]
            blocks.append("\n".join([f"> [!{label}]", *items]))
    notes = plan_notes(plan)
    for severities, label in ((("warning", "error"), "WARNING"), (("info",), "NOTE")):
        lines = [
            f"> - {_escape(n.message)}"
            + (f" (<code>{_escape(n.address)}</code>)" if n.address else "")
            for n in notes
            if n.severity in severities
        ]
        if lines:
            blocks.append("\n".join([f"> [!{label}]", *lines]))
    return blocks


def _changes(sections: Sequence[list[str]]) -> list[str]:
    """The changes in one `diff` block, each under its `@@` heading line."""
    lines = [line for section in sections for line in section]
    return [_fenced("diff", lines)] if lines else []


def _change_lines(change: Change) -> list[str]:
    """`@@ ~ address will be updated in-place @@` (which GitHub colours as a diff's hunk
    heading), then the change's body and notes. Inside the code block nothing is markup: the
    fence is longer than any backtick run in it."""
    lines = [f"@@ {change.action.symbol} {clean(change.address)} {outcome(change)} @@"]
    lines += [text for line in change_body(change) for text in _diff_lines(line)]
    # the policy tests it turns are listed with the warnings above
    lines += [f"# {note}" for note in note_lines(change, outcomes=False)]
    return lines


def _diff_lines(line: Line) -> list[str]:
    """The symbol in column 0, so GitHub's diff highlighting colours the whole line: an update
    as its `-` and `+` sides, a header (`~` without sides) and unchanged text around changed
    lines as a diff's uncoloured context lines."""
    indent = "    " * line.depth
    if line.symbol == "~":
        if line.pair is not None:
            before, after = line.pair
            return [f"- {indent}{before}", f"+ {indent}{after}"]
        return [f"  {indent}{line.text}"]
    if line.symbol == CONTEXT:
        return [f"  {indent}{line.text}"]
    if line.symbol == NEUTRAL:
        return [f"# {indent}{line.text.removeprefix('# ')}"]
    return [f"{line.symbol} {indent}{line.text}"]


def _fenced(language: str, lines: list[str]) -> str:
    """A code block whose fence is longer than any backtick run inside, so values cannot close it."""
    body = "\n".join(lines)
    longest = max((len(run) for run in _BACKTICK_RUN.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body}\n{fence}"


def _capacity(plan: Plan) -> list[str]:
    """The ceilings the plan moves, and their totals: values it changes, so not folded."""
    if not shows_capacity(plan.capacity):
        return []
    assert plan.capacity is not None
    return [f"**{_escape(CAPACITY_HEADING)}**\n{_fenced('text', capacity_lines(plan.capacity))}"]


def _permissions(plan: Plan, every: bool) -> list[str]:
    """Folded: what a key needs, not what the plan changes."""
    if not (plan.has_applicable_changes and plan.permissions):
        return []
    listed = listed_permissions(plan, every=every)
    heading = f"Permissions needed by apply ({len(listed)})"
    if list(listed) != list(plan.permissions):
        heading = (
            f"Permissions needed by apply ({len(listed)}: reads as wildcards; "
            f"<code>--show-permissions</code> lists each of the {len(plan.permissions)})"
        )
    return [
        f"<details><summary>{heading}</summary>\n\n"
        f"{_fenced('text', [clean(p) for p in listed])}\n\n"
        "</details>"
    ]


def _digest_line(plan: Plan) -> str:
    """The digest of the calls this plan sends: what a merge's `apply --reviewed` holds the
    plan it makes again to (reconciler/plan/review.py)."""
    return (
        f"<sub>Reviewed-plan digest: <code>{calls_digest(plan)}</code> "
        "(<code>reconciler apply --reviewed</code> applies exactly these calls)</sub>"
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
