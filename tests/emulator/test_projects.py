"""projects.*: shapes, uniqueness, delete protection, search and pagination."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.emulator.helpers import list_all, make_app, make_project, ok, problem
from tests.fixtures.emulator import EmulatorServer


def test_create_get_by_id_and_slug(emulator: EmulatorServer) -> None:
    project_id = make_project(emulator, "shop")
    assert project_id.startswith("proj_") and 8 <= len(project_id) <= 255
    by_id = ok(emulator.call("projects.getProject", {"project": project_id}))["data"]
    by_slug = ok(emulator.call("projects.getProject", {"project": "shop"}))["data"]
    assert by_id == by_slug
    assert set(by_id) == {"id", "name", "slug", "createdAt", "deleteProtection"}
    assert by_id["deleteProtection"] is False
    assert isinstance(by_id["createdAt"], int)


def test_create_validates_name_and_slug(emulator: EmulatorServer) -> None:
    for body, field in [
        ({"name": "A", "slug": "ab"}, "slug"),
        ({"name": "A", "slug": "Shop"}, "slug"),
        ({"name": "A", "slug": "sh_op"}, "slug"),
        ({"name": "A", "slug": "x" * 256}, "slug"),
        ({"name": "", "slug": "shop"}, "name"),
        ({"name": "n" * 257, "slug": "shop"}, "name"),
        ({"slug": "shop"}, "name"),
        ({"name": "A"}, "slug"),
    ]:
        problem(emulator.call("projects.createProject", body), 400, field)
    ok(emulator.call("projects.createProject", {"name": "n" * 256, "slug": "a-1"}))


def test_project_slug_is_unique_in_the_workspace(emulator: EmulatorServer) -> None:
    make_project(emulator, "shop")
    other = make_project(emulator, "blog")
    problem(emulator.call("projects.createProject", {"name": "X", "slug": "shop"}), 409, "slug")
    problem(emulator.call("projects.updateProject", {"project": other, "slug": "shop"}), 409)


def test_update_changes_fields_and_sets_updated_at(emulator: EmulatorServer) -> None:
    make_project(emulator, "shop")
    unchanged = ok(emulator.call("projects.updateProject", {"project": "shop", "name": "Shop"}))
    assert "updatedAt" not in unchanged["data"]
    emulator.advance_clock(5)
    body = {"project": "shop", "name": "Store", "slug": "store", "deleteProtection": True}
    updated = ok(emulator.call("projects.updateProject", body))["data"]
    assert (updated["name"], updated["slug"], updated["deleteProtection"]) == (
        "Store",
        "store",
        True,
    )
    assert updated["updatedAt"] > updated["createdAt"]
    problem(emulator.call("projects.getProject", {"project": "shop"}), 404)
    problem(emulator.call("projects.updateProject", {"project": "nope", "name": "x"}), 404)
    problem(emulator.call("projects.updateProject", {"project": "store", "name": ""}), 400, "name")


def test_delete_protection_and_cascade(emulator: EmulatorServer) -> None:
    make_project(emulator)
    make_app(emulator)
    ok(emulator.call("projects.updateProject", {"project": "shop", "deleteProtection": True}))
    problem(emulator.call("projects.deleteProject", {"project": "shop"}), 412)
    ok(emulator.call("projects.updateProject", {"project": "shop", "deleteProtection": False}))
    assert ok(emulator.call("projects.deleteProject", {"project": "shop"}), 202) == {"data": {}}
    problem(emulator.call("projects.getProject", {"project": "shop"}), 404)
    problem(emulator.call("projects.deleteProject", {"project": "shop"}), 404)
    state = emulator.state()
    assert state["apps"] == {} and state["environments"] == {}


def test_list_pages_through_everything_in_creation_order(emulator: EmulatorServer) -> None:
    slugs = [f"project-{i:02}" for i in range(7)]
    for slug in slugs:
        make_project(emulator, slug)
    items = list_all(emulator, "projects.listProjects", {}, limit=3)
    assert [p["slug"] for p in items] == slugs


def test_cursor_is_stable_under_inserts(emulator: EmulatorServer) -> None:
    for i in range(4):
        make_project(emulator, f"early-{i}")
    first = ok(emulator.call("projects.listProjects", {"limit": 2}))
    make_project(emulator, "late-one")
    second = ok(
        emulator.call(
            "projects.listProjects", {"limit": 2, "cursor": first["pagination"]["cursor"]}
        )
    )
    assert [p["slug"] for p in second["data"]] == ["early-2", "early-3"]
    assert second["pagination"]["hasMore"] is True


def test_cursor_reused_with_other_filters_or_forged_is_400(emulator: EmulatorServer) -> None:
    for i in range(3):
        make_project(emulator, f"shop-{i}")
    page = ok(emulator.call("projects.listProjects", {"limit": 1, "search": "shop"}))
    cursor = page["pagination"]["cursor"]
    assert page["pagination"]["hasMore"] is True and cursor
    body = {"limit": 1, "search": "other", "cursor": cursor}
    problem(emulator.call("projects.listProjects", body), 400, "cursor")
    problem(emulator.call("projects.listProjects", {"cursor": "not-a-cursor"}), 400, "cursor")
    # another list operation does not accept it either
    make_app(emulator, "shop-0")
    body = {"project": "shop-0", "cursor": cursor}
    problem(emulator.call("apps.listApps", body), 400, "cursor")


def _decode(cursor: str) -> dict[str, Any]:
    return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))


def _encode(document: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "forged",
    [
        {"k": ["x"]},
        {"k": [None]},
        {"k": [{}]},
        {"k": [[]]},
        {"k": ["x", 1]},
        {"k": [1, None]},
        {"k": [True, 1]},
        {"k": [1.5, 1]},
        {"k": [1]},
        {"k": [1, 2, 3]},
        {"k": []},
        {"k": {"a": 1}},
        {"k": "x"},
        {"f": 1},
        {"f": None},
        {"extra": 1},
    ],
)
def test_a_forged_cursor_under_the_right_filter_hash_is_400(
    emulator: EmulatorServer, forged: dict
) -> None:
    for i in range(3):
        make_project(emulator, f"shop-{i}")
    issued = _decode(
        ok(emulator.call("projects.listProjects", {"limit": 1}))["pagination"]["cursor"]
    )
    cursor = _encode({**issued, **forged})
    problem(emulator.call("projects.listProjects", {"cursor": cursor}), 400, "cursor")


def test_a_forged_cursor_is_400_even_when_nothing_is_listed(emulator: EmulatorServer) -> None:
    make_project(emulator, "shop-0")
    make_project(emulator, "shop-1")
    issued = _decode(
        ok(emulator.call("projects.listProjects", {"limit": 1}))["pagination"]["cursor"]
    )
    body = {"search": "", "cursor": _encode({**issued, "k": ["x"]})}
    ok(emulator.call("projects.deleteProject", {"project": "shop-0"}), 202)
    ok(emulator.call("projects.deleteProject", {"project": "shop-1"}), 202)
    problem(emulator.call("projects.listProjects", body), 400, "cursor")


def test_an_issued_cursor_re_encoded_differently_is_400(emulator: EmulatorServer) -> None:
    for i in range(3):
        make_project(emulator, f"shop-{i}")
    cursor = ok(emulator.call("projects.listProjects", {"limit": 1}))["pagination"]["cursor"]
    assert ok(emulator.call("projects.listProjects", {"cursor": cursor}))["data"]
    padded = cursor + "=" * (-len(cursor) % 4)
    compact = base64.urlsafe_b64encode(
        json.dumps(_decode(cursor), separators=(",", ":")).encode()
    ).decode()
    for other in {padded, compact} - {cursor}:
        problem(emulator.call("projects.listProjects", {"cursor": other}), 400, "cursor")


def test_search_is_case_insensitive_on_id_name_and_slug(emulator: EmulatorServer) -> None:
    shop = make_project(emulator, "shop")
    make_project(emulator, "blog")
    ok(emulator.call("projects.updateProject", {"project": "blog", "name": "My Journal"}))
    found = lambda s: [  # noqa: E731
        p["slug"] for p in ok(emulator.call("projects.listProjects", {"search": s}))["data"]
    ]
    assert found("SHO") == ["shop"]
    assert found("journal") == ["blog"]
    assert found(shop[-6:].upper()) == ["shop"]
    assert found("") == ["shop", "blog"]
