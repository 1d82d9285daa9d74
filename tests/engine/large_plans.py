"""One project of many apps, planned against live state held in memory: for the planner's
growth test (tests/engine/test_plan_growth.py) and its benchmark (tests/perf/bench_plan_cpu.py).

Each app of the manifest sets a runtime, a variable, a domain and a policy list, and exists
live with nothing set under it, so it has four changes; a tenth as many apps again are live but
unlisted, and pruned. The client answers every read at once, so only the planner's own work is
measured.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from reconciler.errors import NotFound
from reconciler.manifest.model import (
    App,
    Domain,
    Environment,
    LiteralValue,
    Manifest,
    Policy,
    Project,
    Prune,
    Runtime,
    Variable,
)

PROJECT = "shop"
T = TypeVar("T")


def slug(index: int) -> str:
    return f"app-{index:05d}"


def large_manifest(
    apps: int, collection: Callable[[Iterable[Any]], tuple[Any, ...]] = tuple
) -> Manifest:
    """`apps` apps in one project; `collection` makes every tuple of the tree (to count
    how often the planner goes over them)."""
    policy = Policy("deny", True, (), "firewall", {"action": "ACTION_DENY"})
    listed = (
        App(
            slug=slug(i),
            environments=collection(
                [
                    Environment(
                        "production",
                        runtime=Runtime(port=3000),
                        variables=collection([Variable("A", LiteralValue("1"), "recoverable")]),
                        domains=collection([Domain(f"{slug(i)}.example.com")]),
                        policies=collection([policy]),
                    )
                ]
            ),
        )
        for i in range(apps)
    )
    projects = collection([Project(PROJECT, apps=collection(listed))])
    return Manifest(1, Prune(apps=True), projects)


class InstantClient:
    """Every app of the manifest exists live with nothing set, plus a tenth more unlisted.

    `listing` makes the list of live apps (to count how often the planner goes over it)."""

    base_url = "memory"
    check_permissions = ()

    def __init__(self, apps: int, listing: Callable[[Iterable[Any]], list[Any]] = list) -> None:
        live = apps + apps // 10
        self.apps = listing(
            {"id": f"app_{i:08d}", "slug": slug(i), "name": slug(i)} for i in range(live)
        )

    async def call(self, operation: str, body: Mapping[str, Any], **_: Any) -> Any:
        if operation == "projects.getProject":
            return {"id": "proj_00000001", "slug": PROJECT, "name": PROJECT}
        if operation == "domains.getDomain":
            raise NotFound("not found", operation=operation, status=404)
        if operation == "domains.listDomains":  # the workspace's first page: no domain at all
            return []
        raise AssertionError(f"unexpected {operation}")

    async def list_all(self, operation: str, body: Mapping[str, Any], **_: Any) -> list[Any]:
        if operation == "apps.listApps":
            return self.apps
        if operation == "environments.listEnvironments":
            return [{"id": f"env_{body['app']}_{s}", "slug": s} for s in ("production", "preview")]
        return []


class Visits:
    """Counts the items handed out by the tuples and lists it makes, each time one is gone
    over (a scan of a collection per item of another shows as quadratic growth)."""

    def __init__(self) -> None:
        self.count = 0

    def _counted(self, base: type) -> type:
        visits = self

        class Counted(base):  # type: ignore[valid-type, misc]
            def __iter__(self) -> Iterator[Any]:
                for item in super().__iter__():
                    visits.count += 1
                    yield item

        return Counted

    def collection(self, items: Iterable[T]) -> tuple[T, ...]:
        return self._counted(tuple)(items)  # type: ignore[no-any-return]

    def listing(self, items: Iterable[T]) -> list[T]:
        return self._counted(list)(items)  # type: ignore[no-any-return]
