"""The YAML export writes: no line of it is a workflow command, however long a quoted value."""

from __future__ import annotations

import re

import yaml

from reconciler.export.yaml_out import dump_manifest

COMMAND_LINE = re.compile(r"^\s*::", re.MULTILINE)


def test_a_long_value_is_never_folded_onto_a_line_that_starts_with_colons() -> None:
    """PyYAML folds a value past 100 columns at a space; the hypothesis search of tests/security
    found a value whose fold put `::add-mask::destroy` first on a line."""
    description = "x" * 90 + " ::add-mask::destroy"
    document = {"projects": {"shop": {"apps": {"web": {"name": description}}}}}
    text = dump_manifest(document)
    assert not COMMAND_LINE.search(text), text
    assert yaml.safe_load(text)["projects"]["shop"]["apps"]["web"]["name"] == description
