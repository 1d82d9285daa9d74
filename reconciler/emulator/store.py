"""The emulator's state: plain JSON-able dicts, a clock, IDs, lookups and atomic persistence.

Objects are stored as they are returned, plus internal members whose names start with `_`
(parent IDs, an insertion sequence for stable ordering); `public()` strips those.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from reconciler.emulator.errors import not_found

STATE_VERSION = 1
Obj = dict[str, Any]


def empty_state() -> dict[str, Any]:
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


def public(obj: Obj) -> Obj:
    """The object as the API returns it: internal `_` members removed."""
    return {name: value for name, value in obj.items() if not name.startswith("_")}


class StateFileError(Exception):
    """The state file exists but cannot be used."""


class Store:
    def __init__(self, path: Path | None = None, seed: int | None = None) -> None:
        self.path = path
        self.random = random.Random(seed)
        self.state = empty_state()
        self.dirty = False
        if path is not None and path.exists():
            self.state = _load(path)

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

    # ---- lookups ("by ID or slug") -------------------------------------------------------

    def find_project(self, ref: str) -> Obj | None:
        if ref in self.projects:
            return self.projects[ref]
        return next((p for p in self.projects.values() if p["slug"] == ref), None)

    def project(self, ref: str) -> Obj:
        found = self.find_project(ref)
        if found is None:
            raise not_found("project", ref)
        return found

    def find_app(self, project: Obj, ref: str) -> Obj | None:
        app = self.apps.get(ref)
        if app is not None and app["_projectId"] == project["id"]:
            return app
        return next(
            (
                a
                for a in self.apps.values()
                if a["_projectId"] == project["id"] and a["slug"] == ref
            ),
            None,
        )

    def app(self, project: Obj, ref: str) -> Obj:
        found = self.find_app(project, ref)
        if found is None:
            raise not_found("app", ref)
        return found

    def environment(self, app: Obj, ref: str) -> Obj:
        for env in self.environments.values():
            if env["_appId"] == app["id"] and ref in (env["id"], env["slug"]):
                return env
        raise not_found("environment", ref)

    def app_environments(self, app_id: str) -> list[Obj]:
        envs = [e for e in self.environments.values() if e["_appId"] == app_id]
        return sorted(envs, key=lambda e: e["_seq"])

    def domain(self, ref: str) -> Obj:
        if ref in self.domains:
            return self.domains[ref]
        lowered = ref.lower().rstrip(".")
        found = next((d for d in self.domains.values() if d["domain"] == lowered), None)
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
        for table in (self.domains, self.deployments):
            for obj_id in [i for i, o in table.items() if o["_appId"] == app_id]:
                del table[obj_id]
        del self.apps[app_id]

    def delete_project(self, project_id: str) -> None:
        for app_id in [i for i, a in self.apps.items() if a["_projectId"] == project_id]:
            self.delete_app(app_id)
        del self.projects[project_id]

    # ---- persistence ------------------------------------------------------------------------

    def reset(self) -> None:
        self.state = empty_state()
        self.dirty = True

    def save_if_dirty(self) -> None:
        if self.dirty:
            self.save()

    def save(self) -> None:
        self.dirty = False
        if self.path is not None:
            atomic_write(self.path, json.dumps(self.state, separators=(",", ":")))


def atomic_write(path: Path, text: str) -> None:
    """Write via a temporary file, fsync and rename: a crash leaves the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
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


def _load(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:  # also bad UTF-8, bad JSON, over-long integers
        raise StateFileError(f"cannot read state file {path}: {error}") from error
    except RecursionError:
        raise StateFileError(f"cannot read state file {path}: nested too deeply") from None
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise StateFileError(f"{path} is not an emulator state file (version {STATE_VERSION})")
    merged = empty_state()
    merged.update(state)
    _check_shape(path, merged)
    return merged


def _check_shape(path: Path, state: dict[str, Any]) -> None:
    """Refuse a state file whose tables have the wrong types (edited by hand, or another tool's
    file): every handler indexes these tables, so a wrong type would crash each request."""
    problems = []
    for name, default in empty_state().items():
        value = state[name]
        if isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                problems.append(f"{name} must be an integer")
        elif not isinstance(value, type(default)):
            problems.append(f"{name} must be a JSON {'object' if default == {} else 'array'}")
        elif name in _ROWS and not all(isinstance(row, _ROWS[name]) for row in value.values()):
            shape = "arrays" if _ROWS[name] is list else "objects"
            problems.append(f"{name} must map IDs to {shape}")
    if problems:
        raise StateFileError(f"{path} is not a usable emulator state file: {'; '.join(problems)}")


# table -> type of each row (variables and policies are keyed by environment ID)
_ROWS: dict[str, type] = {
    "projects": dict, "apps": dict, "environments": dict, "variables": dict,
    "policies": list, "domains": dict, "deployments": dict,
}  # fmt: skip
