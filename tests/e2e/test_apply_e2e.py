"""`reconciler apply` end to end: the CLI, the real plan engine and client, the HTTP emulator.

Every scenario checks convergence the way a user would: after apply, `plan`
says "No changes" and a second apply sends no write call at all (counted in the
emulator's request log).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import reconciler.cli.apply as apply_cli
from reconciler.cli import main
from tests.fixtures.cli import platform_env, shop_manifest
from tests.fixtures.cli import write_manifest as write_manifest_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SENTINEL = "sk_live_SENTINEL_e2e_value_42"


def run_cli(
    emulator: Any, *args: str, env: Mapping[str, str | None] | None = None, input: str | None = None
) -> Result:
    environment = {**platform_env(emulator), "NO_COLOR": "1", **(env or {})}
    return CliRunner().invoke(main, list(args), env=environment, input=input)


def apply(emulator: Any, *args: str, **kwargs: Any) -> Result:
    return run_cli(emulator, "apply", *args, **kwargs)


def plan(emulator: Any, *args: str, **kwargs: Any) -> Result:
    return run_cli(emulator, "plan", *args, **kwargs)


def is_write(operation: str) -> bool:
    return not operation.split(".", 1)[1].startswith(("get", "list"))


def writes(emulator: Any) -> list[str]:
    return [r["operation"] for r in emulator.requests() if is_write(r["operation"])]


def write_manifest(directory: Path, text: str, name: str = "platform.yaml") -> str:
    """The shared `write_manifest`, as the str path these tests pass to `-f`."""
    return str(write_manifest_file(directory, text, name))


def assert_converged(
    emulator: Any, files: list[str], env: Mapping[str, str | None] | None = None
) -> None:
    """`plan` shows no changes and a second apply makes zero write calls."""
    args = [a for f in files for a in ("-f", f)]
    planned = plan(emulator, *args, env=env)
    assert planned.exit_code == 0, planned.output
    assert "No changes. Live state matches the manifest." in planned.output
    before = len(emulator.requests())
    again = apply(emulator, *args, "--auto-approve", env=env)
    assert again.exit_code == 0, again.output
    assert "No changes" in again.output
    after = emulator.requests()[before:]
    assert [r["operation"] for r in after if is_write(r["operation"])] == []


SHOP = shop_manifest(
    """\
    web:
      name: Web
      git: {repository: acme/shop-web, defaultBranch: main}
      defaults:
        runtime: {port: 3000, vCpus: 0.5, memoryMib: 512}
      environments:
        production:
          runtime:
            vCpus: 1
            healthcheck: {method: GET, path: /healthz}
          regions:
            - {name: fra, replicas: {min: 2, max: 6}}
          variables:
            NODE_ENV: production
            API_URL: {value: "https://api.example.com", description: backend}
            STRIPE_KEY: {fromEnv: SHOP_STRIPE_KEY}
          domains: [shop.example.com, www.shop.example.com]
          policies:
            - name: admin-only-from-office
              enabled: true
              match:
                - path: {path: {prefix: /admin}}
                - remoteIp: {notIn: ["203.0.113.0/24"]}
              firewall: {action: ACTION_DENY}
            - name: log-api-writes
              enabled: true
              match: [{path: {path: {prefix: /api}}}, {method: {methods: [POST]}}]
              logging: {requestHeaders: true}
            - name: log-all
              enabled: false
              logging: {requestHeaders: true}
        preview:
          runtime: {vCpus: 0.25}
    api:
      name: API
      oci: {image: ghcr.io/acme/api:1.0}
      environments:
        production:
          variables: {LOG_LEVEL: info}
    """
)
SHOP_ENV = {"SHOP_STRIPE_KEY": SENTINEL}


@pytest.fixture
def shop(tmp_path: Path) -> str:
    return write_manifest(tmp_path, SHOP)


# --- the main path ----------------------------------------------------------------------


def test_apply_converges_and_a_second_apply_writes_nothing(emulator: Any, shop: str) -> None:
    result = apply(emulator, "-f", shop, "--auto-approve", "-v", env=SHOP_ENV)

    assert result.exit_code == 0, result.output
    assert "app.shop/web: created (apps.createApp 200)" in result.output
    assert "Apply complete! Resources: 12 added, 0 changed, 0 destroyed." in result.output
    assert "environments.setEnvironmentVariables" in result.stderr  # the -v call log
    assert SENTINEL not in result.output
    assert emulator.api_key not in result.output
    # the DNS records of the two new domains, as a table
    table = result.output.split("Create these DNS records")[1]
    assert re.search(r"shop\.example\.com\s+CNAME\s+shop\.example\.com\s+\S+\s+\d+", table)
    assert re.search(r"www\.shop\.example\.com\s+TXT\s+\S+www\.shop\.example\.com", table)
    assert_converged(emulator, [shop], env=SHOP_ENV)


@pytest.mark.parametrize(
    ("example", "env"),
    [
        ("quickstart.yaml", {}),
        ("image-app.yaml", {"STOREFRONT_SESSION_SECRET": SENTINEL}),
        ("company", {"SHOP_DATABASE_URL": SENTINEL, "SHOP_STRIPE_SECRET_KEY": "sk_other"}),
    ],
)
def test_every_example_applies_and_converges(
    emulator: Any, tmp_path: Path, example: str, env: dict[str, str]
) -> None:
    source = EXAMPLES / example
    if source.is_dir():
        # The company example pins `id:`s of objects that exist in its authors' workspace; a fresh
        # platform cannot have them, so they are dropped here (everything else is applied as is).
        target = tmp_path / example
        shutil.copytree(source, target)
        for file in target.glob("*.yaml"):
            file.write_text(re.sub(r"(?m)^\s+id: (proj|app)_\w+\n", "", file.read_text()))
    else:
        target = tmp_path / example
        shutil.copy(source, target)
    result = apply(emulator, "-f", str(target), "--auto-approve", env=env)
    assert result.exit_code == 0, result.output
    assert "Apply complete!" in result.output
    assert SENTINEL not in result.output
    assert_converged(emulator, [str(target)], env=env)


def test_a_saved_plan_applies_exactly_and_converges(
    emulator: Any, shop: str, tmp_path: Path
) -> None:
    saved = tmp_path / "plan.json"
    planned = plan(emulator, "-f", shop, "--out", str(saved), env=SHOP_ENV)
    assert planned.exit_code == 0, planned.output
    assert SENTINEL not in saved.read_text()

    result = apply(emulator, str(saved), env=SHOP_ENV)

    assert result.exit_code == 0, result.output
    assert (
        f"Applying the saved plan {saved} (12 to add, 0 to change, 0 to destroy)." in result.output
    )
    assert "Apply complete! Resources: 12 added, 0 changed, 0 destroyed." in result.output
    assert_converged(emulator, [shop], env=SHOP_ENV)


# --- refusals before the first write ----------------------------------------------------


def test_a_stale_saved_plan_is_refused(emulator: Any, shop: str, tmp_path: Path) -> None:
    assert apply(emulator, "-f", shop, "--auto-approve", env=SHOP_ENV).exit_code == 0
    changed = shop.replace("platform.yaml", "changed.yaml")
    Path(changed).write_text(Path(shop).read_text().replace("vCpus: 0.25", "vCpus: 0.5"))
    saved = tmp_path / "plan.json"
    assert plan(emulator, "-f", changed, "--out", str(saved), env=SHOP_ENV).exit_code == 0
    # someone changes the platform after the plan was reviewed
    response = emulator.call(
        "environments.updateSettings",
        {"project": "shop", "app": "web", "environment": "preview", "port": 8080},
    )
    assert response.status_code == 200
    before = len(writes(emulator))

    result = apply(emulator, str(saved), env=SHOP_ENV)

    assert result.exit_code == 1
    assert "the plan is stale: live state changed since it was saved" in result.output
    assert "run `reconciler plan --out PLANFILE` again" in result.output
    assert len(writes(emulator)) == before


def test_a_saved_plan_is_refused_when_its_manifest_changed(
    emulator: Any, shop: str, tmp_path: Path
) -> None:
    saved = tmp_path / "plan.json"
    assert plan(emulator, "-f", shop, "--out", str(saved), env=SHOP_ENV).exit_code == 0
    Path(shop).write_text(Path(shop).read_text().replace("name: Shop", "name: Shop Inc"))
    result = apply(emulator, str(saved), env=SHOP_ENV)
    assert result.exit_code == 1
    assert "the manifest files changed since this plan was saved" in result.output
    assert writes(emulator) == []


def test_a_secret_that_changed_since_the_saved_plan_is_refused(
    emulator: Any, shop: str, tmp_path: Path
) -> None:
    keyed = {**SHOP_ENV, "RECONCILER_FINGERPRINT_KEY": "fp-key-for-the-tests"}
    saved = tmp_path / "plan.json"
    assert plan(emulator, "-f", shop, "--out", str(saved), env=keyed).exit_code == 0
    result = apply(emulator, str(saved), env={**keyed, "SHOP_STRIPE_KEY": "sk_live_rotated"})
    assert result.exit_code == 1
    assert "secrets changed since the plan was saved" in result.output
    assert (
        "variable.shop/web/production/STRIPE_KEY: the value of fromEnv SHOP_STRIPE_KEY changed"
        in result.output
    )
    assert "sk_live_rotated" not in result.output
    assert writes(emulator) == []


def test_a_saved_plan_without_fingerprints_warns_that_a_changed_secret_goes_unseen(
    emulator: Any, shop: str, tmp_path: Path
) -> None:
    saved = tmp_path / "plan.json"
    assert plan(emulator, "-f", shop, "--out", str(saved), env=SHOP_ENV).exit_code == 0
    result = apply(emulator, str(saved), env={**SHOP_ENV, "SHOP_STRIPE_KEY": "sk_live_rotated"})
    assert result.exit_code == 0, result.output
    assert "have no fingerprint (RECONCILER_FINGERPRINT_KEY was not set" in result.output
    assert "variable.shop/web/production/STRIPE_KEY" in result.output
    assert "sk_live_rotated" not in result.output and SENTINEL not in result.output

    keyed = {**SHOP_ENV, "RECONCILER_FINGERPRINT_KEY": "fp-key-for-the-tests"}
    fingerprinted = tmp_path / "keyed.json"
    assert plan(emulator, "-f", shop, "--out", str(fingerprinted), env=keyed).exit_code == 0
    again = apply(emulator, str(fingerprinted), env=keyed)
    assert again.exit_code == 0, again.output
    assert "no fingerprint" not in again.output


@pytest.mark.parametrize("key", ["fp-key-for-the-tests", None], ids=["keyed", "no key"])
def test_a_plan_saved_while_a_secret_was_missing_says_so_not_that_the_key_was_unset(
    emulator: Any, shop: str, tmp_path: Path, key: str | None
) -> None:
    """The secret was missing when the plan was saved: that is why it has no fingerprint,
    whether or not the key was set, and apply says so."""
    env = {**SHOP_ENV, "RECONCILER_FINGERPRINT_KEY": key}
    saved = tmp_path / "plan.json"
    planned = plan(emulator, "-f", shop, "--out", str(saved), env={**env, "SHOP_STRIPE_KEY": None})
    assert planned.exit_code == 0, planned.output

    result = apply(emulator, str(saved), env=env)

    assert result.exit_code == 0, result.output
    assert "was not set when it was saved" not in result.output
    assert (
        "Note: 1 secret value(s) of this plan were missing when it was saved (it shows them as "
        "known after apply and holds no fingerprint of them), so apply sends them as they are "
        "now: variable.shop/web/production/STRIPE_KEY." in result.output
    )
    assert SENTINEL not in result.output


def test_a_missing_secret_is_refused_before_any_write(emulator: Any, shop: str) -> None:
    result = apply(emulator, "-f", shop, "--auto-approve", env={"SHOP_STRIPE_KEY": None})
    assert result.exit_code == 1
    assert (
        "variable.shop/web/production/STRIPE_KEY: the environment variable SHOP_STRIPE_KEY is "
        "not set" in result.output
    )
    assert writes(emulator) == []


def variables_manifest(count: int) -> str:
    items = "".join(f"\n              K{i}: v{i}" for i in range(count)) or " {}"
    return (
        "version: 1\nprojects:\n  vars:\n    name: Vars\n    apps:\n      app:\n"
        "        name: App\n        oci: {image: ghcr.io/acme/app:1}\n        environments:\n"
        f"          production:\n            variables:{items}\n"
    )


def test_more_deletions_than_max_deletes_are_refused_before_any_write(
    emulator: Any, tmp_path: Path
) -> None:
    full = write_manifest(tmp_path, variables_manifest(12))
    assert apply(emulator, "-f", full, "--auto-approve").exit_code == 0
    empty = write_manifest(tmp_path, variables_manifest(0))
    before = len(writes(emulator))

    refused = apply(emulator, "-f", empty, "--auto-approve")

    assert refused.exit_code == 1
    assert "the plan deletes 12 objects, more than --max-deletes 10" in refused.output
    assert "rerun with --max-deletes 12" in refused.output
    assert len(writes(emulator)) == before
    allowed = apply(emulator, "-f", empty, "--auto-approve", "--max-deletes", "12")
    assert allowed.exit_code == 0, allowed.output
    assert "Apply complete! Resources: 0 added, 0 changed, 12 destroyed." in allowed.output
    assert_converged(emulator, [empty])


def test_a_replace_needs_allow_replace(emulator: Any, shop: str, tmp_path: Path) -> None:
    assert apply(emulator, "-f", shop, "--auto-approve", env=SHOP_ENV).exit_code == 0
    Path(shop).write_text(
        Path(shop)
        .read_text()
        .replace("oci: {image: ghcr.io/acme/api:1.0}", "git: {repository: acme/api}")
    )
    before = len(writes(emulator))

    refused = apply(emulator, "-f", shop, "--auto-approve", env=SHOP_ENV)
    assert refused.exit_code == 1
    assert "replaces app.shop/api" in refused.output
    assert "--allow-replace" in refused.output
    assert len(writes(emulator)) == before

    replaced = apply(emulator, "-f", shop, "--auto-approve", "--allow-replace", env=SHOP_ENV)
    assert replaced.exit_code == 0, replaced.output
    assert "app.shop/api: replaced" in replaced.output
    assert_converged(emulator, [shop], env=SHOP_ENV)


# --- confirmation -------------------------------------------------------------------------


def test_without_a_terminal_apply_needs_auto_approve(emulator: Any, shop: str) -> None:
    result = apply(emulator, "-f", shop, env=SHOP_ENV)
    assert result.exit_code == 1
    assert "stdin is not a terminal" in result.output
    assert "--auto-approve" in result.output
    assert emulator.requests() == []


def test_on_a_terminal_only_yes_applies(
    emulator: Any, shop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apply_cli, "stdin_is_interactive", lambda: True)

    declined = apply(emulator, "-f", shop, env=SHOP_ENV, input="y\n")
    assert declined.exit_code == 1
    assert "Do you want to perform these actions? Only 'yes' will be accepted: " in declined.output
    assert "accepted::" not in declined.output
    assert "apply cancelled" in declined.output
    assert writes(emulator) == []

    accepted = apply(emulator, "-f", shop, env=SHOP_ENV, input="yes\n")
    assert accepted.exit_code == 0, accepted.output
    assert "Apply complete!" in accepted.output


def test_no_changes_is_said_and_exits_zero(emulator: Any, shop: str) -> None:
    assert apply(emulator, "-f", shop, "--auto-approve", env=SHOP_ENV).exit_code == 0
    again = apply(emulator, "-f", shop, "--auto-approve", env=SHOP_ENV)
    assert again.exit_code == 0
    assert again.output.rstrip().endswith(
        "No changes. Live state matches the manifest.\n\n"
        "Apply complete! Resources: 0 added, 0 changed, 0 destroyed."
    )


def test_usage_errors_are_clear(emulator: Any, shop: str, tmp_path: Path) -> None:
    neither = apply(emulator)
    assert neither.exit_code == 1
    assert "nothing to apply" in neither.output
    both = apply(emulator, str(tmp_path / "plan.json"), "-f", shop)
    assert "give either PLANFILE or -f, not both" in both.output
    bad = apply(emulator, "-f", shop, "--wait-timeout", "soon")
    assert bad.exit_code == 1
    assert "'soon' is not a duration" in bad.output
    missing = apply(emulator, str(tmp_path / "nope.json"))
    assert missing.exit_code == 1
    assert "Traceback" not in missing.output


# --- scope, protection, terminals ------------------------------------------------------------


def test_target_applies_only_that_subtree_and_what_it_needs(emulator: Any, shop: str) -> None:
    result = apply(emulator, "-f", shop, "--auto-approve", "--target", "app.shop/api", env=SHOP_ENV)
    assert result.exit_code == 0, result.output
    state = emulator.state()
    assert [p["slug"] for p in state["projects"].values()] == ["shop"]  # needed by the app
    assert [a["slug"] for a in state["apps"].values()] == ["api"]
    assert state["domains"] == {}
    assert "Apply complete! Resources: 3 added, 0 changed, 0 destroyed." in result.output


def test_a_protected_app_is_never_deleted(emulator: Any, tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path,
        """\
        version: 1
        prune: {apps: true}
        projects:
          keep:
            name: Keep
            apps:
              legacy: {name: Legacy, deleteProtection: true, oci: {image: ghcr.io/acme/legacy:1}}
              web: {name: Web, oci: {image: ghcr.io/acme/web:1}}
        """,
    )
    assert apply(emulator, "-f", manifest, "--auto-approve").exit_code == 0
    without_legacy = (
        Path(manifest)
        .read_text()
        .replace(
            "  legacy: {name: Legacy, deleteProtection: true, oci: {image: ghcr.io/acme/legacy:1}}\n",
            "",
        )
    )
    Path(manifest).write_text(without_legacy.replace("Web, oci", "Web Shop, oci"))
    before = len(writes(emulator))

    result = apply(emulator, "-f", manifest, "--auto-approve")

    assert result.exit_code == 1
    assert "app.keep/web: updated (apps.updateApp 200)" in result.output
    assert "Not applied: delete protection (1):\n  app.keep/legacy: " in result.output
    assert (
        "Apply incomplete! Resources: 0 added, 1 changed, 0 destroyed; 0 failed, 0 skipped, 1 blocked."
        in result.output
    )
    assert writes(emulator)[before:] == ["apps.updateApp"]
    assert len(emulator.state()["apps"]) == 2


def test_on_a_terminal_a_progress_bar_counts_calls(
    emulator: Any, shop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apply_cli, "stdout_is_terminal", lambda: True)
    result = apply(emulator, "-f", shop, "--auto-approve", env={**SHOP_ENV, "NO_COLOR": None})
    assert result.exit_code == 0, result.output
    assert "Applying: " not in result.output  # the plain-text counter is replaced by the bar
    assert "app.shop/web: created (apps.createApp 200)" in result.output
    assert "Apply complete! Resources: 12 added, 0 changed, 0 destroyed." in result.output
    assert SENTINEL not in result.output


def test_the_first_run_on_a_fresh_machine_needs_no_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's first command: apply an example against `--base-url local`, then plan."""
    monkeypatch.chdir(tmp_path)
    example = str(EXAMPLES / "quickstart.yaml")
    env = {"RECONCILER_BASE_URL": None, "RECONCILER_API_KEY": None, "NO_COLOR": "1"}
    runner = CliRunner()

    applied = runner.invoke(
        main, ["apply", "-f", example, "--base-url", "local", "--auto-approve"], env=env
    )
    assert applied.exit_code == 0, applied.output
    assert "Apply complete!" in applied.output
    assert (tmp_path / ".reconciler" / "local-platform.json").is_file()

    planned = runner.invoke(main, ["plan", "-f", example, "--base-url", "local"], env=env)
    assert planned.exit_code == 0, planned.output
    assert "No changes. Live state matches the manifest." in planned.output


def test_an_apply_interrupted_before_its_first_call_lists_every_change_as_not_started(
    emulator: Any, shop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(apply_cli, "execute", interrupted)
    result = apply(emulator, "-f", shop, "--auto-approve", env=SHOP_ENV)
    assert result.exit_code == 130
    assert "Apply interrupted! Resources: 0 added, 0 changed, 0 destroyed; 0 failed, " in (
        result.stdout
    )
    assert "Not started (" in result.stdout and "Applied (" not in result.stdout
    assert f"To finish: reconciler apply -f {shop} (it continues from where it stopped" in (
        result.stdout
    )
    assert "Traceback" not in result.output
