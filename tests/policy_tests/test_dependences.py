"""`choices_affecting`: which open choices a match member's outcome depends on, so the manifest
validator can warn; and the list of open choices itself."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.policy_tests import OPEN_CHOICES, choices_affecting


def path(**condition: Any) -> dict[str, Any]:
    return {"path": condition}


CASES = [
    # regex-full-match: a regex not anchored (or open with .*) at both ends
    ("path", path(regex="/api"), {"regex-full-match"}),
    ("path", path(regex="/api/.*"), {"regex-full-match"}),
    ("path", path(regex="^/api/.*$"), set()),
    ("path", path(regex=".*/admin.*"), set()),
    ("path", path(regex="^/(a|b)/.*"), set()),
    ("path", path(regex="^/a|/b$"), {"regex-full-match"}),
    ("path", path(regex="^/a[|]$"), set()),
    ("path", path(regex="^/a\\$"), {"regex-full-match"}),
    ("path", path(regex="^/a\\.*"), {"regex-full-match"}),
    ("path", path(regex="\\A/a\\z"), set()),
    ("path", path(regex="(?i)^/a$"), set()),
    # ignore-case-regex / ignore-case-ascii
    ("path", path(regex="^/admin$", ignoreCase=True), {"ignore-case-regex"}),
    ("path", path(regex="^/[0-9]+\\d$", ignoreCase=True), set()),
    ("path", path(prefix="/admin", ignoreCase=True), set()),
    (
        "header",
        {"name": "X", "value": {"exact": "straße", "ignoreCase": True}},
        {"ignore-case-ascii", "non-ascii-bytes"},
    ),
    # path-as-sent
    ("path", path(prefix="/a%2Fb"), {"path-as-sent"}),
    ("path", path(exact="/a b"), {"path-as-sent"}),
    ("path", path(prefix="/public/../admin"), {"path-as-sent"}),
    ("path", path(prefix="//admin"), {"path-as-sent"}),
    ("path", path(prefix="/über"), {"path-as-sent", "non-ascii-bytes"}),
    ("path", path(prefix="/api/v1.2/items;x=1"), set()),
    # method-case
    ("method", {"methods": ["GET", "POST"]}, set()),
    ("method", {"methods": ["GET", "get"]}, {"method-case"}),
    # repeated-header
    ("header", {"name": "Accept", "value": {"exact": "a,b"}}, {"repeated-header"}),
    ("header", {"name": "Accept", "value": {"exact": "text/html"}}, set()),
    ("header", {"name": "Accept", "present": True}, set()),
    # query-as-sent
    ("queryParam", {"name": "q", "value": {"exact": "a b"}}, {"query-as-sent"}),
    ("queryParam", {"name": "q", "value": {"exact": "a%20b"}}, {"query-as-sent"}),
    ("queryParam", {"name": "a+b", "present": True}, {"query-as-sent"}),
    ("queryParam", {"name": "q", "value": {"prefix": "abc"}}, set()),
    # ip-families / range-host-bits
    ("remoteIp", {"in": ["10.0.0.0/8", "2001:db8::/32"]}, set()),
    ("remoteIp", {"in": ["::ffff:10.0.0.0/104"]}, {"ip-families"}),
    ("remoteIp", {"notIn": ["::/0"]}, {"ip-families"}),
    ("remoteIp", {"in": ["10.0.0.1/8"]}, {"range-host-bits"}),
    # malformed members have none (the validator reports them otherwise)
    ("path", {"path": {}}, set()),
    ("remoteIp", {"in": ["not an address"]}, set()),
    ("cookie", {"name": "a"}, set()),
]


def _case_id(value: object) -> str:
    # sets are shown sorted: their own order varies with the hash seed, and pytest-xdist
    # workers must collect the same ids
    shown = sorted(value) if isinstance(value, set) else value
    return repr(shown)[:40]


@pytest.mark.parametrize(("kind", "member", "expected"), CASES, ids=_case_id)
def test_choices_affecting(kind: str, member: dict[str, Any], expected: set[str]) -> None:
    found = choices_affecting(kind, member)
    assert {dependence.choice.key for dependence in found} == expected
    assert all(dependence.why and str(dependence) for dependence in found)


def test_every_open_choice_is_written_down_once() -> None:
    keys = [choice.key for choice in OPEN_CHOICES]
    assert len(keys) == len(set(keys)) == 12
    assert all(choice.question and choice.answer and choice.reason for choice in OPEN_CHOICES)
