"""The README is the user guide: its commands, reference and paths must stay true."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from reconciler.cli import COMMANDS, main
from reconciler.manifest.reference import reference_markdown
from reconciler.manifest.schema import manifest_schema

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def first_commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert block, "the README must open with a sh block of commands"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_readme_opens_with_the_main_job_and_the_test_command() -> None:
    main_job, tests = first_commands()
    assert "--base-url local" in main_job and "reconciler apply" in main_job
    assert "reconciler plan" in main_job.split("reconciler apply", 1)[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert tests in ci, ".ci/run must run exactly the README's test command"


def test_the_main_job_names_an_example_that_exists() -> None:
    main_job, _ = first_commands()
    for path in re.findall(r"-f (\S+)", main_job):
        assert (ROOT / path).exists(), path


def test_field_reference_is_generated_from_the_schema() -> None:
    section = re.search(r"<!-- reference:start -->\n(.*)\n<!-- reference:end -->", README, re.S)
    assert section, "README lacks the generated field reference"
    assert section.group(1).strip() == reference_markdown(manifest_schema()).strip(), (
        "regenerate it: reconciler schema --format markdown"
    )


def test_schema_markdown_lists_every_property_of_the_schema() -> None:
    output = CliRunner().invoke(main, ["schema", "--format", "markdown"]).output
    for name in ("vCpus", "healthcheck.intervalSeconds", "remoteIp", "fromFile", "ignoreCase"):
        assert f"`{name}" in output or f".{name}`" in output, name


def test_every_example_path_the_readme_mentions_exists() -> None:
    for path in set(re.findall(r"`(examples/[\w./-]+)`", README)):
        assert (ROOT / path).exists(), path


def test_every_command_is_documented() -> None:
    for name in COMMANDS:
        assert f"reconciler {name}" in README, name
