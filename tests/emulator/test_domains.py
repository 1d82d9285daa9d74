"""domains.*: DNS records, the verification state machine on the emulator clock, filters."""

from __future__ import annotations

import pytest

from tests.emulator.helpers import LONG_STEP_MS as STEP_MS
from tests.emulator.helpers import list_all, make_app, make_project, ok, problem, target
from tests.fixtures.emulator import EmulatorServer

DAY_MS = 24 * 60 * 60 * 1000


@pytest.fixture
def web(web_on_the_test_clock: EmulatorServer) -> EmulatorServer:
    return web_on_the_test_clock


def _create(
    emulator: EmulatorServer, domain: str, environment: str = "production", **where
) -> dict:
    body = {**target(environment, **where), "domain": domain}
    return ok(emulator.call("domains.createDomain", body))["data"]


def _get(emulator: EmulatorServer, ref: str) -> dict:
    return ok(emulator.call("domains.getDomain", {"domain": ref}))["data"]


def _publish(emulator: EmulatorServer, records: list[dict]) -> None:
    emulator.set_dns([{k: r[k] for k in ("type", "name", "value")} for r in records])


def test_subdomain_gets_cname_and_txt(web: EmulatorServer) -> None:
    created = _create(web, "WWW.Example.com")
    assert created["domainId"].startswith("dom_")
    routing, ownership = created["dnsRecords"]
    assert routing["type"] == "CNAME" and routing["name"] == "www.example.com"
    assert (
        ownership["type"] == "TXT" and ownership["name"] == "_platform-verification.www.example.com"
    )
    for record in created["dnsRecords"]:
        assert record["verified"] is False and record["ttl"] >= 1 and record["value"]
    domain = _get(web, "www.example.com")
    assert domain["status"] == "pending" and domain["domain"] == "www.example.com"
    assert (
        domain["environmentId"]
        == ok(web.call("environments.getEnvironment", target()))["data"]["id"]
    )
    assert set(domain) >= {"id", "projectId", "appId", "createdAt", "dnsRecords"}
    assert "updatedAt" not in domain and "verificationError" not in domain
    assert _get(web, created["domainId"]) == domain


@pytest.mark.parametrize("apex", ["example.com", "example.co.uk"])
def test_apex_gets_alias(web: EmulatorServer, apex: str) -> None:
    assert _create(web, apex)["dnsRecords"][0]["type"] == "ALIAS"


def test_three_labels_without_known_suffix_is_a_subdomain(web: EmulatorServer) -> None:
    assert _create(web, "shop.example.com")["dnsRecords"][0]["type"] == "CNAME"


@pytest.mark.parametrize(
    "domain",
    [
        "https://example.com",
        "example.com:443",
        "example.com/path",
        "localhost",
        "a.b",
        "-bad.example.com",
        "10.0.0.1",
        "x" * 250 + ".com",
        "ex ample.com",
    ],
)
def test_invalid_host_names_are_400(web: EmulatorServer, domain: str) -> None:
    problem(web.call("domains.createDomain", {**target(), "domain": domain}), 400, "domain")


def _host_of(length: int) -> str:
    """A valid host name of exactly `length` characters (labels of 62)."""
    head = (("a" * 62 + ".") * 4)[: length - len(".com")]
    assert not head.endswith(".")
    return head + ".com"


@pytest.mark.parametrize("length", [231, 253])
def test_a_host_whose_records_would_break_a_bound_is_400(web: EmulatorServer, length: int) -> None:
    """DnsRecord.name is 1 to 253 characters: the ownership record's name prefixes the host, so
    a host over 230 characters would get a record no DNS table (nor the spec) can hold."""
    body = {**target(), "domain": _host_of(length)}
    refused = problem(web.call("domains.createDomain", body), 400, "domain")
    assert refused["detail"] == (
        f"domain: is too long: the TXT record name _platform-verification.<domain> would be "
        f"{length + 23} characters, over the 253 allowed; the domain can be at most 230 characters"
    )
    assert ok(web.call("domains.listDomains"))["data"] == []


def test_the_longest_host_that_fits_can_verify(web: EmulatorServer) -> None:
    host = _host_of(230)
    records = _create(web, host)["dnsRecords"]
    assert max(len(r["name"]) for r in records) == 253
    _publish(web, records)
    web.advance_clock(2 * STEP_MS)
    assert _get(web, host)["status"] == "verified"


def test_domain_lives_in_only_one_environment(web: EmulatorServer) -> None:
    _create(web, "www.example.com")
    problem(
        web.call("domains.createDomain", {**target("preview"), "domain": "WWW.example.com"}),
        409,
        "domain",
    )
    problem(web.call("domains.createDomain", {**target(), "domain": "www.example.com"}), 409)
    make_project(web, "blog")
    make_app(web, "blog", "site")
    body = {**target(project="blog", app="site"), "domain": "www.example.com"}
    problem(web.call("domains.createDomain", body), 409)
    problem(web.call("domains.createDomain", {**target("nope"), "domain": "a.example.com"}), 404)


def test_pending_verifying_verified(web: EmulatorServer) -> None:
    created = _create(web, "www.example.com")
    assert _get(web, "www.example.com")["status"] == "pending"
    web.advance_clock(STEP_MS)
    assert _get(web, "www.example.com")["status"] == "verifying"
    _publish(web, created["dnsRecords"][:1])
    domain = _get(web, "www.example.com")
    assert domain["status"] == "verifying"
    assert [r["verified"] for r in domain["dnsRecords"]] == [True, False]
    _publish(web, [*created["dnsRecords"], {"type": "A", "name": "other.com", "value": "1.2.3.4"}])
    domain = _get(web, "www.example.com")
    assert domain["status"] == "verified"
    assert [r["verified"] for r in domain["dnsRecords"]] == [True, True]
    assert domain["updatedAt"] >= domain["createdAt"]
    problem(web.call("domains.verifyDomain", {"domain": "www.example.com"}), 412)


def test_dns_matching_ignores_case_and_trailing_dots(web: EmulatorServer) -> None:
    routing, ownership = _create(web, "www.example.com")["dnsRecords"]
    web.set_dns(
        [
            {"type": "cname", "name": "WWW.example.com.", "value": routing["value"].upper() + "."},
            {"type": "TXT", "name": ownership["name"], "value": f'"{ownership["value"]}"'},
        ]
    )
    web.advance_clock(STEP_MS)
    assert _get(web, "www.example.com")["status"] == "verified"


def test_wrong_value_never_verifies_and_fails_after_24_hours(web: EmulatorServer) -> None:
    routing, ownership = _create(web, "www.example.com")["dnsRecords"]
    web.set_dns(
        [
            {"type": "TXT", "name": ownership["name"], "value": "platform-verification=wrong"},
            {"type": "CNAME", "name": routing["name"], "value": routing["value"]},
        ]
    )
    web.advance_clock(DAY_MS - 1000)  # the wall clock moves too: keep a margin
    assert _get(web, "www.example.com")["status"] == "verifying"
    web.advance_clock(1000)
    domain = _get(web, "www.example.com")
    assert domain["status"] == "failed"
    assert (
        ownership["name"] in domain["verificationError"] and len(domain["verificationError"]) <= 512
    )
    # late records do not verify a failed domain; verifyDomain restarts the period
    _publish(web, [routing, ownership])
    assert _get(web, "www.example.com")["status"] == "failed"
    assert ok(web.call("domains.verifyDomain", {"domain": "www.example.com"}), 202) == {"data": {}}
    domain = _get(web, "www.example.com")
    assert domain["status"] == "pending" and "verificationError" not in domain
    web.advance_clock(STEP_MS)
    assert _get(web, "www.example.com")["status"] == "verified"


def test_verify_restarts_the_24_hours(web: EmulatorServer) -> None:
    _create(web, "www.example.com")
    web.advance_clock(DAY_MS - 1000)
    ok(web.call("domains.verifyDomain", {"domain": "www.example.com"}), 202)
    web.advance_clock(DAY_MS - 1000)
    assert _get(web, "www.example.com")["status"] == "verifying"
    web.advance_clock(1000)
    assert _get(web, "www.example.com")["status"] == "failed"


def test_get_verify_delete_404_and_400(web: EmulatorServer) -> None:
    for operation in ("domains.getDomain", "domains.verifyDomain", "domains.deleteDomain"):
        problem(web.call(operation, {"domain": "none.example.com"}), 404)
        problem(web.call(operation, {"domain": "abc"}), 400, "domain")
        problem(web.call(operation, {}), 400, "domain")


def test_delete_frees_the_name(web: EmulatorServer) -> None:
    created = _create(web, "www.example.com")
    assert ok(web.call("domains.deleteDomain", {"domain": created["domainId"]})) == {"data": {}}
    problem(web.call("domains.getDomain", {"domain": "www.example.com"}), 404)
    _create(web, "www.example.com", "preview")


def test_list_filters_each_work_alone(web: EmulatorServer) -> None:
    make_app(web, "shop", "api")
    make_project(web, "blog")
    make_app(web, "blog", "web")
    _create(web, "a.example.com")
    _create(web, "b.example.com", "preview")
    _create(web, "c.example.com", app="api")
    _create(web, "d.example.com", project="blog")
    names = lambda body: [  # noqa: E731
        d["domain"] for d in ok(web.call("domains.listDomains", body))["data"]
    ]
    assert names({}) == ["a.example.com", "b.example.com", "c.example.com", "d.example.com"]
    assert names({"project": "shop"}) == ["a.example.com", "b.example.com", "c.example.com"]
    assert names({"app": "web"}) == ["a.example.com", "b.example.com", "d.example.com"]
    assert names({"environment": "preview"}) == ["b.example.com"]
    assert names({"project": "shop", "app": "web", "environment": "production"}) == [
        "a.example.com"
    ]
    env_id = ok(web.call("environments.getEnvironment", target(app="api")))["data"]["id"]
    assert names({"environment": env_id}) == ["c.example.com"]
    assert names({"search": "B.EXAMPLE"}) == ["b.example.com"]
    problem(web.call("domains.listDomains", {"project": "nope"}), 404)
    problem(web.call("domains.listDomains", {"app": "nope"}), 404)
    problem(web.call("domains.listDomains", {"environment": "nope"}), 404)
    listed = list_all(web, "domains.listDomains", {}, limit=1)
    assert [d["domain"] for d in listed] == [
        "a.example.com",
        "b.example.com",
        "c.example.com",
        "d.example.com",
    ]
    page = ok(web.call("domains.listDomains", {"limit": 1}))
    body = {"limit": 1, "project": "shop", "cursor": page["pagination"]["cursor"]}
    problem(web.call("domains.listDomains", body), 400, "cursor")
