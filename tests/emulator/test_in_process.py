"""The app in-process (httpx.ASGITransport, no lifespan), as `--base-url local` uses it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from reconciler.emulator.app import EmulatorConfig, create_app
from tests.fixtures.emulator import EmulatorAsgi


def test_asgi_fixture_serves_the_api_and_admin(emulator_asgi: EmulatorAsgi) -> None:
    async def scenario() -> tuple[str, str]:
        async with emulator_asgi.client() as client:
            await client.post("/v1/projects.createProject", json={"name": "S", "slug": "shop"})
            body = {"project": "shop", "name": "W", "slug": "web", "oci": {"image": "nginx:1"}}
            await client.post("/v1/apps.createApp", json=body)
            body = {"project": "shop", "app": "web", "environment": "production"}
            created = await client.post(
                "/v1/deployments.createDeployment",
                json={**body, "image": {"dockerImage": "nginx:2"}},
            )
            deployment_id = created.json()["data"]["deploymentId"]
            get = {"deploymentId": deployment_id}
            before = (await client.post("/v1/deployments.getDeployment", json=get)).json()
            await client.post("/_emulator/clock", json={"advanceMs": 60_000})
            after = (await client.post("/v1/deployments.getDeployment", json=get)).json()
            return before["data"]["status"], after["data"]["status"]

    # time-driven behaviour needs no background task: it is computed from the clock
    assert asyncio.run(scenario()) == ("pending", "ready")
    assert [r["status"] for r in emulator_asgi.emulator.requests] == [200, 200, 201, 200, 200]


def test_in_process_state_file_round_trip(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("RECONCILER_API_KEY", raising=False)
    path = tmp_path / "local.json"

    async def call(operation: str, body: dict) -> httpx.Response:
        app = create_app(EmulatorConfig(state_file=path, dev_key="local"))
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": "Bearer local"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://local", headers=headers
        ) as client:
            return await client.post(f"/v1/{operation}", json=body)

    assert (
        asyncio.run(call("projects.createProject", {"name": "S", "slug": "shop"})).status_code
        == 200
    )
    listed = asyncio.run(call("projects.listProjects", {})).json()["data"]
    assert [p["slug"] for p in listed] == ["shop"]


def test_dev_key_comes_from_the_environment_or_is_generated(monkeypatch) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", "from-env")
    from_env = create_app().state.emulator
    assert (from_env.dev_key, from_env.dev_key_generated) == ("from-env", False)
    monkeypatch.delenv("RECONCILER_API_KEY")
    generated = create_app().state.emulator.dev_key
    assert generated and generated != create_app().state.emulator.dev_key


@pytest.mark.parametrize(
    "config",
    [
        EmulatorConfig(step_ms=0),
        EmulatorConfig(latency_ms=-1),
        EmulatorConfig(fault_rate=1.5),
        EmulatorConfig(rate_limit=0),
    ],
)
def test_impossible_configs_are_refused(config: EmulatorConfig) -> None:
    with pytest.raises(ValueError):
        create_app(config)
