"""`reconciler show PLANFILE`: a saved plan rendered again, with no platform, key or manifest."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.fixtures.cli import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
NO_PLATFORM = {
    "RECONCILER_BASE_URL": None,
    "RECONCILER_API_KEY": None,
    "RECONCILER_FINGERPRINT_KEY": None,
    "NO_COLOR": None,
}


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, dict[str, CliResult]]:
    """A plan saved after the quickstart was applied and edited (a variable changes, one is
    added, the preview's settings change), with what `plan` printed in each format."""
    manifest = tmp_path / "quickstart.yaml"
    shutil.copy(ROOT / "examples" / "quickstart.yaml", manifest)
    env = {**NO_PLATFORM, "RECONCILER_BASE_URL": f"local:{tmp_path / 'state.json'}"}
    assert run_cli(["apply", "-f", str(manifest), "--auto-approve"], env=env).exit_code == 0
    text = manifest.read_text()
    manifest.write_text(
        text.replace("LOG_LEVEL: info", "LOG_LEVEL: warning").replace(
            "LOG_FORMAT: json", "LOG_FORMAT: json\n            EXTRA: one"
        )
    )
    plan_file = tmp_path / "plan.json"
    printed = {}
    for output_format in ("text", "markdown", "json"):
        printed[output_format] = result = run_cli(
            ["plan", "-f", str(manifest), "--out", str(plan_file), "--format", output_format],
            env=env,
        )
        assert result.exit_code == 0, result.output
    (tmp_path / "state.json").unlink()  # no platform left to reach
    return plan_file, printed


def show(*args: str) -> CliResult:
    return run_cli(["show", *args], env=NO_PLATFORM)


def test_show_prints_what_plan_printed_without_a_platform(
    saved: tuple[Path, dict[str, CliResult]],
) -> None:
    plan_file, printed = saved
    assert "EXTRA will be created" in printed["text"].stdout
    shown = show(str(plan_file))
    assert shown.exit_code == 0, shown.output
    # the same lines; a created object's fields come in the file's (sorted) key order
    assert Counter(shown.stdout.splitlines()) == Counter(printed["text"].stdout.splitlines())
    markdown = show(str(plan_file), "--format", "markdown")
    assert Counter(markdown.stdout.splitlines()) == Counter(printed["markdown"].stdout.splitlines())
    as_json = show(str(plan_file), "--format", "json")
    assert json.loads(as_json.stdout) == json.loads(printed["json"].stdout)


def test_show_reads_the_json_of_plan_too(
    saved: tuple[Path, dict[str, CliResult]], tmp_path: Path
) -> None:
    _, printed = saved
    document = tmp_path / "plan-output.json"
    document.write_text(printed["json"].stdout)
    shown = show(str(document))
    assert shown.exit_code == 0, shown.output
    assert Counter(shown.stdout.splitlines()) == Counter(printed["text"].stdout.splitlines())


def test_show_lists_every_permission_on_request(
    saved: tuple[Path, dict[str, CliResult]],
) -> None:
    plan_file, _ = saved
    listed = json.loads(plan_file.read_text())["permissions"]
    every = show(str(plan_file), "--show-permissions").stdout.splitlines()
    start = every.index("Permissions needed by apply:")
    assert [line.strip() for line in every[start + 1 :]] == listed


def test_an_edited_plan_file_is_refused(saved: tuple[Path, dict[str, CliResult]]) -> None:
    plan_file, _ = saved
    plan_file.write_text(plan_file.read_text().replace("warning", "error"))
    shown = show(str(plan_file))
    assert shown.exit_code == 1
    assert "was modified after it was saved" in shown.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [(None, "no such file"), ("not json", "not a plan (not JSON text)"), ("[]", "not a plan")],
)
def test_what_is_no_plan_is_said_so(tmp_path: Path, content: str | None, said: str) -> None:
    path = tmp_path / "plan.json"
    if content is not None:
        path.write_text(content)
    shown = show(str(path))
    assert shown.exit_code == 1
    assert said in shown.stderr and "Traceback" not in shown.output
