"""Rules of the platform spec that JSON Schema cannot express.

Runs on the merged document even when the schema found problems, so every
check is defensive about types: a value of the wrong type was already
reported by the schema and is skipped here. Each message says how to fix it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Any

import re2

from reconciler.manifest.document import Document, Layered, environments
from reconciler.manifest.model import Position
from reconciler.manifest.problems import Path, Problem

MAX_VALUE_CHARS = 16384
MAX_FILE_VALUE_BYTES = 16384
MAX_DESCRIPTION = 255
FINGERPRINT_SUFFIX = 22
MAX_WRITEONLY_DESCRIPTION = MAX_DESCRIPTION - FINGERPRINT_SUFFIX
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")
STRING_MATCH_KINDS = ("exact", "prefix", "regex")

_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[+._-][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


def normalise_host(host: str) -> str:
    """Host names compare case-insensitively and without the root's trailing dot."""
    return host.strip().lower().removesuffix(".")


def semantic_problems(document: Document) -> list[Problem]:
    rules = _Rules(document)
    rules.check()
    return rules.problems


class _Rules:
    def __init__(self, document: Document) -> None:
        self.doc = document
        self.problems: list[Problem] = []
        self._ids: dict[str, Path] = {}
        self._hosts: dict[str, tuple[Path, str]] = {}

    def report(self, path: Path, message: str, *, key: bool = False) -> None:
        position = self.doc.key_at(path) if key else self.doc.at(path)
        self.problems.append(Problem.at(position, path, message))

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
        git, oci = app.get("git"), app.get("oci")
        if git is not None and oci is not None and "git" in app:
            self.report(
                (*path, "oci"),
                "an app has one source: keep either `git` (a repository) or `oci` (an image)",
                key=True,
            )
        if isinstance(git, dict):
            repository = git.get("repository")
            if isinstance(repository, str) and not _REPOSITORY.fullmatch(repository):
                self.report(
                    (*path, "git", "repository"),
                    f"{repository!r} is not a repository: write it as owner/name "
                    "(e.g. acme/shop-web), without a URL or .git suffix",
                )
        if isinstance(oci, dict):
            image = oci.get("image")
            if isinstance(image, str) and image:
                problem = _image_problem(image)
                if problem:
                    self.report((*path, "oci", "image"), problem)

    # --- environment settings (defaults and each environment) -------------------

    def _settings(self, path: Path, block: dict[str, Any]) -> None:
        regions = block.get("regions")
        if isinstance(regions, list):
            self._regions((*path, "regions"), regions)
        variables = block.get("variables")
        if isinstance(variables, dict):
            for key, variable in variables.items():
                self._variable((*path, "variables", key), variable)
        domains = block.get("domains")
        if isinstance(domains, list):
            self._domains((*path, "domains"), domains)
        policies = block.get("policies")
        if isinstance(policies, list):
            for index, policy in enumerate(policies):
                if isinstance(policy, dict):
                    self._policy((*path, "policies", index), policy)

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
                low, high = replicas.get("min"), replicas.get("max")
                if _is_int(low) and _is_int(high) and low > high:
                    self.report(
                        (*path, index, "replicas", "min"),
                        f"replicas.min {low} is greater than replicas.max {high}; "
                        "min must be at most max (equal turns autoscaling off)",
                    )

    def _variable(self, path: Path, variable: Any) -> None:
        if not isinstance(variable, dict):
            return  # a shorthand literal: its type and length are the schema's
        sources = [s for s in ("value", "fromEnv", "fromFile") if s in variable]
        if not sources:
            self.report(
                path,
                "a variable needs a value: set exactly one of `value`, `fromEnv` or `fromFile`",
            )
        elif len(sources) > 1:
            self.report(
                (*path, sources[1]),
                f"set exactly one of `value`, `fromEnv` or `fromFile` (this one has "
                f"{' and '.join(sources)}): remove the others",
                key=True,
            )
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
            self.report(
                (*path, "description"),
                f"a write-only variable's description may have at most "
                f"{MAX_WRITEONLY_DESCRIPTION} characters (it has {len(description)}): reconciler "
                f"appends a {FINGERPRINT_SUFFIX}-character fingerprint of the secret to detect "
                f"changes, and the platform allows {MAX_DESCRIPTION} in all; shorten it",
            )
        declared = variable.get("fromFile")
        if isinstance(declared, str) and declared:
            self._from_file((*path, "fromFile"), declared)

    def _from_file(self, path: Path, declared: str) -> None:
        position = self.doc.at(path)
        target = self.doc.directory_of(position) / declared
        hint = "(relative paths are read from the manifest file's directory)"
        try:
            if not target.exists():
                self.report(path, f"file {declared!r} does not exist {hint}")
            elif not target.is_file():
                self.report(path, f"{declared!r} is not a regular file {hint}")
            else:
                size = target.stat().st_size
                if size > MAX_FILE_VALUE_BYTES:
                    self.report(
                        path,
                        f"file {declared!r} has {size} bytes; a variable value holds at most "
                        f"{MAX_FILE_VALUE_BYTES}",
                    )
                elif size == 0:
                    self.report(path, f"file {declared!r} is empty; a variable value needs text")
        except OSError as error:
            self.report(path, f"cannot read {declared!r}: {error.strerror}")

    def _domains(self, path: Path, domains: list[Any]) -> None:
        for index, host in enumerate(domains):
            if isinstance(host, str):
                problem = _host_problem(host)
                if problem:
                    self.report((*path, index), problem)

    def _domains_unique(self, app_path: Path, env_name: str, layered: Layered) -> None:
        found = layered.top("domains")
        if found is None or not isinstance(found[0], list):
            return
        domains, path = found
        owner = f"{'.'.join(map(str, app_path))}.environments.{env_name}"
        for index, host in enumerate(domains):
            if not isinstance(host, str) or _host_problem(host):
                continue
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

    # --- policies ----------------------------------------------------------------

    def _policy(self, path: Path, policy: dict[str, Any]) -> None:
        rules = [r for r in ("firewall", "logging") if r in policy]
        if not rules:
            self.report(
                path,
                "a policy needs a rule: add `firewall: {action: ACTION_DENY}` or "
                "`logging: {requestHeaders: true}`",
            )
        elif len(rules) == 2:
            self.report(
                (*path, "logging"),
                "a policy holds either a firewall or a logging rule, not both: split it into "
                "two policies",
                key=True,
            )
        match = policy.get("match")
        if isinstance(match, list):
            for index, item in enumerate(match):
                if isinstance(item, dict):
                    self._match_item((*path, "match", index), item)

    def _match_item(self, path: Path, item: dict[str, Any]) -> None:
        member = item.get("path")
        if isinstance(member, dict) and isinstance(member.get("path"), dict):
            self._string_match((*path, "path", "path"), member["path"])
        member = item.get("method")
        if isinstance(member, dict) and isinstance(member.get("methods"), list):
            self._methods((*path, "method", "methods"), member["methods"])
        for name in ("header", "queryParam"):
            member = item.get(name)
            if isinstance(member, dict):
                self._named((*path, name), member, name)
        member = item.get("remoteIp")
        if isinstance(member, dict):
            self._remote_ip((*path, "remoteIp"), member)

    def _string_match(self, path: Path, condition: dict[str, Any]) -> None:
        kinds = [k for k in STRING_MATCH_KINDS if k in condition]
        if not kinds:
            self.report(path, "set exactly one of `exact`, `prefix` or `regex`")
        elif len(kinds) > 1:
            self.report(
                (*path, kinds[1]),
                f"set exactly one of `exact`, `prefix` or `regex` (this one has "
                f"{' and '.join(kinds)})",
                key=True,
            )
        pattern = condition.get("regex")
        if isinstance(pattern, str) and pattern:
            error = _re2_error(pattern)
            if error:
                self.report(
                    (*path, "regex"),
                    f"invalid RE2 regular expression: {error} (RE2 has no backreferences or "
                    "lookaround)",
                )

    def _methods(self, path: Path, methods: list[Any]) -> None:
        for index, method in enumerate(methods):
            if not isinstance(method, str) or method in HTTP_METHODS:
                continue
            if method.upper() in HTTP_METHODS:
                message = f"methods are upper case: write {method.upper()!r}"
            else:
                message = f"{method!r} is not an HTTP method; use one of {', '.join(HTTP_METHODS)}"
            self.report((*path, index), message)

    def _named(self, path: Path, member: dict[str, Any], name: str) -> None:
        present, value = member.get("present"), member.get("value")
        if present is False:
            self.report(
                (*path, "present"),
                f"`present: false` is not allowed: the platform only matches a {name} that "
                f"exists (`present: true`); to act when it is missing, invert the policy or "
                f"match on its value",
            )
        if "present" in member and "value" in member:
            self.report(
                (*path, "value"),
                "set exactly one of `present: true` or `value`, not both",
                key=True,
            )
        elif "present" not in member and "value" not in member:
            self.report(path, f"a {name} condition needs `present: true` or `value: {{...}}`")
        if isinstance(value, dict):
            self._string_match((*path, "value"), value)

    def _remote_ip(self, path: Path, member: dict[str, Any]) -> None:
        sides = [s for s in ("in", "notIn") if s in member]
        if not sides:
            self.report(path, "set exactly one of `in` or `notIn` (a list of IPs or CIDR ranges)")
        elif len(sides) == 2:
            self.report(
                (*path, "notIn"),
                "set exactly one of `in` or `notIn`; to combine both, use two match items",
                key=True,
            )
        for side in sides:
            ranges = member[side]
            if isinstance(ranges, list):
                for index, text in enumerate(ranges):
                    if isinstance(text, str):
                        problem = _network_problem(text)
                        if problem:
                            self.report((*path, side, index), problem)


def _settings_blocks(app_path: Path, app: dict[str, Any]) -> Iterator[tuple[Path, dict[str, Any]]]:
    defaults = app.get("defaults")
    if isinstance(defaults, dict):
        yield (*app_path, "defaults"), defaults
    envs = app.get("environments")
    if isinstance(envs, dict):
        for name, env in envs.items():
            if isinstance(env, dict):
                yield (*app_path, "environments", name), env


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _image_problem(image: str) -> str | None:
    example = "e.g. ghcr.io/acme/web:1.4.2 or ghcr.io/acme/web@sha256:<digest>"
    if any(c.isspace() for c in image) or "://" in image:
        return f"{image!r} is not an image reference; write registry/name:tag ({example})"
    name, at, digest = image.partition("@")
    if at:
        if not _DIGEST.fullmatch(digest):
            return f"{digest!r} is not a valid digest (algorithm:hex, {example})"
        return None
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return f"image {image!r} has no tag or digest: pin one ({example})"
    tag = last.rsplit(":", 1)[1]
    if not _TAG.fullmatch(tag):
        return f"{tag!r} is not a valid image tag ({example})"
    return None


def _host_problem(host: str) -> str | None:
    example = "e.g. shop.example.com"
    if "://" in host:
        return f"{host!r} has a scheme; write only the host name ({example})"
    if "/" in host:
        return f"{host!r} has a path; write only the host name ({example})"
    if ":" in host:
        return f"{host!r} has a port; write only the host name ({example})"
    if "*" in host:
        return f"{host!r}: wildcard domains are not supported; list each host name"
    name = normalise_host(host)
    labels = name.split(".")
    if len(labels) < 2:
        return f"{host!r} is not a fully qualified host name ({example})"
    for label in labels:
        if not _LABEL.fullmatch(label):
            return (
                f"{host!r} has an invalid label {label!r}: labels are 1 to 63 letters, digits "
                f"or hyphens, not starting or ending with a hyphen"
            )
    if labels[-1].isdigit():
        return f"{host!r} looks like an IP address; a domain is a host name ({example})"
    return None


def _network_problem(text: str) -> str | None:
    try:
        if "/" in text:
            ipaddress.ip_network(text, strict=True)
        else:
            ipaddress.ip_address(text)
    except ValueError as error:
        if "has host bits set" in str(error):
            network = ipaddress.ip_network(text, strict=False)
            return f"{text!r} has host bits set; the range is written {str(network)!r}"
        return f"{text!r} is not an IP address or CIDR range (e.g. 203.0.113.7 or 10.0.0.0/8)"
    return None


def _re2_error(pattern: str) -> str | None:
    try:
        re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "does not compile"
        return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    return None


__all__ = ["Position", "normalise_host", "semantic_problems"]
