"""Plans read as a reviewer reads them, on generated workspaces of 50 and 200 apps
(tests/report/workspaces.py): what the pull-request comment shows without a click, how long the
text plan is, and that both renderings hold, change by change, everything the plan holds.

The figures are printed (`pytest tests/report/test_plan_reading.py -s`, or
`python -m tests.report.test_plan_reading` for the table alone) beside those of the renderers
before this layout, measured with the same workspaces on commit 70b74fb (`BEFORE`);
docs/reference/plan-output.md#at-scale shows them (`--docs` rewrites its table, which a test
compares).
"""

from __future__ import annotations

import html
import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from reconciler.plan.changes import Plan, PolicyListDetail
from reconciler.plan.golive import NEXT_DEPLOYMENT_NOTE
from reconciler.plan.json_form import plan_from_dict
from reconciler.plan.permissions import compact, implied
from reconciler.report.plan_lines import change_body, heading, note_lines, outcome
from reconciler.report.plan_markdown import COMMENT_LIMIT, GITHUB_COMMENT_LIMIT
from tests.fixtures.cli import run_cli
from tests.report.workspaces import CHANGES_PER_UNIT, ReviewWorkspace, review_workspace

SIZES = {"50 apps": (5, 10, 1), "200 apps": (10, 20, 4)}
"""projects, apps per project, units of 14 changes"""


@dataclass(frozen=True)
class Figures:
    text_lines: int
    text_longest_line: int
    permission_lines: int
    capacity_lines: int
    markdown_characters: int
    markdown_lines: int
    clicks: int
    """Folded sections a reviewer opens to see the whole comment."""
    left_out: str


BEFORE = {
    "50 apps": Figures(419, 432, 167, 103, 25893, 479, 16, "nothing"),
    "200 apps": Figures(1583, 1113, 643, 399, 34229, 730, 56, "permissions, capacity"),
}
"""The figures of commit 70b74fb's renderers on the same workspaces (its markdown left out the
permissions with a note at 200 apps, the capacity ceilings without one)."""


@dataclass(frozen=True)
class Rendered:
    workspace: ReviewWorkspace
    plan: Plan
    text: str
    markdown: str


def render(directory: Path, size: str) -> Rendered:
    projects, apps_each, units = SIZES[size]
    workspace = review_workspace(directory, projects=projects, apps_each=apps_each, units=units)
    outputs = {}
    for output_format in ("text", "markdown", "json"):
        # from the workspace's directory, as CI runs it: paths in findings are relative
        where = ["--chdir", str(workspace.directory.parent), "plan", "-f", workspace.directory.name]
        result = run_cli([*where, "--format", output_format], env=workspace.env())
        assert result.exit_code == 0, result.stderr[-2000:]
        outputs[output_format] = result.stdout
    plan = plan_from_dict(json.loads(outputs["json"]))
    return Rendered(workspace, plan, outputs["text"], outputs["markdown"])


def figures(rendered: Rendered) -> Figures:
    text = rendered.text.splitlines()
    permissions = text.index(next(line for line in text if line.startswith("Permissions")))
    capacity = text.index(next(line for line in text if line.startswith("Capacity ceilings")))
    capacity_end = text.index("", capacity)
    markdown = rendered.markdown
    left_out = re.search(r"\*\*Left out to fit one comment:\*\*\n((?:> - .*\n)+)", markdown)
    return Figures(
        text_lines=len(text),
        text_longest_line=max(map(len, text)),
        permission_lines=len(text) - permissions - 1,
        capacity_lines=capacity_end - capacity - 1,
        markdown_characters=len(markdown),
        markdown_lines=len(markdown.splitlines()),
        clicks=markdown.count("<details>"),
        left_out=left_out[1].strip() if left_out else "nothing",
    )


def table(rows: dict[str, tuple[Figures, Figures]]) -> str:
    """The figures, before and after, as the documentation shows them."""
    lines = [
        "| | 50 apps, 14 changes | | 200 apps, 56 changes | |",
        "|---|---|---|---|---|",
        "| | before | after | before | after |",
    ]
    labels = {
        "text_lines": "text plan, lines",
        "text_longest_line": "its longest line, characters",
        "permission_lines": "permission strings listed",
        "capacity_lines": "capacity lines",
        "markdown_characters": "comment, characters",
        "markdown_lines": "comment, lines",
        "clicks": "comment, folded sections to open",
        "left_out": "comment leaves out",
    }
    for field, label in labels.items():
        cells = [str(getattr(f, field)) for pair in rows.values() for f in pair]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return "\n".join(lines)


# --- the reviewer's reading ------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rendered]:
    """Each workspace built and planned once a module (a worker): the large one takes seconds."""

    class Built(dict[str, Rendered]):
        def __missing__(self, size: str) -> Rendered:
            self[size] = render(tmp_path_factory.mktemp(size.replace(" ", "-")), size)
            return self[size]

    return Built()


@pytest.fixture(params=list(SIZES))
def rendered(request: pytest.FixtureRequest, workspaces: dict[str, Rendered]) -> Rendered:
    return workspaces[request.param]


def test_the_comment_fits_and_shows_what_a_reviewer_needs_without_a_click(
    rendered: Rendered,
) -> None:
    plan, markdown = rendered.plan, rendered.markdown
    assert len(plan.changes) == rendered.workspace.changes
    assert len(markdown.encode("utf-16-le")) // 2 < COMMENT_LIMIT < GITHUB_COMMENT_LIMIT
    assert "Left out to fit one comment" not in markdown
    visible = html.unescape(re.sub(r"<details>.*?</details>", "", markdown, flags=re.S))
    add, update, destroy = plan.counts()
    assert visible.startswith(f"**Plan:** {add} to add, {update} to change, {destroy} to destroy.")
    for destroyed in plan.deletions:  # every destroy and replace, by name, above the changes
        assert f"> - <code>{destroyed.address}</code>" in visible.split("```diff")[0]
    verdicts = [
        (c.address, o)
        for c in plan.changes
        if isinstance(c.detail, PolicyListDetail)
        for o in c.detail.test_outcomes
    ]
    assert len(verdicts) == rendered.workspace.changes // CHANGES_PER_UNIT  # one a unit
    for address, turned in verdicts:
        assert f"> - <code>{address}</code>: **{turned.name}**: {turned}" in visible
    assert plan.overrides
    for override in plan.overrides:
        assert override.located in visible
    # every change's values, as `-`/`+` pairs GitHub colours (no `~` line in the diff)
    block = visible[visible.index("```diff\n") : visible.index("\n```\n", visible.index("```diff"))]
    assert not [line for line in block.splitlines() if line.startswith("~")]
    for change in plan.changes:
        assert f"@@ {change.action.symbol} {change.address} {outcome(change)} @@" in block
    # the one folded section: the permissions, long and secondary
    assert markdown.count("<details>") == 1
    assert "<details><summary>Permissions needed by apply" in markdown


def test_the_text_plan_says_each_thing_once_and_shortly(rendered: Rendered) -> None:
    plan, text = rendered.plan, rendered.text
    lines = text.splitlines()
    # each plan-wide note once, naming a few environments and counting the rest
    notes = [line for line in lines if line.startswith(("Note:", "Warning:"))]
    assert len(notes) == len(set(notes))
    assert max(map(len, notes)) < 400
    assert NEXT_DEPLOYMENT_NOTE not in text  # said once, by the plan-wide note
    # capacity: the environments whose ceiling moves, the totals, and a count of the rest
    assert plan.capacity is not None
    moved = [c for c in plan.capacity.environments if c.changes]
    for ceiling in plan.capacity.environments:
        shown = any(line.startswith(f"  {ceiling.label} ") for line in lines)
        assert shown == ceiling.changes, ceiling.label
    unchanged = len(plan.capacity.environments) - len(moved)
    assert f"  ({unchanged} environments whose ceiling does not change not listed)" in lines
    # permissions: the fewest strings that cover what apply needs
    start = lines.index(next(line for line in lines if line.startswith("Permissions")))
    listed = [line.strip() for line in lines[start + 1 :]]
    assert listed == list(compact(plan.permissions))
    assert all(implied(p, listed) for p in plan.permissions)
    assert len(listed) < len(plan.permissions) / 5


def test_fewer_lines_than_before_by_at_least_half_and_the_docs_say_so(
    workspaces: dict[str, Rendered],
) -> None:
    rows = {size: (BEFORE[size], figures(workspaces[size])) for size in SIZES}
    print("\n" + table(rows))
    for before, now in rows.values():
        assert now.text_lines * 2 <= before.text_lines
        assert now.text_longest_line < min(before.text_longest_line, 300)
        assert now.markdown_lines < before.markdown_lines
        assert now.clicks == 1 and now.left_out == "nothing"
    page = DOCS_PAGE.read_text()
    shown = page[page.index(FIGURES_START) + len(FIGURES_START) : page.index(FIGURES_END)]
    assert shown.strip() == table(rows), "run `python -m tests.report.test_plan_reading --docs`"


# --- nothing a reviewer needs is lost ----------------------------------------------------------


def sections(rendering: str, starts: str) -> dict[str, list[str]]:
    """Each change's lines in a rendering, by address: from its heading to the next one."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    pattern = re.compile(starts)
    for line in rendering.splitlines():
        heading_found = pattern.match(line)
        if heading_found:
            current = found.setdefault(heading_found["address"], [])
            continue
        if current is not None:
            current.append(line)
    return found


def test_both_renderings_hold_every_changes_values_notes_and_verdicts(
    rendered: Rendered,
) -> None:
    """Change by change, text and markdown show the same thing: each line of the change's body
    (an update's two sides; created and destroyed objects' fields; list items and policy
    edits), each note under it, each policy test whose verdict it turns, and every field the
    plan's JSON says it changes."""
    plan = rendered.plan
    text = sections(rendered.text, r"  # (?P<address>\S+) ")
    markdown_block = rendered.markdown.split("```diff\n", 1)[1].split("\n```\n", 1)[0]
    markdown = sections(markdown_block, r"@@ \S+ (?P<address>\S+) ")
    visible = html.unescape(rendered.markdown)
    assert list(text) == list(markdown) == [c.address for c in plan.changes]
    for change in plan.changes:
        assert f"  # {heading(change)}" in rendered.text
        shown_text, shown_markdown = "\n".join(text[change.address]), markdown[change.address]
        body = change_body(change)
        for line in body:
            assert line.text in shown_text, (change.address, line)
            sides = line.pair or (line.text,)
            for side in sides:
                assert any(side in shown for shown in shown_markdown), (change.address, side)
        for note in note_lines(change, outcomes=False):
            assert f"# {note}" in shown_text and f"# {note}" in shown_markdown
        policy_list = change.detail if isinstance(change.detail, PolicyListDetail) else None
        for turned in policy_list.test_outcomes if policy_list else ():
            assert f"# policy test {turned.name!r} changes: {turned}" in shown_text
            assert f"<code>{change.address}</code>: **{turned.name}**: {turned}" in visible
        # every field the plan changes has its line (independent of the renderers' own lists)
        paths = [d.path for d in change.diffs] + [
            d.path for edit in (policy_list.edits if policy_list else ()) for d in edit.diffs
        ]
        for path in paths:
            assert any(line.text.startswith(path) for line in body), (change.address, path)


DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "plan-output.md"
FIGURES_START = "<!-- figures: python -m tests.report.test_plan_reading --docs -->"
FIGURES_END = "<!-- end of figures -->"


def main(argv: list[str]) -> int:
    """The figures table, before and after; with `--docs`, written into
    docs/reference/plan-output.md as well."""
    rows = {}
    for size in SIZES:
        with tempfile.TemporaryDirectory() as directory:
            rows[size] = (BEFORE[size], figures(render(Path(directory), size)))
    print(table(rows))
    if "--docs" in argv:
        page = DOCS_PAGE.read_text()
        start = page.index(FIGURES_START) + len(FIGURES_START)
        DOCS_PAGE.write_text(f"{page[:start]}\n{table(rows)}\n{page[page.index(FIGURES_END) :]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
