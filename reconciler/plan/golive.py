"""When a change reaches traffic: at apply, or only from the next deployment.

The platform API spec: changes to environment settings, variables, policies and a project slug
reach running traffic only from the next deployment (a deployment copies them when it is
created); `apps.updateApp` changes an image app's image and "deploys nothing". So a plan with
such changes is live only once each environment they touch is deployed again, which
`apply --deploy` does. Pure functions over the plan's changes; reconciler/plan/planner.py adds
the notes, and the renderers show `goes_live` per change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Literal

from reconciler.checks.capacity import LiveEnvironment
from reconciler.manifest.model import ENVIRONMENT_NAMES, UNSET, Build, Manifest, listed
from reconciler.plan.changes import Action, Change, Note
from reconciler.plan.kinds.base import address_parts

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


def environments_to_deploy(manifest: Manifest, changes: Iterable[Change]) -> list[str]:
    """`project/app/environment` of each environment a change waits for, in plan order."""
    found: dict[str, None] = {}
    for change in changes:
        if goes_live(change) != "next_deployment":
            continue
        parts = address_parts(change.address)
        for app in _apps(manifest, parts):
            names = [parts[2]] if len(parts) > 2 else list(ENVIRONMENT_NAMES)
            found.update(dict.fromkeys(f"{app}/{name}" for name in names))
    return list(found)


def _apps(manifest: Manifest, parts: Sequence[str]) -> list[str]:
    if len(parts) > 1:
        return [f"{parts[0]}/{parts[1]}"]
    project = manifest.project(parts[0])
    return [] if project is None else [f"{parts[0]}/{a.slug}" for a in listed(project.apps)]


def auto_deploying(
    manifest: Manifest, environments: Iterable[str], live_environment: LiveEnvironment
) -> set[str]:
    """Those of `environments` that deploy on every push after the plan: the manifest's
    build.autoDeploy where it sets it, else the live one."""
    desired = {
        f"{project.slug}/{app.slug}/{environment.name}": environment
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
            project, app, name = where.split("/")
            live = live_environment(project, app, name) or {}
            setting = (live.get("build") or {}).get("autoDeploy") is True
        if setting is True:
            found.add(where)
    return found


def deployment_notes(
    environments: Sequence[str],
    rolled_back: Collection[str],
    auto_deploy: Collection[str],
) -> list[Note]:
    """The plan's closing notes: what needs a deployment, and what stands in its way.

    `rolled_back` holds `project/app` of live apps with isRolledBack; `auto_deploy` the
    `project/app/environment` of environments that deploy on every push."""
    if not environments:
        return []
    notes = [
        Note(
            "info",
            "settings, variables, policies, project slugs and app sources reach traffic only "
            f"from the next deployment; to take effect, this plan needs one in: "
            f"{', '.join(environments)} (`reconciler apply --deploy` applies and deploys them)",
        )
    ]
    for environment in environments:
        app = environment.rsplit("/", 1)[0]
        if environment.endswith("/production") and app in rolled_back:
            notes.append(
                Note(
                    "warning",
                    f"app {app} is rolled back (isRolledBack): a new production deployment will "
                    "not take over production until a deployment is promoted",
                    f"app.{app}",
                )
            )
        if environment in auto_deploy:
            notes.append(
                Note(
                    "info",
                    f"{environment} deploys on every push (autoDeploy): the next push also "
                    "brings these changes live",
                    f"settings.{environment}",
                )
            )
    return notes
