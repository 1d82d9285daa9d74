"""The emulator's state: plain JSON-able dicts, a clock, IDs, lookups and atomic persistence.

Objects are stored as they are returned, plus internal members whose names start with `_`
(parent IDs, an insertion sequence for stable ordering); `public()` strips those.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TypedDict, cast

import filelock

from reconciler.emulator import jsoncodec
from reconciler.emulator.errors import not_found
from reconciler.emulator.validation import Newer

STATE_VERSION = 1
Obj = dict[str, Any]
# Every variable also holds the SHA-256 of its value: the state file keeps only that digest for a
# write-only variable (the file often sits in the user's repository, and the platform never
# returns those values), so tests compare values across a restart by digest.
VALUE_DIGEST = "valueSha256"


class State(TypedDict):
    """The stored state, as the state file holds it (`_check_shape` checks a loaded one)."""

    version: int
    clockOffsetMs: int
    seq: int
    projects: dict[str, Obj]
    apps: dict[str, Obj]
    environments: dict[str, Obj]
    variables: dict[str, dict[str, Obj]]  # environment ID -> key -> variable
    policies: dict[str, list[Obj]]  # environment ID -> its ordered policies
    domains: dict[str, Obj]
    deployments: dict[str, Obj]
    dns: list[Obj]
    quotas: dict[str, float]


def empty_state() -> State:
    return {
        "version": STATE_VERSION,
        "clockOffsetMs": 0,
        "seq": 0,
        "projects": {},
        "apps": {},
        "environments": {},
        "variables": {},
        "policies": {},
        "domains": {},
        "deployments": {},
        "dns": [],
        "quotas": {},
    }


def value_digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def public(obj: Obj) -> Obj:
    """The object as the API returns it: internal `_` members removed."""
    return {name: value for name, value in obj.items() if not name.startswith("_")}


class StateFileError(Exception):
    """The state file exists but cannot be used."""


class Store:
    """The state, loaded from `path` when it exists and saved to it after every change.

    `read_only`: a snapshot for a command that only reads. Nothing is ever written back, not
    even what the clock moved on (deployment and domain statuses, derived again from the clock
    by whoever loads the file next), so a reader never overwrites what a writer saved meanwhile.
    """

    def __init__(
        self, path: Path | None = None, seed: int | None = None, *, read_only: bool = False
    ) -> None:
        self.path = path
        self.read_only = read_only
        self.random = random.Random(seed)
        self.state = empty_state()
        self.dirty = False
        # the state holds NaN or an infinity (only a hand-edited file can): see jsoncodec
        self.non_finite = False
        # behaving like a newer platform than the spec (EmulatorConfig.accept_unknown), or not
        self.newer: Newer | None = None
        # derived from the state, never persisted: see domains.dns_index / advance_domains
        self.dns_cache: tuple[list[Obj], dict[tuple[str, str], set[str]]] | None = None
        if path is not None and path.exists():
            self.state, self.non_finite = _load(path)
        self._reindex()

    # ---- clock and identifiers -----------------------------------------------------------

    def now(self) -> int:
        return int(time.time() * 1000) + self.state["clockOffsetMs"]

    def advance_clock(self, ms: int) -> None:
        self.state["clockOffsetMs"] += ms
        self.dirty = True

    def next_seq(self) -> int:
        self.state["seq"] += 1
        return self.state["seq"]

    def new_id(self, prefix: str) -> str:
        return prefix + "".join(self.random.choices("0123456789abcdefghijklmnopqrstuvwxyz", k=16))

    # ---- tables -----------------------------------------------------------------------------

    @property
    def projects(self) -> dict[str, Obj]:
        return self.state["projects"]

    @property
    def apps(self) -> dict[str, Obj]:
        return self.state["apps"]

    @property
    def environments(self) -> dict[str, Obj]:
        return self.state["environments"]

    @property
    def variables(self) -> dict[str, dict[str, Obj]]:
        return self.state["variables"]

    @property
    def policies(self) -> dict[str, list[Obj]]:
        return self.state["policies"]

    @property
    def domains(self) -> dict[str, Obj]:
        return self.state["domains"]

    @property
    def deployments(self) -> dict[str, Obj]:
        return self.state["deployments"]

    # ---- indexes ---------------------------------------------------------------------------
    # Derived from the tables (never persisted) so that lookups by slug and children of a parent
    # cost the same whatever the size of the workspace. Every write of a slug or of a project,
    # app, environment or domain goes through the methods below, which keep them in step.

    def _reindex(self) -> None:
        self._project_by_slug = {p["slug"]: i for i, p in self.projects.items()}
        self._app_by_slug = {(a["_projectId"], a["slug"]): i for i, a in self.apps.items()}
        self._apps_by_slug: Children = {}
        self._apps_by_project: Children = {i: {} for i in self.projects}
        self._envs_by_app: Children = {i: {} for i in self.apps}
        for app_id, app in self.apps.items():
            self._apps_by_project.setdefault(app["_projectId"], {})[app_id] = None
            self._apps_by_slug.setdefault(app["slug"], {})[app_id] = None
        for env_id, env in sorted(self.environments.items(), key=lambda item: item[1]["_seq"]):
            self._envs_by_app.setdefault(env["_appId"], {})[env_id] = None
        self._domain_by_host: dict[str, str] = {}
        # domains by the ID of their project, app and environment
        self._domains_by: dict[str, Children] = {owner: {} for owner in DOMAIN_OWNERS}
        for domain in self.domains.values():
            self._index_domain(domain)
        # deployments by the ID of their app and environment
        self._deployments_by: dict[str, Children] = {owner: {} for owner in DEPLOYMENT_OWNERS}
        for deployment in self.deployments.values():
            self._index_deployment(deployment)
        self.running_ids: set[str] | None = None  # lifecycle.running_deployments fills it
        # when each unsettled domain must next be looked at (domains.advance_domains): a heap of
        # (deadline, domain ID), whose live entry for a domain is the one `domain_due` names;
        # None: look at every domain on the next request (after a load, a reset, a DNS change)
        self.domain_deadlines: list[tuple[int, str]] | None = None
        self.domain_due: dict[str, int] = {}

    def add_project(self, project: Obj) -> None:
        self.projects[project["id"]] = project
        self._project_by_slug[project["slug"]] = project["id"]
        self._apps_by_project[project["id"]] = {}

    def set_project_slug(self, project: Obj, slug: str) -> None:
        self._project_by_slug.pop(project["slug"], None)
        project["slug"] = slug
        self._project_by_slug[slug] = project["id"]

    def add_app(self, app: Obj) -> None:
        self.apps[app["id"]] = app
        self._app_by_slug[(app["_projectId"], app["slug"])] = app["id"]
        self._apps_by_slug.setdefault(app["slug"], {})[app["id"]] = None
        self._apps_by_project.setdefault(app["_projectId"], {})[app["id"]] = None
        self._envs_by_app[app["id"]] = {}

    def app_slug_changed(self, app: Obj, old_slug: str) -> None:
        if old_slug != app["slug"]:
            self._app_by_slug.pop((app["_projectId"], old_slug), None)
            self._app_by_slug[(app["_projectId"], app["slug"])] = app["id"]
            _unlink(self._apps_by_slug, old_slug, app["id"])
            self._apps_by_slug.setdefault(app["slug"], {})[app["id"]] = None

    def add_environment(self, env: Obj) -> None:
        self.environments[env["id"]] = env
        self._envs_by_app.setdefault(env["_appId"], {})[env["id"]] = None

    def add_domain(self, domain: Obj) -> None:
        self.domains[domain["id"]] = domain
        self._index_domain(domain)

    def _index_domain(self, domain: Obj) -> None:
        self._domain_by_host[domain["domain"]] = domain["id"]
        for owner, index in self._domains_by.items():
            index.setdefault(domain[owner], {})[domain["id"]] = None

    def delete_domain(self, domain_id: str) -> None:
        domain = self.domains.pop(domain_id)
        self._domain_by_host.pop(domain["domain"], None)
        for owner, index in self._domains_by.items():
            _unlink(index, domain[owner], domain_id)
        self.domain_due.pop(domain_id, None)

    def domains_of(self, owner: str, owner_id: str) -> list[Obj]:
        """The domains whose `owner` member (one of `DOMAIN_OWNERS`) is `owner_id`, in creation
        order."""
        return [self.domains[i] for i in self._domains_by[owner].get(owner_id, ())]

    def add_deployment(self, deployment: Obj) -> None:
        self.deployments[deployment["id"]] = deployment
        self._index_deployment(deployment)

    def _index_deployment(self, deployment: Obj) -> None:
        for owner, index in self._deployments_by.items():
            index.setdefault(deployment[owner], {})[deployment["id"]] = None

    def _delete_deployment(self, deployment: Obj) -> None:
        del self.deployments[deployment["id"]]
        for owner, index in self._deployments_by.items():
            _unlink(index, deployment[owner], deployment["id"])

    def deployments_of(self, owner: str, owner_id: str) -> list[Obj]:
        """The deployments whose `owner` member (one of `DEPLOYMENT_OWNERS`) is `owner_id`, in
        creation order."""
        return [self.deployments[i] for i in self._deployments_by[owner].get(owner_id, ())]

    # ---- lookups ("by ID or slug") -------------------------------------------------------

    def find_project(self, ref: str) -> Obj | None:
        if ref in self.projects:
            return self.projects[ref]
        project_id = self._project_by_slug.get(ref)
        return None if project_id is None else self.projects[project_id]

    def project(self, ref: str) -> Obj:
        found = self.find_project(ref)
        if found is None:
            raise not_found("project", ref)
        return found

    def find_app(self, project: Obj, ref: str) -> Obj | None:
        app = self.apps.get(ref)
        if app is not None and app["_projectId"] == project["id"]:
            return app
        return self.app_with_slug(project["id"], ref)

    def app_with_slug(self, project_id: str, slug: str) -> Obj | None:
        app_id = self._app_by_slug.get((project_id, slug))
        return None if app_id is None else self.apps[app_id]

    def app(self, project: Obj, ref: str) -> Obj:
        found = self.find_app(project, ref)
        if found is None:
            raise not_found("app", ref)
        return found

    def project_apps(self, project_id: str) -> list[Obj]:
        """The project's apps in creation order."""
        return [self.apps[i] for i in self._apps_by_project.get(project_id, ())]

    def apps_with_slug(self, slug: str) -> list[Obj]:
        """The apps of every project that have this slug."""
        return [self.apps[i] for i in self._apps_by_slug.get(slug, ())]

    def environment(self, app: Obj, ref: str) -> Obj:
        for env in self.app_environments(app["id"]):
            if ref in (env["id"], env["slug"]):
                return env
        raise not_found("environment", ref)

    def app_environments(self, app_id: str) -> list[Obj]:
        """The app's environments in creation order."""
        return [self.environments[i] for i in self._envs_by_app.get(app_id, ())]

    def find_domain(self, host: str) -> Obj | None:
        domain_id = self._domain_by_host.get(host)
        return None if domain_id is None else self.domains[domain_id]

    def domain(self, ref: str) -> Obj:
        if ref in self.domains:
            return self.domains[ref]
        found = self.find_domain(ref.lower().rstrip("."))
        if found is None:
            raise not_found("domain", ref)
        return found

    def deployment(self, ref: str) -> Obj:
        found = self.deployments.get(ref)
        if found is None:
            raise not_found("deployment", ref)
        return found

    # ---- cascades ---------------------------------------------------------------------------

    def delete_app(self, app_id: str) -> None:
        for env in self.app_environments(app_id):
            self.variables.pop(env["id"], None)
            self.policies.pop(env["id"], None)
            del self.environments[env["id"]]
        for domain in self.domains_of("appId", app_id):
            self.delete_domain(domain["id"])
        for deployment in self.deployments_of("_appId", app_id):
            self._delete_deployment(deployment)
        app = self.apps.pop(app_id)
        self._envs_by_app.pop(app_id, None)
        self._app_by_slug.pop((app["_projectId"], app["slug"]), None)
        _unlink(self._apps_by_slug, app["slug"], app_id)
        self._apps_by_project.get(app["_projectId"], {}).pop(app_id, None)

    def delete_project(self, project_id: str) -> None:
        for app in self.project_apps(project_id):
            self.delete_app(app["id"])
        project = self.projects.pop(project_id)
        self._apps_by_project.pop(project_id, None)
        self._project_by_slug.pop(project["slug"], None)

    # ---- persistence ------------------------------------------------------------------------

    def reset(self) -> None:
        self.state = empty_state()
        self.non_finite = False
        self._reindex()
        self.dirty = True

    def save(self) -> None:
        self.dirty = False
        content = self.serialized()
        if content is not None:
            self.write(content)

    def serialized(self) -> bytes | None:
        """The state file's content now; None when this store writes no file. The whole state,
        so O(state) per save (the file is one JSON document that readers load as it is)."""
        if self.path is None or self.read_only:
            return None
        return jsoncodec.dumps_state(_persisted(self.state), exact=self.non_finite)

    def write(self, content: bytes) -> None:
        """Replace the state file with `content` (atomically); callable from another thread."""
        assert self.path is not None
        atomic_write(self.path, content)


Children = dict[str, dict[str, None]]  # parent ID -> child IDs, in insertion order
DOMAIN_OWNERS = ("projectId", "appId", "environmentId")
DEPLOYMENT_OWNERS = ("_appId", "_envId")


def _unlink(index: Children, parent: str, child: str) -> None:
    children = index.get(parent)
    if children is not None:
        children.pop(child, None)
        if not children:
            del index[parent]


def _persisted(state: State) -> dict[str, Any]:
    """The state as written to the file: write-only variable values left out (digest kept)."""
    variables = {
        env_id: {key: _without_writeonly_value(v) for key, v in table.items()}
        for env_id, table in state["variables"].items()
    }
    return {**state, "variables": variables}


def _without_writeonly_value(variable: Any) -> Any:
    if isinstance(variable, dict) and variable.get("kind") == "writeonly" and "value" in variable:
        return {name: value for name, value in variable.items() if name != "value"}
    return variable


def atomic_write(path: Path, content: str | bytes) -> None:
    """Write via a temporary file, fsync and rename: a crash leaves the old or the new file."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(handle, 0o600)  # owner only, whatever the umask (mkstemp's mode, made explicit)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where supported
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


class StateLockedError(StateFileError):
    """Another process writes the state file: the message names it when it could be told."""


class StateLock:
    """One writer at a time for a state file, held for as long as that writer runs.

    A writer loads the whole state when it starts and saves the whole state after each change,
    so two writers at once would each save over the other's work. The lock is `PATH.lock`
    beside the file (the state file itself is replaced by a rename at every save, so it cannot
    carry a lock), taken with an OS lock that ends with the process holding it, however it
    ends: there is never a stale lock to remove by hand. While held, the lock file names its
    holder (process ID and command) so that a refused writer can say who to wait for.
    """

    def __init__(self, state_file: Path) -> None:
        self.state_file = state_file
        self.path = state_file.with_name(state_file.name + ".lock")
        self._lock = filelock.FileLock(self.path, thread_local=False)

    def acquire(self) -> None:
        """Take the lock at once, or raise `StateLockedError` naming the state and its holder."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock.acquire(blocking=False)
        except filelock.Timeout:
            holder = _describe_holder(self.path)
            raise StateLockedError(
                f"the state file {self.state_file} is in use by {holder}"
            ) from None
        except OSError as error:
            raise StateFileError(
                f"cannot lock the state file {self.state_file} ({self.path}): "
                f"{error.strerror or error}"
            ) from None
        self._record_holder(json.dumps({"pid": os.getpid(), "command": _command_name()}))

    def release(self) -> None:
        if self._lock.is_locked:
            self._record_holder("")  # a holder that is gone is never named
            self._lock.release()

    def _record_holder(self, text: str) -> None:
        # only a courtesy to whoever is refused: never a reason to fail
        with contextlib.suppress(OSError), open(self.path, "r+", encoding="utf-8") as handle:
            handle.truncate(0)
            handle.write(text)


def _command_name() -> str:
    """`reconciler apply`: the program and its command word, never the rest of the command
    line (paths, URLs), which is nobody else's business."""
    script = Path(sys.argv[0] if sys.argv and sys.argv[0] else "python")
    program = script.parent.name if script.name == "__main__.py" else script.name  # python -m
    return " ".join([program, *(word for word in sys.argv[1:2] if word.isidentifier())])


def _describe_holder(lock_path: Path) -> str:
    """`process 4242 (reconciler apply)`, or `another process` when the lock file does not say
    (the holder has just taken it and not written its name yet)."""
    try:
        holder = json.loads(lock_path.read_text(encoding="utf-8"))
        pid, command = int(holder["pid"]), str(holder["command"])
    except (OSError, ValueError, TypeError, KeyError):
        return "another process"
    return f"process {pid} ({command})"


def _load(path: Path) -> tuple[State, bool]:
    """The state in the file, and whether it holds NaN or an infinity."""
    non_finite = jsoncodec.NonFiniteNumbers()
    try:
        state = jsoncodec.loads_state(path.read_bytes(), non_finite)
    except (OSError, ValueError) as error:  # also bad UTF-8, bad JSON, over-long integers
        raise StateFileError(f"cannot read state file {path}: {error}") from error
    except RecursionError:
        raise StateFileError(f"cannot read state file {path}: nested too deeply") from None
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise StateFileError(f"{path} is not an emulator state file (version {STATE_VERSION})")
    merged: dict[str, Any] = {**empty_state(), **state}
    _check_shape(path, merged)
    return cast(State, merged), non_finite.seen  # the shape is checked


def _check_shape(path: Path, state: dict[str, Any]) -> None:
    """Refuse a state file whose tables have the wrong types (edited by hand, or another tool's
    file): every handler indexes these tables, so a wrong type would crash each request."""
    problems = []
    defaults: dict[str, Any] = {**empty_state()}
    for name, default in defaults.items():
        value = state[name]
        if isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                problems.append(f"{name} must be an integer")
        elif not isinstance(value, type(default)):
            problems.append(f"{name} must be a JSON {'object' if default == {} else 'array'}")
        elif name in _ROWS and not all(isinstance(row, _ROWS[name]) for row in value.values()):
            shape = "arrays" if _ROWS[name] is list else "objects"
            problems.append(f"{name} must map IDs to {shape}")
        elif name in _INDEXED:
            problems += _unindexable(name, value)
    if problems:
        raise StateFileError(f"{path} is not a usable emulator state file: {'; '.join(problems)}")


def _unindexable(table: str, rows: dict[str, Obj]) -> list[str]:
    """Rows lacking a member the store's indexes are built from (named once per member)."""
    problems = []
    for member, kind in _INDEXED[table].items():
        bad = [row_id for row_id, row in rows.items() if not _is(row.get(member), kind)]
        if bad:
            shown = ", ".join(bad[:3]) + (", ..." if len(bad) > 3 else "")
            problems.append(f"{table} {shown}: {member} must be {_KIND_NAMES[kind]}")
    return problems


def _is(value: Any, kind: type) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


_KIND_NAMES = {str: "a string", int: "an integer"}
# table -> members the indexes read, and their types
_INDEXED: dict[str, dict[str, type]] = {
    "projects": {"slug": str},
    "apps": {"slug": str, "_projectId": str},
    "environments": {"_appId": str, "_seq": int},
    "domains": {"domain": str, "projectId": str, "appId": str, "environmentId": str},
    "deployments": {"_appId": str, "_envId": str},
}
# table -> type of each row (variables and policies are keyed by environment ID)
_ROWS: dict[str, type] = {
    "projects": dict, "apps": dict, "environments": dict, "variables": dict,
    "policies": list, "domains": dict, "deployments": dict,
}  # fmt: skip
