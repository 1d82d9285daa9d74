"""Running policy tests offline: each test's request through its environment's ordered policy
list, compared with what the test expects.

`run_tests(environments)` gives one `TestResult` per test, in order; the report package
(reconciler/report/policy_tests.py) renders them as text, JSON or JUnit XML.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from reconciler.policy_tests.cases import Place, PolicyTestCase
from reconciler.policy_tests.engine import Decision, PolicyList
from reconciler.policy_tests.request import Request

Status = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True)
class EnvironmentTests:
    """The tests of one environment and its compiled policy list; `address` is
    `<project>/<app>/<env>`."""

    address: str
    policies: PolicyList
    tests: tuple[PolicyTestCase, ...]


@dataclass(frozen=True)
class TestResult:
    """What became of one test. `actual`, `decided_by` and `logged_by` are what the gateway
    (offline: the evaluator) did; `failures` say which expectation was not met, `explanation`
    why the gateway decided so (a failing offline test: `Decision.explain()`), `skip_reason`
    why a live test was not sent."""

    environment: str
    test: PolicyTestCase
    status: Status
    actual: Literal["allow", "deny"] | None = None
    decided_by: str | None = None
    logged_by: tuple[str, ...] | None = None
    failures: tuple[str, ...] = ()
    explanation: str = ""
    skip_reason: str = ""
    host: str | None = None

    @property
    def name(self) -> str:
        return self.test.name

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def position(self) -> Place | None:
        return self.test.pos


def request_of(test: PolicyTestCase) -> Request:
    return Request(
        test.method,
        test.path,
        query=test.query,
        headers=test.headers,
        client_ip=test.client_ip,
    )


def run_tests(environments: Sequence[EnvironmentTests]) -> list[TestResult]:
    return [
        evaluate(environment.address, environment.policies, test)
        for environment in environments
        for test in environment.tests
    ]


def evaluate(address: str, policies: PolicyList, test: PolicyTestCase) -> TestResult:
    decision = policies.evaluate(request_of(test))
    undecided = undecided_reason(test, decision)
    if undecided is not None:
        return TestResult(
            environment=address,
            test=test,
            status="skipped",
            skip_reason=undecided,
            explanation=decision.explain(),
        )
    decided_by = decider_name(decision)
    logged_by = tuple(ref.name for ref in decision.logged_by)
    failures = expectation_failures(test, decision.verdict.value, decided_by, logged_by)
    return TestResult(
        environment=address,
        test=test,
        status="failed" if failures else "passed",
        actual=decision.verdict.value,
        decided_by=decided_by,
        logged_by=logged_by,
        failures=failures,
        explanation=decision.explain() if failures else "",
    )


def undecided_reason(test: PolicyTestCase, decision: Decision) -> str | None:
    """Why the offline evaluation cannot decide `test` (a policy it reaches holds what this
    reconciler does not know, and the outcome the test expects depends on it), None when it
    can."""
    if not decision.verdict_known:
        trace = next(t for t in decision.trace if t.may_block)
    elif test.logged_by is not None and not decision.logging_known:
        trace = next(t for t in decision.undecided if t.rule == "logging")
    else:
        return None
    return (
        f"not decidable offline: policy {trace.policy} {trace.why_undecided()} (run the test "
        "with --live to ask the gateway)"
    )


def expectation_failures(
    test: PolicyTestCase,
    actual: str,
    decided_by: str | None,
    logged_by: tuple[str, ...] | None,
) -> tuple[str, ...]:
    """What the test expected and did not get; `decided_by`/`logged_by` None: not known (a
    live answer says only allow or deny), so not compared."""
    failures = []
    if actual != test.expect:
        by = f" by {decided_by!r}" if decided_by else ""
        failures.append(f"expected {test.expect}, got {actual}{by}")
    elif test.decided_by is not None and decided_by is not None and decided_by != test.decided_by:
        failures.append(f"expected to be denied by {test.decided_by!r}, was by {decided_by!r}")
    if (
        test.logged_by is not None
        and logged_by is not None
        and sorted(logged_by) != sorted(test.logged_by)
    ):
        failures.append(
            f"expected to be logged by {_names(test.logged_by)}, was by {_names(logged_by)}"
        )
    return tuple(failures)


def _names(names: Sequence[str]) -> str:
    return "[" + ", ".join(map(repr, names)) + "]" if names else "no policy"


def summary(results: Sequence[TestResult]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for result in results:
        counts[result.status] += 1
    return counts


def describe(test: PolicyTestCase) -> str:
    """`GET /admin/users?debug=1 from 198.51.100.7`: a test's request in one line."""
    return f"{test.method} {request_target(test)} from {test.client_ip}"


def request_target(test: PolicyTestCase) -> str:
    """`/admin/users?debug=1`: the test's path and query exactly as written (nothing encoded)."""
    query = "&".join(f"{name}={value}" for name, values in test.query.items() for value in values)
    return test.path + (f"?{query}" if query else "")


def decider_name(decision: Decision) -> str | None:
    """The name of the firewall policy that decided, None when the default did."""
    return decision.decided_by.name if decision.decided_by is not None else None
