"""Every error reconciler reports, in one hierarchy:

    ReconcilerError                  a message and an exit code, never a traceback
    ├── UsageError                   bad flags or environment
    │   └── NotARegularFile          an output path that is a link, a device, a directory...
    ├── ApiError                     a call to the platform failed (`status`, `ambiguous`)
    │   ├── AuthenticationError      401
    │   ├── PermissionDenied         403
    │   ├── NotFound                 404
    │   ├── Conflict                 409
    │   ├── PreconditionFailed       412
    │   ├── InvalidRequest           400
    │   ├── RateLimited              429 after every retry
    │   ├── ServerError              5xx after every retry
    │   ├── TransportError           no answer
    │   └── UnexpectedResponse       an answer the platform API spec does not allow
    ├── PlanShapeError               a plan document without the documented shape
    ├── PlanFileError                a plan file that cannot be written, read or trusted
    ├── PlainSecretError             a plan holding a write-only value in plain (a bug)
    ├── ApplyRefused                 apply stopped before its first write
    ├── ExportError                  live state export cannot read or write
    ├── GitRefError                  `projects --changed-since`: the ref cannot be read
    ├── OutputError                  output could not be written
    │   └── OutputClosedError        the reader of standard output left (a BrokenPipeError too)
    ├── ManifestInvalid              (reconciler.manifest.problems) the manifest has problems
    └── SecretUnavailable            (reconciler.manifest.secret_sources) a secret's source
        ├── SecretTooLong            is missing / holds more than the platform stores /
        └── SecretRefused            holds one of reconciler's own credentials

The last four are still defined in `reconciler.manifest` while that package is reworked;
they are listed here so the whole hierarchy reads in one place, and
`tests/test_errors.py` fails when a `ReconcilerError` subclass is defined anywhere else.
The CLI turns every one into its message and exit code. Messages never contain a secret
value or the API key.
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


class NotARegularFile(UsageError):
    """An output path that a write through a temporary file and a rename would replace."""


# --- the platform API ---------------------------------------------------------------------


class ApiError(ReconcilerError):
    """A call to the platform failed; `status` is None when no HTTP response arrived.

    Every message names the operation and the object from the request, never the API key
    and never a request body. `ambiguous` is true when a write may or may not have taken
    effect (a create that met a 5xx or a timeout after the request was sent): the caller
    must re-read live state before trying again.
    """

    def __init__(
        self,
        message: str,
        *,
        operation: str,
        status: int | None = None,
        detail: str | None = None,
        hint: str | None = None,
        ambiguous: bool = False,
    ) -> None:
        super().__init__(message, hint=hint)
        self.operation = operation
        self.status = status
        self.detail = detail
        self.ambiguous = ambiguous

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(operation={self.operation!r}, status={self.status!r}, "
            f"message={self.message!r})"
        )


class AuthenticationError(ApiError):
    """401: the API key is missing or invalid."""


class PermissionDenied(ApiError):
    """403: the key lacks the permission string the operation needs."""


class NotFound(ApiError):
    """404: an object named in the request does not exist."""


class Conflict(ApiError):
    """409: a uniqueness rule would be broken."""


class PreconditionFailed(ApiError):
    """412: delete protection or a deployment precondition."""


class InvalidRequest(ApiError):
    """400: the platform rejected the request."""


class RateLimited(ApiError):
    """429 still answered after every retry."""


class ServerError(ApiError):
    """5xx still answered after every retry (or once, for a create)."""


class TransportError(ApiError):
    """No response: timeout or connection failure, after retries when they were safe."""


class UnexpectedResponse(ApiError):
    """A response the spec does not allow: not JSON, no `data`, wrong shapes or pagination."""


# --- plans, apply, export -----------------------------------------------------------------


class PlanShapeError(ReconcilerError):
    """A plan dictionary that does not have the documented shape."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class PlanFileError(ReconcilerError):
    """A plan file that cannot be written, read, or trusted."""


class PlainSecretError(ReconcilerError):
    """A plan holds a write-only variable's plain value (a bug in whatever built it)."""


class ApplyRefused(ReconcilerError):
    """Apply stopped before its first write: a safety rule, a stale plan or a missing secret."""


class ExportError(ReconcilerError):
    """The live state could not be read or has a shape export cannot write."""


class GitRefError(ReconcilerError):
    """`projects --changed-since`: the ref cannot be read (not a commit, not a git
    repository, git missing, a manifest outside the repository)."""


# --- output -------------------------------------------------------------------------------


class OutputError(ReconcilerError):
    """Writing output failed (a closed or full stream, a file that cannot be written)."""


class OutputClosedError(OutputError, BrokenPipeError):
    """The reader of standard output left (EPIPE). Also a `BrokenPipeError`, so that code
    that expects a reader to leave (the emulator's banner) recognises it."""
