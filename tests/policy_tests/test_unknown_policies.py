"""What the evaluator does not know (a newer platform's policy kinds, match members and
conditions, firewall actions) it never guesses: a policy holding one is undecided for a
request its known conditions do not rule out, the decision says it is not certain, `reconciler
test` skips such a test saying why, and a plan's outcome for it is `unknown`."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reconciler.policy_tests import Outcome, Request, Verdict, compile_policies
from reconciler.policy_tests.cases import PolicyTestCase
from reconciler.policy_tests.effect import changed_outcomes
from reconciler.policy_tests.run import evaluate

DENY = {"action": "ACTION_DENY"}


def get(target: str, ip: str = "192.0.2.7") -> Request:
    return Request.from_target("GET", target, client_ip=ip)


def rate_limit(name: str = "rl", *match: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "enabled": True, "match": list(match), "rateLimit": {"perMinute": 5}}


def prefix(text: str, **extra: Any) -> dict[str, Any]:
    return {"path": {"path": {"prefix": text, **extra}}}


def test_a_policy_of_an_unknown_kind_makes_the_verdict_uncertain_where_it_is_reached() -> None:
    policies = compile_policies(
        [
            {"name": "deny-x", "enabled": True, "match": [prefix("/x")], "firewall": DENY},
            rate_limit("rl", prefix("/api")),
        ]
    )
    blocked = policies.evaluate(get("/x/1"))  # decided before the unknown policy: certain
    assert blocked.verdict is Verdict.DENY and blocked.verdict_known
    elsewhere = policies.evaluate(get("/web"))  # its known conditions rule it out: certain
    assert elsewhere.verdict is Verdict.ALLOW and elsewhere.verdict_known
    assert elsewhere.trace[1].outcome is Outcome.NOT_APPLIED
    api = policies.evaluate(get("/api/v1"))
    assert not api.verdict_known
    assert api.trace[1].outcome is Outcome.UNDECIDED
    assert api.trace[1].rule == "rateLimit"
    assert "rateLimit" in str(api.trace[1]) and "may block" in str(api.trace[1])


def test_unknown_match_members_and_conditions_and_actions_are_undecided() -> None:
    for policy in (
        {"name": "c", "enabled": True, "match": [{"country": {"in": ["DE"]}}], "firewall": DENY},
        {"name": "f", "enabled": True, "match": [prefix("/a", caseFold=True)], "firewall": DENY},
        {"name": "a", "enabled": True, "firewall": {"action": "ACTION_CHALLENGE"}},
        {"name": "s", "enabled": True, "firewall": DENY, "schedule": {"cron": "* * * * *"}},
    ):
        decision = compile_policies([policy]).evaluate(get("/a"))
        assert not decision.verdict_known, policy
        assert decision.undecided[0].unknown, policy


def test_members_of_a_rule_beside_the_known_ones_do_not_make_it_uncertain() -> None:
    policy = {"name": "fw", "enabled": True, "firewall": {**DENY, "statusCode": 429}}
    decision = compile_policies([policy]).evaluate(get("/"))
    assert decision.verdict is Verdict.DENY and decision.verdict_known


def test_an_undecided_logging_policy_leaves_the_verdict_certain() -> None:
    logging = {
        "name": "log",
        "enabled": True,
        "match": [{"country": {"in": ["DE"]}}],
        "logging": {"requestHeaders": True},
    }
    decision = compile_policies([logging]).evaluate(get("/"))
    assert decision.verdict_known and not decision.logging_known


def case(expect: str, logged_by: tuple[str, ...] | None = None) -> PolicyTestCase:
    from reconciler.manifest.model import PolicyTest

    return PolicyTest("t", "GET", "/api/v1", "192.0.2.7", expect, logged_by=logged_by)  # type: ignore[arg-type]


def test_a_test_the_evaluator_cannot_decide_is_skipped_with_the_policy_named() -> None:
    policies = compile_policies([rate_limit("rl", prefix("/api"))])
    result = evaluate("shop/web/production", policies, case("allow"))
    assert result.status == "skipped"
    assert "'rl'" in result.skip_reason and "rateLimit" in result.skip_reason
    assert "--live" in result.skip_reason


def test_plan_outcomes_show_unknown_with_the_policy_it_depends_on() -> None:
    live = [{"name": "open", "enabled": False, "firewall": DENY}]
    wanted = [rate_limit("rl", prefix("/api"))]
    (change,) = changed_outcomes(live, wanted, [case("allow")])
    assert (change.before, change.after, change.policy) == ("allow", "unknown", "rl")
    assert str(change).endswith("allow -> unknown (rl cannot be evaluated offline)")
    assert changed_outcomes(wanted, wanted, [case("allow")]) == ()


@given(
    st.lists(
        st.sampled_from(
            [
                {"name": "fw", "enabled": True, "match": [prefix("/a")], "firewall": DENY},
                {"name": "log", "enabled": True, "logging": {"query": True}},
                rate_limit("rl", prefix("/a")),
                rate_limit("rl-all"),
                {"name": "off", "enabled": False, "rateLimit": {}},
            ]
        ),
        max_size=6,
    ),
    st.sampled_from(["/", "/a", "/a/b", "/b"]),
)
def test_the_verdict_is_known_exactly_when_no_reached_policy_may_block_unevaluated(
    listed: list[dict[str, Any]], path: str
) -> None:
    decision = compile_policies(listed).evaluate(get(path))
    reached_unknown = False
    for policy in listed:
        if not policy["enabled"]:
            continue
        applies = not policy.get("match") or path.startswith("/a")
        if not applies:
            continue
        if "rateLimit" in policy:
            reached_unknown = True
            continue
        if "firewall" in policy:
            break
    assert decision.verdict_known is (not reached_unknown)
