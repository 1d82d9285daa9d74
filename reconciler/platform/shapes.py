"""The shapes of the resources the platform returns, checked before anything reads them.

Transcribed from the resource tables of the platform API spec. Every documented field that is
present must have its documented type (members the spec does not list are allowed: a newer
platform may add some). A response that breaks this is an `UnexpectedResponse` naming the
operation and the field, instead of a crash somewhere in the code that reads it. Presence is
left to the readers: `required` lists only members whose absence no reader could survive.
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


TIMESTAMPS = {"createdAt": INT, "updatedAt": INT}

PROJECT = obj(id=STR, name=STR, slug=STR, deleteProtection=BOOL, **TIMESTAMPS)

APP = obj(
    id=STR,
    name=STR,
    slug=STR,
    sourceType=STR,
    git=obj(repository=STR, defaultBranch=STR),
    oci=obj(image=STR),
    currentDeploymentId=STR,
    isRolledBack=BOOL,
    deleteProtection=BOOL,
    **TIMESTAMPS,
)

HEALTHCHECK = obj(
    method=STR,
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
    shutdownSignal=STR,
    upstreamProtocol=STR,
    openapiSpecPath=STR,
)

ENVIRONMENT = obj(
    id=STR,
    slug=STR,
    description=STR,
    kind=STR,
    deleteProtection=BOOL,
    runtime=RUNTIME,
    build=obj(
        dockerfile=STR, rootDirectory=STR, buildCommand=STR, watchPaths=STRS, autoDeploy=BOOL
    ),
    regions=arr(
        obj(("name", "replicas"), name=STR, replicas=obj(("min", "max"), min=INT, max=INT))
    ),
    **TIMESTAMPS,
)

VARIABLE = obj(key=STR, kind=STR, value=STR, description=STR, createdAt=INT)

_STRING_MATCH = obj(exact=STR, prefix=STR, regex=STR, ignoreCase=BOOL)
_NAMED_MATCH = obj(name=STR, present=BOOL, value=_STRING_MATCH)
POLICY = obj(
    id=STR,
    name=STR,
    enabled=BOOL,
    match=arr(
        obj(
            path=obj(path=_STRING_MATCH),
            method=obj(methods=STRS),
            header=_NAMED_MATCH,
            queryParam=_NAMED_MATCH,
            remoteIp=obj(**{"in": STRS, "notIn": STRS}),
        )
    ),
    firewall=obj(action=STR),
    logging=obj(
        requestHeaders=BOOL, responseHeaders=BOOL, requestBody=BOOL, responseBody=BOOL, query=BOOL
    ),
)

DNS_RECORD = obj(type=STR, name=STR, value=STR, ttl=INT, verified=BOOL, note=STR)
DOMAIN_CONNECT = obj(provider=STR, url=STR)

DOMAIN = obj(
    ("id", "domain"),  # what every reader keys on
    id=STR,
    domain=STR,
    projectId=STR,
    appId=STR,
    environmentId=STR,
    status=STR,
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
