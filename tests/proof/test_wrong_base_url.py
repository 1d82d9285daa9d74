"""Proof: a base URL that is not the platform is never read as an empty workspace.

A web server that answers every request the same way (a 404 page in HTML or JSON, a 200 page,
`{}`, a status no operation of the spec answers) stands where the platform should be. Every
command that reads live state (plan, apply, a saved plan's re-read, status, export, a pinned
id) exits 1 with a message that names the base URL and says to check it, proposes nothing and
writes nothing; never "will be created", "not created", "does not exist" or "remove the pin".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.platform.operations import OPERATIONS
from tests.fixtures.cli import CliResult, platform_env, run_cli, shop_manifest, write_manifest
from tests.fixtures.loopback import LoopbackServer
from tests.platform.servers import Answer, FixedAnswers

API_KEY = "wrong-url-test-key"
HTML_404 = b"<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>"

IMPOSTORS = {
    "404-html": Answer(404, HTML_404, "text/html"),
    "404-json": Answer(404, b'{"detail": "Not Found"}'),
    "404-empty": Answer(404),
    "200-html": Answer(200, HTML_404.replace(b"404 Not Found", b"Welcome"), "text/html"),
    "200-empty-object": Answer(200, b"{}"),
    "405-json": Answer(405, b'{"detail": "Method Not Allowed"}'),
    "410-text": Answer(410, b"Gone", "text/plain"),
}

MANIFEST = shop_manifest(
    """
    web:
      git: {repository: acme/web}
      environments:
        production:
          runtime: {port: 8080}
          variables: {MODE: live}
          domains: [shop.example.com]
    """
)
PINNED = MANIFEST.replace("    name: Shop\n", "    name: Shop\n    id: proj_12345678\n")

# What a command says when it believed that nothing exists.
BELIEVED_EMPTY = (
    "will be created",
    "Plan:",
    "to add",
    "not created",
    "does not exist",
    "remove `id:",
    "which does not exist",
)


@pytest.fixture(scope="module")
def impostor() -> Iterator[tuple[FixedAnswers, LoopbackServer]]:
    answers = FixedAnswers()
    server = LoopbackServer(answers.app())
    yield answers, server
    server.stop()


def _env(base_url: str) -> dict[str, str | None]:
    env = platform_env(type("S", (), {"base_url": base_url, "api_key": API_KEY})())
    return {**env, "NO_COLOR": "1"}


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    manifest = write_manifest(tmp_path, MANIFEST)
    pinned = write_manifest(tmp_path, PINNED, name="pinned.yaml")
    return {
        "plan": ["plan", "-f", str(manifest), "--detailed-exitcode"],
        "plan-pinned": ["plan", "-f", str(pinned)],
        "apply": ["apply", "-f", str(manifest), "--auto-approve"],
        "status": ["status", "-f", str(manifest)],
        "export-project": ["export", "--project", "shop"],
        "export-all": ["export"],
    }


def assert_refused(result: CliResult, base_url: str, case: str) -> None:
    text = result.output
    assert result.exit_code == 1, f"{case}: exit {result.exit_code}\n{text}"
    assert "Traceback" not in text and "internal error" not in text.lower(), f"{case}: {text}"
    assert base_url in text, f"{case}: the message must name the base URL:\n{text}"
    assert "check" in text and "base URL" in text, f"{case}: must say to check it:\n{text}"
    for words in BELIEVED_EMPTY:
        assert words not in text, f"{case}: read the impostor as an empty workspace:\n{text}"
    assert API_KEY not in text


@pytest.mark.parametrize("command", ["plan", "plan-pinned", "apply", "status", "export-project",
                                     "export-all"])  # fmt: skip
@pytest.mark.parametrize("impostor_answer", sorted(IMPOSTORS))
def test_every_command_refuses_a_server_that_is_not_the_platform(
    command: str,
    impostor_answer: str,
    impostor: tuple[FixedAnswers, LoopbackServer],
    tmp_path: Path,
) -> None:
    answers, server = impostor
    answers.answer = IMPOSTORS[impostor_answer]
    answers.seen.clear()
    result = run_cli(_commands(tmp_path)[command], env=_env(server.base_url))
    assert_refused(result, server.base_url, f"{command}/{impostor_answer}")
    writes = [op for op in answers.seen if op in OPERATIONS and OPERATIONS[op].is_write]
    assert writes == [], f"{command}/{impostor_answer}: sent writes to an impostor: {writes}"
    assert not (tmp_path / "shop.yaml").exists()


def test_a_saved_plan_is_not_applied_over_an_impostor(
    emulator: object, impostor: tuple[FixedAnswers, LoopbackServer], tmp_path: Path
) -> None:
    """The saved plan was computed against the platform; pointed at another server, apply
    refuses before a single request, naming both (the plan is bound to its platform)."""
    answers, server = impostor
    answers.answer = IMPOSTORS["404-html"]
    answers.seen.clear()
    manifest = write_manifest(tmp_path, MANIFEST)
    plan_file = tmp_path / "plan.json"
    planned = run_cli(
        ["plan", "-f", str(manifest), "--out", str(plan_file)], env=platform_env(emulator)
    )
    assert planned.exit_code == 0, planned.output
    result = run_cli(["apply", str(plan_file)], env=_env(server.base_url))
    assert result.exit_code == 1, result.output
    assert f"this plan was made against {emulator.base_url}, not {server.base_url}" in (  # type: ignore[attr-defined]
        result.stderr
    )
    assert answers.seen == []
    assert API_KEY not in result.output


def test_the_platform_itself_still_reads_as_empty(cli: object, tmp_path: Path) -> None:
    """The other side: the emulator, which is the platform, answers 404 for `shop` and the plan
    proposes to create it (the check that it is the platform passes)."""
    manifest = write_manifest(tmp_path, MANIFEST)
    result = cli("plan", "-f", str(manifest))  # type: ignore[operator]
    assert result.exit_code == 0, result.output
    assert "project.shop will be created" in result.output
