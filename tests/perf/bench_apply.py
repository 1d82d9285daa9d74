"""Benchmark: apply 200 apps from nothing against the emulator at 20 ms latency.

    .venv/bin/python tests/perf/bench_apply.py [--apps 200] [--projects 10] [--latency-ms 20]
                                               [--parallelism 10]

Runs a real uvicorn emulator on loopback (`reconciler emulator`, in its own process so
it does not share this one's CPU and GIL), plans the manifest (timed separately),
then applies it and prints the wall time, the calls sent, the dependency depth of
the call graph, and the ratio of wall time to the lower bound

    depth x latency + ceil(calls / parallelism) x latency

and to the ideal schedule: the time a client with no CPU cost needs for the same calls in
the call graph's order, `parallelism` at a time (`schedule.apply_rounds` x latency). Then
it checks convergence: a second plan must be empty.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import bench_emulator_cpu  # noqa: E402
from schedule import apply_rounds  # noqa: E402

from reconciler.apply import ApplyOptions, CallGraph, check_safety, execute  # noqa: E402
from reconciler.cli.interrupts import run_async  # noqa: E402
from reconciler.manifest.validate import load_manifest  # noqa: E402
from reconciler.plan.changes import Plan  # noqa: E402
from reconciler.plan.planner import PlanOptions, build_plan  # noqa: E402
from reconciler.plan.secrets import resolve_ref  # noqa: E402
from reconciler.platform.client import PlatformClient  # noqa: E402


def manifest_text(apps: int, projects: int) -> str:
    """`apps` apps spread over `projects` projects, each with settings, variables, a policy list
    and a domain in production, and settings in preview."""
    lines = ["version: 1", "projects:"]
    per_project = math.ceil(apps / projects)
    for p in range(projects):
        lines += [f"  bench-{p:02}:", f"    name: Bench {p}", "    apps:"]
        for a in range(min(per_project, apps - p * per_project)):
            lines += [
                f"      app-{a:03}:",
                f"        name: App {a}",
                f"        oci: {{image: ghcr.io/acme/bench-{a}:1.0}}",
                "        environments:",
                "          production:",
                "            runtime: {port: 8080, vCpus: 0.5, memoryMib: 512}",
                "            regions: [{name: fra, replicas: {min: 1, max: 3}}]",
                "            variables: {LOG_LEVEL: info, REGION: fra, "
                f"APP_INDEX: '{a}', PROJECT: bench-{p:02}}}",
                "            policies:",
                "              - name: block-scanners",
                "                enabled: true",
                "                match: [{remoteIp: {in: ['192.0.2.0/24']}}]",
                "                firewall: {action: ACTION_DENY}",
                "              - {name: log, enabled: true, logging: {requestHeaders: true}}",
                f"            domains: [app-{a}.bench-{p}.example.com]",
                "          preview:",
                "            runtime: {vCpus: 0.25}",
            ]
    return "\n".join(lines) + "\n"


BASELINE_CALLS = 200


async def transport_baseline(client: PlatformClient, parallelism: int, latency: float) -> float:
    """How close plain concurrent reads get to their own lower bound: the floor for apply."""
    started = time.perf_counter()
    await asyncio.gather(
        *(client.call("projects.listProjects", {"limit": 1}) for _ in range(BASELINE_CALLS))
    )
    return (time.perf_counter() - started) / (math.ceil(BASELINE_CALLS / parallelism) * latency)


class _LatencyOnly:
    """A platform that answers every call after `latency`, at most `parallelism` at a time."""

    def __init__(self, parallelism: int, latency: float) -> None:
        self.slots = asyncio.Semaphore(parallelism)
        self.latency = latency

    async def call(self, operation: str, body: Any) -> Any:
        async with self.slots:
            await asyncio.sleep(self.latency)
        return {"dnsRecords": []} if operation == "domains.createDomain" else {}


async def executor_alone(plan: Plan, parallelism: int, latency: float) -> float:
    """Wall time of the same apply with no HTTP or emulator cost: the executor's own overhead."""
    started = time.perf_counter()
    await execute(
        plan,
        _LatencyOnly(parallelism, latency),
        resolve=resolve_ref,
        options=ApplyOptions(parallelism=parallelism),
    )
    return time.perf_counter() - started


async def bench(args: argparse.Namespace, base_url: str, api_key: str, manifest_path: Path) -> int:
    manifest = load_manifest([manifest_path])
    latency = args.latency_ms / 1000
    async with PlatformClient(base_url, api_key, parallelism=args.parallelism) as client:
        baseline = await transport_baseline(client, args.parallelism, latency)
        client.calls = 0
        started = time.perf_counter()
        plan = await build_plan(manifest, client, PlanOptions(max_deletes=0))
        plan_time, plan_calls = time.perf_counter() - started, client.calls
        check_safety(plan, max_deletes=0, allow_replace=False, resolve=resolve_ref)
        depth = CallGraph(plan).depth()

        client.calls = 0
        started = time.perf_counter()
        result = await execute(
            plan, client, resolve=resolve_ref, options=ApplyOptions(parallelism=args.parallelism)
        )
        wall, calls = time.perf_counter() - started, client.calls

        again = await build_plan(manifest, client, PlanOptions())
    alone = await executor_alone(plan, args.parallelism, latency)
    bound = depth * latency + math.ceil(calls / args.parallelism) * latency
    rounds = apply_rounds(plan, args.parallelism)
    added, changed, destroyed = result.counts()
    print(
        f"apps: {args.apps} in {args.projects} projects, latency {args.latency_ms} ms, "
        f"parallelism {args.parallelism}"
    )
    print(f"plan:  {plan_time:.2f} s, {plan_calls} calls, {len(plan.changes)} changes")
    print(f"apply: {wall:.2f} s, {calls} calls, dependency depth {depth}")
    print(
        f"lower bound: {depth} x {args.latency_ms} ms + ceil({calls}/{args.parallelism}) x "
        f"{args.latency_ms} ms = {bound:.2f} s"
    )
    print(f"ratio wall / lower bound: {wall / bound:.2f}")
    ideal = rounds * latency
    print(f"ideal schedule: {rounds} rounds of {args.latency_ms} ms = {ideal:.2f} s, "
          f"ratio {wall / ideal:.2f}")  # fmt: skip
    print(
        f"executor alone (same plan, in-memory platform with the same latency): {alone:.2f} s, "
        f"ratio {alone / bound:.2f}"
    )
    print(
        f"transport baseline: {BASELINE_CALLS} independent reads take {baseline:.2f} x their "
        "lower bound on this machine now (client + emulator + load; apply cannot beat it)"
    )
    print(
        f"result: complete={result.complete}, {added} added, {changed} changed, "
        f"{destroyed} destroyed; plan after apply has {len(again.changes)} changes"
    )
    return 0 if result.complete and not again.changes else 1


API_KEY = bench_emulator_cpu.KEY


@contextmanager
def emulator_process(latency_ms: int) -> Iterator[str]:
    """`reconciler emulator` on a free loopback port; yields its base URL."""
    with bench_emulator_cpu.server(bench_emulator_cpu.emulator_command(latency_ms)) as emulator:
        yield emulator.base_url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=200)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--parallelism", type=int, default=10)
    args = parser.parse_args()
    with emulator_process(args.latency_ms) as base_url, tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "bench.yaml"
        path.write_text(manifest_text(args.apps, args.projects))
        return run_async(bench(args, base_url, API_KEY, path))


if __name__ == "__main__":
    sys.exit(main())
