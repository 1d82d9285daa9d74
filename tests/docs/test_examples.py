"""Every output the documentation shows is what the command prints (see tests/docs/pages.py).

One test per example: its commands run against the built-in emulator (`--base-url local`) in a
fresh directory, and each output is compared with the page, the volatile parts the example
names normalised on both sides. `python -m tests.docs.regenerate` rewrites the pages from the
real output after a change in what the commands print.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from tests.docs.pages import ROOT, Example, Generated, Page, all_pages, normalise
from tests.docs.run import generated_output, run_example

PAGES = all_pages()
EXAMPLES = [(page, example) for page in PAGES for example in page.examples]
GENERATED = [(page, generated) for page in PAGES for generated in page.generated]


@pytest.mark.parametrize(("page", "example"), EXAMPLES, ids=[e.id for _, e in EXAMPLES])
def test_example_shows_what_the_command_prints(
    page: Page, example: Example, tmp_path: Path
) -> None:
    runs = run_example(example, page, tmp_path)
    for index, (command, run) in enumerate(zip(example.commands, runs, strict=True)):
        shown = normalise(command.shown_output, example.volatile)
        printed = normalise(run.output, example.volatile)
        assert printed == shown, (
            f"{example.id}: `{run.shell}` prints something else than the page shows "
            "(python -m tests.docs.regenerate rewrites it):\n"
            + "\n".join(difflib.unified_diff(shown, printed, "page", "printed", lineterm=""))
        )
        shows_status = index + 1 < len(runs) and runs[index + 1].shell.strip() == "echo $?"
        assert run.status == 0 or shows_status, (
            f"{example.id}: `{run.shell}` exits {run.status}; show it with a `$ echo $?` line"
        )


@pytest.mark.parametrize(("page", "generated"), GENERATED, ids=[g.id for _, g in GENERATED])
def test_generated_section_is_up_to_date(page: Page, generated: Generated, tmp_path: Path) -> None:
    printed = generated_output(page, generated.command, tmp_path)
    assert generated.body.strip() == printed.strip(), (
        f"{generated.id} is stale: python -m tests.docs.regenerate rewrites it"
    )


def test_the_examples_are_found() -> None:
    """The extractor must see the examples the pages hold (a broken pattern would pass
    every page vacuously)."""
    pages_with_examples = {page.path.relative_to(ROOT).as_posix() for page, _ in EXAMPLES}
    assert {"docs/getting-started.md", "docs/commands/plan.md"} <= pages_with_examples
    assert any(g.command == "reconciler schema --format markdown" for _, g in GENERATED)


@pytest.mark.parametrize("page", PAGES, ids=[p.path.relative_to(ROOT).as_posix() for p in PAGES])
def test_only_console_blocks_show_a_prompt(page: Page) -> None:
    """A session (`$ command` then its output) in a block of another kind would escape the
    check: sessions go in ```console blocks, commands alone in ```sh blocks."""
    for line_number, info, body in page.other_blocks:
        if info == "markdown":
            continue  # the source of a page, shown as such (docs/development.md)
        prompts = [line for line in body if line.startswith("$ ")]
        assert not prompts, f"{page.path.name}:{line_number}: a ```{info} block with a prompt"
