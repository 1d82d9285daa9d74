"""Property: whatever JSON arrives, every operation answers a success or a problem, never a 500."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.emulator.app import OPERATIONS, EmulatorConfig, create_app
from tests.emulator.test_every_operation import CASES

KEY = "fuzz-key"
FIELD_NAMES = sorted(
    {name for operation in OPERATIONS.values() for name in operation.spec.fields}
    | {"git", "image", "deployment", "policies", "variables", "match", "regions"}
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
values = st.recursive(
    scalars | st.sampled_from(["production", "preview", "shop", "web", "www.example.com"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
bodies = st.dictionaries(st.sampled_from(FIELD_NAMES), values, max_size=6)


class InProcess:
    """One in-process app and client on one event loop, shared by every example."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()
        app = create_app(EmulatorConfig(dev_key=KEY, step_ms=1))
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://local",
            headers={"Authorization": f"Bearer {KEY}"},
        )

    def post(self, operation: str, body: Any) -> httpx.Response:
        return self.runner.run(self.client.post(f"/v1/{operation}", json=body))

    def close(self) -> None:
        self.runner.run(self.client.aclose())
        self.runner.close()


@pytest.fixture(scope="module")
def platform() -> Iterator[InProcess]:
    platform = InProcess()
    platform.post("projects.createProject", {"name": "S", "slug": "shop"})
    body = {"project": "shop", "name": "W", "slug": "web", "git": {"repository": "a/b"}}
    platform.post("apps.createApp", body)
    yield platform
    platform.close()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(operation=st.sampled_from(sorted(OPERATIONS)), body=bodies)
def test_no_body_makes_the_emulator_fail(platform: InProcess, operation: str, body: dict) -> None:
    response = platform.post(operation, body)
    assert response.status_code < 500, (operation, body, response.text)
    if response.status_code >= 400:
        problem = response.json()
        assert response.headers["content-type"].startswith("application/problem+json")
        assert problem["status"] == response.status_code and isinstance(problem["errors"], list)
    else:
        assert "data" in response.json()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    operation=st.sampled_from(sorted(CASES)),
    path=st.lists(st.sampled_from(FIELD_NAMES) | st.integers(0, 2), min_size=1, max_size=3),
    value=values,
)
def test_near_valid_bodies_never_fail_either(
    platform: InProcess, operation: str, path: list, value: Any
) -> None:
    """A valid body with one member replaced somewhere inside it reaches deeper checks."""
    body = copy.deepcopy(CASES[operation][0])
    _replace(body, path, value)
    response = platform.post(operation, body)
    assert response.status_code < 500, (operation, body, response.text)


def _replace(document: Any, path: list, value: Any) -> None:
    *parents, last = path
    for step in parents:
        document = _child(document, step) if _child(document, step) is not None else document
    if isinstance(document, dict):
        document[str(last)] = value
    elif isinstance(document, list) and isinstance(last, int) and last < len(document):
        document[last] = value


def _child(document: Any, step: str | int) -> Any:
    """The container at `step` inside `document`, if there is one."""
    if isinstance(document, dict) and isinstance(step, str):
        child = document.get(step)
    elif isinstance(document, list) and isinstance(step, int) and step < len(document):
        child = document[step]
    else:
        return None
    return child if isinstance(child, dict | list) else None
