"""Apply when the platform fails: precise reports, no duplicates, and reruns that converge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.emulator.app import EmulatorConfig
from tests.e2e.test_apply_e2e import apply, assert_converged, write_manifest, writes

APPS = 4


def many_apps(count: int, *, project: str = "fleet") -> str:
    """`count` image apps, each with variables in production and a domain."""
    lines = ["version: 1", "projects:", f"  {project}:", "    name: Fleet", "    apps:"]
    for i in range(count):
        lines += [
            f"      app{i:02}:",
            f"        name: App {i}",
            f"        oci: {{image: ghcr.io/acme/app{i}:1.0}}",
            "        environments:",
            "          production:",
            "            runtime: {port: 8080, vCpus: 0.5, memoryMib: 512}",
            f"            variables: {{INDEX: '{i}', LOG_LEVEL: info}}",
            f"            domains: [app{i}.fleet.example.com]",
        ]
    return "\n".join(lines) + "\n"


def test_a_failing_call_is_reported_precisely_and_a_rerun_converges(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, many_apps(APPS))
    emulator.set_faults(
        [
            {
                "operation": "environments.setEnvironmentVariables",
                "after": 2,
                "times": 1,
                "status": 403,
            }
        ]
    )

    first = apply(emulator, "-f", manifest, "--auto-approve")

    assert first.exit_code == 1
    failed = [line for line in first.output.splitlines() if ": failed: " in line]
    assert len(failed) == 2, first.output  # the batch carries both variables of one environment
    environment = failed[0].split(": failed: ")[0].rsplit("/", 1)[0]
    assert {line.split(": failed: ")[0] for line in failed} == {
        f"{environment}/INDEX",
        f"{environment}/LOG_LEVEL",
    }
    assert all(
        "environments.setEnvironmentVariables" in line and "(403)" in line for line in failed
    )
    assert "Apply incomplete! Resources: 19 added, 0 changed, 0 destroyed; 2 failed, " in (
        first.output
    )
    assert "Applied (19):" in first.output
    statuses = [r["status"] for r in emulator.requests()]
    assert statuses.count(403) == 1

    second = apply(emulator, "-f", manifest, "--auto-approve")
    assert second.exit_code == 0, second.output
    assert "Apply complete! Resources: 2 added, 0 changed, 0 destroyed." in second.output
    assert_converged(emulator, [manifest])


def test_creates_that_fail_ambiguously_are_never_duplicated(emulator: Any, tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, many_apps(2))
    # the platform creates the object, then answers 500: the client must not simply resend
    emulator.set_faults(
        [
            {"operation": op, "times": 1, "status": 500, "phase": "after"}
            for op in ("projects.createProject", "apps.createApp", "domains.createDomain")
        ]
    )

    result = apply(emulator, "-f", manifest, "--auto-approve")

    assert result.exit_code == 0, result.output
    assert "already created by an earlier attempt that failed ambiguously" in result.output
    log = [(r["operation"], r["status"]) for r in emulator.requests()]
    assert log.count(("projects.createProject", 500)) == 1
    assert ("projects.createProject", 200) not in log
    assert [op for op, _ in log].count("apps.createApp") == 2
    state = emulator.state()
    assert len(state["projects"]) == 1
    assert len(state["apps"]) == 2
    assert len(state["domains"]) == 2
    assert_converged(emulator, [manifest])


def test_a_large_apply_under_random_faults_converges_without_duplicates(
    start_emulator: Any, tmp_path: Path
) -> None:
    platform = start_emulator(
        EmulatorConfig(dev_key="fault-key", fault_rate=0.2, seed=20261122, step_ms=20)
    )
    apps = 30
    manifest = write_manifest(tmp_path, many_apps(apps))

    runs = apply_until_complete(platform, manifest)
    assert runs[-1].exit_code == 0, "\n\n".join(r.output for r in runs)

    state = platform.state()
    assert len(state["projects"]) == 1
    assert sorted(a["slug"] for a in state["apps"].values()) == [f"app{i:02}" for i in range(apps)]
    assert sorted(d["domain"] for d in state["domains"].values()) == sorted(
        f"app{i}.fleet.example.com" for i in range(apps)
    )
    faults = [r for r in platform.requests() if r["status"] in (429, 500, 503)]
    assert faults, "the fault rate should have failed some calls"
    before = len(writes(platform))
    # The faults go on: a rerun whose read meets one five times stops with that error (about
    # one run in twenty: ~150 reads x 0.2^5), having written nothing; one gets through.
    reruns = apply_until_complete(platform, manifest)
    assert reruns[-1].exit_code == 0, "\n\n".join(r.output for r in reruns)
    assert "No changes" in reruns[-1].output
    assert all("after 5 attempts" in r.output for r in reruns[:-1])
    assert len(writes(platform)) == before


def apply_until_complete(platform: Any, manifest: str, tries: int = 6) -> list[Any]:
    """Apply until a run exits 0 (at most `tries` runs, as CI would rerun), every run's result."""
    runs = []
    for _ in range(tries):
        runs.append(apply(platform, "-f", manifest, "--auto-approve"))
        if runs[-1].exit_code == 0:
            break
    return runs
