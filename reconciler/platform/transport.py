"""The client's HTTP transport: httpx's own, built once for the one origin the client talks to.

`PlatformClient` hands each request straight to this transport (httpx's documented transport
API) rather than through `httpx.AsyncClient`. A client of one origin, with the same headers on
every request, needs none of AsyncClient's per-request work: merging URLs and headers, a cookie
jar, auth flows, redirects, choosing a transport per URL. That work was a fifth of the client's
CPU per call (`tests/perf/bench_client.py`). What AsyncClient decided from the environment, this
module decides once, the same way (tests/platform/test_transport.py compares the two):

- the proxy the environment names for the origin: `HTTPS_PROXY` or `HTTP_PROXY` by its scheme,
  else `ALL_PROXY` (read by `urllib.request.getproxies`, as httpx reads them), unless
  `NO_PROXY` names it (httpx's reading of it: see `_bypassed`);
- TLS verified against certifi's certificates, or those `SSL_CERT_FILE` / `SSL_CERT_DIR` name,
  loaded once per process and setting, on another thread when a command starts it early
  (`load_certificates_in_background`): OpenSSL parses the bundle without holding the GIL, so
  the load costs nothing while the manifest is read. An `http://` origin loads none: its
  transport never speaks TLS (through an `https://` proxy, httpcore verifies the proxy with
  its own context). The interpreter's exit waits for a load in flight (`_join_at_exit`).

Connections are held one per request slot (`SlotTransport`): httpcore's pool goes over every
connection it holds, and again over the idle ones, on each request and each release, so its CPU
per call grew with `--parallelism` (a tenth of a millisecond at 10 connections, several at 64).
Each slot is httpx's own transport with a pool of one connection, so TLS, proxies, keep-alive
checks and httpx's exceptions are exactly httpx's; only the choice of connection is made here,
in constant time.

A setting that cannot be used is a usage error before the first call, not an internal error.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import ipaddress
import os
import ssl
import threading
import urllib.request
from collections.abc import AsyncIterable, AsyncIterator, Callable
from concurrent.futures import Future
from urllib.parse import urlsplit

import httpcore
import httpx

from reconciler.errors import UsageError

PROXY_VARIABLES = "HTTPS_PROXY, HTTP_PROXY, ALL_PROXY"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_transport(base_url: str, parallelism: int) -> SlotTransport:
    """Transports to `base_url`'s origin: `parallelism` slots of one kept connection each."""
    address = environment_proxy(base_url)
    verify = _certificates() if needs_certificates(base_url) else _trusting_nothing()
    try:
        proxy = None if address is None else httpx.Proxy(address)

        def one_connection() -> httpx.AsyncBaseTransport:
            if proxy is None:
                return OneConnection(base_url, verify)
            return httpx.AsyncHTTPTransport(
                limits=_ONE_CONNECTION, verify=verify, proxy=proxy, trust_env=True
            )

        # the first slot made now: what httpx refuses in the settings is refused here, not at a call
        return SlotTransport(one_connection, parallelism, first=one_connection())
    # a URL httpx cannot read or a scheme it does not speak; SOCKS without socksio installed
    except (httpx.InvalidURL, ValueError, ImportError):
        assert address is not None  # nothing else here reads a URL or imports
        scheme = urlsplit(address).scheme  # not the URL: it may hold a password
        raise UsageError(
            f"cannot use the proxy the environment names for {base_url}: httpx cannot connect "
            f"through it ({scheme}://...)",
            hint=f"set {PROXY_VARIABLES} to an http:// or https:// proxy URL (http://HOST:PORT), "
            "or add the host to NO_PROXY",
        ) from None


_ONE_CONNECTION = httpx.Limits(max_connections=1, max_keepalive_connections=1)


class SlotTransport(httpx.AsyncBaseTransport):
    """At most `slots` requests at once, each on a transport of its own (one connection).

    A request takes the slot used last (its connection is the one most likely still open),
    or makes a slot while fewer than `slots` exist, or waits for one; the slot is given back
    when its answer is closed (read or not), or when the request fails. `PlatformClient`
    never has more requests in flight than slots, so it never waits here.
    """

    def __init__(
        self,
        make: Callable[[], httpx.AsyncBaseTransport],
        slots: int,
        *,
        first: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if slots < 1:
            raise ValueError("a slot transport needs at least one slot")
        self._make = make
        self._slots = slots
        self._made: list[httpx.AsyncBaseTransport] = [] if first is None else [first]
        self._idle: list[httpx.AsyncBaseTransport] = list(self._made)
        self._waiting: asyncio.Condition | None = None
        self._closed = False

    @property
    def slots(self) -> int:
        return self._slots

    @property
    def connections_made(self) -> int:
        """Slots made so far (each holds at most one connection)."""
        return len(self._made)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        slot = await self._take()
        try:
            response = await slot.handle_async_request(request)
        except BaseException:
            await self._give_back(slot)
            raise
        if response.is_closed:  # read whole already (a stand-in's answer): nothing left to read
            await self._give_back(slot)
        else:
            response.stream = _SlotStream(response.stream, self, slot)
        return response

    async def _take(self) -> httpx.AsyncBaseTransport:
        if self._closed:
            raise RuntimeError("the transport is closed")
        while not self._idle and len(self._made) >= self._slots:
            if self._waiting is None:
                self._waiting = asyncio.Condition()
            async with self._waiting:
                await self._waiting.wait()
        if self._idle:
            return self._idle.pop()
        made = self._make()
        self._made.append(made)
        return made

    async def _give_back(self, slot: httpx.AsyncBaseTransport) -> None:
        if self._closed:  # closed with the others by `aclose`
            return
        self._idle.append(slot)
        if self._waiting is not None:
            async with self._waiting:
                self._waiting.notify()

    async def aclose(self) -> None:
        self._closed = True
        made, self._made, self._idle = self._made, [], []
        for slot in made:
            await slot.aclose()


# httpx's keep-alive default (`httpx.Limits`): an idle connection older than this is not reused
KEEPALIVE_SECONDS = 5.0


class OneConnection(httpx.AsyncBaseTransport):
    """One kept connection to the origin: httpcore's `AsyncHTTPConnection` with httpx's face.

    What httpx's `AsyncHTTPTransport` does around its pool, without the pool: the request and
    the answer converted between httpx's models and httpcore's, httpcore's exceptions raised as
    httpx's of the same name (httpx's own mapping, the most specific class). As the pool does,
    an idle connection the server closed or that has outlived its keep-alive is replaced before
    a request, and a request the connection cannot take is sent on a new one (it was not sent).
    A proxied origin keeps httpx's transport (see `origin_transport`).
    """

    def __init__(self, base_url: str, ssl_context: ssl.SSLContext) -> None:
        url = httpx.URL(base_url)
        port = url.port or _DEFAULT_PORTS[url.scheme]  # as httpcore names a request's origin
        self._origin = httpcore.Origin(url.raw_scheme, url.raw_host, port)
        self._ssl_context = ssl_context
        self._connection: httpcore.AsyncHTTPConnection | None = None

    def _fresh(self) -> httpcore.AsyncHTTPConnection:
        self._connection = httpcore.AsyncHTTPConnection(
            self._origin, ssl_context=self._ssl_context, keepalive_expiry=KEEPALIVE_SECONDS
        )
        return self._connection

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        url = request.url
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            connection = self._connection
            if connection is None or connection.is_closed() or connection.has_expired():
                if connection is not None:
                    await connection.aclose()
                connection = self._fresh()
            try:
                answer = await connection.handle_async_request(sent)
            except httpcore.ConnectionNotAvailable:
                await connection.aclose()
                answer = await self._fresh().handle_async_request(sent)
        except _HTTPCORE_ERRORS as error:
            raise _as_httpx(error) from error
        assert isinstance(answer.stream, AsyncIterable)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_CoreStream(answer.stream),
            extensions=answer.extensions,
        )

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                await connection.aclose()
            except _HTTPCORE_ERRORS as error:
                raise _as_httpx(error) from error


class _CoreStream(httpx.AsyncByteStream):
    """An answer's body from httpcore, its failures raised as httpx's."""

    def __init__(self, inner: AsyncIterable[bytes]) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except _HTTPCORE_ERRORS as error:
            raise _as_httpx(error) from error

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            try:
                await close()
            except _HTTPCORE_ERRORS as error:
                raise _as_httpx(error) from error


# httpx's mapping of httpcore's exceptions (httpx/_transports/default.py): each to httpx's class
# of the same name, the most specific one that applies
_HTTPX_OF: dict[type[Exception], type[httpx.HTTPError]] = {
    getattr(httpcore, name): getattr(httpx, name)
    for name in (
        "TimeoutException",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "NetworkError",
        "ConnectError",
        "ReadError",
        "WriteError",
        "ProxyError",
        "UnsupportedProtocol",
        "ProtocolError",
        "LocalProtocolError",
        "RemoteProtocolError",
    )
}


_HTTPCORE_ERRORS = tuple(_HTTPX_OF)


def _as_httpx(error: Exception) -> httpx.HTTPError:
    """httpcore's `error` (one of `_HTTPCORE_ERRORS`) as httpx raises it."""
    mapped = next(_HTTPX_OF[kind] for kind in type(error).__mro__ if kind in _HTTPX_OF)
    return mapped(str(error))


class _SlotStream(httpx.AsyncByteStream):
    """An answer's body; closing it gives its slot back (once)."""

    def __init__(
        self,
        inner: httpx.SyncByteStream | httpx.AsyncByteStream,
        owner: SlotTransport,
        slot: httpx.AsyncBaseTransport,
    ) -> None:
        self._inner = inner
        self._owner: SlotTransport | None = owner
        self._slot = slot

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert isinstance(self._inner, httpx.AsyncByteStream)
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        owner, self._owner = self._owner, None
        try:
            if isinstance(self._inner, httpx.AsyncByteStream):
                await self._inner.aclose()
        finally:
            if owner is not None:
                await owner._give_back(self._slot)


def needs_certificates(base_url: str) -> bool:
    """Whether the transport to `base_url`'s origin verifies TLS: an `https://` one only."""
    return base_url.strip().partition(":")[0].lower() == "https"


def _trusting_nothing() -> ssl.SSLContext:
    """The context of an origin that never speaks TLS: nothing loaded for it, and nothing
    trusted, so that it would fail to verify any peer if it ever were used."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def load_certificates_in_background() -> None:
    """Start loading the certificates TLS is verified with, for the transport to take later."""
    _loading_certificates(*_certificate_settings())


def _certificate_settings() -> tuple[str | None, str | None]:
    return os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")


@functools.cache
def _loading_certificates(cert_file: str | None, cert_dir: str | None) -> Future[ssl.SSLContext]:
    """One load per setting (the arguments key the cache; httpx reads the same variables
    itself, a moment later on the loading thread). A failure is kept and raised where the
    transport is built."""
    loading: Future[ssl.SSLContext] = Future()

    def load() -> None:
        try:
            loading.set_result(httpx.create_ssl_context(trust_env=True))
        except Exception as error:  # handed to whoever builds the transport
            loading.set_exception(error)

    thread = threading.Thread(target=load, name="reconciler-certificates", daemon=True)
    thread.start()
    atexit.register(_join_at_exit, thread)
    return loading


def _join_at_exit(thread: threading.Thread) -> None:
    """Let a load in flight finish before the process exits; Ctrl-C meanwhile exits 130.

    OpenSSL frees its global state in a C exit handler (`OPENSSL_cleanup`), which runs after
    the interpreter's. A load still parsing the bundle then uses what was freed: a command
    that stopped before it connected (a missing or edited plan file) printed its error and
    died of SIGSEGV or SIGABRT in up to half of its runs. Python's exit handlers run before
    the C ones whatever ends the command (its exit code, a usage error, an exception, an
    interrupt), so waiting here covers every way out; a daemon thread would not be waited for,
    and a joined non-daemon one could not be interrupted cleanly. The wait is the rest of a
    load of some 20 ms; on a stalled mount it is as long as the mount stalls, and Ctrl-C ends
    it with 130 without OpenSSL's handler (`os._exit`: the command has flushed its output by
    then, reconciler/cli's `_settle_output`)."""
    try:
        thread.join()
    except KeyboardInterrupt:
        os._exit(130)  # an interrupted command's code


def _certificates() -> ssl.SSLContext:
    try:
        return _loading_certificates(*_certificate_settings()).result()
    except OSError as error:  # ssl.SSLError included
        raise UsageError(
            f"cannot load the certificates to verify TLS with: {error.strerror or error}",
            hint="SSL_CERT_FILE must name a PEM file of CA certificates and SSL_CERT_DIR a "
            "directory of them; unset both to use the bundled ones",
        ) from None


def environment_proxy(base_url: str) -> str | None:
    """The URL of the proxy the environment names for `base_url`, or None (none set, or
    `NO_PROXY` names the origin)."""
    url = httpx.URL(base_url)
    proxies = urllib.request.getproxies()
    address = proxies.get(url.scheme) or proxies.get("all")
    if not address or _bypassed(url, proxies.get("no", "")):
        return None
    return address if "://" in address else f"http://{address}"


def _bypassed(url: httpx.URL, no_proxy: str) -> bool:
    """Whether `NO_PROXY` names the origin of `url`, read as httpx reads it: a comma-separated
    list where `*` anywhere means every host; `scheme://host[:port]` that scheme (`all` any),
    that host (a leading `*.` its subdomains, `*` any) and that port; an IP address or
    `localhost` that host only; any other name, with an optional `:port`, that host and its
    subdomains (`.example.com` the subdomains only). A port named matches only a port written
    in the base URL other than its scheme's default (`https://host:443` names no port)."""
    entries = [entry.strip() for entry in no_proxy.split(",")]
    if "*" in entries:
        return True
    return any(_names(entry, url) for entry in entries if entry)


def _names(entry: str, url: httpx.URL) -> bool:
    if "://" in entry:
        scheme, _, rest = entry.partition("://")
        if scheme.lower() not in ("all", url.scheme):
            return False
        host, port = _host_and_port(rest.split("/", 1)[0])
        if port == _DEFAULT_PORTS.get(scheme.lower()):
            port = None  # as in a URL: the scheme's own port is no port named
        pattern = host
    else:
        host, port = _host_and_port(entry)
        # httpx asks this of the entry as written: `localhost:8443` is a name like any other
        literal = _is_ip(entry) or entry.lower() == "localhost"
        pattern = host if literal else "*" + host
    if port is not None and port != url.port:
        return False
    return _host_matches(pattern.lower(), url)


def _host_and_port(text: str) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]:port`, or a bare IPv6 address (its colons are not a port)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return host, int(port) if port.isdigit() else None
    host, colon, port = text.rpartition(":")
    if colon and port.isdigit() and ":" not in host:
        return host, int(port)
    return text, None


def _host_matches(pattern: str, url: httpx.URL) -> bool:
    names = {url.host.lower(), url.raw_host.decode("ascii").lower()}  # IDNA: either form
    if pattern in ("", "*"):
        return True
    if pattern.startswith("*."):
        return any(name.endswith(pattern[1:]) for name in names)  # `.x`: never `x` itself
    if pattern.startswith("*"):
        domain = pattern[1:]
        return any(name == domain or name.endswith("." + domain) for name in names)
    return pattern in names


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
