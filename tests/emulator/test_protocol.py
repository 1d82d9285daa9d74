"""Transport-level conformance: routing, content types, body limits, auth, problem bodies."""

from __future__ import annotations

import json

import pytest

from tests.emulator.helpers import ok, problem
from tests.fixtures.emulator import EmulatorServer


def _post(emulator: EmulatorServer, operation: str, content: bytes, content_type: str | None):
    headers = {"Authorization": f"Bearer {emulator.api_key}"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    return emulator.http.post(f"/v1/{operation}", content=content, headers=headers)


def test_success_uses_the_data_envelope_and_list_pagination(emulator: EmulatorServer) -> None:
    body = ok(emulator.call("projects.listProjects", {}))
    assert body == {"data": [], "pagination": {"hasMore": False, "cursor": ""}}


def test_unknown_operation_is_404_with_a_problem(emulator: EmulatorServer) -> None:
    problem(emulator.call("projects.explodeProject", {}), 404)
    problem(emulator.http.post("/v1/nothing"), 404)
    problem(emulator.http.post("/v2/projects.listProjects"), 404)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/projects.listProjects/"),
        ("GET", "/v1/projects.listProjects/"),
        ("POST", "/v1/projects.listProjects//"),
        ("GET", "/_emulator/state/"),
        ("POST", "/_emulator/reset/"),
    ],
)
def test_a_trailing_slash_is_an_unknown_route_not_a_redirect(
    emulator: EmulatorServer, method: str, path: str
) -> None:
    headers = {"Authorization": f"Bearer {emulator.api_key}"}
    response = emulator.http.request(method, path, json={}, headers=headers)
    problem(response, 404)
    assert "location" not in response.headers


def test_get_on_an_operation_is_405(emulator: EmulatorServer) -> None:
    response = emulator.http.get("/v1/projects.listProjects")
    problem(response, 405)
    assert response.headers["allow"] == "POST"


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PURGE"])
def test_every_method_but_post_on_an_operation_is_a_405_problem(
    emulator: EmulatorServer, method: str
) -> None:
    response = emulator.http.request(method, "/v1/projects.listProjects", json={})
    problem(response, 405)
    assert response.headers["allow"] == "POST"
    assert emulator.requests()[-1]["status"] == 405


def test_a_body_sent_in_chunks_is_read_whole(emulator: EmulatorServer) -> None:
    def chunks():
        yield b'{"name": "Sho'
        yield b'p", "slug": "sh'
        yield b'op"}'

    headers = {"Authorization": f"Bearer {emulator.api_key}", "Content-Type": "application/json"}
    response = emulator.http.post("/v1/projects.createProject", content=chunks(), headers=headers)
    assert "content-length" not in response.request.headers
    ok(response)
    assert ok(emulator.call("projects.getProject", {"project": "shop"}))["data"]["name"] == "Shop"


@pytest.mark.parametrize("content", [b"{", b"", b"{'a': 1}", b'{"limit": NaN}', b"\xff\xfe"])
def test_malformed_json_is_400(emulator: EmulatorServer, content: bytes) -> None:
    problem(_post(emulator, "projects.listProjects", content, "application/json"), 400, "body")


@pytest.mark.parametrize("content", [b"[]", b"3", b'"x"', b"null"])
def test_a_body_that_is_not_an_object_is_400(emulator: EmulatorServer, content: bytes) -> None:
    problem(_post(emulator, "projects.listProjects", content, "application/json"), 400, "body")


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_wrong_content_type_is_415(emulator: EmulatorServer, content_type: str | None) -> None:
    problem(_post(emulator, "projects.listProjects", b"{}", content_type), 415)


def test_json_with_charset_is_accepted(emulator: EmulatorServer) -> None:
    ok(_post(emulator, "projects.listProjects", b"{}", "application/json; charset=utf-8"))


def test_a_body_over_one_mebibyte_is_413(emulator: EmulatorServer) -> None:
    big = json.dumps({"name": "x" * (1024 * 1024), "slug": "big"}).encode()
    problem(_post(emulator, "projects.createProject", big, "application/json"), 413)
    assert ok(emulator.call("projects.listProjects"))["data"] == []


def test_a_body_just_under_the_limit_is_parsed(emulator: EmulatorServer) -> None:
    body = json.dumps({"name": "x" * (1024 * 1000), "slug": "big"}).encode()
    problem(_post(emulator, "projects.createProject", body, "application/json"), 400, "name")


@pytest.mark.parametrize(
    "header", [None, "", "Bearer", "Bearer nope", "Basic dGVzdA==", "test-emulator-key"]
)
def test_missing_or_unknown_credentials_are_401(emulator: EmulatorServer, header) -> None:
    headers = {"Content-Type": "application/json"}
    if header is not None:
        headers["Authorization"] = header
    response = emulator.http.post("/v1/projects.listProjects", content=b"{}", headers=headers)
    problem(response, 401)
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_unknown_fields_are_rejected_by_name(emulator: EmulatorServer) -> None:
    response = emulator.call("projects.createProject", {"name": "A", "slug": "abc", "color": 1})
    problem(response, 400, "color")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"limit": True}, "limit"),
        ({"limit": 10.0}, "limit"),
        ({"limit": "10"}, "limit"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"search": 5}, "search"),
        ({"search": "x" * 257}, "search"),
        ({"cursor": ""}, "cursor"),
    ],
)
def test_wrong_types_and_bounds_are_400(emulator: EmulatorServer, body, field: str) -> None:
    problem(emulator.call("projects.listProjects", body), 400, field)


def test_every_problem_is_reported_at_once(emulator: EmulatorServer) -> None:
    body = problem(emulator.call("projects.createProject", {"name": "", "slug": "UP"}), 400)
    assert {e["field"] for e in body["errors"]} == {"name", "slug"}


def test_request_log_records_api_calls_only(emulator: EmulatorServer) -> None:
    emulator.call("projects.listProjects")
    emulator.call("projects.getProject", {"project": "nope"})
    emulator.state()
    log = emulator.requests()
    assert [(r["operation"], r["status"]) for r in log] == [
        ("projects.listProjects", 200),
        ("projects.getProject", 404),
    ]
    assert log[0]["at"] <= log[1]["at"]


def test_admin_routes_validate_their_bodies(emulator: EmulatorServer) -> None:
    key = emulator.admin_headers
    problem(
        emulator.http.post("/_emulator/clock", json={"advanceMs": -1}, headers=key),
        400,
        "advanceMs",
    )
    rules = {"rules": [{"bogus": 1}]}
    problem(emulator.http.put("/_emulator/faults", json=rules, headers=key), 400)
    problem(emulator.http.get("/_emulator/reset", headers=key), 405)
    problem(emulator.http.get("/_emulator/nothing", headers=key), 404)


def test_deeply_nested_or_huge_numbers_are_400_not_500(emulator: EmulatorServer) -> None:
    nested = b'{"search": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    problem(_post(emulator, "projects.listProjects", nested, "application/json"), 400)
    problem(emulator.call("projects.listProjects", {"limit": 10**40}), 400, "limit")
    huge = b'{"project": "a-b-c", "app": "web", "environment": "production", "vCpus": 1e400}'
    problem(_post(emulator, "environments.updateSettings", huge, "application/json"), 400, "vCpus")
