"""A hostile or broken server cannot hold the client: answers are read against a size cap while
they stream, every attempt and every call has an overall deadline, and a listing that makes no
progress stops. Against real servers on loopback, with small caps and deadlines."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from reconciler import errors
from reconciler.platform.client import MAX_ANSWER_BYTES, PlatformClient
from reconciler.platform.retry import RetryPolicy
from tests.platform.helpers import SENTINEL_KEY, json_response, list_once, make_client, run
from tests.platform.servers import raw_server

APP_BODY = {"project": "shop", "app": "web"}
APP = {"id": "app_12345678", "slug": "web", "name": "Web"}
HANG_GUARD_S = 20  # only so that a client that never stops fails the test instead of hanging it
CAP = 64 * 1024


def head(status: int = 200, **headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X", "Content-Type: application/json", "Connection: close"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def client_of(base_url: str, **policy: Any) -> PlatformClient:
    settings: dict[str, Any] = {"base_delay": 0.01, "max_delay": 0.01, **policy}
    return PlatformClient(
        base_url, SENTINEL_KEY, timeout=5.0, retry=RetryPolicy(**settings), max_answer_bytes=CAP
    )


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def call_through(
    handler: Handler,
    operation: str = "apps.getApp",
    body: dict[str, Any] | None = None,
    **policy: Any,
) -> Any:
    async with (
        asyncio.timeout(HANG_GUARD_S),
        raw_server(handler) as base_url,
        client_of(base_url, **policy) as client,
    ):
        return await client.call(operation, body or APP_BODY)


# ---- the size of an answer --------------------------------------------------------------------


async def endless_chunks(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(head(Transfer_Encoding="chunked") + b'4\r\n{"a"\r\n')
    chunk = b"x" * 4096
    while True:
        writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        await writer.drain()


def test_a_body_that_never_ends_stops_at_the_cap_while_streaming() -> None:
    with pytest.raises(errors.UnexpectedResponse) as caught:
        run(call_through(endless_chunks))
    assert f"larger than the {CAP:,} bytes" in str(caught.value)
    assert "check the base URL" in str(caught.value)


def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    """Announced and then never sent: waiting for it would only end at a deadline."""

    async def announce(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(head(Content_Length=str(10 * CAP)))
        await writer.drain()
        await asyncio.sleep(HANG_GUARD_S)

    with pytest.raises(errors.UnexpectedResponse, match="larger than"):
        run(call_through(announce, attempt_deadline=HANG_GUARD_S / 2))


def test_the_cap_counts_decoded_bytes_so_a_compressed_bomb_stops_too() -> None:
    bomb = gzip.compress(b'{"data": "' + b"0" * (40 * CAP) + b'"}')
    assert len(bomb) < CAP

    async def compressed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(head(Content_Encoding="gzip", Content_Length=str(len(bomb))) + bomb)
        await writer.drain()

    with pytest.raises(errors.UnexpectedResponse, match="larger than"):
        run(call_through(compressed))


def test_an_answer_within_the_cap_is_read_whole() -> None:
    app = {**APP, "name": "W" * (CAP - 200)}
    body = json.dumps({"data": app}).encode()
    assert CAP - 200 < len(body) <= CAP

    async def large(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(head(Content_Length=str(len(body))) + body)
        await writer.drain()

    assert run(call_through(large)) == app


def test_the_default_cap_is_above_the_largest_answer_the_spec_allows() -> None:
    """A page of 100 recoverable variables at the spec's bounds (16,384-character values,
    255-character descriptions, 256-character keys), every character a non-BMP one that JSON
    writes as a 12-byte escape pair."""
    variable = {"key": "K" * 256, "kind": "recoverable", "value": "\U0001f600" * 16384,
                "description": "\U0001f600" * 255, "createdAt": 2**62}  # fmt: skip
    page = {"data": [variable] * 100, "pagination": {"hasMore": True, "cursor": "c" * 1024}}
    largest = len(json.dumps(page).encode())
    assert 15_000_000 < largest < MAX_ANSWER_BYTES / 2


# ---- deadlines --------------------------------------------------------------------------------


async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A valid answer, one byte every 50 ms: each byte resets httpx's read timeout."""
    body = json.dumps({"data": APP}).encode()
    writer.write(head(Content_Length=str(len(body))))
    for byte in body:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.05)


def test_a_trickling_answer_meets_the_deadline_of_each_attempt() -> None:
    with pytest.raises(errors.TransportError) as caught:
        run(call_through(trickle, attempt_deadline=0.3, max_attempts=2, max_elapsed=HANG_GUARD_S))
    message = str(caught.value)
    assert "no complete answer within 0.3s, the deadline of each attempt, after 2 attempts" in (
        message
    )
    assert not caught.value.ambiguous


def test_retries_stop_at_the_deadline_of_the_whole_call() -> None:
    """A quick 503, then a trickle: the second attempt gets only what is left of the call."""
    served: list[int] = []

    async def busy_then_trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(1)
        if len(served) == 1:
            writer.write(head(503, Content_Length="0"))
            await writer.drain()
        else:
            await trickle(reader, writer)

    with pytest.raises(errors.TransportError) as caught:
        run(call_through(busy_then_trickle, attempt_deadline=HANG_GUARD_S, max_elapsed=2.0))
    assert "the call's deadline of 2s (all attempts and waits), reached during attempt 2" in (
        str(caught.value)
    )
    assert served == [1, 1]


def test_a_create_that_meets_a_deadline_is_not_sent_again() -> None:
    served: list[int] = []

    async def counted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(1)
        await trickle(reader, writer)

    create = {"name": "Shop", "slug": "shop"}
    with pytest.raises(errors.TransportError) as caught:
        run(call_through(counted, "projects.createProject", create, attempt_deadline=0.3))
    assert caught.value.ambiguous and "re-read live state" in str(caught.value.hint)
    assert served == [1]


def test_time_queued_for_a_slot_does_not_count_against_a_call() -> None:
    """Twelve calls through one slot, each answered after 0.25 s: the last waits 2.75 s for its
    turn, more than the call's deadline, and still gets its answer."""

    async def slow_but_whole(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.25)
        body = json.dumps({"data": APP}).encode()
        writer.write(head(Content_Length=str(len(body))) + body)
        await writer.drain()

    async def twelve() -> list[Any]:
        async with asyncio.timeout(HANG_GUARD_S), raw_server(slow_but_whole) as base_url:
            policy = RetryPolicy(attempt_deadline=2.0, max_elapsed=2.0, max_attempts=1)
            client = PlatformClient(base_url, SENTINEL_KEY, parallelism=1, retry=policy)
            async with client:
                calls = [client.call("apps.getApp", APP_BODY) for _ in range(12)]
                return await asyncio.gather(*calls)

    assert run(twelve()) == [APP] * 12


# ---- listings that make no progress -----------------------------------------------------------


def endless(page: Callable[[int], list[dict[str, Any]]]) -> Callable[[httpx.Request], Any]:
    """Page n is `page(n)`, always with more to come under a fresh cursor."""
    served = {"n": 0}

    def handle(request: httpx.Request) -> httpx.Response:
        served["n"] += 1
        pagination = {"hasMore": True, "cursor": f"fresh-{served['n']}"}
        return json_response(200, {"data": page(served["n"]), "pagination": pagination})

    return handle


@pytest.mark.parametrize(
    ("operation", "page", "complaint"),
    [
        ("apps.listApps", lambda n: [], "an empty page with `pagination.hasMore` true"),
        ("apps.listApps", lambda n: [APP], "an item listed before again (id 'app_12345678')"),
        (
            "apps.listApps",
            lambda n: [{**APP, "id": f"app_{n}"}, {**APP, "id": "app_1"}],
            "an item listed before again (id 'app_1')",
        ),
        (
            "environments.listEnvironmentVariables",
            lambda n: [{"key": "PORT", "kind": "recoverable", "value": str(n)}],
            "an item listed before again (key 'PORT')",
        ),
        ("apps.listApps", lambda n: [{"slug": "no-id"}], "an item listed before again"),
    ],
    ids=["empty-pages", "same-page", "one-repeat", "variables-by-key", "items-without-id"],
)
def test_a_listing_that_makes_no_progress_stops(
    operation: str, page: Callable[[int], list[dict[str, Any]]], complaint: str
) -> None:
    handler = endless(page)
    with pytest.raises(errors.UnexpectedResponse) as caught:
        run(list_once(make_client(handler), operation, {**APP_BODY, "environment": "preview"}))
    assert complaint in str(caught.value)
    assert "a listing that makes no progress" in str(caught.value)


def test_a_page_larger_than_the_limit_sent_is_unexpected() -> None:
    page = [{**APP, "id": f"app_{n}"} for n in range(101)]
    answer = json_response(200, {"data": page, "pagination": {"hasMore": False}})
    with pytest.raises(errors.UnexpectedResponse, match=r"a page of 101 items \(limit 100\)"):
        run(list_once(make_client(lambda request: answer), "apps.listApps", APP_BODY))


def test_a_listing_that_makes_progress_is_read_to_the_end() -> None:
    pages = iter(
        [
            ([{**APP, "id": "app_1"}], {"hasMore": True, "cursor": "c1"}),
            ([{**APP, "id": "app_2"}, {**APP, "id": "app_3"}], {"hasMore": True, "cursor": "c2"}),
            ([], {"hasMore": False}),  # an empty last page ends the listing
        ]
    )

    def handle(request: httpx.Request) -> httpx.Response:
        data, pagination = next(pages)
        return json_response(200, {"data": data, "pagination": pagination})

    items = run(list_once(make_client(handle), "apps.listApps", APP_BODY))
    assert [item["id"] for item in items] == ["app_1", "app_2", "app_3"]
