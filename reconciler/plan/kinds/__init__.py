"""The registry of resource kinds, in plan order.

Each kind module ends with `KIND = register(SomeKind())`, as octoDNS's record types call
`Record.register_type`. The position of a kind in the registry is its place in a plan's
listing (within one environment); every loop over kinds (`--target`, the planner, apply's
call graph, create-once, `apply --deploy`, the apply report, the plan JSON's `kind`) goes
through `kinds()` or `get()`, so adding a kind is one module here, imported below.
"""

from __future__ import annotations

from reconciler.plan.kinds.registry import (
    container_kinds,
    environment_kinds,
    find,
    get,
    kinds,
    names,
    order,
    register,
)

# The built-in kinds, in plan order: each registers itself when imported.
# isort: off
from reconciler.plan.kinds import project
from reconciler.plan.kinds import app
from reconciler.plan.kinds import settings
from reconciler.plan.kinds import variables
from reconciler.plan.kinds import policies
from reconciler.plan.kinds import domains

# isort: on

__all__ = [
    "app",
    "container_kinds",
    "domains",
    "environment_kinds",
    "find",
    "get",
    "kinds",
    "names",
    "order",
    "policies",
    "project",
    "register",
    "settings",
    "variables",
]
