"""An in-memory stand-in for PlatformClient: canned answers per operation, every call recorded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reconciler.errors import NotFound
from reconciler.export import ExportedApp, ExportedEnvironment, ExportedProject
from reconciler.plan.kinds.app import parse_apps
from reconciler.plan.kinds.project import parse_project

Handler = Callable[[Mapping[str, Any]], Any]


class FakeClient:
    def __init__(self, handlers: Mapping[str, Handler]) -> None:
        self.handlers = dict(handlers)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, operation: str, body: Mapping[str, Any], **_: Any) -> Any:
        self.calls.append((operation, dict(body)))
        if operation not in self.handlers:
            raise AssertionError(f"unexpected call {operation} {dict(body)}")
        return self.handlers[operation](body)

    async def list_all(self, operation: str, body: Mapping[str, Any], **_: Any) -> list[dict]:
        return list(await self.call(operation, body))

    def operations(self) -> list[str]:
        return [operation for operation, _ in self.calls]


def not_found(operation: str) -> Handler:
    def handler(body: Mapping[str, Any]) -> Any:
        raise NotFound(f"{operation}: not found (404)", operation=operation, status=404)

    return handler


def exported_app(resource: Mapping[str, Any], *environments: ExportedEnvironment) -> ExportedApp:
    """An app export read: `resource` as `apps.listApps` answers it, parsed as the kind does."""
    return ExportedApp(parse_apps([resource])[0], environments)


def exported_project(resource: Mapping[str, Any], *apps: ExportedApp) -> ExportedProject:
    """A project export read: `resource` as `projects.getProject` answers it, parsed."""
    return ExportedProject(parse_project(resource), apps)
