"""When a change reaches traffic: at apply, or only from the next deployment.

The platform API spec: changes to environment settings, variables, policies and a project slug
reach running traffic only from the next deployment (a deployment copies them when it is
created); `apps.updateApp` changes an image app's image and "deploys nothing". So a plan with
such changes is live only once each environment they touch is deployed again, which
`apply --deploy` does.

Which environments those are is decided here, once, for both the plan's closing note and
`apply --deploy` (reconciler/apply/deploy.py): `rollouts` says what one change asks for (its
kind's `rollout_reason`), `wanted` merges them per environment, and `deploys` is the last
word, given whether the environment has a deployment already. A change to an environment
deploys it; a change above one (an app's image, a project's slug) deploys production, and
preview only if preview has a deployment already (one that never ran is left alone). The
planner reads that fact for the note; apply reads it again when it deploys.
reconciler/plan/planner.py adds the notes, and the renderers show `goes_live` per change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from reconciler.address import Address, TreePath
from reconciler.checks.capacity import LiveEnvironment
from reconciler.json_types import JsonObject
from reconciler.manifest.model import ENVIRONMENT_NAMES, UNSET, Build, Manifest, listed
from reconciler.plan import kinds
from reconciler.plan.changes import Action, Change, Note
from reconciler.plan.kinds.base import Location
from reconciler.platform.protocol import Platform

GoesLive = Literal["at_apply", "next_deployment"]
NEXT_DEPLOYMENT_NOTE = "reaches traffic only from the next deployment of this environment"
_SOURCE_FIELDS = ("oci.image", "git")

def goes_live(change: Change) -> GoesLive:
    """`next_deployment` for what running deployments keep their copy of until the next one."""
    if change.action in (Action.BLOCKED, Action.REPLACE) or change.kind == "domain":
        return "at_apply"
    if change.kind in ("settings", "variable", "policies"):
        return "next_deployment"
    paths = [diff.path for diff in change.diffs] if change.action is Action.UPDATE else []
    if change.kind == "project" and "slug" in paths:
        return "next_deployment"
    if change.kind == "app" and any(p.startswith(_SOURCE_FIELDS) for p in paths):
        return "next_deployment"
    return "at_apply"


def change_note(change: Change) -> str | None:
    """The sentence a reviewer reads under a change that waits for a deployment."""
    if goes_live(change) != "next_deployment":
        return None
    if change.kind == "project":
        return "reaches traffic only from the next deployment of each of the project's apps"
    if change.kind == "app":
        return "the new source is used only from the app's next deployment"
    return NEXT_DEPLOYMENT_NOTE


@dataclass(frozen=True)
class Rollout:
    """One environment a change (or `--redeploy`) asks to deploy, and why."""

    environment: TreePath
    reason: str
    """`settings`, `variables`, `policies`, `image`, `project slug`, `redeploy`..."""
    only_if_deployed: bool = False
    """Asked for from above the environment (an app's image, a project's slug): a preview
    environment that never had a deployment is left alone."""


@dataclass(frozen=True)
class Wanted:
    """An environment to deploy, with every reason given for it."""

    environment: TreePath
    reasons: tuple[str, ...]
    only_if_deployed: bool
    """True when every reason came from above the environment."""


def rollouts(change: Change, manifest: Manifest | None) -> list[Rollout]:
    """The environments a change that applied needs deployed, as its kind says: an environment's
    own change deploys it; an app's deploys its production, and its preview if that has a
    deployment already; a project's does so for each of the manifest's apps of the project."""
    reason = kinds.get(change.kind).rollout_reason(change)
    if reason is None:
        return []
    environment = Address.parse(change.address).environment
    if environment.depth == 3:
        return [Rollout(environment, reason)]
    return [
        Rollout(app.child(name), reason, only_if_deployed=name != "production")
        for app in _apps(manifest, environment)
        for name in ENVIRONMENT_NAMES
    ]


def wanted(asked: Iterable[Rollout]) -> list[Wanted]:
    """The rollouts merged per environment, in the order first asked."""
    reasons: dict[TreePath, list[str]] = {}
    conditional: dict[TreePath, bool] = {}
    for rollout in asked:
        found = reasons.setdefault(rollout.environment, [])
        if rollout.reason not in found:
            found.append(rollout.reason)
        conditional[rollout.environment] = (
            conditional.get(rollout.environment, True) and rollout.only_if_deployed
        )
    return [Wanted(key, tuple(why), conditional[key]) for key, why in reasons.items()]


def deploys(only_if_deployed: bool, *, has_deployment: bool) -> bool:
    """Whether a wanted environment is deployed: always, unless only a change above it asked
    and it has never had a deployment."""
    return has_deployment or not only_if_deployed


def planned_rollouts(manifest: Manifest, changes: Iterable[Change]) -> list[Wanted]:
    """What `apply --deploy` will want once every change of a plan has applied (a blocked
    deletion changes nothing)."""
    return wanted(
        rollout
        for change in changes
        if change.action is not Action.BLOCKED
        for rollout in rollouts(change, manifest)
    )


def environments_to_deploy(
    manifest: Manifest,
    changes: Iterable[Change],
    has_deployment: Callable[[TreePath], bool],
) -> list[TreePath]:
    """Each environment `apply --deploy` deploys after the plan, in plan order;
    `has_deployment` says whether an environment has a deployment already."""
    return [
        item.environment
        for item in planned_rollouts(manifest, changes)
        if deploys(item.only_if_deployed, has_deployment=has_deployment(item.environment))
    ]


async def latest_deployment(platform: Platform, environment: Location) -> JsonObject | None:
    """The newest deployment of an environment (slugs or IDs), None when it has none."""
    found: object = await platform.call("deployments.listDeployments", environment.body(limit=1))
    newest = found[0] if isinstance(found, list) and found else None
    return newest if isinstance(newest, Mapping) else None


def _apps(manifest: Manifest | None, above: TreePath) -> list[TreePath]:
    """The app at `above`, or the manifest's apps of the project at `above`."""
    if above.depth > 1:
        return [above]
    project = manifest.project(above.leaf) if manifest is not None else None
    return [] if project is None else [above.child(a.slug) for a in listed(project.apps)]


def auto_deploying(
    manifest: Manifest, environments: Iterable[TreePath], live_environment: LiveEnvironment
) -> set[TreePath]:
    """Those of `environments` that deploy on every push after the plan: the manifest's
    build.autoDeploy where it sets it, else the live one."""
    desired = {
        TreePath.of(project.slug, app.slug, environment.name): environment
        for project in manifest.projects
        for app in listed(project.apps)
        for environment in app.environments
    }
    found = set()
    for where in environments:
        environment = desired.get(where)
        build = environment.build if environment is not None else UNSET
        setting = build.auto_deploy if isinstance(build, Build) else UNSET
        if setting is UNSET:
            live = live_environment(*where.slugs) or {}
            setting = (live.get("build") or {}).get("autoDeploy") is True
        if setting is True:
            found.add(where)
    return found


def deployment_notes(
    environments: Sequence[TreePath],
    rolled_back: Collection[TreePath],
    auto_deploy: Collection[TreePath],
) -> list[Note]:
    """The plan's closing notes: what needs a deployment, and what stands in its way.

    `rolled_back` holds the live apps with isRolledBack; `auto_deploy` the environments that
    deploy on every push."""
    if not environments:
        return []
    notes = [
        Note(
            "info",
            "settings, variables, policies, project slugs and app sources reach traffic only "
            f"from the next deployment; to take effect, this plan needs one in: "
            f"{', '.join(map(str, environments))} (`reconciler apply --deploy` applies and "
            "deploys them)",
            subjects=tuple(map(str, environments)),
        )
    ]
    for environment in environments:
        app = environment.parent
        if environment.leaf == "production" and app in rolled_back:
            notes.append(
                Note(
                    "warning",
                    f"app {app} is rolled back (isRolledBack): a new production deployment will "
                    "not take over production until a deployment is promoted",
                    str(Address("app", app)),
                    subjects=(str(app),),
                    group="{count} apps are rolled back (isRolledBack): a new production "
                    "deployment will not take over their production until a deployment is "
                    "promoted: {subjects}",
                )
            )
        if environment in auto_deploy:
            notes.append(
                Note(
                    "info",
                    f"{environment} deploys on every push (autoDeploy): the next push also "
                    "brings these changes live",
                    str(Address("settings", environment)),
                    subjects=(str(environment),),
                    group="{count} environments deploy on every push (autoDeploy): the next "
                    "push also brings these changes live: {subjects}",
                )
            )
    return notes
