"""API keys and permission strings `<scope>.<id or *>.<action>`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from reconciler.emulator.errors import ApiError

# every permission an operation of the spec requires, as scope -> actions
ACTIONS: dict[str, tuple[str, ...]] = {
    "project": (
        "create_project",
        "read_project",
        "update_project",
        "delete_project",
        "create_app",
    ),
    "app": ("read_app", "update_app", "delete_app"),
    "environment": (
        "read_environment",
        "update_environment",
        "read_environment_variables",
        "set_environment_variables",
        "remove_environment_variables",
        "read_policies",
        "set_policies",
        "update_policy",
        "create_domain",
        "read_domain",
        "verify_domain",
        "delete_domain",
        "create_deployment",
        "read_deployment",
        "promote_deployment",
        "rollback_deployment",
        "stop_deployment",
        "start_deployment",
    ),
}

ALL_PERMISSIONS: tuple[str, ...] = tuple(
    f"{scope}.*.{action}" for scope, actions in ACTIONS.items() for action in actions
)

_PERMISSION = re.compile(r"(project|app|environment)\.([^.\s]+)\.([a-z_]+)")


@dataclass
class ApiKey:
    key: str
    permissions: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._granted = frozenset(self.permissions)
        # (scope, action) of every grant, wildcard or for one ID: what `allows_some` asks
        self._actions = frozenset(
            (match[1], match[3]) for p in self._granted if (match := _PERMISSION.fullmatch(p))
        )

    def allows(self, scope: str, action: str, object_id: str | None = None) -> bool:
        """Wildcard, or the ID-specific string when the operation names an object."""
        if f"{scope}.*.{action}" in self._granted:
            return True
        return object_id is not None and f"{scope}.{object_id}.{action}" in self._granted

    def allows_some(self, scope: str, action: str) -> bool:
        """Whether any grant (wildcard or for some ID) carries this action."""
        return (scope, action) in self._actions

    def __repr__(self) -> str:  # never show the key itself
        return f"ApiKey(permissions={len(self.permissions)})"


class KeysFileError(ValueError):
    """The keys file cannot be used; the message says where and why."""


def load_keys(path: Path) -> list[ApiKey]:
    """Read `keys: [{key: ..., permissions: [...]}]` from YAML."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise KeysFileError(f"{path}: cannot read: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise KeysFileError(
            f"{path}: not valid UTF-8 (byte {error.object[error.start]:#04x} at offset "
            f"{error.start}); save the file as UTF-8"
        ) from None
    except RecursionError:
        raise KeysFileError(f"{path}: nested too deeply to be a keys file") from None
    except ValueError as error:  # e.g. an integer longer than Python converts
        raise KeysFileError(f"{path}: invalid YAML: {error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise KeysFileError(f"{where}: invalid YAML: {getattr(error, 'problem', error)}") from error
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list) or not data["keys"]:
        raise KeysFileError(f"{path}: expected a mapping with a non-empty list `keys`")
    keys: list[ApiKey] = []
    seen: set[str] = set()
    for index, entry in enumerate(data["keys"]):
        where = f"{path}: keys[{index}]"
        if not isinstance(entry, dict) or set(entry) - {"key", "permissions"}:
            raise KeysFileError(f"{where}: expected {{key: ..., permissions: [...]}} only")
        value = entry.get("key")
        if not isinstance(value, str) or not value.strip():
            raise KeysFileError(f"{where}.key: must be a non-empty string")
        if value in seen:
            raise KeysFileError(f"{where}.key: duplicate key")
        seen.add(value)
        permissions = entry.get("permissions", [])
        if not isinstance(permissions, list):
            raise KeysFileError(f"{where}.permissions: must be a list of strings")
        for position, permission in enumerate(permissions):
            if not isinstance(permission, str) or not _known(permission):
                raise KeysFileError(
                    f"{where}.permissions[{position}]: {permission!r} is not a permission "
                    "string <scope>.<id or *>.<action> (e.g. project.*.read_project)"
                )
        keys.append(ApiKey(value, list(permissions)))
    return keys


def _known(permission: str) -> bool:
    match = _PERMISSION.fullmatch(permission)
    return match is not None and match[3] in ACTIONS[match[1]]


def authenticate(header: str | None, keys: dict[str, ApiKey]) -> ApiKey:
    if not header:
        raise _unauthenticated("missing Authorization header; send Authorization: Bearer <key>")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthenticated("Authorization must be `Bearer <key>`")
    key = keys.get(token.strip())
    if key is None:
        raise _unauthenticated("unknown API key")
    return key


def _unauthenticated(detail: str) -> ApiError:
    return ApiError(401, detail, headers={"WWW-Authenticate": 'Bearer realm="platform"'})
