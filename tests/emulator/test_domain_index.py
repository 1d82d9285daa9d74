"""`domains.listDomains` reads the store's indexes (domains by project, app and environment, apps
by slug) instead of scanning every domain of the workspace: over random workspaces, renamed and
deleted apps and deleted domains included, it answers exactly what a scan of every domain
answers, for every combination of filters, by ID and by slug, and through every page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.emulator.app import OPERATIONS, EmulatorConfig
from reconciler.emulator.app import Emulator as EmulatorState
from reconciler.emulator.context import Call
from reconciler.emulator.errors import ApiError
from reconciler.emulator.store import Obj, Store
from reconciler.emulator.validation import validate

KEY = "index-key"
SLUGS = ("web", "api", "wwww")  # shared between projects on purpose
ENVIRONMENTS = ("production", "preview")


def _call(emulator: EmulatorState, operation: str, body: dict[str, Any]) -> dict[str, Any]:
    """What `POST /v1/<operation>` does after the transport: validation, the clock, the handler."""
    spec = OPERATIONS[operation]
    validate(body, spec.spec)
    emulator.tick()
    call = Call(emulator.store, emulator.keys[KEY], emulator.store.now(), emulator.config.step_ms)
    return spec.handler(call, body)[1]


# A workspace is built by a list of steps, each naming its objects by position so that any list
# of steps is valid: (kind, a, b, c) with small integers.
STEP = st.tuples(
    st.sampled_from(
        ["project", *["app"] * 3, *["domain"] * 5, "rename", "delete_app", "delete_domain"]
    ),
    st.integers(0, 5),
    st.integers(0, 5),
    st.integers(0, 1),
)


def _build(steps: list[tuple[str, int, int, int]]) -> EmulatorState:
    """Two projects with the apps `web` and `api` and a domain each, then `steps`."""
    emulator = EmulatorState(EmulatorConfig(dev_key=KEY, seed=1))
    base = [("project", 0, 0, 0), ("project", 1, 0, 0)]
    base += [("app", project, slug, 0) for project in (0, 1) for slug in (0, 1)]
    base += [("domain", app, 0, app % 2) for app in range(4)]
    steps = base + steps
    for created, (kind, a, b, c) in enumerate(steps):
        store = emulator.store
        projects = list(store.projects.values())
        apps = list(store.apps.values())
        if kind == "project" or not projects:
            _call(emulator, "projects.createProject", {"name": "P", "slug": f"proj-{created}"})
        elif kind == "app":
            project = projects[a % len(projects)]["id"]
            if store.app_with_slug(project, SLUGS[b % len(SLUGS)]) is None:
                body = {"project": project, "name": "A", "slug": SLUGS[b % len(SLUGS)]}
                _call(emulator, "apps.createApp", {**body, "oci": {"image": "nginx:1"}})
        elif kind == "domain" and apps:
            app = apps[a % len(apps)]
            where = {"project": app["_projectId"], "app": app["id"]}
            host = f"d{created}.example.com"
            _call(
                emulator,
                "domains.createDomain",
                {**where, "environment": ENVIRONMENTS[c]} | {"domain": host},
            )
        elif kind == "rename" and apps:
            app = apps[a % len(apps)]
            if store.app_with_slug(app["_projectId"], SLUGS[b % len(SLUGS)]) is None:
                body = {
                    "project": app["_projectId"],
                    "app": app["id"],
                    "slug": SLUGS[b % len(SLUGS)],
                }
                _call(emulator, "apps.updateApp", body)
        elif kind == "delete_app" and apps:
            app = apps[a % len(apps)]
            _call(emulator, "apps.deleteApp", {"project": app["_projectId"], "app": app["id"]})
        elif kind == "delete_domain" and store.domains:
            domain = list(store.domains.values())[a % len(store.domains)]
            _call(emulator, "domains.deleteDomain", {"domain": domain["domain"]})
    return emulator


def _scan(store: Store, body: dict[str, Any]) -> list[str] | None:
    """The IDs listDomains answers, from a scan of every project, app, environment and domain;
    None when it answers 404."""
    projects = apps = envs = None
    if "project" in body:
        projects = _named(store.projects, body["project"], lambda p: True)
        if not projects:
            return None
    if "app" in body:
        apps = _named(store.apps, body["app"], lambda a: _in(a["_projectId"], projects))
        if not apps:
            return None
    if "environment" in body:
        envs = _named(
            store.environments,
            body["environment"],
            lambda e: _in(e["_appId"], apps) and _in(e["_projectId"], projects),
        )
        if not envs:
            return None
    search = body.get("search", "").lower()
    found = [
        d
        for d in store.domains.values()
        if (projects is None or d["projectId"] in projects)
        and (apps is None or d["appId"] in apps)
        and (envs is None or d["environmentId"] in envs)
        and (search in d["domain"].lower() or search in d["id"].lower())
    ]
    return [d["id"] for d in sorted(found, key=lambda d: (d["createdAt"], d["_seq"]))]


def _named(table: dict[str, Obj], ref: str, within: Callable[[Obj], bool]) -> set[str]:
    """IDs of the rows with this ID or slug that are `within` the other filters."""
    return {i for i, row in table.items() if ref in (i, row["slug"]) and within(row)}


def _in(owner: str, owners: set[str] | None) -> bool:
    return owners is None or owner in owners


def _listed(emulator: EmulatorState, body: dict[str, Any]) -> list[str] | None:
    """Every page of listDomains followed to its end; None when it answers 404."""
    ids: list[str] = []
    cursor: dict[str, str] = {}
    for _ in range(100):
        try:
            answer = _call(emulator, "domains.listDomains", {**body, **cursor})
        except ApiError as error:
            assert error.status == 404 and not ids, error.detail
            return None
        assert len(answer["data"]) <= body["limit"]
        ids += [d["id"] for d in answer["data"]]
        if not answer["pagination"]["hasMore"]:
            return ids
        cursor = {"cursor": answer["pagination"]["cursor"]}
    raise AssertionError("the listing never ended")


def _reference(how: str, pick: int, focus: Obj | None, objects: list[Obj]) -> str | None:
    """A filter value: absent (None), the ID or slug of the owner `focus` (one domain's
    project, app or environment) or of any object, or a reference to nothing."""
    if how == "missing" or (how != "absent" and not objects):
        return "missing-object"
    chosen = focus if how.startswith("focus") and focus is not None else None
    if how == "absent":
        return None
    chosen = chosen or objects[pick % len(objects)]
    return chosen["id"] if how.endswith("id") else chosen["slug"]


FILTER = st.tuples(
    st.sampled_from(["absent", "focus-id", "focus-slug", "any-id", "any-slug", "missing"]),
    st.integers(0, 40),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(STEP, max_size=30),
    focus=st.integers(0, 40),
    filters=st.tuples(FILTER, FILTER, FILTER),
    search=st.sampled_from(["", "d1", "EXAMPLE", "dom_", "zz"]),
    limit=st.integers(1, 4),
)
def test_list_domains_answers_what_a_scan_answers(
    steps: list[tuple[str, int, int, int]],
    focus: int,
    filters: tuple[tuple[str, int], ...],
    search: str,
    limit: int,
) -> None:
    emulator = _build(steps)
    store = emulator.store
    domains = list(store.domains.values())
    domain = domains[focus % len(domains)] if domains else None
    owners = [
        (name, None if domain is None else table[domain[member]], list(table.values()))
        for name, member, table in (
            ("project", "projectId", store.projects),
            ("app", "appId", store.apps),
            ("environment", "environmentId", store.environments),
        )
    ]
    body: dict[str, Any] = {"limit": limit}
    for (name, owner, objects), (how, pick) in zip(owners, filters, strict=True):
        value = _reference(how, pick, owner, objects)
        if value is not None:
            body[name] = value
    if search:
        body["search"] = search
    assert _listed(emulator, body) == _scan(store, body)
