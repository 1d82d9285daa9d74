"""The JSON Schema: valid Draft 2020-12, documented everywhere, shipped in the package,
and every example manifest validates against it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from reconciler.manifest.model import UNSET
from reconciler.manifest.schema import manifest_schema, schema_text
from reconciler.manifest.schema_derived import render, with_derived
from reconciler.manifest.validate import load_manifest
from reconciler.platform.api_document import api_document

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "schemas" / "manifest.schema.json"
EXAMPLES = ROOT / "examples"
EXAMPLE_MANIFESTS = [
    EXAMPLES / "quickstart.yaml",
    EXAMPLES / "image-app.yaml",
    *sorted((EXAMPLES / "company").glob("*.yaml")),
]


# Keywords whose subschemas state rules about the fields declared elsewhere (one source per
# app, exactly one of firewall/logging, ...), not fields of their own.
RULES = ("if", "then", "else", "dependentSchemas", "not")


def subschemas(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            if key not in ("examples", "const", "enum", "default", *RULES):
                yield from subschemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from subschemas(value, f"{where}/{index}")


def test_schema_is_valid_draft_2020_12() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] and schema["title"]


def test_package_ships_the_canonical_schema() -> None:
    assert schema_text() == SCHEMA_FILE.read_text()
    assert manifest_schema() == json.loads(SCHEMA_FILE.read_text())


def test_every_property_has_a_title_a_description_and_examples() -> None:
    """Editors head a hover with the title, so each field has its own (not the manifest's).
    A key refused by name (`not`, with the reason in `errorMessage`) has no example to give."""
    missing = []
    for where, node in subschemas(manifest_schema()):
        for name, prop in node.get("properties", {}).items():
            keys = (
                ("title", "description") if "not" in prop else ("title", "description", "examples")
            )
            if not all(prop.get(key) for key in keys):
                missing.append(f"{where}/properties/{name}")
    assert not missing


def test_titles_name_their_field() -> None:
    titles = [
        node["title"]
        for where, node in subschemas(manifest_schema())
        if "title" in node and where != "#"
    ]
    assert "reconciler manifest" not in titles
    assert len(titles) > 90


def test_every_object_refuses_unknown_keys() -> None:
    open_objects = [
        where
        for where, node in subschemas(manifest_schema())
        if node.get("type") in ("object", ["object", "null"])
        and node.get("additionalProperties") is not False
        and not isinstance(node.get("additionalProperties"), dict)  # maps keyed by slug
    ]
    # the one open object: members of the platform's objects that reconciler does not know
    assert open_objects == ["#/$defs/opaque"]


def test_each_documented_example_validates_against_its_own_subschema() -> None:
    root = Draft202012Validator(manifest_schema())
    checked = 0
    for where, node in subschemas(manifest_schema()):
        if "examples" not in node or where.endswith("/items"):
            continue
        validator = root.evolve(schema=node)
        for example in node["examples"]:
            errors = [e.message for e in validator.iter_errors(example)]
            assert not errors, f"{where}: example {example!r}: {errors}"
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("path", EXAMPLE_MANIFESTS, ids=lambda p: p.name)
def test_example_validates_against_the_schema(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    errors = [e.message for e in Draft202012Validator(manifest_schema()).iter_errors(data)]
    assert not errors


def test_examples_are_valid_manifests_with_what_the_readme_says() -> None:
    quickstart = load_manifest([EXAMPLES / "quickstart.yaml"])
    app = quickstart.projects[0].apps[0]
    assert app.git and [e.name for e in app.environments] == ["production", "preview"]
    literal_only = all(
        not v.is_secret_reference for e in app.environments for v in e.variables or ()
    )
    assert literal_only, "the quickstart must apply with no secrets set"

    image = load_manifest([EXAMPLES / "image-app.yaml"]).projects[0].apps[0]
    assert image.oci and image.git is UNSET
    production = image.environment("production")
    assert production and production.domains and production.policies
    members = {m for p in production.policies for item in p.match for m in item}
    assert members == {"path", "method", "header", "queryParam", "remoteIp"}
    api = [p.to_api() for p in production.policies]
    flat = json.dumps(api)
    for shape in ('"exact"', '"prefix"', '"regex"', '"present"', '"value"', '"in"', '"notIn"'):
        assert shape in flat
    assert {p.rule_kind for p in production.policies} == {"firewall", "logging"}
    assert any(v.is_secret_reference for v in production.variables or ())

    company = load_manifest([EXAMPLES / "company"])
    assert len(company.sources) >= 3 and len(company.projects) >= 3
    text = "".join(p.read_text() for p in (EXAMPLES / "company").glob("*.yaml"))
    for shown in ("templates:", "extends: [", "params:", "appDefaults:", "prepend:", "defaults:"):
        assert shown in text, shown


def test_the_derived_definitions_are_made_from_settings() -> None:
    """Templates and appDefaults take the settings' fields with their own rules for values
    (schema_derived.py), the settings' members come from their declaration and the platform's
    spec (schema_settings.py); `python -m tests.manifest.regenerate_schema` makes them again."""
    text = SCHEMA_FILE.read_text()
    assert render(with_derived(json.loads(text), api_document())) == text, (
        "stale: python -m tests.manifest.regenerate_schema"
    )
