"""The list semantics: order, disabled policies, logging goes on, the first firewall ends it;
the explanation of each policy; the shapes accepted; patterns compiled once per list."""

from __future__ import annotations

from typing import Any

import pytest
import re2

from reconciler.manifest.model import Policy, freeze
from reconciler.policy_tests import (
    Mismatch,
    Outcome,
    PolicyError,
    PolicyRef,
    Request,
    Verdict,
    compile_policies,
)

DENY = {"action": "ACTION_DENY"}


def firewall(name: str, *match: dict[str, Any], enabled: bool = True) -> dict[str, Any]:
    return {"name": name, "enabled": enabled, "match": list(match), "firewall": DENY}


def logging(name: str, *match: dict[str, Any], enabled: bool = True) -> dict[str, Any]:
    return {"name": name, "enabled": enabled, "match": list(match), "logging": {"query": True}}


def prefix(text: str) -> dict[str, Any]:
    return {"path": {"path": {"prefix": text}}}


def get(target: str, **extra: Any) -> Request:
    return Request.from_target("GET", target, **extra)


LIST = [
    logging("log-all"),
    firewall("deny-x", prefix("/x")),
    logging("log-after"),
    firewall("deny-all"),
]


def test_first_firewall_that_applies_blocks_and_ends_evaluation() -> None:
    decision = compile_policies(LIST).evaluate(get("/x/1"))
    assert decision.verdict is Verdict.DENY
    assert decision.decided_by == PolicyRef(1, "deny-x")
    assert decision.logged_by == (PolicyRef(0, "log-all"),)
    assert [t.outcome for t in decision.trace] == [
        Outcome.APPLIED,
        Outcome.APPLIED,
        Outcome.NOT_REACHED,
        Outcome.NOT_REACHED,
    ]


def test_logging_policies_record_and_evaluation_goes_on() -> None:
    decision = compile_policies(LIST).evaluate(get("/y"))
    assert decision.decided_by == PolicyRef(3, "deny-all")
    assert [ref.name for ref in decision.logged_by] == ["log-all", "log-after"]
    assert decision.trace[1].outcome is Outcome.NOT_APPLIED


def test_only_logging_policies_allow() -> None:
    decision = compile_policies([logging("a"), logging("b")]).evaluate(get("/"))
    assert decision.allowed and decision.decided_by is None
    assert [ref.index for ref in decision.logged_by] == [0, 1]


def test_disabled_policies_are_skipped() -> None:
    policies = [firewall("off", enabled=False), logging("off-log", enabled=False), logging("on")]
    decision = compile_policies(policies).evaluate(get("/"))
    assert decision.allowed
    assert decision.logged_by == (PolicyRef(2, "on"),)
    assert [t.outcome for t in decision.trace] == [
        Outcome.SKIPPED,
        Outcome.SKIPPED,
        Outcome.APPLIED,
    ]


@pytest.mark.parametrize("match", [None, [], "missing"])
def test_missing_or_empty_match_applies_to_every_request(match: Any) -> None:
    policy: dict[str, Any] = {"name": "all", "enabled": True, "firewall": DENY}
    if match != "missing":
        policy["match"] = match
    decision = compile_policies([policy]).evaluate(get("/anything?at=all"))
    assert decision.decided_by == PolicyRef(0, "all")


def test_every_item_must_match_and_the_first_miss_is_explained() -> None:
    policy = firewall("two-items", prefix("/admin"), {"method": {"methods": ["POST"]}})
    compiled = compile_policies([policy])
    assert compiled.evaluate(Request.from_target("POST", "/admin/x")).verdict is Verdict.DENY
    trace = compiled.evaluate(get("/admin/x")).trace[0]
    assert trace.outcome is Outcome.NOT_APPLIED
    assert trace.mismatch == Mismatch(1, "method", "GET", "method 'GET' is not one of POST")


def test_every_member_of_an_item_must_match() -> None:
    item = {"path": {"path": {"prefix": "/admin"}}, "remoteIp": {"notIn": ["10.0.0.0/8"]}}
    compiled = compile_policies([firewall("office-only", item)])
    assert compiled.evaluate(get("/admin", client_ip="192.0.2.1")).verdict is Verdict.DENY
    inside = compiled.evaluate(get("/admin", client_ip="10.0.0.5")).trace[0].mismatch
    assert inside is not None and (inside.item, inside.member, inside.compared) == (
        0,
        "remoteIp",
        "10.0.0.5",
    )
    elsewhere = compiled.evaluate(get("/public", client_ip="192.0.2.1")).trace[0].mismatch
    assert elsewhere is not None and (elsewhere.member, elsewhere.compared) == ("path", "/public")


def test_no_policies_allow_everything() -> None:
    decision = compile_policies([]).evaluate(get("/"))
    assert decision.allowed and decision.trace == () and decision.logged_by == ()


def test_explanation_names_the_policy_that_decided_instead_and_why_others_did_not() -> None:
    policies = [
        logging("log-debug", {"header": {"name": "X-Debug", "present": True}}),
        firewall("deny-admin", prefix("/admin")),
        firewall("deny-bots", {"header": {"name": "User-Agent", "value": {"prefix": "bot"}}}),
    ]
    request = get("/admin/users", headers={"User-Agent": "bot/1"})
    text = compile_policies(policies).evaluate(request).explain()
    assert text.splitlines() == [
        "denied (403) by #1 'deny-admin'",
        "  #0 'log-debug' (logging): did not apply, match[0].header: header 'x-debug' is absent",
        "  #1 'deny-admin' (firewall): applied, blocked the request (403)",
        "  #2 'deny-bots' (firewall): not reached, evaluation had ended",
    ]


def test_mismatch_names_the_value_compared() -> None:
    policies = [firewall("q", {"queryParam": {"name": "r", "value": {"exact": "2"}}})]
    mismatch = compile_policies(policies).evaluate(get("/?r=1&r=2")).trace[0].mismatch
    assert mismatch is not None
    assert mismatch.compared == "1"
    assert (
        str(mismatch) == "match[0].queryParam: query parameter 'r' = '1' does not match exact '2'"
    )


def test_the_manifest_shape_and_the_live_shape_evaluate_alike() -> None:
    match = (
        {"path": {"path": {"regex": "/api/.*", "ignoreCase": True}}},
        {"method": {"methods": ("POST", "PUT")}},
    )
    manifest = Policy(
        "log-api", True, tuple(freeze(m) for m in match), "logging", freeze({"query": True})
    )
    live = {
        "id": "pol_0123456789abcdef",
        "name": "log-api",
        "enabled": True,
        "match": [
            {"path": {"path": {"regex": "/api/.*", "ignoreCase": True}}},
            {"method": {"methods": ["POST", "PUT"]}},
        ],
        "logging": {
            "requestHeaders": False,
            "responseHeaders": False,
            "requestBody": False,
            "responseBody": False,
            "query": True,
        },
    }
    requests = [Request.from_target(m, t) for m in ("POST", "GET") for t in ("/API/x", "/web")]
    for shape in (manifest.to_api(), live, {**manifest.to_api(), "match": manifest.match}):
        compiled = compile_policies([shape])
        assert [bool(compiled.evaluate(r).logged_by) for r in requests] == [
            True,
            False,
            False,
            False,
        ]


def test_patterns_are_compiled_once_per_list_not_per_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled_patterns: list[str] = []
    original = re2.compile

    def counting(pattern: str, options: Any = None) -> Any:
        compiled_patterns.append(pattern)
        return original(pattern, options=options)

    monkeypatch.setattr(re2, "compile", counting)
    policies = compile_policies(
        [
            firewall("a", {"path": {"path": {"regex": "/a/[0-9]+"}}}),
            logging("b", {"header": {"name": "X", "value": {"regex": "y.*", "ignoreCase": True}}}),
        ]
    )
    for number in range(50):
        policies.evaluate(get(f"/b/{number}", headers={"x": "yes"}))
    assert compiled_patterns == ["/a/[0-9]+", "y.*"]


@pytest.mark.parametrize(
    ("policy", "where"),
    [
        (
            firewall("bad-regex", {"path": {"path": {"regex": "(?<=a)b"}}}),
            "policies[0].match[0].path.path.regex",
        ),
        (
            firewall("two-kinds", {"path": {"path": {"exact": "/a", "prefix": "/a"}}}),
            "policies[0].match[0].path.path",
        ),
        (firewall("empty-item", {}), "policies[0].match[0]"),
        (
            firewall("absent", {"header": {"name": "X", "present": False}}),
            "policies[0].match[0].header.present",
        ),
        (
            firewall("bad-ip", {"remoteIp": {"in": ["10.0.0.0/33"]}}),
            "policies[0].match[0].remoteIp.in[0]",
        ),
        (
            firewall("no-methods", {"method": {"methods": []}}),
            "policies[0].match[0].method.methods",
        ),
        ({"name": "both", "enabled": True, "firewall": DENY, "logging": {}}, "policies[0]"),
        ({"name": "no-rule", "enabled": True}, "policies[0]"),
        ({"name": "no-enabled", "firewall": DENY}, "policies[0].enabled"),
    ],
    ids=lambda value: value if isinstance(value, str) else value["name"],
)
def test_a_policy_the_evaluator_cannot_run_is_refused_with_its_path(
    policy: dict[str, Any], where: str
) -> None:
    with pytest.raises(PolicyError) as raised:
        compile_policies([policy])
    assert raised.value.where == where


def test_a_path_holding_a_query_string_is_refused() -> None:
    with pytest.raises(ValueError, match=r"Request\.from_target"):
        Request("GET", "/a?b=1")


def test_header_values_must_be_strings() -> None:
    with pytest.raises(TypeError):
        Request("GET", "/", headers={"X": [1]})  # type: ignore[list-item]
