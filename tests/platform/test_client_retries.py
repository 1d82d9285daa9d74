"""Retries: 429 after Retry-After for every operation; 5xx and lost answers only when safe."""

from __future__ import annotations

import httpx
import pytest
from anyio.abc._sockets import _SocketProvider
from anyio.streams.tls import TLSAttribute

from reconciler import errors
from reconciler.platform.operations import OPERATIONS
from reconciler.platform.retry import RetryPolicy, parse_retry_after
from tests.platform.helpers import (
    FakeTime,
    Recorder,
    call_once,
    json_response,
    make_client,
    run,
    scripted,
)

APP_BODY = {"project": "shop", "app": "web"}
OK_APP = {"data": {"id": "app_12345678", "slug": "web"}}
NOW = 1_700_000_000.0  # the wall clock of helpers.instant_policy


def test_429_waits_for_retry_after_seconds_then_succeeds() -> None:
    time = FakeTime()
    mock = scripted(httpx.Response(429, headers={"Retry-After": "3"}), json_response(200, OK_APP))
    assert run(call_once(make_client(mock, time=time), "apps.getApp", APP_BODY))["slug"] == "web"
    assert time.sleeps == [3.0]
    assert len(mock.requests) == 2


def test_429_retry_after_as_http_date() -> None:
    time = FakeTime()
    date = "Tue, 14 Nov 2023 22:13:27 GMT"  # NOW + 7 s
    mock = scripted(httpx.Response(429, headers={"Retry-After": date}), json_response(200, OK_APP))
    run(call_once(make_client(mock, time=time), "apps.getApp", APP_BODY))
    assert time.sleeps == [pytest.approx(7.0)]


def test_429_retry_after_is_capped() -> None:
    time = FakeTime()
    mock = scripted(
        httpx.Response(429, headers={"Retry-After": "86400"}), json_response(200, OK_APP)
    )
    run(call_once(make_client(mock, time=time, max_retry_after=20.0), "apps.getApp", APP_BODY))
    assert time.sleeps == [20.0]


def test_429_without_usable_retry_after_backs_off() -> None:
    time = FakeTime()
    mock = scripted(
        httpx.Response(429),
        httpx.Response(429, headers={"Retry-After": "soon"}),
        json_response(200, OK_APP),
    )
    run(call_once(make_client(mock, time=time, random=lambda: 1.0), "apps.getApp", APP_BODY))
    assert time.sleeps == [0.5, 1.0]


def test_429_is_retried_even_for_a_create() -> None:
    time = FakeTime()
    mock = scripted(
        httpx.Response(429, headers={"Retry-After": "1"}),
        json_response(200, {"data": {"id": "proj_12345678"}}),
    )
    body = {"name": "Shop", "slug": "shop"}
    data = run(call_once(make_client(mock, time=time), "projects.createProject", body))
    assert data == {"id": "proj_12345678"}
    assert len(mock.requests) == 2


def test_429_exhausted_is_rate_limited() -> None:
    time = FakeTime()
    mock = scripted(*(httpx.Response(429, headers={"Retry-After": "1"}) for _ in range(3)))
    with pytest.raises(errors.RateLimited) as caught:
        run(call_once(make_client(mock, time=time, max_attempts=3), "apps.getApp", APP_BODY))
    assert caught.value.status == 429
    assert "after 3 attempts" in str(caught.value)
    assert "--parallelism" in str(caught.value.hint)
    assert len(mock.requests) == 3
    assert time.sleeps == [1.0, 1.0]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_on_reads_are_retried_with_backoff(status: int) -> None:
    time = FakeTime()
    mock = scripted(httpx.Response(status), httpx.Response(status), json_response(200, OK_APP))
    run(call_once(make_client(mock, time=time, random=lambda: 1.0), "apps.getApp", APP_BODY))
    assert time.sleeps == [0.5, 1.0]


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        ("apps.updateApp", {**APP_BODY, "name": "Web"}),
        ("environments.setEnvironmentVariables", {**APP_BODY, "environment": "preview"}),
        ("apps.deleteApp", APP_BODY),
        ("deployments.promoteDeployment", {"deploymentId": "d_1"}),
    ],
)
def test_server_errors_on_idempotent_writes_are_retried(operation: str, body: dict) -> None:
    success = OPERATIONS[operation].success_status
    mock = scripted(httpx.Response(503), httpx.Response(success, json={"data": {}}))
    run(call_once(make_client(mock), operation, body))
    assert len(mock.requests) == 2


def test_server_errors_exhausted_raise_server_error_with_attempts() -> None:
    time = FakeTime()
    mock = scripted(*(httpx.Response(500) for _ in range(5)))
    with pytest.raises(errors.ServerError) as caught:
        run(call_once(make_client(mock, time=time), "apps.getApp", APP_BODY))
    assert str(caught.value) == "apps.getApp: server error (500) after 5 attempts"
    assert not caught.value.ambiguous
    assert len(mock.requests) == 5
    assert len(time.sleeps) == 4


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        ("projects.createProject", {"name": "Shop", "slug": "shop"}),
        ("apps.createApp", {"project": "shop", "name": "Web", "slug": "web"}),
        ("domains.createDomain", {**APP_BODY, "environment": "production", "domain": "a.example"}),
        (
            "deployments.createDeployment",
            {**APP_BODY, "environment": "production", "git": {}},
        ),
    ],
)
def test_creates_are_never_retried_after_a_server_error(operation: str, body: dict) -> None:
    time = FakeTime()
    mock = scripted(httpx.Response(500), json_response(200, {"data": {}}))
    with pytest.raises(errors.ServerError) as caught:
        run(call_once(make_client(mock, time=time), operation, body))
    assert caught.value.ambiguous
    assert "may or may not have been created" in str(caught.value)
    assert len(mock.requests) == 1
    assert time.sleeps == []


def test_a_create_whose_answer_was_lost_is_not_retried() -> None:
    mock = scripted(httpx.ReadTimeout("timed out"), json_response(200, {"data": {}}))
    with pytest.raises(errors.TransportError) as caught:
        run(call_once(make_client(mock), "projects.createProject", {"name": "S", "slug": "shop"}))
    assert caught.value.ambiguous
    assert caught.value.status is None
    assert len(mock.requests) == 1


def test_a_create_that_never_connected_is_retried() -> None:
    mock = scripted(
        httpx.ConnectError("connection refused"), json_response(200, {"data": {"id": "proj_1"}})
    )
    data = run(
        call_once(make_client(mock), "projects.createProject", {"name": "S", "slug": "shop"})
    )
    assert data == {"id": "proj_1"}
    assert len(mock.requests) == 2


def test_timeouts_on_reads_are_retried_then_reported() -> None:
    time = FakeTime()
    mock = scripted(*(httpx.ReadTimeout("timed out") for _ in range(3)))
    with pytest.raises(errors.TransportError) as caught:
        run(call_once(make_client(mock, time=time, max_attempts=3), "apps.getApp", APP_BODY))
    assert str(caught.value) == "apps.getApp: no answer within 30s (ReadTimeout) after 3 attempts"
    assert not caught.value.ambiguous
    assert len(mock.requests) == 3


def test_connection_errors_name_the_base_url() -> None:
    mock = scripted(*(httpx.ConnectError("refused") for _ in range(2)))
    with pytest.raises(errors.TransportError) as caught:
        run(call_once(make_client(mock, max_attempts=2), "apps.getApp", APP_BODY))
    assert "cannot reach https://platform.test: refused after 2 attempts" in str(caught.value)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 412, 501])
def test_other_failures_are_not_retried(status: int) -> None:
    mock = scripted(httpx.Response(status), json_response(200, OK_APP))
    with pytest.raises(errors.ApiError):
        run(call_once(make_client(mock), "apps.updateApp", APP_BODY))
    assert len(mock.requests) == 1


def test_total_time_bounds_retries() -> None:
    time = FakeTime()
    mock = scripted(*(httpx.Response(429, headers={"Retry-After": "25"}) for _ in range(5)))
    with pytest.raises(errors.RateLimited):
        policy = {"max_elapsed": 60.0, "max_retry_after": 30.0}
        run(call_once(make_client(mock, time=time, **policy), "apps.getApp", APP_BODY))
    # 25 + 25 = 50 s waited; a third wait would end past 60 s, so it is not taken
    assert time.sleeps == [25.0, 25.0]
    assert len(mock.requests) == 3


# -- backoff and Retry-After parsing -----------------------------------------------------------


def test_backoff_doubles_up_to_the_cap_without_jitter() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=3.0, jitter=False)
    assert [policy.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


@pytest.mark.parametrize("draw", [0.0, 0.25, 0.999999])
def test_full_jitter_stays_between_zero_and_the_ceiling(draw: float) -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0, random=lambda: draw)
    for failures, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (9, 4.0)]:
        delay = policy.backoff(failures)
        assert 0.0 <= delay <= ceiling
        assert delay == pytest.approx(draw * ceiling)


def test_real_jitter_varies_within_bounds() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    delays = {policy.backoff(4) for _ in range(50)}
    assert all(0.0 <= d <= 8.0 for d in delays)
    assert len(delays) > 1


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("5", 5.0),
        (" 2 ", 2.0),
        ("1.5", 1.5),
        ("0", 0.0),
        ("-3", 0.0),
        ("Tue, 14 Nov 2023 22:13:30 GMT", 10.0),
        ("Tue, 14 Nov 2023 22:13:00 GMT", 0.0),  # in the past
        ("Tue, 14 Nov 2023 22:13:30 -0000", 10.0),
        (None, None),
        ("", None),
        ("soon", None),
        ("nan", None),
        ("inf", None),
        ("Tue, 99 Foo 2023", None),
    ],
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    result = parse_retry_after(header, now=NOW)
    if expected is None:
        assert result is None
    else:
        assert result == pytest.approx(expected)


def test_a_503_with_retry_after_on_a_read_waits_as_told() -> None:
    time = FakeTime()
    mock = scripted(httpx.Response(503, headers={"Retry-After": "4"}), json_response(200, OK_APP))
    body = {"project": "shop", "app": "web"}
    run(call_once(make_client(mock, time=time), "apps.getApp", body))
    assert time.sleeps == [4.0]


def test_an_undecodable_answer_is_unexpected_and_ambiguous_for_a_create() -> None:
    garbled = httpx.Response(
        200, headers={"Content-Encoding": "gzip"}, stream=httpx.ByteStream(b"not gzip")
    )
    mock = scripted(garbled, json_response(200, {"data": {"id": "proj_1"}}))
    with pytest.raises(errors.UnexpectedResponse) as caught:
        run(call_once(make_client(mock), "projects.createProject", {"name": "S", "slug": "shop"}))
    assert caught.value.ambiguous
    assert "DecodingError" in str(caught.value)
    assert len(mock.requests) == 1


def test_a_retry_after_longer_than_the_time_budget_gives_up_at_once() -> None:
    time = FakeTime()
    mock = scripted(httpx.Response(429, headers={"Retry-After": "3600"}))
    with pytest.raises(errors.RateLimited) as caught:
        policy = {"max_elapsed": 60.0, "max_retry_after": 3600.0}
        run(call_once(make_client(mock, time=time, **policy), "apps.getApp", APP_BODY))
    assert "after 1 attempt (429)" in str(caught.value)
    assert time.sleeps == []


# 502-504 come from gateways and proxies: retried like server errors, but where the spec does
# not list them for the operation, the last one is no answer of the platform API.
ANY_BODY = {**APP_BODY, "environment": "production", "deploymentId": "d_1", "domain": "a.example"}
PROXY_STATUSES = (502, 503, 504)
UNLISTED = sorted(
    (name, status)
    for name, op in OPERATIONS.items()
    for status in PROXY_STATUSES
    if status not in op.error_statuses
)


@pytest.mark.parametrize(("operation", "status"), UNLISTED, ids=lambda v: str(v))
def test_an_unlisted_gateway_status_is_retried_then_reported_as_not_the_platform(
    operation: str, status: int
) -> None:
    op = OPERATIONS[operation]
    time = FakeTime()
    # an envelope-looking body: a status the operation cannot answer is never read as data
    envelope = {"data": [], "pagination": {"hasMore": False, "cursor": ""}}
    mock = scripted(*(json_response(status, envelope) for _ in range(5)))
    with pytest.raises(errors.UnexpectedResponse) as caught:
        run(call_once(make_client(mock, time=time), operation, ANY_BODY))
    error = caught.value
    attempts = 1 if op.creates else 5
    assert len(mock.requests) == attempts
    assert error.status == status and not isinstance(error, errors.NotFound)
    assert str(error).startswith(
        f"{operation}: unexpected response (HTTP {status}) after "
        f"{'1 attempt' if attempts == 1 else '5 attempts'}: not an answer of the platform API"
    )
    assert "--base-url" in str(error.hint) and "proxy" in str(error.hint)
    assert error.ambiguous is op.creates  # a create may have gone through: apply re-reads
    if op.creates:
        assert "may or may not have been created" in str(error.hint)


def test_a_listed_503_stays_a_server_error() -> None:
    mock = scripted(*(httpx.Response(503) for _ in range(5)))
    with pytest.raises(errors.ServerError) as caught:
        run(call_once(make_client(mock, time=FakeTime()), "domains.listDomains", {}))
    assert str(caught.value) == "domains.listDomains: server error (503) after 5 attempts"
    assert len(mock.requests) == 5


class _ClosedSocketStream(_SocketProvider):
    """anyio's socket stream once the server closed the socket while the connection was being
    set up: its transport holds no socket any more (seen when the platform restarts mid-apply,
    tests/proof/test_faults.py: an emulator killed and restarted)."""

    _raw_socket = None


def torn_down(request: httpx.Request) -> httpx.Response:
    """What httpcore meets reading the TLS object of such a stream: anyio's AttributeError."""
    _ClosedSocketStream().extra(TLSAttribute.ssl_object, None)
    raise AssertionError("anyio read the peer name of no socket")


@pytest.mark.parametrize("operation", ["apps.getApp", "projects.createProject"])
def test_a_connection_torn_down_while_it_is_set_up_is_retried_as_not_sent(
    operation: str,
) -> None:
    """Before the fix the AttributeError escaped: an internal error, no retry. The request was
    not sent (it fails before the first byte), so even a create is retried."""
    body = {"name": "Shop", "slug": "shop"} if operation.startswith("projects") else APP_BODY
    answers = iter([torn_down, lambda _: json_response(200, {"data": {"id": "proj_12345678"}})])
    mock = Recorder(lambda request: next(answers)(request))
    data = run(call_once(make_client(mock), operation, body))
    assert data == {"id": "proj_12345678"} and len(mock.requests) == 2


def test_a_connection_torn_down_on_every_attempt_ends_in_a_precise_error() -> None:
    mock = Recorder(torn_down)
    with pytest.raises(errors.TransportError) as caught:
        run(call_once(make_client(mock), "apps.getApp", APP_BODY))
    assert "apps.getApp" in str(caught.value) and len(mock.requests) == 5


def test_an_attribute_error_of_anything_but_anyio_stays_a_bug() -> None:
    """Only anyio's own failure is a torn-down connection: a bug elsewhere is not retried
    away as one."""

    def buggy(request: httpx.Request) -> httpx.Response:
        raise AttributeError("a bug in reconciler's own transport")

    with pytest.raises(AttributeError, match="own transport"):
        run(call_once(make_client(Recorder(buggy)), "apps.getApp", APP_BODY))
