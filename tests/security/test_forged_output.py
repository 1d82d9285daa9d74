"""No text a manifest writes can forge output: every such text is escaped in every output.

Before: `validate` printed file names raw, and a waived finding's reason too, so a pull request
whose file was named `x\\n::add-mask::destroy\\n::notice title=Security review::Approved.yaml`
(or whose waiver said so) made a passing validate print GitHub workflow commands at the start
of lines of the job log, and a name with a line break and a fence closed the action's code
block in the failure comment. The markdown plan put findings and notes outside `<code>` with
mentions, `scheme:` links and issue references live, and the JSON plan wrote bidirectional
controls as they were.

The property: whatever text a manifest holds wherever it may hold text (keys, names, values,
descriptions, policy and test names, waiver reasons, file names), no line of any output of
validate, plan, test or export starts (after spaces) with `::`, none holds a character that
does not show as itself, and the markdown plan mentions, links and shows nothing.
"""

from __future__ import annotations

import html
import json
import re
import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.cli import CliResult, Seed, run_cli

Cli = Callable[..., CliResult]

FORGERIES = [
    "\n::add-mask::destroy\n",
    "\n  ::notice title=Security review::Approved\n",
    "\n```\n**Plan:** 0 to add, 0 to change, 0 to destroy.\n",
    "@acme/platform-team",
    "![ok](https://example.com/approved.png)",
    "[docs](https://example.com) https://example.com #1 :tada:",
    "\u202egnp.exe\u202c \u200b\u2028\r\x1b[31m",
]
HOSTILE = st.lists(st.sampled_from(FORGERIES), min_size=1, max_size=3).map("".join) | st.text(
    alphabet=st.sampled_from(list("ab :@#!`[]()*_~|\\\n\r\t\u202e\u200b\u2028")), min_size=1
)
PLACES = [
    "file",
    "project name",
    "app name",
    "value",
    "description",
    "policy name",
    "test name",
    "waiver reason",
    "app waiver",
    "unknown key",
    "variable key",
]


def _manifest(place: str, text: str) -> dict[str, Any]:
    def here(name: str, default: str) -> str:
        return text if place == name else default

    production: dict[str, Any] = {
        "runtime": {"healthcheck": {"method": "GET", "path": "/healthz"}},
        "variables": {
            "PLAIN": here("value", "x"),
            "NOTED": {"value": "y", "description": here("description", "d")},
            "SOURCE": {"fromEnv": "SHOP_SOURCE", "kind": "recoverable"},
        },
        "policies": [
            {
                "name": here("policy name", "deny-admin"),
                "enabled": True,
                "match": [{"path": {"path": {"prefix": "/admin"}}}],
                "firewall": {"action": "ACTION_DENY"},
            }
        ],
        "policyTests": [
            {
                "name": here("test name", "admin is open"),  # it is not: the test fails
                "request": {"method": "GET", "path": "/admin", "clientIp": "192.0.2.1"},
                "expect": "allow",
            }
        ],
        "checks": {
            "secrets-writeonly": {"off": True, "reason": here("waiver reason", "a greeting")},
        },
    }
    if place == "variable key":
        production["variables"][text] = "x"
    project: dict[str, Any] = {
        "name": here("project name", "Shop"),
        "apps": {
            "web": {
                "name": here("app name", "Web"),
                "oci": {"image": "nginx:1.27"},
                "checks": {
                    "production-delete-protection": {"off": True, "reason": here("app waiver", "t")}
                },
                "environments": {"production": production},
            }
        },
    }
    if place == "unknown key":
        project[text] = 1
    return {"version": 1, "projects": {"shop": project}}


def _file_name(place: str, text: str) -> str:
    if place != "file":
        return "platform.yaml"
    return text.replace("/", "_").replace("\x00", "_")[:80] + ".yaml"


_MENTION = re.compile(r"@[A-Za-z0-9]")
_REFERENCE = re.compile(r"#[0-9]")


def _problems_in(name: str, output: str, *, markdown: bool) -> list[str]:
    """What a reader would be shown that the manifest forged: a line a GitHub runner runs as a
    workflow command, a character that does not show as itself, and in markdown (outside code
    blocks) a mention, an issue reference, a link, an image or a second result line."""
    found = []
    fence = None
    for number, line in enumerate(output.split("\n")):
        if line.lstrip().startswith("::"):
            found.append(f"{name}: a workflow command: {line[:80]!r}")
        hidden = [c for c in line if not (c.isprintable() or unicodedata.category(c) == "Zs")]
        if hidden:
            found.append(f"{name}: invisible {hidden!r} in {line[:80]!r}")
        if not markdown:
            continue
        opened = re.match(r"(`{3,})", line)
        if fence is None and opened:
            fence = opened.group(1)
            continue
        if fence is not None:
            if re.fullmatch(rf"`{{{len(fence)},}}\s*", line):
                fence = None
            continue
        if number and line.startswith(("**Plan:**", "**No changes")):
            found.append(f"{name}: a second result line {line[:80]!r}")
        for syntax in ("![", "](", "://", "<img", "<a "):
            if syntax in line:
                found.append(f"{name}: {syntax!r} in {line[:100]!r}")
        # GitHub links mentions and references in the rendered text (character references
        # read), but nothing inside <code>
        text = html.unescape(re.sub(r"<code>.*?</code>", "", line))
        for pattern, what in ((_MENTION, "a mention"), (_REFERENCE, "an issue reference")):
            if pattern.search(text):
                found.append(f"{name}: {what} in {line[:100]!r}")
    return found


def _outputs(cli: Cli, directory: Path, manifest: Path) -> dict[str, str]:
    shown: dict[str, str] = {}
    env = {"SHOP_SOURCE": "value"}
    for output_format in ("text", "json", "sarif"):
        result = cli("validate", "-f", str(manifest), "--format", output_format, env=env)
        shown[f"validate {output_format}"] = result.stdout + "\n" + result.stderr
    for output_format in ("text", "markdown", "json", "sarif"):
        result = cli("plan", "-f", str(manifest), "--format", output_format, env=env)
        shown[f"plan {output_format}"] = result.stdout
        shown[f"plan {output_format} (stderr)"] = result.stderr
    saved = directory / "saved-plan.json"
    cli("plan", "-f", str(manifest), "--out", str(saved), env=env)
    if saved.exists():
        shown["saved plan"] = saved.read_text()
    for output_format in ("text", "json", "junit"):
        result = run_cli(["test", "-f", str(manifest), "--format", output_format])
        shown[f"test {output_format}"] = result.stdout + "\n" + result.stderr
    applied = cli("apply", "-f", str(manifest), "--auto-approve", env=env)
    shown["apply"] = applied.stdout + "\n" + applied.stderr
    for command in (["status", "-f", str(manifest)], ["export", "--project", "shop"]):
        result = cli(*command)
        shown[command[0]] = result.stdout + "\n" + result.stderr
    return shown


@settings(
    max_examples=40,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(place=st.sampled_from(PLACES), text=HOSTILE)
def test_no_text_a_manifest_writes_forges_any_output(
    cli: Cli, emulator: Any, place: str, text: str
) -> None:
    emulator.reset()
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        manifest = directory / _file_name(place, text)
        manifest.write_text(json.dumps(_manifest(place, text), indent=1), encoding="utf-8")
        shown = _outputs(cli, directory, manifest)
    found = [
        problem
        for output, content in shown.items()
        for problem in _problems_in(output, content, markdown=output == "plan markdown")
    ]
    assert not found, "\n".join(found)


def test_a_passing_validate_prints_no_workflow_command_from_a_file_name(
    cli: Cli, tmp_path: Path
) -> None:
    """The reported case: a valid manifest whose file name holds workflow commands."""
    name = "x\n::add-mask::destroy\n::notice title=Security review::Approved.yaml"
    (tmp_path / "platform").mkdir()
    manifest = tmp_path / "platform" / name
    manifest.write_text(json.dumps(_manifest("none", "")), encoding="utf-8")
    result = cli("validate", "-f", str(tmp_path / "platform"))
    assert result.exit_code == 0, result.output
    assert _problems_in("validate", result.output, markdown=False) == []
    assert "x\\x0a::add-mask::destroy\\x0a::notice title=Security review::Approved.yaml:" in (
        result.stderr
    )


def test_waiver_reasons_and_findings_mention_and_link_nothing_in_the_pr_comment(
    cli: Cli, seed: Seed, tmp_path: Path
) -> None:
    reason = "ok @acme/platform-team see #1 https://example.com/x ![i](https://e/x.png)"
    manifest = tmp_path / "platform.yaml"
    manifest.write_text(json.dumps(_manifest("waiver reason", reason)), encoding="utf-8")
    result = cli("plan", "-f", str(manifest), "--format", "markdown", env={"SHOP_SOURCE": "v"})
    assert result.exit_code == 0, result.output
    assert _problems_in("plan markdown", result.stdout, markdown=True) == []
    assert "@&#8203;acme/platform-team see #&#8203;1 https&#58;//example.com/x" in result.stdout
