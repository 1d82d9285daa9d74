"""The ASGI application: routing `POST /v1/<group>.<operation>`, auth, problem bodies, faults,
latency, rate limit, and the admin API under `/_emulator/`.

Everything time-driven is evaluated lazily from the emulator clock on each request, so the app
needs no background task and works in-process under `httpx.ASGITransport` (no lifespan).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from reconciler.emulator import (
    apps,
    deployments,
    domains,
    environments,
    gateway,
    jsoncodec,
    lifecycle,
    projects,
)
from reconciler.emulator.auth import ALL_PERMISSIONS, ApiKey, authenticate, load_keys
from reconciler.emulator.context import Call, Operation
from reconciler.emulator.dataplane import Asgi, Gateway, Receive, Scope, Send
from reconciler.emulator.errors import PROBLEM_CONTENT_TYPE, ApiError, problem_body
from reconciler.emulator.faults import RULES, Fault, Faults, RateLimiter
from reconciler.emulator.store import Store
from reconciler.emulator.validation import (
    Arr,
    Int,
    Newer,
    Num,
    Obj,
    Str,
    lone_surrogates,
    refusal,
    validate,
)

__all__ = ["ApiKey", "Emulator", "EmulatorConfig", "create_app", "is_loopback", "load_keys"]

MAX_BODY_BYTES = 1024 * 1024
REQUEST_LOG_LIMIT = 100_000
ENV_API_KEY = "RECONCILER_API_KEY"
HeaderList = list[tuple[bytes, bytes]]  # an ASGI scope's headers: lower-case names

OPERATIONS: dict[str, Operation] = {
    **projects.OPERATIONS,
    **apps.OPERATIONS,
    **environments.OPERATIONS,
    **gateway.OPERATIONS,
    **domains.OPERATIONS,
    **deployments.OPERATIONS,
}


@dataclass
class EmulatorConfig:
    keys: list[ApiKey] | None = None  # None -> one dev key with every permission
    dev_key: str | None = None  # that key's value; None -> $RECONCILER_API_KEY, else generated
    state_file: Path | None = None  # persisted with atomic writes; loaded at start if it exists
    read_only_state: bool = False  # the state file is only read: a snapshot, never written back
    latency_ms: int = 0
    fault_rate: float = 0.0  # fraction of API calls answered 429 (Retry-After) / 500 / 503
    seed: int | None = None
    rate_limit: float | None = None  # requests per second (token bucket) -> 429 + Retry-After
    step_ms: int = 200  # deployment status step time
    # Behave like a platform newer than the spec, for tests of forward compatibility: accept
    # members, policy kinds and values the spec does not list, keep them and return them
    # (validation.Newer). Off by default: the emulator is faithful to the spec.
    accept_unknown: bool = False
    # with accept_unknown: where updateSettings keeps such a member ("runtime" or "build";
    # others at the environment's top level), and the environments every new app gets
    # besides production and preview
    unknown_settings: Mapping[str, str] = field(default_factory=dict)
    extra_environments: tuple[str, ...] = ()


class Emulator:
    """State and behaviour behind the ASGI routes (`app.state.emulator`)."""

    def __init__(self, config: EmulatorConfig) -> None:
        _check_config(config)
        self.config = config
        self.store = Store(
            Path(config.state_file) if config.state_file else None,
            config.seed,
            read_only=config.read_only_state,
        )
        self.dev_key: str | None = None
        # True when the emulator made the dev key up: only then may it be shown (a key given by
        # the caller or in RECONCILER_API_KEY may be a real one)
        self.dev_key_generated = False
        if config.keys is None:
            self.dev_key = config.dev_key or os.environ.get(ENV_API_KEY)
            if not self.dev_key:
                self.dev_key = "dev_" + secrets.token_urlsafe(18)
                self.dev_key_generated = True
            keys = [ApiKey(self.dev_key, list(ALL_PERMISSIONS))]
        else:
            keys = list(config.keys)
            if config.dev_key:
                self.dev_key = config.dev_key
                keys.append(ApiKey(config.dev_key, list(ALL_PERMISSIONS)))
        self.keys = {key.key: key for key in keys}
        if config.accept_unknown:
            self.store.newer = Newer(dict(config.unknown_settings), config.extra_environments)
        self.faults = Faults(config.fault_rate, config.seed)
        self.limiter = RateLimiter(config.rate_limit) if config.rate_limit else None
        self.requests: list[dict[str, Any]] = []
        self.lock = asyncio.Lock()
        self.saver = Saver(self.store)

    # ---- the platform API ---------------------------------------------------------------------

    async def api(self, method: str, name: str, headers: HeaderList, receive: Receive) -> Answer:
        """Answer `POST /v1/<name>` (`headers` as the ASGI scope holds them)."""
        answer = await self._api(method, name, headers, receive)
        if name in OPERATIONS and len(self.requests) < REQUEST_LOG_LIMIT:
            self.requests.append(
                {"operation": name, "status": answer.status, "at": self.store.now()}
            )
        return answer

    async def _api(self, method: str, name: str, headers: HeaderList, receive: Receive) -> Answer:
        operation = OPERATIONS.get(name)
        if operation is None:
            return _problem(ApiError(404, f"unknown operation {name!r}"))
        if method != "POST":
            return _problem(
                ApiError(405, "operations are called with POST", headers={"Allow": "POST"})
            )
        if self.limiter is not None:
            wait = self.limiter.take()
            if wait is not None:
                return _problem(
                    ApiError(429, "request rate limit exceeded", headers={"Retry-After": str(wait)})
                )
        fault = self.faults.pick(name)
        delay = self.config.latency_ms + (fault.latency_ms if fault else 0)
        if delay:
            await asyncio.sleep(delay / 1000)
        if fault is not None and fault.status is not None and fault.phase == "before":
            return _fault_answer(fault)
        answer = await self._process(headers, receive, name, operation)
        if fault is not None and fault.status is not None and fault.phase == "after":
            return _fault_answer(fault)
        return answer

    async def _process(
        self, headers: HeaderList, receive: Receive, name: str, operation: Operation
    ) -> Answer:
        try:
            key = authenticate(_header(headers, b"authorization"), self.keys)
            body = validate(
                await _json_body(headers, receive),
                operation.spec,
                accept_unknown=self.store.newer is not None,
            )
            async with self.lock:
                try:
                    self.tick()
                    call = Call(self.store, key, self.store.now(), self.config.step_ms)
                    status, payload = operation.handler(call, body)
                    # encoded now: the payload may share objects with the state, which other
                    # requests can change while this one waits for its save
                    answer = self._json_answer(payload, status)
                finally:
                    self.saver.note_changes()
            await self.saver.flush()
        except ApiError as error:
            answer = _problem(error)
            await self._flush_or_fail()
        except Exception as error:  # a bug in the emulator: still a problem body, never a crash
            detail = f"emulator error ({type(error).__name__}) in {name}"
            answer = _problem(ApiError(500, detail))
        return answer

    async def _flush_or_fail(self) -> None:
        """Save what a refused request changed (the clock moved statuses on); a failed save is
        answered with the refusal all the same, and retried by the next request."""
        with contextlib.suppress(Exception):
            await self.saver.flush()

    def _json_answer(self, payload: Any, status: int = 200) -> Answer:
        """A JSON answer, or a 500 problem when the payload cannot be encoded (a lone surrogate
        or a non-finite number that reached the state some other way than a request, such as a
        hand-edited state file): the client gets a problem body, never a text/plain crash."""
        try:
            content = jsoncodec.dumps_answer(payload, exact=self.store.non_finite)
        except (ValueError, TypeError) as error:  # UnicodeEncodeError is a ValueError
            reason = type(error).__name__
            return _problem(
                ApiError(500, f"emulator error: the answer is not encodable ({reason})")
            )
        return Answer(status, content)

    def tick(self) -> None:
        """Materialise what the clock says has happened since the last request."""
        now = self.store.now()
        lifecycle.advance_deployments(self.store, now, self.config.step_ms)
        domains.advance_domains(self.store, now, self.config.step_ms)

    # ---- admin --------------------------------------------------------------------------------

    async def admin(self, request: Request) -> Response:
        """An admin call: only for a loopback Host, and with one of the emulator's keys.

        Without both, a web page the emulator's user visits could call them: a browser sends
        a request for `attacker.example`, which DNS rebinding points at 127.0.0.1, with that
        name as Host and no key, and reads the answer (`GET /_emulator/state` holds write-only
        values)."""
        try:
            _check_loopback_host(request.headers.get("host"))
            authenticate(request.headers.get("authorization"), self.keys)
        except ApiError as refused:
            return _problem(refused).response()
        action = request.path_params["action"]
        route = ADMIN_ROUTES.get((request.method, action))
        if route is None:
            known = sorted({a for _, a in ADMIN_ROUTES})
            status = 405 if action in known else 404
            error = ApiError(status, f"no admin route {request.method} /_emulator/{action}")
            return _problem(error).response()
        spec, handler = route
        try:
            body = {}
            if spec is not None:
                body = validate(await _json_body(request.scope["headers"], request.receive), spec)
            async with self.lock:
                try:
                    self.tick()
                    answer = self._json_answer(handler(self, body))
                    self.tick()
                finally:
                    self.saver.note_changes()
            await self.saver.flush()
        except ApiError as error:
            answer = _problem(error)
            await self._flush_or_fail()
        return answer.response()

    def reset(self, _: dict[str, Any]) -> dict[str, Any]:
        self.store.reset()
        self.requests.clear()
        self.faults.set_rules([])
        return {}

    def set_dns(self, body: dict[str, Any]) -> dict[str, Any]:
        self.store.state["dns"] = [dict(r) for r in body["records"]]
        self.store.dirty = True
        return {"records": self.store.state["dns"]}

    def advance_clock(self, body: dict[str, Any]) -> dict[str, Any]:
        self.tick()  # what happened before the jump happened before it
        self.store.advance_clock(body["advanceMs"])
        return {"now": self.store.now()}

    def set_faults(self, body: dict[str, Any]) -> dict[str, Any]:
        self.faults.set_rules(body["rules"])
        return {"rules": body["rules"]}

    def set_quotas(self, body: dict[str, Any]) -> dict[str, Any]:
        quotas = self.store.state["quotas"]
        for name, value in body.items():
            if value is None:
                quotas.pop(name, None)
            else:
                quotas[name] = value
        self.store.dirty = True
        return {"quotas": quotas}

    def list_requests(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"requests": list(self.requests)}

    def dump_state(self, _: dict[str, Any]) -> dict[str, Any]:
        snapshot: dict[str, Any] = json.loads(json.dumps(self.store.state))
        return snapshot

    def get_clock(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"now": self.store.now(), "offsetMs": self.store.state["clockOffsetMs"]}


class Saver:
    """Saves the state file after changes, and answers wait for it: an answer never shows what
    the file does not hold yet (so a crash never loses what a client was told).

    Each save writes the whole state (see `Store.serialized`), so a save per change costs
    O(state) per change. Changes made while a save is being written share the next save: with
    N requests in flight, up to N changes per save."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.changes = 0  # changes made so far
        self.saved = 0  # changes the file holds
        self.writing: asyncio.Future[None] | None = None

    def note_changes(self) -> None:
        """Count what the request that just ran changed (called under the emulator's lock)."""
        if self.store.dirty:
            self.store.dirty = False
            self.changes += 1

    async def flush(self) -> None:
        """Return once the file holds every change made so far; raise what the save raised."""
        wanted = self.changes
        while self.saved < wanted:
            if self.writing is None:
                self.writing = asyncio.ensure_future(self._save())
            # shielded: a waiter that is cancelled (its client left) leaves the save running
            await asyncio.shield(self.writing)

    async def _save(self) -> None:
        covered = self.changes
        try:
            # serialized here, between requests (the handlers never await): a consistent state
            content = self.store.serialized()
            if content is not None:
                await asyncio.to_thread(self.store.write, content)
            self.saved = max(self.saved, covered)
        finally:
            self.writing = None


LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is this machine's
    loopback: `localhost` and its subdomains, 127.0.0.0/8, ::1."""
    name = host.strip().rstrip(".").lower().removeprefix("[").removesuffix("]")
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _check_loopback_host(header: str | None) -> None:
    host = (header or "").strip()
    if host.startswith("["):  # [::1]:8787
        name = host[: host.find("]") + 1] if "]" in host else host
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if not is_loopback(name):
        raise ApiError(
            403,
            "admin calls (/_emulator/) are answered only for a loopback Host (localhost, "
            "127.0.0.1, [::1]): call the emulator by one of those names",
        )


def _check_config(config: EmulatorConfig) -> None:
    if config.step_ms < 1:
        raise ValueError("step_ms must be at least 1")
    if config.latency_ms < 0:
        raise ValueError("latency_ms must not be negative")
    if not 0 <= config.fault_rate <= 1:
        raise ValueError("fault_rate must be between 0 and 1")
    if config.rate_limit is not None and not config.rate_limit > 0:
        raise ValueError("rate_limit must be a positive number of requests per second")
    if (config.unknown_settings or config.extra_environments) and not config.accept_unknown:
        raise ValueError("unknown_settings and extra_environments need accept_unknown")
    if set(config.unknown_settings.values()) - {"runtime", "build"}:
        raise ValueError("unknown_settings maps a member to runtime or build")
    if set(config.extra_environments) & {"production", "preview"}:
        raise ValueError("extra_environments are besides production and preview")


DNS_RECORD = Obj(
    fields={"type": Str(min=1, max=16), "name": Str(min=1, max=253), "value": Str(min=1, max=4096)},
    required=("type", "name", "value"),
)
QUOTA = Int(min=0, nullable=True)
CPU_QUOTA = Num(min=0, nullable=True)
ADMIN_ROUTES: dict[tuple[str, str], tuple[Obj | None, Any]] = {
    ("POST", "reset"): (None, Emulator.reset),
    ("PUT", "dns"): (
        Obj(fields={"records": Arr(item=DNS_RECORD)}, required=("records",)),
        Emulator.set_dns,
    ),
    ("POST", "clock"): (
        Obj(fields={"advanceMs": Int(min=0)}, required=("advanceMs",)),
        Emulator.advance_clock,
    ),
    ("GET", "clock"): (None, Emulator.get_clock),
    ("GET", "requests"): (None, Emulator.list_requests),
    ("PUT", "faults"): (RULES, Emulator.set_faults),
    ("PUT", "quotas"): (
        Obj(fields={"vCpus": CPU_QUOTA, "memoryMib": QUOTA, "storageMib": QUOTA}),
        Emulator.set_quotas,
    ),
    ("GET", "state"): (None, Emulator.dump_state),
}


async def _json_body(headers: HeaderList, receive: Receive) -> Any:
    media_type = (_header(headers, b"content-type") or "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(415, "send the body as JSON with Content-Type: application/json")
    declared = _header(headers, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ApiError(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client left (a 500 nobody reads)
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ApiError(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    try:
        body, valid_unicode = jsoncodec.loads_request(b"".join(chunks))
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise ApiError(400, f"malformed JSON: {error}", [("body", "malformed JSON")]) from error
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object", [("body", "must be an object")])
    surrogates = [] if valid_unicode else lone_surrogates(body)
    if surrogates:
        raise refusal(surrogates)
    return body


def _header(headers: HeaderList, name: bytes) -> str | None:
    """The first value of a header (`name` in lower case, as ASGI servers give names)."""
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


@dataclass
class Answer:
    """An answer with a JSON body: a problem when `media_type` says so."""

    status: int
    body: bytes
    media_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """As Starlette's Response lists them: the answer's own, then length and type."""
        return [
            *(
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in self.headers.items()
            ),
            (b"content-length", str(len(self.body)).encode("latin-1")),
            (b"content-type", self.media_type.encode("latin-1")),
        ]

    async def send(self, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status, "headers": self.raw_headers()}
        )
        await send({"type": "http.response.body", "body": self.body})

    def response(self) -> Response:
        return Response(self.body, self.status, self.headers, self.media_type)


def _problem(error: ApiError) -> Answer:
    content = jsoncodec.dumps_answer(error.problem())  # always encodable: see errors.encodable
    return Answer(error.status, content, PROBLEM_CONTENT_TYPE, error.headers)


def _fault_answer(fault: Fault) -> Answer:
    status = fault.status or 500
    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
    content = jsoncodec.dumps_answer(problem_body(status, "injected fault"))
    return Answer(status, content, PROBLEM_CONTENT_TYPE, headers)


class ApiRoutes:
    """ASGI middleware answering `/v1/<operation>` itself, every method, with no router, request
    or response objects on the way: the platform API is what clients call thousands of times,
    and Starlette's layers cost a large share of the emulator's CPU per call. Other paths (the
    admin API, unknown routes) go on to the Starlette app."""

    def __init__(self, app: Asgi, emulator: Emulator) -> None:
        self.app = app
        self.emulator = emulator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"] if scope["type"] == "http" else ""
        name = path[4:]
        if not path.startswith("/v1/") or not name or "/" in name:
            await self.app(scope, receive, send)
            return
        answer = await self.emulator.api(scope["method"], name, scope["headers"], receive)
        await answer.send(send)


def create_app(config: EmulatorConfig | None = None) -> Starlette:
    """The emulator as an ASGI app; `app.state.emulator` is the `Emulator`."""
    emulator = Emulator(config or EmulatorConfig())
    methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
    app = Starlette(
        routes=[Route("/_emulator/{action}", emulator.admin, methods=methods)],
        middleware=[
            # requests for the hosts of deployments go to their gateway, all others on
            Middleware(Gateway, emulator=emulator),
            Middleware(ApiRoutes, emulator=emulator),
        ],
    )
    # the platform has no `/v1/<operation>/` route: a trailing slash is an unknown route (404
    # problem), not Starlette's 307 to the path without it
    app.router.redirect_slashes = False
    app.state.emulator = emulator

    async def not_found(request: Request, exc: Exception) -> Response:
        return _problem(ApiError(404, f"no route {request.url.path}")).response()

    app.add_exception_handler(404, not_found)
    return app
