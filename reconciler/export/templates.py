"""`export --templates`: what several exported apps say alike, written once as templates.

An app's exported settings are items: a build or runtime field, a variable, a whole
`regions` or `policies` list, each in one scope (`defaults`, `production` or `preview`; a
domain belongs to one environment and never moves). Items that the same apps (two or more)
share become one template, with the `defaults` items as its own settings and the others
under its `environments`, and those apps extend it instead of writing them. Items a larger
set of apps shares, too few to be worth a template of their own, go to the templates of the
smaller sets inside it.

The merge rebuilds every environment exactly: `factor_defaults` leaves no key both in
`defaults` and in an environment, so an app's items never overlap (one value for each field
of each scope), and moving an item to a template below the app's own blocks changes no
environment. A group of apps becomes a template only when it makes the manifest shorter
(`_worth_it`), so a setting two apps happen to share stays where it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from reconciler.export.convert import ENVIRONMENT_KEY_ORDER

SCOPES = ("defaults", "production", "preview")
MEMBERWISE = ("build", "runtime", "variables")
WHOLE = ("regions", "policies")

Item = tuple[str, str, str, str]
"""(scope, section, field ("" for a whole list), the value as canonical JSON)."""


def factor_templates(
    projects: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(templates by name, the projects' entries extending them instead)."""
    apps = {
        (slug, app_slug): app
        for slug, project in projects.items()
        for app_slug, app in (project.get("apps") or {}).items()
    }
    holders: dict[Item, list[tuple[str, str]]] = {}
    for key, app in apps.items():
        for item in _items(app):
            holders.setdefault(item, []).append(key)
    groups: dict[tuple[tuple[str, str], ...], list[Item]] = {}
    for item, holding in holders.items():
        if len(holding) > 1:
            groups.setdefault(tuple(holding), []).append(item)
    order = list(apps)
    chosen = sorted(
        ((keys, list(items)) for keys, items in groups.items() if _worth_it(len(keys), len(items))),
        key=lambda group: (-len(group[0]), order.index(group[0][0])),
    )
    for keys, items in groups.items():
        if not _worth_it(len(keys), len(items)):
            # too few alone, but every app of a template among these apps has them too
            for members, taking in chosen:
                if set(members) <= set(keys):
                    taking.extend(items)
    templates: dict[str, Any] = {}
    uses: dict[tuple[str, str], list[str]] = {}
    moved: dict[tuple[str, str], set[Item]] = {}
    for number, (keys, items) in enumerate(chosen, start=1):
        name = f"shared-{number}"
        templates[name] = _template(items)
        for key in keys:
            uses.setdefault(key, []).append(name)
            moved.setdefault(key, set()).update(items)
    result = {slug: dict(project) for slug, project in projects.items()}
    for (slug, app_slug), names in uses.items():
        app = _without(apps[(slug, app_slug)], moved[(slug, app_slug)])
        result[slug]["apps"] = {**result[slug]["apps"], app_slug: _extending(app, names)}
    return templates, result


def _worth_it(apps: int, items: int) -> bool:
    """Whether the lines saved (each app but one writes the items no more) outweigh the
    template's own and one `extends` entry for each app."""
    return (apps - 1) * items > apps + 2


def _items(app: Mapping[str, Any]) -> Iterator[Item]:
    for scope, block in _blocks(app):
        for section in MEMBERWISE:
            for field, value in (block.get(section) or {}).items():
                yield scope, section, field, _canonical(value)
        for section in WHOLE:
            if section in block:
                yield scope, section, "", _canonical(block[section])


def _blocks(app: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(app.get("defaults"), Mapping):
        yield "defaults", app["defaults"]
    for name, block in (app.get("environments") or {}).items():
        if isinstance(block, Mapping):
            yield name, block


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _template(items: list[Item]) -> dict[str, Any]:
    template: dict[str, Any] = {}
    for scope, section, field, value in items:
        block = template if scope == "defaults" else _environment(template, scope)
        if field:
            block.setdefault(section, {})[field] = json.loads(value)
        else:
            block[section] = json.loads(value)
    return _ordered(template)


def _environment(template: dict[str, Any], name: str) -> dict[str, Any]:
    environments = template.setdefault("environments", {})
    block: dict[str, Any] = environments.setdefault(name, {})
    return block


def _ordered(block: dict[str, Any]) -> dict[str, Any]:
    """Sections in the order people write them; environments last, production first."""
    result = {k: block[k] for k in ENVIRONMENT_KEY_ORDER if k in block}
    if "environments" in block:
        envs = block["environments"]
        result["environments"] = {n: _ordered(envs[n]) for n in SCOPES[1:] if n in envs}
    return result


def _without(app: Mapping[str, Any], items: set[Item]) -> dict[str, Any]:
    """The app without the items its templates now hold (blocks left empty are dropped:
    the templates keep their environments managed)."""
    result = dict(app)
    for scope, block in list(_blocks(app)):
        kept = _kept(scope, block, items)
        if scope == "defaults":
            if kept:
                result["defaults"] = kept
            else:
                result.pop("defaults")
            continue
        envs = dict(result["environments"])
        if kept:
            envs[scope] = kept
        else:
            del envs[scope]
        if envs:
            result["environments"] = envs
        else:
            result.pop("environments")
    return result


def _kept(scope: str, block: Mapping[str, Any], items: set[Item]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for section, value in block.items():
        if section in MEMBERWISE:
            rest = {
                field: v
                for field, v in value.items()
                if (scope, section, field, _canonical(v)) not in items
            }
            if rest:
                kept[section] = rest
        elif section in WHOLE:
            if (scope, section, "", _canonical(value)) not in items:
                kept[section] = value
        else:
            kept[section] = value
    return kept


def _extending(app: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The app with `extends` where a person writes it: after the source, before settings."""
    result: dict[str, Any] = {}
    for key, value in app.items():
        if key in ("defaults", "environments") and "extends" not in result:
            result["extends"] = names
        result[key] = value
    result.setdefault("extends", names)
    return result
