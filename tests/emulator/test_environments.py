"""environments.*: settings bounds and defaults, variables (write-only, all-or-nothing)."""

from __future__ import annotations

import pytest

from tests.emulator.helpers import list_all, make_app, make_project, ok, problem, target
from tests.fixtures.emulator import EmulatorServer


@pytest.fixture
def web(emulator: EmulatorServer) -> EmulatorServer:
    make_project(emulator)
    make_app(emulator)
    return emulator


def _env(emulator: EmulatorServer, environment: str = "production") -> dict:
    return ok(emulator.call("environments.getEnvironment", target(environment)))["data"]


def _settings(emulator: EmulatorServer, **fields):
    return emulator.call("environments.updateSettings", {**target(), **fields})


def test_get_by_slug_or_id_and_404s(web: EmulatorServer) -> None:
    env = _env(web)
    assert ok(web.call("environments.getEnvironment", target(env["id"])))["data"] == env
    assert env["regions"] == [{"name": "iad", "replicas": {"min": 1, "max": 1}}]
    assert env["deleteProtection"] is False
    problem(web.call("environments.getEnvironment", target("staging")), 404)
    problem(web.call("environments.getEnvironment", target(app="nope")), 404)
    problem(web.call("environments.getEnvironment", target(project="nope")), 404)
    problem(web.call("environments.listEnvironments", {"project": "shop", "app": "nope"}), 404)
    problem(web.call("environments.getEnvironment", {"project": "shop", "app": "web"}), 400)


def test_first_update_fills_server_defaults(web: EmulatorServer) -> None:
    web.advance_clock(2)
    assert ok(_settings(web, port=3000)) == {"data": {}}
    env = _env(web)
    assert env["runtime"] == {
        "port": 3000,
        "vCpus": 0.25,
        "memoryMib": 512,
        "storageMib": 0,
        "command": [],
        "shutdownSignal": "SIGTERM",
        "upstreamProtocol": "http1",
    }
    assert env["build"] == {"rootDirectory": ".", "watchPaths": [], "autoDeploy": True}
    assert env["updatedAt"] > env["createdAt"]
    assert "runtime" not in _env(web, "preview")


def test_every_setting_round_trips_and_null_clears(web: EmulatorServer) -> None:
    settings = {
        "dockerfile": "Dockerfile",
        "rootDirectory": "apps/web",
        "buildCommand": "make",
        "watchPaths": ["apps/web/**", "package.json"],
        "autoDeploy": False,
        "port": 8000,
        "vCpus": 1.5,
        "memoryMib": 1024,
        "storageMib": 512,
        "command": ["node", "server.js"],
        "healthcheck": {"method": "GET", "path": "/health", "timeoutSeconds": 2},
        "shutdownSignal": "SIGINT",
        "upstreamProtocol": "h2c",
        "openapiSpecPath": "/openapi.json",
        "regions": [{"name": "fra", "replicas": {"min": 1, "max": 3}}],
    }
    ok(_settings(web, **settings))
    env = _env(web)
    assert env["build"] == {key: settings[key] for key in env["build"]}
    assert set(env["build"]) == {
        "dockerfile",
        "rootDirectory",
        "buildCommand",
        "watchPaths",
        "autoDeploy",
    }
    assert env["runtime"]["healthcheck"] == {
        "method": "GET",
        "path": "/health",
        "intervalSeconds": 10,
        "timeoutSeconds": 2,
        "failureThreshold": 3,
        "initialDelaySeconds": 0,
    }
    assert env["runtime"]["vCpus"] == 1.5 and env["regions"] == settings["regions"]
    ok(_settings(web, dockerfile=None, buildCommand=None, healthcheck=None, openapiSpecPath=None))
    env = _env(web)
    assert "dockerfile" not in env["build"] and "buildCommand" not in env["build"]
    assert "healthcheck" not in env["runtime"] and "openapiSpecPath" not in env["runtime"]
    assert env["runtime"]["port"] == 8000  # omitted fields stay


def test_integral_vcpus_keep_their_json_form(web: EmulatorServer) -> None:
    ok(_settings(web, vCpus=2))
    assert web.call("environments.getEnvironment", target()).text.count('"vCpus":2,') == 1


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"port": 0}, "port"),
        ({"port": 65536}, "port"),
        ({"port": True}, "port"),
        ({"port": 80.0}, "port"),
        ({"vCpus": 0}, "vCpus"),
        ({"vCpus": 0.3}, "vCpus"),
        ({"vCpus": 8.25}, "vCpus"),
        ({"vCpus": "1"}, "vCpus"),
        ({"memoryMib": 300}, "memoryMib"),
        ({"memoryMib": 0}, "memoryMib"),
        ({"storageMib": 100}, "storageMib"),
        ({"storageMib": -512}, "storageMib"),
        ({"watchPaths": ["/abs"]}, "watchPaths[0]"),
        ({"watchPaths": ["./rel"]}, "watchPaths[0]"),
        ({"watchPaths": ["a"] * 11}, "watchPaths"),
        ({"command": ["x"] * 11}, "command"),
        ({"command": "npm start"}, "command"),
        ({"healthcheck": {"path": "/h"}}, "healthcheck.method"),
        ({"healthcheck": {"method": "PUT", "path": "/h"}}, "healthcheck.method"),
        ({"healthcheck": {"method": "GET", "path": "h"}}, "healthcheck.path"),
        (
            {"healthcheck": {"method": "GET", "path": "/h", "intervalSeconds": 0}},
            "healthcheck.intervalSeconds",
        ),
        (
            {"healthcheck": {"method": "GET", "path": "/h", "failureThreshold": 101}},
            "healthcheck.failureThreshold",
        ),
        (
            {"healthcheck": {"method": "GET", "path": "/h", "initialDelaySeconds": -1}},
            "healthcheck.initialDelaySeconds",
        ),
        ({"shutdownSignal": "SIGHUP"}, "shutdownSignal"),
        ({"upstreamProtocol": "h2"}, "upstreamProtocol"),
        ({"rootDirectory": None}, "rootDirectory"),
        ({"rootDirectory": ""}, "rootDirectory"),
        ({"dockerfile": "d" * 501}, "dockerfile"),
        ({"buildCommand": "b" * 1001}, "buildCommand"),
        ({"openapiSpecPath": ""}, "openapiSpecPath"),
        ({"autoDeploy": "yes"}, "autoDeploy"),
        ({"regions": []}, "regions"),
        (
            {"regions": [{"name": f"r{i}", "replicas": {"min": 1, "max": 1}} for i in range(6)]},
            "regions",
        ),
        ({"regions": [{"name": "iad"}]}, "regions[0].replicas"),
        ({"regions": [{"name": "iad", "replicas": {"min": 1}}]}, "regions[0].replicas.max"),
        ({"regions": [{"name": "", "replicas": {"min": 1, "max": 1}}]}, "regions[0].name"),
        ({"regions": [{"name": "iad", "replicas": {"min": 1, "max": 1}}] * 2}, "regions[1].name"),
        ({"description": "x"}, "description"),
    ],
)
def test_settings_bounds(web: EmulatorServer, fields: dict, field: str) -> None:
    problem(_settings(web, **fields), 400, field)
    assert "runtime" not in _env(web)  # nothing was written


def test_settings_maximum_values_are_accepted(web: EmulatorServer) -> None:
    ok(_settings(web, vCpus=8, memoryMib=32768, storageMib=102400, port=65535))


def test_variables_round_trip_write_only_hidden(web: EmulatorServer) -> None:
    variables = [
        {"key": "API_TOKEN", "value": "s3cret"},
        {"key": "LOG_LEVEL", "value": "info", "kind": "recoverable", "description": "verbosity"},
    ]
    body = {**target(), "variables": variables}
    assert ok(web.call("environments.setEnvironmentVariables", body)) == {"data": {}}
    listed = ok(web.call("environments.listEnvironmentVariables", target()))["data"]
    assert [{k: v for k, v in item.items() if k != "createdAt"} for item in listed] == [
        {"key": "API_TOKEN", "kind": "writeonly"},
        {"key": "LOG_LEVEL", "kind": "recoverable", "value": "info", "description": "verbosity"},
    ]
    assert "s3cret" not in web.call("environments.listEnvironmentVariables", target()).text
    assert ok(web.call("environments.listEnvironmentVariables", target("preview")))["data"] == []


def test_set_overwrites_and_prune(web: EmulatorServer) -> None:
    call = lambda body: ok(  # noqa: E731
        web.call("environments.setEnvironmentVariables", {**target(), **body})
    )
    call({"variables": [{"key": "A", "value": "1"}, {"key": "B", "value": "2"}]})
    call({"variables": [{"key": "A", "value": "9", "kind": "recoverable"}]})
    listed = ok(web.call("environments.listEnvironmentVariables", target()))["data"]
    assert {v["key"]: v.get("value") for v in listed} == {"A": "9", "B": None}
    call({"variables": [{"key": "C", "value": "3"}], "prune": True})
    listed = ok(web.call("environments.listEnvironmentVariables", target()))["data"]
    assert [v["key"] for v in listed] == ["C"]
    call({"variables": [], "prune": True})
    assert ok(web.call("environments.listEnvironmentVariables", target()))["data"] == []


@pytest.mark.parametrize(
    ("variable", "field"),
    [
        ({"key": "1ABC", "value": "x"}, "variables[1].key"),
        ({"key": "A-B", "value": "x"}, "variables[1].key"),
        ({"key": "K" * 257, "value": "x"}, "variables[1].key"),
        ({"key": "OK", "value": ""}, "variables[1].value"),
        ({"key": "OK", "value": "v" * 16385}, "variables[1].value"),
        ({"key": "OK", "value": "x", "kind": "secret"}, "variables[1].kind"),
        ({"key": "OK", "value": "x", "description": "d" * 256}, "variables[1].description"),
        ({"key": "OK"}, "variables[1].value"),
        ({"key": "GOOD", "value": "again"}, "variables[1].key"),
    ],
)
def test_set_is_all_or_nothing(web: EmulatorServer, variable: dict, field: str) -> None:
    body = {**target(), "variables": [{"key": "GOOD", "value": "x"}, variable], "prune": True}
    problem(web.call("environments.setEnvironmentVariables", body), 400, field)
    assert ok(web.call("environments.listEnvironmentVariables", target()))["data"] == []


def test_set_limits_and_404(web: EmulatorServer) -> None:
    many = [{"key": f"K{i}", "value": "v"} for i in range(51)]
    problem(
        web.call("environments.setEnvironmentVariables", {**target(), "variables": many}),
        400,
        "variables",
    )
    ok(web.call("environments.setEnvironmentVariables", {**target(), "variables": many[:50]}))
    problem(
        web.call("environments.setEnvironmentVariables", {**target("nope"), "variables": []}), 404
    )
    problem(web.call("environments.setEnvironmentVariables", target()), 400, "variables")
    listed = list_all(web, "environments.listEnvironmentVariables", target(), limit=7)
    assert [v["key"] for v in listed] == [f"K{i}" for i in range(50)]
    body = {**target(), "cursor": "x" * 1025}
    problem(web.call("environments.listEnvironmentVariables", body), 400, "cursor")


def test_remove_skips_unknown_names_and_validates_all(web: EmulatorServer) -> None:
    body = {**target(), "variables": [{"key": "A", "value": "1"}, {"key": "B", "value": "2"}]}
    ok(web.call("environments.setEnvironmentVariables", body))
    remove = lambda names: web.call(  # noqa: E731
        "environments.removeEnvironmentVariables", {**target(), "variables": names}
    )
    problem(remove([]), 400, "variables")
    problem(remove(["A"] * 51), 400, "variables")
    problem(remove(["A", 5]), 400, "variables[1]")
    assert len(ok(web.call("environments.listEnvironmentVariables", target()))["data"]) == 2
    assert ok(remove(["A", "MISSING"])) == {"data": {}}
    listed = ok(web.call("environments.listEnvironmentVariables", target()))["data"]
    assert [v["key"] for v in listed] == ["B"]
    problem(
        web.call(
            "environments.removeEnvironmentVariables", {**target(app="x1y"), "variables": ["B"]}
        ),
        404,
    )
