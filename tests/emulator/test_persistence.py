"""`reconciler emulator` as a process: --state survives a kill, atomic writes, clear errors."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from reconciler.cli import main
from reconciler.emulator import store as store_module
from reconciler.emulator.app import EmulatorConfig, create_app
from reconciler.emulator.store import Store, atomic_write
from tests.emulator.helpers import call_in_process

KEY = "persist-key"


class Process:
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        command = [sys.executable, "-m", "reconciler", "emulator", "--port", "0", *args]
        self.popen = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "RECONCILER_API_KEY": KEY, **(env or {})},
        )
        self.lines: list[str] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = self.popen.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if line.startswith("Press Ctrl-C"):
                break
        match = re.search(r"http://[\d.]+:\d+", "".join(self.lines))
        assert match, "".join(self.lines) + self.popen.stderr.read()
        self.base_url = match.group(0)
        self.http = httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {KEY}"})

    def call(self, operation: str, body: dict | None = None) -> httpx.Response:
        return self.http.post(f"/v1/{operation}", json=body or {})

    def state(self) -> dict:
        return self.http.get("/_emulator/state").json()

    def kill(self) -> None:
        self.http.close()
        self.popen.kill()
        self.popen.wait(10)


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        if process.popen.poll() is None:
            process.kill()


def _env_id(state: dict) -> str:
    (env_id,) = [i for i, e in state["environments"].items() if e["slug"] == "production"]
    return env_id


def _start(processes: list[Process], *args: str, **kwargs) -> Process:
    process = Process(*args, **kwargs)
    processes.append(process)
    return process


def test_state_survives_a_kill_and_restart(processes: list[Process], tmp_path: Path) -> None:
    state_file = tmp_path / "platform.json"
    first = _start(processes, "--state", str(state_file), "--step-ms", "50")
    # the key came from RECONCILER_API_KEY: the banner names the variable, never its value
    assert first.lines[1].strip() == "API key: the value of RECONCILER_API_KEY"
    assert KEY not in "".join(first.lines)
    assert first.call("projects.createProject", {"name": "Shop", "slug": "shop"}).status_code == 200
    body = {"project": "shop", "name": "Web", "slug": "web", "git": {"repository": "acme/web"}}
    assert first.call("apps.createApp", body).status_code == 200
    target = {"project": "shop", "app": "web", "environment": "production"}
    variables = {"variables": [{"key": "SECRET", "value": "hunter2"}]}
    assert (
        first.call("environments.setEnvironmentVariables", {**target, **variables}).status_code
        == 200
    )
    created = first.call("deployments.createDeployment", {**target, "git": {}})
    deployment_id = created.json()["data"]["deploymentId"]
    first.http.post("/_emulator/clock", json={"advanceMs": 10_000})
    before = first.state()
    first.kill()  # no clean shutdown: every write must already be on disk

    # no temp files; the lock beside the state stays (a killed holder's lock ends with it)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["platform.json", "platform.json.lock"]
    # the file (often inside the user's repository) is private and holds only the digest of a
    # write-only value: the platform never returns it, so nothing is lost
    assert stat.S_IMODE(state_file.stat().st_mode) == 0o600
    assert "hunter2" not in state_file.read_text()
    (secret,) = before["variables"][_env_id(before)].values()
    assert secret["value"] == "hunter2"  # in memory, a value set in this process is shown
    assert secret["valueSha256"] == hashlib.sha256(b"hunter2").hexdigest()
    second = _start(processes, "--state", str(state_file), "--step-ms", "50")
    del secret["value"]
    assert second.state() == before
    deployment = second.call("deployments.getDeployment", {"deploymentId": deployment_id}).json()
    assert deployment["data"]["status"] == "ready" and deployment["data"]["isCurrent"] is True
    listed = second.call("environments.listEnvironmentVariables", target).json()["data"]
    assert [v["key"] for v in listed] == ["SECRET"] and "value" not in listed[0]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_cleanly(processes: list[Process], stop: signal.Signals) -> None:
    process = _start(processes)
    assert process.call("projects.listProjects").status_code == 200
    process.http.close()
    process.popen.send_signal(stop)
    out, err = process.popen.communicate(timeout=10)
    assert process.popen.returncode == 0
    assert "Emulator stopped." in out and "Traceback" not in err


def _run(*args: str):
    """The command in-process (it fails before serving, so nothing blocks)."""
    return CliRunner().invoke(main, ["emulator", *args])


def test_corrupt_state_file_is_a_clear_error(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    state_file.write_text("{not json")
    result = _run("--port", "0", "--state", str(state_file))
    assert result.exit_code == 1, result.output
    assert "cannot read state file" in result.output and "Traceback" not in result.output


def test_bad_keys_file_and_flags_are_clear_errors(tmp_path: Path) -> None:
    keys = tmp_path / "keys.yaml"
    keys.write_text("keys:\n  - key: a\n    permissions: [app.*.fly]\n")
    result = _run("--port", "0", "--keys", str(keys))
    assert result.exit_code == 1 and "keys[0].permissions[0]" in result.output
    flags = (
        ["--fault-rate", "1.5"],
        ["--step-ms", "0"],
        ["--port", "70000"],
        ["--rate-limit", "0"],
        ["--rate-limit", "fast"],
        ["--rate-limit", "nan/s"],
    )
    for bad in flags:
        result = _run(*bad)
        assert result.exit_code == 1 and "Invalid value" in result.output, bad
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = _run("--port", port)
    assert result.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in result.output


def test_rate_limit_flag_accepts_per_second_suffix(processes: list[Process]) -> None:
    process = _start(processes, "--rate-limit", "2/s")
    statuses = [process.call("projects.listProjects").status_code for _ in range(6)]
    assert statuses[0] == 200 and 429 in statuses


def test_keys_file_replaces_the_dev_key(processes: list[Process], tmp_path: Path) -> None:
    keys = tmp_path / "keys.yaml"
    keys.write_text("keys:\n  - key: reader\n    permissions: [project.*.read_project]\n")
    process = _start(processes, "--keys", str(keys))
    assert "API keys: 1" in "".join(process.lines) and KEY not in "".join(process.lines)
    assert process.call("projects.listProjects").status_code == 401
    response = process.http.post(
        "/v1/projects.listProjects", json={}, headers={"Authorization": "Bearer reader"}
    )
    assert response.status_code == 200


def test_atomic_write_keeps_the_old_file_when_the_rename_fails(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "state.json"
    atomic_write(path, '{"old": true}')

    def broken_replace(source, destination):
        raise OSError("disk on fire")

    monkeypatch.setattr(store_module.os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write(path, '{"new": true}')
    assert json.loads(path.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_store_rejects_a_foreign_json_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text('{"version": 99}')
    with pytest.raises(store_module.StateFileError, match="not an emulator state file"):
        Store(path)


def test_state_file_keeps_only_the_digest_of_a_writeonly_value(tmp_path: Path) -> None:
    path = tmp_path / "local.json"

    async def scenario(app) -> None:
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": "Bearer k"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://e", headers=headers
        ) as c:
            await c.post("/v1/projects.createProject", json={"name": "S", "slug": "shop"})
            body = {"project": "shop", "name": "W", "slug": "web", "oci": {"image": "nginx:1"}}
            await c.post("/v1/apps.createApp", json=body)
            variables = [
                {"key": "TOKEN", "value": "s3cr3t-token"},
                {"key": "MODE", "value": "fast", "kind": "recoverable"},
            ]
            target = {"project": "shop", "app": "web", "environment": "production"}
            answer = await c.post(
                "/v1/environments.setEnvironmentVariables", json={**target, "variables": variables}
            )
            assert answer.status_code == 200, answer.text
            listed = await c.post("/v1/environments.listEnvironmentVariables", json=target)
            # the digest is the emulator's own record, never part of an API answer
            assert all("valueSha256" not in v for v in listed.json()["data"])

    previous = os.umask(0)  # a permissive umask must not make the file world-readable
    try:
        asyncio.run(scenario(create_app(EmulatorConfig(state_file=path, dev_key="k"))))
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "s3cr3t-token" not in path.read_text()
    (table,) = [t for t in Store(path).variables.values() if t]  # production's, preview's is empty
    assert table["TOKEN"]["valueSha256"] == hashlib.sha256(b"s3cr3t-token").hexdigest()
    assert "value" not in table["TOKEN"]
    assert table["MODE"]["value"] == "fast"  # a recoverable value is returned by the API: kept


def test_a_value_with_a_lone_surrogate_never_reaches_the_state_file(tmp_path: Path) -> None:
    """JSON may escape a lone surrogate, which UTF-8 cannot encode: the request is refused."""
    app = create_app(EmulatorConfig(state_file=tmp_path / "state.json", dev_key="k"))
    target = {"project": "shop", "app": "web", "environment": "production"}
    raw = json.dumps({**target, "variables": [{"key": "ODD", "value": "a\ud800b"}]})

    async def scenario() -> int:
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": "Bearer k", "Content-Type": "application/json"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://e", headers=headers
        ) as c:
            await c.post("/v1/projects.createProject", json={"name": "S", "slug": "shop"})
            body = {"project": "shop", "name": "W", "slug": "web", "oci": {"image": "nginx:1"}}
            await c.post("/v1/apps.createApp", json=body)
            answer = await c.post("/v1/environments.setEnvironmentVariables", content=raw)
            return answer.status_code

    assert asyncio.run(scenario()) == 400
    assert not any(Store(tmp_path / "state.json").variables.values())


@pytest.mark.parametrize(
    ("tables", "named"),
    [
        ('"domains": {"dom_1": {}}', "domains dom_1: domain must be a string"),
        ('"apps": {"app_1": {"slug": "web"}}', "apps app_1: _projectId must be a string"),
        ('"projects": {"proj_1": {"slug": ["shop"]}}', "projects proj_1: slug must be a string"),
        ('"environments": {"env_1": {"_appId": "a", "_seq": true}}', "_seq must be an integer"),
    ],
)
def test_store_rejects_rows_its_indexes_cannot_read(
    tmp_path: Path, tables: str, named: str
) -> None:
    path = tmp_path / "state.json"
    path.write_text('{"version": 1, ' + tables + "}")
    with pytest.raises(store_module.StateFileError, match="not a usable emulator state file") as e:
        Store(path)
    assert named in str(e.value)


def test_a_read_only_store_reads_the_file_and_never_writes_it(tmp_path: Path) -> None:
    """A reader (plan, status, export on `--base-url local`) sees deployments move on with the
    clock like any client, but never saves: saving its snapshot would undo what a writer
    saved meanwhile."""
    path = tmp_path / "state.json"
    target = {"project": "shop", "app": "web", "environment": "production"}
    writer = create_app(EmulatorConfig(state_file=path, dev_key="k", step_ms=60_000))
    call_in_process(writer, "projects.createProject", {"name": "S", "slug": "shop"})
    app = {"project": "shop", "name": "W", "slug": "web", "oci": {"image": "nginx:1"}}
    call_in_process(writer, "apps.createApp", app)
    image = {"image": {"dockerImage": "nginx:1"}}
    created = call_in_process(writer, "deployments.createDeployment", {**target, **image})
    deployment_id = created["data"]["deploymentId"]
    saved = path.read_bytes()

    reader = create_app(
        EmulatorConfig(state_file=path, dev_key="k", step_ms=60_000, read_only_state=True)
    )
    reader.state.emulator.store.advance_clock(10 * 60_000)  # every step has passed
    seen = call_in_process(reader, "deployments.getDeployment", {"deploymentId": deployment_id})
    assert seen["data"]["status"] == "ready"
    assert path.read_bytes() == saved
