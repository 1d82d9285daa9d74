"""Reading the live state an export writes, with the fewest calls: apps per project, both
environments of an app in one call, domains workspace-wide or per project and grouped
locally, all concurrently (the client bounds how many requests are in flight)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import ExportError, NotFound
from reconciler.platform.protocol import Platform

ENVIRONMENT_ORDER = ("production", "preview")


@dataclass
class _LiveObject:
    resource: dict[str, Any]
    """The object as the platform returned it."""

    @property
    def slug(self) -> str:
        return str(self.resource["slug"])


@dataclass
class LiveEnvironment(_LiveObject):
    variables: list[dict[str, Any]] = field(default_factory=list)
    policies: list[dict[str, Any]] = field(default_factory=list)
    domains: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class LiveApp(_LiveObject):
    environments: list[LiveEnvironment] = field(default_factory=list)
    other_environments: list[str] = field(default_factory=list)
    """The slugs of environments other than production and preview (a newer platform's):
    never read further, never exported."""


@dataclass
class LiveProject(_LiveObject):
    apps: list[LiveApp] = field(default_factory=list)


async def read_workspace(client: Platform, project_slugs: Sequence[str] = ()) -> list[LiveProject]:
    """Every project (or the named ones) with its apps, environments, variables,
    policies and domains. Domains come from one workspace-wide list when every
    project is exported, else one filtered list per project."""
    if project_slugs:
        operation = "projects.getProject"
        resources = await asyncio.gather(
            *(_get_project(client, slug) for slug in dict.fromkeys(project_slugs))
        )
    else:
        operation = "projects.listProjects"
        resources = await client.list_all(operation, {})
    projects = [LiveProject(_checked(p, operation, "slug", "id")) for p in resources]
    domains_task = _read_domains(client, [p.slug for p in projects], everything=not project_slugs)
    _, domains = await asyncio.gather(
        asyncio.gather(*(_read_project(client, p) for p in projects)), domains_task
    )
    _attach_domains(projects, domains)
    return sorted(projects, key=lambda p: p.slug)


async def _get_project(client: Platform, slug: str) -> dict[str, Any]:
    try:
        project: dict[str, Any] = await client.call("projects.getProject", {"project": slug})
    except NotFound:
        raise ExportError(
            f'project "{slug}" does not exist in this workspace',
            hint="check the slug with `reconciler export` (all projects) or the dashboard",
        ) from None
    return project


async def _read_project(client: Platform, project: LiveProject) -> None:
    apps = await client.list_all("apps.listApps", {"project": project.slug})
    project.apps = [LiveApp(_checked(a, "apps.listApps", "slug", "id")) for a in apps]
    project.apps.sort(key=lambda a: a.slug)
    await asyncio.gather(*(_read_app(client, project.slug, app) for app in project.apps))


async def _read_app(client: Platform, project: str, app: LiveApp) -> None:
    body = {"project": project, "app": app.slug}
    environments = [
        LiveEnvironment(_checked(e, "environments.listEnvironments", "slug", "id"))
        for e in await client.list_all("environments.listEnvironments", body)
    ]
    app.environments = [e for e in environments if e.slug in ENVIRONMENT_ORDER]
    app.other_environments = sorted(e.slug for e in environments if e.slug not in ENVIRONMENT_ORDER)
    app.environments.sort(key=lambda e: _environment_rank(e.slug))
    await asyncio.gather(*(_read_environment(client, body, env) for env in app.environments))


async def _read_environment(
    client: Platform, app_body: dict[str, str], env: LiveEnvironment
) -> None:
    body = {**app_body, "environment": env.slug}
    env_id = str(env.resource["id"])  # a 403 then names the ID-specific permission
    env.variables, env.policies = await asyncio.gather(
        client.list_all("environments.listEnvironmentVariables", body, object_id=env_id),
        client.list_all("gateway.listPolicies", body, object_id=env_id),
    )


async def _read_domains(
    client: Platform, project_slugs: Sequence[str], *, everything: bool
) -> list[dict[str, Any]]:
    if everything:
        return await client.list_all("domains.listDomains", {}) if project_slugs else []
    pages = await asyncio.gather(
        *(client.list_all("domains.listDomains", {"project": slug}) for slug in project_slugs)
    )
    return [domain for page in pages for domain in page]


def _attach_domains(projects: Iterable[LiveProject], domains: Iterable[dict[str, Any]]) -> None:
    by_environment: dict[str, list[dict[str, Any]]] = {}
    for domain in domains:
        by_environment.setdefault(str(domain.get("environmentId")), []).append(domain)
    for project in projects:
        for app in project.apps:
            for env in app.environments:
                env.domains = by_environment.get(str(env.resource["id"]), [])


def _checked(resource: Any, operation: str, *required: str) -> dict[str, Any]:
    if not isinstance(resource, dict) or any(
        not isinstance(resource.get(name), str) for name in required
    ):
        raise ExportError(
            f"{operation} returned an object without {' or '.join(required)}; "
            "cannot export it (is the base URL a platform API?)"
        )
    return resource


def _environment_rank(slug: str) -> int:
    return ENVIRONMENT_ORDER.index(slug) if slug in ENVIRONMENT_ORDER else len(ENVIRONMENT_ORDER)
