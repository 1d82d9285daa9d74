"""The deployment state machine, evaluated lazily from the emulator clock.

A deployment carries a `_plan` (the statuses it passes through, one per step of `step_ms`) and
an `_outcome` (ready, or failed with an error) fixed at creation from a snapshot of the
environment. `advance_deployments` materialises, on every request, what the clock says has
happened since: statuses, failures, and production deployments becoming current in the order
they finish.
"""

from __future__ import annotations

from reconciler.emulator.context import REGIONS
from reconciler.emulator.store import Obj, Store

STATUSES = (
    "pending",
    "starting",
    "building",
    "deploying",
    "network",
    "finalizing",
    "ready",
    "failed",
    "skipped",
    "awaiting_approval",
    "stopped",
    "superseded",
    "cancelled",
)
FINAL = frozenset({"ready", "failed", "cancelled", "superseded", "skipped", "stopped"})
GIT_STEPS = ("pending", "starting", "building", "deploying", "network", "finalizing")
IMAGE_STEPS = ("pending", "starting", "deploying", "network", "finalizing")

QUOTA_CODES = {
    "vCpus": "cpu_quota_exceeded",
    "memoryMib": "memory_quota_exceeded",
    "storageMib": "storage_quota_exceeded",
}


# ---- the state machine ------------------------------------------------------------------------


def newer(a: Obj, b: Obj) -> bool:
    return (a["createdAt"], a["_seq"]) > (b["createdAt"], b["_seq"])


def running_deployments(store: Store) -> list[Obj]:
    """Deployments still moving through their plan (from the store's set of candidates, so a
    request does not scan every deployment ever made)."""
    if store.running_ids is None:
        store.running_ids = set(store.deployments)
    running = [
        store.deployments[i]
        for i in store.running_ids
        if i in store.deployments and store.deployments[i]["status"] not in FINAL
    ]
    store.running_ids = {d["id"] for d in running}
    return running


def started(store: Store, deployment: Obj) -> None:
    """A deployment (re)started its plan: watch it until it reaches a final status."""
    if store.running_ids is not None:
        store.running_ids.add(deployment["id"])


def advance_deployments(store: Store, now: int, step_ms: int) -> None:
    running = running_deployments(store)
    running.sort(key=lambda d: (d["_startedAt"] + len(d["_plan"]) * step_ms, d["_seq"]))
    for deployment in running:
        finish = deployment["_startedAt"] + len(deployment["_plan"]) * step_ms
        if finish <= now:
            _finish(store, deployment, finish)
        else:
            index = max(0, (now - deployment["_startedAt"]) // step_ms)
            status = deployment["_plan"][index]
            if status != deployment["status"]:
                deployment["status"] = status
                deployment["updatedAt"] = deployment["_startedAt"] + index * step_ms
                store.dirty = True


def _finish(store: Store, deployment: Obj, at: int) -> None:
    outcome = deployment["_outcome"]
    deployment["status"] = outcome["status"]
    deployment["updatedAt"] = at
    if "error" in outcome:
        deployment["error"] = outcome["error"]
    store.dirty = True
    if outcome["status"] != "ready" or deployment["_kind"] != "production":
        return
    app = store.apps[deployment["_appId"]]
    current = store.deployments.get(app.get("currentDeploymentId", ""))
    if not app["isRolledBack"] and (current is None or newer(deployment, current)):
        app["currentDeploymentId"] = deployment["id"]
        app["updatedAt"] = at


def available_actions(store: Store, deployment: Obj) -> list[str]:
    status = deployment["status"]
    if deployment["_kind"] != "production":
        return {"ready": ["stop"], "stopped": ["start"]}.get(status, [])
    if status != "ready":
        return []
    app = store.apps[deployment["_appId"]]
    current = store.deployments.get(app.get("currentDeploymentId", ""))
    if current is not None and current["id"] == deployment["id"]:
        return ["promote"] if app["isRolledBack"] else []
    actions = ["promote"]
    if current is not None and newer(current, deployment):
        actions.append("rollback")
    return actions


def plan_for(store: Store, kind: str, source: Obj, snapshot: Obj) -> tuple[list[str], Obj]:
    steps = list(GIT_STEPS if kind == "git" else IMAGE_STEPS)
    failure = _failure(store, kind, source, snapshot)
    if failure is None:
        return steps, {"status": "ready"}
    return steps[: steps.index(failure["step"]) + 1], {"status": "failed", "error": failure}


def _failure(store: Store, kind: str, source: Obj, snapshot: Obj) -> Obj | None:
    if kind == "git" and source["git"]["commitSha"].startswith("fail"):
        return _error("build_failed", "building", "The build command exited with status 1.")
    if kind == "image" and _tag(source["docker"]["image"]).startswith("fail"):
        return _error("build_failed", "deploying", "The image could not be pulled or started.")
    runtime, regions = snapshot["runtime"], snapshot["regions"]
    health = runtime.get("healthcheck")
    if any(r["replicas"]["min"] > r["replicas"]["max"] for r in regions) or (
        health is not None and health["timeoutSeconds"] > health["intervalSeconds"]
    ):
        return _error(
            "invalid_runtime_settings",
            "deploying",
            "Runtime settings are inconsistent (replicas.min above replicas.max, or a "
            "healthcheck timeout longer than its interval).",
        )
    unknown = [r["name"] for r in regions if r["name"] not in REGIONS]
    if unknown:
        return _error(
            "no_schedulable_regions", "deploying", f"No capacity in region(s) {', '.join(unknown)}."
        )
    for resource, code in QUOTA_CODES.items():
        limit = store.state["quotas"].get(resource)
        if (
            limit is not None
            and _usage(store, resource) + _need(runtime, regions, resource) > limit
        ):
            return _error(
                code, "deploying", f"The workspace {resource} quota ({limit}) is used up."
            )
    return None


def _tag(image: str) -> str:
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else "latest"


def _need(runtime: Obj, regions: list[Obj], resource: str) -> float:
    need: float = runtime[resource] * sum(r["replicas"]["min"] for r in regions)
    return need


def _usage(store: Store, resource: str) -> float:
    """What running deployments hold: the current production ones and ready previews."""
    total = 0.0
    for d in store.deployments.values():
        app = store.apps[d["_appId"]]
        running = d["status"] == "ready" and (
            d["_kind"] != "production" or app.get("currentDeploymentId") == d["id"]
        )
        if running:
            total += _need(d["runtime"], d["_snapshot"]["regions"], resource)
    return total


def _error(code: str, step: str, message: str) -> Obj:
    return {"code": code, "step": step, "message": message}
