"""The habits users bring from Terraform and octoDNS: `--no-color` on every command and
NO_COLOR without bold or italics, `--chdir DIR`, a one-dash option answered with its two-dash
spelling, shell completion, progress while a plan reads live state, status tables that fit 80
columns without cutting IDs."""

from __future__ import annotations

import io
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from reconciler.cli import COMMANDS
from reconciler.report import output
from reconciler.report.status import render_rich
from reconciler.status.read import DeploymentInfo, DomainInfo, EnvironmentStatus, StatusReport
from tests.fixtures.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
CLEAN = {"RECONCILER_BASE_URL": None, "RECONCILER_API_KEY": None, "NO_COLOR": None}


# --- colour --------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_takes_no_color(command: str) -> None:
    result = run_cli([command, "--no-color", "--help"], env=CLEAN)
    assert result.exit_code == 0, result.output
    assert "--no-color" in result.stdout


def test_no_color_leaves_rich_no_style_at_all() -> None:
    """rich alone drops colours under NO_COLOR but keeps bold and italics."""
    for turned_off in ("flag", "environment"):
        output.reset_colour()
        if turned_off == "flag":
            output.turn_colour_off()
        else:
            os.environ["NO_COLOR"] = "1"
        try:
            assert output.console().color_system is None
        finally:
            os.environ.pop("NO_COLOR", None)
            output.reset_colour()
    assert output.console().color_system is not None or not output.stdout_is_terminal()


# --- --chdir ---------------------------------------------------------------------------


def test_chdir_reads_the_paths_from_that_directory(tmp_path: Path) -> None:
    shutil.copy(QUICKSTART, tmp_path / "platform.yaml")
    before = os.getcwd()
    result = run_cli(["--chdir", str(tmp_path), "validate", "-f", "platform.yaml"], env=CLEAN)
    assert result.exit_code == 0, result.output
    assert os.getcwd() == before  # the test's own process comes back


def test_chdir_to_nowhere_says_so(tmp_path: Path) -> None:
    result = run_cli(["--chdir", str(tmp_path / "nowhere"), "validate", "-f", "x"], env=CLEAN)
    assert result.exit_code == 1
    assert "Invalid value for '--chdir': cannot change to" in result.stderr


# --- one-dash options ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "given", "meant"),
    [
        (["plan", "-f", "x.yaml", "-out", "plan.json"], "-out", "--out"),
        (["plan", "-f", "x.yaml", "-target=app.shop/web"], "-target", "--target"),
        (["apply", "-f", "x.yaml", "-auto-approve"], "-auto-approve", "--auto-approve"),
        (["plan", "-file", "x.yaml"], "-file", "--file"),  # click would read -f ile
        (["-chdir=platform", "plan"], "-chdir", "--chdir"),
        (["-version"], "-version", "--version"),
    ],
)
def test_a_one_dash_option_is_answered_with_its_two_dash_spelling(
    argv: list[str], given: str, meant: str
) -> None:
    result = run_cli(argv, env=CLEAN)
    assert result.exit_code == 1
    assert f"No such option '{given}'. Did you mean '{meant}'?" in result.stderr
    assert "Usage: " in result.stderr  # the usage of the command it was given to


def test_short_options_and_values_after_a_double_dash_are_left_alone(tmp_path: Path) -> None:
    shutil.copy(QUICKSTART, tmp_path / "platform.yaml")
    result = run_cli(["validate", "-f", str(tmp_path / "platform.yaml")], env=CLEAN)
    assert result.exit_code == 0, result.output
    result = run_cli(["validate", "--", "-out"], env=CLEAN)
    assert "Did you mean" not in result.output


# --- shell completion ------------------------------------------------------------------


def _complete(words: str, cword: int, shell: str = "bash") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "_RECONCILER_COMPLETE": f"{shell}_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
    }
    reconciler = Path(sys.executable).parent / "reconciler"
    return subprocess.run([str(reconciler)], env=env, capture_output=True, text=True, check=False)


def test_bash_completes_commands_and_options() -> None:
    assert "plain,plan" in _complete("reconciler pl", 1).stdout.splitlines()
    assert "plain,--format" in _complete("reconciler plan --form", 2).stdout.splitlines()
    assert "plain,--show-permissions" in _complete("reconciler show --show", 2).stdout
    assert "plain,--no-color" in _complete("reconciler validate --no", 2).stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_its_completion_script(shell: str) -> None:
    reconciler = Path(sys.executable).parent / "reconciler"
    env = {**os.environ, "_RECONCILER_COMPLETE": f"{shell}_source"}
    script = subprocess.run(
        [str(reconciler)], env=env, capture_output=True, text=True, check=False
    ).stdout
    assert "_reconciler_completion" in script


# --- progress while reading live state -------------------------------------------------


def _plan_with_stderr_on(tmp_path: Path, *, terminal: bool) -> str:
    """What `plan` writes on standard error, a pseudo-terminal or a pipe."""
    manifest = tmp_path / "platform.yaml"
    shutil.copy(QUICKSTART, manifest)
    env = {**os.environ, "RECONCILER_BASE_URL": f"local:{tmp_path / 'state.json'}"}
    env.pop("NO_COLOR", None)
    reconciler = str(Path(sys.executable).parent / "reconciler")
    subprocess.run(
        [reconciler, "apply", "-f", str(manifest), "--auto-approve"],
        env=env,
        capture_output=True,
        check=True,
    )
    manifest.write_text(QUICKSTART.read_text().replace("LOG_LEVEL: info", "LOG_LEVEL: debug"))
    command = [reconciler, "plan", "-f", str(manifest)]
    if not terminal:
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stderr
    primary, secondary = pty.openpty()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=secondary)
    os.close(secondary)
    seen = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        seen += chunk
    assert process.wait(timeout=120) == 0
    os.close(primary)
    return seen.decode("utf-8", "replace")


def test_a_plan_shows_its_reads_on_a_terminals_standard_error(tmp_path: Path) -> None:
    shown = _plan_with_stderr_on(tmp_path, terminal=True)
    assert "Reading live state" in shown
    assert " calls " in shown and "0:00:0" in shown  # calls done/total, elapsed


def test_a_plan_shows_no_progress_when_standard_error_is_no_terminal(tmp_path: Path) -> None:
    assert "Reading live state" not in _plan_with_stderr_on(tmp_path, terminal=False)


# --- status tables ---------------------------------------------------------------------


def test_status_tables_fit_80_columns_without_cutting_ids() -> None:
    deployment = DeploymentInfo(
        "d_4o6kz1g1bof9ximjq2ze",
        "building",
        is_current=False,
        created_at=1,
        image="ghcr.io/acme/a-rather-long-image-name:2024.10.1",
        error_message="a message long enough to need a line or two of its own in any table",
    )
    environment = EnvironmentStatus(
        "bookshelf-platform",
        "api-gateway",
        "production",
        app_exists=True,
        serving=deployment,
        domains=(DomainInfo("api.bookshelf-platform.example.com", "pending", True),),
    )
    console = Console(file=io.StringIO(), width=80, color_system=None)
    render_rich(StatusReport((environment,)), 60_000, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    for whole in (
        "d_4o6kz1g1bof9ximjq2ze",
        "bookshelf-platform/api-gateway/production",
        "api.bookshelf-platform.example.com",
    ):
        assert whole in text, text
