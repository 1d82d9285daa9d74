"""The platform's operations as data: permission, statuses, and how safe each is to repeat.

One table transcribed from the platform API spec's "Endpoints"; the client (which answers
it may believe), the plan (the permission strings an apply needs) and apply (which calls are
creates) all read it.
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
    `error_statuses` are the error statuses the spec lists for the operation: any
    other answer did not come from the platform API as specified. `item_key` names
    the member that tells the items of a list operation apart.
    """

    name: str
    scope: Scope
    action: str
    id_specific: bool
    success_status: int
    is_write: bool
    creates: bool
    lists: bool
    error_statuses: frozenset[int]
    returns_data: bool = True
    item_key: str = "id"

    @property
    def group(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def deletes(self) -> bool:
        """Makes an object disappear (its permission is a `delete_...` action)."""
        return self.action.startswith("delete_")

    def answers(self, status: int) -> bool:
        """Whether the spec lists `status` as an answer of this operation."""
        return status == self.success_status or status in self.error_statuses

    @property
    def safe_to_repeat(self) -> bool:
        """Reads and idempotent writes may be resent after an ambiguous failure; creates never."""
        return not self.creates


def _statuses(listed: str) -> frozenset[int]:
    """`"400 401 404"`, as the spec's "Errors:" line of the operation lists them."""
    return frozenset(int(status) for status in listed.split())


# The lists the spec gives most operations ("Errors: 400, 401, 403, 404, 429, 500"), with 409,
# 412 or 503 where an operation adds one; the deployment actions and getDeployment list no 403,
# projects.listProjects and projects.createProject no 404.
_USUAL = "400 401 403 404 429 500"
_NO_403 = "400 401 404 429 500"


def _read(
    name: str,
    scope: Scope,
    action: str,
    *,
    lists: bool = False,
    wildcard_only: bool = False,
    errors: str = _USUAL,
    item_key: str = "id",
) -> Operation:
    return Operation(
        name, scope, action, id_specific=not wildcard_only, success_status=200,
        is_write=False, creates=False, lists=lists, error_statuses=_statuses(errors),
        item_key=item_key,
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
    errors: str = _USUAL,
) -> Operation:
    return Operation(
        name, scope, action, id_specific=not wildcard_only, success_status=status,
        is_write=True, creates=creates, lists=False, error_statuses=_statuses(errors),
        returns_data=returns_data,
    )  # fmt: skip


_ALL = (
    # apps
    _write("apps.createApp", "project", "create_app", 200, creates=True, errors=f"{_USUAL} 409"),
    _read("apps.listApps", "app", "read_app", lists=True, wildcard_only=True),
    _read("apps.getApp", "app", "read_app"),
    _write("apps.updateApp", "app", "update_app", 200, errors=f"{_USUAL} 409"),
    _write("apps.deleteApp", "app", "delete_app", 202, returns_data=False, errors=f"{_USUAL} 412"),
    # domains
    _write(
        "domains.createDomain",
        "environment",
        "create_domain",
        200,
        creates=True,
        errors=f"{_USUAL} 409",
    ),
    _read("domains.getDomain", "environment", "read_domain"),
    _read(
        "domains.listDomains",
        "environment",
        "read_domain",
        lists=True,
        wildcard_only=True,
        errors=f"{_USUAL} 503",
    ),
    _write(
        "domains.verifyDomain",
        "environment",
        "verify_domain",
        202,
        returns_data=False,
        errors=f"{_USUAL} 412",
    ),
    _write("domains.deleteDomain", "environment", "delete_domain", 200, returns_data=False),
    # deployments
    _write(
        "deployments.createDeployment",
        "environment",
        "create_deployment",
        201,
        creates=True,
        errors=f"{_USUAL} 412",
    ),
    _read("deployments.getDeployment", "environment", "read_deployment", errors=_NO_403),
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
        errors=f"{_NO_403} 412",
    ),
    _write(
        "deployments.rollbackDeployment",
        "environment",
        "rollback_deployment",
        202,
        returns_data=False,
        errors=f"{_NO_403} 412",
    ),
    _write(
        "deployments.stopDeployment",
        "environment",
        "stop_deployment",
        202,
        returns_data=False,
        errors=f"{_NO_403} 412",
    ),
    _write(
        "deployments.startDeployment",
        "environment",
        "start_deployment",
        202,
        returns_data=False,
        errors=f"{_NO_403} 412",
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
        item_key="key",  # variables have no ID; their names are unique in an environment
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
        errors="400 401 403 409 429 500",
    ),
    _read(
        "projects.listProjects",
        "project",
        "read_project",
        lists=True,
        wildcard_only=True,
        errors="400 401 403 429 500",
    ),
    _read("projects.getProject", "project", "read_project"),
    _write("projects.updateProject", "project", "update_project", 200, errors=f"{_USUAL} 409"),
    _write(
        "projects.deleteProject",
        "project",
        "delete_project",
        202,
        returns_data=False,
        errors=f"{_USUAL} 412",
    ),
)

OPERATIONS: Mapping[str, Operation] = MappingProxyType({op.name: op for op in _ALL})
"""Every operation of the platform API spec, by name (`apps.createApp`)."""


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
