"""Rules for `policyTests`, and warnings about what a policy list does to requests.

Errors: a test names policies that exist in its environment's list and are of the right kind
(`decidedBy` a firewall policy, `loggedBy` logging policies), its client IP is an address,
its name is unique in the environment, and the environment's `policies` are managed (tests of
a list the manifest does not hold would test nothing). The request path's shape is the JSON
Schema's rule, where editors see it too.

Warnings: an enabled firewall policy without conditions (it blocks every request), policies no
request reaches (after such a policy, or after an enabled firewall policy with the same
conditions), and whatever the `member_checks` the caller passes say about a match member (the
CLI passes reconciler/policy_tests/lint.py's: outcomes that hang on a choice the platform API
spec leaves open; this package sits beside policy_tests and does not import it).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reconciler.manifest.layers import Layered
from reconciler.manifest.policy_rules import MATCH_MEMBERS, Report
from reconciler.manifest.problems import Path

MemberCheck = Callable[[str, Mapping[str, Any]], Sequence[str]]
"""`check(kind, member)`: warnings about one match member (`kind` is `path`, `method`,
`header`, `queryParam` or `remoteIp`, `member` its value as written)."""


def check_tests(report: Report, environment: str, layered: Layered) -> None:
    """The errors of the tests an environment ends up with (after `defaults`)."""
    found = layered.items("policyTests")
    if found is None or not found[0]:
        return
    tests, tests_path = found
    policies = layered.items("policies")
    if policies is None:
        report(
            tests_path,
            f"{environment} has policy tests but the manifest does not manage its policies, so "
            "there is no list to test: add `policies` to the environment (or to `defaults`), "
            "or remove the tests",
            key=True,
        )
        return
    kinds = _policy_kinds([policy for policy, _ in policies[0]])
    names: dict[str, int] = {}
    for index, (test, path) in enumerate(tests):
        if isinstance(test, dict):
            _check_test(report, environment, path, test, kinds)
            name = test.get("name")
            if isinstance(name, str):
                if name in names:
                    report(
                        (*path, "name"),
                        f"test {name!r} is also policyTests[{names[name]}] of {environment}; "
                        "give each test its own name (results are reported by name)",
                    )
                names.setdefault(name, index)


def _policy_kinds(policies: Sequence[Any]) -> dict[str, str]:
    """policy name -> `firewall` or `logging` (the first policy of a name wins)."""
    kinds: dict[str, str] = {}
    for policy in policies:
        if isinstance(policy, dict) and isinstance(policy.get("name"), str):
            kind = "firewall" if "firewall" in policy else "logging"
            kinds.setdefault(policy["name"], kind)
    return kinds


def _check_test(
    report: Report, environment: str, path: Path, test: dict[str, Any], kinds: dict[str, str]
) -> None:
    request = test.get("request")
    client_ip = request.get("clientIp") if isinstance(request, dict) else None
    if isinstance(client_ip, str) and client_ip:
        try:
            ipaddress.ip_address(client_ip)
        except ValueError:
            report(
                (*path, "request", "clientIp"),
                f"{client_ip!r} is not an IP address (e.g. 198.51.100.7 or 2001:db8::7); "
                "a test request comes from one address, not a range",
            )
    decided_by = test.get("decidedBy")
    if isinstance(decided_by, str) and decided_by:
        if test.get("expect") == "allow":
            report(
                (*path, "decidedBy"),
                "decidedBy names the firewall policy that blocks the request, so it goes with "
                "`expect: deny`: remove it or expect deny",
            )
        _named(report, environment, (*path, "decidedBy"), decided_by, "firewall", kinds)
    logged_by = test.get("loggedBy")
    if isinstance(logged_by, list):
        for index, name in enumerate(logged_by):
            if isinstance(name, str) and name:
                _named(report, environment, (*path, "loggedBy", index), name, "logging", kinds)


def _named(
    report: Report, environment: str, path: Path, name: str, kind: str, kinds: dict[str, str]
) -> None:
    actual = kinds.get(name)
    if actual == kind:
        return
    field = "decidedBy" if kind == "firewall" else "loggedBy"
    wanted = [n for n, k in kinds.items() if k == kind]
    listed = ", ".join(map(repr, wanted)) if wanted else "none"
    if actual is None:
        problem = f"no policy of {environment} is named {name!r}"
    else:
        problem = f"{name!r} is a {actual} policy of {environment}"
    report(path, f"{problem}; {field} names a {kind} policy of its list ({listed})")


# ---- warnings about a policy list ---------------------------------------------------------------


def check_list(
    warn: Report,
    listed: Sequence[tuple[Any, Path]],
    member_checks: Sequence[MemberCheck] = (),
) -> None:
    """Warnings about a `policies` list an environment ends up with (in run order, each
    policy with where it is written)."""
    policies = [policy for policy, _ in listed]
    blocking: dict[str, int] = {}  # conditions of an enabled firewall policy -> its index
    catch_all: int | None = None
    for index, (policy, here) in enumerate(listed):
        if not isinstance(policy, dict):
            continue
        conditions = _conditions(policy.get("match"))
        earlier = catch_all if catch_all is not None else blocking.get(conditions or "")
        if earlier is not None and policy.get("enabled") is True:
            warn(here, _unreachable(policies, earlier, same=earlier != catch_all))
        if _blocks(policy):
            if conditions is None:
                warn(
                    here,
                    "this enabled firewall policy has no conditions (`match` missing or "
                    "empty), so it blocks every request with 403 and no later policy is "
                    "reached; add `match` conditions, or set `enabled: false`",
                )
                catch_all = index if catch_all is None else catch_all
            else:
                blocking.setdefault(conditions, index)
        _members(warn, here, policy.get("match"), member_checks)


def _blocks(policy: dict[str, Any]) -> bool:
    return policy.get("enabled") is True and isinstance(policy.get("firewall"), dict)


def _conditions(match: Any) -> str | None:
    """The conditions in a comparable form (items in any order); None: every request."""
    if not match or not isinstance(match, list):
        return None
    return json.dumps(sorted(json.dumps(item, sort_keys=True, default=repr) for item in match))


def _unreachable(policies: Sequence[Any], earlier: int, *, same: bool) -> str:
    name = policies[earlier].get("name")
    why = (
        "with the same conditions, so it blocks every request this one would match"
        if same
        else "without conditions, so it blocks every request"
    )
    return (
        f"no request reaches this policy: policies[{earlier}] {name!r} before it is an enabled "
        f"firewall policy {why}; move this one before it, or remove it"
    )


def _members(warn: Report, path: Path, match: Any, member_checks: Sequence[MemberCheck]) -> None:
    if not isinstance(match, list):
        return
    for index, item in enumerate(match):
        if not isinstance(item, dict):
            continue
        for kind in MATCH_MEMBERS:
            if isinstance(item.get(kind), dict):
                for check in member_checks:
                    for message in check(kind, item[kind]):
                        warn((*path, "match", index, kind), message)
