"""Defence in depth: refuse to write out a plan that carries a write-only value.

The plan engine is meant to put a `SecretRef` wherever a write-only value will
be sent and `(sensitive value)` in the display forms. If a bug ever puts the
plain value there instead, the machine outputs (`--format json`, `--out`)
refuse rather than leak it into CI logs, PR comments or plan files. The
messages name where the value is, never the value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from reconciler.errors import PlainSecretError
from reconciler.plan.changes import (
    ABSENT,
    SENSITIVE,
    UNKNOWN,
    Plan,
    PlanValue,
    SecretRef,
    SentObject,
)

_SET_VARIABLES = "setEnvironmentVariables"
_PLACEHOLDERS = (SENSITIVE, UNKNOWN)


def check_no_plain_secrets(plan: Plan) -> None:
    """Raise `PlainSecretError` naming the first place a write-only value is stored in plain."""
    for change in plan.changes:
        for call in change.calls:
            for key in _plain_in_call(call.operation.name, call.body):
                raise PlainSecretError(
                    f"{change.address}: call {call.operation.name} holds the plain value of "
                    f"write-only variable {key!r}; refusing to write it out",
                    hint="this is a bug in reconciler; please report it (the value was not shown)",
                )
        for side in (change.before, change.after):
            for key in _plain_writeonly(side, placeholders_ok=True):
                raise PlainSecretError(
                    f"{change.address}: the display form holds the plain value of write-only "
                    f"variable {key!r}; refusing to write it out",
                    hint="this is a bug in reconciler; please report it (the value was not shown)",
                )


def _plain_in_call(operation: str, body: SentObject) -> Iterator[str]:
    # The API defaults `kind` to writeonly, so a set call's variable without a kind is secret too.
    if operation.endswith(_SET_VARIABLES):
        variables = body.get("variables")
        for item in variables if isinstance(variables, list | tuple) else ():
            if (
                isinstance(item, Mapping)
                and item.get("kind", "writeonly") == "writeonly"
                and "value" in item
                and not isinstance(item["value"], SecretRef)
            ):
                yield str(item.get("key", "?"))
    yield from _plain_writeonly(body, placeholders_ok=False)


def _plain_writeonly(value: PlanValue, *, placeholders_ok: bool) -> Iterator[str]:
    """Keys of every `{kind: writeonly, value: <plain>}` mapping nested in `value`."""
    if isinstance(value, Mapping):
        if value.get("kind") == "writeonly" and "value" in value:
            stored = value["value"]
            safe = isinstance(stored, SecretRef) or stored is None or stored is ABSENT
            if placeholders_ok:
                safe = safe or stored in _PLACEHOLDERS
            if not safe:
                yield str(value.get("key", "?"))
        for item in value.values():
            yield from _plain_writeonly(item, placeholders_ok=placeholders_ok)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _plain_writeonly(item, placeholders_ok=placeholders_ok)
