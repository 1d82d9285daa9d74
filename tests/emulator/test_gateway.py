"""gateway.*: ordered policies, new IDs on every set, validation of match conditions."""

from __future__ import annotations

import base64
import json

import pytest

from tests.emulator.helpers import list_all, make_app, make_project, ok, problem, target
from tests.fixtures.emulator import EmulatorServer

DENY_ADMIN = {
    "name": "deny-admin",
    "enabled": True,
    "match": [{"path": {"path": {"prefix": "/admin"}}, "remoteIp": {"notIn": ["10.0.0.0/8"]}}],
    "firewall": {"action": "ACTION_DENY"},
}
LOG_API = {"name": "log-api", "enabled": False, "logging": {"requestHeaders": True}}


@pytest.fixture
def web(emulator: EmulatorServer) -> EmulatorServer:
    make_project(emulator)
    make_app(emulator)
    return emulator


def _set(emulator: EmulatorServer, policies: list, environment: str = "production"):
    return emulator.call("gateway.setPolicies", {**target(environment), "policies": policies})


def _list(emulator: EmulatorServer, environment: str = "production") -> list[dict]:
    return ok(emulator.call("gateway.listPolicies", target(environment)))["data"]


def test_set_and_list_in_order_with_defaults(web: EmulatorServer) -> None:
    assert ok(_set(web, [DENY_ADMIN, LOG_API])) == {"data": {}}
    first, second = _list(web)
    assert first["id"].startswith("pol_") and len(first["id"]) >= 8
    assert {k: v for k, v in first.items() if k != "id"} == DENY_ADMIN
    assert second["logging"] == {
        "requestHeaders": True,
        "responseHeaders": False,
        "requestBody": False,
        "responseBody": False,
        "query": False,
    }
    assert "match" not in second and second["enabled"] is False
    assert _list(web, "preview") == []


def test_every_set_gives_new_ids_and_empty_list_removes_all(web: EmulatorServer) -> None:
    ok(_set(web, [DENY_ADMIN, LOG_API]))
    before = [p["id"] for p in _list(web)]
    ok(_set(web, [DENY_ADMIN, LOG_API]))
    after = [p["id"] for p in _list(web)]
    assert not set(before) & set(after) and len(set(after)) == 2
    ok(_set(web, []))
    assert _list(web) == []


def test_update_policy_keeps_id_and_order(web: EmulatorServer) -> None:
    ok(_set(web, [DENY_ADMIN, LOG_API, {**LOG_API, "name": "third"}]))
    ids = [p["id"] for p in _list(web)]
    body = {
        **target(),
        "policyId": ids[1],
        "name": "renamed",
        "enabled": True,
        "match": [{"method": {"methods": ["POST"]}}],
    }
    assert ok(web.call("gateway.updatePolicy", body)) == {"data": {}}
    body = {**target(), "policyId": ids[0], "match": None, "logging": {"query": True}}
    ok(web.call("gateway.updatePolicy", body))
    policies = _list(web)
    assert [p["id"] for p in policies] == ids
    assert policies[1]["name"] == "renamed" and policies[1]["match"] == [
        {"method": {"methods": ["POST"]}}
    ]
    assert "match" not in policies[0] and "firewall" not in policies[0]
    assert policies[0]["logging"]["query"] is True
    problem(web.call("gateway.updatePolicy", {**target(), "policyId": "pol_missing"}), 404)
    body = {**target(), "policyId": ids[0], "firewall": {"action": "ACTION_DENY"}, "logging": {}}
    problem(web.call("gateway.updatePolicy", body), 400, "firewall")
    problem(
        web.call("gateway.updatePolicy", {**target(), "policyId": ids[0], "name": ""}), 400, "name"
    )
    problem(web.call("gateway.updatePolicy", {**target(), "policyId": ""}), 400, "policyId")


def _with_match(match: list) -> dict:
    return {"name": "p", "enabled": True, "firewall": {"action": "ACTION_DENY"}, "match": match}


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"enabled": True, "firewall": {"action": "ACTION_DENY"}}, "policies[1].name"),
        ({"name": "p", "firewall": {"action": "ACTION_DENY"}}, "policies[1].enabled"),
        ({"name": "p", "enabled": 1, "firewall": {"action": "ACTION_DENY"}}, "policies[1].enabled"),
        ({"name": "p", "enabled": True}, "policies[1]"),
        (
            {"name": "p", "enabled": True, "firewall": {"action": "ACTION_DENY"}, "logging": {}},
            "policies[1]",
        ),
        ({"name": "p", "enabled": True, "firewall": {}}, "policies[1].firewall.action"),
        (
            {"name": "p", "enabled": True, "firewall": {"action": "ACTION_ALLOW"}},
            "policies[1].firewall.action",
        ),
        (
            {"name": "p", "enabled": True, "logging": {"headers": True}},
            "policies[1].logging.headers",
        ),
        (
            _with_match([{"path": {"path": {"regex": "(unclosed"}}}]),
            "policies[1].match[0].path.path.regex",
        ),
        (
            _with_match([{"path": {"path": {"regex": "(?=lookahead)"}}}]),
            "policies[1].match[0].path.path.regex",
        ),
        (
            _with_match([{"path": {"path": {"exact": "/a", "prefix": "/b"}}}]),
            "policies[1].match[0].path.path",
        ),
        (_with_match([{"path": {"path": {"ignoreCase": True}}}]), "policies[1].match[0].path.path"),
        (
            _with_match([{"path": {"path": {"exact": "x" * 1025}}}]),
            "policies[1].match[0].path.path.exact",
        ),
        (_with_match([{"method": {"methods": []}}]), "policies[1].match[0].method.methods"),
        (_with_match([{}]), "policies[1].match[0]"),
        (_with_match([{"header": {"name": "x-a"}}]), "policies[1].match[0].header"),
        (
            _with_match([{"header": {"name": "x-a", "present": False}}]),
            "policies[1].match[0].header.present",
        ),
        (_with_match([{"header": {"present": True}}]), "policies[1].match[0].header.name"),
        (
            _with_match([{"queryParam": {"name": "q", "present": True, "value": {"exact": "1"}}}]),
            "policies[1].match[0].queryParam",
        ),
        (
            _with_match([{"queryParam": {"name": "q", "value": {"regex": "a{2,1}"}}}]),
            "policies[1].match[0].queryParam.value.regex",
        ),
        (
            _with_match([{"remoteIp": {"in": ["10.0.0.0/33"]}}]),
            "policies[1].match[0].remoteIp.in[0]",
        ),
        (_with_match([{"remoteIp": {"in": ["not-an-ip"]}}]), "policies[1].match[0].remoteIp.in[0]"),
        (_with_match([{"remoteIp": {"in": []}}]), "policies[1].match[0].remoteIp.in"),
        (
            _with_match([{"remoteIp": {"in": ["1.1.1.1"] * 101}}]),
            "policies[1].match[0].remoteIp.in",
        ),
        (
            _with_match([{"remoteIp": {"in": ["1.1.1.1"], "notIn": ["2.2.2.2"]}}]),
            "policies[1].match[0].remoteIp",
        ),
        (_with_match([{"method": {"methods": ["GET"]}}] * 11), "policies[1].match"),
        (_with_match([{"cookie": {"name": "a"}}]), "policies[1].match[0].cookie"),
        # the member holds the shape the spec gives: path: {path: {...}}, method: {methods: [...]}
        (_with_match([{"path": {"prefix": "/a"}}]), "policies[1].match[0].path.prefix"),
        (_with_match([{"methods": ["GET"]}]), "policies[1].match[0].methods"),
        (_with_match([{"method": {}}]), "policies[1].match[0].method.methods"),
    ],
)
def test_invalid_policy_changes_nothing(web: EmulatorServer, policy: dict, field: str) -> None:
    ok(_set(web, [LOG_API]))
    before = _list(web)
    problem(_set(web, [DENY_ADMIN, policy]), 400, field)
    assert _list(web) == before


def test_valid_match_conditions_are_accepted(web: EmulatorServer) -> None:
    match = [
        {"path": {"path": {"regex": "^/api/v[0-9]+/", "ignoreCase": True}}},
        {"method": {"methods": ["GET", "HEAD"]}, "header": {"name": "X-Debug", "present": True}},
        {"queryParam": {"name": "token", "value": {"prefix": "t_", "ignoreCase": False}}},
        {"remoteIp": {"in": ["2001:db8::/32", "192.0.2.1", "10.0.0.0/8"]}},
    ]
    ok(_set(web, [_with_match(match)]))
    assert _list(web)[0]["match"] == match


def test_limits_pagination_and_404(web: EmulatorServer) -> None:
    many = [{**LOG_API, "name": f"p{i}"} for i in range(51)]
    problem(_set(web, many), 400, "policies")
    ok(_set(web, many[:50]))
    listed = list_all(web, "gateway.listPolicies", target(), limit=20)
    assert [p["name"] for p in listed] == [f"p{i}" for i in range(50)]
    problem(web.call("gateway.listPolicies", target("nope")), 404)
    problem(web.call("gateway.setPolicies", {**target(project="nope"), "policies": []}), 404)
    problem(web.call("gateway.setPolicies", target()), 400, "policies")


def test_a_cursor_holds_a_key_of_one_position(web: EmulatorServer) -> None:
    """Policies sort by position alone: a cursor with a two-integer key was not issued here."""
    ok(_set(web, [{**LOG_API, "name": f"p{i}"} for i in range(3)]))
    page = ok(web.call("gateway.listPolicies", {**target(), "limit": 1}))
    cursor = page["pagination"]["cursor"]
    issued = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert len(issued["k"]) == 1
    forged = base64.urlsafe_b64encode(json.dumps({**issued, "k": [0, 0]}).encode()).decode()
    problem(web.call("gateway.listPolicies", {**target(), "cursor": forged}), 400, "cursor")
