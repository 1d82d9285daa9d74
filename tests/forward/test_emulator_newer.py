"""The emulator follows the spec by default, and refuses what it does not list; configured as
a newer platform (EmulatorConfig.accept_unknown) it keeps members, policy kinds and values
it does not know, returns them, and may give every app more environments."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.emulator.app import EmulatorConfig
from tests.fixtures.cli import run_cli
from tests.fixtures.emulator import EmulatorServer

TARGET = {"project": "shop", "app": "web", "environment": "production"}
LIMIT = {"name": "limit", "enabled": True, "rateLimit": {"perMinute": 5}}


def _app(server: EmulatorServer) -> None:
    assert (
        server.call("projects.createProject", {"name": "Shop", "slug": "shop"}).status_code == 200
    )
    created = server.call(
        "apps.createApp", {"project": "shop", "name": "Web", "slug": "web", "oci": {"image": "a:1"}}
    )
    assert created.status_code == 200


def _data(server: EmulatorServer, operation: str, body: dict[str, Any]) -> Any:
    answer = server.call(operation, body)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def test_by_default_the_emulator_refuses_what_the_spec_does_not_list(emulator) -> None:
    _app(emulator)
    for operation, body in [
        ("gateway.setPolicies", {**TARGET, "policies": [LIMIT]}),
        ("environments.updateSettings", {**TARGET, "gpu": {"kind": "a100"}}),
        ("environments.updateSettings", {**TARGET, "shutdownSignal": "SIGUSR1"}),
    ]:
        assert emulator.call(operation, body).status_code == 400, (operation, body)
    environments = _data(
        emulator, "environments.listEnvironments", {"project": "shop", "app": "web"}
    )
    assert [e["slug"] for e in environments] == ["production", "preview"]


@pytest.fixture
def newer(newer_emulator: EmulatorServer) -> EmulatorServer:
    _app(newer_emulator)
    return newer_emulator


def test_a_newer_platform_keeps_and_returns_what_the_spec_does_not_list(newer) -> None:
    fw = {"name": "deny", "enabled": True, "firewall": {"action": "ACTION_CHALLENGE", "code": 1}}
    item = {"path": {"path": {"prefix": "/a", "caseFold": True}}, "country": {"in": ["DE"]}}
    _data(newer, "gateway.setPolicies", {**TARGET, "policies": [{**LIMIT, "match": [item]}, fw]})
    listed = _data(newer, "gateway.listPolicies", TARGET)
    assert listed[0]["rateLimit"] == {"perMinute": 5} and listed[0]["match"] == [item]
    assert listed[1]["firewall"] == {"action": "ACTION_CHALLENGE", "code": 1}
    _data(
        newer,
        "environments.updateSettings",
        {
            **TARGET,
            "gpu": {"kind": "a100"},
            "cacheDir": ".c",
            "tier": "gold",
            "healthcheck": {"method": "GET", "path": "/h", "grpc": "x"},
            "regions": [{"name": "fra", "replicas": {"min": 1, "max": 2, "burst": 3}, "zone": "a"}],
        },
    )
    env = _data(newer, "environments.getEnvironment", TARGET)
    assert env["runtime"]["gpu"] == {"kind": "a100"} and env["build"]["cacheDir"] == ".c"
    assert env["tier"] == "gold" and env["runtime"]["healthcheck"]["grpc"] == "x"
    assert env["regions"][0]["zone"] == "a" and env["regions"][0]["replicas"]["burst"] == 3
    _data(newer, "environments.setEnvironmentVariables",
          {**TARGET, "variables": [{"key": "S", "value": "v", "kind": "sealed", "ttl": 5}]})  # fmt: skip
    (variable,) = _data(newer, "environments.listEnvironmentVariables", TARGET)
    assert variable["kind"] == "sealed" and variable["ttl"] == 5 and "value" not in variable


def test_a_newer_platform_gives_every_app_its_extra_environments(newer) -> None:
    environments = _data(newer, "environments.listEnvironments", {"project": "shop", "app": "web"})
    assert [e["slug"] for e in environments] == ["production", "preview", "staging"]
    staging = {**TARGET, "environment": "staging"}
    assert _data(newer, "environments.getEnvironment", staging)["kind"] == "staging"


def test_the_newer_platform_options_need_accept_unknown(start_emulator) -> None:
    with pytest.raises(ValueError, match="accept_unknown"):
        start_emulator(EmulatorConfig(extra_environments=("staging",)))
    with pytest.raises(ValueError, match="runtime or build"):
        start_emulator(EmulatorConfig(accept_unknown=True, unknown_settings={"gpu": "disk"}))
    result = run_cli(["emulator", "--extra-environment", "staging"])
    assert result.exit_code == 1 and "--accept-unknown" in result.output
    result = run_cli(["emulator", "--accept-unknown", "--unknown-in", "gpu"])
    assert result.exit_code == 1 and "NAME=runtime" in result.output
