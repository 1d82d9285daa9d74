"""`-v` call log, and the API key never leaking into messages, reprs or logs."""

from __future__ import annotations

import io
import json
import re

import httpx
import pytest

from reconciler import errors
from reconciler.errors import UsageError
from reconciler.platform.log import CallLog
from reconciler.sensitive import Secret, redact
from tests.platform.helpers import (
    SENTINEL_KEY,
    call_once,
    json_response,
    list_once,
    make_client,
    run,
    scripted,
)

APP_BODY = {"project": "shop", "app": "web"}


def test_call_log_writes_one_line_per_request_without_bodies_or_key() -> None:
    stream = io.StringIO()
    body = {**APP_BODY, "environment": "production", "variables": [{"key": "K", "value": "v4lue"}]}
    mock = scripted(httpx.Response(503), httpx.Response(200, json={"data": {}}))
    client = make_client(mock, call_log=CallLog(stream))
    run(call_once(client, "environments.setEnvironmentVariables", body))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"api: environments\.setEnvironmentVariables 503 \d+ms attempt 1", lines[0])
    assert re.fullmatch(r"api: environments\.setEnvironmentVariables 200 \d+ms attempt 2", lines[1])
    assert "v4lue" not in stream.getvalue()
    assert SENTINEL_KEY not in stream.getvalue()


def test_call_log_records_transport_failures() -> None:
    stream = io.StringIO()
    mock = scripted(httpx.ConnectError("refused"), json_response(200, {"data": {}}))
    run(call_once(make_client(mock, call_log=CallLog(stream)), "apps.getApp", APP_BODY))
    assert stream.getvalue().splitlines()[0].startswith("api: apps.getApp ConnectError ")


def test_redact_removes_bearer_tokens_and_known_secrets() -> None:
    text = f"Authorization: Bearer abc.def-123 and bearer\txyz; key={SENTINEL_KEY}"
    cleaned = redact(text, [SENTINEL_KEY, None, ""])
    assert "abc.def-123" not in cleaned
    assert "xyz" not in cleaned
    assert SENTINEL_KEY not in cleaned
    assert cleaned.count("[REDACTED]") == 3


def test_call_log_redacts_even_its_own_lines() -> None:
    stream = io.StringIO()
    log = CallLog(stream, secrets=["s3cret-long-enough"])
    log.record("Bearer tok op-s3cret-long-enough", "200", 1.0, 1)
    assert "tok" not in stream.getvalue()
    assert "s3cret" not in stream.getvalue()


ECHOING = [
    httpx.Response(400, json={"detail": f"bad header Authorization: Bearer {SENTINEL_KEY}"}),
    httpx.Response(401, json={"message": f"key {SENTINEL_KEY} unknown"}),
    httpx.Response(403, json={"title": SENTINEL_KEY}),
    httpx.Response(404, json={"detail": SENTINEL_KEY}),
    httpx.Response(409, json={"detail": SENTINEL_KEY}),
    httpx.Response(412, json={"detail": SENTINEL_KEY}),
    httpx.Response(429, json={"detail": SENTINEL_KEY}),
    httpx.Response(500, json={"detail": SENTINEL_KEY}),
    httpx.Response(418, text=f"I saw Bearer {SENTINEL_KEY}"),
    httpx.Response(302, text=SENTINEL_KEY),
    httpx.Response(200, text=f"<html>{SENTINEL_KEY}</html>"),
    httpx.ConnectError(f"failed with {SENTINEL_KEY}"),
    httpx.ReadTimeout(SENTINEL_KEY),
]


@pytest.mark.parametrize("answer", ECHOING, ids=lambda a: type(a).__name__)
def test_the_key_never_appears_in_errors_or_logs(answer: httpx.Response | Exception) -> None:
    stream = io.StringIO()
    repeated = [answer] * 5
    client = make_client(scripted(*repeated), call_log=CallLog(stream))
    with pytest.raises(errors.ApiError) as caught:
        run(call_once(client, "apps.updateApp", APP_BODY))
    error = caught.value
    for text in (str(error), repr(error), error.message, str(error.hint), str(error.detail)):
        assert SENTINEL_KEY not in text
    assert SENTINEL_KEY not in stream.getvalue()
    assert SENTINEL_KEY not in repr(client)


def test_variable_values_echoed_by_the_platform_are_redacted() -> None:
    secret = "hunter2-value"
    body = {
        **APP_BODY,
        "environment": "production",
        "variables": [{"key": "DB_PASSWORD", "value": Secret(secret), "kind": "writeonly"}],
    }
    response = httpx.Response(400, json={"detail": f"value {secret} is too long"})
    mock = scripted(response)
    client = make_client(mock)
    with pytest.raises(errors.InvalidRequest) as caught:
        run(call_once(client, "environments.setEnvironmentVariables", body))
    assert secret not in str(caught.value)
    assert "value [REDACTED] is too long" in str(caught.value)
    assert json.loads(mock.requests[0].content)["variables"][0]["value"] == secret  # sent


@pytest.mark.parametrize("secret", ["hunter2", "other-value"])
def test_what_is_hidden_from_a_call_that_sent_secrets_does_not_depend_on_them(secret: str) -> None:
    """Every text of a call that sent a secret is hidden from the server's answer, so which of
    the texts a pull request wrote equals the secret changes nothing in the message."""
    body = {
        **APP_BODY,
        "environment": "production",
        "variables": [
            {"key": "PIN", "value": Secret(secret), "kind": "writeonly"},
            {"key": "GUESS", "value": "hunter2", "kind": "recoverable"},
        ],
    }
    detail = f"values {secret} and hunter2 are not allowed"
    client = make_client(scripted(httpx.Response(400, json={"detail": detail})))
    with pytest.raises(errors.InvalidRequest) as caught:
        run(call_once(client, "environments.setEnvironmentVariables", body))
    assert "values [REDACTED] and [REDACTED] are not allowed" in str(caught.value)


def test_a_server_quoting_what_a_call_without_secrets_sent_is_quoted_as_written() -> None:
    """A read names only what the manifest wrote: a slug equal to the key (a guess) is shown
    as the manifest wrote it, as any other slug is, while the key itself is hidden."""
    for project, shown in ((SENTINEL_KEY, SENTINEL_KEY), ("shop", "[REDACTED]")):
        detail = f"no project {project}; bad key {SENTINEL_KEY}"
        client = make_client(scripted(httpx.Response(400, json={"detail": detail})))
        with pytest.raises(errors.InvalidRequest) as caught:
            run(call_once(client, "apps.getApp", {"project": project, "app": "web"}))
        assert f"no project {project}; bad key {shown}" in str(caught.value)


def test_list_errors_are_redacted_too() -> None:
    response = httpx.Response(403, json={"detail": f"Bearer {SENTINEL_KEY}"})
    with pytest.raises(errors.PermissionDenied) as caught:
        run(list_once(make_client(scripted(response)), "projects.listProjects", {}))
    assert SENTINEL_KEY not in str(caught.value)


def test_client_repr_hides_the_key() -> None:
    client = make_client(scripted())
    assert "key=set" in repr(client)
    assert SENTINEL_KEY not in repr(client)
    run(client.aclose())


def test_a_key_with_a_trailing_newline_is_trimmed() -> None:
    mock = scripted(httpx.Response(200, json={"data": {}}))
    client = make_client(mock, api_key=f"  {SENTINEL_KEY}\n")
    run(call_once(client, "apps.getApp", APP_BODY))
    assert mock.requests[0].headers["Authorization"] == f"Bearer {SENTINEL_KEY}"


@pytest.mark.parametrize("bad", ["with space", "tab\tinside", "ключ", "nul\x00"])
def test_a_key_that_cannot_be_a_header_is_a_usage_error_without_the_key(bad: str) -> None:
    key = f"{SENTINEL_KEY}{bad}"
    with pytest.raises(UsageError) as caught:
        make_client(scripted(), api_key=key)
    assert "RECONCILER_API_KEY" in str(caught.value)
    assert SENTINEL_KEY not in str(caught.value)
