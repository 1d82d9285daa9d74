"""project.py and app.py on spec-shaped live objects."""

from __future__ import annotations

import asyncio

import pytest

from reconciler.address import TreePath
from reconciler.errors import ReconcilerError, UnexpectedResponse
from reconciler.manifest.model import App, GitSource, Manifest, OciSource, Project, Prune
from reconciler.plan.changes import ABSENT, Action
from reconciler.plan.kinds import app as apps
from reconciler.plan.kinds import project as projects
from reconciler.plan.kinds.base import Location
from reconciler.plan.live import LiveRecord
from reconciler.plan.planner import PlanOptions, build_plan

PROJECT_ANSWER = {"id": "proj_12345678", "name": "Shop", "slug": "shop", "createdAt": 1,
                  "deleteProtection": False}  # fmt: skip
LIVE_PROJECT = projects.parse_project(PROJECT_ANSWER)


def app_answer(**fields):
    base = {"id": "app_12345678", "name": "Web", "slug": "web", "sourceType": "git",
            "git": {"repository": "acme/web", "defaultBranch": "main"},
            "isRolledBack": False, "deleteProtection": False, "createdAt": 1}  # fmt: skip
    return {**base, **fields}


def live_app(**fields):
    (parsed,) = apps.parse_apps([app_answer(**fields)])
    return parsed


# --- projects -------------------------------------------------------------------------------


def test_project_create_uses_the_slug_as_name_and_protects_in_a_second_call():
    change = projects.plan_project(Project(slug="shop", delete_protection=True), None)
    assert change.action is Action.CREATE
    assert [c.operation.name for c in change.calls] == [
        "projects.createProject",
        "projects.updateProject",
    ]
    assert change.calls[0].body == {"name": "shop", "slug": "shop"}
    assert change.calls[0].creates and not change.calls[1].creates
    assert change.calls[0].permission == "project.*.create_project"


def test_project_unmanaged_fields_and_server_defaults_are_no_change():
    assert projects.plan_project(Project(slug="shop"), LIVE_PROJECT) is None
    without_flag = projects.parse_project(
        {k: v for k, v in PROJECT_ANSWER.items() if k != "deleteProtection"}
    )
    assert (
        projects.plan_project(Project(slug="shop", delete_protection=False), without_flag) is None
    )


def test_project_update_sends_only_differences_by_id():
    change = projects.plan_project(
        Project(slug="shop", name="Shop 2", delete_protection=True), LIVE_PROJECT
    )
    assert change.action is Action.UPDATE
    (call,) = change.calls
    assert call.body == {"project": "proj_12345678", "name": "Shop 2", "deleteProtection": True}
    assert call.permission == "project.proj_12345678.update_project"
    assert {d.path for d in change.diffs} == {"name", "deleteProtection"}


def test_project_pinned_id_with_another_slug_is_a_rename():
    change = projects.plan_project(Project(slug="shop-new", id="proj_12345678"), LIVE_PROJECT)
    assert change.reason == "renamed"
    assert change.calls[0].body == {"project": "proj_12345678", "slug": "shop-new"}
    assert change.address == "project.shop-new"


# --- apps -----------------------------------------------------------------------------------


def test_find_live_app_by_slug_or_pinned_id_and_a_missing_pin_is_an_error():
    live = apps.LiveApps([live_app(), live_app(id="app_other123", slug="api")])
    assert apps.find_live_app("shop", App(slug="web"), live).id == "app_12345678"
    assert apps.find_live_app("shop", App(slug="renamed", id="app_other123"), live).slug == "api"
    assert apps.find_live_app("shop", App(slug="new"), live) is None
    with pytest.raises(ReconcilerError, match="app_missing1"):
        apps.find_live_app("shop", App(slug="web", id="app_missing1"), live)


def test_app_create_with_git_then_protection():
    desired = App(
        slug="web", name="Web", git=GitSource(repository="acme/web"), delete_protection=True
    )
    change = apps.plan_app(
        "shop", "proj_12345678", "proj_12345678", desired, None, allow_replace=False
    )
    create, protect = change.calls
    assert create.body == {"project": "proj_12345678", "name": "Web", "slug": "web",
                           "git": {"repository": "acme/web"}}  # fmt: skip
    assert create.permission == "project.proj_12345678.create_app"
    assert protect.body == {"project": "proj_12345678", "app": "web", "deleteProtection": True}


def test_app_create_without_source_connects_a_repository_later():
    change = apps.plan_app("shop", "shop", None, App(slug="web"), None, allow_replace=False)
    assert change.calls[0].body["git"] == {}
    assert change.calls[0].permission == "project.*.create_app"


def test_omitted_default_branch_and_unmanaged_fields_are_no_change():
    desired = App(slug="web", git=GitSource(repository="acme/web"))
    assert apps.plan_app("shop", "p", "p", desired, live_app(), allow_replace=False) is None


def test_app_update_git_members_image_and_disconnect():
    desired = App(slug="web", git=GitSource(repository="acme/web2", default_branch="main"))
    change = apps.plan_app("shop", "p", "p", desired, live_app(), allow_replace=False)
    assert change.calls[0].body == {
        "project": "p",
        "app": "app_12345678",
        "git": {"repository": "acme/web2"},
    }
    disconnect = apps.plan_app(
        "shop", "p", "p", App(slug="web", git=None), live_app(), allow_replace=False
    )
    assert disconnect.calls[0].body["git"] is None
    oci_answer = app_answer(sourceType="oci", oci={"image": "img:1"})
    del oci_answer["git"]
    (oci_live,) = apps.parse_apps([oci_answer])
    image = apps.plan_app(
        "shop", "p", "p", App(slug="web", oci=OciSource("img:2")), oci_live, allow_replace=False
    )
    assert image.calls[0].body["oci"] == {"image": "img:2"}
    assert image.diffs[0].path == "oci.image"


def test_connecting_a_repository_to_an_app_without_one():
    bare_answer = app_answer()
    del bare_answer["git"]
    (bare,) = apps.parse_apps([bare_answer])
    change = apps.plan_app(
        "shop", "p", "p", App(slug="web", git=GitSource("acme/web")), bare, allow_replace=False
    )
    assert change.calls[0].body["git"] == {"repository": "acme/web"}
    assert change.diffs[0].before is ABSENT


def test_source_type_change_is_a_replace_and_protection_turned_off_first():
    desired = App(slug="web", oci=OciSource("img:1"), delete_protection=False)
    change = apps.plan_app(
        "shop", "p", "p", desired, live_app(deleteProtection=True), allow_replace=True
    )
    assert change.action is Action.REPLACE
    assert [c.operation.name for c in change.calls] == [
        "apps.updateApp",
        "apps.deleteApp",
        "apps.createApp",
    ]
    assert change.calls[0].body["deleteProtection"] is False
    assert not any("--allow-replace" in n for n in change.notes)


def test_replace_of_a_protected_app_not_unprotected_is_blocked():
    desired = App(slug="web", oci=OciSource("img:1"))
    change = apps.plan_app(
        "shop", "p", "p", desired, live_app(deleteProtection=True), allow_replace=False
    )
    assert change.action is Action.BLOCKED and change.calls == ()
    assert change.reason == "delete_protected"


def test_pruned_app_delete_and_blocked_delete():
    delete = apps.plan_app_delete("shop", "p", live_app())
    assert delete.action is Action.DELETE
    assert delete.calls[0].permission == "app.app_12345678.delete_app"
    blocked = apps.plan_app_delete("shop", "p", live_app(deleteProtection=True))
    assert blocked.action is Action.BLOCKED and blocked.calls == ()
    assert any("deleteProtection: false" in n for n in blocked.notes)


# --- parsing live answers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "member"),
    [
        ({**PROJECT_ANSWER, "id": 12345678}, "id"),
        ({k: v for k, v in PROJECT_ANSWER.items() if k != "slug"}, "slug"),
        ([PROJECT_ANSWER], "id"),
        (None, "id"),
    ],
)
def test_a_project_answer_without_id_or_slug_strings_is_an_unexpected_response(answer, member):
    with pytest.raises(UnexpectedResponse, match=rf"projects\.getProject: .* `{member}` string"):
        projects.parse_project(answer)


@pytest.mark.parametrize(
    ("answers", "member"),
    [
        ([app_answer(), app_answer(id=["app_12345678"])], "id"),
        ([app_answer(slug="")], "slug"),
        (["app_12345678"], "id"),
    ],
)
def test_an_app_answer_without_id_or_slug_strings_is_an_unexpected_response(answers, member):
    with pytest.raises(UnexpectedResponse, match=rf"apps\.listApps: .* `{member}` string"):
        apps.parse_apps(answers)


def test_an_app_source_is_read_from_its_members_when_its_type_is_unknown():
    unknown = live_app(sourceType="nix", git=None)
    assert unknown.source_type == "git" and unknown.git is None  # as a `git: null` app
    image = live_app(sourceType="nix", oci={"image": "img:1"})
    assert image.source_type == "oci" and image.oci == OciSource("img:1")
    bare = app_answer(sourceType="nix")
    del bare["git"]
    (none,) = apps.parse_apps([bare])
    assert none.source_type is None
    # a source the reconciler cannot tell is never a replace: the image is set in place
    change = apps.plan_app(
        "shop", "p", "p", App(slug="web", oci=OciSource("img:2")), none, allow_replace=False
    )
    assert change.action is Action.UPDATE
    assert change.calls[0].body["oci"] == {"image": "img:2"}


def test_a_documented_member_of_another_type_reads_as_absent_not_as_a_traceback():
    # the client's shape check refuses these first (platform/shapes.py): a second guard
    odd = live_app(name=5, git="acme/web", oci="img:1", deleteProtection=None)
    assert (odd.name, odd.git, odd.oci, odd.delete_protection) == (None, None, None, False)
    assert odd.raw["git"] == "acme/web"  # kept as answered
    assert projects.parse_project({**PROJECT_ANSWER, "name": ["Shop"]}).name is None


class UnknownMembersPlatform:
    """Answers a project and its app with members this reconciler does not know."""

    base_url = "http://unknown-members"
    check_permissions = ()

    async def call(self, operation, body, **kw):
        return {**PROJECT_ANSWER, "region": "eu-1"}

    async def list_all(self, operation, body, **kw):
        git = {"repository": "acme/web", "defaultBranch": "main", "provider": "forge"}
        return [app_answer(tier="gold", git=git)]


def test_unknown_members_of_a_project_and_an_app_are_kept_and_reported():
    desired = Manifest(
        version=1,
        prune=Prune(),
        projects=(Project(slug="shop", name="Shop", apps=(App(slug="web", name="Web"),)),),
    )
    plan = asyncio.run(build_plan(desired, UnknownMembersPlatform(), PlanOptions()))
    assert plan.changes == ()
    (note,) = [n for n in plan.notes if "unmanaged field(s)" in n.message]
    assert "project.shop: region" in note.message
    assert "app.shop/web: git.provider, tier" in note.message
    record = LiveRecord()
    project = projects.parse_project({**PROJECT_ANSWER, "region": "eu-1"})
    projects.KIND.record(record, Location("shop"), TreePath.of("shop"), project)
    (app,) = apps.parse_apps([app_answer(tier="gold")])
    apps.KIND.record(record, Location(project.id), TreePath.of("shop"), [app])
    # the live-state digest covers them: a change to them makes a saved plan stale
    assert record.state["project shop"]["region"] == "eu-1"
    assert record.state["apps shop"][0]["tier"] == "gold"
