"""Gateway policy evaluation: what the platform's gateway does with one request.

A pure engine (no I/O, no platform calls) for the issue "Gateway policy tests": it serves the
manifest's policy list (`Policy.to_api()`) and the live one (`gateway.listPolicies`) alike.

    policies = compile_policies(listed)            # RE2 patterns compiled once per list
    decision = policies.evaluate(Request.from_target("GET", "/admin?x=1", client_ip="192.0.2.7"))
    decision.verdict, decision.decided_by, decision.logged_by, decision.explain()

Where the spec leaves matching open, the answer is in `choices` (`OPEN_CHOICES`), and
`choices_affecting(kind, member)` says which answers a match member's outcome depends on.

Loaded lazily, as reconciler.platform is: every command that reads a manifest imports
`lint` (and through it `choices` and `dependences`), and only a plan that changes a policy
list, `reconciler test`, or a name taken from here, imports the engine and re2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reconciler.lazy_names import lazy_names

if TYPE_CHECKING:  # what `__getattr__` returns, for type checkers
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

_WHERE = {
    "BLOCKED_STATUS": "reconciler.policy_tests.engine",
    "MEMBER_KINDS": "reconciler.policy_tests.matchers",
    "OPEN_CHOICES": "reconciler.policy_tests.choices",
    "Decision": "reconciler.policy_tests.engine",
    "Dependence": "reconciler.policy_tests.dependences",
    "Mismatch": "reconciler.policy_tests.engine",
    "OpenChoice": "reconciler.policy_tests.choices",
    "Outcome": "reconciler.policy_tests.engine",
    "PolicyError": "reconciler.policy_tests.matchers",
    "PolicyList": "reconciler.policy_tests.engine",
    "PolicyRef": "reconciler.policy_tests.engine",
    "PolicyTrace": "reconciler.policy_tests.engine",
    "Request": "reconciler.policy_tests.request",
    "Verdict": "reconciler.policy_tests.engine",
    "choices_affecting": "reconciler.policy_tests.dependences",
    "compile_policies": "reconciler.policy_tests.engine",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_names(__name__, _WHERE)
