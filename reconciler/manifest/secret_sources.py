"""Which secret sources a manifest may name, and the one place their values are read.

Manifests arrive in pull requests from people who must not be able to make reconciler read
anything outside the repository, nor hand its own credentials to the platform:

- `fromEnv` may name any environment variable the workflow allows (`--allow-env PATTERN`: the
  workflow, not the manifest, says which variables a manifest may read; all by default) but
  reconciler's own (`RECONCILER_*`, in any case: its credentials live there,
  `reconciler/credentials.py`): a variable holding the API key would give it to every app, and
  to every key that can read variables when it is `recoverable`. A value that holds a credential
  in use, whatever the variable's or the file's name, is refused when it is read
  (`reconciler/plan/secrets.py`).
- `fromFile` is a path relative to the manifest file's directory, and must stay inside the
  manifests' repository: the git work tree holding the manifest (the nearest directory above it
  with a `.git` directory or file), else the manifest's own directory. Symbolic links are
  resolved first, so a link committed into the repository cannot point out of it; nothing
  under `.git/` is read (remote URLs can carry tokens); only regular files are read (a fifo
  or a device would block or never end).

`validate` reports these rules with the variable's file, line and column, without reading any
value (`env_problem`, `file_problem`); plan, apply and saved-plan apply read every secret through
`read_env` and `read_file`, which enforce them again at the moment of reading, and plan without
a fingerprint key only asks whether a source is there (`env_available`, `file_available`). A
missing source is no error here: its value is known after apply.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from reconciler.credentials import CREDENTIALS, OWN_PREFIX
from reconciler.errors import ReconcilerError
from reconciler.manifest.model import MAX_VALUE_CHARS, FromEnv, FromFile
from reconciler.sensitive import Secret

UTF8_MAX_BYTES_PER_CHAR = 4
MAX_FILE_BYTES = UTF8_MAX_BYTES_PER_CHAR * MAX_VALUE_CHARS
"""Bytes past which a file cannot hold a valid value, whatever its characters: never read."""

_RELATIVE = "relative to the manifest file's directory"


class SecretUnavailable(ReconcilerError):
    """A secret that must be sent cannot be read. The message names the source, never a value."""


class SecretTooLong(SecretUnavailable):
    """A secret longer than the platform stores: its length is named, never its value."""


class SecretRefused(SecretUnavailable):
    """A secret that holds one of reconciler's own credentials: never sent, never said which."""


def from_file(declared: str, directory: Path) -> FromFile:
    """The `fromFile` source `declared` in a manifest file that lives in `directory`."""
    return FromFile(
        path=os.path.normpath(directory / declared),
        declared=declared,
        root=str(repository_root(directory)),
    )


def repository_root(directory: Path) -> Path:
    """The git work tree holding `directory` (found without running git), else `directory`."""
    resolved = Path(os.path.realpath(directory))
    for candidate in (resolved, *resolved.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return resolved


# --- fromEnv ------------------------------------------------------------------------------


_allowed_env: tuple[str, ...] | None = None
"""The `--allow-env` patterns of the command running, None when it gave none (all allowed)."""


def allow_env(patterns: Iterable[str] | None) -> None:
    """Let manifests read only the environment variables matching one of `patterns` (shell
    globs, case-sensitive: `SHOP_*`); None allows every one (reconciler's own aside)."""
    global _allowed_env
    _allowed_env = None if patterns is None else tuple(patterns)


def env_problem(name: str) -> str | None:
    """Why a manifest may not read the environment variable `name`, or None."""
    what = CREDENTIALS.get(name.upper())
    if what is not None or name.upper().startswith(OWN_PREFIX):
        held = f"reconciler's own {what}" if what else "one of reconciler's own settings"
        return (
            f"{name} holds {held} (every {OWN_PREFIX}* variable is reconciler's, in any case); "
            "a manifest may not read it: as a variable it would reach every deployment of the "
            "app (and, if recoverable, every key that can read variables). Give the app its own "
            "secret in another environment variable"
        )
    if _allowed_env is not None and not any(
        fnmatch.fnmatchcase(name, pattern) for pattern in _allowed_env
    ):
        allowed = ", ".join(_allowed_env) or "none"
        return (
            f"{name} is not one of the environment variables this run lets manifests read "
            f"(--allow-env: {allowed}); the workflow decides which variables a manifest may "
            "read: name one it allows, or ask for the pattern to be added to the workflow"
        )
    return None


def _check_env(source: FromEnv) -> None:
    problem = env_problem(source.name)
    if problem is not None:
        raise SecretUnavailable(f"fromEnv {problem}")


def env_available(source: FromEnv) -> bool:
    """Whether the variable is set and not empty, without taking its value anywhere."""
    _check_env(source)
    return bool(os.environ.get(source.name))


def read_env(source: FromEnv) -> Secret | None:
    """The variable's value, or None when it is unset or empty (the platform needs text)."""
    _check_env(source)
    value = os.environ.get(source.name)
    return Secret(value) if value else None


# --- fromFile -----------------------------------------------------------------------------


def file_problem(source: FromFile) -> str | None:
    """Why the file may not be read (the path rules, a file that is not a regular one), or
    None: what `validate` checks, without reading the file."""
    try:
        file_available(source)
    except SecretUnavailable as error:
        return error.message
    return None


def file_available(source: FromFile) -> bool:
    """Whether the file is there (a regular file the rules allow), without reading it; raises
    `SecretUnavailable` for one the rules refuse."""
    return _checked(source) is not None


def _checked(source: FromFile) -> tuple[str, os.stat_result] | None:
    """The file to read and its status, once the rules allow it; None when it does not exist."""
    target = _allowed_target(source)
    try:
        found = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise _unreadable(source, error) from None
    _check_regular(source, found.st_mode)
    return target, found


def read_file(source: FromFile) -> Secret | None:
    """The file's text (UTF-8; universal newlines, so CRLF and a lone CR read as LF; a trailing
    newline kept), or None when it does not exist or is empty. Raises `SecretUnavailable` for a
    path the rules above refuse and for a file that is not UTF-8 text, `SecretTooLong` for one
    that cannot hold a valid value."""
    checked = _checked(source)
    if checked is None:
        return None
    target, before = checked
    if before.st_size > MAX_FILE_BYTES:
        raise SecretTooLong(
            f"file {source.declared!r} has {before.st_size} bytes, more than {MAX_VALUE_CHARS} "
            f"characters; a variable value holds at most {MAX_VALUE_CHARS} characters"
        )
    text = _read_text(source, target, before)
    return Secret(text) if text else None


def _allowed_target(source: FromFile) -> str:
    """The file to read (symbolic links resolved), once the path rules allow it."""
    declared, root = source.declared, Path(source.root)
    where = _describe_root(root)
    if os.path.isabs(declared):
        raise SecretUnavailable(
            f"{declared!r} is an absolute path; fromFile reads only files inside {where}: "
            f"give a path {_RELATIVE}"
        )
    target = Path(os.path.realpath(source.path))
    if target != root and root not in target.parents:
        through = " (through a symbolic link)" if _inside(Path(source.path), root) else ""
        raise SecretUnavailable(
            f"{declared!r} is outside {where}{through}; fromFile reads only files inside it: "
            f"keep the secret file there (out of git, e.g. listed in .gitignore) and give its "
            f"path {_RELATIVE}"
        )
    if ".git" in target.relative_to(root).parts:
        raise SecretUnavailable(
            f"{declared!r} is inside .git/, which holds git's own data (remote URLs can carry "
            f"tokens), not secrets: point fromFile at a secret file outside .git/, {_RELATIVE}"
        )
    return str(target)


def _describe_root(root: Path) -> str:
    if os.path.lexists(root / ".git"):
        return f"the repository {root}"
    return f"the manifest's directory {root} (no git work tree holds it)"


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _check_regular(source: FromFile, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = "a directory" if stat.S_ISDIR(mode) else "a fifo" if stat.S_ISFIFO(mode) else None
    kind = kind or ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket")
    raise SecretUnavailable(
        f"{source.declared!r} is not a regular file (it is {kind}); fromFile reads the text of "
        f"a regular file: point it at one, {_RELATIVE}"
    )


def _read_text(source: FromFile, target: str, checked: os.stat_result) -> str:
    # O_NOFOLLOW and the same-file check: the file read is the one checked, even if the path
    # was swapped for a link or a fifo in between; O_NONBLOCK so a fifo cannot block the open.
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(target, flags)
    except OSError as error:
        raise _unreadable(source, error) from None
    with os.fdopen(descriptor, encoding="utf-8") as handle:
        opened = os.fstat(descriptor)
        if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
            raise SecretUnavailable(
                f"{source.declared!r} changed while it was being read; run the command again"
            )
        _check_regular(source, opened.st_mode)
        try:
            return handle.read(MAX_FILE_BYTES + 1)
        except UnicodeDecodeError:
            raise SecretUnavailable(
                f"file {source.declared!r} is not UTF-8 text; variable values are text: encode "
                "binary secrets (e.g. base64) first"
            ) from None
        except OSError as error:
            raise _unreadable(source, error) from None


def _unreadable(source: FromFile, error: OSError) -> SecretUnavailable:
    return SecretUnavailable(f"file {source.declared!r} cannot be read: {error.strerror}")


__all__ = [
    "SecretRefused",
    "SecretTooLong",
    "SecretUnavailable",
    "allow_env",
    "env_available",
    "env_problem",
    "file_available",
    "file_problem",
    "from_file",
    "read_env",
    "read_file",
    "repository_root",
]
