"""With a state file, changes made while a save is being written share the next save, and no
answer is sent before the file holds what it shows (in-process, as `--base-url local` runs)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from reconciler.emulator.app import EmulatorConfig, create_app
from reconciler.emulator.store import Store

KEY = "saves-key"
CALLS = 12


def _client(app: Starlette) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {KEY}"}
    return httpx.AsyncClient(transport=transport, base_url="http://local", headers=headers)


def _slugs_in(path: Path) -> set[str]:
    return {p["slug"] for p in json.loads(path.read_bytes())["projects"].values()}


def test_concurrent_writes_share_saves_and_each_answer_follows_its_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    app = create_app(EmulatorConfig(state_file=path, dev_key=KEY))
    emulator = app.state.emulator
    store: Store = emulator.store
    written: list[set[str]] = []
    all_changed = threading.Event()
    plain_write = store.write

    def write(content: bytes) -> None:
        # the first save is held until every request has made its change, so that the rest
        # can only share the next one
        assert all_changed.wait(30), "the requests did not all run while a save was written"
        plain_write(content)
        written.append(_slugs_in(path))

    monkeypatch.setattr(store, "write", write)

    async def create(client: httpx.AsyncClient, index: int) -> None:
        slug = f"shop-{index:02}"
        answer = await client.post("/v1/projects.createProject", json={"name": "S", "slug": slug})
        assert answer.status_code == 200, answer.text
        assert slug in _slugs_in(path)  # on disk before the client hears of it

    async def scenario() -> None:
        async def watch() -> None:
            while emulator.saver.changes < CALLS:
                await asyncio.sleep(0.001)
            all_changed.set()

        async with _client(app) as client:
            await asyncio.gather(watch(), *(create(client, i) for i in range(CALLS)))

    asyncio.run(scenario())
    # the first save holds the changes made before it started (at least the first); every
    # other change was made while it was held, and shares the second
    assert 1 <= len(written) <= 2
    assert written[-1] == {f"shop-{i:02}" for i in range(CALLS)}


def test_a_failed_save_is_a_500_and_the_next_request_saves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    app = create_app(EmulatorConfig(state_file=path, dev_key=KEY))
    store: Store = app.state.emulator.store
    plain_write = store.write
    failures = [OSError(28, "No space left on device")]

    def write(content: bytes) -> None:
        if failures:
            raise failures.pop()
        plain_write(content)

    monkeypatch.setattr(store, "write", write)

    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        async with _client(app) as client:
            first = await client.post(
                "/v1/projects.createProject", json={"name": "S", "slug": "shop"}
            )
            second = await client.post("/v1/projects.listProjects", json={})
            return first, second

    first, second = asyncio.run(scenario())
    assert first.status_code == 500
    assert first.headers["content-type"] == "application/problem+json"
    assert "OSError" in first.json()["detail"]
    assert second.status_code == 200
    assert [p["slug"] for p in second.json()["data"]] == ["shop"]
    assert _slugs_in(path) == {"shop"}


@pytest.mark.parametrize("read_only", [True, False])
def test_a_store_without_a_file_to_write_never_waits(tmp_path: Path, read_only: bool) -> None:
    config = EmulatorConfig(dev_key=KEY, read_only_state=read_only)
    if read_only:
        config.state_file = tmp_path / "absent.json"
    app = create_app(config)

    async def scenario() -> int:
        async with _client(app) as client:
            answer = await client.post(
                "/v1/projects.createProject", json={"name": "S", "slug": "shop"}
            )
            return answer.status_code

    assert asyncio.run(scenario()) == 200
    assert app.state.emulator.saver.saved == app.state.emulator.saver.changes == 1
    assert not (tmp_path / "absent.json").exists()
