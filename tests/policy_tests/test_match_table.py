"""Every rule of the spec's match-condition table, and every open choice, with a request that
matches and one that does not: one firewall policy holding one member decides each row."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from reconciler.policy_tests import Request, Verdict, compile_policies


@dataclass(frozen=True)
class Row:
    rule: str
    member: dict[str, Any]
    target: str
    matches: bool
    method: str = "GET"
    headers: dict[str, Any] = field(default_factory=dict)
    client_ip: str | None = "198.51.100.1"


def path(**condition: Any) -> dict[str, Any]:
    return {"path": {"path": condition}}


def header(name: str, **rest: Any) -> dict[str, Any]:
    return {"header": {"name": name, **rest}}


def query(name: str, **rest: Any) -> dict[str, Any]:
    return {"queryParam": {"name": name, **rest}}


def ip(side: str, *ranges: str) -> dict[str, Any]:
    return {"remoteIp": {side: list(ranges)}}


METHODS = {"method": {"methods": ["GET", "POST"]}}

SPEC_RULES = [
    # path: the request path without its query string; exact, prefix, regex, ignoreCase
    Row("path exact", path(exact="/a/b"), "/a/b", True),
    Row("path exact is the whole path", path(exact="/a/b"), "/a/b/", False),
    Row("path exact is case-sensitive", path(exact="/a/b"), "/A/b", False),
    Row("path exact ignoreCase", path(exact="/Admin", ignoreCase=True), "/aDMIN", True),
    Row(
        "path exact ignoreCase still exact", path(exact="/Admin", ignoreCase=True), "/admins", False
    ),
    Row("path prefix", path(prefix="/api"), "/api/v1/users", True),
    Row("path prefix is a prefix of the text", path(prefix="/api"), "/apix", True),
    Row("path prefix misses", path(prefix="/api"), "/ap", False),
    Row("path prefix is case-sensitive", path(prefix="/api"), "/API/v1", False),
    Row("path prefix ignoreCase", path(prefix="/api", ignoreCase=True), "/API/v1", True),
    Row("path regex", path(regex="/items/[0-9]+"), "/items/42", True),
    Row("path regex misses", path(regex="/items/[0-9]+"), "/items/x", False),
    Row("path regex is case-sensitive", path(regex="/admin"), "/ADMIN", False),
    Row("path regex ignoreCase", path(regex="/admin", ignoreCase=True), "/ADMIN", True),
    Row("path is without the query string", path(exact="/search"), "/search?q=1", True),
    Row("query string is not part of the path", path(regex="/s.*q=1.*"), "/s?q=1", False),
    # method: at least one item; the request's method among them
    Row("method listed", METHODS, "/", True, method="POST"),
    Row("method not listed", METHODS, "/", False, method="DELETE"),
    # header: name case-insensitive; present or value
    Row("header present", header("X-Debug", present=True), "/", True, headers={"x-debug": "1"}),
    Row(
        "header present misses",
        header("X-Debug", present=True),
        "/",
        False,
        headers={"x-other": "1"},
    ),
    Row(
        "header name case-insensitive",
        header("X-DEBUG", present=True),
        "/",
        True,
        headers={"x-Debug": "1"},
    ),
    Row(
        "header present with empty value",
        header("X-Debug", present=True),
        "/",
        True,
        headers={"X-Debug": ""},
    ),
    Row(
        "header value exact",
        header("X-Env", value={"exact": "prod"}),
        "/",
        True,
        headers={"X-Env": "prod"},
    ),
    Row(
        "header value exact misses",
        header("X-Env", value={"exact": "prod"}),
        "/",
        False,
        headers={"X-Env": "production"},
    ),
    Row("header value absent", header("X-Env", value={"exact": "prod"}), "/", False),
    Row(
        "header value is case-sensitive",
        header("X-Env", value={"exact": "prod"}),
        "/",
        False,
        headers={"X-Env": "PROD"},
    ),
    Row(
        "header value ignoreCase",
        header("X-Env", value={"exact": "prod", "ignoreCase": True}),
        "/",
        True,
        headers={"X-Env": "PROD"},
    ),
    Row(
        "header value prefix",
        header("User-Agent", value={"prefix": "curl/"}),
        "/",
        True,
        headers={"user-agent": "curl/8.5"},
    ),
    Row(
        "header value prefix misses",
        header("User-Agent", value={"prefix": "curl/"}),
        "/",
        False,
        headers={"user-agent": "Wget/1"},
    ),
    Row(
        "header value regex",
        header("X-Id", value={"regex": "[a-f0-9]{4}"}),
        "/",
        True,
        headers={"X-Id": "beef"},
    ),
    Row(
        "header value regex misses",
        header("X-Id", value={"regex": "[a-f0-9]{4}"}),
        "/",
        False,
        headers={"X-Id": "beefy"},
    ),
    # queryParam: as header, but the name is case-sensitive
    Row("query present", query("debug", present=True), "/?debug=1", True),
    Row("query present misses", query("debug", present=True), "/?debugging=1", False),
    Row("query name case-sensitive", query("debug", present=True), "/?Debug=1", False),
    Row("query value exact", query("page", value={"exact": "2"}), "/list?page=2", True),
    Row("query value exact misses", query("page", value={"exact": "2"}), "/list?page=20", False),
    Row("query value prefix", query("q", value={"prefix": "abc"}), "/?q=abcdef", True),
    Row("query value prefix misses", query("q", value={"prefix": "abc"}), "/?q=xabc", False),
    Row("query value regex", query("id", value={"regex": "[0-9]+"}), "/?id=123", True),
    Row("query value regex misses", query("id", value={"regex": "[0-9]+"}), "/?id=12a", False),
    Row(
        "query value ignoreCase",
        query("m", value={"exact": "on", "ignoreCase": True}),
        "/?m=ON",
        True,
    ),
    # remoteIp: in (inside any range) or notIn (outside all ranges)
    Row("ip in range", ip("in", "10.0.0.0/8", "192.0.2.0/24"), "/", True, client_ip="192.0.2.77"),
    Row("ip in misses", ip("in", "10.0.0.0/8", "192.0.2.0/24"), "/", False, client_ip="11.0.0.1"),
    Row("ip in single address", ip("in", "203.0.113.7"), "/", True, client_ip="203.0.113.7"),
    Row(
        "ip in single address misses", ip("in", "203.0.113.7"), "/", False, client_ip="203.0.113.8"
    ),
    Row(
        "ip notIn outside all",
        ip("notIn", "10.0.0.0/8", "192.0.2.0/24"),
        "/",
        True,
        client_ip="8.8.8.8",
    ),
    Row(
        "ip notIn inside one",
        ip("notIn", "10.0.0.0/8", "192.0.2.0/24"),
        "/",
        False,
        client_ip="192.0.2.1",
    ),
    Row("ip in IPv6", ip("in", "2001:db8::/32"), "/", True, client_ip="2001:db8::1"),
    Row("ip in IPv6 misses", ip("in", "2001:db8::/32"), "/", False, client_ip="2001:db9::1"),
]

OPEN_CHOICES = [
    # regex-full-match
    Row("regex must match the whole path", path(regex="/api"), "/api/users", False),
    Row("regex with .* matches the rest", path(regex="/api/.*"), "/api/users", True),
    Row("regex does not match in the middle", path(regex="api"), "/api", False),
    # ignore-case-regex
    Row(
        "ignoreCase applies to regex",
        header("X-A", value={"regex": "yes|no", "ignoreCase": True}),
        "/",
        True,
        headers={"X-A": "YES"},
    ),
    # ignore-case-ascii
    Row(
        "ignoreCase folds ASCII",
        header("X-A", value={"exact": "abc", "ignoreCase": True}),
        "/",
        True,
        headers={"X-A": "ABC"},
    ),
    Row(
        "ignoreCase leaves non-ASCII exact",
        header("X-A", value={"exact": "é", "ignoreCase": True}),
        "/",
        False,
        headers={"X-A": "É"},
    ),
    # path-as-sent
    Row("path is not percent-decoded", path(prefix="/admin"), "/%61dmin", False),
    Row("percent-encoding compared as written", path(exact="/a%20b"), "/a%20b", True),
    Row("dot segments are not removed", path(prefix="/admin"), "/public/../admin", False),
    Row("slashes are not merged", path(prefix="/admin"), "//admin", False),
    # query-as-sent
    Row("query value not decoded", query("q", value={"exact": "a b"}), "/?q=a%20b", False),
    Row("query value compared as sent", query("q", value={"exact": "a%20b"}), "/?q=a%20b", True),
    Row("plus stays plus", query("q", value={"exact": "a+b"}), "/?q=a+b", True),
    Row("parameter without = is present", query("flag", present=True), "/?flag", True),
    Row(
        "parameter without = has the empty value",
        query("flag", value={"regex": ".*"}),
        "/?flag",
        True,
    ),
    Row(
        "value holds the text after the first =",
        query("e", value={"exact": "a=b"}),
        "/?e=a=b",
        True,
    ),
    # repeated-query-parameter
    Row("repeated parameter: first value", query("r", value={"exact": "1"}), "/?r=1&r=2", True),
    Row(
        "repeated parameter: later value ignored",
        query("r", value={"exact": "2"}),
        "/?r=1&r=2",
        False,
    ),
    Row("repeated parameter present", query("r", present=True), "/?x=0&r=1&r=2", True),
    # repeated-header
    Row(
        "repeated header: values joined",
        header("X-R", value={"exact": "1,2"}),
        "/",
        True,
        headers={"X-R": ["1", "2"]},
    ),
    Row(
        "repeated header: one value alone misses",
        header("X-R", value={"exact": "1"}),
        "/",
        False,
        headers={"X-R": ["1", "2"]},
    ),
    Row(
        "header names differing in case are one header",
        header("x-r", value={"exact": "1,2"}),
        "/",
        True,
        headers={"X-R": "1", "x-r": "2"},
    ),
    # method-case
    Row("methods are case-sensitive", {"method": {"methods": ["get"]}}, "/", False, method="GET"),
    Row(
        "a custom method matches exactly",
        {"method": {"methods": ["PURGE"]}},
        "/",
        True,
        method="PURGE",
    ),
    # ip-families
    Row(
        "mapped client is its IPv4 address",
        ip("in", "10.0.0.0/8"),
        "/",
        True,
        client_ip="::ffff:10.1.2.3",
    ),
    Row(
        "mapped range is its IPv4 range",
        ip("in", "::ffff:10.0.0.0/104"),
        "/",
        True,
        client_ip="10.1.2.3",
    ),
    Row("IPv4 client is not inside ::/0", ip("in", "::/0"), "/", False, client_ip="10.1.2.3"),
    Row(
        "IPv4 client is outside an IPv6 range", ip("notIn", "::/0"), "/", True, client_ip="10.1.2.3"
    ),
    Row(
        "IPv6 client is outside IPv4 ranges",
        ip("notIn", "0.0.0.0/0"),
        "/",
        True,
        client_ip="2001:db8::1",
    ),
    Row(
        "IPv6 client is inside no IPv4 range",
        ip("in", "0.0.0.0/0"),
        "/",
        False,
        client_ip="2001:db8::1",
    ),
    Row(
        "zone of the client address dropped",
        ip("in", "fe80::/10"),
        "/",
        True,
        client_ip="fe80::1%eth0",
    ),
    # range-host-bits
    Row("host bits are masked", ip("in", "10.0.0.1/8"), "/", True, client_ip="10.200.0.1"),
    # unknown-client-ip
    Row(
        "unknown client is inside no range",
        ip("in", "0.0.0.0/0", "::/0"),
        "/",
        False,
        client_ip=None,
    ),
    Row(
        "unknown client is outside all ranges",
        ip("notIn", "0.0.0.0/0", "::/0"),
        "/",
        True,
        client_ip=None,
    ),
    Row(
        "unparseable client is outside all ranges",
        ip("notIn", "10.0.0.0/8"),
        "/",
        True,
        client_ip="unix:/run/sock",
    ),
]


@pytest.mark.parametrize("row", SPEC_RULES + OPEN_CHOICES, ids=lambda row: row.rule)
def test_one_member(row: Row) -> None:
    policies = compile_policies(
        [
            {
                "name": "rule",
                "enabled": True,
                "match": [row.member],
                "firewall": {"action": "ACTION_DENY"},
            }
        ]
    )
    request = Request.from_target(
        row.method, row.target, headers=row.headers, client_ip=row.client_ip
    )
    decision = policies.evaluate(request)
    assert (decision.verdict is Verdict.DENY) is row.matches, decision.explain()


def test_every_member_kind_has_both_outcomes_in_the_spec_rows() -> None:
    kinds = {(next(iter(row.member)), row.matches) for row in SPEC_RULES}
    assert kinds == {
        (kind, outcome)
        for kind in ("path", "method", "header", "queryParam", "remoteIp")
        for outcome in (True, False)
    }
