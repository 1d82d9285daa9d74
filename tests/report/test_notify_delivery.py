"""Posting notifications: to a real HTTP receiver on loopback, with bounded retries counted
(the sleep is injected: no test waits on a clock), TLS verified, URLs never shown."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from email.utils import formatdate
from pathlib import Path

import httpx
import pytest

from reconciler import sensitive
from reconciler.plan.changes import Action, Change, Plan
from reconciler.report.notify import (
    Delivery,
    Destinations,
    Ending,
    Notification,
    describe,
    destinations,
    plan_notification,
    send,
)
from reconciler.report.notify.bodies import slack_body, webhook_body
from reconciler.report.notify.delivery import ATTEMPTS, DEADLINE, MAX_DESTINATIONS
from tests.fixtures.webhooks import FakeTime, Reply, WebhookReceiver

SECRET_PATH = "/services/T0AAAA/B0BBBB/xoxSecretPathPart"


def drift() -> Notification:
    plan = Plan(
        changes=(
            Change("variable.shop/web/production/LOG_LEVEL", "variable", Action.UPDATE, {}, {}),
            Change(
                "domain.shop/web/production/shop.example.com", "domain", Action.CREATE, None, {}
            ),
        )
    )
    notification = plan_notification(plan, Ending(2), in_sync=False)
    assert notification is not None
    return notification


def post(
    to: Destinations,
    *,
    time: FakeTime | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    notification: Notification | None = None,
) -> list[str | None]:
    """Each destination's failure (None: delivered)."""
    timing = (time or FakeTime()).timing()
    deliveries = asyncio.run(send(notification or drift(), to, timing=timing, transport=transport))
    return [d.failure for d in deliveries]


def webhook(url: str) -> Destinations:
    found = destinations({"RECONCILER_NOTIFY_WEBHOOK_URL": url})
    assert not found.problems
    return found


# --- bodies and where they go -------------------------------------------------------------


def test_each_format_gets_its_body_as_json_in_one_send(webhooks: WebhookReceiver) -> None:
    to = destinations(
        {
            "RECONCILER_NOTIFY_SLACK_URL": webhooks.url(SECRET_PATH),
            "RECONCILER_NOTIFY_WEBHOOK_URL": webhooks.url("/generic"),
        }
    )

    assert post(to) == [None, None]

    [slack] = webhooks.posts_to(SECRET_PATH)
    [generic] = webhooks.posts_to("/generic")
    assert slack.json() == slack_body(drift())
    assert generic.json() == webhook_body(drift())
    for request in (slack, generic):
        assert request.headers["Content-Type"] == "application/json"
        assert request.headers["User-Agent"].startswith("reconciler/")


def test_several_urls_in_one_variable_each_get_the_body(webhooks: WebhookReceiver) -> None:
    to = destinations(
        {"RECONCILER_NOTIFY_WEBHOOK_URL": f"{webhooks.url('/a')}\n {webhooks.url('/b')}"}
    )

    assert post(to) == [None, None]
    assert sorted(p.path for p in webhooks.posts) == ["/a", "/b"]


# --- retries: counted, never waited for ------------------------------------------------------


def test_5xx_is_retried_with_backoff_until_delivered(webhooks: WebhookReceiver) -> None:
    webhooks.script(Reply(500), Reply(502))
    time = FakeTime()

    assert post(webhook(webhooks.url()), time=time) == [None]
    assert len(webhooks.posts) == 3
    assert time.slept == [1.0, 2.0]


def test_attempts_are_bounded(webhooks: WebhookReceiver) -> None:
    webhooks.script(*[Reply(503)] * 10)
    time = FakeTime()

    [failure] = post(webhook(webhooks.url()), time=time)

    assert len(webhooks.posts) == ATTEMPTS == 3
    assert failure == "HTTP 503 (3 attempts)"
    assert time.slept == [1.0, 2.0]


def test_429_waits_for_retry_after(webhooks: WebhookReceiver) -> None:
    webhooks.script(Reply(429, {"Retry-After": "3"}))
    time = FakeTime()

    assert post(webhook(webhooks.url()), time=time) == [None]
    assert len(webhooks.posts) == 2
    assert time.slept == [3.0]


def test_retry_after_as_an_http_date(webhooks: WebhookReceiver) -> None:
    later = formatdate(1_700_000_000.0 + 4, usegmt=True)  # FakeTime's wall clock + 4 s
    webhooks.script(Reply(503, {"Retry-After": later}))
    time = FakeTime()

    assert post(webhook(webhooks.url()), time=time) == [None]
    assert time.slept == [4.0]


def test_a_retry_after_past_the_deadline_is_not_waited_for(webhooks: WebhookReceiver) -> None:
    webhooks.script(Reply(429, {"Retry-After": "120"}))
    time = FakeTime()

    [failure] = post(webhook(webhooks.url()), time=time)

    assert len(webhooks.posts) == 1
    assert time.slept == []
    assert failure == (
        f"HTTP 429; waiting 120 s to try again would pass the {DEADLINE:g} s deadline"
    )


def test_slow_answers_use_up_the_deadline() -> None:
    time = FakeTime()

    def slow_failure(request: httpx.Request) -> httpx.Response:
        time.now += 4.0  # each answer takes 4 s of the 10
        return httpx.Response(500)

    [failure] = post(
        webhook("https://hooks.example.com/x"),
        time=time,
        transport=httpx.MockTransport(slow_failure),
    )

    # 4 s, wait 1 s, 4 s: a wait of 2 s more would end past 10 s
    assert time.slept == [1.0]
    assert failure is not None and "would pass the 10 s deadline" in failure


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (httpx.ReadTimeout("timed out"), "no answer in time"),
        (httpx.ConnectError("[Errno 111] Connection refused"), "could not connect"),
        (httpx.RemoteProtocolError("Server disconnected"), "the connection broke"),
    ],
)
def test_timeouts_and_broken_connections_are_retried(raised: Exception, said: str) -> None:
    calls: list[httpx.Request] = []

    def failing(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise raised

    time = FakeTime()
    [failure] = post(
        webhook("https://hooks.example.com/x"), time=time, transport=httpx.MockTransport(failing)
    )

    assert len(calls) == 3
    assert failure == f"{said} (3 attempts)"
    assert time.slept == [1.0, 2.0]


def test_nothing_listening_is_reported_after_the_attempts() -> None:
    closed = WebhookReceiver()
    url = closed.url(SECRET_PATH)
    closed.stop()

    assert post(webhook(url)) == ["could not connect (3 attempts)"]


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (Reply(404, body=b"no_service"), "HTTP 404 (no_service)"),  # Slack's error words
        (Reply(410, body=b"channel_is_archived"), "HTTP 410 (channel_is_archived)"),
        (Reply(400, body=f"bad path {SECRET_PATH}".encode()), "HTTP 400"),  # a body: never shown
        (Reply(302, {"Location": "https://elsewhere.example/"}), "HTTP 302"),  # not followed
        (Reply(501), "HTTP 501"),
    ],
)
def test_other_answers_are_final(webhooks: WebhookReceiver, reply: Reply, said: str) -> None:
    webhooks.script(reply)
    time = FakeTime()

    assert post(webhook(webhooks.url()), time=time) == [said]
    assert len(webhooks.posts) == 1
    assert time.slept == []


# --- the URLs -----------------------------------------------------------------------------


def test_urls_are_credentials_and_described_by_host_alone() -> None:
    url = f"https://hooks.slack.com{SECRET_PATH}"
    found = destinations({"RECONCILER_NOTIFY_SLACK_URL": url})

    # remembered as a credential: no manifest may send it, whatever it names
    assert sensitive.holds_credential(sensitive.Secret(url + "\n"))
    [destination] = found.found
    assert destination.label == "Slack at hooks.slack.com"
    assert SECRET_PATH not in repr(destination)
    line = describe(Delivery(destination, 3, "HTTP 500 (3 attempts)"), drift())
    assert line == (
        "Warning: could not notify Slack at hooks.slack.com (plan: drift found): "
        "HTTP 500 (3 attempts). The exit status is not affected."
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("http://hooks.example.com/T0/secret", "is a plain http:// URL"),
        ("ftp://hooks.example.com/secret", "is not an https:// URL"),
        ("hooks.example.com/secret", "is not an https:// URL"),
        ("https://hooks.example.com:port/secret", "is not a URL"),
    ],
)
def test_unusable_urls_are_named_by_their_variable_only(value: str, problem: str) -> None:
    found = destinations({"RECONCILER_NOTIFY_WEBHOOK_URL": value})

    assert found.found == ()
    [said] = found.problems
    assert said.startswith(f"RECONCILER_NOTIFY_WEBHOOK_URL {problem}")
    assert "secret" not in said and "hooks.example.com" not in said
    assert sensitive.holds_credential(sensitive.Secret(value))


def test_plain_http_only_to_this_machine() -> None:
    for url in ("http://127.0.0.1:9/x", "http://localhost:9/x", "http://[::1]:9/x"):
        assert destinations({"RECONCILER_NOTIFY_WEBHOOK_URL": url}).found, url


def test_the_number_of_urls_is_bounded() -> None:
    urls = " ".join(f"https://hooks.example.com/{n}" for n in range(MAX_DESTINATIONS + 2))
    found = destinations({"RECONCILER_NOTIFY_SLACK_URL": urls})

    assert len(found.found) == MAX_DESTINATIONS
    assert len(found.problems) == 2
    assert "URL 11 of 12" in found.problems[0]


def test_empty_variables_configure_nothing() -> None:
    found = destinations({"RECONCILER_NOTIFY_SLACK_URL": "", "RECONCILER_NOTIFY_WEBHOOK_URL": " "})
    assert not found.configured


# --- TLS ----------------------------------------------------------------------------------


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def test_tls_is_verified(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    receiver = WebhookReceiver(tls=context)
    try:
        url = f"https://127.0.0.1:{receiver.port}{SECRET_PATH}"
        time = FakeTime()

        # a certificate nobody vouches for: refused at once, never tried again
        assert post(webhook(url), time=time) == ["TLS: the server's certificate is not trusted"]
        assert time.slept == [] and receiver.posts == []

        # trusted (SSL_CERT_FILE, as for the platform): delivered
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        assert post(webhook(url)) == [None]
        assert len(receiver.posts) == 1
    finally:
        receiver.stop()
