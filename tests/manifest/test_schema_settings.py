"""The schema's settings members are made from their declaration (model.py) and the platform's
spec (reconciler/manifest/schema_settings.py): nothing of them is kept from the schema file."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from reconciler.manifest import schema_settings
from reconciler.manifest.model import UNSET, Build, Doc, Managed, Runtime, declared
from reconciler.manifest.schema_derived import render, with_derived
from reconciler.manifest.schema_settings import (
    NOT_CHECKED,
    DeclarationError,
    update_settings_fields,
    with_settings,
)
from reconciler.manifest.settings import SETTING_FIELDS
from reconciler.platform.api_document import api_document

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "manifest.schema.json"


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    return loaded


def spec() -> dict[str, Any]:
    return copy.deepcopy(dict(api_document()))


def settings_of(made: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = made["$defs"]["settings"]["properties"]
    return properties


def test_members_left_out_or_edited_by_hand_are_made_again() -> None:
    broken = schema()
    settings = settings_of(broken)
    del settings["build"]["properties"]["watchPaths"]
    settings["runtime"]["properties"]["port"] = {"title": "edited"}
    settings["runtime"]["properties"]["healthcheck"]["properties"]["path"]["pattern"] = "x"
    settings["regions"]["maxItems"] = 9
    broken["$defs"]["region"]["properties"]["replicas"] = {}
    del broken["$defs"]["region"]["required"]
    assert render(with_derived(broken, api_document())) == SCHEMA_FILE.read_text()


def test_bounds_and_enumerations_come_from_the_platforms_spec() -> None:
    newer = spec()
    fields = update_settings_fields(newer)
    fields["port"]["maximum"] = 1024
    fields["healthcheck"]["properties"]["intervalSeconds"]["maximum"] = 60
    fields["regions"]["items"]["properties"]["replicas"]["properties"]["max"]["maximum"] = 9
    made = schema()
    with_settings(made, newer)
    runtime = settings_of(made)["runtime"]["properties"]
    assert runtime["port"]["maximum"] == 1024
    assert runtime["healthcheck"]["properties"]["intervalSeconds"]["maximum"] == 60
    replicas = made["$defs"]["region"]["properties"]["replicas"]["properties"]
    assert replicas["max"]["maximum"] == 9
    # and what the templates take from them follows
    template = with_derived(made, newer)["$defs"]["templateSettings"]["properties"]["runtime"]
    assert template["properties"]["port"]["anyOf"][0]["maximum"] == 1024


def test_a_declared_type_or_enumeration_the_spec_contradicts_is_refused() -> None:
    newer = spec()
    update_settings_fields(newer)["shutdownSignal"]["enum"].append("SIGUSR1")
    with pytest.raises(DeclarationError, match=r"runtime\.shutdownSignal"):
        with_settings(schema(), newer)
    newer = spec()
    update_settings_fields(newer)["port"]["type"] = "string"
    with pytest.raises(DeclarationError, match=r"runtime\.port: declared integer"):
        with_settings(schema(), newer)


def test_a_setting_the_spec_does_not_name_is_refused() -> None:
    newer = spec()
    del update_settings_fields(newer)["autoDeploy"]
    with pytest.raises(DeclarationError, match=r"build\.autoDeploy: updateSettings has no field"):
        with_settings(schema(), newer)


def test_every_setting_is_in_the_schema_by_its_path() -> None:
    settings = settings_of(schema())
    for setting in SETTING_FIELDS:
        block = settings[setting.section]["properties"] if setting.section else settings
        assert block[setting.name]["title"] == setting.declared.doc.title


def test_the_one_bound_of_the_spec_the_schema_leaves_out() -> None:
    """A watch path's 1024 characters: the schema has never checked it (the platform does)."""
    assert NOT_CHECKED == {"build.watchPaths[]": ("maxLength",)}
    item = settings_of(schema())["build"]["properties"]["watchPaths"]["items"]
    assert "maxLength" not in item
    assert update_settings_fields(api_document())["watchPaths"]["items"]["maxLength"] == 1024


@dataclass(frozen=True)
class NewerRuntime(Runtime):
    restart_policy: Managed[Literal["always", "never"]] = field(
        default=UNSET,
        metadata=declared(
            "restartPolicy", Doc("Restart policy", "When a stopped instance starts.", ("always",))
        ),
    )


def test_a_new_setting_is_its_declaration_and_the_specs_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    newer = spec()
    update_settings_fields(newer)["restartPolicy"] = {"type": "string", "enum": ["always", "never"]}
    monkeypatch.setattr(schema_settings, "SECTIONS", {"build": Build, "runtime": NewerRuntime})
    made = with_derived(schema(), newer)
    runtime = settings_of(made)["runtime"]["properties"]
    assert list(runtime)[-2:] == ["restartPolicy", "opaque"]
    assert runtime["restartPolicy"] == {
        "title": "Restart policy",
        "type": "string",
        "enum": ["always", "never"],
        "description": "When a stopped instance starts.",
        "examples": ["always"],
    }
    template = made["$defs"]["templateSettings"]["properties"]["runtime"]["properties"]
    assert template["restartPolicy"]["anyOf"][0]["enum"] == ["always", "never"]
