"""Proof: a platform that answers garbage gets a precise error naming the operation, exit 1, and
no traceback, from plan, apply, export and status.

A real HTTP server on loopback sits in front of an in-process emulator: it forwards every call,
except that a rule can replace the answer of one operation with garbage (not JSON, an HTML 502
page, a JSON array, no `data`, `data` of the wrong type, broken pagination, a cursor loop, pages
that never end under fresh cursors, a truncated, huge or endless body, a body trickling in byte
by byte, a 200 carrying an error, a response slower than the timeout) or rewrite one field of
the real answer to a value of the wrong type.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import reconciler.platform.client as client_module
from reconciler.emulator.app import EmulatorConfig, create_app
from reconciler.platform.client import PlatformClient
from reconciler.platform.operations import OPERATIONS
from reconciler.platform.retry import RetryPolicy
from tests.fixtures.cli import CliResult, run_cli
from tests.fixtures.loopback import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = (ROOT / "examples" / "quickstart.yaml").read_text()
IMAGE_APP = (ROOT / "examples" / "image-app.yaml").read_text()
API_KEY = "garbage-test-key"
SECRET_ENV = {"STOREFRONT_SESSION_SECRET": "sentinel-session-secret-value"}
TIMEOUT_S = 0.3
MAX_ANSWER_BYTES = 1024 * 1024  # the client's cap, lowered so an endless body ends quickly
# The client's deadlines, lowered likewise so that a trickle ends within seconds; the call's
# leaves room for the five attempts a loaded machine may need against TIMEOUT_S.
ATTEMPT_DEADLINE_S = 1.0
CALL_DEADLINE_S = 3.0

# What a rule answers instead of the real response: (status, headers, body bytes).
Answer = tuple[int, dict[str, str], bytes]


@dataclass
class Rule:
    operation: str
    answer: Answer | None = None  # fixed garbage
    rewrite: Callable[[Any], Any] | None = None  # applied to the real JSON answer
    delay_s: float = 0.0
    truncate: bool = False  # announce more bytes than sent
    stream: Callable[[], AsyncIterator[bytes]] | None = None  # a 200 body sent as it is made


class GarbageServer:
    """Loopback HTTP server forwarding to an emulator, answering garbage where a rule says."""

    def __init__(self) -> None:
        self.emulator_app = create_app(EmulatorConfig(dev_key=API_KEY, step_ms=5, seed=7))
        self.rule: Rule | None = None
        self.seen: list[str] = []
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])
        self._server = LoopbackServer(app, log_level="critical")
        self.base_url = self._server.base_url

    def stop(self) -> None:
        self._server.stop()

    async def _handle(self, request: Request) -> Response:
        operation = request.url.path.removeprefix("/v1/")
        self.seen.append(operation)
        body = await request.body()
        rule = self.rule if self.rule and self.rule.operation == operation else None
        if rule is not None and rule.delay_s:
            await asyncio.sleep(rule.delay_s)
        if rule is not None and rule.stream is not None:
            return StreamingResponse(rule.stream(), media_type="application/json")
        if rule is not None and rule.answer is not None:
            status, headers, content = rule.answer
            return self._respond(status, headers, content, rule.truncate)
        transport = httpx.ASGITransport(app=self.emulator_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://emulator") as inner:
            real = await inner.request(
                request.method, request.url.path, content=body, headers=dict(request.headers)
            )
        content = real.content
        if rule is not None and rule.rewrite is not None and real.is_success:
            content = json.dumps(rule.rewrite(copy.deepcopy(real.json()))).encode()
        headers = {"content-type": real.headers.get("content-type", "application/json")}
        return self._respond(real.status_code, headers, content, rule is not None and rule.truncate)

    @staticmethod
    def _respond(status: int, headers: dict[str, str], content: bytes, truncate: bool) -> Response:
        response = Response(content, status_code=status, headers=headers)
        if truncate:
            response.headers["content-length"] = str(len(content) + 100)
        return response


@pytest.fixture(scope="module")
def garbage_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GarbageServer]:
    """Seeded once: both examples applied (projects, apps, settings, variables, policies,
    domains) and one deployment each, so every read of every command has real answers."""
    server = GarbageServer()
    directory = tmp_path_factory.mktemp("garbage-seed")
    for name, text in (("quickstart.yaml", QUICKSTART), ("image-app.yaml", IMAGE_APP)):
        path = directory / name
        path.write_text(text)
        result = run_cli(
            ["apply", "-f", str(path), "--auto-approve", "--deploy", "--poll-interval", "0.05"],
            env={"RECONCILER_BASE_URL": server.base_url, "RECONCILER_API_KEY": API_KEY}
            | SECRET_ENV,
        )
        assert result.exit_code == 0, result.output
    yield server
    server.stop()


@pytest.fixture
def garbage(garbage_server: GarbageServer, monkeypatch: pytest.MonkeyPatch) -> GarbageServer:
    """The server with no rule, retries without waiting, a short client timeout and call
    deadline, and a small cap on answers."""
    garbage_server.rule = None
    garbage_server.seen.clear()

    async def no_wait(seconds: float) -> None:
        return None

    policy = functools.partial(
        RetryPolicy,
        sleep=no_wait,
        attempt_deadline=ATTEMPT_DEADLINE_S,
        max_elapsed=CALL_DEADLINE_S,
    )
    monkeypatch.setattr(client_module, "RetryPolicy", policy)
    monkeypatch.setitem(PlatformClient.__init__.__kwdefaults__, "timeout", TIMEOUT_S)
    monkeypatch.setitem(
        PlatformClient.__init__.__kwdefaults__, "max_answer_bytes", MAX_ANSWER_BYTES
    )
    return garbage_server


def run(server: GarbageServer, *args: str) -> CliResult:
    env = {
        "RECONCILER_BASE_URL": server.base_url,
        "RECONCILER_API_KEY": API_KEY,
        "RECONCILER_FINGERPRINT_KEY": None,
        "NO_COLOR": "1",
        "RECONCILER_DEBUG": None,
        **SECRET_ENV,
    }
    return run_cli(list(args), env=env)


def assert_precise_failure(result: CliResult, operation: str, case: str) -> None:
    text = result.output
    assert result.exit_code == 1, f"{case}: exit {result.exit_code}\n{text}"
    assert "Traceback" not in text, f"{case}: {text}"
    assert "internal error" not in text.lower(), f"{case}: {text}"
    assert operation in text, f"{case}: the error must name {operation}:\n{text}"
    assert API_KEY not in text and SECRET_ENV["STOREFRONT_SESSION_SECRET"] not in text


# ---- which command reads what ----------------------------------------------------------------


def commands(tmp_path: Path) -> dict[str, tuple[str, ...]]:
    both = tmp_path / "manifests"
    both.mkdir(exist_ok=True)
    (both / "quickstart.yaml").write_text(QUICKSTART)
    (both / "image-app.yaml").write_text(IMAGE_APP)
    return {
        "plan": ("plan", "-f", str(both)),
        "apply": ("apply", "-f", str(both), "--auto-approve"),
        "export": ("export", "-o", str(tmp_path / "exported.yaml"), "--force"),
        "status": ("status", "-f", str(both)),
    }


READS: dict[str, list[str]] = {
    "plan": [
        "projects.getProject",
        "apps.listApps",
        "environments.listEnvironments",
        "environments.listEnvironmentVariables",
        "gateway.listPolicies",
        "domains.listDomains",
    ],
    "export": [
        "projects.listProjects",
        "apps.listApps",
        "environments.listEnvironments",
        "environments.listEnvironmentVariables",
        "gateway.listPolicies",
        "domains.listDomains",
    ],
    "status": ["apps.listApps", "deployments.listDeployments", "domains.listDomains"],
}
READS["apply"] = READS["plan"]
LISTS = {
    "projects.listProjects",
    "apps.listApps",
    "environments.listEnvironments",
    "environments.listEnvironmentVariables",
    "gateway.listPolicies",
    "domains.listDomains",
    "deployments.listDeployments",
}

HTML_502 = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502</h1></body></html>"
JSON = {"content-type": "application/json"}


async def _endless_body() -> AsyncIterator[bytes]:
    yield b'{"data": "'
    while True:
        # A send after the client left returns at once: without this pause the generator
        # would never let the server's loop notice the disconnection.
        await asyncio.sleep(0)
        yield b"x" * 65536


async def _trickle() -> AsyncIterator[bytes]:
    """One byte every 50 ms, each well within the client's timeout, never a whole answer."""
    yield b'{"data": {"'
    while True:
        await asyncio.sleep(0.05)
        yield b"x"


def _fresh_cursors(page: Callable[[Any], Any]) -> Rule:
    """Every page says there is more, under a cursor never given before."""
    cursors = itertools.count()
    return Rule(
        "",
        rewrite=lambda payload: {
            "data": page(payload["data"]),
            "pagination": {"hasMore": True, "cursor": f"fresh-{next(cursors)}"},
        },
    )


def _fixed(content: Any, status: int = 200) -> Rule:
    raw = content if isinstance(content, bytes) else json.dumps(content).encode()
    return Rule("", answer=(status, JSON, raw))


def garbage_answers(operation: str) -> dict[str, Rule]:
    """Every garbage answer that applies to `operation`."""
    rules = {
        "not-json": Rule("", answer=(200, {"content-type": "text/plain"}, b"OK, done!")),
        "html-502": Rule("", answer=(502, {"content-type": "text/html"}, HTML_502)),
        "html-200": Rule("", answer=(200, {"content-type": "text/html"}, HTML_502)),
        "json-array": _fixed([{"data": {}}]),
        "json-string": _fixed("data"),
        "json-null": _fixed(None),
        "empty-body": Rule("", answer=(200, JSON, b"")),
        "missing-data": _fixed({"result": {}}),
        "data-null": _fixed({"data": None}),
        "data-string": _fixed({"data": "ok"}),
        "data-number": _fixed({"data": 42}),
        "error-in-200": _fixed({"error": {"code": "internal", "message": "database down"}}),
        "redirect": Rule("", answer=(302, {"location": "http://127.0.0.1:1/"}, b"")),
        "teapot": Rule("", answer=(418, JSON, b'{"detail": "short and stout"}')),
        "truncated": Rule("", rewrite=lambda payload: payload, truncate=True),
        "slow": Rule("", rewrite=lambda payload: payload, delay_s=TIMEOUT_S * 2),
        "huge": _fixed({"data": {"junk": "x" * 8_000_000}}),
        "endless-body": Rule("", stream=_endless_body),
        "trickle": Rule("", stream=_trickle),
        "utf8-garbage": Rule("", answer=(200, JSON, b'{"data": "\xff\xfe"}')),
        "deep-json": Rule("", answer=(200, JSON, b'{"data":' * 20_000 + b"1" + b"}" * 20_000)),
    }
    if operation in LISTS:
        rules |= {
            "data-object-for-list": _fixed({"data": {}, "pagination": {"hasMore": False}}),
            "items-not-objects": _fixed({"data": [1, "two"], "pagination": {"hasMore": False}}),
            "no-pagination": _fixed({"data": []}),
            "pagination-string": _fixed({"data": [], "pagination": "none"}),
            "has-more-string": _fixed({"data": [], "pagination": {"hasMore": "no"}}),
            "has-more-no-cursor": _fixed({"data": [], "pagination": {"hasMore": True}}),
            "cursor-number": _fixed({"data": [], "pagination": {"hasMore": True, "cursor": 5}}),
            "cursor-loop": Rule(
                "",
                rewrite=lambda payload: {
                    **payload,
                    "pagination": {"hasMore": True, "cursor": "same-cursor"},
                },
            ),
            "empty-pages-forever": _fresh_cursors(lambda data: []),
            "same-page-forever": _fresh_cursors(lambda data: data),
        }
    else:
        rules["data-list-for-object"] = _fixed({"data": [{}]})
    return rules


# The client reads every envelope the same way, so each command meets every kind of garbage on
# one of its reads; every list read meets the pagination garbage; and every read of every
# command meets the two commonest garbage answers (a proxy's HTML page, a non-JSON body).
FOCUS = {
    "plan": "projects.getProject",
    "apply": "apps.listApps",
    "export": "projects.listProjects",
    "status": "deployments.listDeployments",
}
COMMON = ("html-502", "not-json")
PAGINATION = (
    "no-pagination",
    "pagination-string",
    "has-more-string",
    "has-more-no-cursor",
    "cursor-number",
    "cursor-loop",
    "empty-pages-forever",
    "same-page-forever",
    "items-not-objects",
)


ONE_PAGE = {"status": ("deployments.listDeployments",)}


def _matrix() -> list[tuple[str, str, str]]:
    cases = {
        (c, op, name)
        for c, op in FOCUS.items()
        for name in garbage_answers(op)
        if op not in ONE_PAGE.get(c, ()) or name not in PAGINATION
    }
    for command, operations in READS.items():
        for operation in operations:
            # status reads one page of deployments (the newest): their pagination is unused
            paged = operation in LISTS and operation not in ONE_PAGE.get(command, ())
            kinds = COMMON + (PAGINATION if paged and command != "apply" else ())
            cases |= {(command, operation, name) for name in kinds}
    return sorted(cases)


MATRIX = _matrix()


@pytest.mark.parametrize(("command", "operation", "name"), MATRIX)
def test_garbage_answer_is_a_precise_error(
    command: str, operation: str, name: str, garbage: GarbageServer, tmp_path: Path
) -> None:
    rule = garbage_answers(operation)[name]
    rule.operation = operation
    garbage.rule = rule
    result = run(garbage, *commands(tmp_path)[command])
    assert operation in garbage.seen, f"{command} never called {operation}"
    assert_precise_failure(result, operation, f"{command}/{operation}/{name}")
    assert not (tmp_path / "exported.yaml").exists(), "export wrote a file from garbage"


# ---- wrong types in the fields of real answers ------------------------------------------------

WRONG = {str: 12345, int: "12", float: "0.5", bool: "true", list: {"x": 1}, dict: ["x"]}


def _field_paths(item: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(item, dict):
        for key, value in item.items():
            yield (*prefix, key)
            if isinstance(value, dict | list):
                yield from _field_paths(value, (*prefix, key))
    elif isinstance(item, list) and item:
        yield (*prefix, 0)
        yield from _field_paths(item[0], (*prefix, 0))


def _retype(path: tuple[Any, ...], *, remove: bool = False) -> Callable[[Any], Any]:
    """Rewrite `data` (every item of a list) so the value at `path` has the wrong type (or, with
    `remove`, is missing)."""

    def one(item: Any) -> None:
        node = item
        for part in path[:-1]:
            node = node[part]
        if remove:
            del node[path[-1]]
        else:
            node[path[-1]] = WRONG[type(node[path[-1]])]

    def rewrite(payload: Any) -> Any:
        data = payload["data"]
        for item in data if isinstance(data, list) else [data]:
            with contextlib.suppress(KeyError, IndexError, TypeError):
                one(item)
        return payload

    return rewrite


def _sample_answers(server: GarbageServer) -> dict[str, Any]:
    """One real `data` item per operation the read commands call, from the seeded state."""
    client = httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=10
    )
    env = {"project": "storefront", "app": "gateway", "environment": "production"}
    bodies = {
        "projects.getProject": {"project": "storefront"},
        "projects.listProjects": {},
        "apps.listApps": {"project": "storefront"},
        "environments.listEnvironments": {"project": "storefront", "app": "gateway"},
        "environments.listEnvironmentVariables": env,
        "gateway.listPolicies": env,
        "domains.listDomains": env,
        "deployments.listDeployments": env,
    }
    samples = {}
    with client:
        for operation, body in bodies.items():
            data = client.post(f"/v1/{operation}", json=body).json()["data"]
            samples[operation] = data[0] if isinstance(data, list) else data
    return samples


@pytest.mark.slow
@pytest.mark.parametrize("remove", [False, True], ids=["wrong-type", "missing"])
def test_wrong_field_types_in_real_answers(
    remove: bool, garbage: GarbageServer, tmp_path: Path
) -> None:
    """Every field (and nested member) of every read, one at a time, swapped to a wrong type or
    left out: the command either copes (a field it does not use, or an optional one) or fails
    precisely."""
    samples = _sample_answers(garbage)
    argv = commands(tmp_path)
    users = {op: [c for c, ops in READS.items() if op in ops and c != "apply"] for op in samples}
    crashed: list[str] = []
    failures: list[str] = []
    cases = 0
    for operation, sample in samples.items():
        for number, path in enumerate(_field_paths(sample)):
            # each path through one of the commands that read it, taking turns
            for command in [users[operation][number % len(users[operation])]]:
                cases += 1
                garbage.rule = Rule(operation, rewrite=_retype(path, remove=remove))
                result = run(garbage, *argv[command])
                label = f"{command}/{operation}/{'.'.join(map(str, path))}"
                if remove and label in EXPORT_IMPRECISE:
                    continue  # test_export_names_the_operation_when_a_member_is_missing
                text = result.output
                if "Traceback" in text or "internal error" in text.lower():
                    crashed.append(f"{label}: {text.strip().splitlines()[-1]}")
                elif result.exit_code not in (0, 1, 2):
                    failures.append(f"{label}: exit {result.exit_code}")
                elif result.exit_code == 1 and operation not in text:
                    failures.append(f"{label}: error does not name the operation: {text[-300:]}")
                (tmp_path / "exported.yaml").unlink(missing_ok=True)
    assert cases > 60
    assert crashed == [], "\n".join(crashed)
    assert failures == [], "\n".join(failures)


EXPORT_IMPRECISE: set[str] = set()


def test_export_names_the_operation_when_a_member_is_missing(
    garbage: GarbageServer, tmp_path: Path
) -> None:
    garbage.rule = Rule("domains.listDomains", rewrite=_retype(("domain",), remove=True))
    result = run(garbage, *commands(tmp_path)["export"])
    assert_precise_failure(result, "domains.listDomains", "export/listDomains/no domain")


# ---- garbage answers to writes ---------------------------------------------------------------

WRITES = {
    "projects.createProject": ["missing-data", "data-string", "id-number", "not-json", "html-502"],
    "apps.createApp": ["missing-data", "data-list", "id-missing", "not-json", "html-200"],
    "environments.updateSettings": ["html-502", "teapot", "json-array"],
    "environments.setEnvironmentVariables": ["not-json", "data-string", "slow"],
}


def _write_rule(operation: str, name: str) -> Rule:
    special = {
        "id-number": _fixed({"data": {"id": 12345}}),
        "id-missing": _fixed({"data": {"name": "web"}}),
        "data-list": _fixed({"data": [{"appId": "app_12345678"}]}),
    }
    rule = special.get(name) or garbage_answers(operation)[name]
    rule.operation = operation
    return rule


@pytest.mark.parametrize(
    ("operation", "name"), [(op, name) for op, names in WRITES.items() for name in names]
)
def test_garbage_answer_to_a_write_is_a_precise_error(
    operation: str, name: str, garbage: GarbageServer, tmp_path: Path
) -> None:
    slug = f"fresh-{abs(hash((operation, name))) % 10**8:08d}"
    manifest = tmp_path / "fresh.yaml"
    manifest.write_text(
        f"version: 1\nprojects:\n  {slug}:\n    name: Fresh\n    apps:\n      web:\n"
        "        name: Web\n        git: {repository: acme/web}\n        environments:\n"
        "          production:\n            runtime: {port: 8080}\n"
        "            variables: {MODE: fresh}\n"
    )
    garbage.rule = _write_rule(operation, name)
    result = run(garbage, "apply", "-f", str(manifest), "--auto-approve")
    assert operation in garbage.seen
    assert_precise_failure(result, operation, f"apply/{operation}/{name}")


def test_a_create_whose_answer_is_cut_is_recovered_not_duplicated(
    garbage: GarbageServer, tmp_path: Path
) -> None:
    """A truncated answer to a create is ambiguous: apply must look before creating again."""
    manifest = tmp_path / "cut.yaml"
    manifest.write_text(
        "version: 1\nprojects:\n  cut-answer:\n    name: Cut\n    apps:\n      web:\n"
        "        name: Web\n        git: {repository: acme/web}\n"
    )
    garbage.rule = Rule("apps.createApp", rewrite=lambda payload: payload, truncate=True)
    first = run(garbage, "apply", "-f", str(manifest), "--auto-approve")
    assert "Traceback" not in first.output and "internal error" not in first.output.lower()
    assert first.exit_code in (0, 1), first.output
    if first.exit_code == 1:
        assert "apps.createApp" in first.output
    garbage.rule = None
    again = run(garbage, "apply", "-f", str(manifest), "--auto-approve")
    assert again.exit_code == 0, again.output
    apps = httpx.post(
        f"{garbage.base_url}/v1/apps.listApps",
        json={"project": "cut-answer"},
        headers={"Authorization": f"Bearer {API_KEY}"},
    ).json()["data"]
    assert [a["slug"] for a in apps] == ["web"]


# ---- the client's envelope and shape checks, without a server ---------------------------------


def _client_answering(content: bytes, status: int) -> PlatformClient:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(status, content=content, headers=JSON)
    )
    return PlatformClient("http://platform.test", "k-123456", transport=transport)


async def _call(content: bytes, operation: str, body: dict[str, Any]) -> Any:
    async with _client_answering(content, OPERATIONS[operation].success_status) as client:
        if operation.split(".")[1].startswith("list"):
            return await client.list_all(operation, body)
        return await client.call(operation, body)


@pytest.mark.parametrize(
    ("content", "operation", "expected"),
    [
        (b"null", "projects.getProject", "a JSON null body"),
        (b"null", "apps.listApps", "a JSON null body"),
        (b'{"data": {"slug": 7}}', "projects.getProject", "`data.slug` is not a string"),
        (
            b'{"data": [{"slug": "a"}, {"slug": "b", "git": "acme/b"}],'
            b' "pagination": {"hasMore": false}}',
            "apps.listApps",
            "`data[1].git` is not an object",
        ),
        (
            b'{"data": [{"slug": "p", "regions": [{"name": "fra", "replicas": {"min": "1",'
            b' "max": 2}}]}], "pagination": {"hasMore": false}}',
            "environments.listEnvironments",
            "`data[0].regions[0].replicas.min` is not an integer",
        ),
        (
            b'{"data": [{"slug": "p", "regions": [{"name": "fra"}]}],'
            b' "pagination": {"hasMore": false}}',
            "environments.listEnvironments",
            "`data[0].regions[0].replicas` is missing",
        ),
        (b'{"data": {"name": "web"}}', "apps.createApp", "`data.appId` is missing"),
    ],
)
def test_client_names_the_operation_and_the_field_of_a_bad_shape(
    content: bytes, operation: str, expected: str
) -> None:
    import asyncio

    from reconciler.errors import UnexpectedResponse

    with pytest.raises(UnexpectedResponse) as caught:
        asyncio.run(_call(content, operation, {"project": "shop", "app": "web"}))
    assert caught.value.operation == operation
    assert operation in str(caught.value) and expected in str(caught.value)


def test_client_tolerates_what_the_spec_allows() -> None:
    """Unknown members (a newer platform), absent optional ones, 3.0 for 3, empty 202 bodies."""
    import asyncio

    body = (
        b'{"data": [{"id": "env_1", "slug": "production", "futureField": {"x": 1},'
        b' "regions": [{"name": "fra", "replicas": {"min": 1.0, "max": 2}}]}],'
        b' "pagination": {"hasMore": false}}'
    )
    items = asyncio.run(_call(body, "environments.listEnvironments", {}))
    assert items[0]["regions"][0]["replicas"]["min"] == 1
    assert asyncio.run(_call(b"", "apps.deleteApp", {})) == {}
