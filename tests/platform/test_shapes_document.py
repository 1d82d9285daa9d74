"""The shapes of what the platform answers, read from the vendored OpenAPI document's schemas:
documented members type-checked, documented string values known, and `required` only where no
reader could survive the absence (the document promises more)."""

from __future__ import annotations

import pytest

from reconciler.platform.api_document import ApiDocumentError
from reconciler.platform.operations import OPERATIONS
from reconciler.platform.shapes import (
    APP,
    ENVIRONMENT,
    ENVIRONMENT_NAMES,
    FINAL_DEPLOYMENT_STATUSES,
    POLICY,
    REGION,
    VARIABLE,
    VARIABLE_KINDS,
    shape_of,
    shape_problem,
    unknown_values,
)

A_DOMAIN = {"id": "dom_1", "domain": "shop.example.com", "status": "pending", "dnsRecords": []}


def test_the_vocabularies_are_the_values_the_document_gives() -> None:
    assert ENVIRONMENT.fields["kind"].values == ENVIRONMENT_NAMES
    assert VARIABLE.fields["kind"].values == VARIABLE_KINDS
    deployment = OPERATIONS["deployments.getDeployment"].data_shape
    assert deployment is not None
    assert FINAL_DEPLOYMENT_STATUSES.issubset(deployment.fields["status"].values)


def test_documented_members_have_their_documented_type() -> None:
    assert shape_problem({"id": "app_1", "isRolledBack": "no"}, APP, "data") == (
        "data.isRolledBack is not a boolean"
    )
    region = {"name": "fra", "replicas": {"min": 1, "max": "2"}}
    assert shape_problem(region, REGION, "data") == "data.replicas.max is not an integer"
    assert shape_problem({"firewall": {"action": 1}}, POLICY, "data") == (
        "data.firewall.action is not a string"
    )


def test_only_what_readers_key_on_is_required() -> None:
    domain = OPERATIONS["domains.getDomain"].data_shape
    assert domain is not None
    # the document requires projectId, appId, environmentId, createdAt too: still read
    assert shape_problem(A_DOMAIN, domain, "data") is None
    assert shape_problem({"domain": "shop.example.com"}, domain, "data") == "data.id is missing"
    assert shape_problem({"name": "fra"}, REGION, "data") == "data.replicas is missing"
    created = OPERATIONS["apps.createApp"].data_shape
    assert created is not None
    assert shape_problem({}, created, "data") == "data.appId is missing"
    assert shape_problem({"name": "web"}, APP, "data") is None


def test_a_value_the_document_does_not_list_is_reported_not_refused() -> None:
    policy = {"firewall": {"action": "ACTION_ALLOW"}}
    assert shape_problem(policy, POLICY, "data") is None
    assert unknown_values(policy, POLICY) == ["firewall.action"]


def test_a_schema_of_a_type_not_read_is_refused() -> None:
    with pytest.raises(ApiDocumentError, match=r"App\.tags"):
        shape_of({"type": "null"}, "App.tags")
