"""The manifest reference in Markdown, generated from the JSON Schema.

The field reference of the docs (docs/reference/manifest.md) is this output, so the schema
stays the single place where a field is described (editors show the same text on hover).
`reconciler schema --format markdown` prints it; a test keeps the page in step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

SECTION_TITLES = {
    "": "Top level",
    "project": "Project (`projects.<slug>`)",
    "app": "App (`projects.<slug>.apps.<slug>`)",
    "settings": "Environment settings (`environments.production`, `environments.preview`, `defaults`)",
    "region": "Region (`regions[]`)",
    "variable": "Variable (`variables.<KEY>`)",
    "variableObject": "Variable in long form (`variables.<KEY>: {...}`)",
    "policy": "Gateway policy (`policies[]`)",
    "matchItem": "Match condition (`match[]`)",
    "stringMatch": "String match (`path.path`, `header.value`, `queryParam.value`)",
    "policyTest": "Policy test (`policyTests[]`)",
    "policyTestRequest": "Test request (`policyTests[].request`)",
    "policyTestValues": "Test values (`request.query.<name>`, `request.headers.<name>`)",
    "extends": "Extends (`extends`)",
    "templateName": "Template name",
    "parameterDeclaration": "Template parameter (`templates.<name>.params.<param>`)",
    "parameterText": "Text with a parameter (`${param}`)",
    "appDefaults": "App defaults (`appDefaults`, `projects.<slug>.appDefaults`)",
    "template": "Template (`templates.<name>`)",
}
SECTION_TITLES["sharedSettings"] = SECTION_TITLES["templateSettings"] = SECTION_TITLES["settings"]
SUMMARISED = {
    "appDefaults": "Besides these, every field of [Environment settings](#environment-settings-"
    "environmentsproduction-environmentspreview-defaults); its `regions`, `domains`, `policies` "
    "and `policyTests` may also be `{prepend: [...], append: [...]}`.",
    "template": "Besides these, every field of [Environment settings](#environment-settings-"
    "environmentsproduction-environmentspreview-defaults), where any value may be text with "
    "`${param}`; its `regions`, `domains`, `policies` and `policyTests` may also be "
    "`{prepend: [...], append: [...]}`.",
}
"""Derived definitions (schema_derived.py) shown by their own fields only; the rest of the
derived ones, copies of definitions above with other rules for values, are not shown."""


def reference_markdown(schema: dict[str, Any]) -> str:
    """Every field of the manifest with its type, bounds and description."""
    sections = [("", schema), *schema.get("$defs", {}).items()]
    parts = []
    for name, node in sections:
        if "$comment" in node and name not in SUMMARISED:
            continue
        parts.append(f"#### {SECTION_TITLES.get(name, name)}\n")
        if node.get("description"):
            parts.append(f"{_one_line(node['description'])}\n")
        if name in SUMMARISED:
            parts.append(f"{SUMMARISED[name]}\n")
        rows = [row for row in _rows(node, prefix="") if "/properties/" not in row[1]]
        if rows:
            parts.append("| Field | Type | Description |\n|---|---|---|")
            parts.extend(f"| `{path}` | {kind} | {text} |" for path, kind, text in rows)
        parts.append("")
    return "\n".join(parts)


def _rows(node: dict[str, Any], prefix: str) -> Iterator[tuple[str, str, str]]:
    for key, child in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        yield path, _kind(child), _one_line(child.get("description", ""))
        if "properties" in child:
            yield from _rows(child, prefix=f"{path}.")


def _kind(node: dict[str, Any]) -> str:
    if "$ref" in node:
        return _ref_name(node["$ref"])
    kinds = node.get("type", "")
    kind = " or ".join(kinds) if isinstance(kinds, list) else kinds
    if kind == "array" and "items" in node:
        kind = f"list of {_kind(node['items'])}"
    elif kind == "object" and isinstance(node.get("additionalProperties"), dict):
        kind = f"map of {_kind(node['additionalProperties'])}"
    bounds = _bounds(node)
    return f"{kind} ({bounds})" if bounds else kind


def _bounds(node: dict[str, Any]) -> str:
    found = []
    if "enum" in node:
        found.append(" \\| ".join(f"`{v}`" for v in node["enum"]))
    for low, high, unit in (
        ("minLength", "maxLength", "chars"),
        ("minItems", "maxItems", "items"),
        ("minimum", "maximum", ""),
    ):
        if low in node or high in node:
            found.append(f"{node.get(low, 0)}..{node.get(high, '')} {unit}".strip())
    if "multipleOf" in node:
        found.append(f"step {node['multipleOf']}")
    return ", ".join(found)


def _ref_name(ref: str) -> str:
    name = ref.rsplit("/", 1)[-1] if "/properties/" not in ref else ref
    return f"[{name}](#{_anchor(SECTION_TITLES.get(name, name))})"


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, spaces to hyphens, punctuation dropped."""
    kept = (c for c in title.lower() if c.isalnum() or c in " -_")
    return "".join(kept).replace(" ", "-")


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
