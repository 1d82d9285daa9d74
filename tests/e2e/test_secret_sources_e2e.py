"""Secret sources end to end: what `validate`, `plan`, `apply` and `apply PLANFILE` read, refuse
and say, against the HTTP emulator.

- `fromFile` stays inside the manifests' repository (tests/manifest/test_secret_files.py has
  every path rule; here: each command enforces them, a saved plan too, before any write);
- the tool's own credentials are no source;
- plans name the source of each secret;
- a short fingerprint key is refused before any call;
- a missing `fromFile` is known after apply, like a missing `fromEnv`;
- a saved plan's secret messages name the variable and say what happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reconciler.credentials import CREDENTIALS
from tests.fixtures.cli import CliResult, Seed
from tests.fixtures.planfiles import reseal

FP_KEY = "fingerprint-key-for-the-e2e-tests"
FILE_VALUE = "tls-secret-in-the-repository"
OUTSIDE_VALUE = "outside-secret-never-to-be-read"
ENV_VALUE = "stripe-secret-from-the-environment"

Cli = Callable[..., CliResult]


def _repository(tmp_path: Path, variables: str) -> Path:
    """A git work tree: the manifest in platform/, the secret file in secrets/ (one level up),
    and a file outside the repository. Returns the manifest's path."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "secrets").mkdir()
    (repo / "secrets" / "tls.key").write_text(FILE_VALUE)
    (tmp_path / "outside.key").write_text(OUTSIDE_VALUE)
    (repo / "platform").mkdir()
    manifest = repo / "platform" / "shop.yaml"
    manifest.write_text(
        "version: 1\nprojects:\n  shop:\n    name: Shop\n    apps:\n      web:\n"
        "        name: Web\n        oci: {image: ghcr.io/acme/web:1.0}\n"
        "        environments:\n          production:\n            variables:\n"
        + "".join(f"              {line}\n" for line in variables.strip().splitlines()),
        encoding="utf-8",
    )
    return manifest


SOURCES = "STRIPE_KEY: {fromEnv: SHOP_STRIPE_KEY}\nTLS_KEY: {fromFile: ../secrets/tls.key}"


def _env(**extra: str | None) -> dict[str, str | None]:
    return {"RECONCILER_FINGERPRINT_KEY": FP_KEY, "SHOP_STRIPE_KEY": ENV_VALUE, **extra}


def _saved_plan(cli: Cli, manifest: Path, **env: str | None) -> Path:
    """`plan --out` beside the repository; returns the plan file."""
    planfile = manifest.parents[2] / "plan.json"
    made = cli("plan", "-f", str(manifest), "--out", str(planfile), env=_env(**env))
    assert made.exit_code == 0, made.output
    return planfile


def _clean(result: CliResult) -> None:
    assert "Traceback" not in result.output
    for value in (FILE_VALUE, OUTSIDE_VALUE, ENV_VALUE, FP_KEY):
        assert value not in result.output, f"{value!r} leaked"


def _refused(result: CliResult) -> str:
    assert result.exit_code == 1, result.output
    _clean(result)
    return result.output


# --- 1. fromFile stays in the repository, in every command --------------------------------


@pytest.mark.parametrize("command", ["validate", "plan", "apply"])
def test_every_command_refuses_a_file_outside_the_repository(
    cli: Cli, seed: Seed, tmp_path: Path, command: str
) -> None:
    manifest = _repository(tmp_path, "TLS_KEY: {fromFile: ../../outside.key}")
    extra = ["--auto-approve"] if command == "apply" else []
    stderr = _refused(cli(command, "-f", str(manifest), *extra, env=_env()))
    assert f"{manifest}:12:35:" in stderr  # file:line:column of the fromFile value
    assert "'../../outside.key' is outside the repository" in stderr
    assert seed.writes() == []


def test_a_saved_plan_reads_its_file_again_under_the_rules(
    cli: Cli, seed: Seed, tmp_path: Path
) -> None:
    """Between plan and apply the secret file became a link out of the repository."""
    manifest = _repository(tmp_path, SOURCES)
    planfile = _saved_plan(cli, manifest)
    secret = manifest.parent.parent / "secrets" / "tls.key"
    secret.unlink()
    secret.symlink_to(tmp_path / "outside.key")
    stderr = _refused(cli("apply", str(planfile), env=_env()))
    assert "'../secrets/tls.key' is outside the repository" in stderr
    assert "(through a symbolic link)" in stderr
    assert seed.writes() == []


def test_a_saved_plan_edited_to_read_another_file_sends_nothing(
    cli: Cli, seed: Seed, tmp_path: Path
) -> None:
    """The checksum only proves a plan file is whole (anyone can recompute it). A plan made
    without one secret (a fork's pull request) is not compared call by call, so an edited
    reference is refused: each variable reads only the source its manifest declares."""
    manifest = _repository(tmp_path, SOURCES)
    planfile = _saved_plan(cli, manifest, SHOP_STRIPE_KEY=None)
    document = json.loads(planfile.read_text())
    text = json.dumps(document).replace(
        str(manifest.parent.parent / "secrets" / "tls.key"), str(tmp_path / "outside.key")
    )
    assert str(tmp_path / "outside.key") in text
    document = json.loads(text)
    reseal(document)
    planfile.write_text(json.dumps(document))
    stderr = _refused(cli("apply", str(planfile), env=_env()))
    declared = manifest.parent.parent / "secrets" / "tls.key"
    assert (
        f"variable.shop/web/production/TLS_KEY: the saved plan sends "
        f"fromFile:{tmp_path / 'outside.key'}, but the manifest declares fromFile:{declared}"
    ) in stderr
    assert seed.writes() == []


def _rewrite_secret(planfile: Path, source: str, new_source: str) -> None:
    """Make every reference to `source` in the plan file read `new_source`, without the
    fingerprint that would give the edit away, and reseal the checksum, as anyone can."""
    edited = 0

    def rewrite(node: Any) -> Any:
        nonlocal edited
        if isinstance(node, dict):
            secret = node.get("$secret")
            if isinstance(secret, dict) and secret.get("source") == source:
                edited += 1
                return {"$secret": {"source": new_source, "fingerprint": None}}
            return {key: rewrite(value) for key, value in node.items()}
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        return node

    document = rewrite(json.loads(planfile.read_text()))
    assert edited
    reseal(document)
    planfile.write_text(json.dumps(document))


@pytest.mark.parametrize(
    "reference",
    ["fromEnv:CI_CLOUD_SECRET", "fromEnv:SHOP_TOKEN"],
    ids=["undeclared-name", "name-another-variable-declares"],
)
def test_a_saved_plan_edited_to_read_another_environment_variable_sends_nothing(
    cli: Cli, seed: Seed, tmp_path: Path, reference: str
) -> None:
    """A plan made without one secret (TOKEN's) is edited so that STRIPE_KEY reads a CI
    credential, or the name the manifest declares for TOKEN only: refused, naming the address,
    before any write."""
    manifest = _repository(tmp_path, SOURCES + "\nTOKEN: {fromEnv: SHOP_TOKEN}")
    planfile = _saved_plan(cli, manifest, SHOP_TOKEN=None)
    _rewrite_secret(planfile, "fromEnv:SHOP_STRIPE_KEY", reference)
    env = _env(CI_CLOUD_SECRET="cloud-credential-of-the-ci", SHOP_TOKEN="token-value")
    result = cli("apply", str(planfile), env=env)
    stderr = _refused(result)
    assert "cloud-credential-of-the-ci" not in result.output and "token-value" not in stderr
    assert (
        f"variable.shop/web/production/STRIPE_KEY: the saved plan sends {reference}, but the "
        "manifest declares fromEnv:SHOP_STRIPE_KEY for it"
    ) in stderr
    assert "the plan file was edited after it was saved" in stderr
    assert seed.writes() == []


def _rewrite_calls(planfile: Path, edit: Callable[[dict[str, Any]], bool]) -> None:
    """Apply `edit` to every call body of the plan file (it says whether it changed one), and
    reseal the checksum."""
    document = json.loads(planfile.read_text())
    edited = [edit(call["body"]) for change in document["changes"] for call in change["calls"]]
    assert any(edited)
    reseal(document)
    planfile.write_text(json.dumps(document))


def _writeonly_made_recoverable(body: dict[str, Any]) -> bool:
    items = [v for v in body.get("variables", ()) if isinstance(v, dict) and v["key"] == "TLS_KEY"]
    for item in items:
        item["kind"] = "recoverable"
    return bool(items)


def _app_renamed(body: dict[str, Any]) -> bool:
    if body.get("slug") != "web":
        return False
    body["name"] = "Edited"
    return True


@pytest.mark.parametrize(
    "edit", [_writeonly_made_recoverable, _app_renamed], ids=lambda e: e.__name__
)
def test_a_plan_saved_without_a_secret_is_still_held_to_its_calls(
    cli: Cli, seed: Seed, tmp_path: Path, edit: Callable[[dict[str, Any]], bool]
) -> None:
    """A plan made without one secret (a fork's pull request) used to skip the comparison of
    its calls with the plan rebuilt at apply, so any call of an edited file went through: a
    write-only secret sent as recoverable (readable by every key that reads variables), any
    other field. Only the secrets unknown at plan time may differ, and only in their value."""
    manifest = _repository(tmp_path, SOURCES)
    planfile = _saved_plan(cli, manifest, SHOP_STRIPE_KEY=None)
    _rewrite_calls(planfile, edit)
    stderr = _refused(cli("apply", str(planfile), env=_env()))
    assert "the plan file was edited after it was saved" in stderr
    assert seed.writes() == []


# --- 2. the tool's own credentials are no source ------------------------------------------


@pytest.mark.parametrize("credential", sorted(CREDENTIALS))
@pytest.mark.parametrize("kind", ["recoverable", "writeonly"])
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_manifest_cannot_read_the_tools_own_credentials(
    cli: Cli, seed: Seed, tmp_path: Path, credential: str, kind: str, command: str
) -> None:
    manifest = _repository(tmp_path, f"LEAK: {{fromEnv: {credential}, kind: {kind}}}")
    stderr = _refused(cli(command, "-f", str(manifest), env=_env()))
    assert f"{manifest}:12:31:" in stderr
    assert f"{credential} holds reconciler's own" in stderr
    assert "another environment variable" in stderr  # how to fix it
    assert seed.writes() == []


# --- 3. plans name the source of each secret ---------------------------------------------


def test_every_plan_format_names_where_each_secret_is_read(cli: Cli, tmp_path: Path) -> None:
    manifest = _repository(tmp_path, SOURCES + "\nNODE_ENV: production")
    text = cli("plan", "-f", str(manifest), env=_env())
    assert text.exit_code == 0, text.output
    _clean(text)
    assert "# value read from fromEnv SHOP_STRIPE_KEY" in text.stdout
    assert "# value read from fromFile secrets/tls.key" in text.stdout  # its path in the repo
    markdown = cli("plan", "-f", str(manifest), "--format", "markdown", env=_env())
    _clean(markdown)
    assert "# value read from fromEnv SHOP_STRIPE_KEY" in markdown.stdout  # inside the diff block
    assert "# value read from fromFile secrets/tls.key" in markdown.stdout
    planned = cli("plan", "-f", str(manifest), "--format", "json", env=_env())
    _clean(planned)
    changes = {c["address"]: c for c in json.loads(planned.stdout)["changes"]}
    prefix = "variable.shop/web/production/"
    assert changes[prefix + "STRIPE_KEY"]["secret_source"] == {"fromEnv": "SHOP_STRIPE_KEY"}
    assert changes[prefix + "TLS_KEY"]["secret_source"] == {"fromFile": "secrets/tls.key"}
    assert "secret_source" not in changes[prefix + "NODE_ENV"]


# --- 4. a short fingerprint key ------------------------------------------------------------


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_a_fingerprint_key_shorter_than_16_characters_is_refused_before_any_call(
    cli: Cli, emulator: Any, tmp_path: Path, command: str
) -> None:
    manifest = _repository(tmp_path, SOURCES)
    extra = ["--auto-approve"] if command == "apply" else []
    short = "k" * 15
    result = cli(command, "-f", str(manifest), *extra, env=_env(RECONCILER_FINGERPRINT_KEY=short))
    stderr = _refused(result)
    assert short not in result.output
    assert "RECONCILER_FINGERPRINT_KEY has 15 characters" in stderr
    assert "at least 16" in stderr
    assert emulator.requests() == []
    sixteen = cli("plan", "-f", str(manifest), env=_env(RECONCILER_FINGERPRINT_KEY="k" * 16))
    assert sixteen.exit_code == 0, sixteen.output


def test_a_saved_plan_applied_with_a_short_key_makes_no_call(
    cli: Cli, emulator: Any, tmp_path: Path
) -> None:
    manifest = _repository(tmp_path, SOURCES)
    planfile = _saved_plan(cli, manifest)
    emulator.reset()
    result = cli("apply", str(planfile), env=_env(RECONCILER_FINGERPRINT_KEY="short"))
    assert "RECONCILER_FINGERPRINT_KEY has 5 characters" in _refused(result)
    assert emulator.requests() == []


# --- 5. a missing fromFile is known after apply --------------------------------------------


def test_a_missing_secret_file_is_known_after_apply_and_refused_by_apply(
    cli: Cli, seed: Seed, tmp_path: Path
) -> None:
    manifest = _repository(tmp_path, SOURCES)
    (manifest.parent.parent / "secrets" / "tls.key").unlink()  # kept out of git
    validated = cli("validate", "-f", str(manifest), env=_env())
    assert validated.exit_code == 0, validated.output
    planned = cli("plan", "-f", str(manifest), "--detailed-exitcode", env=_env())
    assert planned.exit_code == 2, planned.output
    _clean(planned)
    assert "+ value = (known after apply)" in planned.stdout
    assert (
        "secret(s) not available to this plan: fromFile secrets/tls.key "
        "(variable.shop/web/production/TLS_KEY)"
    ) in planned.stdout
    stderr = _refused(cli("apply", "-f", str(manifest), "--auto-approve", env=_env()))
    assert (
        "variable.shop/web/production/TLS_KEY: the file secrets/tls.key "
        "(fromFile '../secrets/tls.key') does not exist"
    ) in stderr
    assert seed.writes() == []


def test_a_plan_saved_without_its_file_applies_once_the_file_is_there(
    cli: Cli, tmp_path: Path
) -> None:
    manifest = _repository(tmp_path, SOURCES)
    secret = manifest.parent.parent / "secrets" / "tls.key"
    secret.unlink()
    planfile = _saved_plan(cli, manifest)
    secret.write_text(FILE_VALUE)
    applied = cli("apply", str(planfile), env=_env())
    assert applied.exit_code == 0, applied.output
    again = cli("plan", "-f", str(manifest), "--detailed-exitcode", env=_env())
    assert again.exit_code == 0, again.output


# --- 6. a saved plan's secret messages -----------------------------------------------------


def _applied_then_saved(cli: Cli, tmp_path: Path) -> tuple[Path, Path]:
    """Everything applied, then an empty plan saved (the plan sends no secret)."""
    manifest = _repository(tmp_path, SOURCES)
    assert cli("apply", "-f", str(manifest), "--auto-approve", env=_env()).exit_code == 0
    return manifest, _saved_plan(cli, manifest)


def test_a_secret_rotated_after_review_is_named(cli: Cli, seed: Seed, tmp_path: Path) -> None:
    _, planfile = _applied_then_saved(cli, tmp_path)
    writes = len(seed.writes())
    stderr = _refused(cli("apply", str(planfile), env=_env(SHOP_STRIPE_KEY="rotated-value")))
    assert "was the file edited" not in stderr
    assert (
        "variable.shop/web/production/STRIPE_KEY: the value of fromEnv SHOP_STRIPE_KEY changed "
        "since the plan was saved"
    ) in stderr
    assert "`reconciler plan --out PLANFILE` again" in stderr  # what to do
    assert len(seed.writes()) == writes


def test_a_secret_missing_at_apply_is_named_as_missing(
    cli: Cli, seed: Seed, tmp_path: Path
) -> None:
    manifest, planfile = _applied_then_saved(cli, tmp_path)
    writes = len(seed.writes())
    stderr = _refused(cli("apply", str(planfile), env=_env(SHOP_STRIPE_KEY=None)))
    assert "was the file edited" not in stderr and "RECONCILER_FINGERPRINT_KEY" not in stderr
    assert (
        "variable.shop/web/production/STRIPE_KEY: the environment variable SHOP_STRIPE_KEY is "
        "not set"
    ) in stderr
    (manifest.parent.parent / "secrets" / "tls.key").unlink()
    stderr = _refused(cli("apply", str(planfile), env=_env()))
    assert (
        "variable.shop/web/production/TLS_KEY: the file secrets/tls.key "
        "(fromFile '../secrets/tls.key') does not exist"
    ) in stderr
    assert len(seed.writes()) == writes


def test_a_secret_the_saved_plan_sends_is_named_when_missing_or_rotated(
    cli: Cli, seed: Seed, tmp_path: Path
) -> None:
    manifest = _repository(tmp_path, SOURCES)
    planfile = _saved_plan(cli, manifest)
    missing = _refused(cli("apply", str(planfile), env=_env(SHOP_STRIPE_KEY=None)))
    assert "RECONCILER_FINGERPRINT_KEY" not in missing
    assert (
        "variable.shop/web/production/STRIPE_KEY: the environment variable SHOP_STRIPE_KEY is "
        "not set"
    ) in missing
    rotated = _refused(cli("apply", str(planfile), env=_env(SHOP_STRIPE_KEY="rotated-value")))
    assert (
        "variable.shop/web/production/STRIPE_KEY: the value of fromEnv SHOP_STRIPE_KEY changed "
        "since the plan was saved"
    ) in rotated
    unkeyed = _refused(cli("apply", str(planfile), env=_env(RECONCILER_FINGERPRINT_KEY=None)))
    assert "RECONCILER_FINGERPRINT_KEY is not set" in unkeyed
    assert "variable.shop/web/production/STRIPE_KEY" in unkeyed
    assert seed.writes() == []
