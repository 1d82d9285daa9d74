"""The desired state: what the manifest says, typed and immutable.

Every later stage (plan, apply, export round trips) consumes this model and
never the raw YAML. Three states matter for every managed field:

- `UNSET`: the manifest leaves the field out, so it is unmanaged and its live
  value is left alone;
- `None`: the manifest sets an explicit `null`, which clears the field where
  the API allows it (`dockerfile`, `buildCommand`, `healthcheck`,
  `openapiSpecPath`, `git`);
- a value: the field is managed and must converge to it.

Collections follow the same rule at every level (a project's apps; an
environment's regions, variables, domains and policies): `UNSET` means
unmanaged, and nothing live is removed because of it; a tuple (possibly empty)
is authoritative. `listed()` goes over what a collection names either way.
An app's `environments` is the one plain tuple: every app has exactly its two
environments, which cannot be deleted, so an absent or empty block both mean
that no environment is managed.

`opaque` (on an environment, its `build` and `runtime`, a region, a policy) holds what the
manifest writes in an `opaque:` block: members of the platform's object that this reconciler
does not know, managed as written (reconciler/manifest/opaque.py). Empty means none.

Every node carries the `Position` of its mapping and, in `positions`, the
position of each key's value, so any stage can point a user at the exact
place in their file.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from reconciler.escaping import clean

if TYPE_CHECKING:
    from reconciler.manifest.problems import Problem


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET = _Unset.UNSET
"""The manifest does not mention this field: leave the live value alone."""

T = TypeVar("T")
Managed: TypeAlias = T | _Unset
"""A field the manifest may leave unmanaged."""
Clearable: TypeAlias = T | _Unset | None
"""A field the manifest may leave unmanaged or clear with an explicit null."""

EnvironmentName = Literal["production", "preview"]
ENVIRONMENT_NAMES: tuple[EnvironmentName, ...] = ("production", "preview")

VariableKind = Literal["recoverable", "writeonly"]


@dataclass(frozen=True, order=True, slots=True)
class Position:
    """A place in a manifest file; line and column are 1-based. Slotted: a large workspace
    holds two for every key."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        # the file's name as a manifest's author chose it: one line, nothing invisible
        return f"{clean(self.file)}:{self.line}:{self.column}"


@dataclass(frozen=True, eq=False, slots=True)
class SharedPosition(Position):
    """A place in a shared block (a template, an `appDefaults`), as one use of it sees it:
    `sources` names the blocks the value came through, outermost first, as manifest paths
    (`templates.node-service`, `projects.shop.appDefaults`). Equal to the plain `Position`
    of the same place: where a value came from is not part of what it is."""

    sources: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Position):
            return NotImplemented
        return (self.file, self.line, self.column) == (other.file, other.line, other.column)

    __hash__ = Position.__hash__


def sources_of(position: Position | None) -> tuple[str, ...]:
    """The shared blocks a value at `position` came through (none for a plain place)."""
    return position.sources if isinstance(position, SharedPosition) else ()


def _empty() -> Mapping[Any, Any]:
    return MappingProxyType({})


def is_set(value: object) -> bool:
    """True when the manifest manages the field (a value or an explicit null)."""
    return value is not UNSET


def listed(collection: Managed[tuple[T, ...]]) -> tuple[T, ...]:
    """The items a collection names; none when the manifest leaves it out.

    For going over what the manifest names. Whether anything live beyond it may be removed
    is a different question, answered by `is_set(collection)`: an absent collection is
    unmanaged, only a present one (even empty) is authoritative."""
    return () if collection is UNSET else collection


@dataclass(frozen=True)
class Prune:
    """What a present collection removes when live has more than the manifest lists."""

    variables: bool = True
    domains: bool = True
    apps: bool = False


# --- app source -------------------------------------------------------------


@dataclass(frozen=True)
class GitSource:
    """`git:`; an omitted member is unmanaged (`defaultBranch` defaults server-side)."""

    repository: Managed[str] = UNSET
    default_branch: Managed[str] = UNSET
    pos: Position | None = None


@dataclass(frozen=True)
class OciSource:
    """`oci:`: a public image reference with a tag or digest."""

    image: str
    pos: Position | None = None


# --- environment settings ---------------------------------------------------
#
# Each setting is declared once, by the dataclass field that holds it: its attribute, its type
# (`Clearable` when null clears it; a tuple is a list; a dataclass an object of the API), its
# default, and in its metadata (`declared`) the name the manifest and the API give it, how it
# compares and how the manifest's schema documents it (`Doc`). Reading the manifest, the
# `updateSettings` body, reading a live answer into this same model, the diff and export all
# derive from that (reconciler/manifest/settings.py), and so do the schema's members, with the
# bounds the platform's spec gives (reconciler/manifest/schema_settings.py).

DECLARED = "reconciler.setting"
"""The key of a setting's `Declared` in its dataclass field's metadata."""


@dataclass(frozen=True)
class Doc:
    """What the manifest's schema tells people and editors of a setting (a hover's title, its
    text, examples). Its type comes from the field's annotation and its bounds from the platform's
    spec (reconciler/manifest/schema_settings.py); the text repeats the bounds for people."""

    title: str
    description: str
    examples: tuple[object, ...]
    pattern_message: str | None = None
    """What an editor shows when the value breaks the spec's pattern (`patternErrorMessage`)."""


@dataclass(frozen=True)
class Declared:
    """What a setting's dataclass field does not say itself."""

    name: str
    """The manifest's and the API's name (they spell every setting alike); dotted when the API
    nests it (`replicas.min`)."""
    doc: Doc
    """How the manifest's schema documents it."""
    item: Doc | None = None
    """How the schema documents an item of a list of values (`watchPaths`: one glob)."""
    within: Doc | None = None
    """For a dotted name, how the schema documents the object its first step names (`replicas`);
    given on the first member of that object."""
    unordered: bool = False
    """A list the platform treats as a set: its diff names the items gained and lost."""
    key: str | None = None
    """A list of objects compared as a set, item by item by this member (regions by name); the
    list sent is the manifest's, in its order."""
    neutral: object = UNSET
    """A value the spec states means "nothing set" (`storageMib: 0`): export leaves it out, as it
    leaves out a member at its default."""


def declared(name: str, doc: Doc, **how: Any) -> Mapping[str, Declared]:
    """A setting's field metadata: `field(default=UNSET, metadata=declared(<name>, Doc(...)))`."""
    return {DECLARED: Declared(name, doc, **how)}


@dataclass(frozen=True)
class Healthcheck:
    """The defaults are the server's: the loader fills them in (and a live health check is read
    with them), so a diff never sees them as changes."""

    method: Literal["GET", "POST"] = field(
        metadata=declared("method", Doc("Health check method", "`GET` or `POST`.", ("GET",)))
    )
    path: str = field(
        metadata=declared(
            "path",
            Doc(
                "Health check path",
                "Path to check; starts with `/`; 1 to 512 characters.",
                ("/healthz",),
                pattern_message="it must start with '/'",
            ),
        )
    )
    interval_seconds: int = field(
        default=10,
        metadata=declared(
            "intervalSeconds",
            Doc(
                "Check interval (seconds)", "Seconds between checks, 1 to 3600. Default 10.", (10,)
            ),
        ),
    )
    timeout_seconds: int = field(
        default=5,
        metadata=declared(
            "timeoutSeconds",
            Doc(
                "Check timeout (seconds)",
                "Seconds before a check fails, 1 to 3600. Default 5.",
                (5,),
            ),
        ),
    )
    failure_threshold: int = field(
        default=3,
        metadata=declared(
            "failureThreshold",
            Doc(
                "Failure threshold",
                ("Failed checks in a row before the instance restarts, 1 to 100. Default 3."),
                (3,),
            ),
        ),
    )
    initial_delay_seconds: int = field(
        default=0,
        metadata=declared(
            "initialDelaySeconds",
            Doc(
                "Initial delay (seconds)",
                "Seconds to wait before the first check, 0 to 3600. Default 0.",
                (0,),
            ),
        ),
    )


@dataclass(frozen=True)
class Build:
    dockerfile: Clearable[str] = field(
        default=UNSET,
        metadata=declared(
            "dockerfile",
            Doc(
                "Dockerfile",
                (
                    "Dockerfile relative to the root directory; `null` builds without "
                    "one. 1 to 500 characters."
                ),
                ("Dockerfile",),
            ),
        ),
    )
    root_directory: Managed[str] = field(
        default=UNSET,
        metadata=declared(
            "rootDirectory",
            Doc(
                "Root directory",
                ("Directory to build from; `.` is the repository root. 1 to 500 characters."),
                (".",),
            ),
        ),
    )
    build_command: Clearable[str] = field(
        default=UNSET,
        metadata=declared(
            "buildCommand",
            Doc(
                "Build command",
                (
                    "Replaces the detected build command; `null` returns to detection. 1 "
                    "to 1000 characters."
                ),
                ("npm run build",),
            ),
        ),
    )
    # a push builds when it changes a file matching any of the globs: their order means nothing
    watch_paths: Managed[tuple[str, ...]] = field(
        default=UNSET,
        metadata=declared(
            "watchPaths",
            Doc(
                "Watch paths",
                (
                    "Globs; pushes changing no matching file are skipped. At most 10; "
                    "none may start with `/` or `./`."
                ),
                (["src/**", "package.json"],),
            ),
            item=Doc(
                "Watch path",
                "A glob relative to the repository root.",
                ("src/**",),
                pattern_message=(
                    "watch paths are relative to the repository root: drop the leading '/' or './'"
                ),
            ),
            unordered=True,
        ),
    )
    auto_deploy: Managed[bool] = field(
        default=UNSET,
        metadata=declared(
            "autoDeploy", Doc("Deploy on push", "Deploy automatically on push.", (True,))
        ),
    )
    opaque: Mapping[str, Any] = field(default_factory=_empty)
    positions: Mapping[str, Position] = field(default_factory=_empty, compare=False)


@dataclass(frozen=True)
class Runtime:
    """`vcpus` is a float in steps of 0.25, so `1` and `1.0` compare equal."""

    port: Managed[int] = field(
        default=UNSET,
        metadata=declared("port", Doc("Port", "Port the app listens on, 1 to 65535.", (3000,))),
    )
    vcpus: Managed[float] = field(
        default=UNSET,
        metadata=declared(
            "vCpus", Doc("vCPUs", "vCPUs per instance: at least 0.25, in steps of 0.25.", (0.5, 1))
        ),
    )
    memory_mib: Managed[int] = field(
        default=UNSET,
        metadata=declared(
            "memoryMib",
            Doc(
                "Memory (MiB)", "Memory per instance in MiB: at least 256, in steps of 256.", (512,)
            ),
        ),
    )
    # the spec: "0 means none"
    storage_mib: Managed[int] = field(
        default=UNSET,
        metadata=declared(
            "storageMib",
            Doc(
                "Storage (MiB)",
                "Disk mounted at /data in MiB, in steps of 512; 0 means none.",
                (0, 1024),
            ),
            neutral=0,
        ),
    )
    command: Managed[tuple[str, ...]] = field(
        default=UNSET,
        metadata=declared(
            "command",
            Doc(
                "Start command",
                "Argument list replacing the image's start command; at most 10.",
                (["node", "server.js"],),
            ),
            item=Doc("Argument", "One argument.", ("server.js",)),
        ),
    )
    healthcheck: Clearable[Healthcheck] = field(
        default=UNSET,
        metadata=declared(
            "healthcheck",
            Doc(
                "Health check",
                (
                    "Health check of each instance; `null` removes it. `method` and "
                    "`path` are required (after `defaults` are merged)."
                ),
                ({"method": "GET", "path": "/healthz"},),
            ),
        ),
    )
    shutdown_signal: Managed[Literal["SIGTERM", "SIGINT", "SIGQUIT", "SIGKILL"]] = field(
        default=UNSET,
        metadata=declared(
            "shutdownSignal",
            Doc("Shutdown signal", "Signal sent to stop an instance.", ("SIGTERM",)),
        ),
    )
    upstream_protocol: Managed[Literal["http1", "h2c"]] = field(
        default=UNSET,
        metadata=declared(
            "upstreamProtocol",
            Doc("Upstream protocol", "Protocol between the gateway and the app.", ("http1",)),
        ),
    )
    openapi_spec_path: Clearable[str] = field(
        default=UNSET,
        metadata=declared(
            "openapiSpecPath",
            Doc(
                "OpenAPI document path",
                (
                    "Path of the OpenAPI document (stored but unused); `null` clears it. "
                    "1 to 512 characters."
                ),
                ("/openapi.json",),
            ),
        ),
    )
    opaque: Mapping[str, Any] = field(default_factory=_empty)
    positions: Mapping[str, Position] = field(default_factory=_empty, compare=False)


@dataclass(frozen=True)
class Region:
    name: str = field(
        metadata=declared(
            "name",
            Doc("Region name", "Region name, 1 to 64 characters; unique in the list.", ("fra",)),
        )
    )
    min_replicas: int = field(
        metadata=declared(
            "replicas.min",
            Doc("Minimum replicas", "Fewest instances kept (at least 0).", (1,)),
            within=Doc(
                "Replicas",
                "Instance count range; `min` equal to `max` turns autoscaling off.",
                ({"min": 1, "max": 3},),
            ),
        )
    )
    max_replicas: int = field(
        metadata=declared(
            "replicas.max",
            Doc(
                "Maximum replicas",
                (
                    "Most instances (at least 0; 0 and a max below `min` are accepted "
                    "with a warning)."
                ),
                (3,),
            ),
        )
    )
    opaque: Mapping[str, Any] = field(default_factory=_empty)
    pos: Position | None = field(default=None, compare=False)


# --- variables --------------------------------------------------------------


@dataclass(frozen=True)
class LiteralValue:
    """A value written in the manifest (integers already turned into their text)."""

    value: str


@dataclass(frozen=True)
class FromEnv:
    """A secret read from the process environment at plan/apply time."""

    name: str


@dataclass(frozen=True)
class FromFile:
    """A secret read from a file: `declared` as the manifest writes it, `path` resolved
    against the manifest file's directory, `root` the directory it must stay in (the git work
    tree holding the manifest, else the manifest's directory; see `secret_sources.py`)."""

    path: str
    declared: str
    root: str

    @property
    def shown(self) -> str:
        """The path relative to `root`: where a reviewer finds the file in the repository."""
        return os.path.relpath(self.path, self.root)


VariableSource: TypeAlias = "LiteralValue | FromEnv | FromFile"


MAX_VALUE_CHARS = 16384
"""The spec's bound on a variable value: 1 to 16384 characters, counted as code points (a UTF-8
byte count would refuse valid non-ASCII text). The manifest checks literals and files against
it; secrets are checked when they are read."""


@dataclass(frozen=True)
class Variable:
    """One environment variable. `kind` is already defaulted: literals are
    `recoverable`, `fromEnv`/`fromFile` are `writeonly`, unless the manifest says."""

    key: str
    source: VariableSource
    kind: VariableKind
    description: Managed[str] = UNSET
    pos: Position | None = field(default=None, compare=False)

    @property
    def is_secret_reference(self) -> bool:
        return not isinstance(self.source, LiteralValue)


# --- domains and policies ---------------------------------------------------


@dataclass(frozen=True)
class Domain:
    """A custom domain; `host` is lower-cased and has no trailing dot."""

    host: str
    pos: Position | None = field(default=None, compare=False)


def freeze(value: Any) -> Any:
    """Deep-freeze JSON-like data: dicts become read-only mappings, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The inverse of `freeze`: plain dicts and lists, ready to send as JSON."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `over` merged in: mappings merge by key, anything else in `over` replaces
    (how an `opaque` block reaches the object the API receives)."""
    merged = dict(base)
    for key, value in over.items():
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(current, value)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class Policy:
    """One gateway policy, in the API's own shape (`match` members exactly as the spec).

    `match` is normalised by the loader: an absent or empty match is `()`;
    `ignoreCase` is kept only when true; each item's `opaque` block is merged into it.
    `rule_kind` is `firewall` or `logging` and `rule` its object (logging booleans kept
    only when true); None (and an empty `rule`) for a policy of a kind this reconciler does
    not know, whose rule its `opaque` block gives. `opaque` is deep-merged into the policy
    the API receives (`to_api`).
    """

    name: str
    enabled: bool
    match: tuple[Mapping[str, Any], ...]
    rule_kind: Literal["firewall", "logging"] | None
    rule: Mapping[str, Any]
    pos: Position | None = field(default=None, compare=False)
    opaque: Mapping[str, Any] = field(default_factory=_empty)

    def to_api(self) -> dict[str, Any]:
        body: dict[str, Any] = {"name": self.name, "enabled": self.enabled}
        if self.match:
            body["match"] = thaw(self.match)
        if self.rule_kind is not None:
            body[self.rule_kind] = thaw(self.rule)
        if self.opaque:
            body = deep_merge(body, thaw(self.opaque))
        return body


@dataclass(frozen=True)
class PolicyTest:
    """One `policyTests` item: a sample request and what the gateway must do with it.

    `query` and `headers` map names to their values in order (one value: a 1-tuple); header
    names are kept as written (the evaluator folds them). `decided_by` and `logged_by` are
    None when the manifest does not say (not checked); `logged_by` `()` means none."""

    name: str
    method: str
    path: str
    client_ip: str
    expect: Literal["allow", "deny"]
    query: Mapping[str, tuple[str, ...]] = field(default_factory=_empty)
    headers: Mapping[str, tuple[str, ...]] = field(default_factory=_empty)
    decided_by: str | None = None
    logged_by: tuple[str, ...] | None = None
    pos: Position | None = field(default=None, compare=False)


# --- the tree ---------------------------------------------------------------


@dataclass(frozen=True)
class Environment:
    """One environment of an app, with the app's `defaults` already deep-merged in."""

    name: EnvironmentName
    build: Managed[Build] = UNSET
    runtime: Managed[Runtime] = UNSET
    regions: Managed[tuple[Region, ...]] = field(
        default=UNSET,
        metadata=declared(
            "regions",
            Doc(
                "Regions",
                ("The full list of regions (1 to 5, unique names); regions left out are removed."),
                ([{"name": "fra", "replicas": {"min": 2, "max": 6}}],),
            ),
            unordered=True,
            key="name",
        ),
    )
    variables: Managed[tuple[Variable, ...]] = UNSET
    domains: Managed[tuple[Domain, ...]] = UNSET
    policies: Managed[tuple[Policy, ...]] = UNSET
    policy_tests: tuple[PolicyTest, ...] = ()
    opaque: Mapping[str, Any] = field(default_factory=_empty)
    """Members of the platform's environment this reconciler does not know, at its top level
    (sent in `updateSettings` as written)."""
    pos: Position | None = field(default=None, compare=False)
    positions: Mapping[str, Position] = field(default_factory=_empty, compare=False)


@dataclass(frozen=True)
class App:
    slug: str
    id: str | None = None
    name: Managed[str] = UNSET
    delete_protection: Managed[bool] = UNSET
    git: Clearable[GitSource] = UNSET
    oci: Managed[OciSource] = UNSET
    environments: tuple[Environment, ...] = ()
    pos: Position | None = field(default=None, compare=False)
    positions: Mapping[str, Position] = field(default_factory=_empty, compare=False)

    def environment(self, name: str) -> Environment | None:
        return next((e for e in self.environments if e.name == name), None)


@dataclass(frozen=True)
class Project:
    slug: str
    id: str | None = None
    name: Managed[str] = UNSET
    delete_protection: Managed[bool] = UNSET
    apps: Managed[tuple[App, ...]] = UNSET
    pos: Position | None = field(default=None, compare=False)
    positions: Mapping[str, Position] = field(default_factory=_empty, compare=False)

    def app(self, slug: str) -> App | None:
        return next((a for a in listed(self.apps) if a.slug == slug), None)


Scope = tuple[str, ...]
"""An object of the tree by its slugs: `("shop",)`, `("shop", "web")`, `("shop", "web",
"production")`; `()` is the whole workspace."""


@dataclass(frozen=True)
class Waiver:
    """`checks: {<rule>: {off: true, reason: ...}}` on an object: the rule does not apply to it
    or below it, for the reason given (which the findings show)."""

    reason: str
    pos: Position | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ChecksSettings:
    """The top-level `checks:` and `limits:` blocks and the waivers on objects, as written.

    `rules` maps a rule id to its setting, a mapping with `severity` and parameters (a
    severity written alone is read as `{severity: ...}`: document.normalised_block);
    reconciler/checks/ gives all of it its meaning."""

    rules: Mapping[str, Any] = field(default_factory=_empty)
    limits: Mapping[str, float] = field(default_factory=_empty)
    waivers: Mapping[Scope, Mapping[str, Waiver]] = field(default_factory=_empty)
    positions: Mapping[str, Position] = field(default_factory=_empty, compare=False)
    """`checks.<rule>` and `limits.<key>` -> where the setting was written."""
    tested_environments: frozenset[Scope] = frozenset()
    """Environments with `policyTests` (read from the manifest as written, for the rule that
    asks for them)."""


@dataclass(frozen=True)
class SourceFile:
    """A manifest file that was read, with the SHA-256 of its bytes (for plan digests)."""

    path: str
    sha256: str


@dataclass(frozen=True)
class Manifest:
    version: int
    prune: Prune
    projects: tuple[Project, ...]
    sources: tuple[SourceFile, ...] = ()
    base_dir: str = "."
    warnings: tuple[Problem, ...] = field(default=(), compare=False)
    """Values the platform accepts but that are likely mistakes (they never stop a plan)."""
    checks: ChecksSettings = field(default_factory=ChecksSettings, compare=False)

    def project(self, slug: str) -> Project | None:
        return next((p for p in self.projects if p.slug == slug), None)
