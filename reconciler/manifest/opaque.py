"""`opaque:` blocks: members of a platform object that this reconciler does not know.

A newer platform may give its objects members this version has never heard of (a runtime's
`gpu`, a policy of a new kind such as `rateLimit`). `reconciler export` writes them in an
`opaque` block on the object that holds them, and the plan then manages them as written: an
opaque block is deep-merged into the object the API receives (`deep_merge`: mappings merge by
key, anything else replaces: `model.deep_merge`).

An opaque block holds what the manifest cannot say: members this reconciler does not know,
inside a member it knows that is an object with no `opaque` of its own (a policy's `firewall`,
a region's `replicas`, a runtime's `healthcheck`) members it does not know
(`opaque: {firewall: {statusCode: 429}}`), and a value of a known member that the manifest's
field refuses (a newer platform's value: `opaque: {shutdownSignal: SIGUSR1}`). A value the
manifest can write goes in its own field; `check_opaque` says so where an opaque block gives
one. What is known here
is the manifest schema's properties at that place (plus `PLATFORM_ONLY`, what the platform
documents of it but a manifest never sets); tests/manifest/test_opaque.py holds them to the
platform's own resource tables (reconciler/platform/shapes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reconciler.manifest.model import deep_merge
from reconciler.manifest.problems import Path

OPAQUE = "opaque"

PLATFORM_ONLY: Mapping[str, frozenset[str]] = {
    "settings": frozenset({"id", "slug", "description", "kind", "deleteProtection"}),
}
"""By opaque place (its schema definition), the members the platform documents for the
object but which a manifest never sets: known, so never taken for a new member."""

MANIFEST_ONLY: Mapping[str, frozenset[str]] = {
    "settings": frozenset({"extends", "checks", "variables", "domains", "policies", "policyTests"}),
}
"""Keys of the manifest at an opaque place that are not members of the platform's object
(what the environment's other calls manage, templates, waivers)."""


def merge_opaque(value: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest object (plain data) with its `opaque` block merged in, the block removed."""
    rest = {k: v for k, v in value.items() if k != OPAQUE}
    opaque = value.get(OPAQUE)
    return deep_merge(rest, opaque) if isinstance(opaque, Mapping) else rest


Report = Callable[..., None]
"""`report(path, message, key=False)`."""


def check_opaque(
    report: Report,
    path: Path,
    holder: Mapping[str, Any],
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    place: str,
) -> None:
    """Errors for the `opaque` block of `holder` (written at `path`; `schema` is holder's
    schema node, of the definition `place`; `root` the whole schema, for `$ref`s) where it
    gives the value of a member this reconciler knows."""
    opaque = holder.get(OPAQUE)
    if isinstance(opaque, Mapping):  # anything else is the schema's to report
        _check_members(report, (*path, OPAQUE), opaque, holder, schema, root, place, "")


def _check_members(
    report: Report,
    path: Path,
    opaque: Mapping[str, Any],
    written: Mapping[str, Any],
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    place: str,
    prefix: str,
) -> None:
    """`written`: what the manifest writes beside the block at this level (a member given
    both there and in `opaque` is an error, whatever its value)."""
    properties = _properties(schema, root)
    for key, value in opaque.items():
        name = f"{prefix}{key}"
        here = (*path, key)
        beside = written.get(key)
        if key in written and not (isinstance(beside, Mapping) and isinstance(value, Mapping)):
            report(
                here,
                f"`{name}` is written both beside `{OPAQUE}` and in it; keep one",
                key=True,
            )
            continue
        if key in PLATFORM_ONLY.get(place, ()) or key in MANIFEST_ONLY.get(place, ()):
            report(
                here,
                f"`{name}` is a member this reconciler knows, which it does not set here; "
                f"remove it from `{OPAQUE}`",
                key=True,
            )
            continue
        section = _flat_section(key, place, root) if key not in properties else None
        if section is not None:
            report(
                here,
                f"`{name}` is a {section} field (`updateSettings` takes build and runtime "
                f"fields side by side): write it as `{section}.{name}`",
                key=True,
            )
            continue
        if key not in properties or key == OPAQUE:
            continue  # a member this reconciler does not know: anything goes
        member = _resolve(properties[key], root)
        if _is_object(member) and OPAQUE in _properties(member, root):
            report(
                here,
                f"`{name}` has an `{OPAQUE}` block of its own: write the members of it that "
                f"this reconciler does not know in `{name}.{OPAQUE}`",
                key=True,
            )
            continue
        if _is_object(member) and isinstance(value, Mapping):
            inner = beside if isinstance(beside, Mapping) else {}
            _check_members(report, here, value, inner, member, root, "", f"{name}.")
            continue
        if not _valid(value, member, root):
            continue  # a value the field refuses (a newer platform's): only `opaque` can say it
        report(
            here,
            f"`{name}` is a field this reconciler knows: write it as the manifest's own "
            f"`{name}` beside `{OPAQUE}`, which holds only what the manifest cannot say",
            key=True,
        )


FLAT_PLACES = ("settings", "runtime", "build")
"""The places whose `opaque` members are sent as members of `updateSettings` itself, where the
build's and the runtime's fields stand side by side."""


def _flat_section(key: str, place: str, root: Mapping[str, Any]) -> str | None:
    """`runtime` or `build` when `key` is a field of that section and an `opaque` block at
    `place` would send it as that field."""
    if place not in FLAT_PLACES:
        return None
    settings = root.get("$defs", {}).get("settings", {})
    for section in ("runtime", "build"):
        if section != place and key in _properties(settings["properties"][section], root):
            return section
    return None


def _valid(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    """Whether the manifest's own field (of `schema`) accepts `value`."""
    # imported here: jsonschema is loaded only for a document that needs its messages, and a
    # known member in an `opaque` block is rare
    from jsonschema import Draft202012Validator

    checked = {**schema, "$defs": root.get("$defs", {})}
    return bool(Draft202012Validator(checked).is_valid(value))


def _properties(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    resolved = _resolve(schema, root)
    properties = resolved.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def _is_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """A schema node with its `$ref` (to `#/$defs/<name>`) followed."""
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < 10:
        name = str(schema["$ref"]).removeprefix("#/$defs/")
        schema = root.get("$defs", {}).get(name, {})
        seen += 1
    return schema


def policy_rule_problem(
    policy: Mapping[str, Any], schema: Mapping[str, Any], root: Mapping[str, Any]
) -> str | None:
    """What is wrong with the rule of a policy whose `opaque` block takes part in it: none
    written and none of a kind this reconciler does not know in `opaque`, or both a firewall
    and a logging rule once `opaque` is merged in."""
    opaque = policy.get(OPAQUE)
    if not isinstance(opaque, Mapping):
        return None  # without `opaque` the schema says everything
    merged = merge_opaque(policy)
    if "firewall" in merged and "logging" in merged:
        return (
            "a policy holds either a firewall or a logging rule, not both (with its `opaque` "
            "block merged in): split it into two policies"
        )
    firewall = merged.get("firewall")
    if isinstance(firewall, Mapping) and "action" not in firewall:
        return "a firewall rule needs `action` (e.g. `firewall: {action: ACTION_DENY}`)"
    known = set(_properties(schema, root))
    if "firewall" in merged or "logging" in merged or any(k not in known for k in opaque):
        return None
    return (
        "a policy needs a rule: add `firewall: {action: ACTION_DENY}` or `logging: "
        "{requestHeaders: true}`; `opaque` gives one only for a kind this reconciler does not "
        "know (e.g. `opaque: {rateLimit: {...}}`)"
    )
