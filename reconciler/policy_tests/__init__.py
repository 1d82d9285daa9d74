"""Gateway policy evaluation: what the platform's gateway does with one request.

A pure engine (no I/O, no platform calls) for the issue "Gateway policy tests": it serves the
manifest's policy list (`Policy.to_api()`) and the live one (`gateway.listPolicies`) alike.

    policies = compile_policies(listed)            # RE2 patterns compiled once per list
    decision = policies.evaluate(Request.from_target("GET", "/admin?x=1", client_ip="192.0.2.7"))
    decision.verdict, decision.decided_by, decision.logged_by, decision.explain()

Where the spec leaves matching open, the answer is in `choices` (`OPEN_CHOICES`), and
`choices_affecting(kind, member)` says which answers a match member's outcome depends on.
"""

from reconciler.policy_tests.choices import OPEN_CHOICES, OpenChoice
from reconciler.policy_tests.dependences import Dependence, choices_affecting
from reconciler.policy_tests.engine import (
    BLOCKED_STATUS,
    Decision,
    Mismatch,
    Outcome,
    PolicyList,
    PolicyRef,
    PolicyTrace,
    Verdict,
    compile_policies,
)
from reconciler.policy_tests.matchers import MEMBER_KINDS, PolicyError
from reconciler.policy_tests.request import Request

__all__ = [
    "BLOCKED_STATUS",
    "MEMBER_KINDS",
    "OPEN_CHOICES",
    "Decision",
    "Dependence",
    "Mismatch",
    "OpenChoice",
    "Outcome",
    "PolicyError",
    "PolicyList",
    "PolicyRef",
    "PolicyTrace",
    "Request",
    "Verdict",
    "choices_affecting",
    "compile_policies",
]
