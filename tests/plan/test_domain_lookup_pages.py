"""Whether the workspace has any domain is decided from one page of `domains.listDomains`:
an empty page that says there is more must not read as an empty workspace, or the plan
would skip looking up where its hosts are attached (and promise creates the platform refuses
with 409)."""

from __future__ import annotations

import json

import httpx

from reconciler.plan.kinds.domains import look_up_hosts
from tests.platform.helpers import Recorder, json_response, make_client, run

ATTACHED = {
    "id": "dom_1",
    "domain": "shop.example.com",
    "projectId": "proj_12345678",
    "appId": "app_12345678",
    "environmentId": "env_12345678",
    "status": "verified",
}


def platform_listing(first_page: dict[str, object]) -> Recorder:
    def handle(request: httpx.Request) -> httpx.Response:
        operation = request.url.path.rsplit("/", 1)[-1]
        if operation == "domains.listDomains":
            return json_response(200, first_page)
        if operation == "domains.getDomain":
            if json.loads(request.content) == {"domain": "shop.example.com"}:
                return json_response(200, {"data": ATTACHED})
            return json_response(404, {"error": {"message": "no such domain"}})
        raise AssertionError(f"unexpected call {operation}")

    return Recorder(handle)


def hosts_found(first_page: dict[str, object]) -> tuple[list[object], int]:
    """The hosts found attached, and how many getDomain lookups it took."""
    platform = platform_listing(first_page)

    async def look() -> list[object]:
        async with make_client(platform) as client:
            found = await look_up_hosts(client, ["shop.example.com", "blog.example.com"])
        return [None if d is None else d.host for d in found]

    found = run(look())
    lookups = [r for r in platform.requests if r.url.path.endswith("/domains.getDomain")]
    return found, len(lookups)


def test_an_empty_page_that_says_there_is_more_is_not_an_empty_workspace() -> None:
    more = {"data": [], "pagination": {"hasMore": True, "cursor": "c1"}}
    assert hosts_found(more) == (["shop.example.com", None], 2)


def test_an_empty_last_page_is_an_empty_workspace_and_nothing_is_looked_up() -> None:
    last = {"data": [], "pagination": {"hasMore": False}}
    assert hosts_found(last) == ([None, None], 0)
