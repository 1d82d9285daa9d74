"""Proof: the shipped OpenAPI document (schemas/platform-api.openapi.json) is a valid OpenAPI 3.1
description of all 31 operations, agrees with the emulator's request validation, and the
emulator, fuzzed through it by schemathesis, never answers 5xx and always answers what the
document promises (documented status, content type, schema).

Generated bodies mostly name objects that do not exist; to reach past the lookups, the test
points a share of them (chosen from the body itself, so runs repeat) at seeded objects: the
project `shop`, its git app `web` and image app `img`, their environments, a deployment and a
domain, a gateway policy.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.definitions import OPENAPI_31

from reconciler.emulator.app import OPERATIONS as EMULATOR_OPERATIONS
from reconciler.emulator.validation import Any_, Arr, Bool, Int, Num, Obj, Spec, Str
from reconciler.platform.operations import OPERATIONS

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT_PATH = ROOT / "schemas" / "platform-api.openapi.json"
DOCUMENT = json.loads(DOCUMENT_PATH.read_text())

schema = schemathesis.openapi.from_dict(DOCUMENT)


# ---- the document itself -----------------------------------------------------------------------


def test_document_is_valid_openapi_3_1() -> None:
    jsonschema.Draft202012Validator(OPENAPI_31).validate(DOCUMENT)
    for component in DOCUMENT["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(component)
    for path, item in DOCUMENT["paths"].items():
        post = item["post"]
        jsonschema.Draft202012Validator.check_schema(
            post["requestBody"]["content"]["application/json"]["schema"]
        )
        assert post["operationId"] == path.removeprefix("/v1/")


def test_every_operation_is_documented_with_its_success_and_error_statuses() -> None:
    assert len(DOCUMENT["paths"]) == 31
    for name, operation in OPERATIONS.items():
        post = DOCUMENT["paths"][f"/v1/{name}"]["post"]
        statuses = set(post["responses"])
        assert str(operation.success_status) in statuses, name
        assert {"400", "401", "429", "500"} <= statuses, name
        if operation.lists:
            success = post["responses"]["200"]["content"]["application/json"]["schema"]
            assert success["required"] == ["data", "pagination"], name
    assert "503" in DOCUMENT["paths"]["/v1/domains.listDomains"]["post"]["responses"]
    assert DOCUMENT["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def _documented(spec: Spec, schema_: dict[str, Any], where: str) -> list[str]:
    """Where the document's request schema is looser or stricter than the emulator's check."""
    problems: list[str] = []
    types = schema_.get("type")
    types = set(types) if isinstance(types, list) else {types}
    if spec.nullable != ("null" in types or "null" in json.dumps(schema_.get("anyOf", ""))):
        problems.append(f"{where}: nullable differs")
    expected: dict[str, Any] = {}
    if isinstance(spec, Str):
        expected = (
            {"enum": list(spec.enum) + ([None] if spec.nullable else [])} if spec.enum else {}
        )
        if not spec.enum:
            if spec.min:
                expected["minLength"] = spec.min
            if spec.max is not None:
                expected["maxLength"] = spec.max
    elif isinstance(spec, Int | Num):
        if spec.min is not None:
            expected["minimum"] = spec.min
        if spec.step:
            expected["multipleOf"] = spec.step
    elif isinstance(spec, Arr):
        if spec.max is not None:
            expected["maxItems"] = spec.max
        if spec.min:
            expected["minItems"] = spec.min
        problems += _documented(spec.item, schema_["items"], f"{where}[]")
    elif isinstance(spec, Obj):
        if schema_.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties is not false")
        if sorted(schema_.get("properties", {})) != sorted(spec.fields):
            problems.append(f"{where}: members differ")
        if sorted(schema_.get("required", [])) != sorted(spec.required):
            problems.append(f"{where}: required differs")
        for name, member in spec.fields.items():
            if name in schema_.get("properties", {}):
                problems += _documented(member, schema_["properties"][name], f"{where}.{name}")
    elif not isinstance(spec, Bool | Any_):
        problems.append(f"{where}: unknown spec {type(spec).__name__}")
    for key, value in expected.items():
        if schema_.get(key) != value:
            problems.append(
                f"{where}: {key} is {schema_.get(key)!r}, the emulator checks {value!r}"
            )
    return problems


def test_request_schemas_agree_with_the_emulator_validation() -> None:
    """Drift check both ways: a bound changed in the emulator or in the document shows here."""
    problems: list[str] = []
    for name, operation in EMULATOR_OPERATIONS.items():
        request = DOCUMENT["paths"][f"/v1/{name}"]["post"]["requestBody"]["content"]
        problems += _documented(operation.spec, request["application/json"]["schema"], name)
    assert problems == []


def test_list_operations_document_limit_and_cursor() -> None:
    for name, operation in OPERATIONS.items():
        if not operation.lists:
            continue
        request = DOCUMENT["paths"][f"/v1/{name}"]["post"]["requestBody"]["content"]
        properties = request["application/json"]["schema"]["properties"]
        assert properties["limit"] == {"type": "integer", "minimum": 1, "maximum": 100}, name
        assert properties["cursor"]["type"] == "string", name


# ---- fuzzing the emulator through the document --------------------------------------------------


@pytest.fixture
def seeded(emulator: Any) -> dict[str, str]:
    """Objects that generated bodies are pointed at, so handlers run past their lookups."""

    def data(operation: str, body: dict[str, Any]) -> dict[str, Any]:
        response = emulator.call(operation, body)
        assert response.status_code < 300, response.text
        return response.json().get("data", {})

    data("projects.createProject", {"name": "Shop", "slug": "shop"})
    data("apps.createApp", {"project": "shop", "name": "Web", "slug": "web", "git": {}})
    data(
        "apps.createApp",
        {"project": "shop", "name": "Img", "slug": "img", "oci": {"image": "nginx:1.27"}},
    )
    data(
        "environments.setEnvironmentVariables",
        {
            "project": "shop",
            "app": "web",
            "environment": "production",
            "variables": [{"key": "MODE", "value": "x", "kind": "recoverable"}],
        },
    )
    data(
        "gateway.setPolicies",
        {
            "project": "shop",
            "app": "web",
            "environment": "production",
            "policies": [{"name": "deny", "enabled": True, "firewall": {"action": "ACTION_DENY"}}],
        },
    )
    domain = data(
        "domains.createDomain",
        {"project": "shop", "app": "web", "environment": "preview", "domain": "web.example.com"},
    )
    deployment = data(
        "deployments.createDeployment",
        {
            "project": "shop",
            "app": "img",
            "environment": "preview",
            "image": {"dockerImage": "a:1"},
        },
    )
    policies = emulator.call(
        "gateway.listPolicies", {"project": "shop", "app": "web", "environment": "production"}
    ).json()["data"]
    return {
        "policyId": policies[0]["id"],
        "project": "shop",
        "app": "web",
        "environment": "production",
        "deploymentId": deployment["deploymentId"],
        "domain": "web.example.com",
        "domainId": domain["domainId"],
    }


def _aim(body: Any, seeded: dict[str, str]) -> Any:
    """Point two bodies in three at the seeded objects (decided by the body's own hash)."""
    if not isinstance(body, dict):
        return body
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).digest()
    if digest[0] % 3 == 0:
        return body
    aimed = dict(body)
    app = "img" if digest[1] % 2 else "web"
    for key in ("project", "app", "environment", "deploymentId", "domain", "policyId"):
        if key in aimed and isinstance(aimed[key], str):
            aimed[key] = app if key == "app" else seeded[key]
    return aimed


def _negative(case: Any) -> tuple[bool, bool]:
    """(the case breaks the document on purpose, its headers are the broken part)."""
    meta = getattr(case, "_meta", None)
    if meta is None or not meta.generation.mode.is_negative:
        return False, False
    headers = [
        info.mode.is_negative for location, info in meta.components.items()
        if location.name.lower().startswith("header")
    ]  # fmt: skip
    return True, any(headers)


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_emulator_conforms_to_the_document(
    case: Any, emulator: Any, seeded: dict[str, str]
) -> None:
    negative, broken_headers = _negative(case)
    if not negative:
        case.body = _aim(case.body, seeded)
    auth = {} if broken_headers else {"Authorization": f"Bearer {emulator.api_key}"}
    response = case.call(base_url=emulator.base_url, headers=auth)
    assert response.status_code < 500, f"{case.operation.label}: {response.text[:500]}"
    case.validate_response(
        response,
        # objects named by generated bodies mostly do not exist: 404/409/412 are right answers
        excluded_checks=[schemathesis.checks.positive_data_acceptance],
    )
