"""build_plan over the in-process emulator: fewest reads, dependencies, targets, digests."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from reconciler.emulator.app import EmulatorConfig, create_app
from reconciler.errors import ReconcilerError, UsageError
from reconciler.manifest.model import (
    App,
    Domain,
    Environment,
    FromEnv,
    GitSource,
    LiteralValue,
    Manifest,
    Project,
    Prune,
    Runtime,
    SourceFile,
    Variable,
)
from reconciler.plan.changes import Action
from reconciler.plan.planner import PlanOptions, build_plan, manifest_digest
from reconciler.plan.targets import Scope, parse_target
from reconciler.platform.client import PlatformClient

KEY = "engine-test-key-0001"


class RecordingClient(PlatformClient):
    """The real client, remembering every (operation, body) it sent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[str, str]] = []

    async def call(self, operation: str, body: Mapping[str, Any], **kw: Any) -> Any:
        self.sent.append((operation, repr(sorted(body.items()))))
        return await super().call(operation, body, **kw)

    async def list_all(self, operation: str, body: Mapping[str, Any], **kw: Any) -> Any:
        self.sent.append((operation, repr(sorted(body.items()))))
        return await super().list_all(operation, body, **kw)


@pytest.fixture
def platform():
    """A factory: each client talks to a fresh in-process emulator."""

    def connect() -> RecordingClient:
        app = create_app(EmulatorConfig(dev_key=KEY))
        transport = httpx.ASGITransport(app=app)
        return RecordingClient("http://local", KEY, transport=transport, parallelism=4)

    return connect


def run(coroutine):
    return asyncio.run(coroutine)


async def seed(client: PlatformClient, apps: int, *, project: str = "shop") -> None:
    await client.call("projects.createProject", {"name": project, "slug": project})
    for index in range(apps):
        slug = f"app-{index:03d}"
        await client.call(
            "apps.createApp",
            {"project": project, "name": slug, "slug": slug, "git": {"repository": "acme/x"}},
        )
        await client.call(
            "environments.updateSettings",
            {"project": project, "app": slug, "environment": "production", "port": 3000},
        )


def full_app(slug: str, *, port: int = 3000) -> App:
    production = Environment(
        "production",
        runtime=Runtime(port=port),
        variables=(Variable("A", LiteralValue("1"), "recoverable"),),
        domains=(Domain(f"{slug}.example.com"),),
        policies=(),
    )
    return App(slug=slug, environments=(production, Environment("preview", variables=())))


def manifest(*projects: Project, prune: Prune | None = None) -> Manifest:
    return Manifest(version=1, prune=prune or Prune(), projects=projects)


def plan_with(platform, desired: Manifest, apps: int = 0, **options: Any):
    async def go():
        async with platform() as client:
            await seed(client, apps)
            client.sent.clear()
            plan = await build_plan(desired, client, PlanOptions(**options))
            return plan, client.sent

    return run(go())


def test_reads_are_minimal_never_repeated_and_constant_per_app(platform):
    def reads_for(count: int):
        project = Project(slug="shop", apps=tuple(full_app(f"app-{i:03d}") for i in range(count)))
        _, sent = plan_with(platform, manifest(project), apps=count)
        assert len(sent) == len(set(sent)), "something was read twice"
        return Counter(operation for operation, _ in sent)

    small, large = reads_for(2), reads_for(6)
    per_project = ("projects.getProject", "apps.listApps")
    for operation in per_project:
        assert small[operation] == large[operation] == 1, operation
    # the project's domains: one listing its environments share; and, as each app adds a new
    # host, one page of the whole workspace's domains, which (empty here) answers every
    # host's lookup at once
    assert small["domains.listDomains"] == large["domains.listDomains"] == 2
    per_app = {
        op: n / 2 for op, n in small.items() if op not in (*per_project, "domains.listDomains")
    }
    assert per_app == {
        op: n / 6 for op, n in large.items() if op not in (*per_project, "domains.listDomains")
    }
    # per app: one listEnvironments; per managed environment only what it manages
    assert per_app == {
        "environments.listEnvironments": 1,
        "environments.listEnvironmentVariables": 2,
        "gateway.listPolicies": 1,
    }


def test_what_the_kinds_keep_while_planning_belongs_to_one_plan(platform, monkeypatch):
    # kinds are shared by every plan: a secret missing from one, or a domain it planned, is
    # never reported by the next one
    monkeypatch.delenv("ENGINE_MISSING_SECRET", raising=False)
    secret = Variable("TOKEN", FromEnv("ENGINE_MISSING_SECRET"), "writeonly")
    production = Environment("production", variables=(secret,), domains=(Domain("web.test"),))
    web = App(slug="web", environments=(production,))
    first, _ = plan_with(platform, manifest(Project(slug="shop", apps=(web,))))
    token = "variable.shop/web/production/TOKEN"
    assert list(first.declared_secrets) == [token]
    assert [n.subjects for n in first.notes if "not available" in n.message] == [
        (f"fromEnv ENGINE_MISSING_SECRET ({token})",)
    ]
    assert "domain.shop/web/production/web.test" in {c.address for c in first.changes}
    literal = Environment(
        "production", variables=(Variable("A", LiteralValue("1"), "recoverable"),)
    )
    plain = App(slug="web", environments=(literal,))
    second, _ = plan_with(platform, manifest(Project(slug="shop", apps=(plain,))))
    assert second.declared_secrets == {}
    assert not [n for n in second.notes if "not available" in n.message]
    assert {c.kind for c in second.changes} == {"app", "variable"}  # no domain of the first


def test_nothing_under_an_object_that_does_not_exist_is_read(platform):
    project = Project(slug="shop", apps=(full_app("web"),))
    plan, sent = plan_with(platform, manifest(project), apps=0)
    assert [op for op, _ in sent] == ["projects.getProject", "apps.listApps", "domains.getDomain"]
    actions = {c.address: c.action for c in plan.changes}
    assert actions["app.shop/web"] is Action.CREATE
    new = Project(slug="fresh", apps=(full_app("web"),))
    _, sent = plan_with(platform, manifest(new))
    assert [op for op, _ in sent] == ["projects.getProject", "domains.getDomain"]


def test_permissions_are_id_specific_where_ids_are_known(platform):
    project = Project(slug="shop", name="Renamed", apps=(full_app("app-000", port=8080),))
    plan, _ = plan_with(platform, manifest(project), apps=1)
    settings = next(c for c in plan.changes if c.kind == "settings")
    assert settings.calls[0].permission.startswith("environment.env_")
    assert any(
        p.startswith("project.proj_") and p.endswith(".update_project") for p in plan.permissions
    )
    assert "app.*.read_app" in plan.permissions  # listApps only takes the wildcard
    assert list(plan.permissions) == sorted(plan.permissions)


def test_a_plan_whose_reads_met_a_404_lists_the_permission_of_the_base_url_check(platform):
    """Before believing a 404 the client lists one project (`project.*.read_project`); apply
    re-reads the same state and meets the same 404, so its key needs that permission too. Here
    only the lookup of the new host answers 404 (`environment.*.read_domain`)."""
    project = Project(slug="shop", apps=(full_app("app-000"),))
    adds_a_host, _ = plan_with(platform, manifest(project), apps=1)
    assert [c.address for c in adds_a_host.changes if c.kind == "domain"] == [
        "domain.shop/app-000/production/app-000.example.com"
    ]
    assert "project.*.read_project" in adds_a_host.permissions
    # no 404 met: every read names an object by its id, and the wildcard is not asked for
    renamed = Project(slug="shop", name="Renamed", apps=(App(slug="app-000"),))
    no_404, _ = plan_with(platform, manifest(renamed), apps=1)
    assert no_404.changes and "project.*.read_project" not in no_404.permissions


def test_live_digest_follows_managed_state_and_manifest_digest_follows_sources(platform):
    project = Project(slug="shop", apps=(full_app("app-000"),))
    desired = manifest(project)

    async def go():
        async with platform() as client:
            await seed(client, 1)
            first = await build_plan(desired, client, PlanOptions())
            again = await build_plan(desired, client, PlanOptions())
            await client.call(
                "environments.setEnvironmentVariables",
                {"project": "shop", "app": "app-000", "environment": "preview",
                 "variables": [{"key": "X", "value": "1"}]},
            )  # fmt: skip
            changed = await build_plan(desired, client, PlanOptions())
            return first, again, changed

    first, again, changed = run(go())
    assert first.live_digest == again.live_digest
    assert changed.live_digest != first.live_digest
    assert first.metadata["base_url"] == "http://local"
    assert first.metadata["fingerprint_mode"] == "presence"
    one = Manifest(1, Prune(), (), sources=(SourceFile("a.yaml", "00"),))
    two = Manifest(1, Prune(), (), sources=(SourceFile("a.yaml", "01"),))
    assert manifest_digest(one, PlanOptions()) != manifest_digest(two, PlanOptions())
    assert manifest_digest(one, PlanOptions()) != manifest_digest(
        one, PlanOptions(targets=("project.x",))
    )
    assert manifest_digest(one, PlanOptions()) == manifest_digest(one, PlanOptions(max_deletes=99))


def test_targets_keep_subtrees_and_what_they_depend_on(platform):
    project = Project(slug="shop", apps=(full_app("web"), full_app("api")))
    plan, sent = plan_with(platform, manifest(project), targets=("settings.shop/web/production",))
    assert [c.address for c in plan.changes] == ["app.shop/web", "settings.shop/web/production"]
    assert any("outside the targets" in n.message for n in plan.notes)
    assert "domains.getDomain" not in [op for op, _ in sent]
    assert not any("matches nothing" in n.message for n in plan.notes)
    typo, _ = plan_with(platform, manifest(project), targets=("app.shop/wbe",))
    assert typo.changes == ()
    assert [n.severity for n in typo.notes if "app.shop/wbe matches nothing" in n.message] == [
        "warning"
    ]


def test_max_deletes_and_pruned_apps(platform):
    # `apps: {}`: present and empty, so authoritative; its deletions still meet the threshold
    desired = manifest(Project(slug="shop", apps=()), prune=Prune(apps=True))
    plan, _ = plan_with(platform, desired, apps=3, max_deletes=2)
    assert [c.action for c in plan.changes] == [Action.DELETE] * 3
    assert any("--max-deletes" in n.message and n.severity == "warning" for n in plan.notes)
    assert plan.max_deletes == 2


def test_a_project_without_an_apps_block_reads_and_prunes_none_of_its_apps(platform):
    desired = manifest(Project(slug="shop", name="shop"), prune=Prune(apps=True))
    plan, sent = plan_with(platform, desired, apps=3)
    assert plan.changes == () and plan.notes == ()
    assert [op for op, _ in sent] == ["projects.getProject"]


def test_a_pinned_project_id_that_does_not_exist_is_an_error(platform):
    desired = manifest(Project(slug="shop", id="proj_doesnotexist"))
    with pytest.raises(ReconcilerError, match="proj_doesnotexist"):
        plan_with(platform, desired)


def test_unmanaged_git_members_and_unmanaged_envs_plan_nothing(platform):
    project = Project(slug="shop", apps=(App(slug="app-000", git=GitSource()),))
    plan, sent = plan_with(platform, manifest(project), apps=1)
    assert plan.changes == ()
    assert [op for op, _ in sent] == ["projects.getProject", "apps.listApps"]


# --- targets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "address", "covered"),
    [
        ("project.shop", "variable.shop/web/production/K", True),
        ("project.shop", "project.shop", True),
        ("project.shop", "app.shop2/web", False),
        ("app.shop/web", "domain.shop/web/preview/a.example.com", True),
        ("app.shop/web", "app.shop/webx", False),
        ("app.shop/web", "project.shop", False),
        ("variable.shop/web", "variable.shop/web/preview/K", True),
        ("variable.shop/web/production/K", "variable.shop/web/production/K2", False),
        ("settings.shop/web/production", "variable.shop/web/production/K", False),
    ],
)
def test_target_coverage(target, address, covered):
    assert Scope.parse((target,)).covers(address) is covered


@pytest.mark.parametrize("bad", ["shop", "apps.shop/web", "app.", "project.a/b", "app.shop//web"])
def test_invalid_targets_are_usage_errors(bad):
    with pytest.raises(UsageError):
        parse_target(bad)


def test_reads_follow_targets():
    scope = Scope.parse(("variable.shop/web/production",))
    assert scope.reads("shop") and scope.reads("shop", "web")
    assert scope.reads("shop", "web", "production", kind="variable")
    assert not scope.reads("shop", "web", "production", kind="settings")
    assert not scope.reads("shop", "api") and not scope.reads("blog")
    assert Scope().reads("anything", kind="domain")


class GarbageClient:
    """Answers getProject properly and listApps with apps that have no id."""

    base_url = "http://garbage"
    check_permissions = ()

    async def call(self, operation, body, **kw):
        return {"id": "proj_12345678", "slug": "shop", "name": "Shop"}

    async def list_all(self, operation, body, **kw):
        return [{"slug": "web", "name": "Web"}]


def test_an_unexpected_answer_is_reported_not_crashed_on():
    from reconciler.errors import UnexpectedResponse

    desired = manifest(Project(slug="shop", apps=(App(slug="web"),)))
    with pytest.raises(UnexpectedResponse, match=r"apps\.listApps.*`id`"):
        run(build_plan(desired, GarbageClient(), PlanOptions()))
