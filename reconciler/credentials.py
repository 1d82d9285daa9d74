"""The environment variables holding reconciler's own credentials.

They are read by the connection (the API key) and by plan and apply (the fingerprint key),
and are never a source a manifest may read (see `reconciler/manifest/secret_sources.py`).
"""

from __future__ import annotations

API_KEY_ENV = "RECONCILER_API_KEY"
FINGERPRINT_KEY_ENV = "RECONCILER_FINGERPRINT_KEY"

CREDENTIALS = {API_KEY_ENV: "API key", FINGERPRINT_KEY_ENV: "fingerprint key"}
"""Each credential's variable and what it is, for messages."""
