"""Request shape, `data` envelopes, pagination and unexpected responses."""

from __future__ import annotations

import json

import httpx
import pytest

from reconciler import __version__
from reconciler.errors import UnexpectedResponse, UsageError
from reconciler.platform import client as client_module
from reconciler.platform.client import PlatformClient
from tests.platform.helpers import (
    SENTINEL_KEY,
    Recorder,
    call_once,
    json_response,
    list_once,
    make_client,
    run,
    scripted,
)

APP = {"id": "app_12345678", "slug": "web", "name": "Web"}


def test_every_call_is_a_json_post_to_v1_operation_with_key_and_user_agent() -> None:
    mock = scripted(json_response(200, {"data": APP}))
    data = run(call_once(make_client(mock), "apps.getApp", {"project": "shop", "app": "web"}))
    assert data == APP
    (request,) = mock.requests
    assert request.method == "POST"
    assert str(request.url) == "https://platform.test/v1/apps.getApp"
    assert request.headers["Authorization"] == f"Bearer {SENTINEL_KEY}"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["User-Agent"] == f"reconciler/{__version__}"
    assert json.loads(request.content) == {"project": "shop", "app": "web"}


def test_base_url_path_prefix_is_kept() -> None:
    mock = scripted(json_response(200, {"data": APP}))
    client = PlatformClient("https://platform.test/api/", "k", transport=httpx.MockTransport(mock))
    run(call_once(client, "apps.getApp", {"project": "shop", "app": "web"}))
    assert mock.requests[0].url.path == "/api/v1/apps.getApp"


@pytest.mark.parametrize("key", [None, "", " \t\n"])
def test_a_client_without_a_key_cannot_be_made(key: str | None) -> None:
    mock = scripted()
    with pytest.raises(UsageError, match="no API key: RECONCILER_API_KEY is not set"):
        make_client(mock, api_key=key)
    assert mock.requests == []


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(202),
        httpx.Response(202, json={}),
        httpx.Response(202, json={"data": {}}),
        httpx.Response(202, json={"data": None}),
    ],
)
def test_successes_without_fields_return_an_empty_dict(response: httpx.Response) -> None:
    client = make_client(scripted(response))
    assert run(call_once(client, "apps.deleteApp", {"project": "p", "app": "web"})) == {}


def test_create_returns_its_data() -> None:
    client = make_client(scripted(json_response(201, {"data": {"deploymentId": "d_1"}})))
    body = {
        "project": "p",
        "app": "web",
        "environment": "production",
        "image": {"dockerImage": "x:1"},
    }
    assert run(call_once(client, "deployments.createDeployment", body)) == {"deploymentId": "d_1"}


def test_calls_counts_requests_sent() -> None:
    client = make_client(scripted(*(json_response(200, {"data": APP}) for _ in range(3))))

    async def three() -> int:
        async with client:
            for _ in range(3):
                await client.call("apps.getApp", {"project": "p", "app": "web"})
        return client.calls

    assert run(three()) == 3


# -- pagination -------------------------------------------------------------------------------


def pages(*pages: tuple[list[dict], dict | None]) -> Recorder:
    responses = []
    for items, pagination in pages:
        payload: dict = {"data": items}
        if pagination is not None:
            payload["pagination"] = pagination
        responses.append(json_response(200, payload))
    return scripted(*responses)


def test_list_all_follows_the_cursor_to_the_last_page() -> None:
    mock = pages(
        ([{"id": "a"}, {"id": "b"}], {"hasMore": True, "cursor": "c1"}),
        ([{"id": "c"}], {"hasMore": True, "cursor": "c2"}),
        ([{"id": "d"}], {"hasMore": False, "cursor": ""}),
    )
    items = run(list_once(make_client(mock), "apps.listApps", {"project": "shop"}))
    assert [i["id"] for i in items] == ["a", "b", "c", "d"]
    assert mock.bodies() == [
        {"project": "shop", "limit": 100},
        {"project": "shop", "limit": 100, "cursor": "c1"},
        {"project": "shop", "limit": 100, "cursor": "c2"},
    ]


def test_list_all_ignores_a_cursor_passed_in_and_accepts_a_missing_final_cursor() -> None:
    mock = pages(([{"id": "a"}], {"hasMore": False}))
    items = run(list_once(make_client(mock), "projects.listProjects", {"cursor": "stale"}))
    assert items == [{"id": "a"}]
    assert mock.bodies() == [{"limit": 100}]


def test_a_cursor_loop_is_detected() -> None:
    mock = pages(
        ([{"id": "a"}], {"hasMore": True, "cursor": "c1"}),
        ([{"id": "b"}], {"hasMore": True, "cursor": "c2"}),
        ([{"id": "c"}], {"hasMore": True, "cursor": "c1"}),
    )
    with pytest.raises(UnexpectedResponse, match=r"apps\.listApps: .*cursor loop") as caught:
        run(list_once(make_client(mock), "apps.listApps", {"project": "shop"}))
    assert caught.value.status == 200
    assert len(mock.requests) == 3


def test_endless_fresh_cursors_are_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "MAX_PAGES", 3)
    mock = pages(*(([{"id": str(n)}], {"hasMore": True, "cursor": f"c{n}"}) for n in range(10)))
    with pytest.raises(UnexpectedResponse, match=r"more pages after 3: .*makes no progress"):
        run(list_once(make_client(mock), "apps.listApps", {"project": "shop"}))
    assert len(mock.requests) == 3


@pytest.mark.parametrize(
    ("pagination", "complaint"),
    [
        (None, "without a `pagination` object"),
        ("yes", "without a `pagination` object"),
        ({"cursor": "c"}, "hasMore` that is not a boolean"),
        ({"hasMore": "true", "cursor": "c"}, "hasMore` that is not a boolean"),
        ({"hasMore": True}, "without a `pagination.cursor` string"),
        ({"hasMore": True, "cursor": ""}, "without a `pagination.cursor` string"),
        ({"hasMore": True, "cursor": 7}, "without a `pagination.cursor` string"),
    ],
)
def test_wrong_pagination_is_an_unexpected_response(pagination: object, complaint: str) -> None:
    mock = pages(([{"id": "a"}], pagination))  # type: ignore[arg-type]
    with pytest.raises(UnexpectedResponse) as caught:
        run(list_once(make_client(mock), "apps.listApps", {"project": "shop"}))
    assert complaint in str(caught.value)
    assert str(caught.value).startswith("apps.listApps: unexpected response (HTTP 200)")


@pytest.mark.parametrize(
    ("limit", "page", "pagination", "complaint"),
    [
        (1, [], {"hasMore": True, "cursor": "c1"}, "an empty page with `pagination.hasMore` true"),
        (1, [{"id": "a"}, {"id": "b"}], {"hasMore": True, "cursor": "c1"}, "a page of 2 items"),
        (1, [{"id": "a"}], None, "without a `pagination` object"),
        (1, [{"id": "a"}], {"hasMore": True}, "without a `pagination.cursor` string"),
        (None, [{"id": "a"}, {"id": "a"}], {"hasMore": False}, "an item listed before again"),
    ],
)
def test_one_page_read_with_call_is_held_to_the_rules_of_a_page(
    limit: int | None, page: list[dict], pagination: dict | None, complaint: str
) -> None:
    # A caller reading one page (is there any domain? the latest deployment?) decides from it:
    # an empty page that says there is more must not read as "nothing there".
    mock = pages((page, pagination))
    body = {"project": "shop"} if limit is None else {"project": "shop", "limit": limit}
    with pytest.raises(UnexpectedResponse) as caught:
        run(call_once(make_client(mock), "apps.listApps", body))
    assert complaint in str(caught.value)
    assert str(caught.value).startswith("apps.listApps: unexpected response (HTTP 200)")


def test_one_page_read_with_call_returns_its_items() -> None:
    mock = pages(([{"id": "a"}], {"hasMore": True, "cursor": "c1"}))
    items = run(call_once(make_client(mock), "apps.listApps", {"project": "shop", "limit": 1}))
    assert items == [{"id": "a"}]


def test_list_all_refuses_a_non_list_operation() -> None:
    with pytest.raises(ValueError, match="not a list operation"):
        run(list_once(make_client(scripted()), "apps.getApp", {}))


# -- garbage ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "response", "complaint"),
    [
        ("apps.getApp", httpx.Response(200, text="<html>hi</html>"), "not JSON"),
        ("apps.getApp", httpx.Response(200), "an empty body"),
        ("apps.getApp", json_response(200, [APP]), "not an object"),
        ("apps.getApp", json_response(200, APP), "no `data` member"),
        ("apps.getApp", json_response(200, {"data": [APP]}), "`data` that is not an object"),
        ("apps.getApp", json_response(200, {"data": "web"}), "`data` that is not an object"),
        ("apps.listApps", json_response(200, {"data": APP}), "not a list of objects"),
        ("apps.listApps", json_response(200, {"data": ["web"]}), "not a list of objects"),
        ("projects.createProject", json_response(200, {}), "no `data` member"),
    ],
)
def test_garbage_success_bodies_are_reported_not_crashed_on(
    operation: str, response: httpx.Response, complaint: str
) -> None:
    body = {"project": "shop", "app": "web"} if operation.startswith("apps") else {}
    call = list_once if operation.endswith("listApps") else call_once
    with pytest.raises(UnexpectedResponse) as caught:
        run(call(make_client(scripted(response)), operation, body))
    message = str(caught.value)
    assert message.startswith(f"{operation}: unexpected response (HTTP 200)")
    assert complaint in message
    assert "<html>" not in message
    assert caught.value.operation == operation
    assert caught.value.status == 200


def test_a_body_that_cannot_be_encoded_is_a_programming_error_without_the_body() -> None:
    with pytest.raises(TypeError) as caught:
        run(call_once(make_client(scripted()), "apps.getApp", {"project": object()}))
    assert "apps.getApp" in str(caught.value)
