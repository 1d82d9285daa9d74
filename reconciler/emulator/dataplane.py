"""The gateway (data plane) in front of ready deployments.

Routing by `Host` (port and a trailing dot ignored, case-insensitive), before any path routing:
- a host a ready deployment answers on (its `domains`: its generated host, and for the
  deployment serving its environment the environment's generated host and verified custom
  domains) is the gateway: every method and path, `/v1/...` included, is evaluated against the
  policies the deployment copied when it was created; 403 when a firewall policy blocks, else
  200 with a JSON body naming the deployment and the logging policies that recorded it;
- any other platform host (under `platform-emulator.test`, or a custom domain of the workspace
  that no ready deployment serves: pending, failed, or its environment has no ready deployment)
  is a 404 problem;
- every other host (`127.0.0.1`, `localhost`, `local`, ...) is the emulator itself: the API and
  the admin calls, exactly as without a gateway.

The policies are evaluated here, independently of `reconciler.policy_tests` (the emulator is a
second implementation, and a property test shows the two agree); where the platform API spec
leaves matching open, this follows the same answers, listed in docs/guides/emulator.md
("The gateway (data plane)").
Gateway requests are not API calls: no key, no fault rules, latency or rate limit, and they are
not in the request log.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import re2

from reconciler.emulator.deployments import HOST_SUFFIX, served_domains
from reconciler.emulator.errors import PROBLEM_CONTENT_TYPE, problem_body
from reconciler.emulator.store import Obj, Store

if TYPE_CHECKING:
    from reconciler.emulator.app import Emulator

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]

BLOCKED = 403
COMPILED_LISTS_KEPT = 256


class Gateway:
    """ASGI middleware: requests for platform hosts go to the data plane, others to `app`."""

    def __init__(self, app: Asgi, emulator: Emulator) -> None:
        self.app = app
        self.emulator = emulator
        # deployment ID -> (the snapshot's policy list, compiled); the list object is kept so
        # that a new state (reset, reload) never reuses another list's compilation
        self.compiled: dict[str, tuple[list[Obj], list[_Policy]]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        host = _host(scope) if scope["type"] == "http" else None
        if host is None or not _platform_host(self.emulator.store, host):
            await self.app(scope, receive, send)
            return
        async with self.emulator.lock:
            try:
                self.emulator.tick()
                status, body = self._answer(scope, host)
            except Exception as error:  # a bug in the emulator: still an answer, never a crash
                status = 500
                body = problem_body(500, f"emulator gateway error ({type(error).__name__})")
            finally:
                self.emulator.saver.note_changes()
            content = json.dumps(body).encode("utf-8")
        try:
            await self.emulator.saver.flush()
        except Exception as error:
            status = 500
            content = json.dumps(
                problem_body(500, f"emulator gateway error ({type(error).__name__})")
            ).encode()
        await _send_json(send, status, content)

    def _answer(self, scope: Scope, host: str) -> tuple[int, dict[str, Any]]:
        store = self.emulator.store
        deployment = _serving(store, host)
        if deployment is None:
            return 404, problem_body(404, f"no ready deployment answers on {host!r}")
        request = _Request.of(scope)
        blocked_by, logged_by = None, []
        for policy in self._policies(deployment):
            if policy.enabled and all(item(request) for item in policy.items):
                if not policy.firewall:
                    logged_by.append(policy.ref)
                    continue
                blocked_by = policy.ref
                break
        body = {
            "host": host,
            "deployment": {
                "id": deployment["id"],
                "project": store.projects[deployment["_projectId"]]["slug"],
                "app": store.apps[deployment["_appId"]]["slug"],
                "environment": store.environments[deployment["_envId"]]["slug"],
            },
            "blockedBy": blocked_by,
            "loggedBy": logged_by,
        }
        return (200 if blocked_by is None else BLOCKED), body

    def _policies(self, deployment: Obj) -> list[_Policy]:
        listed = deployment["_snapshot"].get("policies", [])
        cached = self.compiled.get(deployment["id"])
        if cached is not None and cached[0] is listed:
            return cached[1]
        if len(self.compiled) >= COMPILED_LISTS_KEPT:
            self.compiled.clear()
        policies = [_policy(index, spec) for index, spec in enumerate(listed)]
        self.compiled[deployment["id"]] = (listed, policies)
        return policies


# ---- which deployment answers -----------------------------------------------------------------


def _host(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name.lower() == b"host":
            host: str = value.decode("latin-1").strip().lower()
            if host.startswith("["):  # an IPv6 literal, perhaps with a port
                return host.partition("]")[0] + "]"
            name_part, _, port = host.rpartition(":")
            return (name_part if name_part and port.isdigit() else host).rstrip(".")
    return None


def _platform_host(store: Store, host: str) -> bool:
    return host.endswith("." + HOST_SUFFIX) or store.find_domain(host) is not None


def _serving(store: Store, host: str) -> Obj | None:
    candidates = sorted(
        (
            d
            for app_id in _candidate_apps(store, host)
            for d in store.deployments_of("_appId", app_id)
        ),
        key=lambda d: d["_seq"],
    )
    for deployment in candidates:
        if deployment["status"] == "ready" and host in served_domains(store, deployment):
            return deployment
    return None


def _candidate_apps(store: Store, host: str) -> set[str]:
    """Apps whose deployments may answer on `host`: the app of a custom domain, or those whose
    slugs fit a generated `<app>[-<id>]-<project>.<suffix>` (slugs may hold hyphens, so every
    split is tried; `served_domains` has the last word)."""
    domain = store.find_domain(host)
    if domain is not None:
        return {domain["_appId"]}
    label = host.removesuffix("." + HOST_SUFFIX)
    apps: set[str] = set()
    for index, char in enumerate(label):
        project = store.find_project(label[index + 1 :]) if char == "-" else None
        if project is None:
            continue
        left = label[:index]
        for slug in (left, left[:-9] if left[-9:-8] == "-" else None):
            app = store.app_with_slug(project["id"], slug) if slug else None
            if app is not None:
                apps.add(app["id"])
    return apps


# ---- the request as the gateway reads it ------------------------------------------------------


@dataclass
class _Request:
    method: str
    path: str  # as sent, up to the first `?`
    query: dict[str, list[str]]  # names case-sensitive, nothing decoded
    headers: dict[str, list[str]]  # names lower-case
    client: tuple[int, int] | None  # (IP version, address as an integer), IPv4-mapped unmapped

    @classmethod
    def of(cls, scope: Scope) -> _Request:
        raw = scope.get("raw_path") or scope["path"].encode("utf-8")
        query: dict[str, list[str]] = {}
        for part in scope.get("query_string", b"").decode("latin-1").split("&"):
            if part:
                name, _, value = part.partition("=")
                query.setdefault(name, []).append(value)
        headers: dict[str, list[str]] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))
        client = scope.get("client")
        return cls(
            method=scope["method"],
            path=raw.decode("latin-1").split("?", 1)[0],
            query=query,
            headers=headers,
            client=_client(client[0] if client else None),
        )


def _client(text: str | None) -> tuple[int, int] | None:
    """No usable address (a Unix socket) is outside every range."""
    try:
        address = ipaddress.ip_address((text or "").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.version, int(address)


# ---- policies compiled to predicates ----------------------------------------------------------

Predicate = Callable[[_Request], bool]
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")


@dataclass
class _Policy:
    ref: dict[str, Any]  # {"index", "name"}, as the answers show it
    enabled: bool
    firewall: bool
    items: list[Predicate]  # every item must hold; none: every request


def _policy(index: int, spec: Obj) -> _Policy:
    items = [_item(condition) for condition in spec.get("match") or []]
    return _Policy(
        {"index": index, "name": spec["name"]}, spec["enabled"], "firewall" in spec, items
    )


def _item(condition: Obj) -> Predicate:
    members: list[Predicate] = []
    if "path" in condition:
        members.append(_on_path(_text_test(condition["path"]["path"])))
    if "method" in condition:
        methods = frozenset(condition["method"]["methods"])  # case-sensitive
        members.append(lambda request: request.method in methods)
    if "header" in condition:
        members.append(_named(condition["header"], _header_value, lower_name=True))
    if "queryParam" in condition:
        members.append(_named(condition["queryParam"], _query_value, lower_name=False))
    if "remoteIp" in condition:
        members.append(_remote_ip(condition["remoteIp"]))
    return lambda request: all(member(request) for member in members)


def _on_path(test: Callable[[str], bool]) -> Predicate:
    return lambda request: test(request.path)


def _header_value(request: _Request, name: str) -> str | None:
    values = request.headers.get(name)
    return ",".join(values) if values else None  # a repeated header: its values joined


def _query_value(request: _Request, name: str) -> str | None:
    values = request.query.get(name)
    return values[0] if values else None  # a repeated parameter: its first value


def _named(
    spec: Obj, read: Callable[[_Request, str], str | None], *, lower_name: bool
) -> Predicate:
    name = spec["name"].lower() if lower_name else spec["name"]
    test = _text_test(spec["value"]) if "value" in spec else None

    def matches(request: _Request) -> bool:
        value = read(request, name)
        return value is not None and (test is None or test(value))

    return matches


def _text_test(spec: Obj) -> Callable[[str], bool]:
    """exact / prefix fold ASCII letters only under ignoreCase (bytes.lower() leaves every
    other byte alone); a regex must match the whole value, case-insensitively under ignoreCase."""
    fold = bool(spec.get("ignoreCase"))
    if "regex" in spec:
        options = re2.Options()
        options.log_errors = False
        options.case_sensitive = not fold
        regex = re2.compile(spec["regex"], options=options)
        return lambda value: regex.fullmatch(value) is not None

    def key(text: str) -> bytes:
        encoded = text.encode("utf-8", "surrogatepass")
        return encoded.lower() if fold else encoded

    if "exact" in spec:
        exact = key(spec["exact"])
        return lambda value: key(value) == exact
    prefix = key(spec["prefix"])
    return lambda value: key(value).startswith(prefix)


def _remote_ip(spec: Obj) -> Predicate:
    inside = "in" in spec
    spans = [_span(text) for text in spec["in" if inside else "notIn"]]

    def matches(request: _Request) -> bool:
        client = request.client
        within = client is not None and any(
            version == client[0] and first <= client[1] <= last for version, first, last in spans
        )
        return within == inside

    return matches


def _span(text: str) -> tuple[int, int, int]:
    """(IP version, first, last address) of a range; host bits are masked, and a range inside
    ::ffff:0:0/96 is the IPv4 range it maps."""
    network = ipaddress.ip_network(text, strict=False)
    if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(_MAPPED):
        offset = int(_MAPPED.network_address)
        return 4, int(network.network_address) - offset, int(network.broadcast_address) - offset
    return network.version, int(network.network_address), int(network.broadcast_address)


async def _send_json(send: Send, status: int, content: bytes) -> None:
    media = PROBLEM_CONTENT_TYPE if status >= 404 else "application/json"
    headers = [(b"content-type", media.encode()), (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})
