"""settings.py: normalisation of server defaults and the updateSettings call."""

from __future__ import annotations

import asyncio

import pytest

from reconciler.address import TreePath
from reconciler.errors import UnexpectedResponse
from reconciler.manifest.model import Build, Environment, Healthcheck, Region, Runtime
from reconciler.plan.changes import ABSENT, Action
from reconciler.plan.kinds.base import Location
from reconciler.plan.kinds.settings import KIND, plan_settings, read_environment
from reconciler.plan.live import LiveRecord

REF = Location("proj_12345678", "app_12345678", "production", "env_12345678")

LIVE = {
    "id": "env_12345678", "slug": "production", "kind": "production", "description": "",
    "deleteProtection": False, "createdAt": 1,
    "runtime": {"port": 3000, "vCpus": 1, "memoryMib": 512, "storageMib": 0, "command": [],
                "healthcheck": {"method": "GET", "path": "/healthz", "intervalSeconds": 10,
                                "timeoutSeconds": 5, "failureThreshold": 3,
                                "initialDelaySeconds": 0},
                "shutdownSignal": "SIGTERM", "upstreamProtocol": "http1"},
    "build": {"rootDirectory": ".", "watchPaths": [], "autoDeploy": True},
    "regions": [{"name": "iad", "replicas": {"min": 1, "max": 3}},
                {"name": "fra", "replicas": {"min": 2, "max": 6}}],
}  # fmt: skip


def plan(environment, live=LIVE):
    return plan_settings("shop", "web", environment, read_environment(live), REF)


def test_matching_manifest_with_different_number_forms_defaults_and_order_is_no_change():
    environment = Environment(
        name="production",
        runtime=Runtime(port=3000, vcpus=1.0, healthcheck=Healthcheck("GET", "/healthz"),
                        command=(), openapi_spec_path=None),
        build=Build(dockerfile=None, build_command=None, watch_paths=(), auto_deploy=True),
        regions=(Region("fra", 2, 6), Region("iad", 1, 3)),
    )  # fmt: skip
    assert plan(environment) is None


def test_live_healthcheck_without_defaults_matches_a_manifest_with_them_filled():
    live = {**LIVE, "runtime": {"healthcheck": {"method": "GET", "path": "/healthz"}}}
    environment = Environment(
        "production", runtime=Runtime(healthcheck=Healthcheck("GET", "/healthz"))
    )
    assert plan(environment, live) is None


def test_only_differing_fields_are_sent_with_nulls_for_clears():
    live = {**LIVE, "build": {**LIVE["build"], "dockerfile": "Dockerfile"}}
    environment = Environment(
        name="production",
        runtime=Runtime(port=3000, vcpus=0.5, healthcheck=None),
        build=Build(dockerfile=None, root_directory="."),
    )
    change = plan(environment, live)
    assert change.action is Action.UPDATE
    (call,) = change.calls
    assert call.body == {"project": "proj_12345678", "app": "app_12345678", "environment": "production",
                         "vCpus": 0.5, "healthcheck": None, "dockerfile": None}  # fmt: skip
    assert call.permission == "environment.env_12345678.update_environment"
    diffs = {d.path: (d.before, d.after) for d in change.diffs}
    assert diffs["runtime.vCpus"] == (1, 0.5)
    assert diffs["build.dockerfile"] == ("Dockerfile", None)


def test_healthcheck_change_shows_member_diffs_and_sends_the_whole_object():
    environment = Environment(
        "production", runtime=Runtime(healthcheck=Healthcheck("GET", "/ready", timeout_seconds=2))
    )
    change = plan(environment)
    assert {d.path for d in change.diffs} == {
        "runtime.healthcheck.path",
        "runtime.healthcheck.timeoutSeconds",
    }
    assert change.calls[0].body["healthcheck"] == {
        "method": "GET", "path": "/ready", "intervalSeconds": 10, "timeoutSeconds": 2,
        "failureThreshold": 3, "initialDelaySeconds": 0,
    }  # fmt: skip


def test_absent_runtime_and_build_mean_nothing_set_yet():
    bare = {k: v for k, v in LIVE.items() if k not in ("runtime", "build", "regions")}
    environment = Environment(
        "production",
        runtime=Runtime(port=8080, command=(), openapi_spec_path=None),
        build=Build(watch_paths=(), build_command=None),
        regions=(Region("fra", 1, 1),),
    )
    change = plan(environment, bare)
    body = change.calls[0].body
    assert body["port"] == 8080 and body["regions"] == [
        {"name": "fra", "replicas": {"min": 1, "max": 1}}
    ]
    # empty lists and clears against nothing set are not changes
    assert "command" not in body and "watchPaths" not in body and "buildCommand" not in body
    assert next(d for d in change.diffs if d.path == "runtime.port").before is ABSENT


def test_settings_of_a_new_app_are_a_create_without_clears():
    environment = Environment("preview", runtime=Runtime(vcpus=0.25, healthcheck=None))
    change = plan_settings("shop", "web", environment, None, Location("shop", "web", "preview"))
    assert change.action is Action.CREATE and change.before is None
    assert change.calls[0].body == {
        "project": "shop",
        "app": "web",
        "environment": "preview",
        "vCpus": 0.25,
    }
    assert change.calls[0].permission == "environment.*.update_environment"


def test_unmanaged_environment_plans_nothing():
    assert plan(Environment("production")) is None


# --- the read: each environment checked and read once ------------------------------------------


class Listing:
    """A platform whose `listEnvironments` answers `environments`."""

    def __init__(self, *environments):
        self.environments = list(environments)

    async def list_all(self, operation, body, **_):
        assert operation == "environments.listEnvironments"
        return self.environments


def read(*environments):
    return asyncio.run(KIND.read(Listing(*environments), Location("proj_1", "app_1")))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"id": "env_1"}, "without a `slug` string"),
        ("production", "without a `slug` string"),
        ({**LIVE, "runtime": "fast"}, "settings whose `runtime` is not an object"),
        ({**LIVE, "build": ["."]}, "settings whose `build` is not an object"),
        ({**LIVE, "regions": {"name": "fra"}}, "settings whose `regions` is not a list"),
        ({**LIVE, "regions": ["fra"]}, r"settings whose `regions\[\]` is not an object"),
        ({**LIVE, "regions": [{"name": "fra"}]}, "settings without `replicas.min`"),
    ],
)
def test_a_malformed_environment_is_an_unexpected_response_naming_the_read(answer, message):
    # the slug when read; the settings when the environment is planned (read into the model)
    with pytest.raises(UnexpectedResponse, match=rf"^environments\.listEnvironments: .*{message}"):
        _ = read(answer)[0].settings


def test_the_read_keeps_the_answer_beside_its_model_and_the_environments_it_does_not_know():
    grown = {**LIVE, "tier": "gold", "runtime": {**LIVE["runtime"], "gpu": {"count": 1}}}
    found = read(grown, {"id": "env_2", "slug": "staging", "runtime": "unread"})
    production = KIND.pick(found, Location("proj_1", "app_1", "production"))
    assert production.answer == grown and production.id == "env_12345678"
    assert production.settings.runtime.port == 3000
    assert production.settings.opaque == {"tier": "gold"}
    assert production.settings.runtime.opaque == {"gpu": {"count": 1}}
    # an environment of a kind this reconciler does not know is never planned: not read further
    assert found[1].settings is None
    record = LiveRecord()
    web = TreePath.of("shop", "web")
    KIND.record(record, Location("proj_1", "app_1"), web, found)
    assert record.other_environments == {web: ("staging",)}
    assert record.labels == {"env_12345678": web.child("production"), "env_2": web.child("staging")}


def test_an_environment_the_answer_does_not_list_is_planned_against_nothing_set():
    preview = KIND.pick(read(LIVE), Location("proj_1", "app_1", "preview"))
    assert (preview.id, preview.settings, preview.answer) == (None, None, {})
    wanted = Environment("preview", runtime=Runtime(port=80))
    change = plan_settings("shop", "web", wanted, preview, Location("shop", "web", "preview"))
    assert change.action is Action.UPDATE
    assert [(d.path, d.before, d.after) for d in change.diffs] == [("runtime.port", ABSENT, 80)]



def test_a_malformed_environment_the_manifest_does_not_manage_stops_no_plan() -> None:
    # a preview whose health check lacks `method` (the spec requires it on every write)
    runtime = {**LIVE["runtime"], "healthcheck": {"path": "/healthz"}}
    preview = {**LIVE, "id": "env_2", "slug": "preview", "kind": "preview", "runtime": runtime}
    found = read(LIVE, preview)
    production = KIND.pick(found, Location("proj_1", "app_1", "production"))
    wanted = Environment("production", runtime=Runtime(port=3000))
    where = Location("p", "a", "production")
    assert plan_settings("shop", "web", wanted, production, where) is None
    # planned, the same environment is refused, naming the operation
    preview_live = KIND.pick(found, Location("proj_1", "app_1", "preview"))
    with pytest.raises(UnexpectedResponse, match="without `method`"):
        plan_settings("shop", "web", Environment("preview"), preview_live, where)
