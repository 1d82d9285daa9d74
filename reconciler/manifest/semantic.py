"""Rules of the platform spec that JSON Schema cannot express, and warnings.

Runs on the merged document even when the schema found problems, so every
check is defensive about types: a value of the wrong type was already
reported by the schema and is skipped here. Each message says how to fix it.

A rule the spec states is an error. A rule that goes further (a value the
platform accepts but that is very likely a mistake) is a warning: an error
there would refuse manifests that `reconciler export` writes for live states
the platform holds, and a plan of them could never run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, TypeGuard

from reconciler.manifest.document import Document
from reconciler.manifest.formats import host_problem, normalise_host
from reconciler.manifest.layers import Layered, is_combination
from reconciler.manifest.model import MAX_VALUE_CHARS
from reconciler.manifest.opaque import check_opaque, policy_rule_problem
from reconciler.manifest.policy_rules import PolicyRules
from reconciler.manifest.policy_test_rules import MemberCheck, check_list, check_tests
from reconciler.manifest.problems import WARNING, Path, Problem, format_path
from reconciler.manifest.schema import manifest_schema
from reconciler.manifest.secret_sources import env_problem, file_problem, from_file
from reconciler.manifest.templates import USE

MAX_DESCRIPTION = 255
MAX_REGIONS = 5
MAX_POLICIES = 50
"""The schema's bounds of the two lists, checked here too on a list combined from several
blocks (`prepend`/`append`), which the schema sees only piece by piece."""
FINGERPRINT_SUFFIX = 23
MAX_WRITEONLY_DESCRIPTION = MAX_DESCRIPTION - FINGERPRINT_SUFFIX

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|://")


def semantic_problems(
    document: Document, member_checks: Sequence[MemberCheck] = ()
) -> list[Problem]:
    """Every rule's problems; `member_checks` add warnings about policy match members."""
    rules = _Rules(document, member_checks)
    rules.check()
    return rules.problems


class _Rules:
    def __init__(self, document: Document, member_checks: Sequence[MemberCheck]) -> None:
        self.doc = document
        self.member_checks = member_checks
        self.problems: list[Problem] = []
        self._ids: dict[str, Path] = {}
        self._hosts: dict[str, tuple[Path, str]] = {}
        self._policies = PolicyRules(self.report, self.warn)

    def report(self, path: Path, message: str, *, key: bool = False) -> None:
        """An error: the spec refuses this, or the manifest cannot mean anything."""
        self.problems.append(self.doc.problem_at(path, message, key=key))

    def warn(self, path: Path, message: str, *, key: bool = False) -> None:
        """A warning: the platform accepts this, but it is very likely a mistake."""
        self.problems.append(self.doc.problem_at(path, message, WARNING, key=key))

    def check(self) -> None:
        for slug, project in self.doc.projects.items():
            if isinstance(project, dict):
                self._pinned_id(("projects", slug), project)
        for app_path, _, app in self.doc.apps():
            self._pinned_id(app_path, app)
            self._source(app_path, app)
            environments = self.doc.environments(app_path)
            for block_path, block in _settings_blocks(environments):
                self._settings(block_path, block)
            for name, layered in environments:
                self._healthcheck_complete(layered)
                self._domains_unique(app_path, name, layered)
                self._combined_lists(layered)
                policies = layered.items("policies")
                if policies is not None:
                    check_list(self.warn, policies[0], self.member_checks)
                check_tests(self.report, f"{app_path[1]}/{app_path[3]}/{name}", layered)

    # --- projects and apps ----------------------------------------------------

    def _pinned_id(self, path: Path, node: dict[str, Any]) -> None:
        pinned = node.get("id")
        if not isinstance(pinned, str):
            return
        id_path = (*path, "id")
        if pinned in self._ids:
            first = self.doc.at(self._ids[pinned])
            self.report(
                id_path,
                f"ID {pinned!r} is also pinned at {first}; an ID identifies one object: "
                "remove the wrong one",
            )
        else:
            self._ids[pinned] = id_path

    def _source(self, path: Path, app: dict[str, Any]) -> None:
        # one source only, `owner/name`, a tag or digest: the schema's rules
        oci = app.get("oci")
        if isinstance(oci, dict):
            image = oci.get("image")
            if isinstance(image, str) and image:
                self._image((*path, "oci", "image"), image)

    def _image(self, path: Path, image: str) -> None:
        scheme = _url_scheme(image)
        if scheme:
            # The spec asks only for a tag or digest, and the platform stores such a value;
            # but no registry is addressed with a scheme, so its deployments would fail.
            # The image is not quoted: a URL can hold credentials (https://user:token@...).
            self.warn(
                path,
                f"the image reference has a URL scheme ({scheme!r}); registries are "
                "addressed without one, so deployments would most likely fail to pull it: "
                "write registry/name:tag (e.g. ghcr.io/acme/web:1.4.2)",
            )

    # --- environment settings (defaults and each environment) -------------------

    def _settings(self, path: Path, block: dict[str, Any]) -> None:
        for regions in _pieces(block, "regions", path):
            self._regions(regions)
        variables = block.get("variables")
        if isinstance(variables, dict):
            for key, variable in variables.items():
                self._variable((*path, "variables", key), variable)
        for policies in _pieces(block, "policies", path):
            for policy, policy_path in policies:
                if isinstance(policy, dict):
                    self._policies.check(policy_path, policy)
                    self._policy_opaque(policy_path, policy)
        self._settings_opaque(path, block)

    def _settings_opaque(self, path: Path, block: dict[str, Any]) -> None:
        """`opaque` blocks give only members this reconciler does not know (opaque.py)."""
        root = manifest_schema()
        settings = root["$defs"]["settings"]
        check_opaque(self.report, path, block, settings, root, "settings")
        for section in ("build", "runtime"):
            if isinstance(block.get(section), dict):
                schema = settings["properties"][section]
                check_opaque(self.report, (*path, section), block[section], schema, root, section)
        for regions in _pieces(block, "regions", path):
            for region, region_path in regions:
                if isinstance(region, dict):
                    schema = root["$defs"]["region"]
                    check_opaque(self.report, region_path, region, schema, root, "region")

    def _policy_opaque(self, path: Path, policy: dict[str, Any]) -> None:
        root = manifest_schema()
        schema = root["$defs"]["policy"]
        check_opaque(self.report, path, policy, schema, root, "policy")
        problem = policy_rule_problem(policy, schema, root)
        if problem is not None:
            self.report(path, problem)
        match = policy.get("match")
        for index, item in enumerate(match if isinstance(match, list) else ()):
            if isinstance(item, dict):
                item_schema = root["$defs"]["matchItem"]
                check_opaque(self.report, (*path, "match", index), item, item_schema, root, "")

    def _combined_lists(self, layered: Layered) -> None:
        """A list an environment combines from several blocks, as a whole: the schema's
        bounds, and a region listed by two of the blocks."""
        for key, most in (("regions", MAX_REGIONS), ("policies", MAX_POLICIES)):
            if not any(is_combination(data.get(key)) for data, _ in layered.layers):
                continue
            found = layered.items(key)
            if found is None:
                continue
            items, path = found
            if key == "regions":
                self._regions(items)
            if len(items) > most:
                self.report(
                    path,
                    f"{len(items)} {key} once the lists of the blocks it combines "
                    f"(prepend/append) are put together; at most {most} are allowed",
                )

    def _regions(self, regions: list[tuple[Any, Path]]) -> None:
        seen: dict[str, Path] = {}
        for region, path in regions:
            if not isinstance(region, dict):
                continue
            name = region.get("name")
            name_path = (*path, "name")
            if isinstance(name, str):
                if name in seen:
                    first = self.doc.at(seen[name])
                    where = (
                        f"line {first.line}"
                        if first.file == self.doc.at(name_path).file
                        else str(first)
                    )
                    self.report(
                        name_path,
                        f"region {name!r} is listed twice (first at {where}); list each "
                        "region once",
                    )
                else:
                    seen[name] = name_path
            replicas = region.get("replicas")
            if isinstance(replicas, dict):
                self._replicas((*path, "replicas"), replicas)

    def _replicas(self, path: Path, replicas: dict[str, Any]) -> None:
        """The spec bounds neither member against the other, and the platform stores both
        cases below; each is still almost certainly a slip."""
        low, high = replicas.get("min"), replicas.get("max")
        if _is_int(high) and high == 0:
            self.warn(
                (*path, "max"),
                "replicas.max 0 runs no instance in this region; set max to at least 1 "
                "(or leave the region out of the list)",
            )
        if _is_int(low) and _is_int(high) and low > high:
            self.warn(
                (*path, "min"),
                f"replicas.min {low} is greater than replicas.max {high}; min should be at "
                "most max (equal turns autoscaling off): lower min or raise max",
            )

    def _variable(self, path: Path, variable: Any) -> None:
        if not isinstance(variable, dict):
            return  # a shorthand literal: its type and length are the schema's
        # exactly one of value/fromEnv/fromFile: the schema's rule
        sources = [s for s in ("value", "fromEnv", "fromFile") if s in variable]
        value = variable.get("value")
        if _is_int(value) and len(str(value)) > MAX_VALUE_CHARS:
            self.report((*path, "value"), f"the value is longer than {MAX_VALUE_CHARS} characters")
        kind = variable.get("kind")
        if kind is None:
            kind = "recoverable" if sources == ["value"] else "writeonly"
        description = variable.get("description")
        if (
            kind == "writeonly"
            and isinstance(description, str)
            and len(description) > MAX_WRITEONLY_DESCRIPTION
        ):
            # The platform allows 255; only reconciler's fingerprint needs the room, and only
            # when RECONCILER_FINGERPRINT_KEY is set. Names the length, never the text or value.
            self.warn(
                (*path, "description"),
                f"a write-only variable's description should have at most "
                f"{MAX_WRITEONLY_DESCRIPTION} characters (it has {len(description)}): with "
                f"RECONCILER_FINGERPRINT_KEY set, reconciler appends a {FINGERPRINT_SUFFIX}-"
                f"character fingerprint of the secret and the platform allows "
                f"{MAX_DESCRIPTION} in all, so the end would be cut and every plan would show "
                "a change; shorten it",
            )
        declared = variable.get("fromFile")
        if isinstance(declared, str) and declared:
            self._from_file((*path, "fromFile"), declared)
        name = variable.get("fromEnv")
        if isinstance(name, str):
            self._from_env((*path, "fromEnv"), name)

    def _from_env(self, path: Path, name: str) -> None:
        problem = env_problem(name)
        if problem is not None:
            self.report(path, problem)

    def _from_file(self, path: Path, declared: str) -> None:
        """The path rules of `secret_sources.py`, checked without reading the file: what it
        holds is a secret (its length and text are apply's to check, when it sends it). A
        missing file is fine: secret files are kept out of git, and the plan shows the value as
        known after apply."""
        source = from_file(declared, self.doc.directory_of(self.doc.at(path)))
        problem = file_problem(source)
        if problem is not None:
            self.report(path, problem)

    def _domains_unique(self, app_path: Path, env_name: str, layered: Layered) -> None:
        found = layered.items("domains")
        if found is None:
            return
        owner = format_path((*app_path, "environments", env_name))
        for host, here in found[0]:
            if not isinstance(host, str) or host_problem(host):
                continue  # the schema reports it
            key = normalise_host(host)
            if key not in self._hosts:
                self._hosts[key] = (here, owner)
                continue
            first_path, first_owner = self._hosts[key]
            if first_path == here:
                self.report(here, _both_environments(self.doc, host, here))
            elif first_owner == owner:
                self.report(here, f"{host!r} is listed twice; list each domain once")
            else:
                self.report(
                    here,
                    f"{host!r} is already used by {first_owner} "
                    f"({self.doc.at(first_path)}); a domain belongs to one environment only",
                )

    def _healthcheck_complete(self, layered: Layered) -> None:
        runtime = layered.child("runtime")
        healthcheck = runtime.child("healthcheck") if runtime else None
        if healthcheck is None:
            return
        missing = [f for f in ("method", "path") if healthcheck.top(f) is None]
        if missing:
            self.report(
                healthcheck.path,
                f"a healthcheck needs {' and '.join(missing)} (e.g. "
                "{method: GET, path: /healthz}); or set `healthcheck: null` to remove it",
            )


def _both_environments(document: Document, host: str, path: Path) -> str:
    if path[0] != USE:
        return (
            f"{host!r} under `defaults` would attach to both environments; a domain belongs to "
            "one environment: move it under environments.production or environments.preview"
        )
    source = format_path(document.expansion.uses[int(path[1])].source)
    return (
        f"{host!r} is in the settings {source} gives both environments, so it would attach to "
        f"both; a domain belongs to one environment: move it under {source}'s "
        "environments.production or environments.preview"
    )


def _settings_blocks(
    environments: Sequence[tuple[str, Layered]],
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Each block of settings under an app's environments once (`defaults` is under both)."""
    seen: set[Path] = set()
    for _, layered in environments:
        for block, path in layered.layers:
            if path not in seen:
                seen.add(path)
                yield path, block


def _pieces(block: dict[str, Any], key: str, path: Path) -> Iterator[list[tuple[Any, Path]]]:
    """The list `key` of a block with where each item is: the list, or each of the lists a
    combination (`prepend`/`append`) writes."""
    value = block.get(key)
    if isinstance(value, list):
        yield [(item, (*path, key, index)) for index, item in enumerate(value)]
    elif is_combination(value):
        for side in ("prepend", "append"):
            items = value.get(side)
            if isinstance(items, list):
                yield [(item, (*path, key, side, index)) for index, item in enumerate(items)]


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _url_scheme(image: str) -> str | None:
    """`https://` (or a bare `://`) where an image reference has none."""
    found = _SCHEME.search(image)
    return found.group(0) if found else None


__all__ = ["normalise_host", "semantic_problems"]
