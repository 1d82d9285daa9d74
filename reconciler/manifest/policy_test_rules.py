"""Rules for `policyTests`, and warnings about what a policy list does to requests.

Errors: a test names policies that exist in its environment's list and are of the right kind
(`decidedBy` a firewall policy, `loggedBy` logging policies), its client IP is an address a
request can come from (one address, not unspecified, multicast or broadcast), its request is
one HTTP carries (the method and header names are tokens, the path, query and header values
hold no control character), its name is unique in the environment, and the environment's
`policies` are managed (tests of a list the manifest does not hold would test nothing). The
request path's shape is the JSON Schema's rule, where editors see it too.

Warnings: an enabled firewall policy without conditions (it blocks every request), policies no
request reaches (after such a policy, or after an enabled firewall policy with the same
conditions), and whatever the `member_checks` the caller passes say about a match member (the
CLI passes reconciler/policy_tests/lint.py's: outcomes that hang on a choice the platform API
spec leaves open; this package sits beside policy_tests and does not import it).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reconciler.diagnostics import Diagnostic
from reconciler.manifest.layers import Layered
from reconciler.manifest.policy_rules import MATCH_MEMBERS, Report
from reconciler.manifest.problems import Path

MemberCheck = Callable[[str, Mapping[str, Any]], Sequence[Diagnostic]]
"""`check(kind, member)`: warnings about one match member (`kind` is `path`, `method`,
`header`, `queryParam` or `remoteIp`, `member` its value as written), without a place: they
are reported where the member is written."""


TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP token (RFC 9110 `tchar`s): a method, a header name. (reconciler/policy_tests/wire.py
holds the same; the two packages import nothing from each other.)"""
TOKEN_CHARACTERS = "letters, digits and !#$%&'*+-.^_`|~"
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""HTTP's control characters (RFC 5234 CTL)."""
CONTROL_BUT_TAB = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""What a header value cannot hold: a tab is whitespace inside a value (RFC 9110)."""
LIMITED_BROADCAST = ipaddress.IPv4Address("255.255.255.255")


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


OPAQUE_KIND = "opaque"
"""The kind of a policy whose rule its `opaque` block gives (a kind this reconciler does not
know)."""


def _policy_kinds(policies: Sequence[Any]) -> dict[str, str]:
    """policy name -> `firewall`, `logging` or `OPAQUE_KIND` (the first policy of a name
    wins)."""
    kinds: dict[str, str] = {}
    for policy in policies:
        if isinstance(policy, dict) and isinstance(policy.get("name"), str):
            kind = next((k for k in ("firewall", "logging") if k in policy), OPAQUE_KIND)
            kinds.setdefault(policy["name"], kind)
    return kinds


def _check_test(
    report: Report, environment: str, path: Path, test: dict[str, Any], kinds: dict[str, str]
) -> None:
    request = test.get("request")
    if isinstance(request, dict):
        _check_request(report, (*path, "request"), request)
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


def _check_request(report: Report, path: Path, request: dict[str, Any]) -> None:
    """A request HTTP carries, from an address a request can come from."""
    method = request.get("method")
    if isinstance(method, str) and method and not TOKEN.fullmatch(method):
        report(
            (*path, "method"),
            f"{method!r} is not an HTTP method: a method is a token of {TOKEN_CHARACTERS} (no "
            "space or control character), sent as written: e.g. GET, POST",
        )
    if isinstance(request.get("path"), str):
        _in_target(report, (*path, "path"), "the path", request["path"])
    for name, at, values in _names(request.get("query"), (*path, "query")):
        _in_target(report, at, f"the name of query parameter {name!r}", name, key=True)
        for place, value in values:
            _in_target(report, place, "the value", value)
    for name, at, values in _names(request.get("headers"), (*path, "headers")):
        if not TOKEN.fullmatch(name):
            report(
                at,
                f"{name!r} is not a header name: a name is a token of {TOKEN_CHARACTERS} (no "
                "space, colon or control character)",
                key=True,
            )
        for place, value in values:
            found = CONTROL_BUT_TAB.search(value)
            if found:
                report(
                    place,
                    f"the value holds {_control(found)}, which HTTP does not allow in a header "
                    "value (CR and LF end the header line): remove it (a tab inside a value is "
                    "allowed)",
                )
    client_ip = request.get("clientIp")
    if isinstance(client_ip, str) and client_ip:
        _check_client_ip(report, (*path, "clientIp"), client_ip)


def _names(table: Any, path: Path) -> list[tuple[str, Path, list[tuple[Path, str]]]]:
    """`query` or `headers` as (name, its path, [(a value's path, the value)])."""
    if not isinstance(table, dict):
        return []
    found = []
    for name, values in table.items():
        at = (*path, name)
        if isinstance(values, list):
            listed = [((*at, i), v) for i, v in enumerate(values) if isinstance(v, str)]
        else:
            listed = [(at, values)] if isinstance(values, str) else []
        found.append((name, at, listed))
    return found


def _in_target(report: Report, path: Path, what: str, text: str, *, key: bool = False) -> None:
    found = CONTROL.search(text)
    if found:
        report(
            path,
            f"{what} holds {_control(found)}, which no request carries (CR and LF end the "
            "request line): remove it, or write it percent-encoded as a client sends it "
            f"(%{ord(found.group()):02X})",
            key=key,
        )


def _control(found: re.Match[str]) -> str:
    char = found.group()
    return f"the control character {char!r} (U+{ord(char):04X}) at character {found.start() + 1}"


def _check_client_ip(report: Report, path: Path, client_ip: str) -> None:
    try:
        address = ipaddress.ip_address(client_ip)
    except ValueError:
        report(
            path,
            f"{client_ip!r} is not an IP address (e.g. 198.51.100.7 or 2001:db8::7); "
            "a test request comes from one address, not a range",
        )
        return
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    plain = mapped if mapped is not None else address
    if plain.is_unspecified:
        what = (
            "the unspecified address, which no request comes from (and which every machine can "
            "bind, so a live run would send from another address)"
        )
    elif plain.is_multicast:
        what = "a multicast address, which no request comes from (a connection is from one host)"
    elif plain == LIMITED_BROADCAST:
        what = "the broadcast address, which no request comes from"
    else:
        return
    report(
        path,
        f"{client_ip!r} is {what}: write the address of the client the test is about, e.g. "
        "198.51.100.7 or 2001:db8::7",
    )


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
    elif actual == OPAQUE_KIND:
        problem = f"{name!r} is a policy of {environment} of a kind this reconciler does not know"
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
                    for found in check(kind, item[kind]):
                        warn((*path, "match", index, kind), found.message)
