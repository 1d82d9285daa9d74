"""From `--base-url` / `RECONCILER_BASE_URL` and `RECONCILER_API_KEY` to a `PlatformClient`.

`local` or `local:PATH` runs the built-in emulator in-process (no server, no
account) with its state persisted to a file. A command that may write (`apply`)
holds the state's lock for its whole run, so a second one is refused instead of
saving over the first one's work; commands that only read (`read_only=True`) take
a snapshot of the file, never lock it and never write it, so they leave no trace.
No base URL at all is an error: the local emulator is never picked silently.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx

from reconciler.errors import UsageError
from reconciler.files import check_replaceable
from reconciler.platform.client import PlatformClient
from reconciler.platform.log import CallLog
from reconciler.platform.messages import API_KEY_ENV, BASE_URL_ENV
from reconciler.platform.operations import OPERATIONS
from reconciler.platform.transport import load_certificates_in_background, needs_certificates

if TYPE_CHECKING:
    from reconciler.emulator.store import StateLock

LOCAL = "local"
LOCAL_STATE_FILE = Path(".reconciler") / "local-platform.json"
LOCAL_DEV_KEY = "reconciler-local-dev-key"
LOCAL_BASE_URL = "http://local"


def connect(
    base_url: str | None,
    *,
    api_key: str | None = None,
    parallelism: int = 10,
    verbose: bool = False,
    read_only: bool = False,
) -> PlatformClient:
    """A client for `base_url` (a URL, `local` or `local:PATH`); the key defaults to the env.

    `read_only` matters for the local platform only: see the module's docstring."""
    if api_key is None:
        api_key = os.environ.get(API_KEY_ENV) or None
    call_log = CallLog() if verbose else None
    if base_url is None or not base_url.strip():
        raise UsageError(
            "no platform base URL configured",
            hint=f"pass --base-url URL or set {BASE_URL_ENV}; "
            f"use --base-url {LOCAL} to run against the built-in emulator",
        )
    base_url = base_url.strip()
    if is_local(base_url):
        state_file = Path(base_url[len(LOCAL) + 1 :] or LOCAL_STATE_FILE)
        return _connect_local(state_file, api_key, parallelism, call_log, read_only=read_only)
    return PlatformClient(
        validate_base_url(base_url), api_key, parallelism=parallelism, call_log=call_log
    )


def start_connecting(base_url: str | None) -> None:
    """Begin what a connection to `base_url` needs and may do before the manifest is read:
    loading the certificates TLS is verified with, on another thread. Errors wait for
    `connect`; only an `https://` platform needs anything (not `http://`, not the local one)."""
    if base_url and needs_certificates(base_url):
        load_certificates_in_background()


def is_local(base_url: str | None) -> bool:
    """Whether `base_url` names the built-in emulator (`local` or `local:PATH`)."""
    return (base_url or "").strip().partition(":")[0] == LOCAL


def validate_base_url(base_url: str) -> str:
    """`base_url` without a trailing slash; a UsageError saying how to fix anything else."""
    try:
        parts = urlsplit(base_url)
        port = parts.port  # parsed lazily: an out-of-range or non-numeric port raises here
    except ValueError as error:
        raise UsageError(
            f"invalid base URL: {error}",  # not echoed: it may hold credentials
            hint=f"for example --base-url https://api.example.com, or --base-url {LOCAL} "
            "for the built-in emulator",
        ) from None
    # Nothing of the URL is echoed before this check passes: a key pasted into it (as user
    # info, a query or a mistyped scheme) must not reach a log.
    if parts.username or parts.password or "@" in base_url:
        raise UsageError(
            "the base URL must not contain credentials",
            hint=f"put the API key in {API_KEY_ENV} instead",
        )
    if parts.query or parts.fragment:
        raise UsageError("invalid base URL: it must not have a query or fragment")
    if port == 0 or (not parts.hostname and parts.netloc):
        raise UsageError("invalid base URL: it has no usable host and port")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            "invalid base URL: expected http:// or https:// followed by a host",
            hint=f"for example --base-url https://api.example.com, or --base-url {LOCAL} "
            "for the built-in emulator",
        )
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        fixed = f"{parts.scheme}://{parts.netloc}{path[: -len('/v1')]}"
        raise UsageError(
            f"invalid base URL {base_url!r}: reconciler adds /v1 itself",
            hint=f"use --base-url {fixed}",
        )
    return f"{parts.scheme}://{parts.netloc}{path}"


def _connect_local(
    state_file: Path,
    api_key: str | None,
    parallelism: int,
    call_log: CallLog | None,
    *,
    read_only: bool,
) -> PlatformClient:
    _check_state_path(state_file)
    try:  # imported lazily: commands that talk to a real platform never load the emulator
        from reconciler.emulator.app import EmulatorConfig, create_app
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("reconciler.emulator"):
            raise
        raise UsageError(
            f"the built-in emulator is not available in this installation ({exc})"
        ) from None
    from reconciler.emulator.store import StateFileError, StateLock, StateLockedError

    lock = None if read_only else StateLock(state_file)
    key = api_key or LOCAL_DEV_KEY
    try:
        if lock is not None:
            _make_state_directory(state_file)
            lock.acquire()  # before loading: what this command reads is what it writes over
        # A missing state file is an empty workspace: the emulator reads it only if it exists
        # and writes it only when a request changed something.
        app = create_app(
            EmulatorConfig(state_file=state_file, dev_key=key, read_only_state=read_only)
        )
    except StateLockedError as error:
        raise UsageError(
            f"--base-url local:{state_file}: {error}; nothing was changed",
            hint="wait for it to finish, then run this command again; a command that only "
            "reads (plan, status, export) can run meanwhile",
        ) from None
    except StateFileError as error:
        if lock is not None:
            lock.release()
        raise UsageError(
            f"--base-url local:{state_file}: {error}",
            hint="remove the file (the local platform starts empty) or give another path",
        ) from None
    return PlatformClient(
        LOCAL_BASE_URL,
        key,
        parallelism=parallelism,
        transport=_LocalTransport(httpx.ASGITransport(app=app), lock),
        call_log=call_log,
    )


def _check_state_path(state_file: Path) -> None:
    """Checked up front, not at the first write: a plan against a path that can never hold
    state would otherwise pass, and only the apply after it would fail."""
    if state_file.is_dir():
        raise UsageError(
            f"--base-url local:{state_file}: the state path is a directory",
            hint="give a file path, e.g. local:.reconciler/local-platform.json",
        )
    blocking = _nearest_existing_ancestor(state_file)
    if not blocking.is_dir():
        raise UsageError(
            f"--base-url local:{state_file}: {blocking} is not a directory",
            hint="give a file path in a directory, e.g. local:.reconciler/local-platform.json",
        )
    check_replaceable(state_file)


class _LocalTransport(httpx.AsyncBaseTransport):
    """The local platform's transport. A client that may write holds the state's lock until
    it is closed; a read-only one (no lock) refuses any operation that writes: a command
    that claims to only read and still writes is a bug, and must not change state unlocked."""

    def __init__(self, inner: httpx.AsyncBaseTransport, lock: StateLock | None) -> None:
        self._inner = inner
        self._lock = lock

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._lock is None and _is_write(request):
            raise RuntimeError(
                "a read-only connection to the local platform was asked to write "
                f"({request.url.path.rsplit('/', 1)[-1]})"
            )
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if self._lock is not None:
                self._lock.release()


def _is_write(request: httpx.Request) -> bool:
    """Whether the request's operation may change state (an unknown one is assumed to)."""
    operation = OPERATIONS.get(request.url.path.rsplit("/", 1)[-1])
    return operation is None or operation.is_write


def _nearest_existing_ancestor(path: Path) -> Path:
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


def _make_state_directory(state_file: Path) -> None:
    try:
        state_file.parent.mkdir(parents=True, exist_ok=True)
        if state_file == LOCAL_STATE_FILE:
            _keep_out_of_git(state_file.parent)
    except OSError as exc:
        raise UsageError(
            f"cannot create the directory for the local platform state {state_file}: {exc.strerror}"
        ) from None


def _keep_out_of_git(directory: Path) -> None:
    """The default state directory sits inside the user's repository: never commit it."""
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# created by reconciler: local emulator state, never commit it\n*\n")
