"""The emulator's admin calls (`/_emulator/*`) need its key and a loopback Host.

Before: they answered any Host without a key, so a web page its user visited could read them
through DNS rebinding (a browser sends `Host: attacker.example`, a name the attacker pointed at
127.0.0.1, and no key): `GET /_emulator/state` holds write-only values, `POST /_emulator/reset`
wipes the state. (A `--host` other than the loopback now says what it exposes:
tests/emulator/test_cli_banner.py.)
"""

from __future__ import annotations

import pytest

from tests.fixtures.emulator import EmulatorServer

SECRET = "write-only-value-of-the-test"


def _seeded(emulator: EmulatorServer) -> None:
    emulator.call("projects.createProject", {"name": "Shop", "slug": "shop"})
    emulator.call("apps.createApp", {"project": "shop", "name": "W", "slug": "web", "git": {}})
    variables = [{"key": "TOKEN", "value": SECRET, "kind": "writeonly"}]
    body = {"project": "shop", "app": "web", "environment": "production", "variables": variables}
    assert emulator.call("environments.setEnvironmentVariables", body).status_code == 200


@pytest.mark.parametrize(
    ("host", "key", "status"),
    [
        ("attacker.example", False, 403),  # DNS rebinding: a browser has no key either
        ("attacker.example", True, 403),
        ("127.0.0.1.attacker.example", True, 403),
        ("localhost.attacker.example:8787", True, 403),
        ("0.0.0.0:8787", True, 403),
        ("127.0.0.1:8787", False, 401),
        ("localhost", False, 401),
    ],
)
def test_an_admin_call_without_the_key_or_from_another_host_is_refused(
    emulator: EmulatorServer, host: str, key: bool, status: int
) -> None:
    _seeded(emulator)
    headers = {"Host": host, **(emulator.admin_headers if key else {})}
    for method, action in (("GET", "state"), ("GET", "requests"), ("POST", "reset")):
        answer = emulator.http.request(method, f"/_emulator/{action}", headers=headers)
        assert answer.status_code == status, (method, action, answer.text)
        assert SECRET not in answer.text
    assert emulator.call("projects.getProject", {"project": "shop"}).status_code == 200  # kept


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8787", "127.1.2.3", "localhost:8787", "web.localhost", "[::1]:8787"]
)
def test_an_admin_call_with_the_key_and_a_loopback_host_is_answered(
    emulator: EmulatorServer, host: str
) -> None:
    _seeded(emulator)
    headers = {"Host": host, **emulator.admin_headers}
    answer = emulator.http.get("/_emulator/requests", headers=headers)
    assert answer.status_code == 200, answer.text
