"""`-v` call logging.

One line per request sent: operation, outcome, milliseconds, attempt number.
Request and response bodies are never logged (they carry variable values), and
every line passes through `reconciler.sensitive.redact` so a key can never reach the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TextIO

from reconciler.sensitive import redact


class CallLog:
    """Writes one line per API request to `stream` (stderr by default)."""

    def __init__(self, stream: TextIO | None = None, *, secrets: Iterable[str] = ()) -> None:
        self._stream = stream
        self._secrets = tuple(s for s in secrets if s)

    def add_secret(self, secret: str | None) -> None:
        """Also redact `secret` (the client registers its key here)."""
        if secret and secret not in self._secrets:
            self._secrets = (*self._secrets, secret)

    def record(self, operation: str, outcome: str, milliseconds: float, attempt: int) -> None:
        """`outcome` is the HTTP status or the name of the transport failure."""
        line = f"api: {operation} {outcome} {milliseconds:.0f}ms attempt {attempt}"
        # standard error passes the output boundary the CLI installs (reconciler.report.output)
        stream = self._stream if self._stream is not None else sys.stderr  # noqa: TID251
        stream.write(redact(line, self._secrets) + "\n")
        stream.flush()
