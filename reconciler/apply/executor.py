"""Running a plan's call graph: each node once everything before it has finished, a node
whose required nodes failed skipped, and every change's outcome reported as it settles."""

from __future__ import annotations

import asyncio

from reconciler.apply.call_graph import CallGraph, CallNode
from reconciler.apply.create_once import Sleep
from reconciler.apply.outcome import (
    ApplyObserver,
    ApplyResult,
    ChangeResult,
    Outcome,
    SilentObserver,
    describe_step,
    partly_applied_error,
)
from reconciler.apply.safety import SecretResolver
from reconciler.apply.send import ApplyOptions, CallSender
from reconciler.plan.changes import Action, Change, Plan
from reconciler.platform.protocol import Platform


async def execute(
    plan: Plan,
    platform: Platform,
    *,
    resolve: SecretResolver,
    options: ApplyOptions | None = None,
    observer: ApplyObserver | None = None,
    sleep: Sleep = asyncio.sleep,
) -> ApplyResult:
    """Apply `plan` (already checked by `check_safety`) and return what happened to each change."""
    sender = CallSender(platform, resolve, options or ApplyOptions(), sleep)
    return await _GraphRun(CallGraph(plan), sender, observer or SilentObserver()).run()


class _GraphRun:
    """One walk of a call graph; a node starts once every node before it has finished."""

    def __init__(self, graph: CallGraph, sender: CallSender, observer: ApplyObserver) -> None:
        self.graph = graph
        self.sender = sender
        self.observer = observer
        self._finished = [asyncio.Event() for _ in graph.nodes]
        self._pending_of = {a: len(nodes) for a, nodes in graph.nodes_of.items()}

    async def run(self) -> ApplyResult:
        graph = self.graph
        self.observer.started(len(graph.nodes))
        for change in graph.changes:  # changes with nothing to send finish at once
            if not graph.nodes_of[change.address]:
                self.observer.change_finished(self._change_result(change))
        await asyncio.gather(*(self._run_node(node) for node in graph.nodes))
        return ApplyResult(tuple(self._change_result(c) for c in graph.plan.changes))

    async def _run_node(self, node: CallNode) -> None:
        for before in node.requires | node.after:
            await self._finished[before].wait()
        failed = self._failed_requirements(node)
        if failed:
            node.skipped_because = failed
            self.observer.call_finished(None)
        else:
            self.observer.call_started(node.covers)
            node.result = await self.sender.send(node.owner, node.call, node.after_delete)
            self.observer.call_finished(node.result)
        self._finished[node.index].set()
        for change in node.covers:
            self._pending_of[change.address] -= 1
            if self._pending_of[change.address] == 0:
                self.observer.change_finished(self._change_result(change))

    def _failed_requirements(self, node: CallNode) -> tuple[str, ...]:
        """Addresses of the failed or blocked changes `node` needed."""
        nodes = self.graph.nodes
        failed = {
            c.address for i in node.requires if not nodes[i].succeeded for c in nodes[i].covers
        }
        blocked = {b for c in node.covers for b in self.graph.blocked_dependencies(c.address)}
        return tuple(sorted(failed | blocked))

    def _change_result(self, change: Change) -> ChangeResult:
        if change.action is Action.BLOCKED:
            return ChangeResult(change, Outcome.BLOCKED, error=_blocked_reason(change))
        nodes = self.graph.nodes_of.get(change.address, [])
        calls = tuple(n.result for n in nodes if n.result is not None)
        if any(not c.ok for c in calls):
            return _failed(change, nodes)
        skipped = sorted({a for n in nodes for a in n.skipped_because})
        if not nodes:
            skipped = list(self.graph.blocked_dependencies(change.address))
        if skipped:
            return ChangeResult(change, Outcome.SKIPPED, calls, blocked_by=tuple(skipped))
        return ChangeResult(change, Outcome.DONE, calls)


def _failed(change: Change, nodes: list[CallNode]) -> ChangeResult:
    """A change with a failed call: its error, after what the calls before it did.

    The calls of one change run in order and stop at the first failure, so the ones that
    succeeded before it took effect: they are named and counted, never dropped.
    """
    sent = [(n.call, n.result) for n in nodes if n.result is not None]
    failed_at = next(i for i, (_, result) in enumerate(sent) if not result.ok)
    failed, failure = sent[failed_at]
    steps = tuple(describe_step(call, result) for call, result in sent[:failed_at])
    return ChangeResult(
        change,
        Outcome.FAILED,
        tuple(result for _, result in sent),
        error=partly_applied_error(steps, failed, failure) if steps else failure.error,
        applied_steps=steps,
    )


def _blocked_reason(change: Change) -> str:
    if change.notes:
        return " ".join(change.notes)
    return "delete protection is on; set deleteProtection: false, apply, then remove it"
