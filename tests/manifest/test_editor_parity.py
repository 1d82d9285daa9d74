"""Editors agree with the CLI: for every invalid manifest of tests/manifest/invalid/, a Draft
2020-12 validator run on the YAML 1.2 reading of the file (what the YAML language server of
VS Code, Neovim and JetBrains sees; patterns as ECMA-262 regular expressions, as editors run
them) reports a problem at the path of each problem the CLI reports.

Cases JSON Schema cannot express are listed in NOT_EXPRESSIBLE with the reason; the test fails
for a case listed there that editors do flag after all (move it out) and for a new case that
editors do not flag (encode the rule in the schema, or list it with the reason).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import regress
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import YAMLError

from reconciler.export.yaml_out import schema_modeline
from reconciler.manifest.problems import Path as DocPath
from reconciler.manifest.problems import format_path
from reconciler.manifest.schema import manifest_schema
from reconciler.manifest.validate import ManifestInvalid, load_manifest

CORPUS = Path(__file__).parent / "invalid"
CASES = sorted(CORPUS.glob("*.yaml"))

YAML_LEVEL = "the YAML loader refuses this before any schema applies"
YAML11 = (
    "YAML 1.1 reads this as a number or boolean, YAML 1.2 (editors) as something the field "
    "accepts; the CLI refuses the text both readings would not agree on"
)
BEYOND_JSON_INTEGERS = (
    "JSON Schema takes any integer; the loader refuses those no float holds, which no JSON "
    "reader can read (the spec sets no maximum the schema could state)"
)
CROSS_LAYER = "depends on how `defaults` merges into both environments (one schema sees one block)"
TEMPLATE_USE = (
    "depends on the template a use names, which a schema of the using block cannot look up "
    "(names, parameters and what a template holds are data to JSON Schema)"
)
PARAMETER_VALUE = (
    "the value lands in a template's field only once `${param}` is replaced, which editors "
    "do not do (they accept the `${param}` text where the template is written)"
)
OPAQUE = (
    "an `opaque` block takes any member but the known ones a manifest can write, which depends "
    "on the value (one the field itself refuses, a newer platform's, may go there) and on what "
    "the object writes beside the block; the CLI checks it with the schema's own fields"
)
NOT_EXPRESSIBLE = {
    # templates: what a use finds in the template it names
    "template-cycle": TEMPLATE_USE,
    "template-environments-in-settings": TEMPLATE_USE,
    "template-parameter-wrong-type": TEMPLATE_USE,
    "template-undeclared-parameter": TEMPLATE_USE,
    "template-unknown-name": TEMPLATE_USE,
    "template-parameter-out-of-range": PARAMETER_VALUE,
    "template-regions-combined": CROSS_LAYER,
    # the YAML itself
    "yaml-bad-indentation": YAML_LEVEL,
    "yaml-custom-tag": YAML_LEVEL,
    "yaml-duplicate-key": YAML_LEVEL,
    "yaml-duplicate-key-and-more": YAML_LEVEL,
    "yaml-duplicate-project-key": YAML_LEVEL,
    "yaml-int-key": YAML_LEVEL,
    "yaml-list-key": YAML_LEVEL,
    "yaml-mapping-key": YAML_LEVEL,
    "yaml-merge-not-mapping": YAML_LEVEL,
    "yaml-non-string-key": YAML_LEVEL,
    "yaml-python-tag": YAML_LEVEL,
    "yaml-recursive-alias": YAML_LEVEL,
    "yaml-syntax-error": YAML_LEVEL,
    "yaml-two-documents": YAML_LEVEL,
    "yaml-unknown-alias": YAML_LEVEL,
    "runtime-vcpus-infinite": "`.inf` is infinity to YAML but JSON (and JSON Schema) has no such number",
    "runtime-vcpus-beyond-any-float": BEYOND_JSON_INTEGERS,
    # where YAML 1.1 and YAML 1.2 read the same text differently
    "runtime-memory-octal": YAML11,
    "runtime-port-octal": YAML11,
    "top-version-octal": YAML11,
    "runtime-port-hex": "YAML 1.2 reads 0x1F90 as 8080 too, a valid port; the CLI asks for plain decimal",
    "variable-number-base60-ratio": YAML11,
    "variable-number-base60-time": YAML11,
    "variable-number-binary": YAML11,
    "variable-number-hex": YAML11,
    "variable-number-octal-mode": YAML11,
    "variable-number-octal-zip": YAML11,
    "variable-number-plus": YAML11,
    "variable-number-underscores": YAML11,
    "variable-boolean": YAML11,
    # rules across objects, files or layers
    "domain-in-defaults": CROSS_LAYER,
    "defaults-healthcheck-incomplete": CROSS_LAYER,
    "healthcheck-missing-path": "method and path are required after `defaults` are merged: "
    + CROSS_LAYER,
    "domain-listed-twice": "host names compare case-insensitively and without a trailing dot; "
    "uniqueItems compares exact values",
    "domain-two-environments": "a domain is unique across environments and apps",
    "regions-duplicate": "region names are unique in the list; uniqueItems compares whole items",
    "duplicate-pinned-id": "a pinned ID is unique across projects and apps",
    # what only a parser or the file system knows
    "policy-regex-invalid": "RE2 syntax: only RE2 can tell (the CLI compiles it with RE2)",
    "policy-regex-lookahead": "RE2 syntax: only RE2 can tell (the CLI compiles it with RE2)",
    "policy-remote-ip-garbage": "IPv4/IPv6 addresses and CIDR ranges are parsed, not matched",
    "variable-from-file-directory": "the file system: fromFile must name a regular file",
    "variable-from-file-absolute": "the file system: fromFile must stay inside the repository once symbolic links are resolved, which a pattern cannot know",
    # `opaque` blocks hold what the manifest cannot say, which is decided against the schema
    "opaque-known-field": OPAQUE,
    "opaque-flat-fields": OPAQUE,
    "opaque-policy-rule": "a policy's rule once its `opaque` block is merged in: " + OPAQUE,
}


def _timestamp_as_text(constructor: SafeConstructor, node: Any) -> str:
    return str(node.value)  # editors keep dates as the text written


def yaml12(path: Path) -> Any:
    """The file as YAML 1.2 reads it (ruamel.yaml's safe loader; dates stay text)."""
    loader = YAML(typ="safe", pure=True)
    loader.constructor.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)
    return loader.load(path.read_text())


def _ecma_pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    # the `u` flag: the YAML language server compiles patterns as `new RegExp(pattern, "u")`
    if validator.is_type(instance, "string") and regress.Regex(pattern, "u").find(instance) is None:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


EditorValidator = jsonschema.validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})


def editor_paths(data: Any) -> set[str]:
    """Every path an editor marks: where each error is, and for errors about keys (unknown,
    badly named, ruled out by another key) the key's own path."""
    validator = EditorValidator(manifest_schema())
    found: set[str] = set()
    for error in validator.iter_errors(data):
        found |= {format_path(p) for p in _paths(error, data)}
    return found


def _paths(error: ValidationError, data: Any) -> Iterator[DocPath]:
    path: DocPath = tuple(error.absolute_path)
    yield path
    if error.schema is False:  # jsonschema stops the path at the object: the key is its own
        holder: Any = manifest_schema()
        schema_path = list(error.absolute_schema_path)
        for part in schema_path[: len(schema_path) - 1 - schema_path[::-1].index("properties")]:
            holder = holder[part]
            while "$ref" in holder:  # the schema path goes on inside what it refers to
                holder = _pointed_at(holder["$ref"])
        owner = data
        for part in path:
            owner = owner[part]
        yield from (
            (*path, k) for k, s in holder["properties"].items() if s is False and k in owner
        )
    elif error.validator == "additionalProperties":
        yield from (
            (*path, k) for k in error.instance if k not in error.schema.get("properties", {})
        )
    elif error.validator == "propertyNames" or "propertyNames" in error.absolute_schema_path:
        yield (*path, error.instance)
    for sub in error.context or ():
        yield from _paths(sub, data)


def _pointed_at(ref: str) -> Any:
    node: Any = manifest_schema()
    for part in ref.removeprefix("#/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def cli_paths(path: Path) -> set[str]:
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest([path])
    return {problem.path for problem in caught.value.problems}


def read_by_editor(path: Path) -> set[str] | None:
    """The paths an editor marks, or None when YAML 1.2 cannot read the file at all."""
    try:
        return editor_paths(yaml12(path))
    except (YAMLError, OverflowError):  # OverflowError: `.inf`, which JSON has no number for
        return None


def test_every_case_not_expressible_has_a_reason_and_exists() -> None:
    names = {case.stem for case in CASES}
    assert set(NOT_EXPRESSIBLE) <= names
    assert all(reason.strip() for reason in NOT_EXPRESSIBLE.values())


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.stem not in NOT_EXPRESSIBLE], ids=lambda p: p.stem
)
def test_editors_report_what_the_cli_reports(case: Path) -> None:
    marked = read_by_editor(case)
    assert marked is not None, f"YAML 1.2 cannot read {case.name}: classify it"
    missing = cli_paths(case) - marked
    assert not missing, (
        f"the CLI reports {sorted(missing)} but editors mark only {sorted(marked)}: encode the "
        "rule in the schema, or add the case to NOT_EXPRESSIBLE with the reason"
    )


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.stem in NOT_EXPRESSIBLE], ids=lambda p: p.stem
)
def test_cases_listed_as_not_expressible_are_not_seen_by_editors(case: Path) -> None:
    marked = read_by_editor(case)
    assert marked is None or not cli_paths(case) <= marked, (
        f"editors report {case.name} at the CLI's paths: remove it from NOT_EXPRESSIBLE"
    )


def test_the_editor_reading_is_yaml_1_2() -> None:
    text = "a: [yes, on, 0644, 0x1F, '1', 2024-01-01]\n"
    path = CORPUS.parent / "yaml12-probe.yaml"
    try:
        path.write_text(text)
        assert yaml12(path) == {"a": ["yes", "on", 644, 31, "1", "2024-01-01"]}
    finally:
        path.unlink()


def test_editor_patterns_are_ecma_262() -> None:
    validator = EditorValidator({"type": "string", "pattern": "^\\p{Lu}"})
    assert validator.is_valid("Ärger") and not validator.is_valid("ärger")


def test_export_points_editors_at_the_schema_id() -> None:
    schema_id = manifest_schema()["$id"]
    assert schema_modeline() == f"# yaml-language-server: $schema={schema_id}\n"
    assert schema_id == "https://acme.github.io/reconciler/schema/v1/manifest.schema.json"
