"""The root of reconciler's exception hierarchy.

Every error a user can cause or meet derives from `ReconcilerError`; the CLI
turns it into a message and an exit code, never a traceback. Messages must
never contain secret values or the API key.
"""

from __future__ import annotations


class ReconcilerError(Exception):
    """An error reported to the user as a message; `exit_code` is the process exit code."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message}\n  hint: {self.hint}"


class UsageError(ReconcilerError):
    """Bad flags or environment (no base URL, conflicting options)."""
