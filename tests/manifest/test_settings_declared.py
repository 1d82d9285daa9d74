"""The environment settings' one declaration (manifest/model.py, manifest/settings.py): it
names what the schema and the platform's shapes name, and a live answer read into the model
keeps what the model does not know beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import UnexpectedResponse
from reconciler.manifest.model import UNSET, Build, Environment, Healthcheck, Region, Runtime
from reconciler.manifest.settings import (
    HEALTHCHECK_DEFAULTS,
    SETTING_FIELDS,
    declared_fields,
    from_data,
    to_data,
)
from reconciler.plan.kinds.base import Location
from reconciler.plan.kinds.settings import live_model, plan_settings, read_environment
from reconciler.platform.shapes import HEALTHCHECK

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "manifest.schema.json").read_text()
)
SETTINGS = SCHEMA["$defs"]["settings"]["properties"]


def names(model: type[Any]) -> list[str]:
    return [field.name for field in declared_fields(model)]


@pytest.mark.parametrize(("model", "section"), [(Build, "build"), (Runtime, "runtime")])
def test_a_block_declares_the_members_of_the_schema_in_their_order(
    model: type[Any], section: str
) -> None:
    """(tests/forward/test_opaque_manifest.py holds the schema's members to the platform's.)"""
    assert names(model) == [k for k in SETTINGS[section]["properties"] if k != "opaque"]


def test_a_health_check_and_a_region_declare_the_members_of_the_schema() -> None:
    healthcheck = SETTINGS["runtime"]["properties"]["healthcheck"]["properties"]
    assert names(Healthcheck) == list(healthcheck) == list(HEALTHCHECK.fields)
    region = SCHEMA["$defs"]["region"]["properties"]
    assert names(Region) == ["name", *(f"replicas.{k}" for k in region["replicas"]["properties"])]


def test_the_health_check_defaults_are_the_ones_the_schema_states() -> None:
    healthcheck = SETTINGS["runtime"]["properties"]["healthcheck"]["properties"]
    assert HEALTHCHECK_DEFAULTS == {"intervalSeconds": 10, "timeoutSeconds": 5,
                                    "failureThreshold": 3, "initialDelaySeconds": 0}  # fmt: skip
    for name, default in HEALTHCHECK_DEFAULTS.items():
        assert healthcheck[name]["description"].endswith(f"Default {default}.")


def test_every_setting_is_an_update_settings_field_by_its_manifest_path() -> None:
    assert [field.path for field in SETTING_FIELDS] == [
        *(f"build.{name}" for name in names(Build)),
        *(f"runtime.{name}" for name in names(Runtime)),
        "regions",
    ]


LIVE = {
    "id": "env_1", "slug": "production", "kind": "production", "gpuPool": "a",
    "build": {"rootDirectory": ".", "watchPaths": ["src/**"], "autoDeploy": True, "cache": 1},
    "runtime": {"port": 3000, "vCpus": 1, "command": ["serve"], "shutdownSignal": "SIGUSR1",
                "healthcheck": {"method": "GET", "path": "/h", "grpc": {"service": "x"}},
                "gpu": {"kind": "a100"}},
    "regions": [{"name": "fra", "replicas": {"min": 1, "max": 2, "burst": 4}, "zone": "b"}],
}  # fmt: skip


def test_a_live_answer_is_read_into_the_model_with_what_it_does_not_know_beside_it() -> None:
    live = live_model(LIVE, "production")
    assert live.build == Build(root_directory=".", watch_paths=("src/**",), auto_deploy=True,
                               opaque={"cache": 1})  # fmt: skip
    assert live.runtime == Runtime(
        port=3000, vcpus=1.0, command=("serve",), shutdown_signal="SIGUSR1",
        healthcheck=Healthcheck("GET", "/h"),
        opaque={"healthcheck": {"grpc": {"service": "x"}}, "gpu": {"kind": "a100"}},
    )  # fmt: skip
    assert live.regions == (Region("fra", 1, 2, {"replicas": {"burst": 4}, "zone": "b"}),)
    assert dict(live.opaque) == {"gpuPool": "a"}


def test_nothing_written_yet_is_unmanaged() -> None:
    live = live_model({"id": "env_1", "slug": "preview"}, "preview")
    assert (live.build, live.runtime, live.regions) == (UNSET, UNSET, UNSET)
    assert live == Environment("preview")


def test_the_model_writes_back_what_it_read() -> None:
    runtime = {"port": 3000, "vCpus": 0.5, "command": ["serve"], "shutdownSignal": "SIGINT",
               "healthcheck": {"method": "GET", "path": "/h", **HEALTHCHECK_DEFAULTS}}  # fmt: skip
    assert to_data(from_data(Runtime, runtime)) == runtime
    assert to_data(from_data(Region, {"name": "fra", "replicas": {"min": 0, "max": 3}})) == {
        "name": "fra", "replicas": {"min": 0, "max": 3}
    }  # fmt: skip


def test_a_live_health_check_without_a_member_the_spec_requires_names_the_read() -> None:
    live = {**LIVE, "runtime": {"healthcheck": {"path": "/h"}}}
    wanted = Environment("production", runtime=Runtime(port=3000))
    at = Location("proj_1", "app_1", "production", "env_1")
    with pytest.raises(UnexpectedResponse, match=r"environments\.listEnvironments: .* `method`"):
        plan_settings("shop", "web", wanted, read_environment(live), at)
