"""Lone surrogates: JSON can escape one (`"\\udc00"`) but UTF-8 cannot encode it, so a body holding
one anywhere is refused (400) and nothing is stored, and every answer stays encodable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.emulator.app import EmulatorConfig
from tests.emulator.helpers import make_app, make_project, ok, problem, target
from tests.fixtures.emulator import EmulatorServer

MARKER = "MARKER"  # the readable part of each invalid string: it must not come back either
POLICY = {"name": "p", "enabled": True, "firewall": {"action": "ACTION_DENY"}}


def _post_raw(emulator: EmulatorServer, path: str, document: object, method: str = "POST"):
    """Send `document` as JSON with lone surrogates escaped (httpx's `json=` would refuse it)."""
    headers = {"Authorization": f"Bearer {emulator.api_key}", "Content-Type": "application/json"}
    return emulator.http.request(method, path, content=json.dumps(document), headers=headers)


@pytest.fixture
def web(emulator: EmulatorServer) -> EmulatorServer:
    make_project(emulator)
    make_app(emulator)
    return emulator


@pytest.mark.parametrize(
    ("operation", "body", "field"),
    [
        ("projects.createProject", {"name": f"{MARKER}\udc00", "slug": "surro"}, "name"),
        ("projects.createProject", {"name": "A", "slug": "surro", "\udc00": 1}, "body"),
        ("projects.createProject", {"name": "A", "slug": "surro", f"{MARKER}\ud800": 1}, "body"),
        (
            "environments.setEnvironmentVariables",
            {
                **target(),
                "variables": [{"key": "A", "value": f"{MARKER}\ud800", "kind": "recoverable"}],
            },
            "variables[0].value",
        ),
        (
            "environments.setEnvironmentVariables",
            {**target(), "variables": [{"key": "A", "value": "v", "\udfff": {"x": 1}}]},
            "variables[0]",
        ),
        (
            "gateway.setPolicies",
            {
                **target(),
                "policies": [
                    {**POLICY, "match": [{"path": {"path": {"exact": f"/{MARKER}\udc00"}}}]}
                ],
            },
            "policies[0].match[0].path.path.exact",
        ),
        (
            "environments.updateSettings",
            {**target(), "command": ["run", f"{MARKER}\udc00"]},
            "command[1]",
        ),
    ],
)
def test_a_lone_surrogate_anywhere_is_400_and_nothing_is_stored(
    web: EmulatorServer, operation: str, body: dict, field: str
) -> None:
    before = web.state()
    response = _post_raw(web, f"/v1/{operation}", body)
    refused = problem(response, 400, field)
    assert "surrogate" in refused["detail"]
    assert MARKER not in response.text and "\\u" not in response.text  # not echoed, even escaped
    assert web.state() == before
    # and every read still answers
    ok(web.call("projects.listProjects"))
    ok(web.call("environments.listEnvironmentVariables", target()))
    ok(web.call("gateway.listPolicies", target()))
    ok(web.call("environments.getEnvironment", target()))


def test_the_surrogate_check_comes_after_authentication(emulator: EmulatorServer) -> None:
    response = emulator.http.post(
        "/v1/projects.createProject",
        content=json.dumps({"name": "\udc00", "slug": "surro"}),
        headers={"Content-Type": "application/json"},
    )
    problem(response, 401)


def test_an_escaped_surrogate_pair_is_a_valid_character(emulator: EmulatorServer) -> None:
    ok(_post_raw(emulator, "/v1/projects.createProject", {"name": "\ud83d\ude00", "slug": "smile"}))
    assert ok(emulator.call("projects.getProject", {"project": "smile"}))["data"]["name"] == "😀"


def test_admin_bodies_refuse_lone_surrogates_too(emulator: EmulatorServer) -> None:
    record = {"type": "TXT", "name": "x.example.com", "value": f"{MARKER}\udc00"}
    response = _post_raw(emulator, "/_emulator/dns", {"records": [record]}, method="PUT")
    problem(response, 400, "records[0].value")
    assert emulator.state()["dns"] == []


def test_answers_stay_encodable_when_the_state_file_holds_a_lone_surrogate(
    start_emulator, tmp_path: Path
) -> None:
    """A hand-edited state file can hold what the API refuses: reads answer a 500 problem and a
    problem naming the object escapes the surrogate, never a text/plain crash."""
    path = tmp_path / "state.json"
    first = start_emulator(EmulatorConfig(dev_key="k", state_file=path, step_ms=20))
    make_project(first)
    make_app(first)
    body = {**target(), "domain": "www.example.com"}
    domain_id = ok(first.call("domains.createDomain", body))["data"]["domainId"]
    state = json.loads(path.read_text())
    (project,) = state["projects"].values()
    project["name"] = "bad\udc00name"
    domain = state["domains"][domain_id]
    domain["domain"] = "bad\udc00.example.com"
    domain["status"] = "verified"
    path.write_text(json.dumps(state))  # escapes the surrogate as \udc00

    second = start_emulator(EmulatorConfig(dev_key="k", state_file=path, step_ms=20))
    problem(second.call("projects.getProject", {"project": "shop"}), 500)
    problem(second.call("projects.listProjects"), 500)
    problem(second.http.get("/_emulator/state", headers=second.admin_headers), 500)
    refused = problem(second.call("domains.verifyDomain", {"domain": domain_id}), 412)
    assert "is already verified" in refused["detail"]
