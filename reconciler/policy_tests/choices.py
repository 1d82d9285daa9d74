"""Where the platform API spec leaves the gateway's matching open: every choice made, in one place.

Each `OpenChoice` names a question the spec does not answer, the answer this package gives, and
why. The small functions below the constants are the answers themselves (the evaluator calls
them, so the documented rule and the applied rule cannot drift apart). The emulator's data plane
(`reconciler/emulator/dataplane.py`) implements the same answers independently; a property test
(`tests/policy_tests/test_agrees_with_emulator.py`) shows the two agree.

`reconciler.policy_tests.dependences` says, for one match member, which of these choices its
outcome depends on, so the manifest validator can warn about such patterns.
"""

from __future__ import annotations

import ipaddress
import string
from collections.abc import Sequence
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class OpenChoice:
    key: str
    question: str
    answer: str
    reason: str


REGEX_FULL_MATCH = OpenChoice(
    key="regex-full-match",
    question="Must a `regex` match the whole value, or is a match anywhere in it enough?",
    answer="The whole value (an RE2 full match): `/api/.*` matches `/api/users`, `api` does not.",
    reason="Istio's StringMatch regex and Envoy's safe_regex are full matches.",
)
IGNORE_CASE_REGEX = OpenChoice(
    key="ignore-case-regex",
    question="Does `ignoreCase` apply to a `regex`?",
    answer="Yes: the regex runs case-insensitively (RE2's own mode, which folds Unicode letters).",
    reason="The spec puts ignoreCase beside regex; silently ignoring it (as Envoy does) would "
    "surprise whoever set it.",
)
IGNORE_CASE_ASCII = OpenChoice(
    key="ignore-case-ascii",
    question="Which letters does `ignoreCase` fold for `exact` and `prefix`?",
    answer="ASCII letters only (A-Z equal a-z); every other character compares exactly.",
    reason="Envoy's ignore_case folds ASCII only, and paths arrive as ASCII (percent-encoded).",
)
PATH_AS_SENT = OpenChoice(
    key="path-as-sent",
    question="Is the path percent-decoded or normalised before matching?",
    answer="No: the path is compared exactly as the client sent it, up to the first `?` (no "
    "percent-decoding, no dot-segment removal, no merging of slashes); `%41` is not `A`.",
    reason="Envoy's default; decoding would change the path's structure (`%2F` is not `/`).",
)
QUERY_AS_SENT = OpenChoice(
    key="query-as-sent",
    question="How is the query string split into parameters, and are they decoded?",
    answer="Split at `&`, each part at its first `=`; names and values are not percent-decoded "
    "(`+` stays `+`); a part without `=` is a parameter with the empty value; empty parts are "
    "ignored.",
    reason="Envoy's route matching compares the query text as sent, like the path.",
)
REPEATED_QUERY_PARAMETER = OpenChoice(
    key="repeated-query-parameter",
    question="How is a query parameter given several times matched?",
    answer="`value` looks at its first value only; `present` at any occurrence.",
    reason="Envoy's router matches the first value of a repeated query parameter.",
)
REPEATED_HEADER = OpenChoice(
    key="repeated-header",
    question="How is a header given several times matched?",
    answer="`value` looks at all its values joined with `,` in the order received; `present` "
    "at any occurrence.",
    reason="Envoy does so (since CVE-2020-25017), and RFC 9110 allows combining field lines so.",
)
METHOD_CASE = OpenChoice(
    key="method-case",
    question="Are `methods` compared case-sensitively?",
    answer="Yes, exactly: `get` does not match `GET`.",
    reason="RFC 9110 methods are case-sensitive; the manifest validator already warns on `get`.",
)
NON_ASCII_BYTES = OpenChoice(
    key="non-ascii-bytes",
    question="How are bytes outside ASCII in the path, query or a header value read?",
    answer="As ISO-8859-1, one character per byte (UTF-8 `é` arrives as the two characters `Ã©`).",
    reason="RFC 9110 field values are opaque octets; one character per byte never fails.",
)
IP_FAMILIES = OpenChoice(
    key="ip-families",
    question="How do IPv4 and IPv6 addresses compare with ranges of the other family?",
    answer="An IPv4-mapped client address (`::ffff:192.0.2.1`) counts as its IPv4 address and a "
    "range inside `::ffff:0:0/96` as its IPv4 range; otherwise an address is never inside a "
    "range of the other family (`::/0` holds no IPv4 client), so it is outside all of them.",
    reason="Dual-stack listeners report IPv4 clients as mapped addresses; users write IPv4 ranges.",
)
RANGE_HOST_BITS = OpenChoice(
    key="range-host-bits",
    question="What does a range with host bits set (`10.0.0.1/8`) mean?",
    answer="The range its prefix names (`10.0.0.0/8`).",
    reason="The platform accepts such ranges and Envoy's CIDR ranges mask the host bits.",
)
UNKNOWN_CLIENT_IP = OpenChoice(
    key="unknown-client-ip",
    question="What if the connection gives no usable client IP (a Unix socket)?",
    answer="It is outside every range: `in` never matches, `notIn` always matches.",
    reason="Fails closed: `deny` + `notIn: [office]` still blocks a client of unknown address.",
)

OPEN_CHOICES: tuple[OpenChoice, ...] = (
    REGEX_FULL_MATCH,
    IGNORE_CASE_REGEX,
    IGNORE_CASE_ASCII,
    PATH_AS_SENT,
    QUERY_AS_SENT,
    REPEATED_QUERY_PARAMETER,
    REPEATED_HEADER,
    METHOD_CASE,
    NON_ASCII_BYTES,
    IP_FAMILIES,
    RANGE_HOST_BITS,
    UNKNOWN_CLIENT_IP,
)


# ---- the answers ------------------------------------------------------------------------------

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def fold_ascii(text: str) -> str:
    """IGNORE_CASE_ASCII: `text` with A-Z lowered and nothing else changed."""
    return text.translate(_ASCII_LOWER)


def split_target(target: str) -> tuple[str, dict[str, list[str]]]:
    """PATH_AS_SENT and QUERY_AS_SENT: a request target (`/a/b?x=1&y`) as path and parameters.

    A fragment (`#...`, which clients never send) is cut first."""
    path, _, query = target.partition("#")[0].partition("?")
    return path, parse_query(query)


def parse_query(query: str) -> dict[str, list[str]]:
    """QUERY_AS_SENT: parameter name -> values in order, nothing decoded."""
    parameters: dict[str, list[str]] = {}
    for part in query.split("&"):
        if part:
            name, _, value = part.partition("=")
            parameters.setdefault(name, []).append(value)
    return parameters


def first_value(values: Sequence[str]) -> str | None:
    """REPEATED_QUERY_PARAMETER: the value a query parameter's `value` condition sees."""
    return values[0] if values else None


def combined_value(values: Sequence[str]) -> str | None:
    """REPEATED_HEADER: the value a header's `value` condition sees."""
    return ",".join(values) if values else None


def client_address(text: str | None) -> Address | None:
    """IP_FAMILIES and UNKNOWN_CLIENT_IP: the client address ranges are compared with, or None.

    A zone (`fe80::1%eth0`) and brackets are dropped; a mapped IPv4 address becomes IPv4."""
    if not text:
        return None
    try:
        address = ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


_IPV4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")


def address_range(text: str) -> Network:
    """RANGE_HOST_BITS and IP_FAMILIES: the range a `remoteIp` entry names (an address alone is
    a range of one). Raises ValueError for text that is neither."""
    network = ipaddress.ip_network(text, strict=False)
    if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(_IPV4_MAPPED):
        mapped = network.network_address.ipv4_mapped
        assert mapped is not None  # inside ::ffff:0:0/96
        return ipaddress.IPv4Network((mapped, network.prefixlen - 96))
    return network


def inside_any(address: Address | None, ranges: Sequence[Network]) -> bool:
    """IP_FAMILIES and UNKNOWN_CLIENT_IP: whether the client is inside one of `ranges`."""
    if address is None:
        return False
    return any(address.version == r.version and address in r for r in ranges)


def covers_mapped_space(network: Network) -> bool:
    """An IPv6 range that holds IPv4-mapped addresses without being one (`::/0`)."""
    return isinstance(network, ipaddress.IPv6Network) and _IPV4_MAPPED.subnet_of(network)
