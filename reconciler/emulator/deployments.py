"""deployments.* operations; statuses and the production pointer live in `lifecycle`."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from reconciler.emulator import lifecycle
from reconciler.emulator.context import LIST_FIELDS, REF, Call, Operation, data, listing
from reconciler.emulator.environments import DEFAULT_BUILD, DEFAULT_RUNTIME
from reconciler.emulator.errors import invalid, precondition
from reconciler.emulator.lifecycle import STATUSES, available_actions, newer, plan_for
from reconciler.emulator.pagination import paginate
from reconciler.emulator.store import VALUE_DIGEST, Obj, Store, public, value_digest
from reconciler.emulator.validation import REPOSITORY, REPOSITORY_HINT, Arr, Str
from reconciler.emulator.validation import Obj as ObjSpec

HOST_SUFFIX = "platform-emulator.test"
# the spec's "Runtime of a deployment": the environment's runtime also holds openapiSpecPath
# ("stored but unused"), which a deployment does not show (its snapshot keeps it)
DEPLOYMENT_RUNTIME_FIELDS = (
    "vCpus",
    "memoryMib",
    "storageMib",
    "port",
    "command",
    "shutdownSignal",
    "upstreamProtocol",
    "healthcheck",
)


# ---- rendering --------------------------------------------------------------------------------


def render_deployment(store: Store, deployment: Obj) -> Obj:
    app = store.apps[deployment["_appId"]]
    project = store.projects[deployment["_projectId"]]
    env = store.environments[deployment["_envId"]]
    shown = public(deployment)
    is_current = app.get("currentDeploymentId") == deployment["id"]
    shown.update(
        isCurrent=is_current,
        environment=env["slug"],
        app=app["slug"],
        project=project["slug"],
        availableActions=available_actions(store, deployment),
        domains=_domains(store, deployment, app, project, is_current),
    )
    return shown


def served_domains(store: Store, deployment: Obj) -> list[str]:
    """The host names a deployment answers on (its `domains`), for the gateway."""
    app = store.apps[deployment["_appId"]]
    project = store.projects[deployment["_projectId"]]
    is_current = app.get("currentDeploymentId") == deployment["id"]
    return _domains(store, deployment, app, project, is_current)


def _domains(store: Store, deployment: Obj, app: Obj, project: Obj, is_current: bool) -> list[str]:
    hosts = [f"{app['slug']}-{deployment['id'][2:10]}-{project['slug']}.{HOST_SUFFIX}"]
    serves_env = is_current
    if deployment["_kind"] != "production" and deployment["status"] == "ready":
        newest = max(
            (
                d
                for d in store.deployments_of("_envId", deployment["_envId"])
                if d["status"] == "ready"
            ),
            key=lambda d: (d["createdAt"], d["_seq"]),
        )
        serves_env = newest["id"] == deployment["id"]
    if serves_env:
        if is_current:
            hosts.append(f"{app['slug']}-{project['slug']}.{HOST_SUFFIX}")
        hosts += sorted(
            d["domain"]
            for d in store.domains_of("environmentId", deployment["_envId"])
            if d["status"] == "verified"
        )
    return hosts


# ---- creating ---------------------------------------------------------------------------------


def create_deployment(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    git = body.get("git")
    if git is not None and "repository" in git and "commitSha" not in git:
        raise invalid("git.repository", "a fork deployment needs git.commitSha")
    project, app, env = call.env_target(body, "create_deployment")
    store = call.store
    source = _source(call, app, body)
    deployment_id = store.new_id("d_")
    snapshot = copy.deepcopy(
        {
            "runtime": env.get("runtime") or DEFAULT_RUNTIME,
            "build": env.get("build") or DEFAULT_BUILD,
            "regions": env["regions"],
            "variables": _variable_digests(store.variables.get(env["id"], {})),
            "policies": store.policies.get(env["id"], []),
        }
    )
    # a newer deployment replaces ones of the same environment that have not started yet
    for other in lifecycle.running_deployments(store):
        if other["_envId"] == env["id"] and other["status"] == "pending":
            other["status"] = "superseded"
            other["updatedAt"] = call.now
    kind = "git" if "git" in source else "image"
    plan, outcome = plan_for(store, kind, source, snapshot)
    deployment: Obj = {
        "id": deployment_id,
        "status": "pending",
        **source,
        "regions": [r["name"] for r in snapshot["regions"]],
        "runtime": _deployment_runtime(snapshot["runtime"]),
        "createdAt": call.now,
        "_appId": app["id"],
        "_projectId": project["id"],
        "_envId": env["id"],
        "_kind": env["kind"],
        "_startedAt": call.now,
        "_plan": plan,
        "_outcome": outcome,
        "_snapshot": snapshot,
        "_seq": store.next_seq(),
    }
    store.add_deployment(deployment)
    lifecycle.started(store, deployment)
    call.touch()
    return data({"deploymentId": deployment_id}, 201)


def _variable_digests(variables: dict[str, Obj]) -> dict[str, str]:
    """Name -> SHA-256 of the value a deployment runs with, so that `GET /_emulator/state` shows
    running deployments keeping old values until the next deployment. Digests, not values: the
    state file never holds a write-only value, and the API never shows a snapshot."""
    return {name: _digest(variables[name]) for name in sorted(variables)}


def _digest(variable: Obj) -> str:
    # state files written before digests were kept hold the value instead
    return variable.get(VALUE_DIGEST) or value_digest(variable["value"])


def _deployment_runtime(runtime: Obj) -> Obj:
    return {
        name: copy.deepcopy(runtime[name]) for name in DEPLOYMENT_RUNTIME_FIELDS if name in runtime
    }


def _source(call: Call, app: Obj, body: dict[str, Any]) -> Obj:
    """The git or docker member of the new deployment; 412 when the app cannot deploy it."""
    if "deployment" in body:
        earlier = call.store.deployment(body["deployment"]["deploymentId"])
        if earlier["_appId"] != app["id"]:
            raise precondition("the deployment to rerun belongs to another app", "deployment")
        if "docker" in earlier:
            return {"docker": dict(earlier["docker"])}
        _require_git(app)
        return {"git": dict(earlier["git"])}
    if "image" in body:
        if app.get("sourceType") != "oci":
            raise precondition("image deployments need an image (oci) app", "image")
        return {"docker": {"image": body["image"]["dockerImage"]}}
    _require_git(app)
    git = body["git"]
    sha = git.get("commitSha")
    branch = git.get("branch")
    if sha is None:
        branch = branch or app["git"]["defaultBranch"]
        seed = f"{app['git']['repository']}@{branch}@{call.store.next_seq()}"
        sha = hashlib.sha1(seed.encode()).hexdigest()
    return {"git": {"commitSha": sha, **({"branch": branch} if branch else {})}}


def _require_git(app: Obj) -> None:
    if app.get("sourceType") != "git":
        raise precondition("repository deployments need a repository (git) app", "git")
    if "git" not in app:
        raise precondition("no repository is connected to the app; connect one first", "git")


# ---- reading and acting -----------------------------------------------------------------------


def _resolve(call: Call, body: dict[str, Any], action: str) -> Obj:
    # these operations do not list 403: a key without the permission sees 404
    call.precheck("environment", action, forbidden=False)
    deployment = call.store.deployment(body["deploymentId"])
    call.require("environment", action, deployment["_envId"], forbidden=False)
    return deployment


def get_deployment(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return data(render_deployment(call.store, _resolve(call, body, "read_deployment")))


def list_deployments(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    if "app" in body and "project" not in body:
        raise invalid("app", "the app filter needs project")
    if "environment" in body and not ("project" in body and "app" in body):
        raise invalid("environment", "the environment filter needs project and app")
    call.require("environment", "read_deployment")
    store = call.store
    filters: dict[str, Any] = {"status": sorted(set(body.get("status", [])))}
    if "project" in body:
        project = store.project(body["project"])
        filters["project"] = project["id"]
        if "app" in body:
            app = store.app(project, body["app"])
            filters["app"] = app["id"]
            if "environment" in body:
                filters["environment"] = store.environment(app, body["environment"])["id"]
    items = [
        d
        for d in _candidates(store, filters)
        if d["_projectId"] == filters.get("project", d["_projectId"])
        and d["_appId"] == filters.get("app", d["_appId"])
        and d["_envId"] == filters.get("environment", d["_envId"])
        and (not filters["status"] or d["status"] in filters["status"])
    ]
    page, pagination = paginate(
        "deployments.listDeployments",
        body,
        filters,
        items,
        lambda d: (-d["createdAt"], -d["_seq"]),
    )
    return listing([render_deployment(store, d) for d in page], pagination)


def _candidates(store: Store, filters: dict[str, Any]) -> list[Obj]:
    """The deployments of the narrowest filter given, from the store's indexes (each still
    checked against every filter)."""
    if "environment" in filters:
        return store.deployments_of("_envId", filters["environment"])
    if "app" in filters:
        return store.deployments_of("_appId", filters["app"])
    if "project" in filters:
        return [
            d
            for app in store.project_apps(filters["project"])
            for d in store.deployments_of("_appId", app["id"])
        ]
    return list(store.deployments.values())


def _production_ready(deployment: Obj, verb: str) -> None:
    if deployment["_kind"] != "production":
        raise precondition(f"only production deployments can be {verb}", "deploymentId")
    if deployment["status"] != "ready":
        raise precondition(
            f"only ready deployments can be {verb} (this one is {deployment['status']})",
            "deploymentId",
        )


def promote_deployment(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    deployment = _resolve(call, body, "promote_deployment")
    _production_ready(deployment, "promoted")
    app = call.store.apps[deployment["_appId"]]
    if app.get("currentDeploymentId") != deployment["id"] or app["isRolledBack"]:
        app["currentDeploymentId"] = deployment["id"]
        app["isRolledBack"] = False
        app["updatedAt"] = call.now
        call.touch()
    return data({}, 202)


def rollback_deployment(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    deployment = _resolve(call, body, "rollback_deployment")
    _production_ready(deployment, "rolled back to")
    app = call.store.apps[deployment["_appId"]]
    current = call.store.deployments.get(app.get("currentDeploymentId", ""))
    if current is None or not newer(current, deployment):
        raise precondition(
            "the target must be earlier than the deployment serving production", "deploymentId"
        )
    app["currentDeploymentId"] = deployment["id"]
    app["isRolledBack"] = True
    app["updatedAt"] = call.now
    call.touch()
    return data({}, 202)


def stop_deployment(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    deployment = _resolve(call, body, "stop_deployment")
    if deployment["_kind"] == "production":
        raise precondition("production deployments cannot be stopped", "deploymentId")
    if deployment["status"] != "ready":
        raise precondition(
            f"only a running (ready) preview deployment can be stopped, not {deployment['status']}",
            "deploymentId",
        )
    deployment["status"] = "stopped"
    deployment["updatedAt"] = call.now
    call.touch()
    return data({}, 202)


def start_deployment(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    deployment = _resolve(call, body, "start_deployment")
    if deployment["_kind"] == "production" or deployment["status"] != "stopped":
        raise precondition("only a stopped preview deployment can be started", "deploymentId")
    # no build: one `starting` step, then ready again
    deployment.update(
        status="starting",
        updatedAt=call.now,
        _startedAt=call.now,
        _plan=["starting"],
        _outcome={"status": "ready"},
    )
    lifecycle.started(call.store, deployment)
    call.touch()
    return data({}, 202)


_BY_ID = ObjSpec(fields={"deploymentId": REF}, required=("deploymentId",))
CREATE = ObjSpec(
    fields={
        "project": REF,
        "app": REF,
        "environment": REF,
        "git": ObjSpec(
            fields={
                "branch": Str(min=1, max=256),
                "commitSha": Str(min=1, max=40),
                "repository": Str(min=1, max=256, pattern=REPOSITORY, pattern_hint=REPOSITORY_HINT),
            }
        ),
        "image": ObjSpec(fields={"dockerImage": Str(min=1, max=256)}, required=("dockerImage",)),
        "deployment": ObjSpec(fields={"deploymentId": REF}, required=("deploymentId",)),
    },
    required=("project", "app", "environment"),
    exactly_one=(("git", "image", "deployment"),),
)

OPERATIONS = {
    "deployments.createDeployment": Operation(create_deployment, CREATE, True),
    "deployments.getDeployment": Operation(get_deployment, _BY_ID, False),
    "deployments.listDeployments": Operation(
        list_deployments,
        ObjSpec(
            fields={
                "project": REF,
                "app": REF,
                "environment": REF,
                "status": Arr(item=Str(enum=STATUSES), max=13),
                **LIST_FIELDS,
            }
        ),
        False,
    ),
    "deployments.promoteDeployment": Operation(promote_deployment, _BY_ID, True),
    "deployments.rollbackDeployment": Operation(rollback_deployment, _BY_ID, True),
    "deployments.stopDeployment": Operation(stop_deployment, _BY_ID, True),
    "deployments.startDeployment": Operation(start_deployment, _BY_ID, True),
}
