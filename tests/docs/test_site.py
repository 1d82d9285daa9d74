"""The README and the site's structure: what they promise must stay true.

What the pages show the commands print is checked by tests/docs/test_examples.py; the site's
links and anchors by `mkdocs build --strict` (.ci/run).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from reconciler.cli import main
from tests.ci import test_ci_examples as ci_checks
from tests.docs.pages import DOCS, PAGES, ROOT
from tests.docs.run import clean_environment

README = ROOT / "README.md"
README_TEXT = README.read_text()
README_MAX_BYTES = 10 * 1024
# mkdocs.yml's tags (`!!python/name:...`) are not used; it is plain YAML
CONFIG = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
SITE_URL = CONFIG["site_url"]


def command_names() -> list[str]:
    with click.Context(main) as context:
        return main.list_commands(context)


def nav_pages(nav: list[object]) -> list[str]:
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += nav_pages(value) if isinstance(value, list) else [str(value)]
    return pages


# --- the README ---------------------------------------------------------------------------


def first_commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", README_TEXT, re.S)
    assert block, "the README must open with a sh block of commands"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_readme_is_at_most_10_kib() -> None:
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md has {size} bytes; move detail to docs/"


def test_readme_opens_with_the_main_job_and_the_test_command() -> None:
    main_job, tests = first_commands()
    assert "--base-url local" in main_job and "reconciler apply" in main_job
    assert "reconciler plan" in main_job.split("reconciler apply", 1)[1]
    ci_commands = [
        line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line
    ]
    assert ci_commands == [tests], ".ci/run must run exactly the README's test command"
    assert "mkdocs build --strict" in tests, "CI builds the site, failing on broken links"


def test_the_main_job_names_an_example_that_exists() -> None:
    main_job, _ = first_commands()
    for path in re.findall(r"-f (\S+)", main_job):
        assert (ROOT / path).exists(), path


def test_every_site_link_of_the_readme_is_a_page_of_the_site() -> None:
    links = re.findall(rf"\]\(({re.escape(SITE_URL)}[^)]*)\)", README_TEXT)
    assert len(links) > 10, "the README links to the site's pages"
    for link in links:
        path, _, anchor = link.removeprefix(SITE_URL).partition("#")
        if path.endswith(".json"):
            target = DOCS / path
        else:
            target = DOCS / f"{path.rstrip('/')}.md" if path else DOCS / "index.md"
        assert target.exists(), f"{link}: no page {target.relative_to(ROOT)}"
        if anchor:  # a heading of the page, as the site's anchors are made
            headings = re.findall(r"^#+ (.+)$", target.read_text(), re.M)
            slugs = {re.sub(r"[^\w -]", "", h).strip().lower().replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{link}: no heading #{anchor}"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_example_path_a_page_mentions_exists(page: Path) -> None:
    for path in set(re.findall(r"`((?:examples|tests|schemas)/[\w./-]+)`", page.read_text())):
        assert (ROOT / path).exists(), f"{page.name}: {path}"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_install_by_name_names_the_distribution(page: Path) -> None:
    """`pip install reconciler` installs an unrelated project: the check tests/ci makes of the
    CI files, made of every page."""
    ci_checks.test_every_install_by_name_names_the_distribution(page)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_no_page_installs_reconciler_from_a_package_index(page: Path) -> None:
    """reconciler-cli is not published yet: only the release steps (development.md) speak of
    installing it from an index, as what publishing makes possible."""
    if page.name != "development.md":
        ci_checks.test_nothing_installs_reconciler_from_a_package_index(page)


# --- the site -----------------------------------------------------------------------------


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    in_nav = sorted(nav_pages(CONFIG["nav"]))
    on_disk = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert in_nav == on_disk


@pytest.mark.parametrize("name", command_names())
def test_every_command_has_its_reference_page(name: str) -> None:
    """One page per command of the click group, in the nav, showing its real `--help` (which
    tests/docs/test_examples.py keeps current)."""
    page = DOCS / "commands" / f"{name}.md"
    assert page.exists(), f"no reference page for `reconciler {name}`"
    assert f"commands/{name}.md" in nav_pages(CONFIG["nav"])
    assert f"```console\n$ reconciler {name} --help\n" in page.read_text()


def test_the_schema_is_published_at_its_id() -> None:
    """Editors fetch the schema from its `$id`: the site serves the repository's schema there."""
    schema_file = ROOT / "schemas" / "manifest.schema.json"
    schema_id = json.loads(schema_file.read_text())["$id"]
    assert schema_id.startswith(SITE_URL)
    published = DOCS / schema_id.removeprefix(SITE_URL)
    assert published.read_bytes() == schema_file.read_bytes()


def test_schema_markdown_lists_every_property_of_the_schema() -> None:
    output = CliRunner().invoke(main, ["schema", "--format", "markdown"]).output
    for name in ("vCpus", "healthcheck.intervalSeconds", "remoteIp", "fromFile", "ignoreCase"):
        assert f"`{name}" in output or f".{name}`" in output, name


def test_ci_examples_name_the_permissions_heading_plan_prints(tmp_path: Path) -> None:
    """The pipelines tell where to find the permissions a write key needs: under the heading
    a real plan prints (they once named a "Required permissions" section that does not exist)."""
    plan = subprocess.run(
        [
            "reconciler",
            "plan",
            "-f",
            str(ROOT / "examples" / "quickstart.yaml"),
            "--base-url",
            "local",
        ],
        cwd=tmp_path,
        env=clean_environment(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    heading = next(line for line in plan.splitlines() if line.startswith("Permissions"))
    for pipeline in (ROOT / "examples" / ".github" / "workflows" / "reconciler.yml",
                     ROOT / "examples" / ".gitlab-ci.yml"):  # fmt: skip
        assert f'"{heading}"' in pipeline.read_text(), pipeline.name


# --- console blocks -----------------------------------------------------------------------


def test_console_blocks_highlight_commands_and_leave_prompts_and_output_out_of_copies() -> None:
    """`$ ` is a prompt and the rest of its line a bash command; every other line is output,
    whatever it starts with (`  # app.shop/web will be updated`, which pygments' own session
    lexer colours as a root prompt). The copy button leaves prompts and output out."""
    from pygments.token import Generic

    spec = importlib.util.spec_from_file_location("docs_console", ROOT / ".ci" / "docs_console.py")
    assert spec is not None and spec.loader is not None
    console = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(console)
    session = "$ reconciler plan -f x.yaml | head -2\n  # app.shop/web will be updated\n# x\n"
    tokens = list(console.ConsoleLexer().get_tokens(session))
    assert tokens[0] == (Generic.Prompt, "$ ")
    assert "".join(v for t, v in tokens if t is not Generic.Output)[2:].startswith("reconciler")
    outputs = [v for t, v in tokens if t is Generic.Output]
    assert outputs == ["  # app.shop/web will be updated\n", "# x\n"]
    highlight = next(
        e["pymdownx.highlight"] for e in CONFIG["markdown_extensions"] if "pymdownx.highlight" in e
    )
    assert {"name": "console", "lang": console.NAME} in highlight["extend_pygments_lang"]
    assert ".ci/docs_console.py" in CONFIG["hooks"]
    css = (DOCS / CONFIG["extra_css"][0]).read_text()
    assert ".highlight code[data-md-copying] .gp" in css and "[data-md-copying] .go" in css
