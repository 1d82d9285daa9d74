"""shapes.py is the one place that says what reconciler knows of a resource: what a live
answer holds beyond it is unknown (members a newer platform added, values it documents
none of)."""

from __future__ import annotations

from reconciler.platform.shapes import (
    ENVIRONMENT,
    POLICY,
    known_part,
    unknown_members,
    unknown_part,
    unknown_values,
)

POLICY_LIVE = {
    "id": "pol_1",
    "createdAt": 1,  # the platform's own, on every resource: known
    "name": "rl",
    "enabled": True,
    "match": [
        {"path": {"path": {"prefix": "/api", "caseFold": True}}, "country": {"in": ["DE"]}},
        {"method": {"methods": ["GET"]}},
    ],
    "firewall": {"action": "ACTION_DENY", "statusCode": 429},
    "rateLimit": {"perMinute": 5},
}


def test_unknown_members_are_listed_by_path_not_below_an_unknown_one() -> None:
    assert unknown_members(POLICY_LIVE, POLICY) == [
        "match[0].path.path.caseFold",
        "match[0].country",
        "firewall.statusCode",
        "rateLimit",
    ]
    assert unknown_members(POLICY_LIVE, POLICY, indexes=False)[0] == "match[].path.path.caseFold"


def test_unknown_part_keeps_the_form_and_known_part_the_rest() -> None:
    env = {
        "id": "env_1",
        "slug": "production",
        "tier": "gold",
        "runtime": {"port": 1, "gpu": {"kind": "a100"}, "healthcheck": {"path": "/", "grpc": 1}},
        "build": {"rootDirectory": "."},
    }
    assert unknown_part(env, ENVIRONMENT) == {
        "tier": "gold",
        "runtime": {"gpu": {"kind": "a100"}, "healthcheck": {"grpc": 1}},
    }
    assert known_part(env, ENVIRONMENT) == {
        "id": "env_1",
        "slug": "production",
        "runtime": {"port": 1, "healthcheck": {"path": "/"}},
        "build": {"rootDirectory": "."},
    }
    assert unknown_part("not an object", ENVIRONMENT) == {}


def test_values_the_spec_does_not_document_are_found_but_never_refused() -> None:
    env = {
        "slug": "staging",
        "runtime": {"shutdownSignal": "SIGUSR1", "upstreamProtocol": "h2c"},
        "regions": [{"name": "fra", "replicas": {"min": 1, "max": 2}}],
    }
    assert unknown_values(env, ENVIRONMENT) == ["slug", "runtime.shutdownSignal"]
    assert unknown_values({"firewall": {"action": "ACTION_CHALLENGE"}}, POLICY) == [
        "firewall.action"
    ]
    from reconciler.platform.shapes import shape_problem

    assert shape_problem(env, ENVIRONMENT, "data") is None
