"""The client's transport follows the environment's proxy settings as httpx's AsyncClient did
(reconciler/platform/transport.py): the proxy named for the origin's scheme or ALL_PROXY,
NO_PROXY to bypass it, an unusable proxy a clear error that does not echo its URL."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from unittest import mock

import certifi
import httpx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reconciler.errors import UsageError
from reconciler.platform.client import PlatformClient
from reconciler.platform.connect import start_connecting
from reconciler.platform.transport import _join_at_exit, environment_proxy
from tests.platform.helpers import SENTINEL_KEY
from tests.platform.servers import read_request

PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.delenv("REQUEST_METHOD", raising=False)  # urllib ignores HTTP_PROXY under CGI


@pytest.mark.parametrize(
    ("settings", "base_url", "proxy"),
    [
        ({}, "https://api.example.com", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://api.example.com", "http://proxy:3128"),
        ({"HTTPS_PROXY": "proxy:3128"}, "https://api.example.com", "http://proxy:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "http://api.example.com", None),
        ({"HTTP_PROXY": "http://plain:8080"}, "http://api.example.com", "http://plain:8080"),
        ({"ALL_PROXY": "http://every:1"}, "https://api.example.com", "http://every:1"),
        (
            {"HTTPS_PROXY": "http://scheme:1", "ALL_PROXY": "http://every:1"},
            "https://api.example.com",
            "http://scheme:1",
        ),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "https://api.example.com", None),
        (
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".example.com"},
            "https://api.example.com",
            None,
        ),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, "https://api.example.com", None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.7"}, "https://10.0.0.7:8443", None),
        (
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "other.com,example.org"},
            "https://api.example.com",
            "http://p:1",
        ),
        ({"https_proxy": "http://lower:1"}, "https://api.example.com", "http://lower:1"),
    ],
)
def test_the_proxy_of_an_origin_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, settings: dict[str, str], base_url: str, proxy: str | None
) -> None:
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    assert environment_proxy(base_url) == proxy


@asynccontextmanager
async def recording_proxy(request_lines: list[bytes]) -> AsyncIterator[str]:
    """An HTTP proxy on loopback that answers every request itself with an empty project list,
    recording each request line (absolute-form through a proxy: `POST http://host/path`)."""
    listing = json.dumps({"data": [], "pagination": {"hasMore": False}}).encode()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await read_request(reader)
                request_lines.append(request.split(b"\r\n", 1)[0])
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(listing)}\r\n\r\n".encode()
                    + listing
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


def test_requests_go_through_the_proxy_the_environment_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request_lines: list[bytes] = []

    async def list_projects() -> list[dict[str, object]]:
        async with recording_proxy(request_lines) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy)
            async with PlatformClient("http://platform.invalid", SENTINEL_KEY) as client:
                return await client.list_all("projects.listProjects", {})

    assert asyncio.run(list_projects()) == []
    assert request_lines == [b"POST http://platform.invalid/v1/projects.listProjects HTTP/1.1"]


def test_no_proxy_sends_straight_to_the_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The proxy is bypassed: the request goes to the origin (here, the recording server
    itself, in origin-form), not to the unreachable proxy."""
    request_lines: list[bytes] = []

    async def list_projects() -> list[dict[str, object]]:
        async with recording_proxy(request_lines) as origin:
            monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # discard port: refused
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            async with PlatformClient(origin, SENTINEL_KEY) as client:
                return await client.list_all("projects.listProjects", {})

    assert asyncio.run(list_projects()) == []
    assert request_lines == [b"POST /v1/projects.listProjects HTTP/1.1"]


@pytest.mark.parametrize(
    ("proxy", "shown_scheme"),
    [
        ("ftp://user:hunter2@proxy.example.com:21", "ftp://"),  # a scheme httpx does not speak
        ("http://user:hunter2@proxy.example.com:badport", "http://"),  # a URL it cannot read
    ],
)
def test_an_unusable_proxy_is_a_usage_error_without_its_url(
    monkeypatch: pytest.MonkeyPatch, proxy: str, shown_scheme: str
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    with pytest.raises(UsageError) as caught:
        PlatformClient("https://api.example.com", SENTINEL_KEY)
    shown = f"{caught.value} {caught.value.hint}"
    assert shown_scheme in shown and "NO_PROXY" in shown
    assert "hunter2" not in shown and "proxy.example.com" not in shown


# ---- NO_PROXY read as httpx.AsyncClient read it ------------------------------------------------

HOSTS = [
    "api.example.com",
    "example.com",
    "apiexample.com",
    "a.b.example.com",
    "localhost",
    "api.localhost",
    "10.0.0.7",
    "::1",
    "2001:db8::7",
]


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@st.composite
def base_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https"]))
    port = draw(st.sampled_from(["", ":443", ":80", ":8443"]))
    return f"{scheme}://{_url_host(draw(st.sampled_from(HOSTS)))}{port}"


@st.composite
def no_proxy_entries(draw: st.DrawFn) -> str:
    host = draw(st.sampled_from(HOSTS))
    # names in capitals too (not IPv6 addresses: httpx compares those case-sensitively, and an
    # `HTTPS://` entry keeps its `:443`; ours reads both without case)
    if draw(st.booleans()) and "::" not in host:
        host = host.upper()
    form = draw(st.sampled_from(["plain", "dot", "port", "scheme", "scheme-port", "all", "star"]))
    port = draw(st.sampled_from(["443", "8443"]))
    if form == "dot" and ":" not in host:
        return "." + host
    if form == "port" and ":" not in host:
        return f"{host}:{port}"
    if form in ("scheme", "scheme-port", "all"):
        scheme = "all" if form == "all" else draw(st.sampled_from(["http", "https"]))
        suffix = f":{port}" if form == "scheme-port" else ""
        return f"{scheme}://{_url_host(host)}{suffix}"
    if form == "star":
        return draw(st.sampled_from(["*", " * "]))
    return host


def httpx_bypasses(base_url: str) -> bool:
    """httpx.AsyncClient's own decision (its private routing: the oracle for ours)."""
    from httpx._utils import URLPattern, get_environment_proxies

    mounts = sorted((URLPattern(key), proxy) for key, proxy in get_environment_proxies().items())
    url = httpx.URL(base_url)
    return next((proxy for pattern, proxy in mounts if pattern.matches(url)), None) is None


@settings(max_examples=300, deadline=None)
@given(base_urls(), st.lists(no_proxy_entries(), min_size=1, max_size=4))
def test_no_proxy_is_read_as_httpx_asyncclient_read_it(base_url: str, entries: list[str]) -> None:
    no_proxy = ",".join(entries)
    environment = {
        name: value for name, value in os.environ.items() if name.upper() not in PROXY_VARIABLES
    }
    environment.update(HTTP_PROXY="http://p:1", HTTPS_PROXY="http://p:1", NO_PROXY=no_proxy)
    with mock.patch.dict(os.environ, environment, clear=True):
        try:
            expected = httpx_bypasses(base_url)
        except httpx.InvalidURL:  # httpx could not read the entry at all (now: no match)
            assume(False)
        assert (environment_proxy(base_url) is None) == expected, (base_url, no_proxy)


def test_certificates_that_cannot_be_loaded_are_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(UsageError) as caught:
        PlatformClient("https://api.example.com", SENTINEL_KEY)
    assert "certificates" in str(caught.value) and "SSL_CERT_FILE" in str(caught.value.hint)


def test_certificates_started_early_are_a_usage_error_where_the_client_is_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "also-missing.pem"))
    start_connecting("https://api.example.com")  # the failure waits for the client
    with pytest.raises(UsageError) as caught:
        PlatformClient("https://api.example.com", SENTINEL_KEY)
    assert "certificates" in str(caught.value)


def test_certificates_load_once_on_another_thread_before_the_client_needs_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """OpenSSL parses the CA bundle without the GIL: started before the manifest is read, the
    load overlaps it; the client then takes that context rather than loading another."""
    made: list[tuple[str, ssl.SSLContext]] = []  # (thread, context)
    create = httpx.create_ssl_context

    def recording(**settings: object) -> ssl.SSLContext:
        context = create(**settings)  # type: ignore[arg-type]
        made.append((threading.current_thread().name, context))
        return context

    monkeypatch.setattr(httpx, "create_ssl_context", recording)
    # the loads are cached per (SSL_CERT_FILE, SSL_CERT_DIR) for the process: a setting of its
    # own (a fresh path) is one that no earlier test loaded
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    start_connecting("https://api.example.com")
    start_connecting("https://api.example.com")
    client = PlatformClient("https://api.example.com", SENTINEL_KEY)
    assert len(made) == 1  # the client took the context loaded early, it made none
    assert made[0][0] != threading.main_thread().name
    asyncio.run(client.aclose())


def test_the_local_platform_loads_no_certificates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(httpx, "create_ssl_context", mock.Mock(side_effect=AssertionError))
    start_connecting("local")
    start_connecting(None)


@pytest.mark.parametrize("base_url", ["http://platform.invalid", " HTTP://platform.invalid:8080"])
def test_an_http_platform_loads_no_certificates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, base_url: str
) -> None:
    """Its transport never speaks TLS, so there is no load to start early, to wait for, or to
    be cut short by the exit of a command that stops before it connects."""
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "bundle.pem"))  # no earlier test's load
    monkeypatch.setattr(httpx, "create_ssl_context", mock.Mock(side_effect=AssertionError))
    monkeypatch.setattr(threading, "Thread", mock.Mock(side_effect=AssertionError))
    start_connecting(base_url)
    client = PlatformClient(base_url.strip(), SENTINEL_KEY)
    asyncio.run(client.aclose())


def test_ctrl_c_while_the_exit_waits_for_a_load_exits_130_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The exit waits for a load in flight (OpenSSL's exit handler would free what it uses);
    an interrupt of that wait ends the process with 130 there, before OpenSSL's handler runs
    (tests/e2e/test_refusal_exit_e2e.py runs the wait itself)."""
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    loading = mock.Mock(spec=threading.Thread)
    loading.join.side_effect = KeyboardInterrupt
    _join_at_exit(loading)
    assert exits == [130]


def test_a_closed_client_sends_nothing() -> None:
    request_lines: list[bytes] = []

    async def call_after_closing() -> None:
        async with recording_proxy(request_lines) as origin:
            client = PlatformClient(origin, SENTINEL_KEY)
            await client.aclose()
            with pytest.raises(RuntimeError, match="closed"):
                await client.call("projects.listProjects", {})

    asyncio.run(call_after_closing())
    assert request_lines == []
