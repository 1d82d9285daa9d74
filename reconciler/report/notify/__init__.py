"""Notifications: `plan` and `apply` post their outcome to Slack incoming webhooks and to
generic JSON webhooks (docs/guides/notifications.md).

- `events`: what is said: the event (`drift`, `in_sync`, `applied`, `failed`,
  `rollout_failed`), counts, the first addresses, the error, from what the command produced;
- `bodies`: Slack's message (escaped for its mrkdwn) and the generic JSON body (`format_version`);
- `ci`: the link to the CI run, from GitHub's or GitLab's variables;
- `delivery`: the URLs (environment only, registered as secrets as soon as they are read), and
  posting with bounded retries within one deadline;
- `posting`: one notification to every destination, each body through the output boundary
  (`reconciler.report.output.outgoing_json`), and the line stderr shows for each.

Loaded lazily, as `reconciler.platform` is: every `plan` and `apply` reads the URLs, but only
one that posts imports what builds and sends a body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reconciler.lazy_names import lazy_names

if TYPE_CHECKING:  # what `__getattr__` returns, for type checkers
    from reconciler.report.notify.ci import RunLink, run_link
    from reconciler.report.notify.delivery import (
        SLACK_URL_ENV,
        URL_VARIABLES,
        WEBHOOK_URL_ENV,
        Delivery,
        Destinations,
        Timing,
        destinations,
    )
    from reconciler.report.notify.events import (
        EVENTS,
        ApplyRun,
        Ending,
        Notification,
        apply_notification,
        plan_notification,
    )
    from reconciler.report.notify.posting import describe, send

    __all__ = [
        "EVENTS",
        "SLACK_URL_ENV",
        "URL_VARIABLES",
        "WEBHOOK_URL_ENV",
        "ApplyRun",
        "Delivery",
        "Destinations",
        "Ending",
        "Notification",
        "RunLink",
        "Timing",
        "apply_notification",
        "describe",
        "destinations",
        "plan_notification",
        "run_link",
        "send",
    ]

_CI = "reconciler.report.notify.ci"
_DELIVERY = "reconciler.report.notify.delivery"
_EVENTS = "reconciler.report.notify.events"
_SEND = "reconciler.report.notify.posting"
_WHERE = {
    "EVENTS": _EVENTS,
    "SLACK_URL_ENV": _DELIVERY,
    "URL_VARIABLES": _DELIVERY,
    "WEBHOOK_URL_ENV": _DELIVERY,
    "ApplyRun": _EVENTS,
    "Delivery": _DELIVERY,
    "Destinations": _DELIVERY,
    "Ending": _EVENTS,
    "Notification": _EVENTS,
    "RunLink": _CI,
    "Timing": _DELIVERY,
    "apply_notification": _EVENTS,
    "describe": _SEND,
    "destinations": _DELIVERY,
    "plan_notification": _EVENTS,
    "run_link": _CI,
    "send": _SEND,
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_names(__name__, _WHERE)
