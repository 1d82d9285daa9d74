"""`--base-url local[:PATH]` leaves no trace until something writes state.

The README promises that `plan` never writes anything; against the built-in emulator that
includes the state file's directory and the `.reconciler/.gitignore`. Commands that only read
(plan, validate, export to stdout, status) see an empty workspace when there is no state yet;
`apply` creates the directory, the state file and (for the default path) the .gitignore.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.cli import CliResult, run_cli, shop_manifest, write_manifest

MANIFEST = shop_manifest(
    """\
    web:
      name: Web
      oci: {image: ghcr.io/acme/web:1.0}
      environments:
        production:
          runtime: {port: 8080}
    """
)


def _run(base_url: str, *args: str) -> CliResult:
    env = {
        "RECONCILER_BASE_URL": base_url,
        "RECONCILER_API_KEY": None,
        "RECONCILER_FINGERPRINT_KEY": None,
        "NO_COLOR": "1",
    }
    return run_cli(args, env=env)


def _read_only_commands(manifest: Path) -> list[list[str]]:
    return [
        ["validate", "-f", str(manifest)],
        ["plan", "-f", str(manifest)],
        ["plan", "-f", str(manifest), "--detailed-exitcode"],
        ["export"],
        ["status", "-f", str(manifest)],
    ]


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    directory = tmp_path / "manifests"  # apart from the state paths the tests look at
    directory.mkdir()
    return write_manifest(directory, MANIFEST)


def test_reading_commands_create_no_state_directory(tmp_path: Path, manifest: Path) -> None:
    base_url = f"local:{tmp_path / 'new' / 'sub' / 'state.json'}"
    for args in _read_only_commands(manifest):
        result = _run(base_url, *args)
        assert result.exit_code in (0, 2), (args, result.output)
        assert not (tmp_path / "new").exists(), args


def test_apply_creates_the_state_directory_and_file(tmp_path: Path, manifest: Path) -> None:
    state = tmp_path / "new" / "sub" / "state.json"
    plan = _run(f"local:{state}", "plan", "-f", str(manifest), "--detailed-exitcode")
    assert plan.exit_code == 2, plan.output
    assert not (tmp_path / "new").exists()

    applied = _run(f"local:{state}", "apply", "-f", str(manifest), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert state.is_file()
    again = _run(f"local:{state}", "plan", "-f", str(manifest), "--detailed-exitcode")
    assert again.exit_code == 0, again.output  # the apply's state was kept


def test_the_default_state_and_its_gitignore_appear_only_with_apply(
    tmp_path: Path, manifest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = tmp_path / "repo"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    for args in _read_only_commands(manifest):
        result = _run("local", *args)
        assert result.exit_code in (0, 2), (args, result.output)
    assert list(workdir.iterdir()) == []

    applied = _run("local", "apply", "-f", str(manifest), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert (workdir / ".reconciler" / "local-platform.json").is_file()
    ignore = workdir / ".reconciler" / ".gitignore"
    assert ignore.read_text(encoding="utf-8").splitlines()[-1] == "*"


def test_a_state_path_under_a_file_is_refused_by_plan_and_apply(
    tmp_path: Path, manifest: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    state = blocker / "state.json"
    # Refused by plan too: a path that can never hold state must not pass a plan that
    # only its apply would fail.
    for command in (
        ("plan", "-f", str(manifest)),
        ("apply", "-f", str(manifest), "--auto-approve"),
    ):
        result = _run(f"local:{state}", *command)
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        assert f"{blocker} is not a directory" in result.output
    assert blocker.read_text(encoding="utf-8") == "not a directory"
