"""The kind registry: every kind answers every required hook, a kind missing one cannot be
registered, and what the plan, `--target` and apply do in order comes from the registry."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from reconciler.apply.call_graph import CallGraph
from reconciler.plan import kinds
from reconciler.plan.changes import Action, Call, Change, Plan
from reconciler.plan.kinds.base import ContainerKind, EnvironmentKind, Kind
from reconciler.plan.targets import parse_target
from reconciler.platform.operations import get_operation


def _hooks(cls: type) -> set[str]:
    return {
        name for name, _ in inspect.getmembers(cls) if getattr(_, "__isabstractmethod__", False)
    }


def test_every_registered_kind_has_every_hook() -> None:
    for kind in kinds.kinds():
        hooks = _hooks(
            next(c for c in (EnvironmentKind, ContainerKind, Kind) if isinstance(kind, c))
        )
        for hook in hooks:
            assert getattr(type(kind), hook).__qualname__.split(".")[0] == type(kind).__name__, (
                f"{kind.name} does not state its own {hook}"
            )
        for attribute in ("name", "depth", "container", "read_at", "read_operation"):
            assert attribute in vars(type(kind)), f"{kind.name} does not say its {attribute}"


def test_a_kind_missing_a_hook_cannot_be_registered() -> None:
    project = type(kinds.get("project"))

    class Incomplete(Kind):
        name = "incomplete"
        depth = 1
        container = False
        read_at = 1
        read_operation = "projects.getProject"

    for hook in _hooks(Kind):  # every hook but one, taken from a complete kind
        methods = {h: getattr(project, h) for h in _hooks(Kind) if h != hook}
        partial = type(f"Without_{hook}", (Incomplete,), methods)
        with pytest.raises(TypeError):
            kinds.register(partial())
    assert "incomplete" not in kinds.names()


def test_a_name_cannot_be_registered_twice() -> None:
    with pytest.raises(ValueError, match="registered already"):
        kinds.register(type(kinds.get("app"))())


def test_addresses_and_targets_come_from_the_registry() -> None:
    for kind in kinds.kinds():
        target = parse_target(f"{kind.name}." + "/".join(["x"] * kind.depth))
        assert target.kind == kind.name
        with pytest.raises(Exception, match="at most"):
            parse_target(f"{kind.name}." + "/".join(["x"] * (kind.depth + 1)))


def _change(kind: str, action: Action, operation: str, parts: tuple[str, ...]) -> Change:
    body: dict[str, Any] = {"variables": [{"key": parts[-1], "value": "v", "kind": "recoverable"}]}
    return Change(
        address=f"{kind}." + "/".join(parts),
        kind=kind,
        action=action,
        before=None,
        after={},
        calls=(Call(get_operation(operation), body, permission="p"),),
    )


def test_apply_phases_within_an_environment_come_from_the_kinds() -> None:
    env = ("shop", "web", "production")
    changes = [
        _change("policies", Action.UPDATE, "gateway.setPolicies", env),
        _change("variable", Action.DELETE, "environments.removeEnvironmentVariables", (*env, "A")),
        _change("variable", Action.CREATE, "environments.setEnvironmentVariables", (*env, "B")),
        _change("settings", Action.UPDATE, "environments.updateSettings", env),
        _change("domain", Action.CREATE, "domains.createDomain", (*env, "b.example.com")),
        _change("domain", Action.DELETE, "domains.deleteDomain", (*env, "a.example.com")),
    ]
    graph = CallGraph(Plan(tuple(changes)))
    by_address = {node.owner.address: node for node in graph.nodes}

    def phase(change: Change) -> int:
        found = kinds.get(change.kind).apply_phase(change, change.calls[0])
        assert found is not None
        return found

    for earlier in changes:
        for later in changes:
            if phase(earlier) < phase(later):
                waits = by_address[later.address].after | by_address[later.address].requires
                assert _reaches(graph, by_address[earlier.address].index, waits), (
                    f"{later.address} does not wait for {earlier.address}"
                )


def _reaches(graph: CallGraph, target: int, start: set[int]) -> bool:
    seen, stack = set(start), list(start)
    while stack:
        index = stack.pop()
        if index == target:
            return True
        node = graph.nodes[index]
        for nxt in node.after | node.requires:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def test_plan_order_is_the_registry_order() -> None:
    assert [kinds.order(name) for name in kinds.names()] == list(range(len(kinds.names())))
    assert kinds.names()[:2] == ("project", "app")  # containers before what they hold
    containers = [k for k in kinds.kinds() if k.container]
    assert all(k.depth < min(o.depth for o in kinds.kinds() if not o.container) for k in containers)


def test_plan_json_accepts_exactly_the_registered_kinds() -> None:
    from reconciler.errors import PlanShapeError
    from reconciler.plan.json_form import plan_from_dict, plan_to_dict

    for kind in kinds.kinds():
        change = _change(kind.name, Action.UPDATE, "gateway.setPolicies", ("a",) * kind.depth)
        assert plan_from_dict(plan_to_dict(Plan((change,)))).changes[0].kind == kind.name
    # a known kind's plan with its kind renamed (the digest of an unknown kind's calls, which
    # plan_to_dict writes, cannot be made: no kind says what its calls send)
    unknown = plan_to_dict(
        Plan((_change("policies", Action.UPDATE, "gateway.setPolicies", ("a",) * 3),))
    )
    unknown["changes"][0]["kind"] = "tag"
    with pytest.raises(PlanShapeError, match="kind"):
        plan_from_dict(unknown)


def test_the_orders_are_the_enums_of_plan_phases() -> None:
    """Where a kind is read and where its calls go in an environment are said by
    reconciler/plan/phases.py, not by numbers written in each kind."""
    from reconciler.plan.phases import ApplyPhase, ReadAt

    for kind in kinds.kinds():
        assert isinstance(kind.read_at, ReadAt), kind.name
        for action in (Action.CREATE, Action.UPDATE, Action.DELETE):
            for operation in (kind.read_operation, "environments.removeEnvironmentVariables"):
                change = _change(kind.name, action, operation, ("a",) * kind.depth)
                phase = kind.apply_phase(change, change.calls[0])
                assert phase is None or isinstance(phase, ApplyPhase), (kind.name, phase)


def test_the_planner_walks_the_containers_first_and_only_they_hold_kinds() -> None:
    containers = kinds.container_kinds()
    assert [k.name for k in containers] == list(kinds.names()[: len(containers)])
    assert {k.name for k in kinds.kinds() if k.container} == {k.name for k in containers}
