"""What one API call costs the emulator does not grow with the workspace: the reads a plan makes
and the writes that create a project of apps cost the same in a workspace ten times larger.

Work is counted, not timed: function calls and executed lines (a loop over every domain of the
workspace runs no function per item, so calls alone would not see it), in the whole ASGI path
of a call (body, validation, clock, handler, answer), in-process."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest
from starlette.applications import Starlette

from reconciler.emulator.app import EmulatorConfig, create_app

KEY = "growth-key"
APPS_PER_PROJECT = 20
SMALL, LARGE = 2, 20  # projects
GROWTH_ALLOWED = 1.2
STEP_MS = 200


@contextmanager
def counted_steps() -> Iterator[list[int]]:
    """Function calls (Python and C) and executed lines inside the block, in this thread."""
    count = [0]

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        count[0] += 1
        return trace

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            count[0] += 1

    sys.settrace(trace)
    sys.setprofile(profile)
    try:
        yield count
    finally:
        sys.settrace(None)
        sys.setprofile(None)


async def _post(app: Starlette, operation: str, body: dict[str, Any]) -> dict[str, Any]:
    content = json.dumps(body).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/v1/{operation}",
        "headers": [
            (b"host", b"local"),
            (b"authorization", f"Bearer {KEY}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(content)).encode()),
        ],
        "client": ("127.0.0.1", 1),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": content, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    assert sent[0]["status"] < 300, sent[1]["body"]
    answer: dict[str, Any] = json.loads(sent[1]["body"])
    return answer


def _project(index: int) -> str:
    return f"proj-{index:03}"


def _seeding(project: int) -> list[tuple[str, dict[str, Any]]]:
    """The calls creating a project of apps as teams have them: both environments with
    settings, regions, two variables, a firewall policy and a custom domain."""
    slug = _project(project)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("projects.createProject", {"name": "P", "slug": slug})
    ]
    for index in range(APPS_PER_PROJECT):
        app = f"app-{index:02}"
        production = {"project": slug, "app": app, "environment": "production"}
        policy = {"name": "deny", "enabled": True, "firewall": {"action": "ACTION_DENY"}}
        calls += [
            (
                "apps.createApp",
                {"project": slug, "name": "A", "slug": app, "oci": {"image": "a:1"}},
            ),
            (
                "environments.updateSettings",
                {
                    **production,
                    "vCpus": 0.5,
                    "regions": [{"name": "fra", "replicas": {"min": 1, "max": 3}}],
                },
            ),
            (
                "environments.updateSettings",
                {**production, "environment": "preview", "vCpus": 0.25},
            ),
            (
                "environments.setEnvironmentVariables",
                {
                    **production,
                    "variables": [{"key": "A", "value": "1"}, {"key": "B", "value": "2"}],
                },
            ),
            ("gateway.setPolicies", {**production, "policies": [policy]}),
            ("domains.createDomain", {**production, "domain": f"{app}.{slug}.example.com"}),
        ]
    return calls


def _plan_reads(project: int, cursor: str) -> list[tuple[str, dict[str, Any]]]:
    slug = _project(project)
    where = {"project": slug, "app": "app-07"}
    production = {**where, "environment": "production"}
    return [
        ("projects.getProject", {"project": slug}),
        ("apps.listApps", {"project": slug, "limit": 10}),
        ("apps.listApps", {"project": slug, "limit": 10, "cursor": cursor}),
        ("environments.listEnvironments", where),
        ("environments.listEnvironmentVariables", production),
        ("gateway.listPolicies", production),
        ("domains.listDomains", {"project": slug}),
        ("domains.listDomains", production),
    ]


def _costs(projects: int) -> dict[str, int]:
    """Counted work of each plan read and of seeding one more project, in a workspace of
    `projects` projects; the clock moves one step before each seeding call, so domains come
    due (pending, then verifying) as they do in a real seeding."""
    app = create_app(EmulatorConfig(dev_key=KEY, seed=3, step_ms=STEP_MS))
    emulator = app.state.emulator

    async def run() -> dict[str, int]:
        for project in range(projects):
            for operation, body in _seeding(project):
                await _post(app, operation, body)
        emulator.store.advance_clock(2 * STEP_MS)  # every domain so far past its first step
        costs: dict[str, int] = {}
        with counted_steps() as count:
            for operation, body in _seeding(projects):
                emulator.store.advance_clock(STEP_MS)
                await _post(app, operation, body)
        costs["seeding a project"] = count[0]
        first = await _post(app, "apps.listApps", {"project": _project(1), "limit": 10})
        for index, (operation, body) in enumerate(_plan_reads(1, first["pagination"]["cursor"])):
            with counted_steps() as count:
                await _post(app, operation, body)
            costs[f"{index}-{operation}"] = count[0]
        return costs

    return asyncio.run(run())


@pytest.fixture(scope="module")
def costs() -> tuple[dict[str, int], dict[str, int]]:
    return _costs(SMALL), _costs(LARGE)


@pytest.mark.parametrize(
    "name",
    ["seeding a project"]
    + [f"{index}-{operation}" for index, (operation, _) in enumerate(_plan_reads(1, "cursor"))],
)
def test_a_call_costs_the_same_in_a_workspace_ten_times_larger(
    costs: tuple[dict[str, int], dict[str, int]], name: str
) -> None:
    small, large = costs
    assert large[name] <= small[name] * GROWTH_ALLOWED, (
        f"{name}: {small[name]} steps with {SMALL * APPS_PER_PROJECT} apps, "
        f"{large[name]} with {LARGE * APPS_PER_PROJECT}"
    )
