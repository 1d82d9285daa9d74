"""What `reconciler test --live` puts on the wire: the test's request byte for byte, or, when no
request carries it as written, nothing and a skip that says why.

The platform is the emulator (the serving deployment's host is read from it); the requests go
(`--live-via`) to a recording server on loopback that keeps the bytes of each as they arrived,
or, for verdicts, to the emulator's own gateway."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import CliResult, platform_env
from tests.platform.servers import RecordingServer
from tests.policy_tests.cli_helpers import Sample, deployed, logging, run_test

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
