"""The environment variables holding reconciler's own credentials.

They are read by the connection (the API key), by plan and apply (the fingerprint key; the
notification URLs, whose holder can post to the channel: reconciler/report/notify), and are
never a source a manifest may read (see `reconciler/manifest/secret_sources.py`).
"""

from __future__ import annotations

API_KEY_ENV = "RECONCILER_API_KEY"
FINGERPRINT_KEY_ENV = "RECONCILER_FINGERPRINT_KEY"
NOTIFY_SLACK_URL_ENV = "RECONCILER_NOTIFY_SLACK_URL"
NOTIFY_WEBHOOK_URL_ENV = "RECONCILER_NOTIFY_WEBHOOK_URL"

CREDENTIALS = {
    API_KEY_ENV: "API key",
    FINGERPRINT_KEY_ENV: "fingerprint key",
    NOTIFY_SLACK_URL_ENV: "Slack notification URL",
    NOTIFY_WEBHOOK_URL_ENV: "notification webhook URL",
}
"""Each credential's variable and what it is, for messages."""

OWN_PREFIX = "RECONCILER_"
"""Every environment variable whose name starts so (in any case) is reconciler's own: its
settings and credentials, and what CI setups name after it (`RECONCILER_APPLY_API_KEY`)."""
