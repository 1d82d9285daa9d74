"""Properties of expanding templates: the files a workspace is split into, and their order,
change nothing; expanding is idempotent (a template reached again, and a manifest written out
as its expansion, mean the same); the merge is the one the documentation states.

Workspaces are generated: templates extending earlier templates (some with a parameter), an
`appDefaults`, apps extending them from the app, its `defaults` and its environments."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.manifest.history import comparable
from reconciler.manifest.layers import COMBINED_LISTS, Layered, is_combination
from reconciler.manifest.model import Manifest
from reconciler.manifest.validate import check_manifest, load_manifest

KEYS = ("A", "B", "C", "D")
ENVIRONMENTS = ("production", "preview")

values = st.sampled_from(["one", "two", "three"])
variables = st.dictionaries(st.sampled_from(KEYS), values, max_size=3)
runtime = st.fixed_dictionaries(
    {},
    optional={
        "port": st.sampled_from([3000, 8080]),
        "vCpus": st.sampled_from([0.25, 1]),
        "healthcheck": st.builds(
            lambda p: {"method": "GET", "path": p}, st.sampled_from(["/a", "/b"])
        ),
    },
)


def policy_list(prefix: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    names = st.sampled_from([f"{prefix}-1", f"{prefix}-2"])
    return st.lists(
        st.builds(lambda n: {"name": n, "enabled": True, "logging": {"query": True}}, names),
        max_size=2,
    )


def policies(prefix: str, combined: bool) -> st.SearchStrategy[Any]:
    plain = policy_list(prefix)
    if not combined:
        return plain
    combination = st.fixed_dictionaries(
        {},
        optional={"prepend": policy_list(prefix + "-pre"), "append": policy_list(prefix + "-post")},
    ).filter(bool)
    return st.one_of(plain, combination)


def settings_block(prefix: str, *, combined: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "runtime": runtime,
            "variables": variables,
            "policies": policies(prefix, combined),
        },
    )


@st.composite
def workspaces(draw: st.DrawFn) -> dict[str, Any]:
    """{templates, appDefaults, projects}: valid by construction."""
    templates: dict[str, Any] = {}
    for index in range(draw(st.integers(1, 4))):
        name = f"t{index}"
        body = draw(settings_block(name, combined=True))
        if index and draw(st.booleans()):
            body["extends"] = draw(st.lists(st.sampled_from(list(templates)), max_size=2))
        if draw(st.booleans()):
            body["params"] = {"v": {"type": "string", "default": "dflt"}}
            body.setdefault("variables", {})["P"] = f"{name}:${{v}}"
        if draw(st.booleans()):
            body["environments"] = {"production": draw(settings_block(name + "-prod"))}
        templates[name] = body
    app_level = [n for n in templates]
    settings_level = [n for n, body in templates.items() if not _has_environments(n, templates)]

    def use(name: str) -> Any:
        if "params" in templates[name] and draw(st.booleans()):
            return {"template": name, "params": {"v": draw(values)}}
        return name

    projects: dict[str, Any] = {}
    for p in range(draw(st.integers(1, 2))):
        apps: dict[str, Any] = {}
        for a in range(draw(st.integers(1, 3))):
            entry: dict[str, Any] = {"oci": {"image": "nginx:1.27"}}
            chosen = draw(st.lists(st.sampled_from(app_level), max_size=3))
            if chosen:
                entry["extends"] = [use(n) for n in chosen]
            if draw(st.booleans()):
                entry["defaults"] = draw(settings_block("defaults"))
                if settings_level and draw(st.booleans()):
                    entry["defaults"]["extends"] = [use(draw(st.sampled_from(settings_level)))]
            envs: dict[str, Any] = {}
            for env in ENVIRONMENTS:
                if draw(st.booleans()):
                    envs[env] = draw(settings_block(env))
                    if settings_level and draw(st.booleans()):
                        envs[env]["extends"] = [use(draw(st.sampled_from(settings_level)))]
            if envs:
                entry["environments"] = envs
            apps[f"app-{a}"] = entry
        project: dict[str, Any] = {"apps": apps}
        if draw(st.booleans()):
            project["appDefaults"] = draw(settings_block(f"p{p}", combined=True))
        projects[f"project-{p}"] = project
    workspace: dict[str, Any] = {"templates": templates, "projects": projects}
    if draw(st.booleans()):
        workspace["appDefaults"] = draw(settings_block("ws", combined=True))
    return workspace


def _has_environments(
    name: str, templates: dict[str, Any], seen: frozenset[str] = frozenset()
) -> bool:
    body = templates[name]
    if "environments" in body:
        return True
    return any(
        _has_environments(n, templates, seen | {name})
        for n in body.get("extends", ())
        if n not in seen
    )


def split(workspace: dict[str, Any], owners: list[int], names: list[str]) -> dict[str, str]:
    """The workspace as files: each template, each project and `appDefaults` in the file
    `owners` says, files named by `names` (which decides the order they are read in)."""
    documents: list[dict[str, Any]] = [{"version": 1} for _ in names]
    parts = [
        *(("templates", name, body) for name, body in workspace["templates"].items()),
        *(("projects", slug, body) for slug, body in workspace["projects"].items()),
    ]
    for (block, name, body), owner in zip(parts, owners, strict=False):
        documents[owner % len(names)].setdefault(block, {})[name] = body
    if "appDefaults" in workspace:
        documents[owners[-1] % len(names)]["appDefaults"] = workspace["appDefaults"]
    return {
        name: yaml.safe_dump(doc, sort_keys=False)
        for name, doc in zip(names, documents, strict=True)
    }


def load_files(files: dict[str, str]) -> Manifest:
    with tempfile.TemporaryDirectory() as directory:
        for name, text in files.items():
            Path(directory, name).write_text(text)
        return load_manifest([directory])


def by_slug(manifest: Manifest) -> dict[str, Any]:
    return {project.slug: comparable(project) for project in manifest.projects}


@settings(max_examples=60)
@given(workspaces(), st.lists(st.integers(0, 5), min_size=12, max_size=12), st.randoms())
def test_the_files_and_their_order_change_nothing(
    workspace: dict[str, Any], owners: list[int], random: Any
) -> None:
    names = [f"{n}.yaml" for n in "abc"]
    one = load_files(split(workspace, [0] * 12, names))
    shuffled = names[:]
    random.shuffle(shuffled)
    other = load_files(split(workspace, owners, shuffled))
    assert by_slug(one) == by_slug(other)


@settings(max_examples=60)
@given(workspaces())
def test_a_template_reached_again_changes_nothing(workspace: dict[str, Any]) -> None:
    again = copy.deepcopy(workspace)
    for project in again["projects"].values():
        for app in project["apps"].values():
            used = app.get("extends", [])
            app["extends"] = used + used  # each again, after the first
            for env in app.get("environments", {}).values():
                if "extends" in env:
                    env["extends"] = env["extends"] * 2
    assert by_slug(load_files(split(workspace, [0] * 12, ["m.yaml"]))) == by_slug(
        load_files(split(again, [0] * 12, ["m.yaml"]))
    )


@settings(max_examples=60)
@given(workspaces())
def test_the_expansion_written_out_means_the_same_and_expands_to_itself(
    workspace: dict[str, Any],
) -> None:
    files = split(workspace, [0] * 12, ["m.yaml"])
    flat = flattened(files)
    assert by_slug(load_files(files)) == by_slug(load_files(flat))
    assert yaml.safe_load(flattened(flat)["m.yaml"]) == yaml.safe_load(flat["m.yaml"])


def flattened(files: dict[str, str]) -> dict[str, str]:
    """The manifest with each environment written out as the merge of its layers (the
    documented rules, applied here independently of the code), and no shared blocks."""
    with tempfile.TemporaryDirectory() as directory:
        for name, text in files.items():
            Path(directory, name).write_text(text)
        document, _ = check_manifest([directory])
        projects: dict[str, Any] = {}
        for path, slug, app in document.apps():
            entry = {
                k: v for k, v in app.items() if k not in ("extends", "defaults", "environments")
            }
            envs = {name: merge(layered) for name, layered in document.environments(path)}
            if envs:
                entry["environments"] = envs
            projects.setdefault(str(path[1]), {"apps": {}})["apps"][slug] = entry
    return {"m.yaml": yaml.safe_dump({"version": 1, "projects": projects}, sort_keys=False)}


def merge(layered: Layered) -> dict[str, Any]:
    """The documented merge, lowest layer first: mappings by key (a variable whole), other
    values replaced, a combination's items around the list of the layers above it."""
    result: dict[str, Any] = {}
    wraps: dict[str, list[tuple[list[Any], list[Any]]]] = {}
    for data, _ in layered.layers:
        for key, value in data.items():
            if key in COMBINED_LISTS and is_combination(value):
                wraps.setdefault(key, []).append(
                    (value.get("prepend", []), value.get("append", []))
                )
                result.setdefault(key, [])
            elif key == "variables":
                result[key] = {**result.get(key, {}), **value}
            elif isinstance(value, dict) and isinstance(result.get(key), dict):
                result[key] = deep(result[key], value)
            else:
                result[key] = copy.deepcopy(value)
    for key, layers in wraps.items():
        listed = result[key]
        for before, after in reversed(layers):
            listed = [*before, *listed, *after]
        result[key] = listed
    return result


def deep(low: dict[str, Any], high: dict[str, Any]) -> dict[str, Any]:
    merged = dict(low)
    for key, value in high.items():
        merged[key] = (
            deep(merged[key], value)
            if isinstance(value, dict) and isinstance(merged.get(key), dict)
            else value
        )
    return merged
