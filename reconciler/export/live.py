"""Reading the live state an export writes, with the fewest calls: apps per project, both
environments of an app in one call, domains workspace-wide or per project and grouped
locally, all concurrently (the client bounds how many requests are in flight).

Every answer is parsed once, by the parser of the kind that plans it (`parse_project`,
`parse_apps`, `read_environment`, `live_variables`, `read_policies`, `LiveDomain`): export
writes what a plan of the result compares, and refuses what a plan would refuse. Each typed
value keeps the answer it came from, so members this reconciler does not know still reach
the manifest's `opaque` blocks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from reconciler.errors import ExportError, NotFound, UnexpectedResponse
from reconciler.json_types import JsonObject
from reconciler.manifest.model import ENVIRONMENT_NAMES, Environment
from reconciler.plan.kinds import app as apps
from reconciler.plan.kinds import domains, policies, settings, variables
from reconciler.plan.kinds.app import LiveApp, parse_apps
from reconciler.plan.kinds.base import require_fields
from reconciler.plan.kinds.domains import LiveDomain, parse_domains
from reconciler.plan.kinds.policies import LivePolicy, read_policies
from reconciler.plan.kinds.project import LiveProject, parse_project
from reconciler.plan.kinds.settings import LiveEnvironment, read_environment
from reconciler.plan.kinds.variables import LiveVariables, live_variables
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import object_answer


@dataclass(frozen=True)
class ExportedEnvironment:
    """Production or preview of an app with what export writes of it, each part as its kind
    parsed it: the settings (`live`, its model in `settings`), variables, policies, domains."""

    live: LiveEnvironment
    settings: Environment
    variables: LiveVariables = ()
    policies: tuple[LivePolicy, ...] = ()
    domains: tuple[LiveDomain, ...] = ()

    @property
    def slug(self) -> str:
        return self.live.slug


@dataclass(frozen=True)
class ExportedApp:
    live: LiveApp
    environments: tuple[ExportedEnvironment, ...] = ()
    other_environments: tuple[str, ...] = ()
    """The slugs of environments other than production and preview (a newer platform's):
    never read further, never exported."""

    @property
    def slug(self) -> str:
        return self.live.slug


@dataclass(frozen=True)
class ExportedProject:
    live: LiveProject
    apps: tuple[ExportedApp, ...] = ()

    @property
    def slug(self) -> str:
        return self.live.slug


def exported_environment(
    answer: JsonObject,
    found_variables: Sequence[JsonObject] = (),
    found_policies: Sequence[JsonObject] = (),
    found_domains: Sequence[LiveDomain] = (),
) -> ExportedEnvironment:
    """Production or preview from its `listEnvironments` object and its variables' and
    policies' answers, parsed by their kinds."""
    live = read_environment(answer)
    if live.settings is None:  # only production and preview are read further
        raise ExportError(f"environment {live.slug!r} is neither production nor preview")
    return ExportedEnvironment(
        live,
        live.settings,
        live_variables(variables.READ_OPERATION, found_variables),
        read_policies(found_policies),
        tuple(found_domains),
    )


def cannot_read(where: str, error: Exception) -> ExportError:
    """An answer export cannot read, named with what it belongs to (`project "shop"`, the
    workspace)."""
    return ExportError(
        f"{where}: the platform returned an object this export cannot "
        f"read ({type(error).__name__}: {error})",
        hint="is the base URL the platform API? rerun with -v to see the calls",
    )


@contextmanager
def _naming(where: str) -> Iterator[None]:
    try:
        yield
    except UnexpectedResponse as error:
        raise cannot_read(where, error) from None


WORKSPACE = "the workspace"


async def read_workspace(
    client: Platform, project_slugs: Sequence[str] = ()
) -> list[ExportedProject]:
    """Every project (or the named ones) with its apps, environments, variables,
    policies and domains. Domains come from one workspace-wide list when every
    project is exported, else one filtered list per project."""
    resources: Sequence[JsonObject]
    if project_slugs:
        operation = "projects.getProject"
        resources = await asyncio.gather(
            *(_get_project(client, slug) for slug in dict.fromkeys(project_slugs))
        )
    else:
        operation = "projects.listProjects"
        resources = await client.list_all(operation, {})
    with _naming(WORKSPACE):
        checked = require_fields(operation, list(resources), "id", "slug")
    projects = [parse_project(p) for p in checked]
    domains_task = _read_domains(client, [p.slug for p in projects], everything=not project_slugs)
    read, found_domains = await asyncio.gather(
        asyncio.gather(*(_read_project(client, p) for p in projects)), domains_task
    )
    by_environment: dict[str | None, list[LiveDomain]] = {}
    for domain in found_domains:
        by_environment.setdefault(domain.environment_id, []).append(domain)
    return sorted((_with_domains(p, by_environment) for p in read), key=lambda p: p.slug)


async def _get_project(client: Platform, slug: str) -> JsonObject:
    try:
        found = await client.call("projects.getProject", {"project": slug})
    except NotFound:
        raise ExportError(
            f'project "{slug}" does not exist in this workspace',
            hint="check the slug with `reconciler export` (all projects) or the dashboard",
        ) from None
    with _naming(f'project "{slug}"'):
        return object_answer("projects.getProject", found)


async def _read_project(client: Platform, project: LiveProject) -> ExportedProject:
    with _naming(f'project "{project.slug}"'):
        found = parse_apps(await client.list_all(apps.READ_OPERATION, {"project": project.slug}))
        read = await asyncio.gather(
            *(_read_app(client, project.slug, app) for app in sorted(found, key=lambda a: a.slug))
        )
    return ExportedProject(project, tuple(read))


async def _read_app(client: Platform, project: str, app: LiveApp) -> ExportedApp:
    body = {"project": project, "app": app.slug}
    found = require_fields(
        settings.READ_OPERATION,
        await client.list_all(settings.READ_OPERATION, body),
        "slug",
        "id",
    )
    known = sorted(
        (e for e in found if e["slug"] in ENVIRONMENT_NAMES),
        key=lambda e: ENVIRONMENT_NAMES.index(str(e["slug"])),
    )
    environments = await asyncio.gather(*(_read_environment(client, body, e) for e in known))
    others = sorted(str(e["slug"]) for e in found if e["slug"] not in ENVIRONMENT_NAMES)
    return ExportedApp(app, tuple(environments), tuple(others))


async def _read_environment(
    client: Platform, app_body: Mapping[str, str], answer: JsonObject
) -> ExportedEnvironment:
    body = {**app_body, "environment": str(answer["slug"])}
    env_id = str(answer["id"])  # a 403 then names the ID-specific permission
    found_variables, found_policies = await asyncio.gather(
        client.list_all(variables.READ_OPERATION, body, object_id=env_id),
        client.list_all(policies.READ_OPERATION, body, object_id=env_id),
    )
    return exported_environment(answer, found_variables, found_policies)


async def _read_domains(
    client: Platform, project_slugs: Sequence[str], *, everything: bool
) -> tuple[LiveDomain, ...]:
    if everything:
        found = await client.list_all(domains.READ_OPERATION, {}) if project_slugs else []
    else:
        pages = await asyncio.gather(
            *(client.list_all(domains.READ_OPERATION, {"project": slug}) for slug in project_slugs)
        )
        found = [domain for page in pages for domain in page]
    with _naming(WORKSPACE):
        return parse_domains(found)


def _with_domains(
    project: ExportedProject, by_environment: Mapping[str | None, Sequence[LiveDomain]]
) -> ExportedProject:
    """`project` with each environment's domains (those naming its ID)."""
    return replace(
        project,
        apps=tuple(
            replace(
                app,
                environments=tuple(
                    replace(env, domains=tuple(by_environment.get(env.live.id, ())))
                    for env in app.environments
                ),
            )
            for app in project.apps
        ),
    )
