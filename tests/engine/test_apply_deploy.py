"""`--deploy`: which environments roll out, how each deployment is created, and the wait."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.apply import ApplyResult, CallResult, ChangeResult, Outcome
from reconciler.apply.deploy import (
    DeployOptions,
    DeployReport,
    DeployTarget,
    deploy_targets,
    describe_outcome,
    roll_out,
)
from reconciler.errors import NotFound, ServerError
from reconciler.manifest.model import (
    App,
    Environment,
    GitSource,
    Manifest,
    OciSource,
    Project,
    Prune,
)
from reconciler.plan.changes import Action, Change, FieldDiff
from reconciler.plan.golive import environments_to_deploy
from reconciler.plan.targets import Scope
from reconciler.platform.operations import get_operation
from reconciler.report.progress import PlainDeployProgress, render_deploy_report


def done(change: Change, outcome: Outcome = Outcome.DONE) -> ChangeResult:
    return ChangeResult(
        change,
        outcome,
        (CallResult(get_operation("apps.updateApp"), outcome is Outcome.DONE, 200),),
    )


def change(address: str, kind: str, action: Action = Action.UPDATE, **extra: Any) -> Change:
    return Change(address, kind, action, {}, {}, **extra)  # type: ignore[arg-type]


MANIFEST = Manifest(
    version=1,
    prune=Prune(),
    projects=(
        Project(
            "shop",
            apps=(
                App("web", git=GitSource(repository="acme/web")),
                App("api", oci=OciSource(image="ghcr.io/acme/api:1.2")),
            ),
        ),
    ),
)


# --- which environments ----------------------------------------------------------


def test_environments_with_applied_configuration_changes_are_deployed() -> None:
    result = ApplyResult(
        (
            done(change("settings.shop/web/production", "settings")),
            done(change("variable.shop/web/production/A", "variable", Action.CREATE)),
            done(change("policies.shop/web/preview", "policies")),
            done(change("domain.shop/api/production/x.example.com", "domain", Action.CREATE)),
        )
    )
    targets, left_out = deploy_targets(result, MANIFEST)
    assert {(t.address, t.reasons) for t in targets} == {
        ("shop/web/production", ("settings", "variables")),
        ("shop/web/preview", ("policies",)),
    }
    assert left_out == ()


def test_an_environment_with_a_change_that_did_not_apply_is_not_deployed() -> None:
    result = ApplyResult(
        (
            done(change("settings.shop/web/production", "settings")),
            done(change("variable.shop/web/production/A", "variable"), Outcome.FAILED),
            done(change("settings.shop/web/preview", "settings")),
        )
    )
    targets, left_out = deploy_targets(result, MANIFEST)
    assert [t.address for t in targets] == ["shop/web/preview"]
    assert left_out == ("shop/web/production: some of its changes did not apply",)


def test_an_environment_of_an_app_whose_own_change_failed_is_not_deployed() -> None:
    image = change("app.shop/api", "app", diffs=(FieldDiff("oci.image", "a:1", "a:2"),))
    result = ApplyResult(
        (
            done(image, Outcome.FAILED),
            done(change("settings.shop/api/production", "settings")),
            done(change("settings.shop/web/production", "settings")),
        )
    )
    targets, left_out = deploy_targets(result, MANIFEST)
    assert [t.address for t in targets] == ["shop/web/production"]
    assert left_out == ("shop/api/production: some of its changes did not apply",)


def _redeployed(scope: tuple[str, ...], result: ApplyResult | None = None) -> set[tuple]:
    """What `--redeploy` deploys in MANIFEST, its api naming only preview (web names none)."""
    (shop,) = MANIFEST.projects
    web, api = shop.apps
    api = dataclasses.replace(api, environments=(Environment("preview"),))
    manifest = dataclasses.replace(MANIFEST, projects=(dataclasses.replace(shop, apps=(web, api)),))
    targets, _ = deploy_targets(result or ApplyResult(()), manifest, redeploy=Scope.parse(scope))
    return {(t.address, t.reasons, t.only_if_deployed) for t in targets}


def test_redeploy_deploys_every_environment_of_the_manifest_in_scope() -> None:
    assert _redeployed(()) == {
        ("shop/web/production", ("redeploy",), False),
        # not named by the manifest: like an image change, only if it runs already
        ("shop/web/preview", ("redeploy",), True),
        # named: deployed even if it never was; production, not named, is left alone
        ("shop/api/preview", ("redeploy",), False),
    }
    assert _redeployed(("app.shop/api",)) == {("shop/api/preview", ("redeploy",), False)}
    assert _redeployed(("settings.shop/web/production", "variable.shop/api/preview/K")) == {
        ("shop/web/production", ("redeploy",), False),
        ("shop/api/preview", ("redeploy",), False),
    }
    assert _redeployed(("project.blog",)) == set()


def test_redeploy_adds_to_the_changes_and_leaves_out_what_did_not_apply() -> None:
    result = ApplyResult(
        (
            done(change("settings.shop/web/production", "settings")),
            done(change("variable.shop/api/preview/A", "variable"), Outcome.FAILED),
        )
    )
    assert _redeployed(("app.shop/web", "app.shop/api"), result) == {
        ("shop/web/production", ("settings", "redeploy"), False),
        ("shop/web/preview", ("redeploy",), True),
    }


def test_a_new_image_and_a_new_project_slug_deploy_every_environment_already_running() -> None:
    image = change("app.shop/api", "app", diffs=(FieldDiff("oci.image", "a:1", "a:2"),))
    slug = change("project.shop", "project", reason="renamed")
    name_only = change("app.shop/other", "app", diffs=(FieldDiff("name", "A", "B"),))
    targets, _ = deploy_targets(ApplyResult((done(image), done(slug), done(name_only))), MANIFEST)
    by_address = {t.address: t for t in targets}
    assert set(by_address) == {
        "shop/api/production",
        "shop/api/preview",
        "shop/web/production",
        "shop/web/preview",
    }
    assert by_address["shop/api/production"].reasons == ("image", "project slug")
    assert not by_address["shop/web/production"].only_if_deployed
    assert by_address["shop/web/preview"].only_if_deployed


# --- rolling out -------------------------------------------------------------------


class FakeDeployments:
    """Apps and deployments in memory; a deployment walks `steps` one status per poll."""

    def __init__(
        self,
        *,
        latest: Mapping[str, str] | None = None,
        rolled_back: bool = False,
        steps: tuple[str, ...] = ("pending", "building", "ready"),
        ambiguous_create: bool = False,
    ) -> None:
        self.latest = dict(latest or {})
        self.rolled_back = rolled_back
        self.steps = steps
        self.ambiguous_create = ambiguous_create
        self.created: list[dict[str, Any]] = []
        self.polls: dict[str, int] = {}
        self.log: list[str] = []

    async def call(self, operation: str, body: Mapping[str, Any]) -> Any:
        self.log.append(operation)
        await asyncio.sleep(0)
        if operation == "apps.getApp":
            app: dict[str, Any] = {"id": "app_1", "slug": body["app"]}
            app.update(
                {"sourceType": "oci", "oci": {"image": "live:1"}}
                if body["app"] == "api"
                else {"sourceType": "git"}
            )
            return {**app, "isRolledBack": self.rolled_back}
        key = f"{body.get('project')}/{body.get('app')}/{body.get('environment')}"
        if operation == "deployments.listDeployments":
            found = self.latest.get(key)
            return [{"id": found, "status": "ready"}] if found else []
        if operation == "deployments.createDeployment":
            deployment_id = f"d_{len(self.created) + 1}"
            self.created.append(dict(body))
            self.latest[key] = deployment_id
            if self.ambiguous_create and len(self.created) == 1:
                raise ServerError(
                    "deployments.createDeployment: server error (500)",
                    operation=operation,
                    status=500,
                    ambiguous=True,
                )
            return {"deploymentId": deployment_id}
        if operation == "deployments.getDeployment":
            count = self.polls[body["deploymentId"]] = self.polls.get(body["deploymentId"], 0) + 1
            status = self.steps[min(count, len(self.steps)) - 1]
            deployment: dict[str, Any] = {"id": body["deploymentId"], "status": status}
            if status == "failed":
                deployment["error"] = {
                    "code": "build_failed",
                    "step": "building",
                    "message": "image tag fail-1 cannot be pulled",
                }
            if status == "ready":
                deployment["domains"] = ["shop.example.com"]
            return deployment
        raise AssertionError(operation)


async def _no_sleep(_: float) -> None:
    return None


def deploy(
    platform: FakeDeployments, *targets: DeployTarget, timeout: float = 60, clock: Any = None
) -> DeployReport:
    kwargs = {"clock": clock} if clock else {}
    options = DeployOptions(wait_timeout=timeout, poll_interval=0.01)
    return asyncio.run(
        roll_out(targets, platform, MANIFEST, options=options, sleep=_no_sleep, **kwargs)
    )


def target(app: str, environment: str = "production", **extra: Any) -> DeployTarget:
    return DeployTarget("shop", app, environment, reasons=("settings",), **extra)


PLANNED = (
    change("settings.shop/web/production", "settings"),
    change("settings.shop/api/preview", "settings", Action.CREATE),
    change("variable.shop/api/production/A", "variable", Action.DELETE),
    change("policies.shop/web/preview", "policies"),
    change("app.shop/api", "app", diffs=(FieldDiff("oci.image", "a:1", "a:2"),)),
    change("app.shop/web", "app", diffs=(FieldDiff("name", "A", "B"),)),
    change("app.shop/web", "app", Action.BLOCKED),
    change("project.shop", "project", reason="renamed"),
    change("domain.shop/web/preview/a.example.com", "domain", Action.CREATE),
)
ENVIRONMENTS = [f"shop/{a}/{e}" for a in ("web", "api") for e in ("production", "preview")]


@settings(max_examples=60, deadline=None)
@given(
    chosen=st.sets(st.integers(0, len(PLANNED) - 1)),
    deployed=st.sets(st.sampled_from(ENVIRONMENTS)),
)
def test_the_plan_names_exactly_the_environments_apply_deploy_deploys(
    chosen: set[int], deployed: set[str]
) -> None:
    """The plan's going-live note and `apply --deploy` follow one rule, whatever the changes
    and whichever environments ran a deployment before."""
    changes = [PLANNED[i] for i in sorted(chosen)]
    changes = list({c.address + c.action.value: c for c in changes}.values())
    named = [
        str(e) for e in environments_to_deploy(MANIFEST, changes, lambda e: str(e) in deployed)
    ]

    applied = ApplyResult(
        tuple(
            done(c, Outcome.BLOCKED if c.action is Action.BLOCKED else Outcome.DONE)
            for c in changes
        )
    )
    targets, _ = deploy_targets(applied, MANIFEST)
    platform = FakeDeployments(latest={where: "d_before" for where in deployed})
    deploy(platform, *targets)
    created = [f"{b['project']}/{b['app']}/{b['environment']}" for b in platform.created]

    assert sorted(named) == sorted(created)
    assert len(set(named)) == len(named)


def test_an_image_app_deploys_the_manifest_image() -> None:
    platform = FakeDeployments()
    report = deploy(platform, target("api"))
    assert platform.created == [
        {
            "project": "shop",
            "app": "api",
            "environment": "production",
            "image": {"dockerImage": "ghcr.io/acme/api:1.2"},
        }
    ]
    [outcome] = report.outcomes
    assert (outcome.status, outcome.domains) == ("ready", ("shop.example.com",))
    assert report.succeeded


def test_a_repository_app_reruns_the_latest_deployment_of_the_environment() -> None:
    platform = FakeDeployments(latest={"shop/web/production": "d_old"})
    deploy(platform, target("web"))
    assert platform.created[0]["deployment"] == {"deploymentId": "d_old"}


def test_a_repository_app_without_deployments_builds_the_default_branch() -> None:
    platform = FakeDeployments()
    deploy(platform, target("web"))
    assert platform.created[0]["git"] == {}


def test_a_preview_deployed_only_for_an_app_level_change_needs_an_earlier_deployment() -> None:
    platform = FakeDeployments()
    report = deploy(platform, target("web", "preview", only_if_deployed=True))
    assert platform.created == []
    assert report.outcomes == ()


def test_a_failed_deployment_reports_code_step_and_message() -> None:
    platform = FakeDeployments(steps=("pending", "building", "failed"))
    report = deploy(platform, target("api"))
    [outcome] = report.outcomes
    assert not report.succeeded
    assert describe_outcome(outcome) == (
        "shop/api/production (d_1): failed: build_failed at step building: "
        "image tag fail-1 cannot be pulled"
    )
    assert "Deploy failed! 1 of 1 deployment(s) did not go live." in render_deploy_report(report)


def test_intermediate_statuses_are_only_shown_never_interpreted() -> None:
    platform = FakeDeployments(steps=("some-new-status", "awaiting_approval", "superseded"))
    report = deploy(platform, target("api"))
    assert report.outcomes[0].status == "superseded"
    assert platform.polls == {"d_1": 3}


def test_waiting_stops_at_the_timeout() -> None:
    now = [0.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    platform = FakeDeployments(steps=("building",))
    options = DeployOptions(wait_timeout=10, poll_interval=2)
    report = asyncio.run(
        roll_out(
            [target("api")],
            platform,
            MANIFEST,
            options=options,
            sleep=sleep,
            clock=lambda: now[0],
        )
    )
    [outcome] = report.outcomes
    assert outcome.status == "timed out"
    assert outcome.error_message == "still building when --wait-timeout ran out"
    assert platform.polls["d_1"] == 5
    assert not report.succeeded


def test_an_ambiguous_create_is_found_by_rereading_and_not_created_twice() -> None:
    platform = FakeDeployments(ambiguous_create=True, latest={"shop/web/production": "d_old"})
    report = deploy(platform, target("web"))
    assert len(platform.created) == 1
    assert report.outcomes[0].deployment_id == "d_1"
    assert report.succeeded


def test_a_rolled_back_app_is_warned_about() -> None:
    platform = FakeDeployments(rolled_back=True)
    report = deploy(platform, target("api"), target("api", "preview"))
    assert report.warnings == (
        "app.shop/api is rolled back: its new production deployment will not take over "
        "production until a deployment is promoted (deployments.promoteDeployment)",
    )
    assert platform.log.count("apps.getApp") == 1
    assert report.succeeded


def test_an_environment_that_cannot_be_read_does_not_stop_the_others() -> None:
    class Broken(FakeDeployments):
        async def call(self, operation: str, body: Mapping[str, Any]) -> Any:
            if operation == "deployments.listDeployments" and body["environment"] == "preview":
                raise NotFound(
                    'deployments.listDeployments: environment "preview" not found (404)',
                    operation=operation,
                    status=404,
                )
            return await super().call(operation, body)

    lines: list[str] = []
    platform = Broken()
    report = asyncio.run(
        roll_out(
            [
                target("api"),
                target("api", "preview"),
                target("web", "preview", only_if_deployed=True),
            ],
            platform,
            MANIFEST,
            options=DeployOptions(poll_interval=0),
            observer=PlainDeployProgress(lines.append),
            sleep=_no_sleep,
        )
    )
    assert [(o.target.address, o.status) for o in report.outcomes] == [
        ("shop/api/preview", "error"),
        ("shop/web/preview", "error"),
        ("shop/api/production", "ready"),
    ]
    assert lines[0] == "Deploying 3 environment(s); waiting for each to finish."
    assert (
        'shop/api/preview: error: deployments.listDeployments: environment "preview" not found (404)'
        in lines
    )
    assert not report.succeeded


class _AnsweringOddly(FakeDeployments):
    """`FakeDeployments`, but `operation` answers `answer` (a platform of another make: the
    client refuses such an answer before it gets here)."""

    def __init__(self, operation: str, answer: Any) -> None:
        super().__init__()
        self.operation, self.answer = operation, answer

    async def call(self, operation: str, body: Mapping[str, Any]) -> Any:
        found = await super().call(operation, body)
        return self.answer if operation == self.operation else found


@pytest.mark.parametrize("operation", ["apps.getApp", "deployments.createDeployment"])
@pytest.mark.parametrize("answer", [None, [], "d_1"])
def test_an_answer_that_is_no_object_fails_that_rollout_naming_the_operation(
    operation: str, answer: Any
) -> None:
    (outcome,) = deploy(_AnsweringOddly(operation, answer), target("web")).outcomes
    assert outcome.status == "error"
    assert outcome.error_message == f"{operation}: the platform returned `data` that is not an object"
