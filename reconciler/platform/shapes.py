"""The shapes of the resources the platform returns, checked before anything reads them.

Transcribed from the resource tables of the platform API spec. Every documented field that is
present must have its documented type (members the spec does not list are allowed: a newer
platform may add some). A response that breaks this is an `UnexpectedResponse` naming the
operation and the field, instead of a crash somewhere in the code that reads it. Presence is
left to the readers: `required` lists only members whose absence no reader could survive.

These tables are also the one place that says what this reconciler *knows* of a resource:
`unknown_members` and `unknown_part` find what a live answer holds beyond them (a member a
newer platform added), which the plan keeps, reports and never drops without saying so
(docs/guides/manifests.md, "What reconciler does not understand").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Shape:
    """A JSON type: "string", "integer", "number", "boolean", "array" (of `item`), "object"."""

    kind: str
    item: Shape | None = None
    fields: Mapping[str, Shape] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    """For a string: the values the spec documents (a newer platform may answer another:
    never refused, see `unknown_values`)."""


STR = Shape("string")
INT = Shape("integer")
NUM = Shape("number")
BOOL = Shape("boolean")
STRS = Shape("array", item=STR)


def obj(required: tuple[str, ...] = (), /, **fields: Shape) -> Shape:
    # positional-only: a member keyword (or `**` of a dict of them) never binds to `required`
    return Shape("object", fields=fields, required=required)


def arr(item: Shape) -> Shape:
    return Shape("array", item=item)


def one_of(*values: str) -> Shape:
    """A string the spec documents these values of."""
    return Shape("string", values=values)


SIGNALS = one_of("SIGTERM", "SIGINT", "SIGQUIT", "SIGKILL")
PROTOCOLS = one_of("http1", "h2c")
ENVIRONMENT_NAMES = ("production", "preview")


TIMESTAMPS = {"createdAt": INT, "updatedAt": INT}

PROJECT = obj(id=STR, name=STR, slug=STR, deleteProtection=BOOL, **TIMESTAMPS)

APP = obj(
    id=STR,
    name=STR,
    slug=STR,
    sourceType=one_of("git", "oci"),
    git=obj(repository=STR, defaultBranch=STR),
    oci=obj(image=STR),
    currentDeploymentId=STR,
    isRolledBack=BOOL,
    deleteProtection=BOOL,
    **TIMESTAMPS,
)

HEALTHCHECK = obj(
    method=one_of("GET", "POST"),
    path=STR,
    intervalSeconds=INT,
    timeoutSeconds=INT,
    failureThreshold=INT,
    initialDelaySeconds=INT,
)

RUNTIME = obj(
    port=INT,
    vCpus=NUM,
    memoryMib=INT,
    storageMib=INT,
    command=STRS,
    healthcheck=HEALTHCHECK,
    shutdownSignal=SIGNALS,
    upstreamProtocol=PROTOCOLS,
    openapiSpecPath=STR,
)

REGION = obj(("name", "replicas"), name=STR, replicas=obj(("min", "max"), min=INT, max=INT))

ENVIRONMENT = obj(
    id=STR,
    slug=one_of(*ENVIRONMENT_NAMES),
    description=STR,
    kind=one_of(*ENVIRONMENT_NAMES),
    deleteProtection=BOOL,
    runtime=RUNTIME,
    build=obj(
        dockerfile=STR, rootDirectory=STR, buildCommand=STR, watchPaths=STRS, autoDeploy=BOOL
    ),
    regions=arr(REGION),
    **TIMESTAMPS,
)

VARIABLE_KINDS = ("recoverable", "writeonly")
VARIABLE = obj(key=STR, kind=one_of(*VARIABLE_KINDS), value=STR, description=STR, createdAt=INT)

_STRING_MATCH = obj(exact=STR, prefix=STR, regex=STR, ignoreCase=BOOL)
_NAMED_MATCH = obj(name=STR, present=BOOL, value=_STRING_MATCH)
MATCH_ITEM = obj(
    path=obj(path=_STRING_MATCH),
    method=obj(methods=STRS),
    header=_NAMED_MATCH,
    queryParam=_NAMED_MATCH,
    remoteIp=obj(**{"in": STRS, "notIn": STRS}),
)
POLICY = obj(
    id=STR,
    name=STR,
    enabled=BOOL,
    match=arr(MATCH_ITEM),
    firewall=obj(action=one_of("ACTION_DENY")),
    logging=obj(
        requestHeaders=BOOL, responseHeaders=BOOL, requestBody=BOOL, responseBody=BOOL, query=BOOL
    ),
)

DNS_RECORD = obj(
    type=one_of("CNAME", "ALIAS", "TXT"), name=STR, value=STR, ttl=INT, verified=BOOL, note=STR
)
DOMAIN_CONNECT = obj(provider=STR, url=STR)

DOMAIN = obj(
    ("id", "domain"),  # what every reader keys on
    id=STR,
    domain=STR,
    projectId=STR,
    appId=STR,
    environmentId=STR,
    status=one_of("pending", "verifying", "verified", "failed"),
    verificationError=STR,
    dnsRecords=arr(DNS_RECORD),
    domainConnect=DOMAIN_CONNECT,
    **TIMESTAMPS,
)

FINAL_DEPLOYMENT_STATUSES = frozenset(
    {"ready", "failed", "cancelled", "superseded", "skipped", "stopped"}
)
"""A deployment in one of these statuses changes no more (apply stops waiting, status says so)."""

DEPLOYMENT = obj(
    id=STR,
    status=STR,
    isCurrent=BOOL,
    environment=STR,
    app=STR,
    project=STR,
    git=obj(commitSha=STR, branch=STR),
    docker=obj(image=STR),
    availableActions=STRS,
    regions=STRS,
    error=obj(code=STR, step=STR, message=STR),
    domains=STRS,
    runtime=RUNTIME,
    **TIMESTAMPS,
)

# operation -> shape of `data` (of each item, for list operations)
DATA_SHAPES: Mapping[str, Shape] = {
    "projects.createProject": obj(("id",), id=STR),
    "projects.getProject": PROJECT,
    "projects.listProjects": PROJECT,
    "projects.updateProject": PROJECT,
    "apps.createApp": obj(("appId",), appId=STR),
    "apps.getApp": APP,
    "apps.listApps": APP,
    "apps.updateApp": APP,
    "environments.getEnvironment": ENVIRONMENT,
    "environments.listEnvironments": ENVIRONMENT,
    "environments.listEnvironmentVariables": VARIABLE,
    "gateway.listPolicies": POLICY,
    "domains.createDomain": obj(
        ("domainId", "dnsRecords"),
        domainId=STR,
        dnsRecords=arr(DNS_RECORD),
        domainConnect=DOMAIN_CONNECT,
    ),
    "domains.getDomain": DOMAIN,
    "domains.listDomains": DOMAIN,
    "deployments.createDeployment": obj(("deploymentId",), deploymentId=STR),
    "deployments.getDeployment": DEPLOYMENT,
    "deployments.listDeployments": DEPLOYMENT,
}


SERVER_MEMBERS = frozenset({"id", "createdAt", "updatedAt"})
"""Members the platform sets itself on every resource it stores (an ID; the timestamps of the
spec's conventions): known at the top of any resource, even one whose table does not list
them (a policy's `createdAt`, should the platform add it, is not a member it could take)."""


def unknown_members(
    value: Any, shape: Shape, where: str = "", *, indexes: bool = True
) -> list[str]:
    """The paths of the members of `value` that `shape` does not document (`runtime.gpu`,
    `match[0].country`), in the order they appear; below an unknown member nothing more is
    listed. `indexes=False` writes every item of a list as `[]` (`match[].country`). The top
    level of a resource also knows `SERVER_MEMBERS`."""
    found = _unknown(value, shape, where, indexes)
    if not where and isinstance(value, Mapping):
        found = [path for path in found if path not in SERVER_MEMBERS]
    return found


def _unknown(value: Any, shape: Shape, where: str, indexes: bool) -> list[str]:
    if shape.kind == "object" and isinstance(value, Mapping):
        found: list[str] = []
        for name, member in value.items():
            path = f"{where}.{name}" if where else str(name)
            if name in shape.fields:
                found += _unknown(member, shape.fields[name], path, indexes)
            else:
                found.append(path)
        return found
    if shape.kind == "array" and shape.item is not None and isinstance(value, list):
        return [
            path
            for index, item in enumerate(value)
            for path in _unknown(item, shape.item, f"{where}[{index if indexes else ''}]", indexes)
        ]
    return []


def unknown_part(value: Any, shape: Shape) -> dict[str, Any]:
    """What `value` (an object) holds that `shape` does not document, as a mapping of the same
    form: unknown members whole, and a documented object member that holds unknown members as
    a mapping of those (`{"gpu": {...}, "healthcheck": {"grpcService": "x"}}`). Lists are not
    gone into: an item's unknown members are its own (see `unknown_members`). Empty when
    `value` holds nothing unknown, or is not an object."""
    if shape.kind != "object" or not isinstance(value, Mapping):
        return {}
    part: dict[str, Any] = {}
    for name, member in value.items():
        if name not in shape.fields:
            part[name] = member
        elif shape.fields[name].kind == "object":
            inner = unknown_part(member, shape.fields[name])
            if inner:
                part[name] = inner
    return part


def unknown_values(value: Any, shape: Shape, where: str = "") -> list[str]:
    """The paths of the documented string members of `value` (an object, items of lists
    included) whose value is not one the spec documents (`runtime.shutdownSignal`)."""
    if shape.values:
        return [where] if isinstance(value, str) and value not in shape.values else []
    if shape.kind == "object" and isinstance(value, Mapping):
        return [
            path
            for name, member in value.items()
            if name in shape.fields
            for path in unknown_values(
                member, shape.fields[name], f"{where}.{name}" if where else name
            )
        ]
    if shape.kind == "array" and shape.item is not None and isinstance(value, list):
        return [
            path
            for index, item in enumerate(value)
            for path in unknown_values(item, shape.item, f"{where}[{index}]")
        ]
    return []


def known_part(value: Any, shape: Shape) -> Any:
    """`value` without the members `shape` does not document (in objects at any depth, items
    of lists included); anything but an object or a list is returned as it is."""
    if shape.kind == "object" and isinstance(value, Mapping):
        return {
            name: known_part(member, shape.fields[name])
            for name, member in value.items()
            if name in shape.fields
        }
    if shape.kind == "array" and shape.item is not None and isinstance(value, list):
        return [known_part(item, shape.item) for item in value]
    return value


def object_member(value: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The member `name` of `value` when it is an object, else an empty one: for the nested
    objects a resource may leave out (a deployment's `git`, `docker`, `error`)."""
    member = value.get(name)
    return member if isinstance(member, Mapping) else {}


def shape_problem(value: Any, shape: Shape, where: str) -> str | None:
    """The first way `value` breaks `shape` ("data[3].regions is not an array"), or None."""
    if not _is(value, shape.kind):
        return f"{where} is not {_ARTICLE[shape.kind]}"
    if shape.kind == "array" and shape.item is not None:
        for index, item in enumerate(value):
            problem = shape_problem(item, shape.item, f"{where}[{index}]")
            if problem:
                return problem
    elif shape.kind == "object":
        for name in shape.required:
            if name not in value:
                return f"{where}.{name} is missing"
        for name, member in shape.fields.items():
            if name in value:
                problem = shape_problem(value[name], member, f"{where}.{name}")
                if problem:
                    return problem
    return None


_ARTICLE = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
}


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":  # 3.0 is tolerated: JSON does not tell 3 from 3.0 apart
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    return isinstance(value, dict)
