"""`reconciler plan` CLI details: saved plans, formats, colour rules."""

from __future__ import annotations

import io
import json
import os
import stat

import pytest

from reconciler.cli.plan import use_color
from reconciler.plan.planfile import load_plan
from tests.fixtures.cli import write_manifest

MANIFEST = """
version: 1
projects:
  shop:
    name: Shop
    apps:
      web:
        git: {repository: acme/web}
        environments:
          production:
            variables:
              TOKEN: {fromEnv: PLAN_CLI_TOKEN}
"""


def test_out_saves_a_loadable_plan_equal_to_the_json_output(cli, tmp_path):
    manifest = write_manifest(tmp_path, MANIFEST)
    out = tmp_path / "plan.json"
    env = {"PLAN_CLI_TOKEN": "tok-value-123"}
    result = cli("plan", "-f", str(manifest), "--out", str(out), "--format", "json", env=env)
    assert result.exit_code == 0, result.output
    assert f"reconciler apply {out}" in result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    saved = load_plan(out)
    assert saved.manifest_files == (str(manifest),)
    printed = json.loads(result.stdout)
    assert [c.address for c in saved.plan.changes] == [c["address"] for c in printed["changes"]]
    assert saved.plan.manifest_digest == printed["manifest_digest"]
    assert "tok-value-123" not in out.read_text()


def _not_a_regular_file(kind, path, target):
    """Make `path` a symbolic link to `target`, a named pipe, or a device like /dev/null."""
    if kind == "symlink":
        path.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        try:
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # what /dev/null is
        except PermissionError:
            pytest.skip("making a device node needs root")


@pytest.mark.parametrize(
    ("kind", "named"),
    [("symlink", "a symbolic link"), ("fifo", "a named pipe"), ("device", "a device")],
)
def test_out_refuses_a_path_that_is_not_a_regular_file(cli, emulator, tmp_path, kind, named):
    """The atomic rename would replace the link or the device node itself."""
    manifest = write_manifest(tmp_path, MANIFEST)
    target = tmp_path / "reviewed-plan.json"
    target.write_text("keep me")
    out = tmp_path / "plan.json"
    _not_a_regular_file(kind, out, target)
    before = os.lstat(out)

    result = cli("plan", "-f", str(manifest), "--out", str(out))

    assert result.exit_code == 1, result.output
    assert f"{out} is {named}, not a regular file; refusing to replace it" in result.stderr
    assert "Traceback" not in result.output and "internal error" not in result.output
    after = os.lstat(out)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert target.read_text() == "keep me"
    assert emulator.requests() == []  # refused before reading live state
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_markdown_starts_with_the_result_line(cli, tmp_path):
    manifest = write_manifest(tmp_path, MANIFEST)
    result = cli("plan", "-f", str(manifest), "--format", "markdown", env={"PLAN_CLI_TOKEN": "x"})
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("**Plan:** 3 to add, 0 to change, 0 to destroy.")
    assert "<details>" in result.stdout


def test_text_has_no_colour_off_a_terminal(cli, tmp_path):
    manifest = write_manifest(tmp_path, MANIFEST)
    result = cli("plan", "-f", str(manifest), env={"PLAN_CLI_TOKEN": "x"})
    assert "\x1b[" not in result.stdout
    assert "Plan: 3 to add, 0 to change, 0 to destroy." in result.stdout


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr("sys.stdout", Terminal())
    assert use_color(no_color=False) is True
    assert use_color(no_color=True) is False
    monkeypatch.setenv("NO_COLOR", "")
    assert use_color(no_color=False) is False
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert use_color(no_color=False) is False


def test_export_output_refuses_a_symbolic_link_even_with_force(cli, seed, tmp_path):
    """`export -o` writes through the same atomic rename, and the same check."""
    seed.project("shop")
    target = tmp_path / "reviewed.yaml"
    target.write_text("keep me")
    out = tmp_path / "shop.yaml"
    out.symlink_to(target)

    result = cli("export", "-o", str(out), "--force")

    assert result.exit_code == 1, result.output
    assert f"{out} is a symbolic link, not a regular file; refusing to replace it" in result.stderr
    assert out.is_symlink() and target.read_text() == "keep me"
