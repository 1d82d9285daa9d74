"""Secret values: where they come from, how they are compared, how they stay out of output.

A secret's value (`fromEnv`, `fromFile`, or a write-only literal written in the manifest) is a
`reconciler.sensitive.Secret`, which no renderer can print. It is read only when it is needed:
by the plan to fingerprint it, which it does only with a fingerprint key (without one it asks
only whether the source is there), and by apply at the moment it sends the call. Plans carry a
`SecretRef` (the source's name and the fingerprint) in its place.

Fingerprints: the platform never returns a write-only value, so when
`RECONCILER_FINGERPRINT_KEY` is set, the description sent with the value ends
in a marker ` [fp2:<16 hex>]`, an HMAC-SHA256 of the variable's full address
(project, app, environment, key) and value under that key, truncated to 64
bits. The next plan recomputes it from the source and compares, so a changed
secret shows as an update and an unchanged one as nothing, without the value
ever being stored or shown. Bound to the address, two variables holding the
same value have unrelated fingerprints: a manifest writing a guess in many
places learns nothing from the fingerprints a saved plan records. A
description written by the first form (` [fp:<16 hex>]`, bound to the key
alone) is sent once more with the new one, shown as such, and never compared.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from typing import Final

from reconciler import sensitive
from reconciler.credentials import API_KEY_ENV, FINGERPRINT_KEY_ENV
from reconciler.errors import UsageError
from reconciler.manifest.model import MAX_VALUE_CHARS, FromEnv, FromFile
from reconciler.manifest.secret_sources import (
    SecretRefused,
    SecretTooLong,
    SecretUnavailable,
    env_available,
    file_available,
    read_env,
    read_file,
)
from reconciler.plan.changes import SecretRef, SecretSource
from reconciler.sensitive import Secret

FINGERPRINT_LENGTH = 16
MIN_FINGERPRINT_KEY_CHARS = 16
MAX_DESCRIPTION = 255
_MARKER_FORMAT = "[fp2:{}]"
FINGERPRINT_SUFFIX_LENGTH = len(" " + _MARKER_FORMAT.format("0" * FINGERPRINT_LENGTH))
"""Characters the marker adds to a description (23): the manifest allows 232 for write-only ones."""
_MARKER = re.compile(r"(?:^|\s)\[fp(2?):([0-9a-f]{" + str(FINGERPRINT_LENGTH) + r"})\]$")
"""Either form of the marker: `[fp2:...]`, or the first form `[fp:...]` (key and value only)."""
_FORM = b"reconciler-fingerprint-2"

SOURCE_ENV: Final = "fromEnv"
SOURCE_FILE: Final = "fromFile"
SOURCE_MANIFEST: Final = "manifest"

# Literal write-only values written in the manifest itself. They travel in plans as a
# `manifest:<address>` reference like any other secret; the plan that read the manifest
# keeps them here, so apply (in the same process, after `apply -f` or after rebuilding a
# saved plan from its manifest files) can resolve them.
_manifest_values: dict[str, Secret] = {}

# The `fromFile` sources of the manifests planned in this process, by path: what a
# `fromFile:PATH` reference may read (see `reference_for`).
_file_sources: dict[str, FromFile] = {}


def resolve_secret(source: FromEnv | FromFile) -> Secret | None:
    """The secret's value, or None when its source is missing (unset variable, absent file).

    An empty environment variable counts as missing: the platform needs at least one character.
    A file that exists but cannot be read as UTF-8 text is an error naming the path, and so is
    a value longer than the platform stores (`SecretTooLong`) and a value that holds one of
    reconciler's own credentials (`SecretRefused`), whatever the source's name.
    """
    value = _read_source(source)
    if value is not None:
        _check_not_a_credential(value, source_name(source))
        _check_length(value, source_name(source))
    return value


def read_unchecked(source: FromEnv | FromFile) -> Secret | None:
    """`resolve_secret` without the length check: for a plan that reads a value only to
    fingerprint it (apply refuses a value too long before any write)."""
    value = _read_source(source)
    if value is not None:
        _check_not_a_credential(value, source_name(source))
    return value


def secret_available(source: FromEnv | FromFile) -> bool:
    """Whether the source is there (a variable set and not empty, a file that exists), under
    the same rules as `resolve_secret`, without reading the value."""
    if isinstance(source, FromEnv):
        return env_available(source)
    return file_available(source)


def _check_not_a_credential(value: Secret, source: str) -> None:
    """Refuse a value holding the API key or the fingerprint key in use, without saying which:
    a manifest that names `RECONCILER_APPLY_API_KEY` (as CI setups call it) or a file holding
    the key would otherwise hand it to every deployment of the app."""
    in_environment = (os.environ.get(API_KEY_ENV), os.environ.get(FINGERPRINT_KEY_ENV))
    if sensitive.holds_credential(value, in_environment):
        raise SecretRefused(
            f"{source} holds one of reconciler's own credentials (the API key or the "
            "fingerprint key this run uses); a manifest may not send it to the platform",
            hint="give the app a secret of its own; if the workflow hands its credentials to "
            "other variables, restrict what manifests may read with --allow-env",
        )


def _check_length(value: Secret, source: str) -> None:
    """Refuse a value the platform would answer with a 400, which fails the whole batch of
    variables sent with it: better no write at all than a half-applied environment."""
    length = len(value.reveal())
    if length > MAX_VALUE_CHARS:
        raise SecretTooLong(
            f"secret {source} has {length} characters; a variable value may have at most "
            f"{MAX_VALUE_CHARS}",
            hint="the platform stores no longer value: shorten it, or keep a large secret "
            "elsewhere and pass where to find it",
        )


def _read_source(source: FromEnv | FromFile) -> Secret | None:
    """The one place a secret source is read; `secret_sources` refuses what a manifest may not
    read (the tool's own settings, variables the workflow does not allow, files outside the
    repository, non-regular files)."""
    if isinstance(source, FromEnv):
        return read_env(source)
    return read_file(source)


def source_name(source: FromEnv | FromFile) -> str:
    """The reference a plan stores instead of the value: `fromEnv:NAME` or `fromFile:PATH`."""
    if isinstance(source, FromEnv):
        return f"{SOURCE_ENV}:{source.name}"
    return f"{SOURCE_FILE}:{source.path}"


def reference_for(source: FromEnv | FromFile) -> str:
    """`source_name`, remembering a file source so that `resolve_ref` reads it under the rules
    of the manifest that declares it (the repository it must stay in)."""
    if isinstance(source, FromFile):
        _file_sources[source.path] = source
    return source_name(source)


def describe_source(source: FromEnv | FromFile) -> SecretSource:
    """The source as the manifest names it, for people: a file by its path in the repository."""
    if isinstance(source, FromEnv):
        return SecretSource(SOURCE_ENV, source.name)
    return SecretSource(SOURCE_FILE, source.shown)


def register_manifest_value(address: str, value: Secret) -> str:
    """Remember a write-only literal from the manifest; returns its reference `manifest:ADDRESS`."""
    _manifest_values[address] = value
    return f"{SOURCE_MANIFEST}:{address}"


def fingerprint(key: bytes, address: str, value: Secret) -> str:
    """HMAC-SHA256 of the variable's address and value under `key`, hex, truncated to 16
    characters.

    The full address (`variable.<project>/<app>/<environment>/<KEY>`) is part of the message, so
    that two variables holding the same value anywhere do not share a fingerprint: neither a
    reader of the descriptions nor a saved plan tells that they are equal, and a manifest that
    writes a guess of a secret in many other places learns nothing from their fingerprints.
    """
    message = b"\x00".join((_FORM, address.encode("utf-8"), value.reveal().encode("utf-8")))
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:FINGERPRINT_LENGTH]


def with_fingerprint(description: str | None, fp: str) -> str:
    """`description` with the fingerprint marker appended, cut so the total fits 255 characters."""
    marker = _MARKER_FORMAT.format(fp)
    if not description:
        return marker
    room = MAX_DESCRIPTION - len(marker) - 1
    return f"{description[:room]} {marker}"


def split_fingerprint(description: str | None) -> tuple[str | None, str | None]:
    """(the user's description or None, the fingerprint or None) of a live description; a
    fingerprint of the first form is the user's description's no more than one of this form
    (see `first_form_fingerprint`)."""
    if not description:
        return None, None
    found = _MARKER.search(description)
    if found is None:
        return description, None
    # exactly what `with_fingerprint` was given: the match starts at the one separating space,
    # and stripping more would turn a description ending in a space into a perpetual diff
    user = description[: found.start()]
    return (user or None), found.group(2)


def first_form_fingerprint(description: str | None) -> bool:
    """Whether a live description ends in a fingerprint of the first form (`[fp:...]`, bound to
    the variable's key only): never compared, it is replaced once by one bound to the address."""
    found = _MARKER.search(description or "")
    return found is not None and not found.group(1)


def resolve_ref(ref: SecretRef) -> Secret:
    """The value behind a `SecretRef`, read now; raises `SecretUnavailable` saying which source
    is missing (the caller names the variable).

    A `fromFile` reference is read only when a manifest loaded in this process declares that
    file (`reference_for`), under that declaration's rules: a saved plan edited to name another
    file reads nothing."""
    kind, _, name = ref.source.partition(":")
    value: Secret | None
    if kind == SOURCE_ENV:
        value = resolve_secret(FromEnv(name))
        missing, hint = f"the environment variable {name} is not set", f"set {name}"
    elif kind == SOURCE_FILE:
        source = _file_sources.get(name)
        if source is None:
            raise SecretUnavailable(
                f"the plan reads the file {name}, which no manifest declares now",
                hint="plan again from the manifest files and apply the new plan",
            )
        value = resolve_secret(source)
        missing = f"the file {source.shown} (fromFile {source.declared!r}) does not exist"
        hint = f"create {source.shown}"
    elif kind == SOURCE_MANIFEST:
        value = _manifest_values.get(name)
        missing = f"the manifest's write-only value of {name} is not known to this process"
        hint = "plan again from the manifest files in this process (reconciler apply -f ...)"
    else:
        raise SecretUnavailable(f"unknown secret reference {ref.source!r} in the plan")
    if value is None:
        raise SecretUnavailable(missing, hint=hint)
    return value


def ref_matches(ref: SecretRef, value: Secret, *, key: bytes | None, address: str) -> bool:
    """Whether `value` is still the value fingerprinted at plan time (True when none was taken)."""
    if ref.fingerprint is None or key is None:
        return True
    return hmac.compare_digest(fingerprint(key, address, value), ref.fingerprint)


def fingerprint_key_from(raw: str | None) -> bytes | None:
    """The fingerprint key from `RECONCILER_FINGERPRINT_KEY` (its UTF-8 bytes), None when unset.

    It is an HMAC key: a short one can be found by trying keys against a fingerprint that
    anyone who reads variable descriptions sees, so it is refused (its length named, never it).
    """
    if not raw:
        return None
    sensitive.remember_credential(raw)
    if len(raw) < MIN_FINGERPRINT_KEY_CHARS:
        raise UsageError(
            f"{FINGERPRINT_KEY_ENV} has {len(raw)} characters; a fingerprint key needs at least "
            f"{MIN_FINGERPRINT_KEY_CHARS} (it is an HMAC key: a short one can be guessed from the "
            "fingerprints in variable descriptions)",
            hint="generate one with `openssl rand -hex 32`, keep it in your CI's secrets and "
            "use the same key for plan and apply",
        )
    return raw.encode("utf-8")
