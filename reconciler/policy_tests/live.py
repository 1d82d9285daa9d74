"""`reconciler test --live`: each test's request sent to its environment's gateway.

The host is one the platform says the environment answers on: the `domains` of the deployment
serving it (production: the app's current deployment; preview: the newest ready one), read
through the platform client (reads only). The request goes to `https://<host>`, or, with
`via` (`--live-via URL`, for the emulator or a proxy), to that URL with `Host: <host>`, so the
gateway routes it as it would the host's own traffic.

The request is the test's, byte for byte (reconciler/policy_tests/wire.py says what is sent):
its method and target as written, its headers and `Host`, nothing else; a test that no request
carries as written is skipped, with the reason. httpx normalises requests (`httpx.Request`
upper-cases the method and gives a POST `Content-Length: 0`, `httpx.URL` resolves dot
segments), so the request is made one level down, by httpcore (httpx's own transport), which
takes the method, target and headers as bytes.

The gateway takes the client IP from the connection, so a request is sent from the test's
`clientIp`: a test whose address this machine cannot bind is skipped, with the reason. Only
the verdict is compared (403: denied, any other answer: allowed, as the app answers then);
which policy decided or logged is not visible from outside the platform.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, Literal, Protocol

import httpcore
import httpx

from reconciler.address import TreePath
from reconciler.errors import UnexpectedResponse
from reconciler.policy_tests.cases import PolicyTestCase
from reconciler.policy_tests.engine import BLOCKED_STATUS
from reconciler.policy_tests.run import EnvironmentTests, TestResult, expectation_failures
from reconciler.policy_tests.wire import NotSendable, on_the_wire

TIMEOUT_SECONDS = 10.0
SEND_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
    httpcore.ConnectionNotAvailable,
    OSError,
)
"""What sending a request can raise (httpcore has no common base for them)."""


class Client(Protocol):
    async def call(self, operation: str, body: Mapping[str, Any]) -> Any: ...


async def run_live(
    environments: Sequence[EnvironmentTests], client: Client, *, via: str | None = None
) -> list[TestResult]:
    results: list[TestResult] = []
    for environment in environments:
        host = await serving_host(client, environment.address)
        for test in environment.tests:
            if host is None:
                reason = f"no ready deployment serves {environment.address}"
                results.append(_skipped(environment.address, test, reason))
            else:
                results.append(await _send(environment.address, test, host, via))
    return results


async def serving_host(client: Client, address: str) -> str | None:
    """The first host the deployment serving `address` (`project/app/env`) answers on."""
    project, app, environment = TreePath.parse(address).slugs
    scope = {"project": project, "app": app}
    if environment == "production":
        found = await client.call("apps.getApp", scope)
        current = found.get("currentDeploymentId") if isinstance(found, Mapping) else None
        if not current:
            return None
        deployment = await client.call("deployments.getDeployment", {"deploymentId": current})
    else:
        page = await client.call(
            "deployments.listDeployments",
            {**scope, "environment": environment, "status": ["ready"], "limit": 1},
        )
        if not isinstance(page, list):
            raise _unexpected("deployments.listDeployments", f"{address}: not a list")
        if not page:
            return None
        deployment = page[0]
    return _first_host(deployment, address)


def _first_host(deployment: Any, address: str) -> str | None:
    if not isinstance(deployment, Mapping) or deployment.get("status") != "ready":
        return None
    domains = deployment.get("domains")
    if not isinstance(domains, list) or not all(
        isinstance(d, str) and d and d.isascii() for d in domains
    ):
        what = f"the deployment serving {address} lists its domains as {type(domains).__name__}"
        raise _unexpected("deployments", f"{what}, not host names")
    return domains[0] if domains else None


def _unexpected(operation: str, what: str) -> UnexpectedResponse:
    return UnexpectedResponse(
        f"{operation}: unexpected response: {what}",
        operation=operation,
        hint="the platform's answer does not follow its spec; rerun, or report it",
    )


def sendable_from(client_ip: str) -> str | None:
    """None when this machine can send from `client_ip`, else why not."""
    family = socket.AF_INET6 if ":" in client_ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((client_ip, 0))
        except OSError as error:
            return (
                f"this machine cannot send from {client_ip} ({error.strerror or error}); the "
                "gateway takes the client IP from the connection"
            )
    return None


async def _send(address: str, test: PolicyTestCase, host: str, via: str | None) -> TestResult:
    try:
        wire = on_the_wire(test)
    except NotSendable as unsendable:
        return _skipped(address, test, str(unsendable))
    reason = sendable_from(test.client_ip)
    if reason is not None:
        return _skipped(address, test, reason)
    base = httpx.URL(via) if via else httpx.URL(f"https://{host}")
    url = httpcore.URL(
        scheme=base.raw_scheme, host=base.raw_host, port=base.port, target=wire.target
    )
    tls = _tls() if base.scheme == "https" else None
    timeouts = dict.fromkeys(("connect", "read", "write", "pool"), TIMEOUT_SECONDS)
    async with httpcore.AsyncConnectionPool(
        ssl_context=tls, local_address=test.client_ip, retries=0
    ) as pool:
        try:
            response = await pool.request(
                wire.method,
                url,
                headers=[(b"Host", host.encode("ascii")), *wire.headers],
                extensions={"timeout": timeouts},
            )
        except SEND_ERRORS as error:
            failure = f"could not send the request to {host}: {type(error).__name__}: {error}"
            return TestResult(address, test, "failed", failures=(failure,), host=host)
    actual: Literal["allow", "deny"] = "deny" if response.status == BLOCKED_STATUS else "allow"
    failures = expectation_failures(test, actual, None, None)
    return TestResult(
        environment=address,
        test=test,
        status="failed" if failures else "passed",
        actual=actual,
        failures=failures,
        explanation=f"the gateway at {host} answered HTTP {response.status}",
        host=host,
    )


@cache
def _tls() -> ssl.SSLContext:
    """The TLS settings httpx would use (its CA bundle, SSL_CERT_FILE/SSL_CERT_DIR)."""
    return httpx.create_ssl_context()


def _skipped(address: str, test: PolicyTestCase, reason: str) -> TestResult:
    return TestResult(address, test, "skipped", skip_reason=reason)
