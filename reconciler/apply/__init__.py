"""Executing a plan: safety checks, the call graph, concurrency, failure isolation, the summary.

A `Plan` lists changes; each change carries the API calls that make it happen.
Apply turns every call into a node of a graph and runs each node once all the
nodes before it have finished, so independent work runs concurrently (bounded
by `parallelism`, and again by the client's own semaphore). One module per stage:

- `safety`: what must hold before the first write (limits, secrets, a stale saved plan);
- `call_graph`: the nodes and their ordering and dependency edges;
- `create_once`: a create that failed ambiguously is re-read before it is sent again;
- `send`: one call, secrets resolved at the last moment, failures turned into results;
- `executor`: walking the graph, skipping what depends on a failure;
- `outcome`: what happened, per call, per change and in total.
"""

from __future__ import annotations

from reconciler.apply.call_graph import CallGraph
from reconciler.apply.create_once import (
    Sleep,
    create_once,
    reread_for,
)
from reconciler.apply.executor import execute
from reconciler.apply.outcome import (
    ApplyObserver,
    ApplyResult,
    CallResult,
    ChangeResult,
    Outcome,
    SilentObserver,
)
from reconciler.apply.safety import (
    SecretResolver,
    check_safety,
    check_saved_plan,
    check_secrets,
    executable_changes,
    planned_without,
    secret_refs,
    unknown_secrets,
)
from reconciler.apply.send import ApplyOptions, materialize
from reconciler.plan.kinds.base import NewDomain, Reread

__all__ = [
    "ApplyObserver",
    "ApplyOptions",
    "ApplyResult",
    "CallGraph",
    "CallResult",
    "ChangeResult",
    "NewDomain",
    "Outcome",
    "Reread",
    "SecretResolver",
    "SilentObserver",
    "Sleep",
    "check_safety",
    "check_saved_plan",
    "check_secrets",
    "create_once",
    "executable_changes",
    "execute",
    "materialize",
    "planned_without",
    "reread_for",
    "secret_refs",
    "unknown_secrets",
]
