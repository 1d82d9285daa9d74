"""The registry of kinds: `register` and the lookups (`reconciler.plan.kinds` re-exports them)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from reconciler.plan.kinds.base import AnyContainerKind, AnyEnvironmentKind, AnyKind

K = TypeVar("K", bound="AnyKind")

_REGISTRY: dict[str, AnyKind] = {}
_ATTRIBUTES = ("name", "depth", "container", "read_at", "read_operation")


def register(kind: K) -> K:
    """Add `kind` after the ones registered before it; refuses one whose name is taken or
    that leaves a class attribute unset (a missing hook already fails to instantiate)."""
    missing = [name for name in _ATTRIBUTES if not hasattr(kind, name)]
    if missing or inspect.isabstract(type(kind)):
        raise TypeError(f"{type(kind).__name__} does not say its {', '.join(missing)}")
    if kind.name in _REGISTRY:
        raise ValueError(f"a kind named {kind.name!r} is registered already")
    _REGISTRY[kind.name] = kind
    return kind


def kinds() -> tuple[AnyKind, ...]:
    """Every kind, in plan order."""
    return tuple(_REGISTRY.values())


def container_kinds() -> tuple[AnyContainerKind, ...]:
    """The kinds holding others (projects, apps), in plan order: the order the planner walks."""
    from reconciler.plan.kinds.base import ContainerKind

    return tuple(k for k in _REGISTRY.values() if isinstance(k, ContainerKind))


def environment_kinds() -> tuple[AnyEnvironmentKind, ...]:
    """The kinds planned per environment, in plan order."""
    from reconciler.plan.kinds.base import EnvironmentKind

    return tuple(k for k in _REGISTRY.values() if isinstance(k, EnvironmentKind))


def names() -> tuple[str, ...]:
    """The kinds' names (`project`, `app`, ...), in plan order."""
    return tuple(_REGISTRY)


def get(name: str) -> AnyKind:
    """The kind called `name`; KeyError for none."""
    return _REGISTRY[name]


def find(name: str) -> AnyKind | None:
    """The kind called `name`, or None."""
    return _REGISTRY.get(name)


def order(name: str) -> int:
    """The kind's place in a plan's listing."""
    return list(_REGISTRY).index(name)
