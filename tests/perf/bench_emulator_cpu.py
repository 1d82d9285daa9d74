"""Benchmark: the emulator's CPU per call, its throughput for a light client, and its growth.

    .venv/bin/python tests/perf/bench_emulator_cpu.py [--latency-ms 20] [--sizes 1000,10000]
                                                      [--reads 4000] [--connections 10]
                                                      [--throughput-requests 6000]

Everything runs in separate server processes on loopback, driven by a light client written
here (raw asyncio HTTP/1.1 on keep-alive connections, requests built in advance, answers read
by their Content-Length), so that the client's own cost neither hides nor adds to the server's:

- CPU per call: the server process's CPU time (utime + stime from /proc/PID/stat, read before
  and after) divided by the calls it answered. The emulator (`reconciler emulator --latency-ms
  N`, as shipped) is measured on the reads a plan makes against a workspace as teams have it
  (projects of 20 image apps; both environments with runtime settings, regions in production, 2
  variables, 1 firewall policy, 1 custom domain), beside a bare uvicorn + Starlette handler that
  sleeps the same latency and answers a small JSON object, in the same run. Target: <= 0.4 ms.
- throughput: requests per second for the same reads with no added latency, emulator and bare
  handler. Target: >= 2,000 requests/s.
- growth: CPU per call at the largest size over CPU per call at the smallest, for the plan's
  reads and for seeding (the calls that create the workspace, measured over the last
  `--chunk` apps created before each size). Target: <= 1.2 (no superlinear term).

Ratios measured in one run are what compare; the machine's load (os.getloadavg) is printed
beside every figure, since other processes on the machine take CPU from the server and the
client alike.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
KEY = "bench-key"
APPS_PER_PROJECT = 20
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CPU_TARGET_MS = 0.4
THROUGHPUT_TARGET = 2000
GROWTH_TARGET = 1.2


def emulator_requests(base_url: str) -> list[dict[str, object]]:
    """Every request the emulator at `base_url` answered, in order (an admin call: a loopback
    Host, which the benchmarks' 127.0.0.1 base URLs are, and the key)."""
    admin = urllib.request.Request(
        f"{base_url}/_emulator/requests", headers={"Authorization": f"Bearer {KEY}"}
    )
    with urllib.request.urlopen(admin, timeout=60) as answer:
        found: list[dict[str, object]] = json.load(answer)["requests"]
    return found


def load() -> str:
    return "load " + " ".join(f"{value:.2f}" for value in os.getloadavg())


# ---- server processes -------------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of the process, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass
class Server:
    base_url: str
    process: subprocess.Popen[str]

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    def cpu(self) -> float:
        return process_cpu_seconds(self.process.pid)


@contextmanager
def server(command: list[str]) -> Iterator[Server]:
    """A server that prints its `http://127.0.0.1:PORT` address; stopped with SIGINT."""
    env = {**os.environ, "RECONCILER_API_KEY": KEY}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            found = re.search(r"http://127\.0\.0\.1:\d+", line)
            if found:
                # keep reading so a chatty server never blocks on a full pipe
                threading.Thread(target=process.stdout.read, daemon=True).start()
                yield Server(found.group(0), process)
                return
        raise SystemExit(f"{command[2:4]} exited before printing its address")
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def emulator_command(latency_ms: int, state: Path | None = None) -> list[str]:
    return [
        *(sys.executable, "-m", "reconciler", "emulator", "--port", "0"),
        *("--latency-ms", str(latency_ms)),
        *(("--state", str(state)) if state is not None else ()),
    ]


def bare_command(latency_ms: int) -> list[str]:
    return [sys.executable, __file__, "--serve-bare", "--latency-ms", str(latency_ms)]


def serve_bare(latency_ms: int) -> None:
    """The reference: uvicorn + Starlette, one route answering a small JSON object after the same
    added latency, with uvicorn's default protocol and loop choice (as the emulator gets)."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def answer(request: Request) -> Response:
        await request.body()
        if latency_ms:
            await asyncio.sleep(latency_ms / 1000)
        return JSONResponse({"data": {"id": "proj_0123456789abcdef", "slug": "bench"}})

    app = Starlette(routes=[Route("/v1/{operation}", answer, methods=["POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"bare handler on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    with __import__("contextlib").suppress(KeyboardInterrupt):
        uvicorn.Server(config).run(sockets=[sock])


# ---- the light client -------------------------------------------------------------------------


def request_bytes(operation: str, body: dict[str, Any]) -> bytes:
    content = json.dumps(body, separators=(",", ":")).encode()
    head = (
        f"POST /v1/{operation} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(content)}\r\n\r\n"
    )
    return head.encode() + content


class Connection:
    """One keep-alive HTTP/1.1 connection: send a request, read its answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        match = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
        if match is None:
            raise RuntimeError(f"an answer without Content-Length: {head!r}")
        return status, await self.reader.readexactly(int(match.group(1)))

    def close(self) -> None:
        self.writer.close()


async def run_requests(
    port: int, requests: list[bytes], connections: int
) -> tuple[float, Counter[int]]:
    """Send every request, `connections` at a time; (wall seconds, count by status)."""
    pool = [await Connection.open(port) for _ in range(connections)]
    statuses: Counter[int] = Counter()
    queue = iter(requests)

    async def worker(connection: Connection) -> None:
        for request in queue:
            status, _ = await connection.exchange(request)
            statuses[status] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in pool))
    elapsed = time.perf_counter() - started
    for connection in pool:
        connection.close()
    return elapsed, statuses


@dataclass
class Measure:
    calls: int
    cpu_seconds: float
    wall_seconds: float
    load: str

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu_seconds / self.calls * 1000

    @property
    def per_second(self) -> float:
        return self.calls / self.wall_seconds


async def measure(target: Server, requests: list[bytes], connections: int) -> Measure:
    before = target.cpu()
    wall, statuses = await run_requests(target.port, requests, connections)
    cpu = target.cpu() - before
    unexpected = {status: n for status, n in statuses.items() if status >= 300}
    if unexpected:
        raise SystemExit(f"unexpected statuses {unexpected} of {dict(statuses)}")
    return Measure(len(requests), cpu, wall, load())


# ---- the workspace ----------------------------------------------------------------------------


def project_slug(index: int) -> str:
    return f"bench-{index:04}"


def app_slug(index: int) -> str:
    return f"app-{index:03}"


VARIABLES = [{"key": "LOG_LEVEL", "value": "info"}, {"key": "REGION", "value": "fra"}]


def seeding_requests(project: int) -> list[bytes]:
    """The calls that create one project of `APPS_PER_PROJECT` apps, in dependency order."""
    slug = project_slug(project)
    calls = [request_bytes("projects.createProject", {"name": f"Bench {project}", "slug": slug})]
    for index in range(APPS_PER_PROJECT):
        app = app_slug(index)
        where = {"project": slug, "app": app}
        production = {**where, "environment": "production"}
        calls += [
            request_bytes(
                "apps.createApp",
                {"project": slug, "name": f"App {index}", "slug": app}
                | {"oci": {"image": f"ghcr.io/acme/bench-{index}:1.0"}},
            ),
            request_bytes(
                "environments.updateSettings",
                {**production, "port": 8080, "vCpus": 0.5, "memoryMib": 512}
                | {"regions": [{"name": "fra", "replicas": {"min": 1, "max": 3}}]},
            ),
            request_bytes(
                "environments.updateSettings",
                {**where, "environment": "preview", "vCpus": 0.25},
            ),
            request_bytes(
                "environments.setEnvironmentVariables",
                {**production, "variables": VARIABLES},
            ),
            request_bytes(
                "gateway.setPolicies",
                {
                    **production,
                    "policies": [
                        {
                            "name": "block-scanners",
                            "enabled": True,
                            "match": [{"remoteIp": {"in": ["192.0.2.0/24"]}}],
                            "firewall": {"action": "ACTION_DENY"},
                        }
                    ],
                },
            ),
            request_bytes(
                "domains.createDomain",
                {**production, "domain": f"{app}.{slug}.example.com"},
            ),
        ]
    return calls


async def seed(target: Server, projects: range, connections: int) -> Measure:
    """Create `projects`, one project per connection at a time (its calls in order)."""
    pool = [await Connection.open(target.port) for _ in range(connections)]
    statuses: Counter[int] = Counter()
    queue = iter(projects)
    calls = 0

    async def worker(connection: Connection) -> None:
        nonlocal calls
        for project in queue:
            for request in seeding_requests(project):
                status, body = await connection.exchange(request)
                statuses[status] += 1
                calls += 1
                if status >= 300:
                    raise SystemExit(f"seeding failed: {status} {body[:300]!r}")

    before = target.cpu()
    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in pool))
    wall = time.perf_counter() - started
    cpu = target.cpu() - before
    for connection in pool:
        connection.close()
    return Measure(calls, cpu, wall, load())


async def second_page_cursor(target: Server, project: int) -> str:
    connection = await Connection.open(target.port)
    body = {"project": project_slug(project), "limit": APPS_PER_PROJECT // 2}
    status, answer = await connection.exchange(request_bytes("apps.listApps", body))
    connection.close()
    if status != 200:
        raise SystemExit(f"apps.listApps answered {status}: {answer[:300]!r}")
    cursor: str = json.loads(answer)["pagination"]["cursor"]
    return cursor


async def plan_reads(target: Server, projects: int, count: int) -> list[bytes]:
    """`count` reads of the kinds a plan makes, spread over every project and app."""
    sample = [(i * 7919) % projects for i in range(min(projects, 64))]
    cursors = {p: await second_page_cursor(target, p) for p in sample}
    reads: list[bytes] = []
    for index in range(count):
        project = sample[index % len(sample)]
        slug = project_slug(project)
        where = {"project": slug, "app": app_slug((index // len(sample)) % APPS_PER_PROJECT)}
        production = {**where, "environment": "production"}
        half = APPS_PER_PROJECT // 2
        kind = [
            ("projects.getProject", {"project": slug}),
            ("apps.listApps", {"project": slug, "limit": half}),
            ("apps.listApps", {"project": slug, "limit": half, "cursor": cursors[project]}),
            ("environments.listEnvironments", where),
            ("environments.listEnvironmentVariables", production),
            ("gateway.listPolicies", production),
            ("domains.listDomains", {"project": slug}),
            ("domains.listDomains", production),
        ]
        operation, body = kind[index % len(kind)]
        reads.append(request_bytes(operation, body))
    return reads


# ---- the runs ---------------------------------------------------------------------------------


@dataclass
class SizeFigures:
    apps: int
    seeding: Measure
    reads: Measure
    seeded_apps: int  # the apps whose seeding `seeding` measured: the last ones before `apps`


async def growth_run(
    target: Server, sizes: list[int], chunk: int, reads: int, connections: int
) -> list[SizeFigures]:
    figures = []
    seeded = 0
    for size in sizes:
        projects, measured_from = size // APPS_PER_PROJECT, (size - chunk) // APPS_PER_PROJECT
        if measured_from > seeded:
            await seed(target, range(seeded, measured_from), max(connections, 16))
        measured = range(max(seeded, measured_from), projects)
        seeding = await seed(target, measured, connections)
        seeded = projects
        requests = await plan_reads(target, projects, reads)
        read = await measure(target, requests, connections)
        figures.append(SizeFigures(size, seeding, read, len(measured) * APPS_PER_PROJECT))
        print(
            f"  {size} apps: seeding {seeding.cpu_ms_per_call:.3f} ms CPU/call, reads "
            f"{figures[-1].reads.cpu_ms_per_call:.3f} ms CPU/call ({load()})",
            file=sys.stderr,
            flush=True,
        )
    return figures


async def bare_cpu(latency_ms: int, calls: int, connections: int) -> Measure:
    with server(bare_command(latency_ms)) as bare:
        requests = [request_bytes("projects.getProject", {"project": "bench"})] * calls
        await measure(bare, requests[: calls // 10], connections)  # warm up
        return await measure(bare, requests, connections)


async def throughput(requests_count: int, connections: int) -> tuple[Measure, Measure]:
    """(emulator, bare handler) with no added latency; the emulator holds 10 projects."""
    with server(emulator_command(0)) as emulator:
        await seed(emulator, range(10), connections)
        requests = await plan_reads(emulator, 10, requests_count)
        await measure(emulator, requests[: requests_count // 10], connections)  # warm up
        served = await measure(emulator, requests, connections)
    with server(bare_command(0)) as bare:
        plain = [request_bytes("projects.getProject", {"project": "bench"})] * requests_count
        await measure(bare, plain[: requests_count // 10], connections)
        reference = await measure(bare, plain, connections)
    return served, reference


def report(
    args: argparse.Namespace,
    bare: Measure,
    figures: list[SizeFigures],
    served: Measure,
    reference: Measure,
) -> list[str]:
    first, last = figures[0], figures[-1]
    reads = first.reads
    stack = [name for name in ("httptools", "uvloop") if importlib.util.find_spec(name)]
    rows = [
        f"server stack: uvicorn with {' and '.join(stack) or 'h11 and asyncio'} "
        "(uvicorn's choice when installed)",
        f"emulator CPU per call (plan reads, {first.apps} apps, --latency-ms {args.latency_ms}, "
        f"{args.connections} connections): {reads.cpu_ms_per_call:.3f} ms; bare uvicorn+starlette "
        f"handler {bare.cpu_ms_per_call:.3f} ms; ratio {reads.cpu_ms_per_call / bare.cpu_ms_per_call:.2f} "
        f"(target <= {CPU_TARGET_MS} ms) [{reads.load}; bare {bare.load}]",
        f"emulator throughput (light client, {args.connections} connections, no latency): "
        f"{served.per_second:.0f} requests/s; bare handler {reference.per_second:.0f} "
        f"requests/s; ratio {served.per_second / reference.per_second:.2f} "
        f"(target >= {THROUGHPUT_TARGET}) [{served.load}]",
    ]
    if len(figures) > 1:
        read_growth = last.reads.cpu_ms_per_call / first.reads.cpu_ms_per_call
        seed_growth = last.seeding.cpu_ms_per_call / first.seeding.cpu_ms_per_call
        rows += [
            f"emulator growth {last.apps}/{first.apps} apps: plan reads "
            f"{last.reads.cpu_ms_per_call:.3f}/{first.reads.cpu_ms_per_call:.3f} ms = "
            f"{read_growth:.2f}; seeding (last {last.seeded_apps} apps) "
            f"{last.seeding.cpu_ms_per_call:.3f}/{first.seeding.cpu_ms_per_call:.3f} ms = "
            f"{seed_growth:.2f} (target <= {GROWTH_TARGET}) [{last.reads.load}]",
        ]
    return rows


@dataclass
class Measured:
    """Everything `run` reports, as figures (run_all.py's table reads them)."""

    bare: Measure
    figures: list[SizeFigures]
    served: Measure
    reference: Measure


async def measure_all(args: argparse.Namespace) -> Measured:
    sizes = [int(size) for size in args.sizes.split(",")]
    bare = await bare_cpu(args.latency_ms, args.reads, args.connections)
    with server(emulator_command(args.latency_ms)) as emulator:
        figures = await growth_run(emulator, sizes, args.chunk, args.reads, args.connections)
    served, reference = await throughput(args.throughput_requests, args.connections)
    return Measured(bare, figures, served, reference)


async def run(args: argparse.Namespace) -> list[str]:
    if args.state:
        return await persisted_growth(args, [int(size) for size in args.sizes.split(",")])
    found = await measure_all(args)
    return report(args, found.bare, found.figures, found.served, found.reference)


async def persisted_growth(args: argparse.Namespace, sizes: list[int]) -> list[str]:
    """Seeding with `--state FILE`: every write saves the whole state (atomically)."""
    with tempfile.TemporaryDirectory() as directory:
        command = emulator_command(args.latency_ms, Path(directory) / "state.json")
        with server(command) as emulator:
            figures = await growth_run(emulator, sizes, args.chunk, 200, args.connections)
    first, last = figures[0].seeding, figures[-1].seeding
    return [
        f"emulator --state: seeding CPU per call {first.cpu_ms_per_call:.3f} ms at "
        f"{figures[0].apps} apps, {last.cpu_ms_per_call:.3f} ms at {figures[-1].apps} apps "
        f"(ratio {last.cpu_ms_per_call / first.cpu_ms_per_call:.2f}); wall per call "
        f"{first.wall_seconds / first.calls * 1000:.2f} / {last.wall_seconds / last.calls * 1000:.2f}"
        f" ms with {args.connections} connections [{last.load}]"
    ]


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--chunk", type=int, default=1000, help="apps seeded per measure")
    parser.add_argument("--reads", type=int, default=4000)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--throughput-requests", type=int, default=6000)
    parser.add_argument(
        "--state", action="store_true", help="measure seeding with a state file instead"
    )
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def rows(argv: list[str]) -> list[str]:
    """The report's lines, for run_all.py's table."""
    return asyncio.run(run(arguments(argv)))


def measured(argv: list[str]) -> tuple[Measured, list[str]]:
    """The figures and the report's lines, for run_all.py's table."""
    args = arguments(argv)
    found = asyncio.run(measure_all(args))
    return found, report(args, found.bare, found.figures, found.served, found.reference)


def main() -> int:
    args = arguments()
    if args.serve_bare:
        serve_bare(args.latency_ms)
        return 0
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {load()}")
    print("\n".join(asyncio.run(run(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
