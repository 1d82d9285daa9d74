"""The registry is the one source of truth: the schema is generated from it, every rule is
implemented and documented."""

from __future__ import annotations

import re
from pathlib import Path

from reconciler.checks.registry import (
    LIMITS_SCHEMA,
    RULES,
    WAIVER_SCHEMA,
    checks_schema,
    waivers_schema,
)
from reconciler.checks.static import STATIC_RULES
from reconciler.manifest.schema import manifest_schema

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "checks.md"


def test_the_shipped_schema_is_generated_from_the_registry() -> None:
    schema = manifest_schema()
    assert schema["properties"]["checks"] == checks_schema()
    assert schema["properties"]["limits"] == LIMITS_SCHEMA
    assert schema["$defs"]["waivers"] == waivers_schema()
    assert schema["$defs"]["waiver"] == WAIVER_SCHEMA
    for where in ("project", "app", "settings"):
        assert schema["$defs"][where]["properties"]["checks"]["$ref"] == "#/$defs/waivers"


def test_rule_ids_are_unique_kebab_case_with_a_one_line_rationale() -> None:
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
    for rule in RULES:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", rule.id)
        assert rule.rationale.endswith(".") and "\n" not in rule.rationale
        assert rule.default_severity in ("error", "warning", "off")


def test_every_static_rule_is_implemented() -> None:
    assert set(STATIC_RULES) == {rule.id for rule in RULES if rule.stage == "static"}


def test_the_guide_documents_every_rule_with_its_default_and_parameters() -> None:
    guide = GUIDE.read_text()
    for rule in RULES:
        section = re.search(rf"^### `{rule.id}`\n(.*?)(?=^### |^## |\Z)", guide, re.S | re.M)
        assert section, f"docs/guides/checks.md has no section for {rule.id}"
        text = section.group(1)
        assert f"Default severity: **{rule.default_severity}**" in text, rule.id
        assert f"Runs in: **{'validate' if rule.stage == 'static' else 'plan'}**" in text
        for param in rule.params:
            assert f"`{param.name}`" in text, (rule.id, param.name)
        assert "Example finding" in text, rule.id
