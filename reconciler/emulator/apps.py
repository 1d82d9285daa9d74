"""apps.* operations; creating an app also creates its two environments."""

from __future__ import annotations

import re
from typing import Any

from reconciler.emulator.context import (
    LIST_FIELDS,
    REF,
    SEARCH,
    Call,
    Operation,
    by_seq,
    contains,
    data,
    listing,
)
from reconciler.emulator.errors import conflict, invalid, precondition
from reconciler.emulator.pagination import paginate
from reconciler.emulator.store import Obj, public
from reconciler.emulator.validation import (
    REPOSITORY,
    REPOSITORY_HINT,
    Bool,
    Problems,
    Str,
)
from reconciler.emulator.validation import (
    Obj as ObjSpec,
)

DEFAULT_BRANCH = "main"
DEFAULT_REGIONS: list[Obj] = [{"name": "iad", "replicas": {"min": 1, "max": 1}}]

_TAGGED = re.compile(r"[^\s@]+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"[^\s@]+@sha256:[a-f0-9]{64}")


def image_reference(value: str, path: str, problems: Problems) -> None:
    """An image must name a tag or a digest (the tag is after the last `/`)."""
    last = value.rsplit("/", 1)[-1]
    if not (_DIGEST.fullmatch(value) or (":" in last and _TAGGED.fullmatch(value))):
        problems.append((path, "must include a tag (image:tag) or a digest (image@sha256:...)"))


NAME = Str(min=1, max=256)
APP_SLUG = Str(min=3, max=255)
REPO = Str(min=1, max=255, pattern=REPOSITORY, pattern_hint=REPOSITORY_HINT)
BRANCH = Str(min=1, max=256)
GIT = ObjSpec(fields={"repository": REPO, "defaultBranch": BRANCH})
OCI = ObjSpec(fields={"image": Str(min=1, max=256, extra=image_reference)}, required=("image",))


def create_app(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    if ("git" in body) == ("oci" in body):
        raise invalid("git", "set exactly one of git or oci")
    git = body.get("git")
    if git is not None and "defaultBranch" in git and "repository" not in git:
        raise invalid("git.defaultBranch", "needs git.repository (connect a repository first)")
    call.precheck("project", "create_app")
    store = call.store
    project = store.project(body["project"])
    call.require("project", "create_app", project["id"])
    _check_unique_slug(call, project, body["slug"], None)
    app_id = store.new_id("app_")
    app: Obj = {
        "id": app_id,
        "name": body["name"],
        "slug": body["slug"],
        "sourceType": "git" if git is not None else "oci",
        "isRolledBack": False,
        "deleteProtection": False,
        "createdAt": call.now,
        "_projectId": project["id"],
        "_seq": store.next_seq(),
    }
    if git and "repository" in git:
        app["git"] = {
            "repository": git["repository"],
            "defaultBranch": git.get("defaultBranch", DEFAULT_BRANCH),
        }
    if "oci" in body:
        app["oci"] = {"image": body["oci"]["image"]}
    store.add_app(app)
    extra = store.newer.extra_environments if store.newer is not None else ()
    for slug in ("production", "preview", *extra):
        env_id = store.new_id("env_")
        store.add_environment(
            {
                "id": env_id,
                "slug": slug,
                "description": "",
                "kind": slug,
                "deleteProtection": False,
                "createdAt": call.now,
                "regions": [dict(r, replicas=dict(r["replicas"])) for r in DEFAULT_REGIONS],
                "_appId": app_id,
                "_projectId": project["id"],
                "_seq": store.next_seq(),
            }
        )
        store.variables[env_id] = {}
        store.policies[env_id] = []
    call.touch()
    return data({"appId": app_id})


def _check_unique_slug(call: Call, project: Obj, slug: str, app_id: str | None) -> None:
    other = call.store.app_with_slug(project["id"], slug)
    if other is not None and other["id"] != app_id:
        raise conflict("slug", f"an app with slug {slug!r} already exists in the project")


def list_apps(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call.require("app", "read_app")
    project = call.store.project(body["project"])
    search = body.get("search")
    items = [
        a
        for a in call.store.project_apps(project["id"])
        if contains(search, a["id"], a["name"], a["slug"])
    ]
    filters = {"project": project["id"], "search": search or ""}
    page, pagination = paginate("apps.listApps", body, filters, items, by_seq)
    return listing([public(a) for a in page], pagination)


def _resolve(call: Call, body: dict[str, Any], action: str) -> Obj:
    call.precheck("app", action)
    project = call.store.project(body["project"])
    app = call.store.app(project, body["app"])
    call.require("app", action, app["id"])
    return app


def get_app(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return data(public(_resolve(call, body, "read_app")))


def update_app(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    app = _resolve(call, body, "update_app")
    if "git" in body and app.get("sourceType") == "oci":
        raise invalid("git", "an image app cannot be changed to a repository app")
    if "oci" in body and app.get("sourceType") == "git":
        raise invalid("oci", "a repository app cannot be changed to an image app")
    updated = dict(app)
    if "slug" in body:
        _check_unique_slug(call, call.store.projects[app["_projectId"]], body["slug"], app["id"])
    for name in ("name", "slug", "deleteProtection"):
        if name in body:
            updated[name] = body[name]
    if "git" in body:
        _apply_git(updated, body["git"])
    if "oci" in body:
        updated["oci"] = {"image": body["oci"]["image"]}
    if updated != app:
        updated["updatedAt"] = call.now
        old_slug = app["slug"]
        app.clear()
        app.update(updated)
        call.store.app_slug_changed(app, old_slug)
        call.touch()
    return data(public(app))


def _apply_git(app: Obj, git: dict[str, Any] | None) -> None:
    if git is None:
        app.pop("git", None)
        return
    current = app.get("git")
    if current is None and "repository" not in git:
        if "defaultBranch" in git:
            raise invalid("git.defaultBranch", "no repository is connected; send git.repository")
        return
    merged = dict(current or {"defaultBranch": DEFAULT_BRANCH})
    merged.update(git)
    app["git"] = merged
    app["sourceType"] = "git"


def delete_app(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    app = _resolve(call, body, "delete_app")
    if app["deleteProtection"]:
        raise precondition("delete protection is on; turn it off with apps.updateApp")
    call.store.delete_app(app["id"])
    call.touch()
    return data({}, 202)


_TARGET = {"project": REF, "app": REF}

OPERATIONS = {
    "apps.createApp": Operation(
        create_app,
        ObjSpec(
            fields={"project": REF, "name": NAME, "slug": APP_SLUG, "git": GIT, "oci": OCI},
            required=("project", "name", "slug"),
        ),
        True,
    ),
    "apps.listApps": Operation(
        list_apps,
        ObjSpec(fields={"project": REF, **LIST_FIELDS, "search": SEARCH}, required=("project",)),
        False,
    ),
    "apps.getApp": Operation(get_app, ObjSpec(fields=_TARGET, required=("project", "app")), False),
    "apps.updateApp": Operation(
        update_app,
        ObjSpec(
            fields={
                **_TARGET,
                "name": NAME,
                "slug": APP_SLUG,
                "git": ObjSpec(fields=GIT.fields, nullable=True),
                "oci": OCI,
                "deleteProtection": Bool(),
            },
            required=("project", "app"),
        ),
        True,
    ),
    "apps.deleteApp": Operation(
        delete_app, ObjSpec(fields=_TARGET, required=("project", "app")), True
    ),
}
