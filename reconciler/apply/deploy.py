"""`apply --deploy`: roll out what apply changed, then wait for every deployment to finish.

Settings, variables, policies and a project's slug reach traffic only from the
next deployment (the platform API spec says so), so after apply one deployment is created for
each environment whose effective configuration changed:

- image apps deploy the manifest's image (`image: {dockerImage}`);
- repository apps rerun the environment's latest deployment (`deployment:
  {deploymentId}`), or build the default branch (`git: {}`) when there is none.

With `--redeploy`, every environment of the manifest in scope is deployed the
same way, changed or not. Then every deployment is polled until a final status;
`wait_for_deployments` polls deployments already in flight the same way
(`status --wait`). Only the final statuses of the spec are relied on; the ones in
between are shown as the platform names them, never interpreted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from reconciler.address import Address, TreePath
from reconciler.apply import (
    ApplyResult,
    ChangeResult,
    Outcome,
    Reread,
    Sleep,
    create_once,
)
from reconciler.errors import ApiError
from reconciler.json_types import JsonObject
from reconciler.manifest.model import ENVIRONMENT_NAMES, Manifest, OciSource, listed
from reconciler.plan import golive, kinds
from reconciler.plan.kinds.base import Location
from reconciler.plan.targets import Scope
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import FINAL_DEPLOYMENT_STATUSES, object_answer, object_member

FAILED_STATUSES = frozenset({"failed", "cancelled"})
"""Final statuses that mean the new configuration did not go live (exit 1)."""

REDEPLOY = "redeploy"
"""The reason of a deployment asked for by `--redeploy`, not by a change."""
_NOT_APPLIED = (Outcome.FAILED, Outcome.SKIPPED)
"""Outcomes of a change that did not reach the platform (a blocked deletion changes nothing)."""


@dataclass(frozen=True)
class DeployTarget:
    """One environment to roll out, and why (`settings`, `variables`, `image`, ...)."""

    project: str
    app: str
    environment: str
    reasons: tuple[str, ...]
    only_if_deployed: bool = False
    """True when only an app-level change (image, project slug) asks for it: a preview
    environment that never had a deployment is left alone."""

    @property
    def path(self) -> TreePath:
        return TreePath.of(self.project, self.app, self.environment)

    @property
    def address(self) -> str:
        return str(self.path)


@dataclass(frozen=True)
class DeploymentOutcome:
    target: DeployTarget
    deployment_id: str | None
    status: str
    """A final status, `timed out`, or `error` (the deployment could not be created or read)."""
    domains: tuple[str, ...] = ()
    error_code: str | None = None
    error_step: str | None = None
    error_message: str | None = None
    serving: bool | None = None
    """The deployment's `isCurrent` when it ended (None: not reported)."""

    @property
    def succeeded(self) -> bool:
        return self.status in FINAL_DEPLOYMENT_STATUSES and self.status not in FAILED_STATUSES

    @property
    def held_back(self) -> bool:
        """Ready, yet not serving production: the app is rolled back, so a new production
        deployment waits for a promotion instead of taking over."""
        return self.succeeded and self.target.environment == "production" and self.serving is False


@dataclass(frozen=True)
class DeployReport:
    outcomes: tuple[DeploymentOutcome, ...]
    warnings: tuple[str, ...] = ()
    not_deployed: tuple[str, ...] = ()
    """Environments left out, with the reason (their changes did not all apply...)."""

    @property
    def succeeded(self) -> bool:
        """Every deployment reached a final status that is not a failure."""
        return all(o.succeeded for o in self.outcomes)

    @property
    def went_live(self) -> bool:
        """Every deployment succeeded and serves: none is held back by a rollback, so what
        `apply --deploy` was asked for happened (its exit status)."""
        return self.succeeded and not any(o.held_back for o in self.outcomes)


class DeployObserver(Protocol):
    def started(self, total: int) -> None: ...

    def created(self, target: DeployTarget, deployment_id: str, source: str) -> None: ...

    def status_changed(self, target: DeployTarget, deployment_id: str, status: str) -> None: ...

    def finished(self, outcome: DeploymentOutcome) -> None: ...


class _SilentDeployObserver:
    def started(self, total: int) -> None:
        pass

    def created(self, target: DeployTarget, deployment_id: str, source: str) -> None:
        pass

    def status_changed(self, target: DeployTarget, deployment_id: str, status: str) -> None:
        pass

    def finished(self, outcome: DeploymentOutcome) -> None:
        pass


# --- what to deploy ------------------------------------------------------------------

def deploy_targets(
    result: ApplyResult, manifest: Manifest | None, *, redeploy: Scope | None = None
) -> tuple[tuple[DeployTarget, ...], tuple[str, ...]]:
    """(environments to deploy, environments left out with why) from what apply did, plus,
    with `redeploy`, every environment of the manifest in that scope.

    An environment with a change that did not apply, in itself or in its app or
    project, is left out: deploying half of a configuration change is worse than
    deploying none of it.
    """
    wanted = _WantedRollouts(manifest)
    for item in result.results:
        wanted.add(item)
    if redeploy is not None and manifest is not None:
        for key, named in managed_environments(manifest, redeploy):
            wanted.redeploy(key, named=named)
    return wanted.targets()


def managed_environments(manifest: Manifest, scope: Scope) -> list[tuple[TreePath, bool]]:
    """Every environment of the manifest that `scope` reaches, and whether the manifest names
    it: an app naming no environment has both, preview counting only once it was deployed
    (as for an image change)."""
    found: list[tuple[TreePath, bool]] = []
    for project in manifest.projects:
        for app in listed(project.apps):
            named = [e.name for e in app.environments]
            for environment in named or ENVIRONMENT_NAMES:
                if scope.reads(project.slug, app.slug, environment):
                    found.append((TreePath.of(project.slug, app.slug, environment), bool(named)))
    return found


class _WantedRollouts:
    """The environments whose effective configuration changed, and why, by the rule the
    plan's note follows too (reconciler/plan/golive.py)."""

    def __init__(self, manifest: Manifest | None) -> None:
        self.manifest = manifest
        self.asked: list[golive.Rollout] = []
        self.incomplete: set[TreePath] = set()
        """Projects, apps and environments with a change that did not apply."""

    def add(self, item: ChangeResult) -> None:
        """What one change's outcome asks of the rollout, as its kind says: a change that
        configures deployments and did not apply leaves what is under it out; one that applied
        deploys every environment under it (an environment, an app's, a project's apps')."""
        change, kind = item.change, kinds.get(item.change.kind)
        if kind.configures_deployment() and item.outcome in _NOT_APPLIED:
            self.incomplete.add(Address.parse(change.address).environment)
        elif item.outcome is Outcome.DONE:
            self.asked.extend(golive.rollouts(change, self.manifest))

    def redeploy(self, key: TreePath, *, named: bool) -> None:
        """An environment `--redeploy` reaches: one the manifest names is deployed; of an app
        naming none, preview only if it has a deployment already (as for an image change)."""
        conditional = not named and key.leaf != "production"
        self.asked.append(golive.Rollout(key, REDEPLOY, only_if_deployed=conditional))

    def targets(self) -> tuple[tuple[DeployTarget, ...], tuple[str, ...]]:
        targets: list[DeployTarget] = []
        left_out: list[str] = []
        wanted = golive.wanted(self.asked)
        # An environment whose every change failed has no reason to deploy, yet it must be
        # named: otherwise the summary says "nothing to deploy" while its changes are pending.
        asked = {item.environment for item in wanted}
        failed_only = [k for k in sorted(self.incomplete) if k.depth == 3 and k not in asked]
        left_out.extend(f"{key}: its changes did not apply" for key in failed_only)
        for item in wanted:
            key = item.environment
            if self.incomplete.intersection(key.lineage()):
                left_out.append(f"{key}: some of its changes did not apply")
                continue
            project, app, name = key.slugs
            targets.append(
                DeployTarget(
                    project, app, name, item.reasons, only_if_deployed=item.only_if_deployed
                )
            )
        return tuple(targets), tuple(left_out)


# --- rolling out -----------------------------------------------------------------------


@dataclass(frozen=True)
class DeployOptions:
    wait_timeout: float = 15 * 60.0
    poll_interval: float = 2.0
    create_attempts: int = 3
    create_retry_delay: float = 1.0


async def roll_out(
    targets: Sequence[DeployTarget],
    client: Platform,
    manifest: Manifest | None,
    *,
    options: DeployOptions | None = None,
    observer: DeployObserver | None = None,
    sleep: Sleep = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> DeployReport:
    """Deploy every target and wait until each is final or `wait_timeout` has passed.

    What every deployment needs is read first, so a read error is reported before
    any deployment is created."""
    options = options or DeployOptions()
    observer = observer or _SilentDeployObserver()
    requests = _DeploymentRequests(client, manifest)
    prepared = await asyncio.gather(*(requests.prepare(t) for t in targets))
    errors = [p for p in prepared if isinstance(p, DeploymentOutcome)]
    rollouts = [p for p in prepared if isinstance(p, _Rollout)]
    observer.started(len(errors) + len(rollouts))
    for outcome in errors:
        observer.finished(outcome)
    deployer = _Deployer(client, options, observer, sleep, clock)
    deadline = clock() + options.wait_timeout
    waited = await asyncio.gather(*(deployer.deploy(r, deadline) for r in rollouts))
    return DeployReport((*errors, *waited), warnings=tuple(requests.warnings))


async def wait_for_deployments(
    in_flight: Sequence[tuple[DeployTarget, str]],
    client: Platform,
    *,
    options: DeployOptions | None = None,
    observer: DeployObserver | None = None,
    sleep: Sleep = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> DeployReport:
    """Poll deployments created earlier, (environment, deployment ID) pairs, until each is
    final or `wait_timeout` has passed (`status --wait`)."""
    options = options or DeployOptions()
    observer = observer or _SilentDeployObserver()
    observer.started(len(in_flight))
    deployer = _Deployer(client, options, observer, sleep, clock)
    deadline = clock() + options.wait_timeout
    waited = await asyncio.gather(*(deployer.watch(t, i, deadline) for t, i in in_flight))
    return DeployReport(tuple(waited))


@dataclass(frozen=True)
class _Rollout:
    """A deployment about to be created: its request, a description of its source, and the
    environment's latest deployment before it (to recognise ours after an ambiguous create)."""

    target: DeployTarget
    body: Mapping[str, Any]
    source: str
    previous_id: str | None


async def _latest_deployment(client: Platform, target: DeployTarget) -> Mapping[str, Any] | None:
    return await golive.latest_deployment(client, Location.of(target.path))


class _DeploymentRequests:
    """Builds the createDeployment request of each target from the app and its latest
    deployment; each app is read once however many of its environments deploy."""

    def __init__(self, client: Platform, manifest: Manifest | None) -> None:
        self.client = client
        self.manifest = manifest
        self._apps: dict[tuple[str, str], Awaitable[JsonObject]] = {}
        self.warnings: list[str] = []

    async def prepare(self, target: DeployTarget) -> _Rollout | DeploymentOutcome | None:
        """The deployment to create for `target`; None when there is nothing to roll out."""
        try:
            app, latest = await asyncio.gather(
                self._app(target), _latest_deployment(self.client, target)
            )
        except ApiError as error:
            return DeploymentOutcome(target, None, "error", error_message=error.message)
        if not golive.deploys(target.only_if_deployed, has_deployment=latest is not None):
            return None
        if target.environment == "production" and app.get("isRolledBack"):
            self.warnings.append(
                f"{Address('app', target.path.parent)} is rolled back: its new production "
                "deployment will not take over production until a deployment is promoted "
                "(deployments.promoteDeployment)"
            )
        body, source = self._body(target, app, latest)
        return _Rollout(target, body, source, latest.get("id") if latest else None)

    async def _app(self, target: DeployTarget) -> JsonObject:
        key = (target.project, target.app)
        if key not in self._apps:
            request = {"project": target.project, "app": target.app}
            self._apps[key] = asyncio.ensure_future(self._get_app(request))
        return await self._apps[key]

    async def _get_app(self, request: JsonObject) -> JsonObject:
        return object_answer("apps.getApp", await self.client.call("apps.getApp", request))

    def _body(
        self, target: DeployTarget, app: Mapping[str, Any], latest: Mapping[str, Any] | None
    ) -> tuple[dict[str, Any], str]:
        body: dict[str, Any] = {
            "project": target.project,
            "app": target.app,
            "environment": target.environment,
        }
        image = self._image(target, app)
        if image is not None:
            body["image"] = {"dockerImage": image}
            return body, f"image {image}"
        if latest is not None:
            body["deployment"] = {"deploymentId": latest["id"]}
            return body, f"rerun of {latest['id']}"
        body["git"] = {}
        return body, "default branch"

    def _image(self, target: DeployTarget, app: Mapping[str, Any]) -> str | None:
        """The image to run for an image app (the manifest's, else the live one); None for git."""
        project = self.manifest.project(target.project) if self.manifest else None
        wanted = project.app(target.app) if project else None
        if wanted is not None and isinstance(wanted.oci, OciSource):
            return wanted.oci.image
        oci = app.get("oci")
        if app.get("sourceType") == "oci" or isinstance(oci, Mapping):
            image = oci.get("image") if isinstance(oci, Mapping) else None
            return str(image) if image else None
        return None


class _Deployer:
    """Creates one deployment (exactly once) and polls it until a final status."""

    def __init__(
        self,
        client: Platform,
        options: DeployOptions,
        observer: DeployObserver,
        sleep: Sleep,
        clock: Callable[[], float],
    ) -> None:
        self.client = client
        self.options = options
        self.observer = observer
        self.sleep = sleep
        self.clock = clock

    async def deploy(self, rollout: _Rollout, deadline: float) -> DeploymentOutcome:
        target = rollout.target
        try:
            found, _ = await create_once(
                self.client,
                "deployments.createDeployment",
                rollout.body,
                self._reread(target, rollout.previous_id),
                attempts=self.options.create_attempts,
                delay=self.options.create_retry_delay,
                sleep=self.sleep,
            )
            data = object_answer("deployments.createDeployment", found)
        except ApiError as error:
            outcome = DeploymentOutcome(target, None, "error", error_message=error.message)
            self.observer.finished(outcome)
            return outcome
        deployment_id = str(data.get("deploymentId") or data.get("id"))
        self.observer.created(target, deployment_id, rollout.source)
        return await self.watch(target, deployment_id, deadline)

    async def watch(
        self, target: DeployTarget, deployment_id: str, deadline: float
    ) -> DeploymentOutcome:
        outcome = await self._wait(target, deployment_id, deadline)
        self.observer.finished(outcome)
        return outcome

    def _reread(self, target: DeployTarget, before: str | None) -> Reread:
        """After an ambiguous create: a deployment newer than the one seen before is ours."""

        async def reread() -> Any:
            newest = await _latest_deployment(self.client, target)
            if newest is not None and newest.get("id") != before:
                return {"deploymentId": newest["id"]}
            return None

        return reread

    async def _wait(
        self, target: DeployTarget, deployment_id: str, deadline: float
    ) -> DeploymentOutcome:
        status = "created"
        while True:
            if self.clock() >= deadline:
                return DeploymentOutcome(
                    target,
                    deployment_id,
                    "timed out",
                    error_message=(f"still {status} when --wait-timeout ran out"),
                )
            await self.sleep(min(self.options.poll_interval, max(0.0, deadline - self.clock())))
            try:
                found = await self.client.call(
                    "deployments.getDeployment", {"deploymentId": deployment_id}
                )
                deployment = object_answer("deployments.getDeployment", found)
            except ApiError as error:
                return DeploymentOutcome(
                    target, deployment_id, "error", error_message=error.message
                )
            new_status = str(deployment.get("status"))
            if new_status != status:
                status = new_status
                self.observer.status_changed(target, deployment_id, status)
            if status in FINAL_DEPLOYMENT_STATUSES:
                return _outcome(target, deployment_id, deployment)


def _outcome(
    target: DeployTarget, deployment_id: str, deployment: Mapping[str, Any]
) -> DeploymentOutcome:
    error = object_member(deployment, "error")
    domains = deployment.get("domains")
    return DeploymentOutcome(
        target,
        deployment_id,
        str(deployment.get("status")),
        domains=tuple(str(d) for d in domains) if isinstance(domains, list) else (),
        error_code=_text(error.get("code")),
        error_step=_text(error.get("step")),
        error_message=_text(error.get("message")),
        serving=current if isinstance(current := deployment.get("isCurrent"), bool) else None,
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def describe_outcome(outcome: DeploymentOutcome) -> str:
    """One line per deployment: address, ID, status, then domains or what went wrong."""
    head = f"{outcome.target.address}"
    if outcome.deployment_id:
        head += f" ({outcome.deployment_id})"
    if outcome.status == "error":
        return f"{head}: error: {outcome.error_message}"
    if outcome.status == "timed out":
        return f"{head}: timed out: {outcome.error_message}"
    line = f"{head}: {outcome.status}"
    if outcome.held_back:
        line += ", not serving production: the app is rolled back (promote it to serve)"
    if outcome.error_code or outcome.error_message:
        step = f" at step {outcome.error_step}" if outcome.error_step else ""
        line += f": {outcome.error_code or 'unknown'}{step}: {outcome.error_message or ''}".rstrip(
            ": "
        )
    if outcome.domains:
        line += f"; domains: {', '.join(outcome.domains)}"
    return line
