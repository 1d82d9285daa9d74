"""Every benchmark in one go: one table of the performance issue's goals, met or not.

    .venv/bin/python tests/perf/run_all.py [--sizes 200,1000] [--latency-ms 20]
                                           [--parallelism 10] [--validate-apps 2000]
                                           [--growth-sizes 1000,10000]
                                           [--emulator-requests 3000] [--transport httpx]

For each size, in a fresh child process (so its peak memory is its own): a `reconciler
emulator --latency-ms N` serves on loopback from its own process (uvicorn), the reconciler
plans the issue's workspace (`tests/fixtures/manifests.team_workspace`: projects of 20 image
apps, both environments with runtime settings, a region, 2 variables, 1 firewall policy and 1
custom domain) from nothing, applies it, then plans it again against the full live state
(every read happens, no change is found), in-process (the plan phase) and as the command
`reconciler plan` in its own process (the whole command: imports, manifest load, plan; the
median of 3 runs after an untimed one, with the package's bytecode compiled as installed).

The goals table (each figure with its goal, met or not):

- calls per app of the converged plan (<= 5.2);
- the whole command's wall time and the plan phase's over the lower bound
  `ceil(calls / parallelism) x latency` (<= 1.3 and <= 1.15), at each size; peak memory;
- the client's CPU per call with httpx's transport (`bench_client`, <= 1.0 ms), the emulator's
  CPU per call and its requests/s for a light client (`bench_emulator_cpu`, <= 0.4 ms,
  >= 2,000/s);
- validate of a 2,000-app manifest, CPU over `yaml.load(CSafeLoader)` of the same file
  (`bench_validate`, <= 1.5);
- growth between the `--growth-sizes`: plan CPU per app (the planner alone, every read
  answered at once: `bench_plan_cpu`), validate CPU per app, the emulator's CPU per
  plan read, and the CPU per variable of ordering apply's calls when one environment holds
  that many variables (`bench_call_graph`) (<= 1.2 each).

Below it, the detail: per size and stage, calls, wall, the bound and the ideal schedule (the
time a client with no CPU cost needs for the same calls in their dependency order:
`schedule.py`), and each benchmark's own lines. Ratios, not absolute times, compare across
machines; the machine and its load are printed before and after. About 10 minutes on 2 CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import io
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import h11
import httpx

ROOT = Path(__file__).resolve().parents[2]
PERF = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(PERF))

import bench_apply  # noqa: E402
import bench_call_graph  # noqa: E402
import bench_client  # noqa: E402
import bench_emulator_cpu  # noqa: E402
import bench_parallelism  # noqa: E402
import bench_plan_cpu  # noqa: E402
import bench_rate_limit  # noqa: E402
import bench_validate  # noqa: E402
from schedule import apply_rounds, plan_rounds  # noqa: E402

from reconciler.apply import ApplyOptions, CallGraph, check_safety, execute  # noqa: E402
from reconciler.cli.interrupts import run_async  # noqa: E402
from reconciler.manifest.validate import load_manifest  # noqa: E402
from reconciler.plan.planner import PlanOptions, build_plan  # noqa: E402
from reconciler.plan.secrets import resolve_ref  # noqa: E402
from reconciler.platform.client import PlatformClient  # noqa: E402
from tests.fixtures.manifests import team_workspace  # noqa: E402

APPS_PER_PROJECT = 20


class StreamsTransport(httpx.AsyncBaseTransport):
    """A lean HTTP/1.1 transport on asyncio streams and h11, for `--transport streams`.

    The measurement that motivates it: on this project's 2-core machines, httpx's default
    transport (httpcore over anyio) costs 1.1-1.9 ms of client CPU per request, against 0.13 ms
    for a bare asyncio HTTP/1.1 exchange, while the emulator spends 0.4-0.7 ms; the client's
    HTTP stack, not the platform or the engine, is what keeps plan and apply above 1.5x their
    lower bound. Keep-alive connections are pooled without a bound of their own: the client's
    semaphore (`--parallelism`) already bounds requests in flight. Transport failures are
    raised as httpx's exceptions, so `PlatformClient`'s retry and ambiguity rules apply as is.
    A candidate for reconciler/platform/ (see the perf notes), kept here as a prototype.
    """

    def __init__(self) -> None:
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, h11.Connection]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        reader, writer, connection = await self._connection(request.url, timeouts.get("connect"))
        try:
            response = await self._exchange(request, reader, writer, connection, timeouts)
        except BaseException:
            writer.close()
            raise
        return response

    async def _connection(
        self, url: httpx.URL, connect_timeout: float | None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, h11.Connection]:
        while self._idle:
            reader, writer, connection = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                connection.start_next_cycle()
                return reader, writer, connection
            writer.close()
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(url.host, port, ssl=url.scheme == "https"),
                connect_timeout,
            )
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        return reader, writer, h11.Connection(h11.CLIENT)

    async def _exchange(
        self,
        request: httpx.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        connection: h11.Connection,
        timeouts: dict[str, float | None],
    ) -> httpx.Response:
        body = await request.aread()
        target = request.url.raw_path
        headers = list(request.headers.raw)
        data = connection.send(h11.Request(method=request.method, target=target, headers=headers))
        data += connection.send(h11.Data(data=body)) + connection.send(h11.EndOfMessage())
        writer.write(data)
        try:
            event = await self._next(connection, reader, timeouts.get("read"))
            if not isinstance(event, h11.Response):
                raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__}")
            chunks = []
            while True:
                part = await self._next(connection, reader, timeouts.get("read"))
                if isinstance(part, h11.Data):
                    chunks.append(part.data)
                elif isinstance(part, h11.EndOfMessage):
                    break
        except TimeoutError as exc:
            raise httpx.ReadTimeout("no answer in time") from exc
        except (OSError, h11.ProtocolError) as exc:
            raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__) from exc
        if connection.our_state is h11.DONE and connection.their_state is h11.DONE:
            self._idle.append((reader, writer, connection))
        else:
            writer.close()
        return httpx.Response(
            event.status_code, headers=event.headers, content=b"".join(chunks), request=request
        )

    @staticmethod
    async def _next(
        connection: h11.Connection, reader: asyncio.StreamReader, timeout: float | None
    ) -> object:
        while True:
            event = connection.next_event()
            if event is not h11.NEED_DATA:
                if isinstance(event, h11.ConnectionClosed):
                    raise httpx.RemoteProtocolError("the server closed the connection")
                return event
            connection.receive_data(await asyncio.wait_for(reader.read(65536), timeout))

    async def aclose(self) -> None:
        for _reader, writer, _connection in self._idle:
            writer.close()
        self._idle.clear()


@dataclass
class SizeResult:
    apps: int
    projects: int
    plan_seconds: float
    plan_calls: int
    plan_bound: float
    plan_ideal: float
    apply_seconds: float
    apply_calls: int
    depth: int
    apply_bound: float
    apply_ideal: float
    first_plan_seconds: float
    load_seconds: float  # load_manifest of the workspace's file, its modules already imported
    first_plan_calls: int
    converged: bool
    peak_mib: float
    command_seconds: float = math.nan  # `reconciler plan`, process start to exit

    @property
    def command_ratio(self) -> float:
        return self.command_seconds / self.plan_bound

    @property
    def plan_ratio(self) -> float:
        return self.plan_seconds / self.plan_bound

    @property
    def apply_ratio(self) -> float:
        return self.apply_seconds / self.apply_bound

    @property
    def plan_ideal_ratio(self) -> float:
        return self.plan_seconds / self.plan_ideal

    @property
    def apply_ideal_ratio(self) -> float:
        return self.apply_seconds / self.apply_ideal


def peak_mib() -> float:
    """Peak resident memory of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def make_transport(name: str) -> httpx.AsyncBaseTransport | None:
    """`httpx`: the client's default transport (what users run); `streams`: the prototype."""
    return StreamsTransport() if name == "streams" else None


async def measure_size(
    base_url: str,
    manifest_path: Path,
    apps: int,
    projects: int,
    latency_ms: int,
    parallelism: int,
    transport: str = "httpx",
) -> SizeResult:
    """Plan from nothing, apply, plan again (converged); time each against its lower bound."""
    latency = latency_ms / 1000
    started = time.perf_counter()
    manifest = load_manifest([manifest_path])
    load_seconds = time.perf_counter() - started
    key = bench_apply.API_KEY
    async with PlatformClient(
        base_url, key, parallelism=parallelism, transport=make_transport(transport)
    ) as client:
        started = time.perf_counter()
        plan = await build_plan(manifest, client, PlanOptions(max_deletes=0))
        first_plan_seconds, first_plan_calls = time.perf_counter() - started, client.calls
        check_safety(plan, max_deletes=0, allow_replace=False, resolve=resolve_ref)
        depth = CallGraph(plan).depth()

        client.calls = 0
        started = time.perf_counter()
        result = await execute(
            plan, client, resolve=resolve_ref, options=ApplyOptions(parallelism=parallelism)
        )
        apply_seconds, apply_calls = time.perf_counter() - started, client.calls

        client.calls = 0
        started = time.perf_counter()
        again = await build_plan(manifest, client, PlanOptions())
        plan_seconds, plan_calls = time.perf_counter() - started, client.calls
    ideal_plan = await plan_rounds(base_url, key, manifest, parallelism)
    ideal_apply = apply_rounds(plan, parallelism)
    return SizeResult(
        apps=apps,
        projects=projects,
        plan_seconds=plan_seconds,
        plan_calls=plan_calls,
        plan_bound=math.ceil(plan_calls / parallelism) * latency,
        plan_ideal=ideal_plan * latency,
        apply_seconds=apply_seconds,
        apply_calls=apply_calls,
        depth=depth,
        apply_bound=(depth + math.ceil(apply_calls / parallelism)) * latency,
        apply_ideal=ideal_apply * latency,
        first_plan_seconds=first_plan_seconds,
        first_plan_calls=first_plan_calls,
        load_seconds=load_seconds,
        converged=result.complete and not again.changes,
        peak_mib=peak_mib(),
    )


def run_size(apps: int, latency_ms: int, parallelism: int, transport: str) -> SizeResult:
    """One size, in this process, against a fresh emulator process."""
    projects = max(1, math.ceil(apps / APPS_PER_PROJECT))
    with (
        bench_apply.emulator_process(latency_ms) as base_url,
        tempfile.TemporaryDirectory() as directory,
    ):
        path = Path(directory) / "bench.yaml"
        path.write_text(team_workspace(apps, projects), encoding="utf-8")
        result = run_async(
            measure_size(base_url, path, apps, projects, latency_ms, parallelism, transport)
        )
        result.command_seconds = time_command(base_url, path, parallelism)
        return result


COMMAND_RUNS = 3


def time_command(base_url: str, manifest: Path, parallelism: int) -> float:
    """Wall seconds of `reconciler plan` in its own process, from its start to its exit: the
    median of COMMAND_RUNS runs after one untimed run.

    The package's bytecode is compiled first, as an installed copy has it (pip compiles it at
    install): where PYTHONDONTWRITEBYTECODE is set, an edited module would otherwise be
    compiled again by every run, a cost no user pays on each command."""
    compileall.compile_dir(ROOT / "reconciler", quiet=1)
    command = [sys.executable, "-m", "reconciler", "plan", "-f", str(manifest),
               "--base-url", base_url, "--parallelism", str(parallelism)]  # fmt: skip
    env = {**os.environ, "RECONCILER_API_KEY": bench_apply.API_KEY}
    times = []
    for _ in range(COMMAND_RUNS + 1):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        times.append(time.perf_counter() - started)
        if done.returncode != 0 or "No changes" not in done.stdout:
            failed = f"reconciler plan failed ({done.returncode}):\n{done.stderr[-2000:]}{done.stdout[-3000:]}"
            raise RuntimeError(failed)
    return statistics.median(times[1:])


def run_size_in_child(apps: int, latency_ms: int, parallelism: int, transport: str) -> SizeResult:
    """`run_size` in a child interpreter, so each size's peak memory is measured alone."""
    command = [sys.executable, __file__, "--one", str(apps), "--latency-ms", str(latency_ms),
               "--parallelism", str(parallelism), "--transport", transport]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark of {apps} apps failed:\n{done.stderr[-4000:]}")
    return SizeResult(**json.loads(done.stdout.strip().splitlines()[-1]))


def run_validate(apps: int) -> tuple[float, float, float, float]:
    """(seconds, CPU seconds, and the CPU's ratios to yaml.load(CSafeLoader) plain and with the
    collector paused) of load + validate of a generated `apps`-app manifest.

    Both come from `bench_validate.measure` (its CPU figure is printed, not returned, and it
    also times the stages separately afterwards, which must not count here).
    """
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        seconds = bench_validate.measure(apps, max(1, apps // 100))
    found = re.search(r"([\d.]+) s of CPU", printed.getvalue())
    ratios = [float(r) for r in re.findall(r"ratio ([\d.]+)", printed.getvalue())] or [math.nan] * 2
    return seconds, float(found.group(1)) if found else math.nan, ratios[0], ratios[1]


def run_plan_growth(sizes: list[int]) -> float:
    """Plan CPU per app at the largest size over the smallest (the planner alone)."""
    per_app = [bench_plan_cpu.measure(apps)[0] / apps for apps in sizes]
    return per_app[-1] / per_app[0]


def run_validate_growth(sizes: list[int]) -> float:
    with contextlib.redirect_stdout(io.StringIO()):
        return bench_validate.measure_growth(sizes[0], sizes[-1])


def machine() -> str:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return (
        f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, load average {load}"
    )


@dataclass
class Goal:
    figure: str
    value: float
    target: float | None  # None: printed, no goal
    at_most: bool = True
    unit: str = ""

    def row(self) -> str:
        shown = f"{self.value:.2f}{self.unit}"
        if self.target is None:
            return f"| {self.figure} | {shown} | (printed) | |"
        sign = "<=" if self.at_most else ">="
        met = self.value <= self.target if self.at_most else self.value >= self.target
        goal = f"{sign} {self.target:g}{self.unit}"
        return f"| {self.figure} | {shown} | {goal} | {'met' if met else '**not met**'} |"

    @property
    def met(self) -> bool:
        if self.target is None:
            return True
        return self.value <= self.target if self.at_most else self.value >= self.target


PARALLELISMS = [10, 32, 64, 128]


def goals(
    results: list[SizeResult],
    validate: tuple[int, float, float, float, float],
    client: dict[int, bench_client.Figure],
    emulator: bench_emulator_cpu.Measured,
    growth: tuple[list[int], float, float, float],
    commands: bench_parallelism.Results,
    limited: list[bench_rate_limit.Run],
) -> list[Goal]:
    found: list[Goal] = []
    at_ten = client[10].client_ms
    for parallelism, figure in client.items():
        found.append(
            Goal(
                f"client CPU per call, parallelism {parallelism}", figure.client_ms, 0.5, unit=" ms"
            )
        )
    for parallelism, figure in client.items():
        if parallelism != 10:
            found.append(
                Goal(f"client CPU per call, {parallelism} / 10", figure.client_ms / at_ten, 1.2)
            )
    for parallelism, row in commands.by_parallelism.items():
        found.append(
            Goal(
                f"`reconciler plan` 200 apps, 20 ms, parallelism {parallelism} / (bound + "
                f"start-up {row.fixed:.2f} s)",
                row.ratio,
                1.3,
            )
        )
    for run in limited:
        what = f"`reconciler {run.command}` 200 apps at --rate-limit {run.rate:g}"
        found += [
            Goal(f"{what}: exit code", run.exit_code, 0),
            Goal(f"{what}: wall / (calls / R)", run.wall_ratio, 1.25),
            Goal(f"{what}: share answered 429", run.limited_share * 100, 5, unit=" %"),
        ]
    far = commands.far
    small, large = commands.scale_small, commands.scale_large
    per_app_growth = (large.measured.cpu / 10_000) / (small.measured.cpu / 1_000)
    found += [
        Goal(
            f"`reconciler plan` 1,000 apps, 100 ms, default parallelism {far.parallelism} / "
            "(bound + start-up)",
            far.ratio,
            1.3,
        ),
        *(
            goal
            for parallelism, empty in commands.apply_empty.items()
            for goal in (
                Goal(
                    f"apply from empty, 1,000 apps, 5 ms, parallelism {parallelism}: getDomain "
                    "answered 404",
                    empty.measured.not_found_lookups,
                    0,
                ),
                Goal(
                    f"apply from empty, 1,000 apps, 5 ms, parallelism {parallelism} / (bound + "
                    "start-up)",
                    empty.ratio,
                    1.5,
                ),
            )
        ),
        Goal("`reconciler plan` 10,000 apps, 5 ms: wall", large.measured.seconds, 40, unit=" s"),
        Goal(
            "`reconciler plan` 10,000 apps: peak memory", large.measured.peak_mib, None, unit=" MiB"
        ),
        Goal("`reconciler plan` CPU per app, 10,000 / 1,000 apps", per_app_growth, 1.2),
    ]
    for r in results:
        found += [
            Goal(f"calls per app, converged plan, {r.apps} apps", r.plan_calls / r.apps, 5.2),
            Goal(f"peak memory of the reconciler, {r.apps} apps", r.peak_mib, None, unit=" MiB"),
        ]
    reads = emulator.figures[0].reads
    apps, _seconds, _cpu, to_parser, _to_paused = validate
    sizes, plan_growth, validate_growth, call_graph_growth = growth
    first, last = emulator.figures[0], emulator.figures[-1]
    emulator_growth = last.reads.cpu_ms_per_call / reads.cpu_ms_per_call
    seeding_growth = last.seeding.cpu_ms_per_call / first.seeding.cpu_ms_per_call
    found += [
        Goal("emulator CPU per call (plan reads)", reads.cpu_ms_per_call, 0.4, unit=" ms"),
        Goal("emulator requests/s, light client", emulator.served.per_second, 2000, False),
        Goal(f"validate {apps} apps, CPU / yaml.load(CSafeLoader)", to_parser, 1.5),
        Goal(f"growth {sizes[-1]}/{sizes[0]} apps: plan CPU per app", plan_growth, 1.2),
        Goal(f"growth {sizes[-1]}/{sizes[0]} apps: validate CPU per app", validate_growth, 1.2),
        Goal(
            f"growth {sizes[-1]}/{sizes[0]} variables of one environment: apply's call order "
            "CPU per variable",
            call_graph_growth,
            1.2,
        ),
        Goal(
            f"growth {last.apps}/{first.apps} apps: emulator CPU per plan read",
            emulator_growth,
            1.2,
        ),
        Goal(
            f"growth {last.apps}/{first.apps} apps: emulator CPU per seeding call",
            seeding_growth,
            1.2,
        ),
    ]
    return found


def goal_table(found: list[Goal]) -> list[str]:
    return ["| figure | measured | goal | |", "|---|---:|---:|---|", *(g.row() for g in found)]


def detail_table(results: list[SizeResult], latency_ms: int, parallelism: int) -> list[str]:
    rows = [
        f"Latency {latency_ms} ms per call, parallelism {parallelism}; "
        "emulator in its own process (uvicorn).",
        "",
        "| apps | stage | calls | calls/app | wall s | lower bound s | ratio | ideal s | ratio to "
        "ideal | peak MiB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| {r.apps} | plan (converged) | {r.plan_calls} | {r.plan_calls / r.apps:.2f} | "
            f"{r.plan_seconds:.2f} | {r.plan_bound:.2f} | {r.plan_ratio:.2f} | "
            f"{r.plan_ideal:.2f} | {r.plan_ideal_ratio:.2f} | {r.peak_mib:.0f} |"
        )
        rows.append(
            f"| {r.apps} | `reconciler plan` (whole command) | {r.plan_calls} | "
            f"{r.plan_calls / r.apps:.2f} | {r.command_seconds:.2f} | {r.plan_bound:.2f} | "
            f"{r.command_ratio:.2f} | | | |"
        )
        rows.append(
            f"| {r.apps} | apply (from nothing, depth {r.depth}) | {r.apply_calls} | "
            f"{r.apply_calls / r.apps:.2f} | {r.apply_seconds:.2f} | {r.apply_bound:.2f} | "
            f"{r.apply_ratio:.2f} | {r.apply_ideal:.2f} | {r.apply_ideal_ratio:.2f} | "
            f"{r.peak_mib:.0f} |"
        )
    rows.append("")
    for r in results:
        beyond, outside = r.command_seconds - r.plan_bound, r.command_seconds - r.plan_seconds
        rows.append(
            f"{r.apps} apps: the whole command takes {beyond:.2f} s more than its bound: "
            f"{r.plan_seconds - r.plan_bound:.2f} s in the plan phase, {outside:.2f} s outside "
            f"it, of which loading the manifest {r.load_seconds:.2f} s (its modules already "
            "imported); the rest is the interpreter's start, imports and exit."
        )
    for r in results:
        if not r.converged:
            rows.append(f"NOT CONVERGED at {r.apps} apps: the plan after apply was not empty")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,1000")
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--parallelism", type=int, default=10)
    parser.add_argument("--validate-apps", type=int, default=2000)
    parser.add_argument(
        "--growth-sizes",
        default="1000,10000",
        help="workspace sizes (apps) of the growth figures: plan, validate and the emulator",
    )
    parser.add_argument("--client-calls", type=int, default=2000)
    parser.add_argument(
        "--transport",
        choices=("httpx", "streams"),
        default="httpx",
        help="the client's HTTP transport: httpx's default (shipped) or the streams prototype",
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode: one size
    args = parser.parse_args()
    if args.one is not None:
        result = run_size(args.one, args.latency_ms, args.parallelism, args.transport)
        print(json.dumps(asdict(result)))
        return 0

    started = time.perf_counter()
    print(f"machine: {machine()}", flush=True)
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        results.append(run_size_in_child(size, args.latency_ms, args.parallelism, args.transport))
        print(f"  {size} apps measured", file=sys.stderr, flush=True)
    validate = (args.validate_apps, *run_validate(args.validate_apps))
    sizes = [int(s) for s in args.growth_sizes.split(",")]
    growth = (
        sizes,
        run_plan_growth(sizes),
        run_validate_growth(sizes),
        bench_call_graph.growth(sizes),
    )
    print("  validate and growth measured", file=sys.stderr, flush=True)
    client_argv = ["--latency-ms", str(args.latency_ms), "--calls", str(args.client_calls)]
    per_parallelism = bench_client.per_parallelism(args.latency_ms, args.client_calls, PARALLELISMS)
    clients = bench_client.figures(client_argv)
    print("  client CPU measured", file=sys.stderr, flush=True)
    emulator, emulator_rows = bench_emulator_cpu.measured(
        ["--latency-ms", str(args.latency_ms), "--sizes", args.growth_sizes]
    )
    commands = bench_parallelism.measure()
    limited = bench_rate_limit.measure([20, 100, 500], 200, args.latency_ms, None)
    found = goals(results, validate, per_parallelism, emulator, growth, commands, limited)
    print(f"\nclient transport of the plan and apply runs: {args.transport}\n")
    print("\n".join(goal_table(found)))
    print()
    print("\n".join(bench_parallelism.report(commands)))
    print()
    print("\n".join(bench_rate_limit.report(limited, 200, args.latency_ms, None)))
    print()
    print(
        "client CPU per call (shipped transport, 2,000 `apps.listApps`, lowest of 2 rounds): "
        + ", ".join(
            f"parallelism {p}: {f.client_ms:.3f} ms ({f.load})" for p, f in per_parallelism.items()
        )
    )
    print()
    print("\n".join(detail_table(results, args.latency_ms, args.parallelism)))
    print()
    print("\n".join(bench_client.report(clients, bench_client.arguments(client_argv))))
    print()
    print("\n".join(emulator_rows))
    print(
        f"\nmachine after the run: {machine()}; run_all took {time.perf_counter() - started:.0f} s"
    )
    converged = all(r.converged for r in results)
    return 0 if converged and all(g.met for g in found) else 1


if __name__ == "__main__":
    sys.exit(main())
