"""Posting one notification to every destination, and the line standard error shows for each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reconciler.report import output
from reconciler.report.notify.bodies import slack_body, webhook_body
from reconciler.report.notify.delivery import Delivery, Destinations, Timing, post_all
from reconciler.report.notify.events import Notification

if TYPE_CHECKING:
    import httpx

_SAID = {
    "drift": "drift found",
    "in_sync": "in sync",
    "applied": "applied",
    "failed": "failed",
    "rollout_failed": "rollout failed",
}


async def send(
    notification: Notification,
    to: Destinations,
    *,
    timing: Timing | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[Delivery]:
    """Post `notification` to every destination found, in the body its format takes; each
    body passes the output boundary (`output.outgoing_json`)."""
    bodies = [
        (
            destination,
            output.outgoing_json(
                slack_body(notification)
                if destination.format == "slack"
                else webhook_body(notification)
            ),
        )
        for destination in to.found
    ]
    return await post_all(bodies, timing=timing, transport=transport)


def describe(delivery: Delivery, notification: Notification) -> str:
    """The line standard error shows for one delivery (the destination by its host alone)."""
    said = f"{notification.command}: {_SAID[notification.event]}"
    where = delivery.destination.label
    if delivery.failure is None:
        return f"Notified {where} ({said})."
    return (
        f"Warning: could not notify {where} ({said}): {delivery.failure}. "
        "The exit status is not affected."
    )
