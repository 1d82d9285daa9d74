"""Interrupting apply, as a person (Ctrl-C) or CI (SIGTERM on cancel) does, with real processes.

Each signal is sent at an observed moment: the question on the screen, an API call that the
emulator has received and holds, a deployment created. Then the process must stop at once,
exit 130, say what it did and did not do, and name the command that goes on from there.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
from pathlib import Path
from typing import Any

import pytest

from reconciler.cli.apply import CONFIRMATION
from reconciler.emulator.app import EmulatorConfig
from tests.e2e.processes import CliProcess, holding_emulator, run
from tests.fixtures.cli import platform_env, shop_manifest, write_manifest
from tests.fixtures.emulator import API_KEY

SIGNALS = [signal.SIGINT, signal.SIGTERM]
WEB_WITH_VARIABLE_AND_POLICY = shop_manifest(
    """\
    web:
      name: Web
      oci: {image: ghcr.io/acme/web:1.0}
      environments:
        production:
          runtime: {port: 8080}
          variables: {LOG_LEVEL: info}
          policies:
            - name: deny-admin
              enabled: true
              match: [{path: {path: {prefix: /admin}}}]
              firewall: {action: ACTION_DENY}
    """
)
HELD_OPERATION = "environments.setEnvironmentVariables"


@pytest.mark.parametrize("number", SIGNALS, ids=lambda s: s.name)
def test_an_interrupt_at_the_question_stops_at_once_and_applies_nothing(
    tmp_path: Path, number: signal.Signals
) -> None:
    manifest = write_manifest(tmp_path, WEB_WITH_VARIABLE_AND_POLICY)
    state = tmp_path / "state.json"
    with CliProcess(
        ["apply", "-f", str(manifest), "--base-url", f"local:{state}"], terminal_stdin=True
    ) as asking:
        asking.wait_for_stdout(CONFIRMATION)
        asking.send_signal(number)
        finished = asking.finish()  # nothing typed: it must not wait for Enter
    assert finished.exit_code == 130, finished.output
    assert "Interrupted at the confirmation: nothing was applied." in finished.stderr
    assert "may or may not" not in finished.output and "Traceback" not in finished.output
    assert not state.exists()  # not one write


@pytest.mark.parametrize(
    ("number", "sigint_ignored"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGTERM, True)],
    ids=["SIGINT", "SIGTERM", "SIGTERM-background-job"],
)
def test_an_interrupt_mid_apply_reports_applied_in_progress_and_not_started(
    start_emulator: Any, tmp_path: Path, number: signal.Signals, sigint_ignored: bool
) -> None:
    # The variables call is held a minute by the emulator: in flight when the signal comes.
    server = holding_emulator(start_emulator, HELD_OPERATION, 60_000)
    manifest = write_manifest(tmp_path, WEB_WITH_VARIABLE_AND_POLICY)
    with CliProcess(
        ["apply", "-f", str(manifest), "--auto-approve"],
        env=platform_env(server),
        sigint_ignored=sigint_ignored,
    ) as applying:
        server.wait_for_held_call()
        applying.send_signal(number)
        finished = applying.finish()

    assert finished.exit_code == 130, finished.output
    out = finished.stdout
    assert "Applied (3):\n  project.shop (created)\n  app.shop/web (created)\n" in out
    assert "  settings.shop/web/production (created)\n" in out
    assert (
        "In progress when interrupted: may or may not have reached the platform (1):\n"
        "  variable.shop/web/production/LOG_LEVEL\n"
    ) in out
    assert "Not started (1):\n  policies.shop/web/production\n" in out
    assert (
        "Apply interrupted! Resources: 3 added, 0 changed, 0 destroyed; "
        "0 failed, 0 skipped, 1 in progress, 1 not started."
    ) in out
    rerun = f"reconciler apply -f {manifest}"
    assert f"To finish: {rerun} (it continues from where it stopped" in out
    assert "Traceback" not in finished.output

    server.set_faults([])
    finishing = run([*shlex.split(rerun)[1:], "--auto-approve"], env=platform_env(server))
    assert finishing.exit_code == 0, finishing.output
    assert "Apply complete!" in finishing.stdout


@pytest.mark.parametrize("number", SIGNALS, ids=lambda s: s.name)
def test_an_interrupt_during_deploy_names_the_command_that_waits_for_the_rollout(
    start_emulator: Any, tmp_path: Path, number: signal.Signals
) -> None:
    # Deployment steps of a minute: in flight until the test moves the clock.
    slow = start_emulator(EmulatorConfig(dev_key=API_KEY, step_ms=60_000))
    manifest = write_manifest(tmp_path, WEB_WITH_VARIABLE_AND_POLICY)
    with CliProcess(
        ["apply", "-f", str(manifest), "--auto-approve", "--deploy", "--poll-interval", "50ms"],
        env=platform_env(slow),
    ) as deploying:
        deploying.wait_for_stdout("shop/web/production: deployment ")
        deploying.send_signal(number)
        finished = deploying.finish()

    assert finished.exit_code == 130, finished.output
    out = finished.stdout
    assert "Apply complete! Resources: 5 added, 0 changed, 0 destroyed." in out
    assert "run apply again" not in out.lower()  # applying again would deploy nothing
    [deployment_id] = re.findall(r"shop/web/production: deployment (d_\w+) created", out)
    assert "In flight: they go on rolling out on the platform (1):\n" in out
    assert f"  shop/web/production ({deployment_id}): " in out
    wait = f"reconciler status -f {manifest} --wait"
    assert f"To wait for them: {wait}\n" in out

    with CliProcess(
        [*shlex.split(wait)[1:], "--format", "json"], env=platform_env(slow)
    ) as waiting:
        waiting.wait_for_stderr("Waiting for 1 deployment(s) in flight to finish.")
        slow.advance_clock(10 * 60_000)
        waited = waiting.finish()
    assert waited.exit_code == 0, waited.output
    assert f"shop/web/production ({deployment_id}): ready" in waited.stderr
    [production] = [
        e for e in json.loads(waited.stdout)["environments"] if e["environment"] == "production"
    ]
    assert production["deployment"]["id"] == deployment_id
    assert production["deployment"]["status"] == "ready"


def test_an_interrupt_before_a_deployment_is_created_names_the_command_that_deploys_it(
    start_emulator: Any, tmp_path: Path
) -> None:
    # the create is held: no deployment is confirmed when CI cancels
    server = holding_emulator(start_emulator, "deployments.createDeployment", 60_000)
    manifest = write_manifest(tmp_path, WEB_WITH_VARIABLE_AND_POLICY)
    with CliProcess(
        ["apply", "-f", str(manifest), "--auto-approve", "--deploy", "--poll-interval", "50ms"],
        env=platform_env(server),
    ) as deploying:
        server.wait_for_held_call()
        deploying.send_signal(signal.SIGTERM)
        finished = deploying.finish()

    assert finished.exit_code == 130, finished.output
    deploy = f"reconciler apply -f {manifest} --redeploy --target settings.shop/web/production"
    assert (
        "Not deployed: no deployment was confirmed created (1):\n  shop/web/production\n"
        f"To deploy them: {deploy}"
    ) in finished.stdout
    # a new app's preview deploys only once it runs a deployment: the interrupt left that open
    assert "Not checked: shop/web/preview (deployed only when it already runs" in finished.stdout
    server.set_faults([])
    deployed = run(
        [*shlex.split(deploy)[1:], "--auto-approve", "--poll-interval", "50ms"],
        env=platform_env(server),
    )
    assert deployed.exit_code == 0, deployed.output
    assert "Deploy complete!" in deployed.stdout


READ_ONLY_COMMANDS = {
    "plan": (["plan", "-f", "{manifest}"], "projects.getProject"),
    "status": (["status", "-f", "{manifest}"], "apps.listApps"),
    "export": (["export", "--project", "shop"], "projects.getProject"),
}


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["foreground", "background-job"])
@pytest.mark.parametrize(("arguments", "held"), READ_ONLY_COMMANDS.values(), ids=READ_ONLY_COMMANDS)
def test_sigterm_mid_read_stops_a_read_only_command_with_130(
    start_emulator: Any, tmp_path: Path, arguments: list[str], held: str, sigint_ignored: bool
) -> None:
    """SIGTERM while a read is in flight cancels the command's task (not an exception raised
    wherever the event loop happens to be): exit 130 and no traceback, also when the shell
    started it with SIGINT ignored."""
    server = holding_emulator(start_emulator, held, 60_000)
    manifest = write_manifest(tmp_path, WEB_WITH_VARIABLE_AND_POLICY)
    command = [word.format(manifest=manifest) for word in arguments]
    with CliProcess(command, env=platform_env(server), sigint_ignored=sigint_ignored) as reading:
        server.wait_for_held_call()
        reading.send_signal(signal.SIGTERM)
        finished = reading.finish()
    assert finished.exit_code == 130, finished.output
    assert "Traceback" not in finished.output
    assert finished.stdout == ""
