"""Hypothesis strategies: gateway policy lists within the spec's bounds, and requests that hit and
miss their conditions.

Values come from small pools that overlap on purpose (`a`/`A`, `q`/`Q`, addresses inside and
outside the ranges, IPv4-mapped ones), and requests are built around what the policies mention,
so that conditions hit and miss by small margins and every open choice decides some request:
regex anchoring, ignoreCase, percent-encoded paths, repeated headers and query parameters,
lower-case methods, IPv4 and IPv6 ranges, host bits.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

Json = dict[str, Any]

POLICY_NAMES = ("deny-a", "log-all", "deny-ip", "log-api", "rule")
PATH_SEGMENTS = ("a", "A", "b", "ab", "B", "%61", "1", "12")
PATH_REGEX_TOKENS = ("/", "a", "A", "b", ".*", "[ab]+", "(a|B)", "%61", "[0-9]+", "/?", "a/")
VALUE_TEXTS = ("a", "A", "b", "ab", "1", "a,b", "A,b")
VALUE_REGEX_TOKENS = ("a", "A", "b", ".*", "[ab]", "(1|b)", ",", "[0-9]?")
HEADER_NAMES = ("X-A", "x-a", "X-B", "Accept")
QUERY_NAMES = ("q", "Q", "r")
METHODS_WRITTEN = ("GET", "POST", "PUT", "DELETE", "get", "PURGE")
METHODS_SENT = ("GET", "POST", "PUT", "DELETE", "PURGE")
RANGES = (
    "10.0.0.0/8",
    "10.0.0.1/8",
    "192.0.2.0/24",
    "203.0.113.7",
    "0.0.0.0/0",
    "2001:db8::/32",
    "2001:db8::1",
    "::ffff:192.0.2.0/120",
    "::ffff:10.0.0.0/104",
    "::/0",
)
PATH_POOL = ("/", "/a", "/A/b", "/%61", "/ab/1")
WITNESS_ALPHABET = "aAbB1/%6,"  # what strings drawn from the regexes are made of
CLIENT_IPS = (
    "10.1.2.3",
    "10.200.0.1",
    "192.0.2.5",
    "203.0.113.7",
    "203.0.113.8",
    "8.8.8.8",
    "2001:db8::1",
    "2001:db8:1::5",
    "2001:db9::1",
    "::ffff:192.0.2.5",
    "::ffff:10.1.2.3",
    "fe80::1",
)


def _regex(tokens: tuple[str, ...], start: str = "") -> st.SearchStrategy[str]:
    body = st.lists(st.sampled_from(tokens), min_size=1, max_size=4).map(
        lambda t: start + "".join(t)
    )
    anchors = st.tuples(st.sampled_from(("", "^", ".*")), st.sampled_from(("", "$", ".*")))
    return st.tuples(anchors, body).map(lambda parts: parts[0][0] + parts[1] + parts[0][1])


def _string_condition(
    literals: st.SearchStrategy[str], regex: st.SearchStrategy[str]
) -> st.SearchStrategy[Json]:
    kind_and_text = st.one_of(
        st.tuples(st.sampled_from(("exact", "prefix")), literals),
        st.tuples(st.just("regex"), regex),
    )
    return st.builds(
        lambda pair, ignore_case: {
            pair[0]: pair[1],
            **({"ignoreCase": ignore_case} if ignore_case is not None else {}),
        },
        kind_and_text,
        st.sampled_from((None, False, True, True)),
    )


_PATH_LITERALS = st.lists(st.sampled_from(PATH_SEGMENTS), max_size=2).map(
    lambda s: "/" + "/".join(s)
)
_VALUE_CONDITION = _string_condition(st.sampled_from(VALUE_TEXTS), _regex(VALUE_REGEX_TOKENS))


def _present(names: tuple[str, ...]) -> st.SearchStrategy[Json]:
    return st.sampled_from(names).map(lambda name: {"name": name, "present": True})


def _valued(names: tuple[str, ...]) -> st.SearchStrategy[Json]:
    return st.builds(
        lambda name, value: {"name": name, "value": value}, st.sampled_from(names), _VALUE_CONDITION
    )


MEMBERS: dict[str, st.SearchStrategy[Any]] = {
    "path": _string_condition(_PATH_LITERALS, _regex(PATH_REGEX_TOKENS, start="/")).map(
        lambda c: {"path": c}
    ),
    "method": st.lists(st.sampled_from(METHODS_WRITTEN), min_size=1, max_size=3, unique=True).map(
        lambda methods: {"methods": methods}
    ),
    "header": _present(HEADER_NAMES) | _valued(HEADER_NAMES),
    "queryParam": _present(QUERY_NAMES) | _valued(QUERY_NAMES),
    "remoteIp": st.tuples(
        st.sampled_from(("in", "notIn")),
        st.lists(st.sampled_from(RANGES), min_size=1, max_size=3, unique=True),
    ).map(lambda side: {side[0]: side[1]}),
}


@st.composite
def match_items(draw: st.DrawFn) -> Json:
    # mostly one member: with a logging rule, every request then shows that member's outcome
    size = draw(st.sampled_from((1, 1, 1, 2)))
    kinds = draw(st.sets(st.sampled_from(tuple(MEMBERS)), min_size=size, max_size=size))
    return {kind: draw(MEMBERS[kind]) for kind in sorted(kinds)}


@st.composite
def policies(draw: st.DrawFn) -> Json:
    # mostly enabled logging policies: each one's outcome shows in `loggedBy`, while a firewall
    # policy that applies hides every policy after it
    enabled = draw(st.sampled_from((True, True, True, False)))
    policy: Json = {"name": draw(st.sampled_from(POLICY_NAMES)), "enabled": enabled}
    # mostly conditions to meet: a policy matching every request hides the ones after it
    shape = draw(st.sampled_from(("items",) * 7 + ("missing", "null", "empty")))
    if shape != "missing":
        size = draw(st.sampled_from((1, 1, 1, 2)))  # the spec allows up to 10
        items = st.lists(match_items(), min_size=size, max_size=size)
        policy["match"] = {"null": None, "empty": []}[shape] if shape != "items" else draw(items)
    if draw(st.sampled_from((True, False, False, False))):
        policy["firewall"] = {"action": "ACTION_DENY"}
    else:
        flags = ("requestHeaders", "responseHeaders", "requestBody", "responseBody", "query")
        policy["logging"] = draw(st.dictionaries(st.sampled_from(flags), st.booleans()))
    return policy


# one enabled logging policy per kind of member (a header and a query parameter each with a
# value condition too), first in the list: whatever else is drawn, every kind of member decides
# something observable (`loggedBy`) for every request
_OBSERVERS = st.tuples(
    *(MEMBERS[kind] for kind in MEMBERS),
    _valued(HEADER_NAMES),
    _valued(QUERY_NAMES),
).map(
    lambda members: [
        {"name": f"observe-{kind}", "enabled": True, "match": [{kind: member}], "logging": {}}
        for kind, member in zip((*MEMBERS, "header", "queryParam"), members, strict=True)
    ]
)
policy_lists = st.tuples(_OBSERVERS, st.lists(policies(), max_size=10)).map(
    lambda lists: lists[0] + lists[1]  # the spec allows up to 50
)


@dataclass(frozen=True)
class SampleRequest:
    method: str
    target: str  # path and query, as given to httpx
    headers: tuple[tuple[str, str], ...]  # names in varying case, repeats allowed
    client_ip: str


def _query_part(pair: tuple[str, str | None]) -> str:
    name, value = pair
    return name if value is None else f"{name}={value}"


def sample_requests_for(policies: list[Json]) -> st.SearchStrategy[SampleRequest]:
    """Requests whose parts come from the pools and from the policies themselves: their names
    and literal texts, strings their regexes match, their methods, and addresses at and just past
    the edges of their ranges; each text sometimes in swapped case. So conditions hit and miss
    by small margins, and every open choice gets to decide some request."""
    found = _Found()
    for policy in policies:
        for item in policy.get("match") or ():
            found.add(item)
    text = _texts(found.texts, found.text_regexes, VALUE_TEXTS)
    value = st.one_of(st.none(), text, text, text)  # `name` alone, or `name=value`
    pair = st.tuples(_one_of(found.query_names, QUERY_NAMES), value)
    target = st.tuples(
        _texts(found.paths, found.path_regexes, PATH_POOL),
        st.lists(pair, max_size=4).map(lambda pairs: "&".join(map(_query_part, pairs))),
    )
    return st.builds(
        SampleRequest,
        method=_one_of(found.methods, METHODS_SENT),
        target=target.map(lambda parts: parts[0] + (f"?{parts[1]}" if parts[1] else "")),
        headers=st.lists(
            st.tuples(_one_of(found.header_names, HEADER_NAMES), text), max_size=4
        ).map(tuple),
        client_ip=_one_of(found.addresses, CLIENT_IPS),
    )


@st.composite
def probes_for(draw: st.DrawFn, policies: list[Json]) -> list[SampleRequest]:
    """For each member of the policies, requests that vary only what it looks at, around the
    value it wants: a text it matches (drawn from its regex) and that text in other case, longer
    or after something; a header sent twice, a query parameter twice either way round, a name
    in other case; every listed method; the edges of every range. A policy whose match is this
    one member (most are) then shows, in `loggedBy`, each open choice deciding."""
    probes: list[SampleRequest] = []
    for policy in policies:
        for item in policy.get("match") or ():
            for kind, member in item.items():
                probes += _PROBES[kind](draw, member)
    return probes


def _wanted(draw: st.DrawFn, condition: Json) -> list[str]:
    """A text the condition matches, then near misses of it."""
    if "regex" in condition:
        text = draw(st.from_regex(condition["regex"], fullmatch=True, alphabet=WITNESS_ALPHABET))
    else:
        text = condition.get("exact") or condition["prefix"]
    return [change(text) for change in dict.fromkeys(_NEAR_MISSES)]


def _request(
    target: str = "/",
    headers: tuple[tuple[str, str], ...] = (),
    method: str = "GET",
    client_ip: str = "192.0.2.5",
) -> SampleRequest:
    return SampleRequest(method, target, headers, client_ip)


def _path_probes(draw: st.DrawFn, member: Json) -> list[SampleRequest]:
    return [
        _request(text if text.startswith("/") else "/" + text)
        for text in _wanted(draw, member["path"])
    ]


def _method_probes(draw: st.DrawFn, member: Json) -> list[SampleRequest]:
    return [_request(method=m.upper()) for m in member["methods"]] + [_request(method="PATCH")]


def _header_probes(draw: st.DrawFn, member: Json) -> list[SampleRequest]:
    name = member["name"]
    texts = _wanted(draw, member["value"]) if "value" in member else ["a"]
    return [
        *(_request(headers=((name.swapcase(), text),)) for text in texts),
        _request(headers=((name, texts[0]), (name.upper(), "b"))),
        _request(headers=((name, "b"), (name, texts[0]))),
        _request(headers=(("X-Other", texts[0]),)),
    ]


def _query_probes(draw: st.DrawFn, member: Json) -> list[SampleRequest]:
    name = member["name"]
    texts = _wanted(draw, member["value"]) if "value" in member else ["a"]
    return [
        *(_request(f"/?{name}={text}") for text in texts),
        _request(f"/?{name}={texts[0]}&{name}=b"),
        _request(f"/?{name}=b&{name}={texts[0]}"),
        _request(f"/?{name.swapcase()}={texts[0]}"),
        _request(f"/?{name}"),
    ]


def _remote_ip_probes(draw: st.DrawFn, member: Json) -> list[SampleRequest]:
    ranges = member.get("in") or member["notIn"]
    near = [a for written in ranges for a in _near(ipaddress.ip_network(written, strict=False))]
    return [_request(client_ip=address) for address in dict.fromkeys(near)]


_PROBES = {
    "path": _path_probes,
    "method": _method_probes,
    "header": _header_probes,
    "queryParam": _query_probes,
    "remoteIp": _remote_ip_probes,
}


def _one_of(own: list[str], pool: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Two draws in three from what the policies mention, when they mention any."""
    if not own:
        return st.sampled_from(pool)
    return st.one_of(st.sampled_from(own), st.sampled_from(own), st.sampled_from(pool))


def _texts(
    literals: list[str], regexes: list[str], pool: tuple[str, ...]
) -> st.SearchStrategy[str]:
    witnesses = [st.from_regex(r, fullmatch=True, alphabet=WITNESS_ALPHABET) for r in regexes]
    plain = st.one_of(_one_of(literals, pool), *witnesses)
    return st.tuples(plain, st.sampled_from(_NEAR_MISSES)).map(lambda drawn: drawn[1](drawn[0]))


# a text as drawn, or changed a little: other case, longer (a prefix still holds, an exact or
# whole-value match no longer does), something before it (a search would still find it)
_NEAR_MISSES = (
    str,
    str,
    str.swapcase,
    str.swapcase,
    lambda text: text + "b",
    lambda text: "/1" + text,
)


class _Found:
    """What the policies' conditions mention, and near misses of it."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.path_regexes: list[str] = []
        self.texts: list[str] = []
        self.text_regexes: list[str] = []
        self.header_names: list[str] = []
        self.query_names: list[str] = []
        self.methods: list[str] = []
        self.addresses: list[str] = []

    def add(self, item: Json) -> None:
        if "path" in item:
            self._condition(item["path"]["path"], self.paths, self.path_regexes)
            self.paths += [text + "/a" for text in self.paths[-1:]]
        for kind, names in (("header", self.header_names), ("queryParam", self.query_names)):
            if kind in item:
                names += [item[kind]["name"], item[kind]["name"].swapcase()]
                if "value" in item[kind]:
                    self._condition(item[kind]["value"], self.texts, self.text_regexes)
        self.methods += [m.upper() for m in (item.get("method") or {}).get("methods", ())]
        for ranges in (item.get("remoteIp") or {}).values():
            for written in ranges:
                self.addresses += _near(ipaddress.ip_network(written, strict=False))

    @staticmethod
    def _condition(condition: Json, literals: list[str], regexes: list[str]) -> None:
        if "regex" in condition:
            regexes.append(condition["regex"])
        else:
            written = condition.get("exact") or condition["prefix"]
            literals += [written, *written.split(",")]


def _near(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> list[str]:
    """The first and last address of a range and the ones just outside it, IPv4 ones also
    written as IPv4-mapped IPv6 addresses, IPv4-mapped ones also as IPv4."""
    first, last = network.network_address, network.broadcast_address
    edges = [first, last]
    edges += [first - 1] if int(first) > 0 else []
    edges += [last + 1] if int(last) < 2**network.max_prefixlen - 1 else []
    shown = [str(address) for address in edges]
    mapped = [a.ipv4_mapped for a in edges if isinstance(a, ipaddress.IPv6Address)]
    shown += [str(address) for address in mapped if address is not None]
    return shown + [f"::ffff:{address}" for address in edges if address.version == 4]
