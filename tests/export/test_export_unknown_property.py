"""Property: for any live environment the spec allows, with members a newer platform added
anywhere (the environment, its runtime, build, health check, regions and their replicas, a
policy, its rule, its match items and their conditions, policies of kinds this reconciler does
not know):

- the canonical form of a policy keeps every such member;
- they never make a change by themselves: the manifest exported from the live state *without*
  them plans no change against the live state *with* them;
- a settings write (a known field changed) carries them: the health check and each region
  are sent with the live members of the same object;
- the manifest exported from the live state with them (in `opaque` blocks) loads, validates
  and plans no change against it.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.export import ExportOptions, build_export
from reconciler.manifest.model import Environment, Manifest
from reconciler.manifest.validate import load_manifest
from reconciler.plan.kinds.base import Location
from reconciler.plan.kinds.policies import normalise_policy, plan_policies, read_policies
from reconciler.plan.kinds.settings import plan_settings, read_environment
from reconciler.platform.shapes import POLICY, unknown_members
from tests.export.fakes import exported_app, exported_project
from tests.export.test_export_property import both_environments, live_environment, live_resource

# a member name no version of the spec has: starts with an `x`, then letters
unknown_name = st.from_regex(r"x[A-Za-z]{1,8}", fullmatch=True)
unknown_value = st.recursive(
    st.one_of(st.booleans(), st.integers(-5, 500), st.text("abc-/", max_size=6)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(unknown_name, inner, max_size=3)
    ),
    max_leaves=6,
)
extra_members = st.dictionaries(unknown_name, unknown_value, min_size=1, max_size=2)


@st.composite
def with_unknown(draw: st.DrawFn, live: dict[str, Any]) -> dict[str, Any]:
    """`live` (one environment, as both_environments draws it) with unknown members added
    in some of the places a newer platform could add them."""
    grown = copy.deepcopy(live)

    def maybe(target: dict[str, Any]) -> None:
        if draw(st.booleans()):
            target.update(draw(extra_members))

    grown.setdefault("extra", {})
    maybe(grown["extra"])
    for section in ("runtime", "build"):
        if section in grown:
            maybe(grown[section])
    check = grown.get("runtime", {}).get("healthcheck")
    if check is not None:
        maybe(check)
    for region in grown["regions"]:
        maybe(region)
        maybe(region["replicas"])
    for policy in grown["policies"]:
        maybe(policy)
        for rule in ("firewall", "logging"):
            if rule in policy:
                maybe(policy[rule])
        for item in policy.get("match", ()):
            maybe(item)
            if "path" in item:
                maybe(item["path"]["path"])
    if draw(st.booleans()):
        grown["policies"].insert(
            draw(st.integers(0, len(grown["policies"]))),
            {
                "id": "pol_new",
                "name": "limit",
                "enabled": draw(st.booleans()),
                "xRateLimit": {"perMinute": draw(st.integers(1, 1000))},
            },
        )
    return grown


def _export(envs: dict[str, dict[str, Any]]) -> Manifest:
    live = [live_environment(name, env) for name, env in envs.items()]
    app = exported_app(
        {"id": "app_web00001", "slug": "web", "name": "Web", "oci": {"image": "a:1"}}, *live
    )
    project = exported_project({"id": "proj_shop0001", "slug": "shop", "name": "Shop"}, app)
    text = build_export([project], ExportOptions()).render()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "exported.yaml"
        path.write_text(text, encoding="utf-8")
        return load_manifest([path])


def _desired(manifest: Manifest, name: str) -> Environment | None:
    return manifest.projects[0].apps[0].environment(name) if manifest.projects[0].apps else None


def _no_change(desired: Environment | None, name: str, live: dict[str, Any]) -> None:
    if desired is None:
        return
    ref = Location("shop", "web", name, f"env_{name}0001")
    live_environment = read_environment(live_resource(name, live))
    assert plan_settings("shop", "web", desired, live_environment, ref) is None
    if live["policies"] or desired.policies:
        assert plan_policies("shop", "web", desired, read_policies(live["policies"]), ref) is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), both_environments())
def test_unknown_members_are_kept_carried_and_round_trip(
    data: st.DataObject, live: dict[str, dict[str, Any]]
) -> None:
    grown = {name: data.draw(with_unknown(env)) for name, env in live.items()}
    for env in grown.values():
        for policy in env["policies"]:
            kept = unknown_members(normalise_policy(policy), POLICY)
            assert set(unknown_members(policy, POLICY)) <= set(kept)

    before_growth = _export(live)
    for name, env in grown.items():
        if any("xRateLimit" in p for p in env["policies"]):
            continue  # a policy the old manifest does not have: a real difference
        _no_change(_desired(before_growth, name), name, env)

    after_growth = _export(grown)
    for name, env in grown.items():
        _no_change(_desired(after_growth, name), name, env)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), both_environments())
def test_a_settings_write_carries_the_unknown_members_of_what_it_sends_whole(
    data: st.DataObject, live: dict[str, dict[str, Any]]
) -> None:
    grown = data.draw(with_unknown(live["production"]))
    grown.setdefault("runtime", {}).setdefault("healthcheck", {"method": "GET", "path": "/h"})
    manifest = _export({"production": grown, "preview": live["preview"]})
    desired = _desired(manifest, "production")
    assert desired is not None and desired.runtime
    # a new health check path and other replica counts: both objects are sent whole
    runtime = desired.runtime.__class__(
        **{**desired.runtime.__dict__, "healthcheck": desired.runtime.healthcheck.__class__(
            **{**desired.runtime.healthcheck.__dict__, "path": "/changed"}
        )}
    )  # fmt: skip
    regions = tuple(r.__class__(**{**r.__dict__, "max_replicas": 99}) for r in desired.regions)
    changed = desired.__class__(**{**desired.__dict__, "runtime": runtime, "regions": regions})
    ref = Location("shop", "web", "production", "env_production0001")
    live_environment = read_environment(live_resource("production", grown))
    change = plan_settings("shop", "web", changed, live_environment, ref)
    assert change is not None
    body = change.calls[0].body
    live_check = grown["runtime"]["healthcheck"]
    for key, value in live_check.items():
        if key != "path":
            assert body["healthcheck"].get(key, value) == value
    sent = {r["name"]: r for r in body["regions"]}
    for region in grown["regions"]:
        for key, value in region.items():
            if key not in ("name", "replicas"):
                assert sent[region["name"]][key] == value
        for key, value in region["replicas"].items():
            if key != "max":
                assert sent[region["name"]]["replicas"][key] == value
    assert not change.unknown_removed
