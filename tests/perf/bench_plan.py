"""Benchmark `reconciler plan` on a large workspace over real HTTP with platform latency.

    .venv/bin/python tests/perf/bench_plan.py [--apps 200] [--projects 10] [--latency-ms 20]
                                             [--parallelism 10]

Seeds an emulator state file in-process (no latency), then serves it with
`reconciler emulator --latency-ms N` in a subprocess on loopback (so the server
does not share the plan's interpreter), and plans a manifest that matches the
seeded state exactly (every read happens, no change is found). Prints the wall
time, the API calls made, the lower bound ceil(calls / parallelism) x latency and the
ratio of the two (target <= 1.5), the ideal schedule (`schedule.plan_rounds` x latency:
the same calls in their dependency order, `parallelism` at a time, on a client with no
CPU cost), and the calls per app of a plan a
tenth the size, to show that per-app reads do not grow with the workspace.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from schedule import plan_rounds  # noqa: E402

from reconciler.cli.interrupts import run_async  # noqa: E402
from reconciler.emulator.app import EmulatorConfig, create_app  # noqa: E402
from reconciler.manifest.validate import load_manifest  # noqa: E402
from reconciler.plan.planner import PlanOptions, build_plan  # noqa: E402
from reconciler.platform.client import PlatformClient  # noqa: E402

KEY = "bench-plan-key-000001"
VARIABLES = 5
POLICIES = 3


def policy(index: int) -> dict:
    return {
        "name": f"deny-{index}",
        "enabled": True,
        "match": [{"remoteIp": {"in": [f"10.{index}.0.0/16"]}}],
        "firewall": {"action": "ACTION_DENY"},
    }


async def seed(state_file: Path, projects: int, apps_per_project: int) -> None:
    app = create_app(EmulatorConfig(dev_key=KEY, state_file=state_file))
    transport = httpx.ASGITransport(app=app)
    async with PlatformClient("http://local", KEY, transport=transport, parallelism=8) as client:
        for p in range(projects):
            await client.call("projects.createProject", {"name": f"P{p}", "slug": f"proj-{p:02d}"})

        async def one_app(p: int, a: int) -> None:
            project, slug = f"proj-{p:02d}", f"app-{a:03d}"
            await client.call(
                "apps.createApp",
                {"project": project, "name": slug, "slug": slug, "git": {"repository": "acme/x"}},
            )
            where = {"project": project, "app": slug, "environment": "production"}
            await client.call("environments.updateSettings", {**where, "port": 3000, "vCpus": 0.5})
            await client.call(
                "environments.setEnvironmentVariables",
                {**where, "variables": [
                    {"key": f"V{i}", "value": str(i), "kind": "recoverable"}
                    for i in range(VARIABLES)
                ]},
            )  # fmt: skip
            await client.call(
                "gateway.setPolicies", {**where, "policies": [policy(i) for i in range(POLICIES)]}
            )
            await client.call(
                "domains.createDomain", {**where, "domain": f"{slug}.{project}.example.com"}
            )

        await asyncio.gather(
            *(one_app(p, a) for p in range(projects) for a in range(apps_per_project))
        )


def manifest_text(projects: int, apps_per_project: int) -> str:
    lines = ["version: 1", "projects:"]
    for p in range(projects):
        project = f"proj-{p:02d}"
        lines += [f"  {project}:", f"    name: P{p}", "    apps:"]
        for a in range(apps_per_project):
            slug = f"app-{a:03d}"
            lines += [
                f"      {slug}:",
                "        environments:",
                "          production:",
                "            runtime: {port: 3000, vCpus: 0.5}",
                "            variables: {"
                + ", ".join(f'V{i}: "{i}"' for i in range(VARIABLES))
                + "}",
                f"            domains: [{slug}.{project}.example.com]",
                "            policies:",
            ]
            for i in range(POLICIES):
                lines += [
                    f"              - name: deny-{i}",
                    "                enabled: true",
                    f'                match: [{{remoteIp: {{in: ["10.{i}.0.0/16"]}}}}]',
                    "                firewall: {action: ACTION_DENY}",
                ]
    return "\n".join(lines) + "\n"


def serve(state_file: Path, latency_ms: int) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "reconciler", "emulator", "--port", "0",
               "--state", str(state_file), "--latency-ms", str(latency_ms)]  # fmt: skip
    env = {**os.environ, "RECONCILER_API_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert process.stdout is not None
    for line in process.stdout:
        if "listening on" in line:
            return process, line.rsplit(" ", 1)[1].strip()
    raise RuntimeError("the emulator did not start")


async def plan_once(manifest_path: Path, base_url: str, parallelism: int) -> tuple[float, int, int]:
    manifest = load_manifest([manifest_path])
    async with PlatformClient(base_url, KEY, parallelism=parallelism) as client:
        started = time.perf_counter()
        plan = await build_plan(manifest, client, PlanOptions())
        elapsed = time.perf_counter() - started
        return elapsed, client.calls, len(plan.changes)


async def transport_baseline(base_url: str, parallelism: int, calls: int) -> float:
    """Seconds the same client takes for `calls` independent one-page reads, no planning at all:
    what this machine's HTTP stack and load allow, to tell plan overhead from transport."""
    async with PlatformClient(base_url, KEY, parallelism=parallelism) as client:
        started = time.perf_counter()
        await asyncio.gather(
            *(client.call("projects.getProject", {"project": "proj-00"}) for _ in range(calls))
        )
        return time.perf_counter() - started


def measure(
    projects: int, apps: int, latency_ms: int, parallelism: int
) -> tuple[float, int, int, float, int]:
    with tempfile.TemporaryDirectory() as directory:
        state_file = Path(directory) / "state.json"
        per_project = apps // projects
        run_async(seed(state_file, projects, per_project))
        manifest_path = Path(directory) / "platform.yaml"
        manifest_path.write_text(manifest_text(projects, per_project))
        process, base_url = serve(state_file, latency_ms)
        try:
            run_async(plan_once(manifest_path, base_url, parallelism))  # warm-up
            elapsed, calls, changes = run_async(plan_once(manifest_path, base_url, parallelism))
            baseline = run_async(transport_baseline(base_url, parallelism, calls))
            manifest = load_manifest([manifest_path])
            rounds = run_async(plan_rounds(base_url, KEY, manifest, parallelism))
            return elapsed, calls, changes, baseline, rounds
        finally:
            process.terminate()
            process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=200)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--parallelism", type=int, default=10)
    args = parser.parse_args()

    small_projects = max(1, args.projects // 10)
    small_apps = max(small_projects, args.apps // 10)
    _, small_calls, _, _, _ = measure(small_projects, small_apps, args.latency_ms, args.parallelism)
    elapsed, calls, changes, baseline, rounds = measure(
        args.projects, args.apps, args.latency_ms, args.parallelism
    )
    bound = math.ceil(calls / args.parallelism) * args.latency_ms / 1000
    print(f"plan of {args.apps} apps in {args.projects} projects at {args.latency_ms} ms latency, "
          f"parallelism {args.parallelism}")  # fmt: skip
    print(f"  wall time     {elapsed:.2f} s ({changes} changes: expected 0)")
    print(f"  API calls     {calls} ({(calls - 2 * args.projects) / args.apps:.2f} per app "
          f"+ 2 per project)")  # fmt: skip
    print(
        f"  lower bound   {bound:.2f} s = ceil({calls} / {args.parallelism}) x {args.latency_ms} ms"
    )
    print(f"  ideal         {rounds} rounds of {args.latency_ms} ms (the calls' dependencies)")
    print(f"  ratio         {elapsed / bound:.2f} (target <= 1.5)")
    print(f"  transport     {baseline:.2f} s for {calls} independent getProject calls through the "
          f"same client ({baseline / bound:.2f} x the bound): the plan itself adds "
          f"{(elapsed - baseline) / baseline:+.0%}")  # fmt: skip
    print(f"  smaller plan  {small_apps} apps in {small_projects} project(s): "
          f"{(small_calls - 2 * small_projects) / small_apps:.2f} calls per app")  # fmt: skip


if __name__ == "__main__":
    main()
