"""YAML 1.1 booleans (yes/no/on/off, y/n, in any case) in every boolean field of the schema are
refused at their place with "write true or false": editors read manifests as YAML 1.2, where
they are text, so accepting them would make the CLI and the editor disagree."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.manifest.schema import manifest_schema
from reconciler.manifest.validate import ManifestInvalid, load_manifest
from reconciler.manifest.yaml_nodes import Converter, compose_single_document

EVERY_BOOLEAN = textwrap.dedent(
    """\
    version: 1
    prune: {variables: true, domains: true, apps: false}
    projects:
      shop:
        deleteProtection: false
        apps:
          web:
            deleteProtection: false
            oci: {image: "nginx:1.27"}
            environments:
              production:
                checks: {policy-tests: {"off": true, reason: r}}
                build: {autoDeploy: true}
                policies:
                  - name: p
                    enabled: true
                    match:
                      - path: {path: {prefix: /a, ignoreCase: true}}
                        header: {name: x, present: true}
                        queryParam: {name: q, present: true}
                    logging:
                      requestHeaders: true
                      responseHeaders: true
                      requestBody: true
                      responseBody: true
                      query: true
    """
)


def boolean_pointers(node: dict[str, Any], where: str) -> set[str]:
    """JSON pointers of every boolean-typed property schema."""
    found = set()
    for name, child in node.get("properties", {}).items():
        pointer = f"{where}/properties/{name}"
        if child.get("type") == "boolean":
            found.add(pointer)
        found |= boolean_pointers(child, pointer)
    return found


def pointer_of(path: tuple[str | int, ...]) -> str:
    """The JSON pointer of the property schema that applies at an instance path."""
    schema = manifest_schema()
    node, pointer = schema, "#"
    for part in path:
        if isinstance(part, int):
            node, pointer = node["items"], f"{pointer}/items"
        elif part in node.get("properties", {}):
            node, pointer = node["properties"][part], f"{pointer}/properties/{part}"
        else:
            node, pointer = node["additionalProperties"], f"{pointer}/additionalProperties"
        if "$ref" in node:
            pointer = node["$ref"]
            node = schema["$defs"][pointer.rsplit("/", 1)[-1]]
    return pointer


def written_booleans() -> dict[str, tuple[int, int, str]]:
    """Pointer -> (line, column, text) of each boolean the template writes."""
    converter = Converter("every-boolean.yaml")
    data = converter.convert(compose_single_document(EVERY_BOOLEAN, converter.display), ())
    found = {}
    for instance_path, (line, column) in converter.values.items():
        value: Any = data
        for part in instance_path:
            value = value[part]
        if isinstance(value, bool):
            found[pointer_of(instance_path)] = (line, column, str(value).lower())
    return found


def test_the_template_writes_every_boolean_field_of_the_schema(tmp_path: Path) -> None:
    schema = manifest_schema()
    expected = boolean_pointers(schema, "#")
    for name, definition in schema["$defs"].items():
        expected |= boolean_pointers(definition, f"#/$defs/{name}")
    assert set(written_booleans()) == expected
    path = tmp_path / "every-boolean.yaml"
    path.write_text(EVERY_BOOLEAN)
    load_manifest([path])  # and is valid as written


FIELDS = sorted(written_booleans())
YAML11_WORDS = ["yes", "no", "on", "off", "y", "n"]


@st.composite
def yaml11_spellings(draw: st.DrawFn) -> str:
    word = draw(st.sampled_from(YAML11_WORDS))
    return "".join(draw(st.sampled_from([c.lower(), c.upper()])) for c in word)


@pytest.mark.parametrize("field", FIELDS, ids=lambda p: p.removeprefix("#/"))
@settings(max_examples=12, deadline=None)
@given(spelling=yaml11_spellings())
def test_yaml11_boolean_is_refused_at_its_place(
    field: str, spelling: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    line, column, written = written_booleans()[field]
    lines = EVERY_BOOLEAN.splitlines(keepends=True)
    text = lines[line - 1]
    assert text[column - 1 : column - 1 + len(written)] == written
    lines[line - 1] = text[: column - 1] + spelling + text[column - 1 + len(written) :]
    path = tmp_path_factory.mktemp("yaml11") / "changed.yaml"
    path.write_text("".join(lines))

    with pytest.raises(ManifestInvalid) as caught:
        load_manifest([path])

    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (line, column)
    assert "write true or false" in problem.message
    assert spelling in problem.message


@pytest.mark.parametrize("spelling", ["true", "True", "TRUE", "false", "False", "FALSE"])
def test_yaml12_booleans_stay_booleans(spelling: str, tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(f"version: 1\nprojects:\n  shop: {{deleteProtection: {spelling}}}\n")
    project = load_manifest([path]).projects[0]
    assert project.delete_protection is (spelling.lower() == "true")
