"""The platform API client: `POST {base_url}/v1/<operation>`, envelopes, pagination, retries.

One `PlatformClient` per command run. Every request passes through one
semaphore (`--parallelism`), so concurrency is bounded across the whole run,
and the semaphore is released while waiting to retry. Errors are turned into
the classes of `reconciler.errors` with messages built from the
request; the API key and request bodies never reach a message or a log line.

Only the platform may say that an object does not exist: an answer the spec does
not list for the operation is an error, and the first 404 of a run is believed
only after the base URL has answered one call the way only the platform can.
A server cannot hold the client: answers are read against a size cap, every
attempt and every call against a deadline, and listings must make progress.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from reconciler import __version__, errors, sensitive
from reconciler.errors import UsageError
from reconciler.json_types import JsonObject, JsonValue
from reconciler.platform.log import CallLog
from reconciler.platform.messages import (
    API_KEY_ENV,
    ObjectNames,
    attempts_text,
    body_snippet,
    check_base_url,
    error_detail,
    status_error,
)
from reconciler.platform.operations import Operation, get_operation
from reconciler.platform.pacing import NoTurn, Pacer
from reconciler.platform.retry import RETRIED_SERVER_STATUSES, CallDeadline, RetryPolicy
from reconciler.platform.shapes import shape_problem
from reconciler.platform.transport import origin_transport
from reconciler.sensitive import Secret

PAGE_SIZE = 100
MAX_PAGES = 10_000  # a million items: past this a platform handing out fresh cursors is broken

# The largest answer the spec allows is a page of 100 recoverable variables: values of up to
# 16,384 characters, which JSON may write as \u escapes of surrogate pairs (12 bytes each), so
# about 20 MB with the keys and descriptions. A few fields are unbounded in the spec (a
# deployment's error message, start-command arguments), but none plausibly by megabytes. Three
# times that worst case keeps every real answer well inside while a body that never ends stops
# at a fixed memory cost.
MAX_ANSWER_BYTES = 64 * 1024 * 1024

# The one call whose every answer is recognisable: it cannot answer 404, and its 200 is a
# `data` list of projects with a `pagination` envelope. It needs `project.*.read_project`.
PLATFORM_CHECK = "projects.listProjects"
PLATFORM_CHECK_PERMISSION = "project.*.read_project"

# Failures where the request certainly never reached the server: safe to resend even for a create.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class _Answer:
    """A complete HTTP answer, its body read within the size cap."""

    status: int
    headers: httpx.Headers
    content: bytes


class _AnswerTooLarge(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class _DeadlinePassed(Exception):
    def __init__(self, seconds: float, whole_call: bool) -> None:
        self.seconds = seconds
        self.whole_call = whole_call


class PlatformClient:
    """Async client for the platform API. Use as `async with PlatformClient(...) as client:`."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        parallelism: int = 10,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
        call_log: CallLog | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        pacer: Pacer | None = None,
    ) -> None:
        if parallelism < 1:
            raise ValueError("parallelism must be at least 1")
        self.base_url = base_url.rstrip("/")
        self.parallelism = parallelism
        self.timeout = timeout
        self.max_answer_bytes = max_answer_bytes
        self.calls = 0
        # slugs of what this client has read or created: error messages name objects by them
        self.names = ObjectNames()
        self._api_key = Secret(_checked_key(api_key, self.base_url))
        self._retry = retry or RetryPolicy()
        self._log = call_log
        if call_log is not None:
            call_log.add_secret(self._api_key.reveal())
        self._semaphore = asyncio.Semaphore(parallelism)
        # one pace for every call, learned from 429s (reconciler/platform/pacing.py)
        self.pacer = pacer or Pacer(clock=self._retry.clock, sleep=self._retry.sleep)
        # whether the base URL was checked to be the platform, and the error if it was not
        self._platform_checked = False
        self._not_platform: errors.ApiError | None = None
        self._platform_check = asyncio.Lock()
        self._headers = httpx.Headers(
            {
                "Content-Type": "application/json",
                "Accept": "application/json",
                # what httpx decodes everywhere; the size cap applies to the decoded answer
                "Accept-Encoding": "gzip, deflate",
                "User-Agent": f"reconciler/{__version__}",
                "Authorization": f"Bearer {self._api_key.reveal()}",
            }
        )
        self._extensions = {"timeout": httpx.Timeout(timeout).as_dict()}  # each request's
        self._urls: dict[str, httpx.URL] = {}
        # the headers httpx would send, built once: Host first, then ours (Content-Length last)
        host = httpx.URL(self.base_url).netloc
        self._raw_headers = [(b"Host", host), *self._headers.raw]
        # The semaphore is the real bound; the pool must never be the narrower one.
        self._transport = transport or origin_transport(self.base_url, parallelism)
        self._closed = False

    def __repr__(self) -> str:
        return (
            f"PlatformClient(base_url={self.base_url!r}, key=set, parallelism={self.parallelism})"
        )

    async def __aenter__(self) -> PlatformClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        await self._transport.aclose()

    @property
    def check_permissions(self) -> tuple[str, ...]:
        """The permissions this run's own check of the base URL needed: it was made when a 404
        was met, and a later run reading the same state (apply of a plan) meets it again."""
        return (PLATFORM_CHECK_PERMISSION,) if self._platform_checked else ()

    # -- public API -------------------------------------------------------------------------

    async def call(
        self, operation: str, body: Mapping[str, Any], *, object_id: str | None = None
    ) -> JsonValue:
        """Send one operation; return its `data` (a dict, `{}` for field-less successes; a list
        for list operations: one page, held to the rules of a page, so that an empty one that
        says there is more never reads as "none"). `object_id` makes a 403 name the
        ID-specific permission."""
        op = get_operation(operation)
        payload, status = await self._send(op, body, object_id=object_id)
        page = self._data(op, payload, status)
        if op.lists:
            more = self._next_cursor(op, payload, status) is not None
            self._check_progress(op, page, set(), status, more=more, limit=_limit_sent(body))
        self.names.learn(op.name, body, page)
        data: JsonValue = page  # decoded JSON (hence Any), its shape checked by `_data`
        return data

    async def list_all(
        self, operation: str, body: Mapping[str, Any], *, object_id: str | None = None
    ) -> list[JsonObject]:
        """Every item of a list operation, following `pagination.cursor` to the last page."""
        op = get_operation(operation)
        if not op.lists:
            raise ValueError(f"{operation} is not a list operation")
        items: list[JsonObject] = []
        seen_items: set[str] = set()
        seen_cursors: set[str] = set()
        request = {**body, "limit": PAGE_SIZE}
        request.pop("cursor", None)
        while True:
            payload, status = await self._send(op, request, object_id=object_id)
            page = self._data(op, payload, status)
            cursor = self._next_cursor(op, payload, status)
            self._check_progress(
                op, page, seen_items, status, more=cursor is not None, limit=PAGE_SIZE
            )
            self.names.learn(op.name, request, page)
            items.extend(page)
            if cursor is None:
                return items
            if cursor in seen_cursors:
                what = (
                    f"a pagination cursor returned before (a cursor loop) after {len(items)} items"
                )
                raise self._no_progress(op, status, what)
            if len(seen_cursors) + 1 >= MAX_PAGES:
                raise self._no_progress(op, status, f"more pages after {MAX_PAGES}")
            seen_cursors.add(cursor)
            request = {**request, "cursor": cursor}

    def _check_progress(
        self,
        op: Operation,
        page: list[dict[str, Any]],
        seen: set[str],
        status: int,
        *,
        more: bool,
        limit: int,
    ) -> None:
        """Every page of a listing that goes on brings items not listed before: an empty page
        that says there is more, or an item listed again, would loop with fresh cursors. And no
        page holds more than the `limit` sent, so a listing's size is bounded by its pages."""
        if len(page) > limit:
            raise self._unexpected(op, status, f"a page of {len(page)} items (limit {limit})")
        if more and not page:
            raise self._no_progress(op, status, "an empty page with `pagination.hasMore` true")
        for item in page:
            identity = _identity(item, op.item_key)
            if identity in seen:
                raise self._no_progress(op, status, f"an item listed before again ({identity})")
            seen.add(identity)

    def _no_progress(self, op: Operation, status: int, what: str) -> errors.ApiError:
        return self._unexpected(op, status, f"{what}: a listing that makes no progress")

    # -- one request, with retries ----------------------------------------------------------

    async def _send(
        self, op: Operation, body: Mapping[str, Any], *, object_id: str | None
    ) -> tuple[Any, int]:
        """(parsed JSON body or None, status) of the answer of success; raises otherwise."""
        content = self._encode(op, body)
        policy = self._retry
        deadline = CallDeadline(policy)
        attempt = 0
        while True:
            attempt += 1
            failure: errors.ApiError
            delay: float
            try:
                answer = await self._post(op, content, attempt, deadline)
            except httpx.TransportError as exc:
                failure = self._transport_error(op, exc, attempt)
                if failure.ambiguous:
                    raise failure from None
                delay = policy.backoff(attempt)
            except _DeadlinePassed as passed:
                failure = self._deadline_error(op, passed, attempt)
                if failure.ambiguous or passed.whole_call:
                    raise failure from None
                delay = policy.backoff(attempt)
            except NoTurn:  # a retry the call has no time left to wait its turn for
                raise failure from None
            except _AnswerTooLarge as too_large:
                what = f"an answer larger than the {self.max_answer_bytes:,} bytes read at most"
                raise self._unexpected(op, too_large.status, what, ambiguous=op.creates) from None
            except httpx.RequestError as exc:  # an answer came but could not be decoded
                what = f"an answer that could not be read ({type(exc).__name__})"
                raise self._unexpected(op, None, what, ambiguous=op.creates) from None
            else:
                if 200 <= answer.status <= 299:
                    return self._parse_success(op, answer), answer.status
                failure = self._status_failure(op, body, answer, object_id, attempt)
                if isinstance(failure, errors.NotFound):
                    raise await self._believed(op, failure) from None
                if not self._retryable(op, answer.status):
                    raise failure from None
                delay = policy.retry_after(answer.headers.get("Retry-After"), attempt)
            if attempt >= policy.max_attempts or not deadline.allows_wait(delay):
                raise failure from None
            await policy.sleep(delay)

    @staticmethod
    def _retryable(op: Operation, status: int) -> bool:
        """429: nothing was processed, always resend. 5xx: only when repeating is harmless."""
        return status == 429 or (status in RETRIED_SERVER_STATUSES and op.safe_to_repeat)

    async def _post(
        self, op: Operation, content: bytes, attempt: int, deadline: CallDeadline
    ) -> _Answer:
        queued = self._retry.clock()
        async with self._semaphore:
            deadline.exclude(self._retry.clock() - queued)  # the client's own backlog
            generation = await self.pacer.turn(within=deadline.left())
            seconds, whole_call = deadline.next_attempt()
            self.calls += 1
            begun = time.perf_counter()
            try:
                # One deadline over connecting, sending and the whole body: the body is read
                # inside the semaphore, so a slow body counts as in flight.
                async with asyncio.timeout(seconds):
                    answer = await self._exchange(op, content)
            except TimeoutError:
                self._record(op, "deadline", begun, attempt)
                raise _DeadlinePassed(seconds, whole_call) from None
            except _AnswerTooLarge:
                self._record(op, "too-large", begun, attempt)
                raise
            except httpx.RequestError as exc:
                self._record(op, type(exc).__name__, begun, attempt)
                raise
            self._record(op, str(answer.status), begun, attempt)
            if answer.status == 429:
                self.pacer.limited(generation)
            else:
                self.pacer.succeeded()
            return answer

    async def _exchange(self, op: Operation, content: bytes) -> _Answer:
        """Send one request and read its answer, stopping as soon as it passes the size cap.
        Straight to the transport: see reconciler/platform/transport.py for why."""
        if self._closed:  # the transport would open a connection that nothing closes
            raise RuntimeError("the platform client is closed: it sends no more requests")
        # The request httpx makes of `content=`, with its headers built once (`stream=` adds
        # none): a fifth of the client's own CPU per call otherwise.
        request = httpx.Request(
            "POST",
            self._url(op),
            headers=[*self._raw_headers, (b"Content-Length", str(len(content)).encode())],
            stream=httpx.ByteStream(content),
            extensions=self._extensions,
        )
        try:
            response = await self._transport.handle_async_request(request)
        except AttributeError as exc:
            if not _raised_in_anyio(exc):
                raise
            # anyio's socket stream reads the peer name of a socket the server closed while
            # the connection was being set up (a platform restarting), and fails with this
            # instead of a connection error; nothing was sent yet
            raise httpx.ConnectError(
                "the connection was closed while it was being set up", request=request
            ) from exc
        response.request = request
        try:
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self.max_answer_bytes:
                raise _AnswerTooLarge(response.status_code)
            received = bytearray()
            # decoded: a compressed bomb stops too; an answer not encoded is read as it comes
            encoded = response.headers.get("Content-Encoding", "identity") != "identity"
            chunks = response.aiter_bytes() if encoded else _raw(response)
            async for chunk in chunks:
                received += chunk
                if len(received) > self.max_answer_bytes:
                    raise _AnswerTooLarge(response.status_code)
            return _Answer(response.status_code, response.headers, bytes(received))
        finally:
            await response.aclose()

    def _url(self, op: Operation) -> httpx.URL:
        url = self._urls.get(op.name)
        if url is None:
            url = self._urls[op.name] = httpx.URL(f"{self.base_url}/v1/{op.name}")
        return url

    def _record(self, op: Operation, outcome: str, begun: float, attempt: int) -> None:
        if self._log is not None:
            self._log.record(op.name, outcome, (time.perf_counter() - begun) * 1000, attempt)

    def _encode(self, op: Operation, body: Mapping[str, Any]) -> bytes:
        try:
            # the one encoder that reveals a Secret: the moment its call is sent
            text = json.dumps(
                body, separators=(",", ":"), allow_nan=False, default=sensitive.reveal_in_json
            )
            return text.encode()
        except (TypeError, ValueError) as exc:
            # A programming error (e.g. an unresolved SecretRef); never echo the body.
            raise TypeError(f"{op.name}: request body is not JSON-serialisable: {exc}") from None

    # -- interpreting answers ---------------------------------------------------------------

    def _transport_error(
        self, op: Operation, exc: httpx.TransportError, attempt: int
    ) -> errors.TransportError:
        not_sent = isinstance(exc, _NOT_SENT)
        ambiguous = not not_sent and not op.safe_to_repeat
        if isinstance(exc, httpx.TimeoutException):
            what = f"no answer within {self.timeout:g}s ({type(exc).__name__})"
        else:
            reason = sensitive.redact(str(exc), [self._api_key.reveal()]) or type(exc).__name__
            what = f"cannot reach {self.base_url}: {reason}"
        message = f"{op.name}: {what} after {attempts_text(attempt)}"
        hint = None
        if ambiguous:
            hint = (
                "the request was sent but no answer came, so the object may or may not have "
                "been created; it was not retried blindly (re-read live state before retrying)"
            )
        return errors.TransportError(message, operation=op.name, hint=hint, ambiguous=ambiguous)

    def _deadline_error(
        self, op: Operation, passed: _DeadlinePassed, attempt: int
    ) -> errors.TransportError:
        """An answer still incomplete at a deadline: the request was sent, as for a timeout."""
        if passed.whole_call:
            what = (
                f"no complete answer within the call's deadline of {self._retry.max_elapsed:g}s "
                f"(all attempts and waits), reached during attempt {attempt}"
            )
        else:
            what = (
                f"no complete answer within {passed.seconds:g}s, the deadline of each attempt, "
                f"after {attempts_text(attempt)}"
            )
        ambiguous = not op.safe_to_repeat
        hint = (
            "the request was sent but no complete answer came, so the object may or may not "
            "have been created; it was not retried blindly (re-read live state before retrying)"
            if ambiguous
            else "the platform is slow or the base URL answers slowly; try again later"
        )
        return errors.TransportError(
            f"{op.name}: {what}", operation=op.name, hint=hint, ambiguous=ambiguous
        )

    def _status_failure(
        self,
        op: Operation,
        body: Mapping[str, Any],
        answer: _Answer,
        object_id: str | None,
        attempt: int,
    ) -> errors.ApiError:
        status = answer.status
        detail = error_detail(answer.content)
        hidden, kept = self._server_text_rules(body)
        if detail is not None:
            detail = sensitive.redact(detail, hidden, keep=kept)
        if not op.answers(status):
            # Redirects, 405, 418, a 404 where none can be...: not the platform API speaking.
            if detail is None:
                detail = sensitive.redact(body_snippet(answer.content), hidden, keep=kept) or None
            shown = f": {detail}" if detail else ""
            if status in RETRIED_SERVER_STATUSES:
                return self._from_a_gateway(op, status, attempt, shown, detail)
            what = f"a status the platform API does not answer to this operation{shown}"
            return self._unexpected(op, status, what, detail=detail)
        return status_error(
            op,
            status,
            body,
            detail,
            object_id=object_id,
            attempts=attempt,
            slug_of=self.names.slug_of,
        )

    def _from_a_gateway(
        self, op: Operation, status: int, attempt: int, shown: str, detail: str | None
    ) -> errors.ApiError:
        """502-504 where the spec lists none: a gateway, load balancer or proxy answered, which
        a brief outage of the platform behind it also makes; so they are retried like server
        errors (`_retryable`), and the last one says who answered."""
        what = (
            f"not an answer of the platform API (which does not answer {status} to this "
            f"operation) but of a gateway or proxy{shown}"
        )
        hint = (
            f"{check_base_url(self.base_url)}; or a proxy between reconciler and the platform "
            "is failing: try again later"
        )
        if op.creates:
            hint = (
                "the request may have reached the platform, so the object may or may not have "
                f"been created; it was not retried blindly (re-read live state first); {hint}"
            )
        return self._unexpected(
            op, status, what, detail=detail, ambiguous=op.creates, attempts=attempt, hint=hint
        )

    async def _believed(self, op: Operation, not_found: errors.NotFound) -> errors.ApiError:
        """`not_found` once the base URL has shown it is the platform; else why it is not."""
        async with self._platform_check:  # one check per run, however many 404s wait on it
            if not self._platform_checked:
                self._not_platform = await self._check_platform()
                self._platform_checked = True
        if self._not_platform is None:
            return not_found
        hint = check_base_url(self.base_url)
        if isinstance(self._not_platform, errors.PermissionDenied):
            hint = (
                f'grant the key "{PLATFORM_CHECK_PERMISSION}": reconciler lists one project to '
                f"make sure a 404 comes from the platform; or {hint}"
            )
        return errors.UnexpectedResponse(
            f'{op.name}: unexpected response (HTTP 404): a 404 is taken as "not found" only '
            f"from the platform API, and {self.base_url} did not answer like it "
            f"({self._not_platform.message})",
            operation=op.name,
            status=404,
            hint=hint,
        )

    async def _check_platform(self) -> errors.ApiError | None:
        """None when the base URL answers `PLATFORM_CHECK` as only the platform can; else the
        error its answer made."""
        check = get_operation(PLATFORM_CHECK)
        try:
            payload, status = await self._send(check, {"limit": 1}, object_id=None)
            self._data(check, payload, status)
            self._next_cursor(check, payload, status)
        except errors.ApiError as error:
            return error
        return None

    def _parse_success(self, op: Operation, answer: _Answer) -> Any:
        status, content = answer.status, answer.content
        if status != op.success_status:
            what = "a success status the platform API does not answer to this operation"
            # a create may have happened all the same: apply re-reads before trying again
            raise self._unexpected(op, status, what, ambiguous=op.creates)
        if not content.strip():
            if op.returns_data:
                raise self._unexpected(op, status, "an empty body")
            return None
        try:
            parsed = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            raise self._unexpected(op, status, "a body that is not JSON") from None
        except RecursionError:
            raise self._unexpected(op, status, "JSON nested too deeply") from None
        if parsed is None and op.returns_data:
            # `null` is JSON, but no envelope; None below means "no body" (a field-less success)
            raise self._unexpected(op, status, "a JSON null body")
        return parsed

    def _data(self, op: Operation, payload: Any, status: int) -> Any:
        if payload is None:
            return {}
        if not isinstance(payload, dict):
            raise self._unexpected(op, status, "a JSON body that is not an object")
        if "data" not in payload or payload["data"] is None:
            if op.returns_data:
                raise self._unexpected(op, status, "no `data` member")
            return {}
        data = payload["data"]
        if op.lists:
            if not isinstance(data, list) or not all(isinstance(i, dict) for i in data):
                raise self._unexpected(op, status, "`data` that is not a list of objects")
        elif not isinstance(data, dict):
            raise self._unexpected(op, status, "`data` that is not an object")
        shape = op.data_shape
        if shape is not None:
            items = enumerate(data) if op.lists else [(None, data)]
            for index, item in items:
                where = "data" if index is None else f"data[{index}]"
                problem = shape_problem(item, shape, where)
                if problem is not None:
                    raise self._unexpected(
                        op, status, f"{_code(problem)} (see the platform API spec)"
                    )
        return data

    def _next_cursor(self, op: Operation, payload: Any, status: int) -> str | None:
        pagination = payload.get("pagination") if isinstance(payload, dict) else None
        if not isinstance(pagination, dict):
            raise self._unexpected(op, status, "a list without a `pagination` object")
        has_more = pagination.get("hasMore")
        if not isinstance(has_more, bool):
            raise self._unexpected(op, status, "`pagination.hasMore` that is not a boolean")
        if not has_more:
            return None
        cursor = pagination.get("cursor")
        if not isinstance(cursor, str) or not cursor:
            raise self._unexpected(
                op, status, "`pagination.hasMore` true without a `pagination.cursor` string"
            )
        return cursor

    def _unexpected(
        self,
        op: Operation,
        status: int | None,
        what: str,
        *,
        detail: str | None = None,
        ambiguous: bool = False,
        attempts: int | None = None,
        hint: str | None = None,
    ) -> errors.ApiError:
        shown = f" (HTTP {status})" if status is not None else ""
        if attempts is not None:
            shown += f" after {attempts_text(attempts)}"
        return errors.UnexpectedResponse(
            f"{op.name}: unexpected response{shown}: {what}",
            operation=op.name,
            status=status,
            detail=detail,
            hint=hint or check_base_url(self.base_url),
            ambiguous=ambiguous,
        )

    def _server_text_rules(self, body: Mapping[str, Any]) -> tuple[list[str], list[str]]:
        """(what to hide, what to keep as written) in a server's text about a call: the
        server wrote it, and may quote what the call sent (`sensitive.redact`).

        The API key is always hidden. A call that sent secret values hides every text it sent,
        secret or not, so that what is hidden never tells which texts were secret, nor which
        text a pull request wrote equals a secret. Any other call (every read, every call of a
        plan) keeps what it sent as written: a server quoting a name the manifest wrote quotes
        it as written, whatever the key holds.
        """
        key = self._api_key.reveal()
        sent = list(_texts(body))
        if _holds_secret(body):
            return [key, *sent], []
        return [key], sent


def _texts(value: Any) -> Iterator[str]:
    """Every text in a request body, secret values revealed."""
    if isinstance(value, Secret):
        yield value.reveal()
    elif isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _texts(item)


def _holds_secret(value: Any) -> bool:
    if isinstance(value, Secret):
        return True
    if isinstance(value, Mapping):
        return any(_holds_secret(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_secret(item) for item in value)
    return False


async def _raw(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body of an answer that is not encoded, as the transport hands it over (httpx's
    `aiter_bytes` would pass it through an identity decoder and a re-chunker)."""
    stream = response.stream
    assert isinstance(stream, httpx.AsyncByteStream)
    async for chunk in stream:
        yield chunk


def _limit_sent(body: Mapping[str, Any]) -> int:
    """The page size a list request asked for: its `limit`, else the spec's default (100)."""
    limit = body.get("limit")
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else PAGE_SIZE


def _identity(item: Mapping[str, Any], key: str) -> str:
    """What tells a listed item apart: its `key` member, else (an item without one, which the
    spec does not allow but a broken server may send) its whole content."""
    value = item.get(key)
    if isinstance(value, str):
        return f"{key} {value!r}"
    return json.dumps(item, sort_keys=True, default=str)


def _code(problem: str) -> str:
    """`data[0].git is not an object` -> `` `data[0].git` is not an object ``."""
    path, _, rest = problem.partition(" ")
    return f"`{path}` {rest}"


_HEADER_SAFE = frozenset(chr(c) for c in range(0x21, 0x7F))


def _raised_in_anyio(exc: BaseException) -> bool:
    """Whether `exc` was raised inside anyio (its innermost frame is anyio's code)."""
    trace = exc.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    return trace is not None and "anyio" in trace.tb_frame.f_code.co_filename.split("/")


def _checked_key(api_key: str | None, base_url: str) -> str:
    """The key without surrounding whitespace (a pasted or `cat`-ed key ends in a newline).

    Every operation of the platform needs a key, so none at all is refused before any call
    (the local emulator is given its own key by `connect`).
    """
    key = (api_key or "").strip()
    if not key:
        raise UsageError(
            f"no API key: {API_KEY_ENV} is not set",
            hint=f"set {API_KEY_ENV} to an API key of the platform at {base_url} "
            "(--base-url local needs none)",
        )
    if not set(key) <= _HEADER_SAFE:
        # Said without the key: it must never be echoed, even when malformed.
        raise UsageError(
            f"the API key ({API_KEY_ENV}) contains spaces, control or non-ASCII characters, "
            "which cannot be sent in an HTTP header",
            hint=f"check the value of {API_KEY_ENV}",
        )
    sensitive.remember_credential(key)
    return key
