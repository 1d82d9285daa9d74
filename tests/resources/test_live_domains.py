"""domains.py reads each domain the platform answers once, into a `LiveDomain`: what the plan
keys on is checked there, and what this reconciler does not know is kept."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reconciler.address import TreePath
from reconciler.errors import NotFound, UnexpectedResponse
from reconciler.plan.kinds import domains
from reconciler.plan.kinds.base import Location

ANSWER = {
    "id": "dom_0001",
    "domain": "Shop.Example.com.",
    "projectId": "proj_0001",
    "appId": "app_0001",
    "environmentId": "env_0001",
    "status": "pending",
    "dnsRecords": [{"type": "CNAME", "name": "shop", "value": "edge.example.net", "ttl": 300}],
    "futureMember": {"nested": [1, 2]},
}


class Answering:
    """A platform whose listings are `items`, whose getDomain answers `answer` and whose other
    calls answer `objects[operation]` (not found when it has none)."""

    def __init__(self, items: list[Any], answer: Any = None, **objects: Any) -> None:
        self.items = items
        self.answers = {"domains.getDomain": answer, **objects}

    async def list_all(self, operation: str, body: Any, **_: Any) -> list[Any]:
        return self.items

    async def call(self, operation: str, body: Any, **_: Any) -> Any:
        if self.answers.get(operation) is None:
            raise NotFound("not found", operation=operation, status=404)
        return self.answers[operation]


def read(items: list[Any]) -> domains.DomainListing:
    return asyncio.run(domains.KIND.read(Answering(items), Location("proj_0001")))


def look_up(answer: Any) -> domains.LiveDomain | None:
    return asyncio.run(domains.lookup_domain(Answering([], answer), "shop.example.com"))


def test_a_listed_domain_is_typed_and_keeps_what_the_reconciler_does_not_know() -> None:
    (domain,) = read([ANSWER]).domains
    assert domain.host == "shop.example.com"  # as the manifest's hosts compare
    assert (domain.id, domain.app_id, domain.environment_id) == ("dom_0001", "app_0001", "env_0001")
    assert domain.status == "pending"
    assert domain.raw["futureMember"] == {"nested": (1, 2)}
    assert domain.raw["dnsRecords"][0]["value"] == "edge.example.net"


@pytest.mark.parametrize("host", [5, None, "", ["shop.example.com"]])
def test_a_listed_domain_without_a_host_string_is_an_unexpected_response(host: Any) -> None:
    with pytest.raises(UnexpectedResponse) as raised:
        read([ANSWER, {**ANSWER, "domain": host}])
    assert raised.value.operation == "domains.listDomains"
    assert "without a `domain` string" in str(raised.value)


def test_a_looked_up_domain_must_name_where_it_is_attached_and_its_host() -> None:
    assert look_up(None) is None  # not found: the host is free
    found = look_up(ANSWER)
    assert found is not None and found.project_id == "proj_0001"
    for malformed in ({**ANSWER, "appId": 7}, {**ANSWER, "domain": 7}, ["not", "an", "object"]):
        with pytest.raises(UnexpectedResponse) as raised:
            look_up(malformed)
        assert raised.value.operation == "domains.getDomain"


def test_an_environment_picks_its_domains_by_app_and_environment_id() -> None:
    elsewhere = {**ANSWER, "domain": "other.example.com", "environmentId": "env_0002"}
    listing = read([ANSWER, elsewhere])
    share = domains.KIND.pick(listing, Location("proj_0001", "app_0001", "production", "env_0002"))
    assert [d.host for d in share.domains] == ["other.example.com"]
    assert domains.KIND.environment_id(share) == "env_0002"
    assert domains.KIND.environment_id(domains.DomainListing(())) is None


def test_where_a_host_is_attached_is_said_in_slugs_else_by_ids() -> None:
    def where(environment: Any) -> str | None:
        platform = Answering(
            [],
            ANSWER,
            **{"projects.getProject": {"slug": "blog"}, "apps.getApp": {"slug": "site"}},
            **{"environments.getEnvironment": environment},
        )
        return asyncio.run(domains.where_attached(platform, "shop.example.com"))

    assert where({"slug": "production", "id": "env_0001"}) == "blog/site/production"
    assert where({"id": "env_0001"}) == (  # an answer without its slug: the IDs say where
        "project proj_0001, app app_0001, environment env_0001 (outside this manifest)"
    )


def test_an_attachment_is_named_by_the_deepest_path_the_plan_read() -> None:
    """The plan's labels are paths; a project's reads `project <slug>` where no deeper one
    is known, an app's or an environment's as its path."""
    attached = domains.LiveDomain.parse("domains.getDomain", ANSWER)
    shop = TreePath.of("shop")
    labels = {"proj_0001": shop}
    described = domains.attachment_by_ids(attached, labels)
    assert described == "project shop, app app_0001, environment env_0001 (outside this manifest)"
    labels["app_0001"] = shop.child("web")
    assert domains.attachment_by_ids(attached, labels) == "shop/web, environment env_0001"
    labels["env_0001"] = shop.child("web").child("production")
    assert domains.attachment_by_ids(attached, labels) == "shop/web/production"
