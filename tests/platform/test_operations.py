"""The operations, read from the vendored OpenAPI document: names, permissions, statuses, creates;
a document that does not say what is read from it is refused when it is read; it is read only
when an operation or a shape is first needed."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import PlanShapeError
from reconciler.plan.changes import Action, Change, Plan
from reconciler.plan.json_form import plan_from_dict, plan_to_dict
from reconciler.plan.kinds.base import make_call
from reconciler.platform.api_document import ApiDocumentError, api_document
from reconciler.platform.operations import (
    OPERATIONS,
    get_operation,
    operations_from,
    permission,
    wildcard_permission,
)

ROOT = Path(__file__).resolve().parents[2]


def _described(document: Mapping[str, Any], name: str) -> dict[str, Any]:
    described: dict[str, Any] = document["paths"][f"/v1/{name}"]["post"]
    return described


def test_every_path_of_the_document_is_an_operation_named_by_its_id() -> None:
    paths = api_document()["paths"]
    assert len(OPERATIONS) == len(paths) == 31
    for path, methods in paths.items():
        op = OPERATIONS[methods["post"]["operationId"]]
        assert path == f"/v1/{op.name}"


def test_each_operation_needs_exactly_the_permissions_its_description_lists() -> None:
    for op in OPERATIONS.values():
        listed = set(
            re.findall(r"`([a-z]+\.[^`]+)`", _described(api_document(), op.name)["description"])
        )
        accepted = {wildcard_permission(op)}
        if op.id_specific:
            accepted.add(permission(op, f"<{op.scope}_id>"))
        assert listed >= accepted and len(listed) == len(accepted), op.name


def test_statuses_are_the_description_s_and_the_document_answers_them() -> None:
    for op in OPERATIONS.values():
        described = _described(api_document(), op.name)
        statuses = {int(status) for status in described["responses"]}
        # the document adds the HTTP-level 413 and 415, which the spec's lists leave out
        assert {op.success_status, *op.error_statuses} == statuses - {413, 415}, op.name
        assert f"Success {op.success_status}" in described["description"]


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


def test_listed_items_are_told_apart_by_their_id_and_variables_by_their_key() -> None:
    keys = {op.name: op.item_key for op in OPERATIONS.values() if op.lists}
    assert keys.pop("environments.listEnvironmentVariables") == "key"
    assert set(keys.values()) == {"id"}


def test_successes_without_fields_return_no_data() -> None:
    empty = {op.name for op in OPERATIONS.values() if not op.returns_data}
    assert "domains.deleteDomain" in empty  # its description does not say so: its schema does
    assert "environments.updateSettings" in empty
    assert all(op.data_shape is None for op in OPERATIONS.values() if op.name in empty)
    assert all(op.data_shape is not None for op in OPERATIONS.values() if op.name not in empty)


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
    assert permission(get_operation(operation), object_id) == expected


def test_a_misspelt_operation_is_named_with_the_one_meant() -> None:
    with pytest.raises(
        KeyError, match=r"'environments\.updateSetings'.*'environments\.updateSettings'"
    ):
        get_operation("environments.updateSetings")
    with pytest.raises(KeyError, match=r"apps\.frobnicate"):
        make_call("apps.frobnicate", {})


def test_a_call_holds_its_operation_and_a_plan_s_json_names_it() -> None:
    call = make_call("apps.updateApp", {"project": "shop", "app": "web"}, object_id="app_1")
    assert call.operation is OPERATIONS["apps.updateApp"]
    assert (call.permission, call.creates) == ("app.app_1.update_app", False)
    change = Change("app.shop/web", "app", Action.UPDATE, {}, {}, calls=(call,))
    written = plan_to_dict(Plan((change,)))
    assert written["changes"][0]["calls"][0]["operation"] == "apps.updateApp"
    assert plan_from_dict(written).changes[0].calls[0].operation is call.operation


def test_a_plan_naming_an_operation_the_platform_does_not_have_is_refused() -> None:
    call = make_call("apps.updateApp", {"project": "shop", "app": "web"})
    written = plan_to_dict(
        Plan((Change("app.shop/web", "app", Action.UPDATE, {}, {}, calls=(call,)),))
    )
    written["changes"][0]["calls"][0]["operation"] = "apps.updateAp"
    with pytest.raises(PlanShapeError, match="operation"):
        plan_from_dict(written)


# ---- a document that does not say what is read from it -----------------------------------------


def _broken(name: str, **changed: Any) -> dict[str, Any]:
    document = copy.deepcopy(dict(api_document()))
    _described(document, name).update(changed)
    return document


@pytest.mark.parametrize(
    "description",
    [
        "Creates an app.",  # no row at all
        "Permission: one of `project.*.create_app`, `project.<project_id>.create_app`. Success 200.",
        "Permission: `project.*.create_app`, `app.*.create_app`. Success 200. Errors: 400.",
        "Permission: one of `project.*.create_app`, `project.<app_id>.create_app`. Success 200. "
        "Errors: 400.",
        "Permission: `project.<project_id>.create_app`. Success 200. Errors: 400.",
        "Permission: `project.*.create_app`. Success 201. Errors: 400.",  # 201 is not answered
        "Permission: `project.*.create_app`. Success 200. Errors: 400, 418.",  # nor is 418
    ],
)
def test_a_description_without_the_spec_s_row_is_refused(description: str) -> None:
    with pytest.raises(ApiDocumentError, match=r"apps\.createApp"):
        operations_from(_broken("apps.createApp", description=description))


def test_a_path_that_is_not_its_operation_s_is_refused() -> None:
    with pytest.raises(ApiDocumentError, match=r"/v1/apps\.getApp"):
        operations_from(_broken("apps.getApp", operationId="apps.readApp"))


def test_a_list_whose_items_have_no_id_and_no_known_key_is_refused() -> None:
    document = _broken("apps.listApps")
    app = document["components"]["schemas"]["App"]
    app["properties"] = {k: v for k, v in app["properties"].items() if k != "id"}
    with pytest.raises(ApiDocumentError, match=r"apps\.listApps"):
        operations_from(document)


# ---- read once, when first needed ----------------------------------------------------------------

VALIDATE = """
import runpy, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
sys.argv = ["reconciler", "validate", "-f", sys.argv[1]]
try:
    runpy.run_module("reconciler", run_name="__main__")
except SystemExit:
    pass
print("read" if any(path.endswith("platform-api.openapi.json") for path in opened) else "unread")
"""


def test_a_command_that_calls_no_operation_never_reads_the_document() -> None:
    quickstart = str(ROOT / "examples" / "quickstart.yaml")
    done = subprocess.run(
        [sys.executable, "-c", VALIDATE, quickstart], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "unread"
