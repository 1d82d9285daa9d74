"""Only the platform can say "does not exist": statuses outside each operation's list of the
spec are errors, and a 404 is believed only once the base URL has shown it is the platform."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler import errors
from reconciler.platform.operations import OPERATIONS
from reconciler.platform.retry import RETRIED_SERVER_STATUSES
from tests.platform.helpers import (
    BASE_URL,
    Recorder,
    call_once,
    json_response,
    list_once,
    make_client,
    run,
)

APP_BODY = {"project": "shop", "app": "web"}
PROBE = "projects.listProjects"
HTML = b"<html><body><h1>Not Found</h1></body></html>"
A_PROJECT = {"id": "proj_12345678", "slug": "shop", "name": "Shop"}
PLATFORM_PAGE = {"data": [A_PROJECT], "pagination": {"hasMore": True, "cursor": "c1"}}


def operation_of(request: httpx.Request) -> str:
    return request.url.path.rsplit("/", 1)[-1]


def platform_404(probe_answer: httpx.Response) -> Recorder:
    """Every operation answers 404; the check of the base URL gets `probe_answer`."""

    def handle(request: httpx.Request) -> httpx.Response:
        return probe_answer if operation_of(request) == PROBE else httpx.Response(404)

    return Recorder(handle)


def probes(recorder: Recorder) -> int:
    return sum(operation_of(r) == PROBE for r in recorder.requests)


def assert_check_base_url(error: errors.ApiError) -> None:
    assert isinstance(error, errors.UnexpectedResponse), repr(error)
    assert not isinstance(error, errors.NotFound)
    assert BASE_URL in str(error) and "check" in str(error), str(error)


# ---- a 404 is believed after the base URL answered like the platform -------------------------


def test_a_404_is_believed_once_list_projects_answers_like_the_platform() -> None:
    mock = platform_404(json_response(200, PLATFORM_PAGE))
    with pytest.raises(errors.NotFound):
        run(call_once(make_client(mock, platform_check=False), "apps.getApp", APP_BODY))
    assert [operation_of(r) for r in mock.requests] == ["apps.getApp", PROBE]
    assert mock.bodies()[1] == {"limit": 1}


def test_an_empty_workspace_is_the_platform_too() -> None:
    empty = json_response(200, {"data": [], "pagination": {"hasMore": False}})
    with pytest.raises(errors.NotFound):
        client = make_client(platform_404(empty), platform_check=False)
        run(call_once(client, "projects.getProject", {"project": "x"}))


def test_the_check_runs_once_for_many_concurrent_404s() -> None:
    mock = platform_404(json_response(200, PLATFORM_PAGE))

    async def many() -> list[Any]:
        async with make_client(mock, parallelism=4, platform_check=False) as client:
            calls = [
                client.call("apps.getApp", {"project": "p", "app": f"a{i}"}) for i in range(30)
            ]
            return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = run(many())
    assert all(isinstance(o, errors.NotFound) for o in outcomes), outcomes
    assert probes(mock) == 1


def test_the_answer_of_the_check_is_kept_for_the_run() -> None:
    mock = platform_404(httpx.Response(404, content=HTML))

    async def one_after_another() -> list[BaseException]:
        outcomes = []
        async with make_client(mock, platform_check=False) as client:
            for _ in range(3):
                try:
                    await client.call("apps.getApp", APP_BODY)
                except errors.ApiError as error:
                    outcomes.append(error)
        return outcomes

    outcomes = run(one_after_another())
    assert len(outcomes) == 3
    assert all(isinstance(o, errors.UnexpectedResponse) for o in outcomes)
    assert probes(mock) == 1


NOT_THE_PLATFORM = {
    "404-html": httpx.Response(404, content=HTML, headers={"content-type": "text/html"}),
    "404-json": json_response(404, {"detail": "Not Found"}),
    "200-html": httpx.Response(200, content=HTML, headers={"content-type": "text/html"}),
    "200-empty-object": json_response(200, {}),
    "200-data-object": json_response(200, {"data": {}, "pagination": {"hasMore": False}}),
    "200-no-pagination": json_response(200, {"data": []}),
    "200-bad-project": json_response(
        200, {"data": [{"slug": 7}], "pagination": {"hasMore": False}}
    ),
    "201-envelope": json_response(201, PLATFORM_PAGE),
    "302": httpx.Response(302, headers={"location": "https://elsewhere.test/"}),
    "405": httpx.Response(405),
    "401": httpx.Response(401),
}


@pytest.mark.parametrize("probe_answer", NOT_THE_PLATFORM.values(), ids=list(NOT_THE_PLATFORM))
@pytest.mark.parametrize(
    ("operation", "body"),
    [
        ("apps.getApp", APP_BODY),
        ("projects.getProject", {"project": "shop"}),
        ("domains.getDomain", {"domain": "shop.example.com"}),
        ("apps.deleteApp", APP_BODY),
    ],
)
def test_a_404_from_a_base_url_that_is_not_the_platform_is_unexpected(
    operation: str, body: dict[str, Any], probe_answer: httpx.Response
) -> None:
    mock = platform_404(probe_answer)
    with pytest.raises(errors.ApiError) as caught:
        run(call_once(make_client(mock, platform_check=False), operation, body))
    assert_check_base_url(caught.value)
    assert caught.value.operation == operation
    assert "(HTTP 404)" in str(caught.value)


def test_a_404_from_a_list_is_checked_too() -> None:
    mock = platform_404(httpx.Response(404, content=HTML))
    with pytest.raises(errors.ApiError) as caught:
        run(
            list_once(make_client(mock, platform_check=False), "apps.listApps", {"project": "shop"})
        )
    assert_check_base_url(caught.value)


def test_a_key_that_may_not_list_projects_cannot_confirm_a_404() -> None:
    """The check needs `project.*.read_project` (in every read-only key the README lists); a 403
    proves nothing about who answered, so the 404 is not believed and the message says why."""
    mock = platform_404(json_response(403, {"detail": "forbidden"}))
    with pytest.raises(errors.ApiError) as caught:
        run(call_once(make_client(mock, platform_check=False), "apps.getApp", APP_BODY))
    assert_check_base_url(caught.value)
    assert "project.*.read_project" in str(caught.value)


def test_a_check_that_keeps_failing_is_reported_as_the_check() -> None:
    mock = platform_404(httpx.Response(500))
    with pytest.raises(errors.ApiError) as caught:
        run(call_once(make_client(mock, platform_check=False), "apps.getApp", APP_BODY))
    assert_check_base_url(caught.value)
    assert "server error (500)" in str(caught.value)


@pytest.mark.parametrize(
    ("operation", "body"),
    [("projects.listProjects", {}), ("projects.createProject", {"name": "S", "slug": "shop"})],
)
def test_a_404_from_an_operation_that_cannot_answer_404_needs_no_check(
    operation: str, body: dict[str, Any]
) -> None:
    mock = Recorder(lambda request: json_response(404, {"detail": "Not Found"}))
    with pytest.raises(errors.ApiError) as caught:
        run(call_once(make_client(mock, platform_check=False), operation, body))
    assert_check_base_url(caught.value)
    assert len(mock.requests) == 1
    assert not caught.value.ambiguous  # nothing was created by a server that is not the platform


# ---- statuses outside each operation's list of the spec ---------------------------------------


def allowed(operation: str) -> frozenset[int]:
    op = OPERATIONS[operation]
    return op.error_statuses | {op.success_status}


def test_deployment_actions_without_403_in_the_spec_cannot_be_forbidden() -> None:
    mock = Recorder(lambda request: json_response(403, {"detail": "forbidden"}))
    with pytest.raises(errors.ApiError) as caught:
        run(call_once(make_client(mock), "deployments.getDeployment", {"deploymentId": "d_1"}))
    assert_check_base_url(caught.value)
    assert not isinstance(caught.value, errors.PermissionDenied)


@pytest.mark.parametrize(
    ("operation", "status"),
    [("apps.getApp", 201), ("apps.getApp", 204), ("apps.deleteApp", 200), ("apps.deleteApp", 204)],
)
def test_a_success_status_other_than_the_spec_s_is_unexpected(operation: str, status: int) -> None:
    mock = Recorder(lambda request: json_response(status, {"data": A_PROJECT}))
    with pytest.raises(errors.ApiError) as caught:
        run(call_once(make_client(mock), operation, APP_BODY))
    assert_check_base_url(caught.value)


def test_a_create_with_an_unexpected_success_status_may_have_happened() -> None:
    mock = Recorder(lambda request: json_response(201, {"data": {"id": "proj_12345678"}}))
    with pytest.raises(errors.UnexpectedResponse) as caught:
        run(call_once(make_client(mock), "projects.createProject", {"name": "S", "slug": "shop"}))
    assert caught.value.ambiguous


READ_OPERATIONS = sorted(name for name, op in OPERATIONS.items() if not op.is_write)
BODIES = [
    b"",
    HTML,
    b"{}",
    b"null",
    json.dumps(PLATFORM_PAGE).encode(),
    json.dumps({"data": A_PROJECT}).encode(),
    json.dumps({"detail": "Not Found"}).encode(),
]


def _unlisted(operation: str) -> st.SearchStrategy[int]:
    # 1xx are interim answers, never final ones an HTTP client hands over
    return st.integers(200, 599).filter(lambda status: status not in allowed(operation))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    operation=st.sampled_from(READ_OPERATIONS),
    body=st.sampled_from(BODIES) | st.binary(max_size=64),
)
def test_an_answer_outside_the_spec_s_list_is_an_error_never_data_nor_not_found(
    data: st.DataObject, operation: str, body: bytes
) -> None:
    """Every read operation, every status its entry in the spec does not list, any body (even a
    valid envelope): the call raises, and never as "not found"."""
    status = data.draw(_unlisted(operation), label="status")
    mock = Recorder(lambda request: httpx.Response(status, content=body))
    client = make_client(mock, platform_check=False)  # it answers the check the same way

    async def read() -> Any:
        async with client:
            if OPERATIONS[operation].lists:
                return await client.list_all(operation, {"project": "p", "app": "a"})
            return await client.call(operation, {"project": "p", "app": "a"})

    with pytest.raises(errors.ApiError) as caught:
        run(read())
    error = caught.value
    assert not isinstance(error, errors.NotFound), repr(error)
    assert_check_base_url(error)
    assert f"HTTP {status}" in str(error)
    if status in RETRIED_SERVER_STATUSES:  # a gateway's 5xx: retried, then said who answered
        assert len(mock.requests) == 5
        assert "not an answer of the platform API" in str(error)
