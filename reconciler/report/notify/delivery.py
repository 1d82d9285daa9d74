"""Where notifications go, and posting them there: bounded, and never in the command's way.

The URLs come from the environment only (`RECONCILER_NOTIFY_SLACK_URL`,
`RECONCILER_NOTIFY_WEBHOOK_URL`; several in one, separated by whitespace). A Slack webhook URL
is a credential, so every URL is registered as a sensitive value as soon as it is read (no
output of the process can show it) and is named in messages by its host alone. Only `https://`
URLs are used, with TLS verified (certifi's certificates, or `SSL_CERT_FILE`/`SSL_CERT_DIR`)
and the environment's proxy, as for the platform (`reconciler.platform.transport`); plain
`http://` only to this machine (loopback), for local receivers and tests. Redirects are not
followed: the body goes to the URL given or nowhere.

Each destination gets at most `ATTEMPTS` posts: a 429, a 500/502/503/504, a timeout or a broken
connection is tried again after `Retry-After` (429 and 503) or 1 s, then 2 s; any other answer
is final. Every destination together has `DEADLINE` seconds, from the first post: a wait that
would pass it is not taken. Sleep and clocks are injectable (`Timing`), so tests count attempts
without waiting.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from reconciler import __version__, sensitive
from reconciler.credentials import NOTIFY_SLACK_URL_ENV, NOTIFY_WEBHOOK_URL_ENV

if TYPE_CHECKING:
    import httpx

SLACK_URL_ENV = NOTIFY_SLACK_URL_ENV
WEBHOOK_URL_ENV = NOTIFY_WEBHOOK_URL_ENV
URL_VARIABLES: Mapping[str, Literal["slack", "webhook"]] = {
    SLACK_URL_ENV: "slack",
    WEBHOOK_URL_ENV: "webhook",
}
MAX_DESTINATIONS = 10
ATTEMPTS = 3
DEADLINE = 10.0
"""Seconds for every destination together, from the first post to the last answer."""
ATTEMPT_TIMEOUT = 5.0
FIRST_BACKOFF = 1.0

_SLACK_ERROR = re.compile(r"[a-z][a-z0-9_]{0,49}")
"""Slack's error answers (`no_service`, `invalid_payload`, `channel_is_archived`): shown;
any other body is not (a server could echo the request's path)."""


@dataclass(frozen=True)
class Destination:
    format: Literal["slack", "webhook"]
    url: str = field(repr=False)
    variable: str

    @property
    def label(self) -> str:
        """`Slack at hooks.slack.com`, `webhook at hooks.example.com:8443`: never the path."""
        parts = urlsplit(self.url)
        host = parts.hostname or "?"
        if ":" in host:
            host = f"[{host}]"
        if parts.port is not None:
            host += f":{parts.port}"
        return f"{'Slack' if self.format == 'slack' else 'webhook'} at {host}"


@dataclass(frozen=True)
class Destinations:
    found: tuple[Destination, ...] = ()
    problems: tuple[str, ...] = ()
    """One sentence per URL left out, naming its variable, never the URL."""

    @property
    def configured(self) -> bool:
        return bool(self.found or self.problems)


def destinations(environ: Mapping[str, str]) -> Destinations:
    """The URLs of the environment, each remembered as a credential, and why any of them cannot
    be used."""
    found: list[Destination] = []
    problems: list[str] = []
    for variable, body_format in URL_VARIABLES.items():
        urls = environ.get(variable, "").split()
        for position, url in enumerate(urls, start=1):
            sensitive.remember_credential(url)  # no manifest may send it (fromEnv, fromFile)
            which = variable if len(urls) == 1 else f"{variable} (URL {position} of {len(urls)})"
            problem = _problem(url)
            if problem is not None:
                problems.append(f"{which} {problem}; nothing is sent to it")
            elif len(found) == MAX_DESTINATIONS:
                problems.append(
                    f"{which}: more than {MAX_DESTINATIONS} notification URLs; nothing is sent to it"
                )
            else:
                found.append(Destination(body_format, url, variable))
    return Destinations(tuple(found), tuple(problems))


def _problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # a port that is not a number raises
    except ValueError:
        return "is not a URL"
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not host:
        return "is not an https:// URL"
    if scheme == "http" and not _is_loopback(host):
        return "is a plain http:// URL (only https:// is used, http:// only to this machine)"
    return None


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- posting ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    wall_clock: Callable[[], float] = field(default=time.time, repr=False)
    """For a `Retry-After` given as an HTTP date."""


@dataclass(frozen=True)
class Delivery:
    destination: Destination
    attempts: int
    failure: str | None = None
    """Why it was not delivered (None: it was), in words that hold no part of the URL."""


async def post_all(
    bodies: Sequence[tuple[Destination, bytes]],
    *,
    timing: Timing | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[Delivery]:
    """Post each body to its destination, all at once, within one `DEADLINE`."""
    timing = timing or Timing()
    deadline = timing.clock() + DEADLINE
    return list(
        await asyncio.gather(*(_post(d, body, deadline, timing, transport) for d, body in bodies))
    )


async def _post(
    destination: Destination,
    body: bytes,
    deadline: float,
    timing: Timing,
    transport: httpx.AsyncBaseTransport | None,
) -> Delivery:
    import httpx

    from reconciler.errors import UsageError
    from reconciler.platform.transport import origin_transport

    try:
        transport = transport or origin_transport(destination.url, 1)
    except UsageError:  # its message names the URL; this one must not
        return Delivery(destination, 0, "cannot use the proxy or certificates the environment sets")
    headers = {"Content-Type": "application/json", "User-Agent": f"reconciler/{__version__}"}
    async with httpx.AsyncClient(
        transport=transport, trust_env=False, follow_redirects=False
    ) as client:
        reason = "no answer"
        for attempt in range(1, ATTEMPTS + 1):
            left = deadline - timing.clock()
            if left <= 0:
                return Delivery(destination, attempt - 1, f"{reason}; the {DEADLINE:g} s passed")
            wait: float | None = None
            try:
                async with asyncio.timeout(min(ATTEMPT_TIMEOUT, left)):
                    response = await client.post(
                        destination.url,
                        content=body,
                        headers=headers,
                        timeout=min(ATTEMPT_TIMEOUT, left),
                    )
            except (TimeoutError, httpx.TimeoutException):
                reason = "no answer in time"
            except httpx.HTTPError as error:
                reason = _described(error)
                if not isinstance(error, httpx.NetworkError | httpx.RemoteProtocolError):
                    return Delivery(destination, attempt, reason)
                if _untrusted(error):
                    return Delivery(destination, attempt, reason)
            else:
                if response.is_success:
                    return Delivery(destination, attempt)
                reason = _answer(response)
                if not _retried(response.status_code):
                    return Delivery(destination, attempt, reason)
                wait = _retry_after(response, timing)
            if attempt == ATTEMPTS:
                break
            pause = wait if wait is not None else FIRST_BACKOFF * 2 ** (attempt - 1)
            if timing.clock() + pause >= deadline:
                return Delivery(
                    destination,
                    attempt,
                    f"{reason}; waiting {pause:g} s to try again would pass the "
                    f"{DEADLINE:g} s deadline",
                )
            await timing.sleep(pause)
        return Delivery(destination, ATTEMPTS, f"{reason} ({ATTEMPTS} attempts)")


def _retried(status: int) -> bool:
    from reconciler.platform.retry import RETRIED_SERVER_STATUSES

    return status == 429 or status in RETRIED_SERVER_STATUSES


def _retry_after(response: httpx.Response, timing: Timing) -> float | None:
    from reconciler.platform.retry import parse_retry_after

    if response.status_code not in (429, 503):
        return None
    return parse_retry_after(response.headers.get("Retry-After"), now=timing.wall_clock())


def _answer(response: httpx.Response) -> str:
    """`HTTP 404 (no_service)`: the status, and Slack's error word when that is the body."""
    text = response.text.strip()
    word = f" ({text})" if _SLACK_ERROR.fullmatch(text) else ""
    return f"HTTP {response.status_code}{word}"


def _described(error: Exception) -> str:
    """What went wrong, from the error's class alone (httpx's messages may quote the URL)."""
    import httpx

    if _untrusted(error):
        return "TLS: the server's certificate is not trusted"
    if isinstance(error, httpx.ProxyError):
        return "the proxy refused the connection"
    if isinstance(error, httpx.ConnectError):
        return "could not connect"
    if isinstance(error, httpx.NetworkError | httpx.RemoteProtocolError):
        return "the connection broke"
    return f"could not send ({type(error).__name__})"


def _untrusted(error: BaseException) -> bool:
    """Whether TLS verification failed somewhere in the error's chain (no use trying again)."""
    seen: BaseException | None = error
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
