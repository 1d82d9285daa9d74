"""Faults: the platform throttles, errs, stalls, answers after doing the work, or dies mid-apply.

Whatever happens, a run ends either converged or with a precise error (exit 1, the failing
operation named, no traceback); once the platform heals, a rerun converges; no object is ever
duplicated; no variable or domain the manifest does not list is deleted; no write-only value is
lost (compared in the emulator's own state, which the API never returns).

The client's waits are real sleeps: in-process runs shrink them a hundredfold (`fast_retries`),
keeping every wait the client asks for, so the tests can check that `Retry-After` is honoured.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reconciler.platform.client as platform_client
from reconciler.emulator.app import EmulatorConfig
from reconciler.platform.retry import RetryPolicy
from tests.fixtures.cli import CliResult, Seed, run_cli
from tests.proof.strategies import Scenario, SeedCall, scenarios
from tests.proof.test_convergence import (
    FINGERPRINT_KEY,
    assert_no_duplicates,
    build_live_state,
    check_manifest_reached,
    check_out_of_scope_untouched,
    is_write,
    workspace,
)

READS = (
    "projects.getProject",
    "apps.getApp",
    "apps.listApps",
    "environments.listEnvironments",
    "environments.getEnvironment",
    "environments.listEnvironmentVariables",
    "gateway.listPolicies",
    "domains.listDomains",
    "domains.getDomain",
)
WRITES = (
    "projects.createProject",
    "projects.updateProject",
    "apps.createApp",
    "apps.updateApp",
    "apps.deleteApp",
    "environments.updateSettings",
    "environments.setEnvironmentVariables",
    "environments.removeEnvironmentVariables",
    "gateway.setPolicies",
    "domains.createDomain",
    "domains.deleteDomain",
)
PLAN_READS = (  # what a plan of SHOP reads
    "projects.getProject",
    "apps.listApps",
    "environments.listEnvironments",
    "environments.listEnvironmentVariables",
    "gateway.listPolicies",
    "domains.listDomains",
    "domains.getDomain",
)
SPEEDUP = 100


# ---- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every wait the client asks for (seconds), slept a hundred times faster."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(seconds / SPEEDUP)

    monkeypatch.setattr(platform_client, "RetryPolicy", functools.partial(RetryPolicy, sleep=sleep))
    return waits


def cli_env(base_url: str, api_key: str, scenario: Scenario) -> dict[str, str | None]:
    return {
        "RECONCILER_BASE_URL": base_url,
        "RECONCILER_API_KEY": api_key,
        "RECONCILER_FINGERPRINT_KEY": FINGERPRINT_KEY,
        "NO_COLOR": "1",
        "RECONCILER_DEBUG": None,
        **scenario.env,
    }


def write_manifest(directory: Path, scenario: Scenario) -> list[str]:
    path = directory / "platform.yaml"
    path.write_text(yaml.safe_dump(scenario.manifest, sort_keys=False), encoding="utf-8")
    return ["-f", str(path)]


def assert_precise(result: CliResult, operations: tuple[str, ...] | list[str]) -> None:
    """Converged (0) or a precise error: exit 1, a failing operation named, no traceback."""
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 1:
        assert any(op in result.output for op in operations), result.output


def assert_settled(
    platform: Any, scenario: Scenario, before: dict[str, Any], files: list[str], env: Any
) -> None:
    """The manifest is reached, nothing else moved, and a second run writes nothing."""
    state = platform.state()
    assert_no_duplicates(state)
    after = workspace(state)
    check_manifest_reached(scenario.manifest, scenario.env, before, after, fingerprints=True)
    check_out_of_scope_untouched(scenario.manifest, before, after)
    planned = run_cli(["plan", *files, "--detailed-exitcode"], env=env)
    assert planned.exit_code == 0, planned.output
    logged = len(platform.requests())
    again = run_cli(["apply", *files, "--auto-approve"], env=env)
    assert again.exit_code == 0, again.output
    assert [r["operation"] for r in platform.requests()[logged:] if is_write(r["operation"])] == []


# ---- fault rules during apply (property) ------------------------------------------------------


@st.composite
def fault_rules(draw: Any) -> list[dict[str, Any]]:
    """1 to 4 rules: throttling with and without a wait, server errors before and after the
    work is done (ambiguous), latency spikes; some fire once, some for good."""
    rules = []
    for _ in range(draw(st.integers(1, 4))):
        rule: dict[str, Any] = {"operation": draw(st.sampled_from(READS + WRITES))}
        kind = draw(st.sampled_from(["429", "429-wait", "500", "503", "500-after", "latency"]))
        if kind == "latency":  # no status: the call is only delayed
            rule["latencyMs"] = draw(st.integers(50, 300))
        elif kind.startswith("429"):
            rule.update(status=429, retryAfter=1 if kind == "429-wait" else 0)
        else:
            rule["status"] = 500 if kind.startswith("500") else 503
            if kind == "500-after":
                rule["phase"] = "after"
        rule["after"] = draw(st.integers(0, 3))
        if draw(st.booleans()):
            rule["times"] = draw(st.integers(1, 2))
        rules.append(rule)
    return rules


FAULT_PROPERTY = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.slow
@FAULT_PROPERTY
@given(scenario=scenarios(), rules=fault_rules())
def test_apply_under_fault_rules_ends_converged_or_precise_and_a_rerun_converges(
    emulator: Any, tmp_path: Path, fast_retries: list[float], scenario: Scenario, rules: Any
) -> None:
    run_under_fault_rules(emulator, tmp_path, scenario, rules)


def prepare(
    platform: Any, tmp_path: Path, scenario: Scenario
) -> tuple[Any, list[str], dict[str, str | None]]:
    """The scenario's live state built through the API, then (the snapshot of the workspace
    before the run, the manifest files, the CLI environment)."""
    build_live_state(Seed(platform), scenario.seed)
    before = workspace(platform.state())
    files = write_manifest(tmp_path, scenario)
    return before, files, cli_env(platform.base_url, platform.api_key, scenario)


def run_under_fault_rules(
    emulator: Any, tmp_path: Path, scenario: Scenario, rules: list[dict[str, Any]]
) -> None:
    emulator.reset()
    before, files, env = prepare(emulator, tmp_path, scenario)

    emulator.set_faults(rules)
    planned = run_cli(["plan", *files], env=env)
    assert_precise(planned, [r["operation"] for r in rules])
    first = run_cli(["apply", *files, "--auto-approve"], env=env)
    assert_precise(first, [r["operation"] for r in rules])
    state = emulator.state()
    assert_no_duplicates(state)
    partial = workspace(state)
    check_out_of_scope_untouched(scenario.manifest, before, partial, partial=True)

    emulator.set_faults([])
    healed = run_cli(["apply", *files, "--auto-approve"], env=env)
    assert healed.exit_code == 0, first.output + "\n----\n" + healed.output
    assert_settled(emulator, scenario, before, files, env)


# ---- specific faults, plan and apply ------------------------------------------------------------

SHOP = {
    "version": 1,
    "prune": {"variables": False, "domains": False},
    "projects": {
        "shop": {
            "name": "Shop",
            "apps": {
                "web": {
                    "git": {"repository": "acme/web", "defaultBranch": "main"},
                    "environments": {
                        "production": {
                            "runtime": {
                                "port": 3000,
                                "healthcheck": {"method": "GET", "path": "/"},
                            },
                            "regions": [{"name": "fra", "replicas": {"min": 1, "max": 2}}],
                            "variables": {
                                "NODE_ENV": "production",
                                "TOKEN": {"fromEnv": "PROOF_TOKEN"},
                            },
                            "domains": ["www.web-production.shop.example.com"],
                            "policies": [
                                {
                                    "name": "deny-admin",
                                    "enabled": True,
                                    "match": [{"path": {"path": {"prefix": "/admin"}}}],
                                    "firewall": {"action": "ACTION_DENY"},
                                }
                            ],
                        },
                        "preview": {"variables": {"NODE_ENV": "preview"}},
                    },
                },
                "api": {"oci": {"image": "ghcr.io/acme/api:1.0"}},
            },
        }
    },
}


def shop_scenario() -> Scenario:
    """SHOP over a live state with unlisted write-only variables and a domain to keep."""
    target = {"project": "shop", "app": "web", "environment": "production"}
    seed = [
        SeedCall("projects.createProject", {"name": "Old", "slug": "shop"}),
        SeedCall("apps.createApp", {"project": "shop", "name": "web", "slug": "web", "git": {}}),
        SeedCall(
            "environments.setEnvironmentVariables",
            {
                **target,
                "variables": [
                    {"key": "KEEP_SECRET", "value": "kept-write-only", "kind": "writeonly"},
                    {"key": "TOKEN", "value": "stale-token", "kind": "writeonly"},
                ],
            },
        ),
        SeedCall("domains.createDomain", {**target, "domain": "old.web-production.shop.example"}),
    ]
    return Scenario(manifest=SHOP, env={"PROOF_TOKEN": "fresh-token-value"}, seed=seed)


FAULTS = {
    "429 with Retry-After": {"status": 429, "retryAfter": 1, "times": 2},
    "429 with Retry-After 0": {"status": 429, "retryAfter": 0, "times": 3},
    "500": {"status": 500, "times": 2},
    "503": {"status": 503, "times": 1},
    "latency spike": {"latencyMs": 400, "times": 2},
}


@pytest.mark.parametrize("operation", PLAN_READS)
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_plan_under_transient_read_faults_shows_the_same_plan(
    emulator: Any, tmp_path: Path, fast_retries: list[float], operation: str, fault: str
) -> None:
    scenario = shop_scenario()
    build_live_state(Seed(emulator), scenario.seed)
    files = write_manifest(tmp_path, scenario)
    env = cli_env(emulator.base_url, emulator.api_key, scenario)
    clean = run_cli(["plan", *files, "--detailed-exitcode"], env=env)
    assert clean.exit_code == 2, clean.output

    seeded = len(emulator.requests())
    emulator.set_faults([{"operation": operation, **FAULTS[fault]}])
    faulted = run_cli(["plan", *files, "--detailed-exitcode"], env=env)

    assert faulted.exit_code == 2, faulted.output
    assert faulted.stdout == clean.stdout
    log = emulator.requests()[seeded:]
    assert not [r for r in log if is_write(r["operation"])]
    status = FAULTS[fault].get("status")
    if status is not None:
        assert (operation, status) in [(r["operation"], r["status"]) for r in log]
    if FAULTS[fault].get("retryAfter"):
        assert FAULTS[fault]["retryAfter"] in fast_retries  # the server's wait is honoured


@pytest.mark.parametrize("operation", PLAN_READS)
def test_plan_against_a_read_that_keeps_failing_names_it_and_writes_nothing(
    emulator: Any, tmp_path: Path, fast_retries: list[float], operation: str
) -> None:
    scenario = shop_scenario()
    build_live_state(Seed(emulator), scenario.seed)
    files = write_manifest(tmp_path, scenario)
    env = cli_env(emulator.base_url, emulator.api_key, scenario)
    seeded = len(emulator.requests())
    emulator.set_faults([{"operation": operation, "status": 500}])

    result = run_cli(["plan", *files, "--detailed-exitcode"], env=env)

    assert result.exit_code == 1, result.output
    assert operation in result.output and "500" in result.output, result.output
    assert "Traceback" not in result.output
    assert not [r for r in emulator.requests()[seeded:] if is_write(r["operation"])]


@pytest.mark.parametrize("operation", WRITES[:2] + WRITES[3:4] + WRITES[5:10])
@pytest.mark.parametrize("fault", ["500", "500 after", "503", "429 forever"])
def test_apply_with_a_failing_write_is_precise_and_a_rerun_converges(
    emulator: Any, tmp_path: Path, fast_retries: list[float], operation: str, fault: str
) -> None:
    scenario = shop_scenario()
    before, files, env = prepare(emulator, tmp_path, scenario)
    rule: dict[str, Any] = {"operation": operation, "status": int(fault[:3])}
    if fault == "500 after":
        rule["phase"] = "after"
    if fault == "429 forever":
        rule["retryAfter"] = 0
    emulator.set_faults([rule])

    first = run_cli(["apply", *files, "--auto-approve"], env=env)

    assert_precise(first, [operation])
    assert_no_duplicates(emulator.state())
    check_out_of_scope_untouched(SHOP, before, workspace(emulator.state()), partial=True)
    emulator.set_faults([])
    second = run_cli(["apply", *files, "--auto-approve"], env=env)
    assert second.exit_code == 0, first.output + "\n----\n" + second.output
    assert_settled(emulator, scenario, before, files, env)


# ---- 429 without Retry-After ----------------------------------------------------------------------


def test_429_without_retry_after_backs_off_and_converges(
    emulator: Any, tmp_path: Path, fast_retries: list[float]
) -> None:
    platform = emulator
    scenario = shop_scenario()
    before, files, env = prepare(platform, tmp_path, scenario)
    # Deterministic bursts (`times`), not a probability: a random 429 on every call made five
    # in a row on some call about once in ten runs, and the test then failed on chance alone.
    # Each burst stays below the client's five attempts, so backing off must carry every call.
    platform.set_faults(
        [
            {"operation": "projects.getProject", "status": 429, "times": 3, "retryAfter": None},
            {"operation": "apps.updateApp", "status": 429, "times": 4, "retryAfter": None},
            {"operation": "gateway.setPolicies", "status": 429, "times": 2, "retryAfter": None},
        ]
    )
    probe = platform.call("projects.getProject", {"project": "shop"})
    assert probe.status_code == 429 and "retry-after" not in probe.headers

    planned = run_cli(["plan", *files, "--detailed-exitcode"], env=env)
    assert planned.exit_code == 2, planned.output
    result = run_cli(["apply", *files, "--auto-approve"], env=env)

    assert result.exit_code == 0, result.output
    throttled = [r["operation"] for r in platform.requests() if r["status"] == 429]
    assert sorted(throttled) == sorted(
        ["projects.getProject"] * 3 + ["apps.updateApp"] * 4 + ["gateway.setPolicies"] * 2
    )
    policy = RetryPolicy()
    assert fast_retries and max(fast_retries) <= policy.max_delay  # backoff, not a fixed wait
    platform.set_faults([])
    assert_settled(platform, scenario, before, files, env)


# ---- a random fault rate, plan and apply ---------------------------------------------------------


@pytest.mark.slow
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(scenario=scenarios(), seed=st.integers(0, 2**16))
def test_a_fault_rate_never_duplicates_and_reruns_converge(
    start_emulator: Any, tmp_path: Path, fast_retries: list[float], scenario: Scenario, seed: int
) -> None:
    platform = start_emulator(
        EmulatorConfig(dev_key="fault-rate-key", fault_rate=0.25, seed=seed, step_ms=20)
    )
    saved_rate = platform.emulator.faults.fault_rate
    platform.emulator.faults.fault_rate = 0.0  # the live state is written without faults
    build_live_state(Seed(platform), scenario.seed)
    before = workspace(platform.state())
    platform.emulator.faults.fault_rate = saved_rate
    files = write_manifest(tmp_path, scenario)
    env = cli_env(platform.base_url, platform.api_key, scenario)

    runs = [run_cli(["plan", *files], env=env)]
    assert_precise(runs[0], READS)
    for _ in range(6):
        runs.append(run_cli(["apply", *files, "--auto-approve"], env=env))
        assert_precise(runs[-1], READS + WRITES)
        assert_no_duplicates(platform.state())
        if runs[-1].exit_code == 0:
            break
    assert runs[-1].exit_code == 0, "\n----\n".join(r.output for r in runs)
    platform.emulator.faults.fault_rate = 0.0
    assert_settled(platform, scenario, before, files, env)


# ---- the emulator killed and restarted mid-apply ------------------------------------------------

LISTENING = re.compile(r"Emulator listening on (http://\S+)")
KILL_KEY = "proof-kill-key"


class EmulatorProcess:
    """`reconciler emulator --state FILE` as a child process that a test can kill -9."""

    def __init__(self, state_file: Path, port: int = 0) -> None:
        env = {**os.environ, "RECONCILER_API_KEY": KILL_KEY}
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "reconciler",
                "emulator",
                "--state",
                str(state_file),
                "--port",
                str(port),
                "--latency-ms",
                "15",
                "--step-ms",
                "20",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + 20
        self.base_url = ""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            found = LISTENING.search(line)
            if found:
                self.base_url = found.group(1)
                break
        if not self.base_url:
            self.process.kill()
            raise RuntimeError("the emulator process did not start")
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        self.port = int(self.base_url.rsplit(":", 1)[1])
        self.api_key = KILL_KEY
        self.http = httpx.Client(base_url=self.base_url, timeout=10)

    def call(self, operation: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return self.http.post(
            f"/v1/{operation}", json=body or {}, headers={"Authorization": f"Bearer {KILL_KEY}"}
        )

    def requests(self) -> list[dict[str, Any]]:
        return self.http.get("/_emulator/requests", headers=self._key).json()["requests"]

    def state(self) -> dict[str, Any]:
        return self.http.get("/_emulator/state", headers=self._key).json()

    @property
    def _key(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {KILL_KEY}"}

    def kill(self) -> None:
        self.http.close()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill()


@pytest.fixture
def emulator_processes() -> Iterator[list[EmulatorProcess]]:
    started: list[EmulatorProcess] = []
    yield started
    for process in started:
        process.stop()


def fleet(apps: int) -> Scenario:
    """Image apps with variables (one write-only), a domain each; an unlisted secret live."""
    manifest: dict[str, Any] = {
        "version": 1,
        "prune": {"variables": False},
        "projects": {"fleet": {"name": "Fleet", "apps": {}}},
    }
    for i in range(apps):
        manifest["projects"]["fleet"]["apps"][f"app{i:02d}"] = {
            "oci": {"image": f"ghcr.io/acme/app{i}:1.0"},
            "environments": {
                "production": {
                    "runtime": {"port": 8080, "memoryMib": 512},
                    "variables": {"INDEX": str(i), "SECRET": {"fromEnv": "FLEET_SECRET"}},
                    "domains": [f"app{i}.fleet.example.com"],
                }
            },
        }
    seed = [
        SeedCall("projects.createProject", {"name": "Fleet", "slug": "fleet"}),
        SeedCall(
            "apps.createApp",
            {
                "project": "fleet",
                "name": "a0",
                "slug": "app00",
                "oci": {"image": "ghcr.io/acme/app0:0.9"},
            },
        ),
        SeedCall(
            "environments.setEnvironmentVariables",
            {
                "project": "fleet",
                "app": "app00",
                "environment": "production",
                "variables": [{"key": "UNLISTED", "value": "must-survive", "kind": "writeonly"}],
            },
        ),
    ]
    return Scenario(manifest=manifest, env={"FLEET_SECRET": "fleet-secret-value"}, seed=seed)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kill_after", "downtime"),
    [(10, 0.3), (40, 0.3), (75, 0.3), (40, 9.0)],
    ids=["early", "middle", "late", "down-longer-than-the-retries"],
)
def test_emulator_killed_mid_apply_then_restarted_a_rerun_converges(
    emulator_processes: list[EmulatorProcess], tmp_path: Path, kill_after: int, downtime: float
) -> None:
    """Short outages are ridden out by the retries; a long one ends in a precise error."""
    state_file = tmp_path / "platform-state.json"
    platform = EmulatorProcess(state_file)
    emulator_processes.append(platform)
    scenario = fleet(20)
    build_live_state(Seed(platform), scenario.seed)
    # as a restarted emulator shows it: its file keeps only digests of write-only values
    before = workspace(json.loads(state_file.read_text(encoding="utf-8")))
    files = write_manifest(tmp_path, scenario)
    env = {k: v for k, v in cli_env(platform.base_url, platform.api_key, scenario).items() if v}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RECONCILER_")}, **env}
    seeded = len(platform.requests())

    apply = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "apply", *files, "--auto-approve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 30
    while len(platform.requests()) < seeded + kill_after:
        assert apply.poll() is None, "apply finished before the kill: raise the fleet size"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    platform.kill()
    time.sleep(downtime)
    restarted = EmulatorProcess(state_file, port=platform.port)
    emulator_processes.append(restarted)
    stdout, stderr = apply.communicate(timeout=120)
    interrupted = CliResult(apply.returncode, stdout, stderr)

    assert_precise(interrupted, READS + WRITES)
    policy = RetryPolicy(jitter=False)
    if downtime > sum(policy.backoff(n) for n in range(1, policy.max_attempts)):
        assert interrupted.exit_code == 1, interrupted.output  # the retries gave up
    assert_no_duplicates(restarted.state())
    rerun = run_cli(["apply", *files, "--auto-approve"], env=env)
    assert rerun.exit_code == 0, interrupted.output + "\n----\n" + rerun.output
    assert_settled(restarted, scenario, before, files, env)
    secrets = restarted.state()["variables"]
    # the state file keeps only the digest of a write-only value
    digests = [v["valueSha256"] for env_vars in secrets.values() for v in env_vars.values()]
    assert digests.count(hashlib.sha256(b"must-survive").hexdigest()) == 1


# ---- deletes that fail ambiguously ---------------------------------------------------------------


def pruning_scenario() -> Scenario:
    """An app and a domain that the manifest prunes, a variable and a policy list it replaces."""
    target = {"project": "shop", "app": "web", "environment": "production"}
    manifest = {
        "version": 1,
        "prune": {"apps": True},
        "projects": {
            "shop": {
                "apps": {
                    "web": {
                        "git": {"repository": "acme/web"},
                        "environments": {
                            "production": {"variables": {"A": "1"}, "domains": [], "policies": []}
                        },
                    }
                }
            }
        },
    }
    seed = [
        SeedCall("projects.createProject", {"name": "Shop", "slug": "shop"}),
        SeedCall(
            "apps.createApp",
            {"project": "shop", "name": "web", "slug": "web", "git": {"repository": "acme/web"}},
        ),
        SeedCall("apps.createApp", {"project": "shop", "name": "old", "slug": "old", "git": {}}),
        SeedCall(
            "environments.setEnvironmentVariables",
            {**target, "variables": [{"key": "B", "value": "b"}]},
        ),
        SeedCall("domains.createDomain", {**target, "domain": "gone.web.shop.example.com"}),
        SeedCall(
            "gateway.setPolicies",
            {
                **target,
                "policies": [{"name": "p", "enabled": True, "firewall": {"action": "ACTION_DENY"}}],
            },
        ),
    ]
    return Scenario(manifest=manifest, seed=seed)


@pytest.mark.parametrize("operation", ["apps.deleteApp", "domains.deleteDomain"])
def test_a_delete_that_failed_after_it_was_done_is_not_reported_failed(
    emulator: Any, tmp_path: Path, fast_retries: list[float], operation: str
) -> None:
    scenario = pruning_scenario()
    before, files, env = prepare(emulator, tmp_path, scenario)
    emulator.set_faults([{"operation": operation, "status": 500, "phase": "after", "times": 1}])

    result = run_cli(["apply", *files, "--auto-approve"], env=env)

    assert_precise(result, [operation])
    assert_settled(emulator, scenario, before, files, env)  # the delete did happen
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "operation",
    [
        "environments.removeEnvironmentVariables",
        "environments.setEnvironmentVariables",
        "gateway.setPolicies",
    ],
)
def test_an_idempotent_write_that_failed_after_it_was_done_is_resent_and_succeeds(
    emulator: Any, tmp_path: Path, fast_retries: list[float], operation: str
) -> None:
    scenario = pruning_scenario()
    before, files, env = prepare(emulator, tmp_path, scenario)
    seeded = len(emulator.requests())
    emulator.set_faults([{"operation": operation, "status": 500, "phase": "after", "times": 1}])

    result = run_cli(["apply", *files, "--auto-approve"], env=env)

    assert result.exit_code == 0, result.output
    log = emulator.requests()[seeded:]
    sent = [r["status"] for r in log if r["operation"] == operation]
    assert sent == [500, 200]
    assert_settled(emulator, scenario, before, files, env)


@pytest.mark.parametrize(
    "rules",
    [
        [{"operation": "apps.createApp", "status": 500, "phase": "after", "times": 1}],
        [{"operation": "domains.createDomain", "status": 503, "phase": "after", "times": 1}],
        [{"operation": "environments.setEnvironmentVariables", "status": 429, "retryAfter": 1}],
        [{"operation": "projects.getProject", "status": 500, "times": 2}],
    ],
    ids=["app-create-ambiguous", "domain-create-ambiguous", "throttled-for-good", "flaky-read"],
)
def test_a_saved_plan_applied_under_faults_is_precise_and_a_rerun_converges(
    emulator: Any, tmp_path: Path, fast_retries: list[float], rules: list[dict[str, Any]]
) -> None:
    scenario = shop_scenario()
    before, files, env = prepare(emulator, tmp_path, scenario)
    saved = tmp_path / "plan.json"
    planned = run_cli(["plan", *files, "--out", str(saved)], env=env)
    assert planned.exit_code == 0, planned.output
    emulator.set_faults(rules)

    applied = run_cli(["apply", str(saved)], env=env)

    assert_precise(applied, [r["operation"] for r in rules])
    assert_no_duplicates(emulator.state())
    check_out_of_scope_untouched(SHOP, before, workspace(emulator.state()), partial=True)
    emulator.set_faults([])
    rerun = run_cli(["apply", *files, "--auto-approve"], env=env)
    assert rerun.exit_code == 0, applied.output + "\n----\n" + rerun.output
    assert_settled(emulator, scenario, before, files, env)
