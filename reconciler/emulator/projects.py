"""projects.* operations."""

from __future__ import annotations

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
from reconciler.emulator.errors import conflict, precondition
from reconciler.emulator.pagination import paginate
from reconciler.emulator.store import public
from reconciler.emulator.validation import SLUG, SLUG_HINT, Bool, Obj, Str

NAME = Str(min=1, max=256)
PROJECT_SLUG = Str(min=3, max=255, pattern=SLUG, pattern_hint=SLUG_HINT)


def create_project(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call.require("project", "create_project")
    store = call.store
    if store.find_project(body["slug"]) is not None:
        raise conflict("slug", f"a project with slug {body['slug']!r} already exists")
    project_id = store.new_id("proj_")
    store.add_project(
        {
            "id": project_id,
            "name": body["name"],
            "slug": body["slug"],
            "createdAt": call.now,
            "deleteProtection": False,
            "_seq": store.next_seq(),
        }
    )
    call.touch()
    return data({"id": project_id})


def list_projects(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call.require("project", "read_project")
    search = body.get("search")
    items = [
        p for p in call.store.projects.values() if contains(search, p["id"], p["name"], p["slug"])
    ]
    page, pagination = paginate(
        "projects.listProjects", body, {"search": search or ""}, items, by_seq
    )
    return listing([public(p) for p in page], pagination)


def get_project(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call.precheck("project", "read_project")
    project = call.store.project(body["project"])
    call.require("project", "read_project", project["id"])
    return data(public(project))


def update_project(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call.precheck("project", "update_project")
    store = call.store
    project = store.project(body["project"])
    call.require("project", "update_project", project["id"])
    slug = body.get("slug")
    holder = None if slug is None else store.find_project(slug)
    if holder is not None and holder["id"] != project["id"]:
        raise conflict("slug", f"a project with slug {slug!r} already exists")
    changed = False
    for name in ("name", "slug", "deleteProtection"):
        if name in body and project[name] != body[name]:
            if name == "slug":
                store.set_project_slug(project, body[name])
            else:
                project[name] = body[name]
            changed = True
    if changed:
        project["updatedAt"] = call.now
        call.touch()
    return data(public(project))


def delete_project(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call.precheck("project", "delete_project")
    project = call.store.project(body["project"])
    call.require("project", "delete_project", project["id"])
    if project["deleteProtection"]:
        raise precondition("delete protection is on; turn it off with projects.updateProject")
    call.store.delete_project(project["id"])
    call.touch()
    return data({}, 202)


OPERATIONS = {
    "projects.createProject": Operation(
        create_project,
        Obj(fields={"name": NAME, "slug": PROJECT_SLUG}, required=("name", "slug")),
        True,
    ),
    "projects.listProjects": Operation(
        list_projects, Obj(fields={**LIST_FIELDS, "search": SEARCH}), False
    ),
    "projects.getProject": Operation(
        get_project, Obj(fields={"project": REF}, required=("project",)), False
    ),
    "projects.updateProject": Operation(
        update_project,
        Obj(
            fields={"project": REF, "slug": PROJECT_SLUG, "name": NAME, "deleteProtection": Bool()},
            required=("project",),
        ),
        True,
    ),
    "projects.deleteProject": Operation(
        delete_project, Obj(fields={"project": REF}, required=("project",)), True
    ),
}
