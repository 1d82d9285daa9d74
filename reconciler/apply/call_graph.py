"""The call graph of one apply: every call of the plan is a node, run once the nodes
before it have finished.

Two kinds of edge connect nodes:

- *requires*: the node only makes sense once the other succeeded (a variable of
  an app that is being created needs its `createApp`; the delete of a host before its
  creation in another environment). When a required node fails, the node is skipped and
  the summary names the failed change. A follow-up after a create (turning delete
  protection on) is not required, only waited for.
  A call that takes a slug (a create or a rename) requires the call that frees it (a rename
  away or a delete), read from the calls themselves (`plan/slug_moves.py`): this edge runs
  from call to call, not from change to change, so a rename cycle broken through a temporary
  slug is no cycle here.
- *after*: an order without a real dependency: within one environment, the kinds' apply
  phases (`Kind.apply_phase`, reconciler/plan/phases.py: domain deletions, domain creations,
  settings, variable sets, variable removals, policies); the deletions of containers (apps, projects) after
  everything else. The node waits for the other to finish, whatever its outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reconciler.address import Address
from reconciler.apply.outcome import CallResult
from reconciler.apply.safety import executable_changes
from reconciler.errors import ApplyRefused
from reconciler.plan import kinds
from reconciler.plan.changes import Action, Call, Change, Plan
from reconciler.plan.phases import ApplyPhase
from reconciler.plan.slug_moves import slug_scope, slug_steps


@dataclass(eq=False)
class CallNode:
    """One call of the plan; `covers` are the changes it decides (a batch call decides many)."""

    index: int
    owner: Change
    call: Call
    covers: list[Change] = field(default_factory=list)
    requires: set[int] = field(default_factory=set)
    after: set[int] = field(default_factory=set)
    result: CallResult | None = None
    skipped_because: tuple[str, ...] = ()
    after_delete: bool = False
    """It takes a slug a delete of this apply frees, which the platform may still hold while it
    cleans up the deleted object in the background: a 409 is waited out."""

    @property
    def succeeded(self) -> bool:
        return self.result is not None and self.result.ok


def _address_parts(change: Change) -> tuple[str, ...]:
    """`variable.shop/web/production/KEY` -> ("shop", "web", "production", "KEY")."""
    return Address.parse(change.address).parts


def _environment_key(change: Change) -> tuple[str, ...] | None:
    parts = _address_parts(change)
    return parts[:3] if len(parts) >= 3 else None


def _parent_addresses(change: Change) -> tuple[str, ...]:
    """Addresses of the containers this change's object lives in, nearest first."""
    parts = _address_parts(change)
    containers = sorted(
        (k for k in kinds.kinds() if k.container and k.depth < len(parts)),
        key=lambda k: -k.depth,
    )
    return tuple(str(Address.of(k.name, *parts[: k.depth])) for k in containers)


def _makes_children_depend(parent: Change) -> bool:
    """Children of a created, replaced or renamed object cannot be touched before it."""
    if parent.action in (Action.CREATE, Action.REPLACE):
        return True
    return parent.reason == "renamed" or any(d.path == "slug" for d in parent.diffs)


def _is_last_deletion(change: Change) -> bool:
    return kinds.get(change.kind).container and change.action is Action.DELETE


def _phase(node: CallNode) -> ApplyPhase | None:
    return kinds.get(node.owner.kind).apply_phase(node.owner, node.call)


class CallGraph:
    """The nodes of one apply and their edges; built and checked before anything is sent."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.changes = executable_changes(plan)
        self.by_address = {c.address: c for c in self.changes}
        self.deleted_keys: dict[tuple[str, str], list[str]] = {}
        for change in self.changes:
            key = kinds.get(change.kind).unique_key(change)
            if key is not None and change.action is Action.DELETE:
                self.deleted_keys.setdefault((change.kind, key), []).append(change.address)
        self.blocked = {c.address for c in plan.changes if c.action is Action.BLOCKED}
        self.nodes: list[CallNode] = []
        self.nodes_of: dict[str, list[CallNode]] = {c.address: [] for c in self.changes}
        self._build_nodes()
        self._cover_batched_changes()
        self._blocked_deps: dict[str, tuple[str, ...]] = {}
        self._slug_freers: dict[str, set[str]] = {}
        self._add_slug_order()
        self._add_requires()
        self._add_environment_order()
        self._add_deletions_last()
        self._check_acyclic()

    def _build_nodes(self) -> None:
        for change in self.changes:
            previous: CallNode | None = None
            for call in change.calls:
                node = CallNode(len(self.nodes), change, call, covers=[change])
                if previous is not None:
                    node.requires.add(previous.index)
                self.nodes.append(node)
                self.nodes_of[change.address].append(node)
                previous = node

    def _cover_batched_changes(self) -> None:
        """A change without calls is decided by each call of another change of its kind in its
        environment that carries its key (the batch call that sets or removes a variable).
        The calls' keys are indexed once: looking each change's key up in every batch call
        of its environment grew with the square of the variables."""
        deciding: dict[tuple[str, tuple[str, ...] | None, str], list[CallNode]] = {}
        for node in self.nodes:
            place = (node.owner.kind, _environment_key(node.owner))
            for key in kinds.get(node.owner.kind).batch_keys(node.call):
                deciding.setdefault((*place, key), []).append(node)
        for change in self.changes:
            wanted = None if change.calls else kinds.get(change.kind).batch_key(change)
            if wanted is None:
                continue
            for node in deciding.get((change.kind, _environment_key(change), wanted), []):
                node.covers.append(change)
                self.nodes_of[change.address].append(node)

    def _add_slug_order(self) -> None:
        """Each call taking a slug requires the call of another change that frees it."""
        freed_by: dict[tuple[tuple[str, ...], str], CallNode] = {}
        taking: list[tuple[CallNode, tuple[tuple[str, ...], str]]] = []
        for change in self.changes:
            scope = slug_scope(change)
            if scope is None:
                continue
            for node, step in zip(self.nodes_of[change.address], slug_steps(change), strict=True):
                if step.frees is not None:
                    freed_by[(scope, step.frees)] = node
                if step.takes is not None:
                    taking.append((node, (scope, step.takes)))
        for node, slug in taking:
            freer = freed_by.get(slug)
            if freer is not None and freer.owner is not node.owner:
                node.requires.add(freer.index)
                node.after_delete = freer.call.operation.deletes
                self._slug_freers.setdefault(node.owner.address, set()).add(freer.owner.address)

    def _dependencies(self, change: Change) -> tuple[set[str], set[str]]:
        """(required, ordered-after) change addresses of one change.

        A dependency on the change that frees a slug this one takes is left out: the call
        edges of `_add_slug_order` already hold it, and more precisely.
        """
        required = set(change.depends_on) - self._slug_freers.get(change.address, set())
        after: set[str] = set()
        for parent in _parent_addresses(change):
            if parent in self.by_address:
                parent_change = self.by_address[parent]
                if parent_change.action is Action.DELETE:
                    continue
                (required if _makes_children_depend(parent_change) else after).add(parent)
                break
        key = kinds.get(change.kind).unique_key(change)
        if key is not None and change.action is Action.CREATE:
            # unique in the workspace (a host moving between environments): deleted first
            required.update(self.deleted_keys.get((change.kind, key), ()))
        required.discard(change.address)
        return required, after - required

    def _add_requires(self) -> None:
        for node in self.nodes:
            for change in node.covers:
                required, after = self._dependencies(change)
                for address in sorted(required):
                    if address in self.blocked:
                        self._blocked_deps.setdefault(change.address, ())
                        self._blocked_deps[change.address] += (address,)
                    needed, follow_ups = self._split_at_create(address)
                    node.requires.update(o.index for o in needed if o is not node)
                    node.after.update(o.index for o in follow_ups if o is not node)
                for address in after:
                    node.after.update(o.index for o in self.nodes_of.get(address, []))

    def _split_at_create(self, address: str) -> tuple[list[CallNode], list[CallNode]]:
        """The nodes of `address` that a dependent needs, and the ones it only waits for.

        What lives in an object needs the object to exist: the calls up to its create (for a
        replace, the delete and the create). The calls after it (turning delete protection
        on) are follow-ups: a dependent still waits for them, in the design's order, but
        their failure does not skip it. Without a create, every call is needed.
        """
        nodes = self.nodes_of.get(address, [])
        creates = [i for i, n in enumerate(nodes) if n.call.creates]
        if not creates:
            return nodes, []
        return nodes[: creates[-1] + 1], nodes[creates[-1] + 1 :]

    def _add_environment_order(self) -> None:
        by_environment: dict[tuple[str, ...], dict[ApplyPhase, list[CallNode]]] = {}
        for node in self.nodes:
            environment, phase = _environment_key(node.owner), _phase(node)
            if environment is None or phase is None:
                continue
            by_environment.setdefault(environment, {}).setdefault(phase, []).append(node)
        for phases in by_environment.values():
            earlier: list[CallNode] = []
            for in_order in sorted(phases):
                for node in phases[in_order]:
                    node.after.update(e.index for e in earlier if e.index not in node.requires)
                earlier = phases[in_order]  # the previous phase already waited for the ones before

    def _add_deletions_last(self) -> None:
        deletions = [n for n in self.nodes if _is_last_deletion(n.owner)]
        if not deletions:
            return
        downstream = self._reachable_from(deletions)
        first_of_each = [n for n in deletions if not (n.requires & {d.index for d in deletions})]
        for node in self.nodes:
            if node.index in downstream or _is_last_deletion(node.owner):
                continue
            for deletion in first_of_each:
                deletion.after.add(node.index)
        # what a container holds goes before the container itself (apps before their project)
        for deletion in first_of_each:
            parts = _address_parts(deletion.owner)
            for other in deletions:
                inner = _address_parts(other.owner)
                if len(inner) > len(parts) and inner[: len(parts)] == parts:
                    deletion.after.add(other.index)

    def _successors(self) -> list[list[int]]:
        successors: list[list[int]] = [[] for _ in self.nodes]
        for node in self.nodes:
            for before in node.requires | node.after:
                successors[before].append(node.index)
        return successors

    def _reachable_from(self, start: Sequence[CallNode]) -> set[int]:
        successors = self._successors()
        seen = {n.index for n in start}
        stack = list(seen)
        while stack:
            for nxt in successors[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    def _topological_order(self) -> list[int]:
        """Node indices, each after all it waits for; nodes on a cycle are left out."""
        successors = self._successors()
        waiting = [len(n.requires | n.after) for n in self.nodes]
        ready = [i for i, count in enumerate(waiting) if count == 0]
        order: list[int] = []
        while ready:
            index = ready.pop()
            order.append(index)
            for nxt in successors[index]:
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
        return order

    def _check_acyclic(self) -> None:
        ordered = set(self._topological_order())
        if len(ordered) != len(self.nodes):
            stuck = sorted({n.owner.address for n in self.nodes if n.index not in ordered})
            raise ApplyRefused(
                "the plan's dependencies form a cycle, nothing was applied: " + ", ".join(stuck),
                hint="this is a bug in reconciler's plan; please report it with the plan JSON",
            )

    def depth(self) -> int:
        """Calls on the longest chain of the graph (the least number of round trips)."""
        longest = [1] * len(self.nodes)
        successors = self._successors()
        for index in self._topological_order():
            for nxt in successors[index]:
                longest[nxt] = max(longest[nxt], longest[index] + 1)
        return max(longest, default=0)

    def blocked_dependencies(self, address: str) -> tuple[str, ...]:
        return self._blocked_deps.get(address, ())
