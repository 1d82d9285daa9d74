"""`reconciler.policy_tests` and the emulator's gateway, two independent implementations of the
spec's policy semantics and of the same open choices, agree on every request: allow or deny, the
deciding policy, and the logging policies that recorded it.

Each example sets a generated policy list on an environment of an in-process emulator (through
the API), deploys, moves the emulator clock until the deployment is ready, and sends several
requests through its gateway with the deployment's host and a chosen client IP. The evaluator
sees exactly what went over the wire (the target and headers httpx built), and evaluates both
the list as sent and the list `gateway.listPolicies` returns.

The requests are probes aimed at each member of the list (see `strategies.probes_for`) plus
drawn ones; every list opens with one logging policy per kind of member, so each kind decides
something visible for every request. Breaking any one open choice in either implementation
(regex search instead of full match, ignoreCase ignored, last instead of first query value, a
header's first value instead of all joined, methods without case, the decoded path, mapped
addresses or ranges not unmapped, ...) makes this test fail within its 60 examples.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.policy_tests import Decision, PolicyList, Request, compile_policies
from tests.fixtures.emulator import EmulatorAsgi
from tests.policy_tests.strategies import (
    SampleRequest,
    policy_lists,
    probes_for,
    sample_requests_for,
)

ENV = {"project": "shop", "app": "web", "environment": "production"}
FINISHED_MS = 60_000  # more clock than any deployment needs to become ready


async def _deployed_host(
    api: httpx.AsyncClient, policies: list[dict[str, Any]]
) -> tuple[str, list[Any]]:
    """Set `policies` on a fresh app's production, deploy, wait (by clock) until ready; the
    deployment's own host and the list as `gateway.listPolicies` returns it."""

    async def call(operation: str, body: dict[str, Any], status: int = 200) -> Any:
        answer = await api.post(f"/v1/{operation}", json=body)
        assert answer.status_code == status, answer.text
        return answer.json()

    await call("projects.createProject", {"name": "Shop", "slug": "shop"})
    await call(
        "apps.createApp",
        {"project": "shop", "name": "Web", "slug": "web", "oci": {"image": "nginx:1"}},
    )
    await call("gateway.setPolicies", {**ENV, "policies": policies})
    listed = (await call("gateway.listPolicies", ENV))["data"]
    created = await call(
        "deployments.createDeployment", {**ENV, "image": {"dockerImage": "nginx:1"}}, 201
    )
    assert (await api.post("/_emulator/clock", json={"advanceMs": FINISHED_MS})).status_code == 200
    deployment = (
        await call("deployments.getDeployment", {"deploymentId": created["data"]["deploymentId"]})
    )["data"]
    assert deployment["status"] == "ready"
    return deployment["domains"][0], listed


def _as_answer(decision: Decision) -> tuple[int, Any, list[Any]]:
    """The evaluator's decision in the shape of the gateway's answer."""
    blocked = None if decision.decided_by is None else vars(decision.decided_by)
    return (200 if decision.allowed else 403), blocked, [vars(ref) for ref in decision.logged_by]


async def _check(policies: list[dict[str, Any]], samples: list[SampleRequest]) -> None:
    emulator = EmulatorAsgi()
    async with emulator.client() as api:
        host, listed = await _deployed_host(api, policies)
    as_sent, as_listed = compile_policies(policies), compile_policies(listed)
    transport = httpx.ASGITransport(app=emulator.app)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as gateway:
        for sample in samples:
            transport.client = (sample.client_ip, 40_000)
            # an absolute URL: httpx refuses a relative one whose path starts with `//`, which
            # is a path a request may carry (and a regex of the policies may match)
            path = sample.target if sample.target.startswith("/") else "/" + sample.target
            request = gateway.build_request(
                sample.method, f"http://{host}{path}", headers=list(sample.headers)
            )
            answer = await gateway.send(request)
            _agree(as_sent, as_listed, request, sample.client_ip, answer)


def _agree(
    as_sent: PolicyList,
    as_listed: PolicyList,
    sent: httpx.Request,
    client_ip: str,
    answer: httpx.Response,
) -> None:
    seen = Request.from_target(
        sent.method,
        sent.url.raw_path.decode("latin-1"),
        headers=_header_lists(sent.headers.raw),
        client_ip=client_ip,
    )
    decision = as_sent.evaluate(seen)
    body = answer.json()
    gateway = (answer.status_code, body["blockedBy"], body["loggedBy"])
    assert _as_answer(decision) == gateway, (
        f"{sent.method} {sent.url} from {client_ip}\n{decision.explain()}"
    )
    assert as_listed.evaluate(seen) == decision


def _header_lists(raw: list[tuple[bytes, bytes]]) -> dict[str, list[str]]:
    """The headers as sent, values of one name (in any case) in wire order."""
    headers: dict[str, list[str]] = {}
    for name, value in raw:
        headers.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    return headers


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy_lists.flatmap(
        lambda policies: st.tuples(
            st.just(policies),
            probes_for(policies),
            st.lists(sample_requests_for(policies), min_size=4, max_size=16),
        )
    )
)
def test_the_evaluator_and_the_emulators_gateway_agree(
    case: tuple[list[dict[str, Any]], list[SampleRequest], list[SampleRequest]],
) -> None:
    policies, probes, drawn = case
    asyncio.run(_check(policies, probes + drawn))
