"""The platform's operations as data: permission, success status, and how safe each is to repeat.

One table transcribed from platform-api.md "Endpoints"; the client, the plan (the
permission strings an apply needs) and apply (which calls are creates) all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Scope = Literal["project", "app", "environment"]


@dataclass(frozen=True)
class Operation:
    """One API operation.

    `id_specific` is False for operations whose only permission is the wildcard
    (the list operations and `projects.createProject`). `returns_data` is False
    for the successes that carry no fields (the body may then be empty).
    """

    name: str
    scope: Scope
    action: str
    id_specific: bool
    success_status: int
    is_write: bool
    creates: bool
    lists: bool
    returns_data: bool = True

    @property
    def group(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def deletes(self) -> bool:
        """Makes an object disappear (its permission is a `delete_...` action)."""
        return self.action.startswith("delete_")

    @property
    def safe_to_repeat(self) -> bool:
        """Reads and idempotent writes may be resent after an ambiguous failure; creates never."""
        return not self.creates


def _read(
    name: str, scope: Scope, action: str, *, lists: bool = False, wildcard_only: bool = False
) -> Operation:
    return Operation(
        name, scope, action, id_specific=not wildcard_only, success_status=200,
        is_write=False, creates=False, lists=lists,
    )  # fmt: skip


def _write(
    name: str,
    scope: Scope,
    action: str,
    status: int,
    *,
    creates: bool = False,
    returns_data: bool = True,
    wildcard_only: bool = False,
) -> Operation:
    return Operation(
        name, scope, action, id_specific=not wildcard_only, success_status=status,
        is_write=True, creates=creates, lists=False, returns_data=returns_data,
    )  # fmt: skip


_ALL = (
    # apps
    _write("apps.createApp", "project", "create_app", 200, creates=True),
    _read("apps.listApps", "app", "read_app", lists=True, wildcard_only=True),
    _read("apps.getApp", "app", "read_app"),
    _write("apps.updateApp", "app", "update_app", 200),
    _write("apps.deleteApp", "app", "delete_app", 202, returns_data=False),
    # domains
    _write("domains.createDomain", "environment", "create_domain", 200, creates=True),
    _read("domains.getDomain", "environment", "read_domain"),
    _read("domains.listDomains", "environment", "read_domain", lists=True, wildcard_only=True),
    _write("domains.verifyDomain", "environment", "verify_domain", 202, returns_data=False),
    _write("domains.deleteDomain", "environment", "delete_domain", 200, returns_data=False),
    # deployments
    _write("deployments.createDeployment", "environment", "create_deployment", 201, creates=True),
    _read("deployments.getDeployment", "environment", "read_deployment"),
    _read(
        "deployments.listDeployments",
        "environment",
        "read_deployment",
        lists=True,
        wildcard_only=True,
    ),
    _write(
        "deployments.promoteDeployment",
        "environment",
        "promote_deployment",
        202,
        returns_data=False,
    ),
    _write(
        "deployments.rollbackDeployment",
        "environment",
        "rollback_deployment",
        202,
        returns_data=False,
    ),
    _write("deployments.stopDeployment", "environment", "stop_deployment", 202, returns_data=False),
    _write(
        "deployments.startDeployment", "environment", "start_deployment", 202, returns_data=False
    ),
    # environments
    _read(
        "environments.listEnvironments",
        "environment",
        "read_environment",
        lists=True,
        wildcard_only=True,
    ),
    _read("environments.getEnvironment", "environment", "read_environment"),
    _write(
        "environments.updateSettings",
        "environment",
        "update_environment",
        200,
        returns_data=False,
    ),
    _read(
        "environments.listEnvironmentVariables",
        "environment",
        "read_environment_variables",
        lists=True,
    ),
    _write(
        "environments.setEnvironmentVariables",
        "environment",
        "set_environment_variables",
        200,
        returns_data=False,
    ),
    _write(
        "environments.removeEnvironmentVariables",
        "environment",
        "remove_environment_variables",
        200,
        returns_data=False,
    ),
    # gateway
    _read("gateway.listPolicies", "environment", "read_policies", lists=True),
    _write("gateway.setPolicies", "environment", "set_policies", 200, returns_data=False),
    _write("gateway.updatePolicy", "environment", "update_policy", 200, returns_data=False),
    # projects
    _write(
        "projects.createProject",
        "project",
        "create_project",
        200,
        creates=True,
        wildcard_only=True,
    ),
    _read("projects.listProjects", "project", "read_project", lists=True, wildcard_only=True),
    _read("projects.getProject", "project", "read_project"),
    _write("projects.updateProject", "project", "update_project", 200),
    _write("projects.deleteProject", "project", "delete_project", 202, returns_data=False),
)

OPERATIONS: Mapping[str, Operation] = MappingProxyType({op.name: op for op in _ALL})
"""Every operation of platform-api.md, by name (`apps.createApp`)."""


def get_operation(name: str) -> Operation:
    """The operation called `name`; a KeyError names the unknown operation (a programming error)."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise KeyError(f"unknown platform operation {name!r}") from None


def permission(operation: str, object_id: str | None) -> str:
    """The permission string `operation` needs: ID-specific when the ID is known and accepted.

    `object_id` is the ID of the operation's scope object (the project for
    `apps.createApp`, the environment for domain and deployment operations).
    """
    op = get_operation(operation)
    target = object_id if (object_id and op.id_specific) else "*"
    return f"{op.scope}.{target}.{op.action}"


def wildcard_permission(operation: str) -> str:
    """The wildcard form, which every operation accepts."""
    return permission(operation, None)
