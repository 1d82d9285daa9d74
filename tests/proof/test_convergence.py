"""Convergence, property-based: whatever the manifest and whatever is already live, one apply
reaches the manifest and touches nothing outside its scope.

For each generated scenario (tests/proof/strategies.py) the emulator is reset, the initial live
state is written through the platform API, then `reconciler apply --auto-approve` runs and:

- every managed field, variable, domain and policy list reads back as the manifest says
  (write-only values compared in the emulator's own state, which the API never returns);
- `plan --detailed-exitcode` exits 0 and a second apply sends no write call;
- what the manifest does not manage is exactly as it was: projects outside the manifest, apps it
  does not list (unless `prune.apps`), environments it does not name, collections and fields
  it omits, and unlisted variables and domains when pruning is off.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.plan import secrets
from tests.fixtures.cli import Seed, run_cli
from tests.proof.strategies import ENVIRONMENTS, Scenario, SeedCall, scenarios

FINGERPRINT_KEY = "proof-fingerprint-key"
_FINGERPRINT = re.compile(r"\s?\[fp2:[0-9a-f]{16}\]$")

# ---- a by-slug view of the emulator's state ----------------------------------------------------

View = dict[str, Any]


def workspace(state: Mapping[str, Any]) -> View:
    """`state()` as {project slug: {record, apps: {slug: {record, envs: {slug: {...}}}}}}.

    Environment entries hold `record` (settings), `variables` (by key, write-only values
    included), `policies` (the list) and `domains` (by host). Bookkeeping members (`_seq`, ...)
    and what moves on its own (domain verification status) are left out.
    """
    view: View = {}
    apps_of: dict[str, dict[str, Any]] = {}
    envs_of: dict[str, dict[str, Any]] = {}
    for project in state["projects"].values():
        view[project["slug"]] = {"record": _public(project), "apps": {}}
    slug_of_project = {pid: p["slug"] for pid, p in state["projects"].items()}
    for app_id, app in state["apps"].items():
        entry = {"record": _public(app), "envs": {}}
        view[slug_of_project[app["_projectId"]]]["apps"][app["slug"]] = entry
        apps_of[app_id] = entry
    for env_id, env in state["environments"].items():
        if env["_appId"] not in apps_of:
            continue
        entry = {
            "record": _public(env),
            "variables": {key: _public(v) for key, v in state["variables"].get(env_id, {}).items()},
            "policies": [dict(p) for p in state["policies"].get(env_id, [])],
            "domains": {},
        }
        apps_of[env["_appId"]]["envs"][env["slug"]] = entry
        envs_of[env_id] = entry
    for domain in state["domains"].values():
        if domain["environmentId"] in envs_of:
            record = {
                k: v
                for k, v in _public(domain).items()
                if k not in ("status", "verificationError", "updatedAt", "dnsRecords")
            }
            envs_of[domain["environmentId"]]["domains"][domain["domain"]] = record
    return view


def _public(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: copy.deepcopy(v) for k, v in record.items() if not k.startswith("_")}


def count_objects(state: Mapping[str, Any]) -> dict[str, int]:
    """Duplicates show here: (kind, name) -> how many objects carry it."""
    counts: dict[str, int] = {}
    for project in state["projects"].values():
        counts[f"project {project['slug']}"] = counts.get(f"project {project['slug']}", 0) + 1
    for app in state["apps"].values():
        name = f"app {app['_projectId']}/{app['slug']}"
        counts[name] = counts.get(name, 0) + 1
    for domain in state["domains"].values():
        name = f"domain {domain['domain']}"
        counts[name] = counts.get(name, 0) + 1
    return counts


def assert_no_duplicates(state: Mapping[str, Any]) -> None:
    duplicated = {name: n for name, n in count_objects(state).items() if n > 1}
    assert not duplicated, f"duplicated objects: {duplicated}"


# ---- the manifest as the oracle reads it ---------------------------------------------------------


def effective_environments(app: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The environments an app manages, with `defaults` merged the documented way."""
    defaults = app.get("defaults")
    names = set(app.get("environments", {}))
    if defaults is not None:
        names |= set(ENVIRONMENTS)
    return {n: _merge(defaults or {}, app.get("environments", {}).get(n, {})) for n in names}


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Mappings deep-merge, variables merge by key, lists are replaced; `over` wins."""
    merged = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def expected_variable(spec: Any, env: Mapping[str, str]) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        return {"value": str(spec), "kind": "recoverable"}
    if "fromEnv" in spec:
        value, kind = env[spec["fromEnv"]], spec.get("kind", "writeonly")
    else:
        value, kind = spec["value"], spec.get("kind", "recoverable")
    expected = {"value": value, "kind": kind}
    if spec.get("description"):
        expected["description"] = spec["description"]
    return expected


def normalised_host(name: str) -> str:
    return name.lower().rstrip(".")


def claimed_hosts(manifest: Mapping[str, Any]) -> set[str]:
    """Every host the manifest wants somewhere (it may move there from anywhere)."""
    return {
        normalised_host(h)
        for project in manifest["projects"].values()
        for app in project.get("apps", {}).values()
        for block in effective_environments(app).values()
        for h in block.get("domains", ())
    }


def without_hosts(environment: Mapping[str, Any], hosts: set[str]) -> dict[str, Any]:
    kept = {h: d for h, d in environment["domains"].items() if h not in hosts}
    return {**environment, "domains": kept}


def normalised_policy(policy: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults dropped (ignoreCase false, false logging flags, empty match), no ID."""

    def strip(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: strip(v) for k, v in value.items() if not (k == "ignoreCase" and not v)}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    result = {"name": policy["name"], "enabled": policy["enabled"]}
    if policy.get("match"):
        result["match"] = strip(policy["match"])
    if "firewall" in policy:
        result["firewall"] = dict(policy["firewall"])
    else:
        result["logging"] = {k: v for k, v in policy["logging"].items() if v}
    return result


def expected_runtime_value(name: str, value: Any) -> Any:
    if name == "healthcheck" and value is not None:
        defaults = {
            "intervalSeconds": 10,
            "timeoutSeconds": 5,
            "failureThreshold": 3,
            "initialDelaySeconds": 0,
        }
        return {**defaults, **value}
    if name == "vCpus":
        return float(value)
    return value


# ---- checks -----------------------------------------------------------------------------------


def check_manifest_reached(
    manifest: Mapping[str, Any],
    env: Mapping[str, str],
    before: View,
    after: View,
    *,
    fingerprints: bool,
) -> None:
    """Every managed field reads back as the manifest says."""
    for p_slug, project in manifest["projects"].items():
        live_project = after[p_slug]
        for field in ("name", "deleteProtection"):
            if field in project:
                assert live_project["record"][field] == project[field], (p_slug, field)
        for a_slug, app in project.get("apps", {}).items():
            where = f"{p_slug}/{a_slug}"
            live_app = live_project["apps"][a_slug]
            record = live_app["record"]
            for field in ("name", "deleteProtection"):
                if field in app:
                    assert record[field] == app[field], (where, field)
            if "git" in app and app["git"] is None:
                assert "git" not in record, f"{where}: repository still connected"
            elif "git" in app:
                assert record["git"]["repository"] == app["git"]["repository"], where
                if "defaultBranch" in app["git"]:
                    assert record["git"]["defaultBranch"] == app["git"]["defaultBranch"], where
            if "oci" in app:
                assert record["oci"]["image"] == app["oci"]["image"], where
            for e_slug, block in effective_environments(app).items():
                old = before.get(p_slug, {}).get("apps", {}).get(a_slug, {}).get("envs", {})
                check_environment(
                    f"{where}/{e_slug}",
                    block,
                    old.get(e_slug, {}).get("variables", {}),
                    live_app["envs"][e_slug],
                    manifest,
                    env,
                    fingerprints=fingerprints,
                )


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def value_digest(variable: Mapping[str, Any]) -> str:
    """The SHA-256 of a variable's value. A write-only value set before an emulator restart
    is only in its state file as this digest, so values are compared by digest."""
    if "value" in variable:
        return _digest(variable["value"])
    return str(variable["valueSha256"])


def check_environment(
    where: str,
    block: Mapping[str, Any],
    old_variables: Mapping[str, Any],
    live: Mapping[str, Any],
    manifest: Mapping[str, Any],
    env: Mapping[str, str],
    *,
    fingerprints: bool,
) -> None:
    record = live["record"]
    for group in ("runtime", "build"):
        for name, value in block.get(group, {}).items():
            got = record.get(group, {}).get(name)
            if got is None and value == []:
                got = []  # documented: an absent list is an empty one (settings never written)
            wanted = expected_runtime_value(name, value)
            assert got == wanted, f"{where} {group}.{name}: live {got!r}, manifest {wanted!r}"
    if "regions" in block:
        assert sorted(record["regions"], key=lambda r: r["name"]) == sorted(
            block["regions"], key=lambda r: r["name"]
        ), where
    prune = manifest.get("prune", {})
    if "variables" in block:
        for key, spec in block["variables"].items():
            wanted = expected_variable(spec, env)
            got = dict(live["variables"].get(key) or {})
            assert got, f"{where}: variable {key} missing"
            description = got.get("description") or None
            if description is not None and got["kind"] == "writeonly" and fingerprints:
                description = _FINGERPRINT.sub("", description) or None
            assert got["kind"] == wanted["kind"], (where, key)
            values = {_digest(wanted["value"])}
            old = old_variables.get(key)
            if not fingerprints and old and old["kind"] == wanted["kind"] == "writeonly":
                values.add(value_digest(old))  # documented: compared by presence and kind only
            assert value_digest(got) in values, f"{where}: variable {key} has another value"
            if isinstance(spec, Mapping) and "description" in spec:  # else unmanaged: kept
                assert description == wanted.get("description"), (where, key, description)
        if prune.get("variables", True):
            assert set(live["variables"]) == set(block["variables"]), where
    if "domains" in block:
        hosts = set(live["domains"])
        wanted = {normalised_host(h) for h in block["domains"]}
        assert wanted <= hosts, where
        if prune.get("domains", True):
            assert hosts == wanted, where
    if "policies" in block:
        got = [normalised_policy(p) for p in live["policies"]]
        assert got == [normalised_policy(p) for p in block["policies"]], where


def check_out_of_scope_untouched(
    manifest: Mapping[str, Any], before: View, after: View, *, partial: bool = False
) -> None:
    """Nothing the manifest does not manage changed (write-only values included).

    `partial`: after an apply that stopped early, an app `prune.apps` removes may still be there.
    """
    prune = manifest.get("prune", {})
    managed = manifest["projects"]
    claimed = claimed_hosts(manifest)
    for p_slug, project in before.items():
        if p_slug not in managed:
            assert after.get(p_slug) == project, f"project {p_slug} outside the manifest changed"
            continue
        listed = managed[p_slug]
        for field, value in project["record"].items():
            if field not in listed and field not in ("updatedAt",):
                assert after[p_slug]["record"][field] == value, (p_slug, field)
        listed_apps = listed.get("apps", {})
        for a_slug, app in project["apps"].items():
            where = f"{p_slug}/{a_slug}"
            if a_slug not in listed_apps:
                if prune.get("apps", False) and not (partial and a_slug in after[p_slug]["apps"]):
                    assert a_slug not in after[p_slug]["apps"], f"{where} not pruned"
                if a_slug in after[p_slug]["apps"]:
                    assert after[p_slug]["apps"][a_slug] == app, f"unlisted {where} changed"
                continue
            live_app = after[p_slug]["apps"][a_slug]
            for field in ("name", "deleteProtection"):
                if field not in listed_apps[a_slug]:
                    assert live_app["record"][field] == app["record"][field], (where, field)
            blocks = effective_environments(listed_apps[a_slug])
            for e_slug, environment in app["envs"].items():
                now = live_app["envs"][e_slug]
                if e_slug not in blocks:
                    assert without_hosts(now, claimed) == without_hosts(environment, claimed), (
                        f"{where}/{e_slug} is not managed but changed"
                    )
                    continue
                check_omitted_untouched(
                    f"{where}/{e_slug}", blocks[e_slug], environment, now, prune, claimed
                )


def check_omitted_untouched(
    where: str,
    block: Mapping[str, Any],
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    prune: Mapping[str, Any],
    claimed: set[str],
) -> None:
    for group in ("runtime", "build"):
        old = before["record"].get(group)
        if old is None:
            continue  # the platform fills its defaults when settings are first written
        for name, value in old.items():
            if name not in block.get(group, {}):
                assert after["record"][group].get(name) == value, f"{where} {group}.{name}"
    if "regions" not in block:
        assert after["record"]["regions"] == before["record"]["regions"], where
    if "variables" not in block:
        assert after["variables"] == before["variables"], f"{where}: variables changed"
    elif not prune.get("variables", True):
        for key, variable in before["variables"].items():
            if key not in block["variables"]:
                assert after["variables"].get(key) == variable, f"{where}: unlisted {key}"
    if "domains" not in block or not prune.get("domains", True):
        for name, domain in before["domains"].items():
            if name not in claimed:
                assert after["domains"].get(name) == domain, f"{where}: unlisted {name}"
    if "policies" not in block:
        assert after["policies"] == before["policies"], f"{where}: policies changed"


# ---- running it -------------------------------------------------------------------------------


def build_live_state(seed: Seed, calls: list[SeedCall]) -> None:
    for call in calls:
        seed.call(call.operation, call.body)


def is_write(operation: str) -> bool:
    return not operation.split(".", 1)[1].startswith(("get", "list"))


def cli_env(emulator: Any, scenario: Scenario, *, fingerprints: bool) -> dict[str, str | None]:
    return {
        "RECONCILER_BASE_URL": emulator.base_url,
        "RECONCILER_API_KEY": emulator.api_key,
        "RECONCILER_FINGERPRINT_KEY": FINGERPRINT_KEY if fingerprints else None,
        "NO_COLOR": "1",
        "RECONCILER_DEBUG": None,
        **scenario.env,
    }


def run_scenario(emulator: Any, directory: Path, scenario: Scenario, *, fingerprints: bool) -> None:
    emulator.reset()
    build_live_state(Seed(emulator), scenario.seed)
    before = workspace(emulator.state())
    manifest_file = directory / "platform.yaml"
    manifest_file.write_text(yaml.safe_dump(scenario.manifest, sort_keys=False), encoding="utf-8")
    env = cli_env(emulator, scenario, fingerprints=fingerprints)
    files = ["-f", str(manifest_file)]

    applied = run_cli(["apply", *files, "--auto-approve"], env=env)
    assert applied.exit_code == 0, applied.output
    assert "Traceback" not in applied.output

    state = emulator.state()
    assert_no_duplicates(state)
    after = workspace(state)
    check_manifest_reached(
        scenario.manifest, scenario.env, before, after, fingerprints=fingerprints
    )
    check_out_of_scope_untouched(scenario.manifest, before, after)

    planned = run_cli(["plan", *files, "--detailed-exitcode"], env=env)
    assert planned.exit_code == 0, planned.output
    logged = len(emulator.requests())
    again = run_cli(["apply", *files, "--auto-approve"], env=env)
    assert again.exit_code == 0, again.output
    second = [r["operation"] for r in emulator.requests()[logged:] if is_write(r["operation"])]
    assert second == [], f"the second apply wrote: {second}"


PROPERTY = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.slow
@PROPERTY
@given(scenario=scenarios())
def test_apply_converges_with_fingerprints(
    emulator: Any, tmp_path: Path, scenario: Scenario
) -> None:
    run_scenario(emulator, tmp_path, scenario, fingerprints=True)


@pytest.mark.slow
@PROPERTY
@given(scenario=scenarios())
def test_apply_converges_without_fingerprints(
    emulator: Any, tmp_path: Path, scenario: Scenario
) -> None:
    """Without a fingerprint key a live write-only value cannot be compared: it is kept."""
    run_scenario(emulator, tmp_path, scenario, fingerprints=False)


# ---- targeted applies ---------------------------------------------------------------------------

KIND_PARTS = {
    "settings": "record",
    "variable": "variables",
    "policies": "policies",
    "domain": "domains",
}


@st.composite
def targets(draw: Any, manifest: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """(`--target` address, its scope): project, app, or one kind of one or both environments."""
    project = draw(st.sampled_from(sorted(manifest["projects"])))
    apps = sorted(manifest["projects"][project].get("apps", {}))
    kind = draw(st.sampled_from(["project", "app", *KIND_PARTS]))
    if kind == "project" or not apps:
        return f"project.{project}", (project,)
    app = draw(st.sampled_from(apps))
    if kind == "app":
        return f"app.{project}/{app}", (project, app)
    if kind == "variable" and draw(st.booleans()):
        return f"variable.{project}/{app}", (project, app, "*", kind)
    environment = draw(st.sampled_from(ENVIRONMENTS))
    return f"{kind}.{project}/{app}/{environment}", (project, app, environment, kind)


def check_outside_target_untouched(
    scope: tuple[str, ...], claimed: set[str], before: View, after: View
) -> None:
    """What the target does not cover is as it was (objects it needs may be created)."""
    for p_slug, project in before.items():
        if p_slug != scope[0]:
            assert after[p_slug] == project, f"project {p_slug} outside the target changed"
            continue
        if len(scope) == 1:
            continue
        assert after[p_slug]["record"] == project["record"], f"project {p_slug} changed"
        for a_slug, app in project["apps"].items():
            if a_slug != scope[1]:
                assert after[p_slug]["apps"][a_slug] == app, f"app {p_slug}/{a_slug} changed"
                continue
            if len(scope) == 2:
                continue
            live_app = after[p_slug]["apps"][a_slug]
            assert live_app["record"] == app["record"], f"app {p_slug}/{a_slug} changed"
            for e_slug, environment in app["envs"].items():
                now = without_hosts(live_app["envs"][e_slug], claimed)
                was = without_hosts(environment, claimed)
                targeted = scope[2] in ("*", e_slug)
                for part in ("record", "variables", "policies", "domains"):
                    if targeted and part == KIND_PARTS[scope[3]]:
                        continue
                    assert now[part] == was[part], f"{p_slug}/{a_slug}/{e_slug} {part} changed"


@pytest.mark.slow
@PROPERTY
@given(data=st.data())
def test_a_targeted_apply_converges_its_target_and_touches_nothing_else(
    emulator: Any, tmp_path: Path, data: st.DataObject
) -> None:
    scenario = data.draw(scenarios())
    address, scope = data.draw(targets(scenario.manifest))
    emulator.reset()
    build_live_state(Seed(emulator), scenario.seed)
    before = workspace(emulator.state())
    manifest_file = tmp_path / "platform.yaml"
    manifest_file.write_text(yaml.safe_dump(scenario.manifest, sort_keys=False), encoding="utf-8")
    env = cli_env(emulator, scenario, fingerprints=True)
    files = ["-f", str(manifest_file), "--target", address]

    applied = run_cli(["apply", *files, "--auto-approve"], env=env)
    assert applied.exit_code == 0, applied.output

    state = emulator.state()
    assert_no_duplicates(state)
    after = workspace(state)
    check_outside_target_untouched(scope, claimed_hosts(scenario.manifest), before, after)
    check_out_of_scope_untouched(scenario.manifest, before, after, partial=True)
    planned = run_cli(["plan", *files, "--detailed-exitcode"], env=env)
    assert planned.exit_code == 0, planned.output


# ---- regressions found by these suites ----------------------------------------------------------


@pytest.mark.parametrize("description", [" ", "token ", "  spaced  ", " leading"])
def test_a_write_only_description_with_edge_spaces_round_trips_its_fingerprint(
    description: str,
) -> None:
    marked = secrets.with_fingerprint(description, "0123456789abcdef")
    assert secrets.split_fingerprint(marked) == (description, "0123456789abcdef")


@pytest.mark.parametrize("description", [" ", "token ", "  spaced  "])
def test_a_write_only_description_ending_in_a_space_converges(
    emulator: Any, tmp_path: Path, description: str
) -> None:
    """Found by the fault property: the fingerprint split stripped the user's trailing spaces,
    so the next plan always wanted `description = null -> " "` back."""
    scenario = Scenario(
        manifest={
            "version": 1,
            "projects": {
                "shop": {
                    "apps": {
                        "web": {
                            "git": {"repository": "acme/web"},
                            "environments": {
                                "production": {
                                    "variables": {
                                        "TOKEN": {
                                            "fromEnv": "PROOF_TOKEN",
                                            "description": description,
                                        }
                                    }
                                }
                            },
                        }
                    }
                }
            },
        },
        env={"PROOF_TOKEN": "secret-value"},
    )
    run_scenario(emulator, tmp_path, scenario, fingerprints=True)
