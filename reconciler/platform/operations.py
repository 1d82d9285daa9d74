"""The platform's operations as data: permission, statuses, and how safe each is to repeat.

Read from the vendored OpenAPI document of the platform API (reconciler/platform/api_document.py),
the first time an operation is asked for: each path's `operationId`, the row of the spec's
"Endpoints" that ends its description (its permissions, success status and error statuses) and
the schema of its success answer. The client (which answers it may believe), the plan (the
permission strings an apply needs) and apply (which calls are creates) all read it.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, cast

from reconciler.platform.api_document import ApiDocumentError, api_document, schema_at
from reconciler.platform.shapes import Shape, shape_of

Scope = Literal["project", "app", "environment"]


@dataclass(frozen=True)
class Operation:
    """One API operation.

    `id_specific` is False for operations whose only permission is the wildcard
    (the list operations and `projects.createProject`). `returns_data` is False
    for the successes that carry no fields (the body may then be empty).
    `error_statuses` are the error statuses the spec lists for the operation: any
    other answer did not come from the platform API as specified. `item_key` names
    the member that tells the items of a list operation apart.
    """

    name: str
    scope: Scope
    action: str
    id_specific: bool
    success_status: int
    lists: bool
    error_statuses: frozenset[int]
    returns_data: bool = True
    item_key: str = "id"
    data_shape: Shape | None = field(default=None, compare=False, repr=False)
    """What the answer's `data` holds (each item, for a list operation); None when nothing."""

    @property
    def group(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def is_write(self) -> bool:
        """May change something: every operation whose permission is not a `read_...` action."""
        return not self.action.startswith("read_")

    @property
    def creates(self) -> bool:
        """Makes an object (its permission is a `create_...` action)."""
        return self.action.startswith("create_")

    @property
    def deletes(self) -> bool:
        """Makes an object disappear (its permission is a `delete_...` action)."""
        return self.action.startswith("delete_")

    def answers(self, status: int) -> bool:
        """Whether the spec lists `status` as an answer of this operation."""
        return status == self.success_status or status in self.error_statuses

    @property
    def safe_to_repeat(self) -> bool:
        """Reads and idempotent writes may be resent after an ambiguous failure; creates never."""
        return not self.creates


# "Permission: one of `project.*.create_app`, `project.<project_id>.create_app`. Success 200.
# Errors: 400, 401, 403, 404, 409, 429, 500." ends every operation's description: the spec's row.
_ROW = re.compile(
    r"Permission: (?:one of )?(?P<grants>`[^`]+`(?:, `[^`]+`)*)\. "
    r"Success (?P<success>\d{3})(?:, no (?:response )?fields)?\. "
    r"Errors: (?P<errors>\d{3}(?:, \d{3})*)\.$"
)
_GRANT = re.compile(
    r"(?P<scope>project|app|environment)\.(?P<target>\*|<[a-z]+_id>)\.(?P<action>[a-z_]+)"
)

# Which member tells a listed item apart, for the one list whose items have no `id`: the
# document says what members an item has, not which of them is unique (a variable's name is,
# in its environment).
_ITEM_KEYS = {"environments.listEnvironmentVariables": "key"}


def operations_from(document: Mapping[str, Any]) -> dict[str, Operation]:
    """Every operation of the platform API `document` describes, by name."""
    found: dict[str, Operation] = {}
    for path, methods in document["paths"].items():
        described = methods.get("post")
        if not isinstance(described, Mapping) or path != f"/v1/{described.get('operationId')}":
            raise ApiDocumentError(f"{path}: not a POST to /v1/<its operationId>")
        op = _operation(described, document)
        found[op.name] = op
    return found


def _operation(described: Mapping[str, Any], document: Mapping[str, Any]) -> Operation:
    name = described["operationId"]
    row = _ROW.search(described.get("description", ""))
    if row is None:
        expected = '"Permission: ... Success ... Errors: ..."'
        raise ApiDocumentError(f"{name}: its description does not end in the spec's row {expected}")
    scope, action, id_specific = _grants(name, row["grants"])
    success, errors = int(row["success"]), _statuses(row["errors"])
    answered = {int(status) for status in described.get("responses", {})}
    if not {success, *errors} <= answered or {s for s in answered if 200 <= s < 300} != {success}:
        raise ApiDocumentError(f"{name}: its responses are not the statuses its description lists")
    data = _success_data(described["responses"][str(success)])
    lists = data.get("type") == "array"
    returns_data = data.get("maxProperties") != 0
    return Operation(
        name, scope, action, id_specific=id_specific, success_status=success,
        error_statuses=errors, lists=lists, returns_data=returns_data,
        item_key=_item_key(name, data, document) if lists else "id",
        data_shape=(shape_of(data["items"] if lists else data, name) if returns_data else None),
    )  # fmt: skip


def _grants(name: str, listed: str) -> tuple[Scope, str, bool]:
    """(scope, action, whether an ID-specific grant is accepted) of the grants a row lists: the
    wildcard, and the ID-specific form of the same permission when the operation accepts it."""
    forms = [_GRANT.fullmatch(grant.strip("`")) for grant in listed.split(", ")]
    grants = [form.groupdict() for form in forms if form is not None]
    kinds = {(grant["scope"], grant["action"]) for grant in grants}
    targets = {grant["target"] for grant in grants}
    if len(grants) != len(forms) or len(kinds) != 1 or len(targets) != len(grants):
        raise ApiDocumentError(f"{name}: permissions {listed} are not one permission's forms")
    ((scope, action),) = kinds
    if "*" not in targets or not targets <= {"*", f"<{scope}_id>"}:
        raise ApiDocumentError(
            f"{name}: permissions {listed} are not the wildcard and {scope}'s ID"
        )
    return cast(Scope, scope), action, len(targets) == 2


def _statuses(listed: str) -> frozenset[int]:
    """`"400, 401, 404"`, as the spec's "Errors:" line of the operation lists them."""
    return frozenset(int(status) for status in listed.split(", "))


def _success_data(answer: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema of the `data` member of a success answer."""
    data: Mapping[str, Any] = answer["content"]["application/json"]["schema"]["properties"]["data"]
    return data


def _item_key(name: str, data: Mapping[str, Any], document: Mapping[str, Any]) -> str:
    item = data["items"]
    item = schema_at(document, item["$ref"]) if "$ref" in item else item
    key = "id" if "id" in item.get("properties", {}) else _ITEM_KEYS.get(name)
    if key is None or key not in item.get("properties", {}):
        raise ApiDocumentError(f"{name}: its items have no `id`, and no other key is known")
    return key


@functools.cache
def _operations() -> Mapping[str, Operation]:
    return MappingProxyType(operations_from(api_document()))


class _Operations(Mapping[str, Operation]):
    """The table, read from the document the first time an operation is asked for."""

    def __getitem__(self, name: str) -> Operation:
        return _operations()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_operations())

    def __len__(self) -> int:
        return len(_operations())


OPERATIONS: Mapping[str, Operation] = _Operations()
"""Every operation of the platform API spec, by name (`apps.createApp`)."""


def get_operation(name: str) -> Operation:
    """The operation called `name`: where a name comes in as text (a kind's `make_call`, a plan
    file, the client's entry points). A name the document does not have is a programming error
    (a misspelt name in a kind), a KeyError naming it and the nearest operation there is."""
    try:
        return OPERATIONS[name]
    except KeyError:
        nearest = difflib.get_close_matches(name, OPERATIONS, n=1)
        meant = f" (did you mean {nearest[0]!r}?)" if nearest else ""
        raise KeyError(f"unknown platform operation {name!r}{meant}") from None


def permission(operation: Operation, object_id: str | None) -> str:
    """The permission string `operation` needs: ID-specific when the ID is known and accepted.

    `object_id` is the ID of the operation's scope object (the project for
    `apps.createApp`, the environment for domain and deployment operations).
    """
    target = object_id if (object_id and operation.id_specific) else "*"
    return f"{operation.scope}.{target}.{operation.action}"


def wildcard_permission(operation: Operation) -> str:
    """The wildcard form, which every operation accepts."""
    return permission(operation, None)
