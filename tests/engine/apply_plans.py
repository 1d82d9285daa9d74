"""Hand-built plans and a fake platform for the executor's unit tests.

The changes are shaped like the plan engine's (one change per resource, its
calls in order, `depends_on` on the parent's create), so the executor is tested
against the contract in `reconciler/plan/changes.py`, not against a particular
plan implementation.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import ApiError, Conflict, NotFound, ServerError
from reconciler.plan.changes import Action, Call, Change, Plan, SecretRef
from reconciler.platform.operations import get_operation
from reconciler.sensitive import reveal_in_json


def call(operation: str, body: Mapping[str, Any], *, creates: bool = False) -> Call:
    return Call(get_operation(operation), body, permission="*", creates=creates)


def project_create(p: str) -> Change:
    body = {"name": p.title(), "slug": p}
    return Change(
        f"project.{p}",
        "project",
        Action.CREATE,
        None,
        body,
        calls=(call("projects.createProject", body, creates=True),),
    )


def app_create(p: str, a: str, *, depends: bool = True) -> Change:
    body = {"project": p, "name": a.title(), "slug": a, "git": {"repository": f"acme/{a}"}}
    return Change(
        f"app.{p}/{a}",
        "app",
        Action.CREATE,
        None,
        body,
        calls=(call("apps.createApp", body, creates=True),),
        depends_on=(f"project.{p}",) if depends else (),
    )


def app_delete(p: str, a: str, action: Action = Action.DELETE) -> Change:
    calls = () if action is Action.BLOCKED else (call("apps.deleteApp", {"project": p, "app": a}),)
    return Change(f"app.{p}/{a}", "app", action, {"slug": a}, None, calls=calls)


def project_delete(p: str) -> Change:
    return Change(
        f"project.{p}",
        "project",
        Action.DELETE,
        {"slug": p},
        None,
        calls=(call("projects.deleteProject", {"project": p}),),
    )


def env_body(p: str, a: str, env: str, **extra: Any) -> dict[str, Any]:
    return {"project": p, "app": a, "environment": env, **extra}


def settings(p: str, a: str, env: str, *, depends: tuple[str, ...] = ()) -> Change:
    body = env_body(p, a, env, vCpus=0.5)
    return Change(
        f"settings.{p}/{a}/{env}",
        "settings",
        Action.UPDATE,
        {},
        {"runtime": {"vCpus": 0.5}},
        calls=(call("environments.updateSettings", body),),
        depends_on=depends,
    )


def variables(
    p: str,
    a: str,
    env: str,
    keys: list[str],
    *,
    value: Any = "v",
    depends: tuple[str, ...] = (),
    secrets: Collection[str] = (),
) -> list[Change]:
    """One change per key; the first change of each batch of 50 carries the batch call. The
    keys in `secrets` are sent by reference (`fromEnv:KEY`)."""
    changes = []
    for start in range(0, len(keys), 50):
        batch = keys[start : start + 50]
        items = [
            {"key": k, "value": secret(k) if k in secrets else value, "kind": "recoverable"}
            for k in batch
        ]
        body = env_body(p, a, env, variables=items)
        for i, key in enumerate(batch):
            calls = (call("environments.setEnvironmentVariables", body),) if i == 0 else ()
            changes.append(
                Change(
                    f"variable.{p}/{a}/{env}/{key}",
                    "variable",
                    Action.CREATE,
                    None,
                    {"key": key},
                    calls=calls,
                    depends_on=depends,
                )
            )
    return changes


def variable_removals(p: str, a: str, env: str, keys: list[str]) -> list[Change]:
    body = env_body(p, a, env, variables=list(keys))
    return [
        Change(
            f"variable.{p}/{a}/{env}/{key}",
            "variable",
            Action.DELETE,
            {"key": key},
            None,
            calls=(call("environments.removeEnvironmentVariables", body),) if i == 0 else (),
        )
        for i, key in enumerate(keys)
    ]


def policies(p: str, a: str, env: str, *, depends: tuple[str, ...] = ()) -> Change:
    body = env_body(p, a, env, policies=[{"name": "deny", "enabled": True}])
    return Change(
        f"policies.{p}/{a}/{env}",
        "policies",
        Action.UPDATE,
        {},
        {},
        calls=(call("gateway.setPolicies", body),),
        depends_on=depends,
    )


def domain(p: str, a: str, env: str, host: str, action: Action = Action.CREATE) -> Change:
    if action is Action.CREATE:
        calls = (call("domains.createDomain", env_body(p, a, env, domain=host), creates=True),)
    else:
        calls = (call("domains.deleteDomain", {"domain": host}),)
    return Change(f"domain.{p}/{a}/{env}/{host}", "domain", action, None, None, calls=calls)


def new_app_changes(p: str, a: str, *, variable_count: int = 2) -> list[Change]:
    """An app created from nothing: createApp, then settings, variables and policies of production."""
    app = f"app.{p}/{a}"
    return [
        app_create(p, a),
        settings(p, a, "production", depends=(app,)),
        *variables(p, a, "production", [f"K{i}" for i in range(variable_count)], depends=(app,)),
        policies(p, a, "production", depends=(app,)),
    ]


def plan_of(*changes: Change | list[Change], max_deletes: int = 10) -> Plan:
    flat: list[Change] = []
    for item in changes:
        flat.extend(item if isinstance(item, list) else [item])
    return Plan(tuple(flat), max_deletes=max_deletes)


Failure = Callable[[str, Mapping[str, Any], int], ApiError | None]


@dataclass
class FakePlatform:
    """Answers calls from memory; records their order and concurrency.

    `fail(operation, body, attempt)` may return an error to raise; with
    `process_then_fail` the call takes effect first (an ambiguous failure).
    """

    latency: float = 0.0
    fail: Failure | None = None
    process_then_fail: bool = False
    log: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    projects: set[str] = field(default_factory=set)
    apps: set[tuple[str, str]] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    attempts: dict[str, int] = field(default_factory=dict)

    async def call(self, operation: str, body: Mapping[str, Any]) -> Any:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency)
            # what the platform receives: the body as the client encodes it, secrets revealed
            self.log.append((operation, json.loads(json.dumps(body, default=reveal_in_json))))
            key = f"{operation}:{body.get('slug') or body.get('domain') or body.get('app')}"
            self.attempts[key] = self.attempts.get(key, 0) + 1
            error = self.fail(operation, body, self.attempts[key]) if self.fail else None
            if error is not None and not self.process_then_fail:
                raise error
            data = self._process(operation, body)
            if error is not None:
                raise error
            return data
        finally:
            self.in_flight -= 1

    def _process(self, operation: str, body: Mapping[str, Any]) -> Any:
        if operation == "projects.createProject":
            if body["slug"] in self.projects:
                raise Conflict("exists", operation=operation, status=409)
            self.projects.add(body["slug"])
            return {"id": f"proj_{body['slug']}"}
        if operation == "projects.getProject":
            if body["project"] not in self.projects:
                raise NotFound("no project", operation=operation, status=404)
            return {"id": f"proj_{body['project']}", "slug": body["project"]}
        if operation == "apps.createApp":
            key = (body["project"], body["slug"])
            if key in self.apps:
                raise Conflict("exists", operation=operation, status=409)
            self.apps.add(key)
            return {"appId": f"app_{body['slug']}"}
        if operation == "apps.getApp":
            if (body["project"], body["app"]) not in self.apps:
                raise NotFound("no app", operation=operation, status=404)
            return {"id": f"app_{body['app']}", "slug": body["app"]}
        if operation == "domains.createDomain":
            self.domains.add(body["domain"])
            records = [{"type": "CNAME", "name": body["domain"], "value": "edge.test", "ttl": 60}]
            return {"domainId": f"dom_{body['domain']}", "dnsRecords": records}
        if operation == "domains.getDomain":
            if body["domain"] not in self.domains:
                raise NotFound("no domain", operation=operation, status=404)
            return {"id": f"dom_{body['domain']}", "domain": body["domain"], "dnsRecords": []}
        return {}

    def operations(self) -> list[str]:
        return [operation for operation, _ in self.log]

    def index(self, operation: str, **match: Any) -> int:
        """Position in the log of the first call of `operation` whose body has `match`."""
        for i, (op, body) in enumerate(self.log):
            if op == operation and all(body.get(k) == v for k, v in match.items()):
                return i
        raise AssertionError(f"{operation} {match} was not called")


def server_error(operation: str) -> ServerError:
    return ServerError(
        f"{operation}: server error (500)",
        operation=operation,
        status=500,
        ambiguous=operation.endswith(("createProject", "createApp", "createDomain")),
    )


def secret(name: str) -> SecretRef:
    return SecretRef(f"fromEnv:{name}")
