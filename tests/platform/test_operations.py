"""The operations table against the platform API spec: names, permissions, statuses, creates."""

from __future__ import annotations

import pytest

from reconciler.platform.operations import OPERATIONS, get_operation, permission

SPEC_OPERATIONS = [
    "apps.createApp",
    "apps.listApps",
    "apps.getApp",
    "apps.updateApp",
    "apps.deleteApp",
    "domains.createDomain",
    "domains.getDomain",
    "domains.listDomains",
    "domains.verifyDomain",
    "domains.deleteDomain",
    "deployments.createDeployment",
    "deployments.getDeployment",
    "deployments.listDeployments",
    "deployments.promoteDeployment",
    "deployments.rollbackDeployment",
    "deployments.stopDeployment",
    "deployments.startDeployment",
    "environments.listEnvironments",
    "environments.getEnvironment",
    "environments.updateSettings",
    "environments.listEnvironmentVariables",
    "environments.setEnvironmentVariables",
    "environments.removeEnvironmentVariables",
    "gateway.listPolicies",
    "gateway.setPolicies",
    "gateway.updatePolicy",
    "projects.createProject",
    "projects.listProjects",
    "projects.getProject",
    "projects.updateProject",
    "projects.deleteProject",
]


def test_every_operation_of_the_spec_is_in_the_table() -> None:
    assert sorted(OPERATIONS) == sorted(SPEC_OPERATIONS)
    assert all(name == op.name for name, op in OPERATIONS.items())


def test_only_the_four_creates_are_creates_and_never_safe_to_repeat() -> None:
    creates = {name for name, op in OPERATIONS.items() if op.creates}
    assert creates == {
        "projects.createProject",
        "apps.createApp",
        "domains.createDomain",
        "deployments.createDeployment",
    }
    assert not any(OPERATIONS[name].safe_to_repeat for name in creates)
    assert all(op.safe_to_repeat for op in OPERATIONS.values() if not op.creates)


def test_reads_are_not_writes_and_lists_are_reads() -> None:
    for op in OPERATIONS.values():
        verb = op.name.split(".")[1]
        assert op.is_write == (not verb.startswith(("get", "list"))), op.name
        assert op.lists == verb.startswith("list"), op.name


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("apps.deleteApp", 202),
        ("projects.deleteProject", 202),
        ("deployments.createDeployment", 201),
        ("deployments.stopDeployment", 202),
        ("domains.verifyDomain", 202),
        ("domains.deleteDomain", 200),
        ("apps.createApp", 200),
        ("environments.updateSettings", 200),
    ],
)
def test_success_statuses_follow_the_spec(name: str, status: int) -> None:
    assert OPERATIONS[name].success_status == status


@pytest.mark.parametrize(
    ("operation", "object_id", "expected"),
    [
        ("apps.updateApp", "app_123", "app.app_123.update_app"),
        ("apps.updateApp", None, "app.*.update_app"),
        ("apps.createApp", "proj_9", "project.proj_9.create_app"),
        ("domains.createDomain", "env_1", "environment.env_1.create_domain"),
        ("deployments.getDeployment", "env_1", "environment.env_1.read_deployment"),
        ("environments.updateSettings", "env_2", "environment.env_2.update_environment"),
        ("gateway.listPolicies", "env_2", "environment.env_2.read_policies"),
        (
            "environments.listEnvironmentVariables",
            "env_2",
            "environment.env_2.read_environment_variables",
        ),
        ("projects.deleteProject", "proj_1", "project.proj_1.delete_project"),
        # wildcard-only operations ignore a known ID
        ("apps.listApps", "app_123", "app.*.read_app"),
        ("projects.createProject", "proj_1", "project.*.create_project"),
        ("projects.listProjects", "proj_1", "project.*.read_project"),
        ("domains.listDomains", "env_1", "environment.*.read_domain"),
        ("deployments.listDeployments", "env_1", "environment.*.read_deployment"),
        ("environments.listEnvironments", "env_1", "environment.*.read_environment"),
    ],
)
def test_permission_strings(operation: str, object_id: str | None, expected: str) -> None:
    assert permission(operation, object_id) == expected


def test_unknown_operation_is_named() -> None:
    with pytest.raises(KeyError, match=r"apps\.frobnicate"):
        get_operation("apps.frobnicate")
