"""What `reconciler test --live` puts on the wire: the test's request byte for byte, or, when no
request carries it as written, nothing and a skip that says why.

The platform is the emulator (the serving deployment's host is read from it); the requests go
(`--live-via`) to a recording server on loopback that keeps the bytes of each as they arrived,
or, for verdicts, to the emulator's own gateway."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.manifest.model import PolicyTest
from reconciler.policy_tests.wire import NotSendable, Wire, on_the_wire
from tests.fixtures.cli import CliResult, platform_env
from tests.platform.servers import RecordingServer
from tests.policy_tests.cli_helpers import Sample, deployed, firewall, logging, run_test

POLICIES = [logging("log-all")]


@pytest.fixture
def recorder() -> Iterator[RecordingServer]:
    server = RecordingServer()
    yield server
    server.stop()


def sample(name: str, path: str, **fields: Any) -> Sample:
    return Sample(name, path, fields.pop("expect", "allow"), client_ip="127.0.0.1", **fields)


def live(emulator: Any, manifest: Path, via: str, *args: str) -> CliResult:
    return run_test("-f", manifest, "--live", "--live-via", via, *args, env=platform_env(emulator))


def live_json(emulator: Any, manifest: Path, via: str) -> tuple[int, Any]:
    result = live(emulator, manifest, via, "--format", "json")
    assert result.stdout, result.stderr
    return result.exit_code, json.loads(result.stdout)


def request(head: str, host: str, *headers: bytes) -> bytes:
    """`head` (`GET / HTTP/1.1`), Host (which goes first), the headers, the blank line."""
    return b"\r\n".join([head.encode(), f"Host: {host}".encode(), *headers, b"", b""])


def test_the_method_path_and_query_go_as_written(
    emulator: Any, tmp_path: Path, recorder: RecordingServer
) -> None:
    samples = [
        sample("dot segments", "/public/../admin"),
        sample("a lower-case method", "/a/./b//c", method="post"),
        sample("escapes stay escapes", "/%2e%2E/x%41", query={"q": "a+b%20", "e": ""}),
    ]
    manifest = deployed(emulator, tmp_path, POLICIES, samples)
    code, report = live_json(emulator, manifest, recorder.base_url)
    assert code == 0, report
    host = report["results"][0]["host"]
    assert recorder.received == [
        request("GET /public/../admin HTTP/1.1", host),
        request("post /a/./b//c HTTP/1.1", host),  # no Content-Length the test does not set
        request("GET /%2e%2E/x%41?q=a+b%20&e= HTTP/1.1", host),
    ]
    assert recorder.clients == ["127.0.0.1"] * 3


def test_header_values_go_as_iso_8859_1_bytes_names_as_written(
    emulator: Any, tmp_path: Path, recorder: RecordingServer
) -> None:
    headers = {"X-Name": "José", "x-tags": ["a", "b c"], "X-Sign": "¡ÿ"}
    manifest = deployed(emulator, tmp_path, POLICIES, [sample("latin-1", "/", headers=headers)])
    code, report = live_json(emulator, manifest, recorder.base_url)
    assert code == 0, report
    assert recorder.received == [
        request(
            "GET / HTTP/1.1",
            report["results"][0]["host"],
            b"X-Name: Jos\xe9",
            b"x-tags: a",
            b"x-tags: b c",
            b"X-Sign: \xa1\xff",
        )
    ]


def test_the_gateway_reads_a_header_value_as_the_offline_evaluation_does(
    emulator: Any, tmp_path: Path
) -> None:
    """The emulator's gateway reads each byte as one ISO-8859-1 character, as the guide says
    the gateway does: the value sent is the value the policy names."""
    policies = [firewall("block-jose", {"header": {"name": "x-name", "value": {"exact": "José"}}})]
    samples = [
        sample("José is blocked", "/", headers={"X-Name": "José"}, expect="deny"),
        sample("Jose is not", "/", headers={"X-Name": "Jose"}),
    ]
    manifest = deployed(emulator, tmp_path, policies, samples)
    assert run_test("-f", manifest).exit_code == 0  # offline
    code, report = live_json(emulator, manifest, emulator.base_url)
    assert code == 0, report
    assert [r["actual"] for r in report["results"]] == ["deny", "allow"]


UNSENDABLE = [
    (
        sample("a non-ASCII path", "/café"),
        "the path holds 'é' (U+00E9), which a request target cannot carry",
        "percent-encoded as its UTF-8 bytes (%C3%A9)",
    ),
    (
        sample("a snowman", "/☃/x"),
        "the path holds '☃' (U+2603), which a request target cannot carry",
        "(%E2%98%83)",
    ),
    (sample("a space", "/a b"), "the path holds ' ' (U+0020)", "(%20)"),
    (
        sample("a snowman header", "/", headers={"X-Sign": "☃"}),
        "header 'X-Sign' holds '☃' (U+2603), which is not one byte",
        "ISO-8859-1",
    ),
    (
        sample("a padded header", "/", headers={"X-Pad": " a"}),
        "header 'X-Pad' begins or ends with a space or tab",
        "remove them",
    ),
    (
        sample("an ampersand in a value", "/", query={"q": "a&b"}),
        "the value of query parameter 'q' holds '&'",
        "percent-encode it (%26)",
    ),
    (
        sample("an equals sign in a name", "/", query={"a=b": "c"}),
        "the name of query parameter 'a=b' holds '='",
        "percent-encode it (%3D)",
    ),
    (
        sample("a non-ASCII query value", "/", query={"q": "ü"}),
        "the value of query parameter 'q' holds 'ü' (U+00FC)",
        "(%C3%BC)",
    ),
]


def test_what_no_request_carries_as_written_is_skipped_and_every_test_has_a_result(
    emulator: Any, tmp_path: Path, recorder: RecordingServer
) -> None:
    samples = [sample("sent", "/ok"), *(s for s, _, _ in UNSENDABLE), sample("sent too", "/")]
    manifest = deployed(emulator, tmp_path, POLICIES, samples)
    code, report = live_json(emulator, manifest, recorder.base_url)
    assert code == 0, report
    host = report["results"][0]["host"]
    assert recorder.received == [
        request("GET /ok HTTP/1.1", host),
        request("GET / HTTP/1.1", host),
    ]
    assert [r["name"] for r in report["results"]] == [s.name for s in samples]
    assert report["summary"] == {"passed": 2, "failed": 0, "skipped": len(UNSENDABLE)}
    reasons = [r["skipped"] for r in report["results"][1:-1]]
    for reason, (_, what, fix) in zip(reasons, UNSENDABLE, strict=True):
        assert what in reason and fix in reason, reason

    text = live(emulator, manifest, recorder.base_url).stdout
    for (skipped, _, _), reason in zip(UNSENDABLE, reasons, strict=True):
        assert f"  SKIP  {skipped.name}\n        skipped: {reason}\n" in text
    assert text.endswith("2 passed, 0 failed, 8 skipped.\n")

    junit = ET.fromstring(live(emulator, manifest, recorder.base_url, "--format", "junit").stdout)
    cases = junit.findall("testsuite/testcase")
    assert [case.get("name") for case in cases] == [s.name for s in samples]
    assert [case.find("skipped") is None for case in cases] == [True, *[False] * 8, True]
    messages = [case.find("skipped").get("message") for case in cases[1:-1]]  # type: ignore[union-attr]
    assert messages == reasons


def case(**request: Any) -> PolicyTest:
    fields = {"method": "GET", "path": "/", "query": {}, "headers": {}, **request}
    return PolicyTest(name="t", client_ip="127.0.0.1", expect="allow", **fields)


@pytest.mark.parametrize(
    ("test", "reason"),
    [
        (case(method="GE T"), "the method 'GE T' is not an HTTP token (letters, digits and"),
        (case(method="GÉT"), "the method 'GÉT' is not an HTTP token"),
        (case(path="/a\r\nX: y"), "the path holds '\\r' (U+000D), which a request target"),
        (case(path="/a#b"), "the path holds '#', which the gateway reads as the start of a frag"),
        (case(query={"q": ("a#b",)}), "the value of query parameter 'q' holds '#'"),
        (case(headers={"X Y": ("1",)}), "the header name 'X Y' is not an HTTP token"),
        (case(headers={"X": ("a\nb",)}), "the value of header 'X' holds '\\n' (U+000A), a control"),
        (case(headers={"X": ("a\x00",)}), "the value of header 'X' holds '\\x00' (U+0000)"),
        (case(headers={"content-length": ("0",)}), "the test sets content-length, which a live"),
    ],
)
def test_what_no_request_line_or_header_carries_is_not_sendable(
    test: PolicyTest, reason: str
) -> None:
    with pytest.raises(NotSendable) as unsendable:
        on_the_wire(test)
    assert str(unsendable.value).startswith(reason)


def test_a_tab_inside_a_header_value_and_any_latin_1_byte_are_sent() -> None:
    headers = {"X": ("a\tb", "\x80\xff", "")}
    assert on_the_wire(case(method="M-1~", headers=headers)) == Wire(
        b"M-1~", b"/", ((b"X", b"a\tb"), (b"X", b"\x80\xff"), (b"X", b""))
    )
