"""A pull request's manifest cannot learn a secret from what the plan prints.

The plan job of a pull request reads a manifest anyone can write, with secrets in its
environment. Whatever the manifest says, the plan, its JSON, SARIF, the PR comment and every
error must read the same whatever the values of the secrets the manifest does not show (the one
exception: a write-only variable compared by fingerprint at its own address may be "no change"
or "update"). Each test here is an attack that worked before values were unprintable by type
and content redaction left the output boundary.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.fixtures.cli import CliResult, Seed
from tests.security.manifests import web_production

Cli = Callable[..., CliResult]

GUESSES = [f"{n:04d}" for n in range(10_000)]
"""Every four-digit PIN: the attacker's literals hold them all."""


def _guessing_manifest(tmp_path: Path) -> Path:
    """`PIN` from the CI's environment, and four recoverable literals holding every guess."""
    literals = [
        f'GUESS_{part}: "{" ".join(GUESSES[part * 2500 : (part + 1) * 2500])}"' for part in range(4)
    ]
    return web_production(tmp_path, ["PIN: {fromEnv: CI_PIN}", *literals])


def test_the_guess_equal_to_the_secret_reads_like_every_other_guess(
    cli: Cli, tmp_path: Path
) -> None:
    """The reported attack: in a 52 KB markdown plan (one PR comment), exactly one guess read
    `[REDACTED]`, and it was the PIN."""
    manifest = _guessing_manifest(tmp_path)
    shown = {}
    for pin in ("4711", "0815"):
        result = cli("plan", "-f", str(manifest), "--format", "markdown", env={"CI_PIN": pin})
        assert result.exit_code == 0, result.output
        assert "[REDACTED]" not in result.output
        assert f" {pin} " in result.stdout  # the attacker's own guess, printed as written
        shown[pin] = result.output
    assert shown["4711"] == shown["0815"]


def test_a_write_only_literal_cannot_blank_a_word_of_the_plan(
    cli: Cli, seed: Seed, tmp_path: Path
) -> None:
    """`W: {value: destroy, kind: writeonly}` turned the summary into `1 to [REDACTED]` and
    removed the CAUTION box of a plan that deletes."""
    seed.project("shop", "Shop")
    seed.app("shop", "web", oci={"image": "nginx:1.27"})
    seed.variables(
        "shop", "web", "production", [{"key": "OLD", "value": "x", "kind": "recoverable"}]
    )
    manifest = web_production(
        tmp_path, ["W: {value: destroy, kind: writeonly}", "C: {value: CAUTION, kind: writeonly}"]
    )
    result = cli("plan", "-f", str(manifest), "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert "[REDACTED]" not in result.output
    assert "1 to destroy." in result.stdout
    assert "> [!CAUTION]" in result.stdout
    text = cli("plan", "-f", str(manifest))
    assert "1 to destroy." in text.stdout and "[REDACTED]" not in text.output


def test_without_a_fingerprint_key_plan_reads_no_secret_value(cli: Cli, tmp_path: Path) -> None:
    """Plan compares write-only values by presence without the key, so it has no reason to read
    them: a value the platform would refuse (over 16,384 characters) is apply's to refuse. A
    plan that read it failed, and said how long it was."""
    manifest = web_production(tmp_path, ["PIN: {fromEnv: CI_PIN}"])
    short = cli("plan", "-f", str(manifest), "--format", "json", env={"CI_PIN": "x"})
    long = cli("plan", "-f", str(manifest), "--format", "json", env={"CI_PIN": "x" * 20_000})
    assert short.exit_code == 0, short.output
    assert (long.exit_code, long.output) == (short.exit_code, short.output)
    applied = cli("apply", "-f", str(manifest), "--auto-approve", env={"CI_PIN": "x" * 20_000})
    assert applied.exit_code == 1 and "20000 characters" in applied.stderr
