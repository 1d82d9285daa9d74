"""environments.* operations: settings and variables of an environment.

Behaving like a newer platform (`store.newer`, EmulatorConfig.accept_unknown),
`updateSettings` keeps a member the spec does not list where `Newer.settings_sections` says
(in `runtime`, in `build`, else at the environment's top level), a health check or a region
keeps the members it was sent with, and a variable may be of a kind the spec does not list
(its value is then never returned, as a write-only one's).
"""

from __future__ import annotations

from typing import Any

from reconciler.emulator.context import (
    ENV_TARGET,
    LIST_FIELDS,
    REF,
    Call,
    Operation,
    by_seq,
    data,
    listing,
)
from reconciler.emulator.errors import invalid
from reconciler.emulator.pagination import paginate
from reconciler.emulator.store import VALUE_DIGEST, Obj, public, value_digest
from reconciler.emulator.validation import (
    VARIABLE_KEY,
    Arr,
    Bool,
    Int,
    Num,
    Problems,
    Str,
)
from reconciler.emulator.validation import Obj as ObjSpec

# "maximum set by plan": the emulator's plan
MAX_VCPUS = 8
MAX_MEMORY_MIB = 32768
MAX_STORAGE_MIB = 102400

# filled in when settings are first written (runtime/build are absent before that)
DEFAULT_RUNTIME: Obj = {
    "port": 8080,
    "vCpus": 0.25,
    "memoryMib": 512,
    "storageMib": 0,
    "command": [],
    "shutdownSignal": "SIGTERM",
    "upstreamProtocol": "http1",
}
DEFAULT_BUILD: Obj = {"rootDirectory": ".", "watchPaths": [], "autoDeploy": True}
HEALTHCHECK_DEFAULTS = {
    "intervalSeconds": 10,
    "timeoutSeconds": 5,
    "failureThreshold": 3,
    "initialDelaySeconds": 0,
}
BUILD_FIELDS = ("dockerfile", "rootDirectory", "buildCommand", "watchPaths", "autoDeploy")
RUNTIME_FIELDS = (
    "port",
    "vCpus",
    "memoryMib",
    "storageMib",
    "command",
    "healthcheck",
    "shutdownSignal",
    "upstreamProtocol",
    "openapiSpecPath",
)
SIGNALS = ("SIGTERM", "SIGINT", "SIGQUIT", "SIGKILL")
PROTOCOLS = ("http1", "h2c")


def _watch_path(value: str, path: str, problems: Problems) -> None:
    if value.startswith("/") or value.startswith("./"):
        problems.append((path, "must be relative: not start with / or ./"))


def _starts_with_slash(value: str, path: str, problems: Problems) -> None:
    if not value.startswith("/"):
        problems.append((path, "must start with /"))


def _distinct_regions(value: list[Any], path: str, problems: Problems) -> None:
    names = [r["name"] for r in value]
    for index, name in enumerate(names):
        if name in names[:index]:
            problems.append((f"{path}[{index}].name", f"region {name!r} is listed twice"))


HEALTHCHECK = ObjSpec(
    fields={
        "method": Str(enum=("GET", "POST")),
        "path": Str(min=1, max=512, extra=_starts_with_slash),
        "intervalSeconds": Int(min=1, max=3600),
        "timeoutSeconds": Int(min=1, max=3600),
        "failureThreshold": Int(min=1, max=100),
        "initialDelaySeconds": Int(min=0, max=3600),
    },
    required=("method", "path"),
    nullable=True,
)
REGION = ObjSpec(
    fields={
        "name": Str(min=1, max=64),
        "replicas": ObjSpec(fields={"min": Int(min=0), "max": Int(min=0)}, required=("min", "max")),
    },
    required=("name", "replicas"),
)
SETTINGS = ObjSpec(
    fields={
        **ENV_TARGET,
        "dockerfile": Str(min=1, max=500, nullable=True),
        "rootDirectory": Str(min=1, max=500),
        "buildCommand": Str(min=1, max=1000, nullable=True),
        "watchPaths": Arr(item=Str(min=1, max=1024, extra=_watch_path), max=10),
        "autoDeploy": Bool(),
        "port": Int(min=1, max=65535),
        "vCpus": Num(min=0.25, max=MAX_VCPUS, step=0.25),
        "memoryMib": Int(min=256, max=MAX_MEMORY_MIB, step=256),
        "storageMib": Int(min=0, max=MAX_STORAGE_MIB, step=512),
        "command": Arr(item=Str(min=0), max=10),
        "healthcheck": HEALTHCHECK,
        "shutdownSignal": Str(enum=SIGNALS),
        "upstreamProtocol": Str(enum=PROTOCOLS),
        "openapiSpecPath": Str(min=1, max=512, nullable=True),
        "regions": Arr(item=REGION, min=1, max=5, extra=_distinct_regions),
    },
    required=("project", "app", "environment"),
)


def list_environments(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call.require("environment", "read_environment")
    project = call.store.project(body["project"])
    app = call.store.app(project, body["app"])
    items = call.store.app_environments(app["id"])
    page, pagination = paginate(
        "environments.listEnvironments", body, {"app": app["id"]}, items, by_seq
    )
    return listing([public(e) for e in page], pagination)


def get_environment(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    _, _, env = call.env_target(body, "read_environment")
    return data(public(env))


def update_settings(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    _, _, env = call.env_target(body, "update_environment")
    before = repr(public(env))
    build = env.setdefault("build", _copy(DEFAULT_BUILD))
    runtime = env.setdefault("runtime", _copy(DEFAULT_RUNTIME))
    for group, names in ((build, BUILD_FIELDS), (runtime, RUNTIME_FIELDS)):
        for name in names:
            if name not in body:
                continue
            value = body[name]
            if value is None:
                group.pop(name, None)
            elif name == "healthcheck":
                group[name] = {**HEALTHCHECK_DEFAULTS, **value}
            else:
                group[name] = _copy(value)
    if "regions" in body:
        env["regions"] = _copy(body["regions"])
    newer = call.store.newer
    if newer is not None:
        for name, value in body.items():
            if name in SETTINGS.fields:
                continue
            section = newer.settings_sections.get(name)
            holder = build if section == "build" else runtime if section == "runtime" else env
            if value is None:
                holder.pop(name, None)
            else:
                holder[name] = _copy(value)
    if repr(public(env)) != before:
        env["updatedAt"] = call.now
    call.touch()
    return data({})


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# ---- variables --------------------------------------------------------------------------------


def render_variable(variable: Obj) -> Obj:
    shown = public(variable)
    shown.pop(VALUE_DIGEST, None)  # the emulator's own record, not a platform field
    if shown["kind"] != "recoverable":  # write-only, or a newer platform's other kind
        shown.pop("value", None)
    return shown


def list_variables(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    _, _, env = call.env_target(body, "read_environment_variables")
    items = list(call.store.variables.get(env["id"], {}).values())
    page, pagination = paginate(
        "environments.listEnvironmentVariables", body, {"environment": env["id"]}, items, by_seq
    )
    return listing([render_variable(v) for v in page], pagination)


def set_variables(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    keys = [v["key"] for v in body["variables"]]
    for index, key in enumerate(keys):
        if key in keys[:index]:
            raise invalid(f"variables[{index}].key", f"{key!r} appears more than once")
    _, _, env = call.env_target(body, "set_environment_variables")
    table = call.store.variables.setdefault(env["id"], {})
    if body.get("prune", False):
        for name in [name for name in table if name not in keys]:
            del table[name]
    for item in body["variables"]:
        variable: Obj = {
            "key": item["key"],
            "kind": item.get("kind", "writeonly"),
            "value": item["value"],
            VALUE_DIGEST: value_digest(item["value"]),
            "createdAt": call.now,
            "_seq": call.store.next_seq(),
        }
        if "description" in item:
            variable["description"] = item["description"]
        if call.store.newer is not None:  # a newer platform's members of a variable
            variable.update((k, v) for k, v in item.items() if k not in VARIABLE.fields)
        table[item["key"]] = variable
    call.touch()
    return data({})


def remove_variables(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    _, _, env = call.env_target(body, "remove_environment_variables")
    table = call.store.variables.setdefault(env["id"], {})
    for name in body["variables"]:
        table.pop(name, None)
    call.touch()
    return data({})


VARIABLE = ObjSpec(
    fields={
        "key": Str(
            min=1,
            max=256,
            pattern=VARIABLE_KEY,
            pattern_hint="letters, digits and underscores, not starting with a digit",
        ),
        "value": Str(min=1, max=16384),
        "kind": Str(enum=("writeonly", "recoverable")),
        "description": Str(min=0, max=255),
    },
    required=("key", "value"),
)
_TARGET_REQUIRED = ("project", "app", "environment")

OPERATIONS = {
    "environments.listEnvironments": Operation(
        list_environments,
        ObjSpec(fields={"project": REF, "app": REF, **LIST_FIELDS}, required=("project", "app")),
        False,
    ),
    "environments.getEnvironment": Operation(
        get_environment, ObjSpec(fields=ENV_TARGET, required=_TARGET_REQUIRED), False
    ),
    "environments.updateSettings": Operation(update_settings, SETTINGS, True),
    "environments.listEnvironmentVariables": Operation(
        list_variables,
        ObjSpec(fields={**ENV_TARGET, **LIST_FIELDS}, required=_TARGET_REQUIRED),
        False,
    ),
    "environments.setEnvironmentVariables": Operation(
        set_variables,
        ObjSpec(
            fields={**ENV_TARGET, "variables": Arr(item=VARIABLE, max=50), "prune": Bool()},
            required=(*_TARGET_REQUIRED, "variables"),
        ),
        True,
    ),
    "environments.removeEnvironmentVariables": Operation(
        remove_variables,
        ObjSpec(
            fields={**ENV_TARGET, "variables": Arr(item=Str(min=1, max=256), min=1, max=50)},
            required=(*_TARGET_REQUIRED, "variables"),
        ),
        True,
    ),
}
