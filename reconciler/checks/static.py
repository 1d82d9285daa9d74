"""The rules that read the manifest alone; `validate` runs them.

Each rule is a function from the manifest (and the rule settings, for its parameters) to the
places it is not satisfied. A rule judges what the manifest says: a field it leaves out
(unmanaged) does not satisfy a rule that asks for it, since nothing in review shows its value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from reconciler.checks.findings import Finding, Hit
from reconciler.checks.registry import RULES, RULES_BY_ID
from reconciler.checks.settings import RuleSettings
from reconciler.manifest.model import (
    App,
    Environment,
    FromEnv,
    Manifest,
    OciSource,
    Policy,
    Position,
    Project,
    Runtime,
    listed,
)
from reconciler.manifest.problems import format_path

BODY_FLAGS = ("requestBody", "responseBody")


@dataclass(frozen=True)
class Place:
    """An environment with its app and project, and how validate names it."""

    project: Project
    app: App
    environment: Environment

    @property
    def scope(self) -> tuple[str, str, str]:
        return (self.project.slug, self.app.slug, self.environment.name)

    def path(self, *rest: str | int) -> str:
        project, app, environment = self.scope
        return format_path(("projects", project, "apps", app, "environments", environment, *rest))

    def at(self, key: str) -> Position:
        """Where the environment's `key` was written, else the environment itself."""
        found = self.environment.positions.get(key) or self.environment.pos or self.app.pos
        assert found is not None  # the loader gives every app and environment a position
        return found

    def hit(self, rule: str, position: Position, path: str, message: str) -> Hit:
        return Hit(rule, self.scope, position, path, message)


def places(manifest: Manifest) -> Iterator[Place]:
    for project in manifest.projects:
        for app in listed(project.apps):
            for environment in app.environments:
                yield Place(project, app, environment)


StaticRule = Callable[[Manifest, RuleSettings], Iterator[Hit]]


def production_healthcheck(manifest: Manifest, settings: RuleSettings) -> Iterator[Hit]:
    for place in places(manifest):
        if place.environment.name != "production":
            continue
        runtime = place.environment.runtime
        healthcheck = runtime.healthcheck if isinstance(runtime, Runtime) else None
        if healthcheck:
            continue
        position = place.at("runtime")
        if isinstance(runtime, Runtime) and "healthcheck" in runtime.positions:
            position = runtime.positions["healthcheck"]
        yield place.hit(
            "production-healthcheck",
            position,
            place.path("runtime", "healthcheck"),
            "production has no health check",
        )


def production_delete_protection(manifest: Manifest, settings: RuleSettings) -> Iterator[Hit]:
    rule = "production-delete-protection"
    for project in manifest.projects:
        path = f"projects.{project.slug}"
        if project.delete_protection is not True and project.pos is not None:
            position = project.positions.get("deleteProtection", project.pos)
            yield Hit(rule, (project.slug,), position, path, "the project is not delete-protected")
        for app in listed(project.apps):
            if app.delete_protection is not True and app.pos is not None:
                position = app.positions.get("deleteProtection", app.pos)
                yield Hit(
                    rule,
                    (project.slug, app.slug),
                    position,
                    f"{path}.apps.{app.slug}",
                    "the app is not delete-protected",
                )


def _enabled_logging(place: Place) -> Iterator[tuple[int, Policy]]:
    for index, policy in enumerate(listed(place.environment.policies)):
        if policy.enabled and policy.rule_kind == "logging":
            yield index, policy


def _policy_hit(place: Place, rule: str, index: int, policy: Policy, message: str) -> Hit:
    position = policy.pos or place.at("policies")
    return place.hit(rule, position, place.path("policies", index), message)


def production_body_logging(manifest: Manifest, settings: RuleSettings) -> Iterator[Hit]:
    for place in places(manifest):
        if place.environment.name != "production":
            continue
        for index, policy in _enabled_logging(place):
            logged = [flag for flag in BODY_FLAGS if policy.rule.get(flag)]
            if logged:
                message = f"policy {policy.name!r} logs {' and '.join(logged)} in production"
                yield _policy_hit(place, "production-body-logging", index, policy, message)


def query_logging(manifest: Manifest, settings: RuleSettings) -> Iterator[Hit]:
    for place in places(manifest):
        for index, policy in _enabled_logging(place):
            if policy.rule.get("query"):
                message = f"policy {policy.name!r} logs query strings"
                yield _policy_hit(place, "query-logging", index, policy, message)


def secrets_writeonly(manifest: Manifest, settings: RuleSettings) -> Iterator[Hit]:
    for place in places(manifest):
        for variable in listed(place.environment.variables):
            if variable.is_secret_reference and variable.kind == "recoverable":
                source = "fromEnv" if isinstance(variable.source, FromEnv) else "fromFile"
                yield place.hit(
                    "secrets-writeonly",
                    variable.pos or place.at("variables"),
                    place.path("variables", variable.key),
                    f"{variable.key} is read with {source} but is of kind recoverable",
                )


def allowed_regions(manifest: Manifest, settings: RuleSettings) -> Iterator[Hit]:
    rule = RULES_BY_ID["allowed-regions"]
    allowed = tuple(settings.param(rule, "allowed"))
    shown = ", ".join(allowed) if allowed else "none (checks.allowed-regions.allowed is empty)"
    for place in places(manifest):
        for index, region in enumerate(listed(place.environment.regions)):
            if region.name not in allowed:
                yield place.hit(
                    rule.id,
                    region.pos or place.at("regions"),
                    place.path("regions", index),
                    f"region {region.name!r} is not allowed; allowed: {shown}",
                )


def replica_bounds(manifest: Manifest, settings: RuleSettings) -> Iterator[Hit]:
    rule = RULES_BY_ID["replica-bounds"]
    ceiling = settings.param(rule, "maxReplicas")
    floor = settings.param(rule, "productionMinReplicas")
    for place in places(manifest):
        production = place.environment.name == "production"
        for index, region in enumerate(listed(place.environment.regions)):
            position = region.pos or place.at("regions")
            path = place.path("regions", index, "replicas")
            if region.max_replicas > ceiling:
                message = f"replicas.max {region.max_replicas} in {region.name} is above {ceiling}"
                yield place.hit(rule.id, position, path, message)
            if production and region.min_replicas < floor:
                message = (
                    f"replicas.min {region.min_replicas} in {region.name} is below the "
                    f"production floor of {floor}"
                )
                yield place.hit(rule.id, position, path, message)


def is_pinned(image: str) -> bool:
    """A digest (`name@sha256:...`), or a tag other than `latest` after the last `/` (a
    registry host's `:port` is not a tag)."""
    if "@" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and last.rsplit(":", 1)[1] != "latest"


def pinned_images(manifest: Manifest, settings: RuleSettings) -> Iterator[Hit]:
    for project in manifest.projects:
        for app in listed(project.apps):
            oci = app.oci
            if isinstance(oci, OciSource) and not is_pinned(oci.image):
                position = oci.pos or app.pos
                assert position is not None  # the loader places every app
                yield Hit(
                    "pinned-images",
                    (project.slug, app.slug),
                    position,
                    f"projects.{project.slug}.apps.{app.slug}.oci.image",
                    f"image {oci.image!r} is not pinned to a version tag or digest",
                )


def policy_tests(manifest: Manifest, settings: RuleSettings) -> Iterator[Hit]:
    tested = manifest.checks.tested_environments
    for place in places(manifest):
        if listed(place.environment.policies) and place.scope not in tested:
            yield place.hit(
                "policy-tests",
                place.at("policies"),
                place.path("policies"),
                f"{place.environment.name} has policies but no policyTests",
            )


STATIC_RULES: dict[str, StaticRule] = {
    "production-healthcheck": production_healthcheck,
    "production-delete-protection": production_delete_protection,
    "production-body-logging": production_body_logging,
    "query-logging": query_logging,
    "secrets-writeonly": secrets_writeonly,
    "allowed-regions": allowed_regions,
    "replica-bounds": replica_bounds,
    "pinned-images": pinned_images,
    "policy-tests": policy_tests,
}


def static_findings(manifest: Manifest) -> list[Finding]:
    """Every finding of the static rules that are on, sorted by place."""
    settings = RuleSettings(manifest.checks)
    hits: list[Hit] = []
    for rule in RULES:
        if rule.stage == "static" and settings.is_on(rule):
            hits.extend(STATIC_RULES[rule.id](manifest, settings))
    return settings.judge(hits)
