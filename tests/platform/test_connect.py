"""connect(): base URL validation, the key from the environment, and `local[:PATH]`."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from reconciler.errors import Conflict, InvalidRequest, NotFound, UsageError
from reconciler.platform.connect import LOCAL_BASE_URL, connect, validate_base_url
from reconciler.platform.log import CallLog
from tests.platform.helpers import SENTINEL_KEY, run

EMULATOR_READY = importlib.util.find_spec("reconciler.emulator.app") is not None


@pytest.fixture(autouse=True)
def no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECONCILER_API_KEY", raising=False)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)


@pytest.mark.parametrize("base_url", [None, "", "   "])
def test_no_base_url_is_a_usage_error_naming_both_ways_to_set_it(base_url: str | None) -> None:
    with pytest.raises(UsageError) as caught:
        connect(base_url)
    text = str(caught.value)
    assert "--base-url" in text
    assert "RECONCILER_BASE_URL" in text
    assert caught.value.exit_code == 1


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://api.example.com", "https://api.example.com"),
        ("https://api.example.com/", "https://api.example.com"),
        ("http://127.0.0.1:8787", "http://127.0.0.1:8787"),
        ("https://example.com/platform/", "https://example.com/platform"),
    ],
)
def test_valid_base_urls_are_normalised(base_url: str, expected: str) -> None:
    assert validate_base_url(base_url) == expected


@pytest.mark.parametrize(
    ("base_url", "complaint"),
    [
        ("api.example.com", "expected http:// or https://"),
        ("ftp://api.example.com", "expected http:// or https://"),
        ("https://", "expected http:// or https://"),
        ("https://api.example.com/v1", "adds /v1 itself"),
        ("https://api.example.com/v1/", "adds /v1 itself"),
        ("https://api.example.com?x=1", "query or fragment"),
        ("https://user:pw@api.example.com", "must not contain credentials"),
    ],
)
def test_invalid_base_urls_are_usage_errors(base_url: str, complaint: str) -> None:
    with pytest.raises(UsageError, match=complaint):
        connect(base_url)


def test_v1_suffix_error_suggests_the_fix() -> None:
    with pytest.raises(UsageError) as caught:
        connect("https://api.example.com/v1")
    assert caught.value.hint == "use --base-url https://api.example.com"


def test_credentials_in_url_are_not_echoed() -> None:
    with pytest.raises(UsageError) as caught:
        connect(f"https://user:{SENTINEL_KEY}@api.example.com")
    assert SENTINEL_KEY not in str(caught.value)


def test_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", SENTINEL_KEY)
    client = connect("https://api.example.com", parallelism=4)
    try:
        assert client._headers["Authorization"] == f"Bearer {SENTINEL_KEY}"
        assert client.parallelism == 4
        assert client._log is None
    finally:
        run(client.aclose())


def test_explicit_key_wins_and_verbose_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", "from-env")
    client = connect("https://api.example.com", api_key="explicit", verbose=True)
    try:
        assert client._headers["Authorization"] == "Bearer explicit"
        assert isinstance(client._log, CallLog)
    finally:
        run(client.aclose())


@pytest.mark.parametrize("key", [None, "", "  \n"])
def test_no_key_fails_before_any_call_naming_the_variable_and_the_platform(
    key: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if key is not None:
        monkeypatch.setenv("RECONCILER_API_KEY", key)
    with pytest.raises(UsageError) as caught:
        connect("https://api.example.com")
    assert caught.value.message == "no API key: RECONCILER_API_KEY is not set"
    assert "https://api.example.com" in str(caught.value.hint)
    assert "--base-url local needs none" in str(caught.value.hint)


@pytest.mark.skipif(not EMULATOR_READY, reason="the emulator is not installed")
def test_the_local_emulator_needs_no_key(tmp_path: Path) -> None:
    async def read() -> list[dict]:
        async with connect(f"local:{tmp_path / 'state.json'}") as client:
            return await client.list_all("projects.listProjects", {})

    assert run(read()) == []


def test_local_without_the_emulator_installed_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_emulator(name: str, *args: object, **kwargs: object) -> object:
        if name == "reconciler.emulator.app":
            raise ModuleNotFoundError("No module named 'reconciler.emulator.app'", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_emulator)
    with pytest.raises(UsageError, match="built-in emulator is not available"):
        connect(f"local:{tmp_path / 'state.json'}")


def test_local_state_path_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        connect(f"local:{tmp_path}")


@pytest.mark.skipif(
    not EMULATOR_READY,
    reason="reconciler/emulator/app.py (the in-process emulator) has not landed yet",
)
def test_local_round_trips_in_process_and_persists_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "nested" / "platform.json"

    async def create() -> dict:
        async with connect(f"local:{state}") as client:
            assert client.base_url == LOCAL_BASE_URL
            created = await client.call("projects.createProject", {"name": "Shop", "slug": "shop"})
            fetched = await client.call("projects.getProject", {"project": "shop"})
            assert fetched["id"] == created["id"]
            return fetched

    async def reread() -> list[dict]:
        async with connect(f"local:{state}") as client:
            return await client.list_all("projects.listProjects", {})

    project = run(create())
    assert state.exists()
    projects = run(reread())
    assert [p["slug"] for p in projects] == ["shop"]
    assert projects[0]["id"] == project["id"]


@pytest.mark.skipif(
    not EMULATOR_READY,
    reason="reconciler/emulator/app.py (the in-process emulator) has not landed yet",
)
def test_local_default_state_file_is_under_dot_reconciler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    async def create() -> None:
        async with connect("local") as client:
            await client.call("projects.createProject", {"name": "Shop", "slug": "shop"})

    run(create())
    assert (tmp_path / ".reconciler" / "local-platform.json").exists()


@pytest.mark.skipif(
    not EMULATOR_READY,
    reason="reconciler/emulator/app.py (the in-process emulator) has not landed yet",
)
def test_local_uses_the_env_key_as_its_dev_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", SENTINEL_KEY)

    async def roundtrip() -> list[dict]:
        async with connect(f"local:{tmp_path / 's.json'}") as client:
            assert client._headers["Authorization"] == f"Bearer {SENTINEL_KEY}"
            return await client.list_all("projects.listProjects", {})

    assert run(roundtrip()) == []


@pytest.mark.skipif(
    not EMULATOR_READY,
    reason="reconciler/emulator/app.py (the in-process emulator) has not landed yet",
)
def test_local_errors_map_to_messages_naming_the_object(tmp_path: Path) -> None:
    async def failures() -> list[Exception]:
        seen: list[Exception] = []
        async with connect(f"local:{tmp_path / 's.json'}") as client:
            await client.call("projects.createProject", {"name": "Shop", "slug": "shop"})
            attempts = [
                ("projects.createProject", {"name": "Shop", "slug": "shop"}),
                ("apps.getApp", {"project": "shop", "app": "web"}),
                ("apps.createApp", {"project": "shop", "name": "W", "slug": "w"}),
            ]
            for operation, body in attempts:
                try:
                    await client.call(operation, body)
                except Exception as error:  # collected and asserted below
                    seen.append(error)
        return seen

    conflict, missing, invalid = run(failures())
    assert isinstance(conflict, Conflict)
    assert str(conflict).startswith('projects.createProject: project "shop" conflicts')
    assert isinstance(missing, NotFound)
    assert str(missing).startswith('apps.getApp: app "web" in project "shop" not found (404)')
    assert isinstance(invalid, InvalidRequest)
    assert str(invalid).startswith('apps.createApp: invalid request for app "w" in project "shop"')


def test_the_default_local_state_directory_keeps_itself_out_of_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    async def read_then_write() -> None:
        async with connect("local", read_only=True) as client:
            await client.list_all("projects.listProjects", {})
        assert list(tmp_path.iterdir()) == []  # reading leaves no trace
        async with connect("local") as client:
            await client.call("projects.createProject", {"name": "Shop", "slug": "shop"})

    run(read_then_write())
    ignore = tmp_path / ".reconciler" / ".gitignore"
    assert ignore.read_text().splitlines()[-1] == "*"


def test_a_local_state_directory_is_made_only_by_a_writer(tmp_path: Path) -> None:
    state = tmp_path / "new" / "sub" / "state.json"

    async def session(read_only: bool) -> None:
        async with connect(f"local:{state}", read_only=read_only) as client:
            await client.list_all("projects.listProjects", {})
            if not read_only:
                await client.call("projects.createProject", {"name": "Shop", "slug": "shop"})

    run(session(read_only=True))
    assert not (tmp_path / "new").exists()
    run(session(read_only=False))
    assert state.is_file()
    assert not (state.parent / ".gitignore").exists()  # only the default directory gets one


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_state_directory_that_cannot_be_made_is_a_usage_error() -> None:
    # /proc refuses new directories to every user, root included
    with pytest.raises(UsageError, match="cannot create the directory for the local platform"):
        connect("local:/proc/reconciler-test/state.json")


def test_a_state_path_under_a_file_is_refused_before_any_request(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(UsageError, match=f"{blocker} is not a directory"):
        connect(f"local:{blocker}/deeper/state.json")
    assert blocker.read_text(encoding="utf-8") == ""


def test_a_read_only_local_connection_takes_no_lock_and_refuses_to_write(tmp_path: Path) -> None:
    state = tmp_path / "state.json"

    async def session() -> None:
        async with connect(f"local:{state}") as writer:  # holds the lock meanwhile
            await writer.call("projects.createProject", {"name": "Shop", "slug": "shop"})
            async with connect(f"local:{state}", read_only=True) as reader:
                assert [p["slug"] for p in await reader.list_all("projects.listProjects", {})] == [
                    "shop"
                ]
                with pytest.raises(RuntimeError, match="read-only connection"):
                    await reader.call("projects.createProject", {"name": "Blog", "slug": "blog"})

    run(session())
    assert "blog" not in state.read_text()


def test_a_second_local_writer_is_refused_while_the_first_is_connected(tmp_path: Path) -> None:
    state = tmp_path / "state.json"

    async def session() -> None:
        async with connect(f"local:{state}"):
            with pytest.raises(UsageError, match=f"the state file {state} is in use by process"):
                connect(f"local:{state}")
        async with connect(f"local:{state}"):  # released with the first client
            pass

    run(session())


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_local_state_path_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, kind: str
) -> None:
    state = tmp_path / "state.json"
    if kind == "symlink":
        state.symlink_to(tmp_path / "elsewhere.json")
    else:
        os.mkfifo(state)
    with pytest.raises(UsageError, match="not a regular file; refusing to replace it"):
        connect(f"local:{state}")
