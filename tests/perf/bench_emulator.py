"""Benchmark: requests per second the emulator serves to a concurrent client on loopback.

Run: `python tests/perf/bench_emulator.py [--requests N] [--concurrency C]`. Starts
`reconciler emulator` (uvicorn) on 127.0.0.1 with a free port in a child process, seeds a project
with apps, then fires a bounded mix of reads (80%) and writes (20%) from a concurrent
httpx.AsyncClient and prints the throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
KEY = "bench-key"


def serve() -> tuple[str, subprocess.Popen[str]]:
    """`reconciler emulator` in its own process, so the client does not share its GIL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "emulator", "--port", "0", "--step-ms", "50"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "RECONCILER_API_KEY": KEY},
        cwd=ROOT,
    )
    for line in process.stdout:
        match = re.search(r"http://[\d.]+:\d+", line)
        if match:
            return match.group(0), process
    raise SystemExit("the emulator did not start")


def request_mix(index: int) -> tuple[str, dict]:
    """Deterministic mix: 8 reads for every 2 writes."""
    target = {"project": "bench", "app": f"app-{index % 5}", "environment": "production"}
    kind = index % 10
    if kind == 0:
        return "environments.setEnvironmentVariables", {
            **target,
            "variables": [{"key": f"K{index % 20}", "value": str(index)}],
        }
    if kind == 1:
        return "deployments.createDeployment", {**target, "git": {}}
    return [
        ("projects.getProject", {"project": "bench"}),
        ("apps.listApps", {"project": "bench"}),
        ("apps.getApp", {"project": "bench", "app": target["app"]}),
        ("environments.getEnvironment", target),
        ("environments.listEnvironmentVariables", target),
        ("gateway.listPolicies", target),
        ("deployments.listDeployments", {"project": "bench", "limit": 20}),
        ("domains.listDomains", {"project": "bench"}),
    ][kind - 2]


async def run(base_url: str, total: int, concurrency: int) -> tuple[float, dict[int, int]]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, limits=limits) as client:
        await client.post("/v1/projects.createProject", json={"name": "Bench", "slug": "bench"})
        for index in range(5):
            body = {
                "project": "bench",
                "name": "A",
                "slug": f"app-{index}",
                "git": {"repository": "a/b"},
            }
            await client.post("/v1/apps.createApp", json=body)
        statuses: dict[int, int] = {}
        queue = iter(range(total))

        async def worker() -> None:
            for index in queue:
                operation, body = request_mix(index)
                response = await client.post(f"/v1/{operation}", json=body)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - started, statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    base_url, process = serve()
    try:
        elapsed, statuses = asyncio.run(run(base_url, args.requests, args.concurrency))
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(10)
    print(
        f"emulator: {args.requests} requests, concurrency {args.concurrency}, "
        f"{elapsed:.2f} s, {args.requests / elapsed:.0f} requests/s, statuses {statuses}"
    )


if __name__ == "__main__":
    main()
