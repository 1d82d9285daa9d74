"""Sending one call of the plan: secrets resolved just before the send, creates made exactly
once, and any failure turned into a `CallResult` so that independent work goes on."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.address import Address
from reconciler.apply.create_once import Sleep, create_once, reread_for
from reconciler.apply.outcome import CallResult
from reconciler.apply.safety import SecretResolver
from reconciler.errors import ApiError, NotFound, ReconcilerError
from reconciler.json_types import JsonValue
from reconciler.plan.changes import Action, Call, Change, SecretRef
from reconciler.plan.secrets import fingerprint, split_fingerprint, with_fingerprint
from reconciler.platform.protocol import Platform
from reconciler.sensitive import Secret


@dataclass(frozen=True)
class ApplyOptions:
    """How apply runs. `create_attempts` bounds the sends of one create after ambiguous failures."""

    parallelism: int = 10
    create_attempts: int = 3
    create_retry_delay: float = 1.0
    replace_attempts: int = 6
    """Sends of the create of a replace, which may meet the deleted object's background cleanup
    (409) for a while: with the doubling delay, about half a minute in all."""
    fingerprint_key: bytes | None = None
    """RECONCILER_FINGERPRINT_KEY: fingerprints secrets the plan could not (see `_fingerprint_late_secrets`)."""


def materialize(body: Any, resolve: SecretResolver) -> Any:
    """The body as JSON-ready data with secrets resolved; built just before a send, never kept."""
    if isinstance(body, SecretRef):
        return resolve(body)
    if isinstance(body, Mapping):
        return {key: materialize(value, resolve) for key, value in body.items()}
    if isinstance(body, (list, tuple)):
        return [materialize(item, resolve) for item in body]
    return body


class CallSender:
    """Sends the calls of one apply, at most `parallelism` at a time."""

    def __init__(
        self, platform: Platform, resolve: SecretResolver, options: ApplyOptions, sleep: Sleep
    ) -> None:
        self.platform = platform
        self.resolve = resolve
        self.options = options
        self.sleep = sleep
        self._slots = asyncio.Semaphore(options.parallelism)

    async def send(self, owner: Change, call: Call, after_delete: bool = False) -> CallResult:
        """Send `call` of the change `owner`; never raises. `after_delete`: it takes a slug that
        a delete just freed, so a 409 is waited out as for the create of a replace."""
        async with self._slots:
            return await self._send(owner, call, after_delete)

    async def _send(self, owner: Change, call: Call, after_delete: bool) -> CallResult:
        status = call.operation.success_status
        try:
            body = materialize(call.body, self.resolve)
            if self.options.fingerprint_key is not None:
                _fingerprint_late_secrets(owner, call, body, self.options.fingerprint_key)
            if call.creates or after_delete:
                data, reread = await self._create(owner, call, body, after_delete)
                return CallResult(call.operation, True, status, data=data, reread=reread)
            await self.platform.call(call.operation.name, body)
            return CallResult(call.operation, True, status)
        except NotFound as error:
            if call.operation.deletes:
                # Gone is what a delete wants: an earlier attempt that answered 5xx after doing
                # the work (the client resends deletes), or someone else, got there first.
                return CallResult(call.operation, True, error.status)
            return CallResult(call.operation, False, error.status, error=_api_error_text(error))
        except ApiError as error:
            return CallResult(call.operation, False, error.status, error=_api_error_text(error))
        except ReconcilerError as error:  # e.g. a secret that vanished since the check
            return CallResult(call.operation, False, None, error=str(error))
        except Exception as error:  # independent work must go on; no traceback, no values
            return CallResult(
                call.operation, False, None, error=f"internal error ({type(error).__name__})"
            )

    async def _create(
        self, owner: Change, call: Call, body: Mapping[str, Any], after_delete: bool
    ) -> tuple[JsonValue, bool]:
        replacing = owner.action is Action.REPLACE or after_delete
        options = self.options
        return await create_once(
            self.platform,
            call.operation.name,
            body,
            reread_for(self.platform, owner, call),
            attempts=options.replace_attempts if replacing else options.create_attempts,
            delay=options.create_retry_delay,
            sleep=self.sleep,
            replacing=replacing,
        )


def _fingerprint_late_secrets(owner: Change, call: Call, body: dict[str, Any], key: bytes) -> None:
    """Add the fingerprint marker for write-only values the plan could not fingerprint.

    A saved plan made while a secret was missing (a pull request from a fork)
    sends it without a fingerprint; recording one now keeps the next plan from
    showing the secret as changed. The fingerprint is bound to each variable's
    address, which the batch's parts name (`Kind.call_parts`).
    """
    planned_items = call.body.get("variables")
    if not isinstance(planned_items, (list, tuple)):
        return
    owner_address = Address.parse(owner.address)
    for planned_item, item in zip(planned_items, body["variables"], strict=True):
        if not isinstance(planned_item, Mapping) or not isinstance(item, dict):
            continue  # a removal names the variable only
        ref, value = planned_item.get("value"), item.get("value")
        if (
            isinstance(ref, SecretRef)
            and ref.fingerprint is None
            and isinstance(value, Secret)
            and item.get("kind") == "writeonly"
        ):
            description, _ = split_fingerprint(item.get("description"))
            address = str(owner_address.sibling(str(item["key"])))
            item["description"] = with_fingerprint(description, fingerprint(key, address, value))


def _api_error_text(error: ApiError) -> str:
    """One line: the message, and the hint unless it is the client's "re-read first" advice,
    which apply has already followed for creates."""
    if error.hint and not error.ambiguous:
        return f"{error.message} ({error.hint})"
    return error.message
