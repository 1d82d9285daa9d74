"""Fingerprints are no equality oracle across addresses, and the first form migrates once.

Before: the HMAC covered the variable's key and value only, so a pull request writing
`PIN: {value: "<guess>", kind: writeonly}` in twenty other apps saw, in the saved plan the
example workflow uploads as an artifact, which guess had the secret's fingerprint.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.fixtures.cli import CliResult, Seed, write_manifest

Cli = Callable[..., CliResult]
FP_KEY = "fingerprint-key-of-the-binding-tests"
PIN = "4711"
GUESSES = [f"{n:04d}" for n in range(4700, 4720)]  # the PIN among them


def _app(name: str, variable: str) -> str:
    return (
        f"      {name}:\n"
        "        oci: {image: 'nginx:1.27'}\n"
        "        environments:\n"
        "          production:\n"
        "            runtime: {healthcheck: {method: GET, path: /healthz}}\n"
        f"            variables: {{PIN: {variable}}}\n"
    )


def _references(value: Any) -> Iterator[tuple[str, str]]:
    """(source, fingerprint) of every secret reference in a saved plan."""
    if isinstance(value, dict):
        if "$secret" in value:
            yield value["$secret"]["source"], value["$secret"]["fingerprint"]
        for item in value.values():
            yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


def test_a_guess_elsewhere_does_not_share_the_secrets_fingerprint(cli: Cli, tmp_path: Path) -> None:
    apps = _app("web", "{fromEnv: CI_PIN}") + "".join(
        _app(f"guess-{index:02d}", f'{{value: "{guess}", kind: writeonly}}')
        for index, guess in enumerate(GUESSES)
    )
    manifest = write_manifest(tmp_path, "version: 1\nprojects:\n  shop:\n    apps:\n" + apps)
    saved = tmp_path / "plan.json"
    env = {"CI_PIN": PIN, "RECONCILER_FINGERPRINT_KEY": FP_KEY}
    result = cli("plan", "-f", str(manifest), "--out", str(saved), env=env)
    assert result.exit_code == 0, result.output
    references = dict(_references(json.loads(saved.read_text())))
    secret = references.pop("fromEnv:CI_PIN")
    assert len(references) == len(GUESSES) and secret is not None
    assert secret not in references.values()
    assert len(set(references.values())) == len(GUESSES)


def test_a_first_form_fingerprint_is_replaced_once(
    cli: Cli, seed: Seed, emulator: Any, tmp_path: Path
) -> None:
    """A description written by the first form is not compared (that would compare the value
    with what another address could hold): the plan sends it once more, with the new form, and
    says so; the plan after the apply is empty."""
    seed.project("shop")
    seed.app("shop", "web", oci={"image": "nginx:1.27"})
    old = {
        "key": "PIN",
        "value": PIN,
        "kind": "writeonly",
        "description": "pin [fp:0123456789abcdef]",
    }
    seed.variables("shop", "web", "production", [old])
    manifest = write_manifest(
        tmp_path,
        "version: 1\nprojects:\n  shop:\n    apps:\n"
        + _app("web", "{fromEnv: CI_PIN, description: pin}"),
    )
    env = {"CI_PIN": PIN, "RECONCILER_FINGERPRINT_KEY": FP_KEY}
    planned = cli("plan", "-f", str(manifest), "--format", "json", env=env)
    (change,) = [c for c in json.loads(planned.stdout)["changes"] if c["kind"] == "variable"]
    assert change["action_reason"] == "fingerprint_first_form"
    text = cli("plan", "-f", str(manifest), env=env).stdout
    assert "the fingerprint recorded for this write-only value is of the first form" in text
    assert cli("apply", "-f", str(manifest), "--auto-approve", env=env).exit_code == 0
    again = cli("plan", "-f", str(manifest), "--detailed-exitcode", env=env)
    assert again.exit_code == 0, again.output
    (table,) = [t for t in emulator.state()["variables"].values() if t]
    assert table["PIN"]["description"].startswith("pin [fp2:")
