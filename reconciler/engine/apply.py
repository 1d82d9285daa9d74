"""Executing a plan: safety checks, the call graph, concurrency, failure isolation, the summary.

A `Plan` lists changes; each change carries the API calls that make it happen.
Apply turns every call into a node of a graph and runs each node once all the
nodes before it have finished, so independent work runs concurrently (bounded
by `parallelism`, and again by the client's own semaphore).

Two kinds of edge connect nodes:

- *requires*: the node only makes sense once the other succeeded (a variable of
  an app that is being created; the delete of a host before its creation in
  another environment). When a required node fails, the node is skipped and
  the summary names the failed change.
- *after*: the design's order (design.md §4) without a real dependency: within
  one environment domain deletions, domain creations, settings, variable sets,
  variable removals, policies; app and project deletions after everything else.
  The node waits for the other to finish, whatever its outcome.

A create is never blindly repeated: when it fails ambiguously (5xx, timeout,
lost connection: the platform may have processed it), the object is re-read
first, and only created again when it does not exist.
"""

from __future__ import annotations

import asyncio
import enum
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from reconciler.engine.changes import Action, Call, Change, Plan, SecretRef
from reconciler.errors import ReconcilerError
from reconciler.platform.errors import ApiError, Conflict, NotFound
from reconciler.platform.operations import OPERATIONS
from reconciler.secrets import fingerprint, ref_matches, split_fingerprint, with_fingerprint

SecretResolver = Callable[[SecretRef], str]
Sleep = Callable[[float], Awaitable[None]]


class ApplyRefused(ReconcilerError):
    """Apply stopped before its first write: a safety rule, a stale plan or a missing secret."""


class PlatformCaller(Protocol):
    """What apply needs from `reconciler.platform.client.PlatformClient`."""

    async def call(self, operation: str, body: Mapping[str, Any]) -> Any: ...


@dataclass(frozen=True)
class ApplyOptions:
    """How apply runs. `create_attempts` bounds the sends of one create after ambiguous failures."""

    parallelism: int = 10
    create_attempts: int = 3
    create_retry_delay: float = 1.0
    replace_attempts: int = 6
    """Sends of the create of a replace, which may meet the deleted object's background cleanup
    (409) for a while: with the doubling delay, about half a minute in all."""
    fingerprint_key: bytes | None = None
    """RECONCILER_FINGERPRINT_KEY: fingerprints secrets the plan could not (see `_fingerprint_late_secrets`)."""


class Outcome(enum.Enum):
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    BLOCKED = "blocked"


@dataclass(frozen=True)
class CallResult:
    """One call as it went: `status` is the HTTP status of success, or of the failure if any.

    `data` is kept only for creates (new IDs, a new domain's DNS records); it
    never holds a request body, so never a secret value.
    """

    operation: str
    ok: bool
    status: int | None = None
    error: str | None = None
    data: Any = None
    reread: bool = False


@dataclass(frozen=True)
class ChangeResult:
    """What happened to one change. `blocked_by` names the failed/blocked changes it needed."""

    change: Change
    outcome: Outcome
    calls: tuple[CallResult, ...] = ()
    error: str | None = None
    blocked_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class NewDomain:
    address: str
    host: str
    dns_records: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class ApplyResult:
    results: tuple[ChangeResult, ...]

    def with_outcome(self, outcome: Outcome) -> tuple[ChangeResult, ...]:
        return tuple(r for r in self.results if r.outcome is outcome)

    @property
    def complete(self) -> bool:
        """True only when every change of the plan was applied."""
        return all(r.outcome is Outcome.DONE for r in self.results)

    def counts(self) -> tuple[int, int, int]:
        """(added, changed, destroyed) among applied changes; a replace is one add and one destroy."""
        done = [r.change.action for r in self.with_outcome(Outcome.DONE)]
        added = sum(a in (Action.CREATE, Action.REPLACE) for a in done)
        changed = sum(a is Action.UPDATE for a in done)
        destroyed = sum(a in (Action.DELETE, Action.REPLACE) for a in done)
        return added, changed, destroyed

    def new_domains(self) -> tuple[NewDomain, ...]:
        """Domains created by this apply, with the DNS records their owner must create."""
        found = []
        for result in self.with_outcome(Outcome.DONE):
            for call in result.calls:
                if call.operation == "domains.createDomain" and isinstance(call.data, Mapping):
                    records = call.data.get("dnsRecords")
                    host = str(call.data.get("domain") or _address_parts(result.change)[-1])
                    if isinstance(records, list):
                        found.append(NewDomain(result.change.address, host, tuple(records)))
        return tuple(found)


class ApplyObserver(Protocol):
    """Receives progress: see `reconciler.engine.progress`."""

    def started(self, total_calls: int) -> None: ...

    def call_finished(self, result: CallResult | None) -> None:
        """One call settled: its result, or None when it was skipped."""

    def change_finished(self, result: ChangeResult) -> None: ...


class _SilentObserver:
    def started(self, total_calls: int) -> None:
        pass

    def call_finished(self, result: CallResult | None) -> None:
        pass

    def change_finished(self, result: ChangeResult) -> None:
        pass


# --- safety: everything that must hold before the first write ----------------


def executable_changes(plan: Plan) -> tuple[Change, ...]:
    """The changes apply sends calls for: everything but blocked deletions."""
    return tuple(c for c in plan.changes if c.action is not Action.BLOCKED)


def check_safety(
    plan: Plan, *, max_deletes: int, allow_replace: bool, resolve: SecretResolver
) -> None:
    """Refuse, before any write, a plan that breaks a safety rule or needs a missing secret."""
    deletions = [c.address for c in plan.deletions]
    if len(deletions) > max_deletes:
        raise ApplyRefused(
            f"the plan deletes {len(deletions)} objects, more than --max-deletes {max_deletes}: "
            + ", ".join(deletions),
            hint=f"review the deletions, then rerun with --max-deletes {len(deletions)}",
        )
    replaced = [c.address for c in plan.changes if c.action is Action.REPLACE]
    if replaced and not allow_replace:
        raise ApplyRefused(
            "the plan replaces "
            + ", ".join(replaced)
            + " (delete and create again: its deployments, domains and variables are destroyed)",
            hint="rerun with --allow-replace if that is intended",
        )
    check_secrets(plan, resolve)


def secret_refs(plan: Plan) -> tuple[tuple[str, SecretRef], ...]:
    """(address, ref) for every secret that an executable change sends.

    A variable's address is its own even when another variable's change carries the batch call.
    """
    found: list[tuple[str, SecretRef]] = []
    for change in executable_changes(plan):
        for call in change.calls:
            owners = {id(ref): address for address, _, ref in _variable_secrets(change, call)}
            found.extend(
                (owners.get(id(ref), change.address), ref) for ref in _walk_refs(call.body)
            )
    return tuple(found)


def _variable_secrets(change: Change, call: Call) -> Iterable[tuple[str, str, SecretRef]]:
    """(the variable's address, its key, ref) for each secret value a variables call sends."""
    items = call.body.get("variables")
    for item in items if isinstance(items, (list, tuple)) else ():
        if isinstance(item, Mapping) and isinstance(item.get("value"), SecretRef):
            key = str(item.get("key"))
            address = change.address
            if change.kind == "variable":  # the batch may be carried by another variable's change
                address = f"{address.rsplit('/', 1)[0]}/{key}"
            yield address, key, item["value"]


def check_secrets(plan: Plan, resolve: SecretResolver) -> None:
    """Every secret the plan sends must resolve now; the value is dropped at once."""
    problems: list[str] = []
    seen: set[str] = set()
    for address, ref in secret_refs(plan):
        if ref.source in seen:
            continue
        seen.add(ref.source)
        try:
            resolve(ref)
        except ReconcilerError as error:
            problems.append(f"{address}: {error.message}")
    if problems:
        raise ApplyRefused(
            "secrets the plan must send are missing, nothing was applied:\n  "
            + "\n  ".join(problems),
            hint="set them (fromEnv: the environment variable; fromFile: the file), then rerun",
        )


def check_saved_plan(
    saved: Plan, current: Plan, *, resolve: SecretResolver, fingerprint_key: bytes | None
) -> None:
    """Refuse a saved plan that no longer describes the world, before any write.

    `current` is the plan rebuilt now from the same manifest files against live
    state: a different manifest digest means the files changed, a different
    live digest that someone changed the platform since (a stale plan). Then each
    secret the plan sends must still resolve to the value fingerprinted at plan
    time.
    """
    replan = "run `reconciler plan --out PLANFILE` again, review it, and apply the new plan"
    if current.manifest_digest != saved.manifest_digest:
        raise ApplyRefused(
            "the manifest files changed since this plan was saved, nothing was applied",
            hint=replan,
        )
    if current.live_digest != saved.live_digest:
        raise ApplyRefused(
            "the plan is stale: live state changed since it was saved, nothing was applied",
            hint=replan,
        )
    check_secrets(saved, resolve)
    changed = []
    sent = (
        secret
        for change in executable_changes(saved)
        for call in change.calls
        for secret in _variable_secrets(change, call)
    )
    for address, variable_key, ref in sent:
        if ref.fingerprint is None:
            continue
        if fingerprint_key is None:
            raise ApplyRefused(
                "the plan fingerprinted its secrets but RECONCILER_FINGERPRINT_KEY is not set, "
                "so they cannot be checked against it; nothing was applied",
                hint="set the same RECONCILER_FINGERPRINT_KEY as when the plan was made",
            )
        if not ref_matches(ref, resolve(ref), key=fingerprint_key, variable_key=variable_key):
            changed.append(f"{address} ({ref.source})")
    if changed:
        raise ApplyRefused(
            "secrets changed since the plan was saved, nothing was applied: " + ", ".join(changed),
            hint=replan,
        )


def _walk_refs(value: Any) -> Iterable[SecretRef]:
    if isinstance(value, SecretRef):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _walk_refs(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk_refs(item)


def materialize(body: Any, resolve: SecretResolver) -> Any:
    """The body as JSON-ready data with secrets resolved; built just before a send, never kept."""
    if isinstance(body, SecretRef):
        return resolve(body)
    if isinstance(body, Mapping):
        return {key: materialize(value, resolve) for key, value in body.items()}
    if isinstance(body, (list, tuple)):
        return [materialize(item, resolve) for item in body]
    return body


# --- creating exactly once ----------------------------------------------------

Reread = Callable[[], Awaitable[Any]]
"""Looks up what a create would have made: its response-like data, or None when absent."""


async def create_once(
    client: PlatformCaller,
    operation: str,
    body: Mapping[str, Any],
    reread: Reread | None,
    *,
    attempts: int,
    delay: float,
    sleep: Sleep = asyncio.sleep,
    replacing: bool = False,
) -> tuple[Any, bool]:
    """Send a create; after an ambiguous failure re-read before sending it again.

    Returns (data, found_by_reread). A 409 after an earlier ambiguous attempt
    means that attempt did create the object: it is re-read, not reported.
    With `replacing` (the create of a replace, right after its delete), a 409 may
    also mean the platform is still cleaning up the deleted object in the
    background: it is waited out, within the same bounded attempts.
    """
    tried_ambiguously = False
    for attempt in range(1, attempts + 1):
        try:
            return await client.call(operation, body), False
        except ApiError as error:
            conflict = isinstance(error, Conflict)
            if conflict and replacing and not tried_ambiguously and attempt < attempts:
                await sleep(delay * 2 ** (attempt - 1))
                continue
            if reread is None or not (error.ambiguous or (conflict and tried_ambiguously)):
                raise
            tried_ambiguously = True
            found = await reread()
            if found is not None:
                return found, True
            if attempt == attempts:
                raise
        await sleep(delay * 2 ** (attempt - 1) * (0.5 + random.random() / 2))
    raise AssertionError("unreachable: the last attempt returns or raises")


def reread_for(client: PlatformCaller, call: Call) -> Reread | None:
    """How to find the object a create of the plan makes, by the slug or host it sends."""
    body = call.body
    if call.operation == "projects.createProject":
        return _lookup(client, "projects.getProject", {"project": body["slug"]}, ("id",))
    if call.operation == "apps.createApp":
        request = {"project": body["project"], "app": body["slug"]}
        return _lookup(client, "apps.getApp", request, ("appId",))
    if call.operation == "domains.createDomain":
        return _lookup(client, "domains.getDomain", {"domain": body["domain"]}, ("domainId",))
    return None


def _lookup(
    client: PlatformCaller, operation: str, request: Mapping[str, Any], id_names: tuple[str, ...]
) -> Reread:
    async def reread() -> Any:
        try:
            found = await client.call(operation, request)
        except NotFound:
            return None
        if not isinstance(found, Mapping):
            return None
        # answer in the create's response shape, so callers need not care how it was found
        data = dict(found)
        for name in id_names:
            data.setdefault(name, found.get("id"))
        return data

    return reread


# --- the graph ------------------------------------------------------------------

# phases within one environment, run in this order (design.md §4)
_DOMAIN_DELETE, _DOMAIN_CREATE, _SETTINGS, _VARIABLE_SET, _VARIABLE_REMOVE, _POLICIES = range(6)


@dataclass(eq=False)
class _Node:
    index: int
    owner: Change
    call: Call
    covers: list[Change] = field(default_factory=list)
    requires: set[int] = field(default_factory=set)
    after: set[int] = field(default_factory=set)
    result: CallResult | None = None
    skipped_because: tuple[str, ...] = ()

    @property
    def succeeded(self) -> bool:
        return self.result is not None and self.result.ok


def _address_parts(change: Change) -> list[str]:
    """`variable.shop/web/production/KEY` -> ["shop", "web", "production", "KEY"]."""
    return change.address.split(".", 1)[1].split("/")


def _environment_key(change: Change) -> tuple[str, ...] | None:
    parts = _address_parts(change)
    return tuple(parts[:3]) if len(parts) >= 3 else None


def _parent_addresses(change: Change) -> tuple[str, ...]:
    """Addresses of the objects this one lives in, nearest first."""
    parts = _address_parts(change)
    if change.kind == "project":
        return ()
    if change.kind == "app":
        return (f"project.{parts[0]}",)
    return (f"app.{parts[0]}/{parts[1]}", f"project.{parts[0]}")


def _makes_children_depend(parent: Change) -> bool:
    """Children of a created, replaced or renamed object cannot be touched before it."""
    if parent.action in (Action.CREATE, Action.REPLACE):
        return True
    return parent.reason == "renamed" or any(d.path == "slug" for d in parent.diffs)


def _is_last_deletion(change: Change) -> bool:
    return change.kind in ("app", "project") and change.action is Action.DELETE


def _phase(node: _Node) -> int | None:
    change = node.owner
    if change.kind == "domain":
        return _DOMAIN_DELETE if change.action is Action.DELETE else _DOMAIN_CREATE
    if change.kind == "settings":
        return _SETTINGS
    if change.kind == "variable":
        if node.call.operation == "environments.removeEnvironmentVariables":
            return _VARIABLE_REMOVE
        return _VARIABLE_SET
    if change.kind == "policies":
        return _POLICIES
    return None


def _variable_keys(call: Call) -> set[str]:
    """Variable names a set/remove call carries (a batch call stands for many changes)."""
    items = call.body.get("variables")
    if not isinstance(items, (list, tuple)):
        return set()
    keys: set[str] = set()
    for item in items:
        if isinstance(item, str):
            keys.add(item)
        elif isinstance(item, Mapping) and isinstance(item.get("key"), str):
            keys.add(item["key"])
    return keys


class CallGraph:
    """The nodes of one apply and their edges; built and checked before anything is sent."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.changes = executable_changes(plan)
        self.by_address = {c.address: c for c in self.changes}
        self.deleted_hosts: dict[str, list[str]] = {}
        for change in self.changes:
            if change.kind == "domain" and change.action is Action.DELETE:
                host = _address_parts(change)[-1]
                self.deleted_hosts.setdefault(host, []).append(change.address)
        self.blocked = {c.address for c in plan.changes if c.action is Action.BLOCKED}
        self.nodes: list[_Node] = []
        self.nodes_of: dict[str, list[_Node]] = {c.address: [] for c in self.changes}
        self._build_nodes()
        self._cover_batched_variables()
        self._blocked_deps: dict[str, tuple[str, ...]] = {}
        self._add_requires()
        self._add_environment_order()
        self._add_deletions_last()
        self._check_acyclic()

    def _build_nodes(self) -> None:
        for change in self.changes:
            previous: _Node | None = None
            for call in change.calls:
                node = _Node(len(self.nodes), change, call, covers=[change])
                if previous is not None:
                    node.requires.add(previous.index)
                self.nodes.append(node)
                self.nodes_of[change.address].append(node)
                previous = node

    def _cover_batched_variables(self) -> None:
        """A variable change without calls is decided by the batch call that carries its key."""
        batch_nodes: dict[tuple[str, ...] | None, list[_Node]] = {}
        for node in self.nodes:
            if node.owner.kind == "variable":
                batch_nodes.setdefault(_environment_key(node.owner), []).append(node)
        for change in self.changes:
            if change.kind != "variable" or change.calls:
                continue
            key = _address_parts(change)[-1]
            for node in batch_nodes.get(_environment_key(change), []):
                if key in _variable_keys(node.call):
                    node.covers.append(change)
                    self.nodes_of[change.address].append(node)

    def _dependencies(self, change: Change) -> tuple[set[str], set[str]]:
        """(required, ordered-after) change addresses of one change."""
        required = set(change.depends_on)
        after: set[str] = set()
        for parent in _parent_addresses(change):
            if parent in self.by_address:
                parent_change = self.by_address[parent]
                if parent_change.action is Action.DELETE:
                    continue
                (required if _makes_children_depend(parent_change) else after).add(parent)
                break
        if change.kind == "domain" and change.action is Action.CREATE:
            # a host moving between environments: its deletion elsewhere comes first
            required.update(self.deleted_hosts.get(_address_parts(change)[-1], ()))
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
                    for other in self.nodes_of.get(address, []):
                        if other is not node:
                            node.requires.add(other.index)
                for address in after:
                    node.after.update(o.index for o in self.nodes_of.get(address, []))

    def _add_environment_order(self) -> None:
        by_environment: dict[tuple[str, ...], dict[int, list[_Node]]] = {}
        for node in self.nodes:
            environment, phase = _environment_key(node.owner), _phase(node)
            if environment is None or phase is None:
                continue
            by_environment.setdefault(environment, {}).setdefault(phase, []).append(node)
        for phases in by_environment.values():
            earlier: list[_Node] = []
            for phase in sorted(phases):
                for node in phases[phase]:
                    node.after.update(e.index for e in earlier if e.index not in node.requires)
                earlier = phases[phase]  # the previous phase already waited for the ones before

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
        # the apps of a project go before the project itself
        for deletion in first_of_each:
            if deletion.owner.kind != "project":
                continue
            project = _address_parts(deletion.owner)[0]
            for other in deletions:
                if other.owner.kind == "app" and _address_parts(other.owner)[0] == project:
                    deletion.after.add(other.index)

    def _successors(self) -> list[list[int]]:
        successors: list[list[int]] = [[] for _ in self.nodes]
        for node in self.nodes:
            for before in node.requires | node.after:
                successors[before].append(node.index)
        return successors

    def _reachable_from(self, start: Sequence[_Node]) -> set[int]:
        successors = self._successors()
        seen = {n.index for n in start}
        stack = list(seen)
        while stack:
            for nxt in successors[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    def _check_acyclic(self) -> None:
        successors = self._successors()
        waiting = [len(n.requires | n.after) for n in self.nodes]
        ready = [i for i, count in enumerate(waiting) if count == 0]
        ordered = 0
        while ready:
            index = ready.pop()
            ordered += 1
            for nxt in successors[index]:
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
        if ordered != len(self.nodes):
            stuck = sorted({self.nodes[i].owner.address for i, c in enumerate(waiting) if c})
            raise ApplyRefused(
                "the plan's dependencies form a cycle, nothing was applied: " + ", ".join(stuck),
                hint="this is a bug in reconciler's plan; please report it with the plan JSON",
            )

    def depth(self) -> int:
        """Calls on the longest chain of the graph (the least number of round trips)."""
        longest = [0] * len(self.nodes)
        successors = self._successors()
        waiting = [len(n.requires | n.after) for n in self.nodes]
        ready = [i for i, count in enumerate(waiting) if count == 0]
        for i in ready:
            longest[i] = 1
        while ready:
            index = ready.pop()
            for nxt in successors[index]:
                longest[nxt] = max(longest[nxt], longest[index] + 1)
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
        return max(longest, default=0)

    def blocked_dependencies(self, address: str) -> tuple[str, ...]:
        return self._blocked_deps.get(address, ())


# --- running it -------------------------------------------------------------------


class Executor:
    """Runs a plan's call graph against the platform and reports what happened."""

    def __init__(
        self,
        plan: Plan,
        client: PlatformCaller,
        *,
        resolve: SecretResolver,
        options: ApplyOptions | None = None,
        observer: ApplyObserver | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.graph = CallGraph(plan)
        self.client = client
        self.resolve = resolve
        self.options = options or ApplyOptions()
        self.observer = observer or _SilentObserver()
        self.sleep = sleep
        self._slots = asyncio.Semaphore(self.options.parallelism)
        self._finished: list[asyncio.Event] = []
        self._pending_of: dict[str, int] = {}

    async def run(self) -> ApplyResult:
        graph = self.graph
        self._finished = [asyncio.Event() for _ in graph.nodes]
        self._pending_of = {a: len(nodes) for a, nodes in graph.nodes_of.items()}
        self.observer.started(len(graph.nodes))
        for change in graph.changes:  # changes with nothing to send finish at once
            if not graph.nodes_of[change.address]:
                self.observer.change_finished(self._change_result(change))
        await asyncio.gather(*(self._run_node(node) for node in graph.nodes))
        results = [self._change_result(c) for c in graph.plan.changes]
        return ApplyResult(tuple(results))

    async def _run_node(self, node: _Node) -> None:
        for before in node.requires | node.after:
            await self._finished[before].wait()
        failed = sorted(
            {
                c.address
                for i in node.requires
                if not self.graph.nodes[i].succeeded
                for c in self.graph.nodes[i].covers
            }
            | {b for c in node.covers for b in self.graph.blocked_dependencies(c.address)}
        )
        if failed:
            node.skipped_because = tuple(failed)
            self.observer.call_finished(None)
        else:
            async with self._slots:
                node.result = await self._send(node.owner, node.call)
            self.observer.call_finished(node.result)
        self._finished[node.index].set()
        for change in node.covers:
            self._pending_of[change.address] -= 1
            if self._pending_of[change.address] == 0:
                self.observer.change_finished(self._change_result(change))

    async def _send(self, owner: Change, call: Call) -> CallResult:
        status = OPERATIONS[call.operation].success_status if call.operation in OPERATIONS else None
        try:
            body = materialize(call.body, self.resolve)
            if self.options.fingerprint_key is not None:
                _fingerprint_late_secrets(call.body, body, self.options.fingerprint_key)
            if call.creates:
                replacing = owner.action is Action.REPLACE
                data, reread = await create_once(
                    self.client,
                    call.operation,
                    body,
                    reread_for(self.client, call),
                    attempts=self.options.replace_attempts
                    if replacing
                    else self.options.create_attempts,
                    delay=self.options.create_retry_delay,
                    sleep=self.sleep,
                    replacing=replacing,
                )
                return CallResult(call.operation, True, status, data=data, reread=reread)
            await self.client.call(call.operation, body)
            return CallResult(call.operation, True, status)
        except ApiError as error:
            return CallResult(call.operation, False, error.status, error=_api_error_text(error))
        except ReconcilerError as error:  # e.g. a secret that vanished since the check
            return CallResult(call.operation, False, None, error=str(error))
        except Exception as error:  # independent work must go on; no traceback, no values
            return CallResult(
                call.operation, False, None, error=f"internal error ({type(error).__name__})"
            )

    def _change_result(self, change: Change) -> ChangeResult:
        if change.action is Action.BLOCKED:
            return ChangeResult(change, Outcome.BLOCKED, error=_blocked_reason(change))
        nodes = self.graph.nodes_of.get(change.address, [])
        calls = tuple(n.result for n in nodes if n.result is not None)
        failures = [c for c in calls if not c.ok]
        if failures:
            return ChangeResult(change, Outcome.FAILED, calls, error=failures[0].error)
        skipped = sorted({a for n in nodes for a in n.skipped_because})
        if not nodes:
            skipped = list(self.graph.blocked_dependencies(change.address))
        if skipped:
            return ChangeResult(change, Outcome.SKIPPED, calls, blocked_by=tuple(skipped))
        return ChangeResult(change, Outcome.DONE, calls)


def _fingerprint_late_secrets(planned: Mapping[str, Any], body: dict[str, Any], key: bytes) -> None:
    """Add the fingerprint marker for write-only values the plan could not fingerprint.

    A saved plan made while a secret was missing (a pull request from a fork)
    sends it without a fingerprint; recording one now keeps the next plan from
    showing the secret as changed.
    """
    planned_items = planned.get("variables")
    if not isinstance(planned_items, (list, tuple)):
        return
    for planned_item, item in zip(planned_items, body["variables"], strict=True):
        ref = planned_item.get("value") if isinstance(planned_item, Mapping) else None
        if (
            isinstance(ref, SecretRef)
            and ref.fingerprint is None
            and item.get("kind") == "writeonly"
        ):
            description, _ = split_fingerprint(item.get("description"))
            item["description"] = with_fingerprint(
                description, fingerprint(key, item["key"], item["value"])
            )


def _api_error_text(error: ApiError) -> str:
    """One line: the message, and the hint unless it is the client's "re-read first" advice,
    which apply has already followed for creates."""
    if error.hint and not error.ambiguous:
        return f"{error.message} ({error.hint})"
    return error.message


def _blocked_reason(change: Change) -> str:
    if change.notes:
        return " ".join(change.notes)
    return "delete protection is on; set deleteProtection: false, apply, then remove it"


async def execute(
    plan: Plan,
    client: PlatformCaller,
    *,
    resolve: SecretResolver,
    options: ApplyOptions | None = None,
    observer: ApplyObserver | None = None,
    sleep: Sleep = asyncio.sleep,
) -> ApplyResult:
    """Apply `plan` (already checked by `check_safety`) and return what happened to each change."""
    executor = Executor(
        plan, client, resolve=resolve, options=options, observer=observer, sleep=sleep
    )
    return await executor.run()
