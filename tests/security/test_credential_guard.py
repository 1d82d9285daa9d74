"""A manifest cannot hand reconciler's own credentials to the platform, whatever it names.

The guard knew two names: `fromEnv: RECONCILER_APPLY_API_KEY` (the name the CI guide itself
uses for the apply key), `RECONCILER_PLAN_API_KEY` or `reconciler_api_key` stored the key in
a variable of the app. Now every `RECONCILER_*` name is refused in any case, any value that
holds the API key or the fingerprint key in use is refused when it is read (without saying
which), and the workflow can restrict what a manifest may read at all (`--allow-env`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.cli import CliResult, Seed
from tests.fixtures.emulator import EmulatorServer
from tests.security.manifests import web_production

Cli = Callable[..., CliResult]
FP_KEY = "the-fingerprint-key-of-this-run"


@pytest.mark.parametrize(
    "name", ["RECONCILER_APPLY_API_KEY", "RECONCILER_PLAN_API_KEY", "reconciler_api_key"]
)
def test_every_name_of_reconcilers_own_is_refused_offline(
    cli: Cli, tmp_path: Path, emulator: EmulatorServer, name: str
) -> None:
    manifest = web_production(tmp_path, [f"LEAK: {{fromEnv: {name}}}"])
    key = emulator.api_key
    for command in (["validate"], ["plan"], ["apply", "--auto-approve"]):
        result = cli(*command, "-f", str(manifest), env={name: key})
        assert result.exit_code == 1, result.output
        assert f"{name} holds " in result.output
        assert "(every RECONCILER_* variable is reconciler's, in any case)" in result.output
        assert key not in result.output


@pytest.mark.parametrize("holder", ["api key", "fingerprint key", "key file"])
def test_a_value_holding_a_credential_is_refused_whatever_its_name(
    cli: Cli, seed: Seed, tmp_path: Path, emulator: EmulatorServer, holder: str
) -> None:
    """Apply refuses, before any write, a secret whose value is the API key or the fingerprint
    key in use, and the message is the same for both."""
    key = emulator.api_key
    (tmp_path / "deploy.key").write_text(key + "\n")
    variable = "LEAK: {fromFile: deploy.key}" if holder == "key file" else "LEAK: {fromEnv: DEPLOY}"
    manifest = web_production(tmp_path, [variable])
    held = FP_KEY if holder == "fingerprint key" else key
    env = {"DEPLOY": held, "RECONCILER_FINGERPRINT_KEY": FP_KEY}
    result = cli("apply", "-f", str(manifest), "--auto-approve", env=env)
    assert result.exit_code == 1, result.output
    source = "fromFile:" if holder == "key file" else "fromEnv:DEPLOY"
    assert source in result.stderr
    assert (
        "holds one of reconciler's own credentials (the API key or the fingerprint key this "
        "run uses); a manifest may not send it to the platform"
    ) in result.stderr
    assert key not in result.output and FP_KEY not in result.output
    assert seed.writes() == []


def test_a_plan_without_the_fingerprint_key_does_not_read_the_value_to_check_it(
    cli: Cli, tmp_path: Path, emulator: EmulatorServer
) -> None:
    """Without the key, plan reads no secret (so nothing it prints depends on one): the
    value is checked by apply, and by a plan that reads it to fingerprint it."""
    key = emulator.api_key
    manifest = web_production(tmp_path, ["LEAK: {fromEnv: DEPLOY}"])
    assert cli("plan", "-f", str(manifest), env={"DEPLOY": key}).exit_code == 0
    keyed = cli(
        "plan", "-f", str(manifest), env={"DEPLOY": key, "RECONCILER_FINGERPRINT_KEY": FP_KEY}
    )
    assert keyed.exit_code == 1 and "reconciler's own credentials" in keyed.stderr


def test_the_workflow_restricts_what_a_manifest_may_read(
    cli: Cli, seed: Seed, tmp_path: Path
) -> None:
    """`--allow-env PATTERN`: in GitLab every unprotected CI variable reaches a merge
    request's pipeline; the workflow names the ones manifests may read."""
    manifest = web_production(
        tmp_path, ["STRIPE: {fromEnv: SHOP_STRIPE_KEY}", "PIN: {fromEnv: CI_PIN}"]
    )
    env = {"SHOP_STRIPE_KEY": "sk_test", "CI_PIN": "1234"}
    refused = cli("validate", "-f", str(manifest), "--allow-env", "SHOP_*", env=env)
    assert refused.exit_code == 1
    assert ":13:30: " in refused.stdout and "variables.PIN.fromEnv" in refused.stdout
    assert "CI_PIN is not one of the environment variables this run lets manifests read" in (
        refused.stdout
    )
    assert "(--allow-env: SHOP_*)" in refused.stdout and "STRIPE.fromEnv" not in refused.stdout
    for command in (["plan"], ["apply", "--auto-approve"]):
        result = cli(*command, "-f", str(manifest), "--allow-env", "SHOP_*", env=env)
        assert result.exit_code == 1 and "CI_PIN is not one of" in result.output
    assert seed.writes() == []
    allowed = ("--allow-env", "SHOP_*", "--allow-env", "CI_PIN")
    assert cli("validate", "-f", str(manifest), *allowed, env=env).exit_code == 0
    saved = tmp_path / "plan.json"
    planned = cli("plan", "-f", str(manifest), "--out", str(saved), *allowed, env=env)
    assert planned.exit_code == 0, planned.output
    # a saved plan is applied under the apply job's own restriction
    narrower = cli("apply", str(saved), "--allow-env", "SHOP_*", env=env)
    assert narrower.exit_code == 1 and "CI_PIN is not one of" in narrower.output
    assert seed.writes() == []
    assert cli("apply", str(saved), *allowed, env=env).exit_code == 0
