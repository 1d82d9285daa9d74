"""Small helpers for the emulator conformance suite."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.fixtures.emulator import EmulatorServer

PROBLEM_MEMBERS = {"type", "title", "status", "detail", "errors"}
# A step time far longer than any test runs (see the `long_step_emulator` fixture).
LONG_STEP_MS = 10 * 60 * 1000


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def problem(response: httpx.Response, status: int, field: str | None = None) -> dict[str, Any]:
    """Assert an RFC 9457 problem with `status`, naming `field` when given."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert set(body) == PROBLEM_MEMBERS
    assert body["status"] == status
    if field is not None:
        fields = [error["field"] for error in body["errors"]]
        assert field in fields, fields
    return body


def make_project(emulator: EmulatorServer, slug: str = "shop", **extra: Any) -> str:
    body = {"name": slug.title(), "slug": slug, **extra}
    return ok(emulator.call("projects.createProject", body))["data"]["id"]


def make_app(
    emulator: EmulatorServer, project: str = "shop", slug: str = "web", **source: Any
) -> str:
    if not source:
        source = {"git": {"repository": "acme/web"}}
    body = {"project": project, "name": slug.title(), "slug": slug, **source}
    return ok(emulator.call("apps.createApp", body))["data"]["appId"]


def target(environment: str = "production", project: str = "shop", app: str = "web") -> dict:
    return {"project": project, "app": app, "environment": environment}


def deploy(emulator: EmulatorServer, environment: str = "production", **source: Any) -> str:
    body = {**target(environment), **(source or {"git": {}})}
    return ok(emulator.call("deployments.createDeployment", body), 201)["data"]["deploymentId"]


def get_deployment(emulator: EmulatorServer, deployment_id: str) -> dict[str, Any]:
    return ok(emulator.call("deployments.getDeployment", {"deploymentId": deployment_id}))["data"]


def get_app(emulator: EmulatorServer, project: str = "shop", app: str = "web") -> dict[str, Any]:
    return ok(emulator.call("apps.getApp", {"project": project, "app": app}))["data"]


def list_all(emulator: EmulatorServer, operation: str, body: dict[str, Any], limit: int) -> list:
    """Follow the cursor through every page."""
    items: list[Any] = []
    cursor = None
    for _ in range(1000):
        page = ok(
            emulator.call(
                operation, {**body, "limit": limit, **({"cursor": cursor} if cursor else {})}
            )
        )
        assert len(page["data"]) <= limit
        items += page["data"]
        if not page["pagination"]["hasMore"]:
            return items
        cursor = page["pagination"]["cursor"]
    raise AssertionError("pagination never ended")


def call_in_process(app: Any, operation: str, body: dict[str, Any], key: str = "k") -> Any:
    """POST to an app made by `create_app` without a server, with `key`; the answer's JSON.

    `operation` is an operation name, or an admin path such as `/_emulator/clock`."""
    path = operation if operation.startswith("/") else f"/v1/{operation}"

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers=headers
        ) as c:
            return await c.post(path, json=body)

    answer = asyncio.run(post())
    assert answer.status_code < 300, answer.text
    return answer.json()
