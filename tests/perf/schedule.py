"""The lower bound of a benchmark: what latency and parallelism alone impose on its calls.

A client with no CPU cost, sending the same calls with the same dependencies (a call waits
for the calls whose answers it needs), `parallelism` at a time, each taking one latency, needs
`ideal_rounds` latencies. Two simpler formulas miss the point either way:

- `ceil(calls / parallelism)` ignores that a plan must read a project before its apps and its
  apps before their environments: a 10-app plan cannot fill ten slots in its first two rounds;
- `depth + ceil(calls / parallelism)` counts the chain and the volume as if they never overlapped,
  so a small apply "beats" it (ratio 0.71 at 10 apps).

The schedule runs the ready call with the longest chain of calls after it first (Hu's highest
level first rule). Being a real schedule of the same calls, an ideal client achieves it; it is
never below `strict_rounds`, `max(depth, ceil(calls / parallelism))`, which no schedule beats.

Plan dependencies are read from the calls themselves (`RecordingTransport`, in a separate,
untimed run): a call depends on the call whose answer first held an ID or cursor it sends.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from reconciler.apply import CallGraph
from reconciler.manifest.model import Manifest
from reconciler.plan.changes import Plan
from reconciler.plan.planner import PlanOptions, build_plan
from reconciler.platform.client import PlatformClient

# Request members that carry what an earlier answer produced (IDs and page cursors).
_REFERENCES = ("project", "app", "environment", "domain", "deploymentId", "cursor")


def ideal_rounds(predecessors: Sequence[Collection[int]], parallelism: int) -> int:
    """Rounds of one latency that an ideal client needs for these calls (highest level first)."""
    successors = _successors(predecessors)
    level = _levels(successors, predecessors)  # refuses a cycle
    waiting = [len(set(p)) for p in predecessors]
    ready = [(-level[n], n) for n in range(len(predecessors)) if waiting[n] == 0]
    heapq.heapify(ready)
    rounds = 0
    while ready:
        running = [heapq.heappop(ready)[1] for _ in range(min(parallelism, len(ready)))]
        rounds += 1
        for node in running:
            for nxt in successors[node]:
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    heapq.heappush(ready, (-level[nxt], nxt))
    return rounds


def strict_rounds(predecessors: Sequence[Collection[int]], parallelism: int) -> int:
    """`max(depth, ceil(calls / parallelism))`: no schedule at all can do better."""
    depth = max(_levels(_successors(predecessors), predecessors), default=0)
    return max(depth, math.ceil(len(predecessors) / parallelism))


def _successors(predecessors: Sequence[Collection[int]]) -> list[list[int]]:
    successors: list[list[int]] = [[] for _ in predecessors]
    for node, before in enumerate(predecessors):
        for other in set(before):
            successors[other].append(node)
    return successors


def _levels(successors: list[list[int]], predecessors: Sequence[Collection[int]]) -> list[int]:
    """Calls on the longest chain that starts at each call (itself included)."""
    level = [1] * len(successors)
    for node in reversed(_topological(successors, predecessors)):
        for nxt in successors[node]:
            level[node] = max(level[node], level[nxt] + 1)
    return level


def _topological(successors: list[list[int]], predecessors: Sequence[Collection[int]]) -> list[int]:
    waiting = [len(set(p)) for p in predecessors]
    order = [n for n in range(len(successors)) if waiting[n] == 0]
    for node in order:  # grows while iterated
        for nxt in successors[node]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                order.append(nxt)
    if len(order) != len(successors):
        raise ValueError("the dependencies have a cycle")
    return order


@dataclass
class RecordedCall:
    body: dict[str, Any]
    answer: Any


class RecordingTransport(httpx.AsyncBaseTransport):
    """httpx's own transport, keeping every request body and JSON answer in sending order."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.calls: list[RecordedCall] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        call = RecordedCall(json.loads(await request.aread() or b"{}"), None)
        self.calls.append(call)
        response = await self.inner.handle_async_request(request)
        content = await response.aread()
        call.answer = json.loads(content) if content else None
        return httpx.Response(response.status_code, headers=response.headers, content=content)

    async def aclose(self) -> None:
        await self.inner.aclose()


def data_dependencies(calls: Sequence[RecordedCall]) -> list[set[int]]:
    """For each call, the earlier calls whose answers first held an ID or cursor it sends."""
    produced_by: dict[str, int] = {}
    predecessors: list[set[int]] = []
    for index, call in enumerate(calls):
        sent = (call.body.get(member) for member in _REFERENCES)
        predecessors.append(
            {produced_by[v] for v in sent if isinstance(v, str) and v in produced_by}
        )
        for value in _produced(call.answer):
            produced_by.setdefault(value, index)
    return predecessors


def _produced(answer: Any) -> Iterator[str]:
    """IDs (`id`, `...Id` members) and page cursors anywhere in an answer."""
    if isinstance(answer, dict):
        for key, value in answer.items():
            if isinstance(value, str) and (key in ("id", "cursor") or key.endswith("Id")):
                if value:
                    yield value
            else:
                yield from _produced(value)
    elif isinstance(answer, list):
        for item in answer:
            yield from _produced(item)


async def plan_rounds(base_url: str, api_key: str, manifest: Manifest, parallelism: int) -> int:
    """`ideal_rounds` of a plan of `manifest`, planned once more (untimed) to record its calls."""
    recorder = RecordingTransport()
    async with PlatformClient(
        base_url, api_key, parallelism=parallelism, transport=recorder
    ) as client:
        await build_plan(manifest, client, PlanOptions())
    return ideal_rounds(data_dependencies(recorder.calls), parallelism)


def apply_rounds(plan: Plan, parallelism: int) -> int:
    """`ideal_rounds` of applying `plan`: its call graph's edges are the dependencies."""
    return ideal_rounds([n.requires | n.after for n in CallGraph(plan).nodes], parallelism)
