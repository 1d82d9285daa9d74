"""The two bodies a notification is posted as: Slack's incoming-webhook message and the
documented generic JSON (`format_version` "1", docs/guides/notifications.md).

Slack reads `<...>` as a link, a mention (`<@U123>`) or a broadcast (`<!channel>`), and `&` as
the start of an entity; it asks for exactly these three characters to be escaped, which
`slack_text` does for every text that is not reconciler's own, after `clean` turned line
breaks and other control characters into visible escapes. No manifest, platform or CI text can
therefore form a link, a mention or a line of its own; the one link of a message is the CI
run's, and only a plain http(s) URL becomes one (`ci.py`). Addresses are shown as code
(`slack_code`), which also keeps Slack from making links of host names.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from reconciler import __version__
from reconciler.escaping import clean
from reconciler.report.notify.events import ChangeItem, Notification

FORMAT_VERSION = "1"
SLACK_LISTED = 10
"""The most changes (and deployments) a Slack message lists; the generic body holds more."""

_ICONS = {
    "drift": ":warning:",
    "in_sync": ":white_check_mark:",
    "applied": ":white_check_mark:",
    "failed": ":x:",
    "rollout_failed": ":x:",
}


def slack_text(text: str) -> str:
    """`text` as Slack mrkdwn shows it literally: cleaned, then `&`, `<` and `>` escaped."""
    return clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_code(text: str) -> str:
    """`text` as inline code: escaped as `slack_text`, a backtick (which would end the code)
    written `\\x60` as `clean` writes what cannot show as itself."""
    return "`" + slack_text(text).replace("`", "\\x60") + "`"


# --- Slack --------------------------------------------------------------------------------


def slack_body(notification: Notification) -> dict[str, Any]:
    """An incoming-webhook message: one `text` in mrkdwn, link previews off."""
    n = notification
    heading = f"{_ICONS[n.event]} *{slack_text(n.title)}*"
    if n.run is not None and n.run.repository:
        heading += f" in {slack_code(n.run.repository)}"
    lines = [heading, slack_text(n.text)]
    if n.error is not None and (n.error.operation or n.error.status is not None):
        called = ", ".join(
            part
            for part in (
                slack_code(n.error.operation) if n.error.operation else "",
                f"HTTP {n.error.status}" if n.error.status is not None else "",
            )
            if part
        )
        lines.append(f"{slack_text(n.error.kind)}: {called}")
    if n.targets:
        lines.append("Targets: " + ", ".join(slack_code(t) for t in n.targets))
    changes = [f"• {_slack_change(item)}" for item in n.changes[:SLACK_LISTED]]
    if n.changes_total > SLACK_LISTED:
        changes.append(f"…and {n.changes_total - SLACK_LISTED} more")
    deployments = _slack_deployments(n)
    # what the event is about first: a failed rollout's deployments before its changes
    lines += deployments + changes if n.event == "rollout_failed" else changes + deployments
    if n.run is not None:
        lines.append(_slack_run(n))
    return {"text": "\n".join(lines), "unfurl_links": False, "unfurl_media": False}


def _slack_deployments(n: Notification) -> list[str]:
    if not n.deployments:
        return []
    lines = ["Deployments:"]
    for deployment in n.deployments[:SLACK_LISTED]:
        code = f" ({slack_text(deployment.error_code)})" if deployment.error_code else ""
        lines.append(f"• {slack_code(deployment.address)}: {slack_text(deployment.status)}{code}")
    if len(n.deployments) > SLACK_LISTED:
        lines.append(f"…and {len(n.deployments) - SLACK_LISTED} more")
    return lines


def _slack_change(item: ChangeItem) -> str:
    if item.outcome is None:
        return f"{item.action} {slack_code(item.address)}"
    error = f": {slack_text(item.error)}" if item.error else ""
    return f"{item.outcome} {slack_code(item.address)} ({item.action}){error}"


def _slack_run(n: Notification) -> str:
    assert n.run is not None
    parts = []
    if n.run.url is not None:  # a plain http(s) URL (ci.py): nothing in it ends the link
        parts.append(f"<{n.run.url}|{n.run.label}>")
    if n.run.ref:
        parts.append(slack_code(n.run.ref))
    if n.run.commit:
        parts.append(slack_code(n.run.commit[:12]))
    return " · ".join(parts)


# --- the generic JSON body ----------------------------------------------------------------


def webhook_body(notification: Notification) -> dict[str, Any]:
    """The generic body, every field of docs/guides/notifications.md in that order (the
    objects in it are the dataclasses of `events` and `ci`, field for field)."""
    n = notification
    return {
        "format_version": FORMAT_VERSION,
        "reconciler_version": __version__,
        "event": n.event,
        "command": n.command,
        "exit_code": n.exit_code,
        "title": n.title,
        "text": n.text,
        "summary": None if n.summary is None else dict(n.summary),
        "changes": [asdict(change) for change in n.changes],
        "changes_total": n.changes_total,
        "deployments": [asdict(deployment) for deployment in n.deployments],
        "error": None if n.error is None else asdict(n.error),
        "targets": list(n.targets),
        "run": None if n.run is None else asdict(n.run),
    }
