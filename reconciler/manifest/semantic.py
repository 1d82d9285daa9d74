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

from reconciler.manifest.document import Document, Layered, environments
from reconciler.manifest.formats import host_problem, normalise_host
from reconciler.manifest.model import MAX_VALUE_CHARS
from reconciler.manifest.policy_rules import PolicyRules
from reconciler.manifest.policy_test_rules import MemberCheck, check_list, check_tests
from reconciler.manifest.problems import WARNING, Path, Problem, format_path
from reconciler.manifest.secret_sources import (
    SecretUnavailable,
    env_problem,
    from_file,
    read_file,
)

MAX_DESCRIPTION = 255
FINGERPRINT_SUFFIX = 22
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
        position = self.doc.key_at(path) if key else self.doc.at(path)
        self.problems.append(Problem.at(position, path, message))

    def warn(self, path: Path, message: str, *, key: bool = False) -> None:
        """A warning: the platform accepts this, but it is very likely a mistake."""
        position = self.doc.key_at(path) if key else self.doc.at(path)
        self.problems.append(Problem.at(position, path, message, WARNING))

    def check(self) -> None:
        for slug, project in self.doc.projects.items():
            if isinstance(project, dict):
                self._pinned_id(("projects", slug), project)
        for app_path, _, app in self.doc.apps():
            self._pinned_id(app_path, app)
            self._source(app_path, app)
            for block_path, block in _settings_blocks(app_path, app):
                self._settings(block_path, block)
            for name, layered in environments(app_path, app):
                self._healthcheck_complete(layered)
                self._domains_unique(app_path, name, layered)
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
        regions = block.get("regions")
        if isinstance(regions, list):
            self._regions((*path, "regions"), regions)
        variables = block.get("variables")
        if isinstance(variables, dict):
            for key, variable in variables.items():
                self._variable((*path, "variables", key), variable)
        policies = block.get("policies")
        if isinstance(policies, list):
            for index, policy in enumerate(policies):
                if isinstance(policy, dict):
                    self._policies.check((*path, "policies", index), policy)
            check_list(self.warn, (*path, "policies"), policies, self.member_checks)

    def _regions(self, path: Path, regions: list[Any]) -> None:
        seen: dict[str, Path] = {}
        for index, region in enumerate(regions):
            if not isinstance(region, dict):
                continue
            name = region.get("name")
            name_path = (*path, index, "name")
            if isinstance(name, str):
                if name in seen:
                    self.report(
                        name_path,
                        f"region {name!r} is listed twice (first at line "
                        f"{self.doc.at(seen[name]).line}); list each region once",
                    )
                else:
                    seen[name] = name_path
            replicas = region.get("replicas")
            if isinstance(replicas, dict):
                self._replicas((*path, index, "replicas"), replicas)

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
        """The path rules of `secret_sources.py`, and the text a present file holds. A missing
        file is fine: secret files are kept out of git, and the plan shows the value as known
        after apply."""
        source = from_file(declared, self.doc.directory_of(self.doc.at(path)))
        try:
            text = read_file(source)
        except SecretUnavailable as error:
            self.report(path, error.message)
            return
        if text == "":
            self.report(path, f"file {declared!r} is empty; a variable value needs text")
        elif text is not None and len(text) > MAX_VALUE_CHARS:
            # counted in characters, as the spec bounds a value (16384 `é` fit)
            self.report(
                path,
                f"file {declared!r} holds {len(text)} characters; a variable value holds at "
                f"most {MAX_VALUE_CHARS}",
            )

    def _domains_unique(self, app_path: Path, env_name: str, layered: Layered) -> None:
        found = layered.top("domains")
        if found is None or not isinstance(found[0], list):
            return
        domains, path = found
        owner = format_path((*app_path, "environments", env_name))
        for index, host in enumerate(domains):
            if not isinstance(host, str) or host_problem(host):
                continue  # the schema reports it
            here = (*path, index)
            key = normalise_host(host)
            if key not in self._hosts:
                self._hosts[key] = (here, owner)
                continue
            first_path, first_owner = self._hosts[key]
            if first_path == here:
                self.report(
                    here,
                    f"{host!r} under `defaults` would attach to both environments; a domain "
                    "belongs to one environment: move it under environments.production or "
                    "environments.preview",
                )
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


def _settings_blocks(app_path: Path, app: dict[str, Any]) -> Iterator[tuple[Path, dict[str, Any]]]:
    defaults = app.get("defaults")
    if isinstance(defaults, dict):
        yield (*app_path, "defaults"), defaults
    envs = app.get("environments")
    if isinstance(envs, dict):
        for name, env in envs.items():
            if isinstance(env, dict):
                yield (*app_path, "environments", name), env


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _url_scheme(image: str) -> str | None:
    """`https://` (or a bare `://`) where an image reference has none."""
    found = _SCHEME.search(image)
    return found.group(0) if found else None


__all__ = ["normalise_host", "semantic_problems"]
