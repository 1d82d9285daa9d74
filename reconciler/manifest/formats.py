"""Host names and image references: the patterns the manifest schema gives them, and what
exactly is wrong with a value that does not fit.

The schema's patterns decide validity, for the CLI and for editors alike. A pattern can only
say "does not match", so for these two formats (`format: hostname`, `format: image-reference`
in the schema) the CLI names the part that is wrong with the functions below instead.
tests/manifest/test_formats.py keeps each function and its pattern in agreement, under
Python's regular expressions and ECMA-262's (what editors run).

The patterns spell whitespace out (WHITESPACE: Python's str.isspace) rather than `\\s`, whose
meaning differs between the two dialects; `$` is read as ECMA-262 reads it (the end of the
text) by the CLI's validator too, see schema.py.
"""

from __future__ import annotations

import re

ASCII_WHITESPACE = "\\t-\\r\\x1c-\\x20"
WHITESPACE = (
    ASCII_WHITESPACE + "\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
)
_LABEL_TEXT = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TAG_TEXT = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST_TEXT = "[A-Za-z][A-Za-z0-9]*(?:[+._-][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"

HOST_PATTERN = (
    f"^[{ASCII_WHITESPACE}]*(?:{_LABEL_TEXT}\\.)+(?=[0-9]*[A-Za-z-]){_LABEL_TEXT}\\.?"
    f"[{ASCII_WHITESPACE}]*$"
)
"""Two or more ASCII labels, the last not all digits (that is an IP address); surrounding
whitespace, letter case and one trailing dot are forgiven (normalise_host drops them)."""
IMAGE_PATTERN = f"^[^@{WHITESPACE}]*(?:@{_DIGEST_TEXT}|:{_TAG_TEXT})$"
"""A name with a tag after its last `/` (`ghcr.io/acme/web:1.4.2`) or a digest after the
first `@` (`...@sha256:<hex>`)."""

_LABEL = re.compile(_LABEL_TEXT.replace("A-Za-z", "a-z"))
_TAG = re.compile(_TAG_TEXT)
_DIGEST = re.compile(_DIGEST_TEXT)
_IMAGE_EXAMPLE = "e.g. ghcr.io/acme/web:1.4.2 or ghcr.io/acme/web@sha256:<digest>"
_HOST_EXAMPLE = "e.g. shop.example.com"


def normalise_host(host: str) -> str:
    """Host names compare case-insensitively and without the root's trailing dot."""
    return host.strip().lower().removesuffix(".")


def image_problem(image: str) -> str | None:
    """What is wrong with an image reference, or None when it fits IMAGE_PATTERN."""
    if any(c.isspace() for c in image):
        return f"{image!r} is not an image reference; write registry/name:tag ({_IMAGE_EXAMPLE})"
    name, at, digest = image.partition("@")
    if at:
        if not _DIGEST.fullmatch(digest):
            return f"{digest!r} is not a valid digest (algorithm:hex, {_IMAGE_EXAMPLE})"
        return None
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return f"image {image!r} has no tag or digest: pin one ({_IMAGE_EXAMPLE})"
    tag = last.rsplit(":", 1)[1]
    if not _TAG.fullmatch(tag):
        return f"{tag!r} is not a valid image tag ({_IMAGE_EXAMPLE})"
    return None


def host_problem(host: str) -> str | None:
    """What is wrong with a host name, or None when it fits HOST_PATTERN."""
    if "://" in host:
        return f"{host!r} has a scheme; write only the host name ({_HOST_EXAMPLE})"
    if "/" in host:
        return f"{host!r} has a path; write only the host name ({_HOST_EXAMPLE})"
    if ":" in host:
        return f"{host!r} has a port; write only the host name ({_HOST_EXAMPLE})"
    if "*" in host:
        return f"{host!r}: wildcard domains are not supported; list each host name"
    if not host.isascii():
        # lower() would turn some letters into ASCII ones (the Kelvin sign into `k`)
        return (
            f"{host!r} has characters outside ASCII: write an internationalised name in its "
            f"ASCII form (xn--..., punycode)"
        )
    labels = normalise_host(host).split(".")
    if len(labels) < 2:
        return f"{host!r} is not a fully qualified host name ({_HOST_EXAMPLE})"
    for label in labels:
        if not _LABEL.fullmatch(label):
            return (
                f"{host!r} has an invalid label {label!r}: labels are 1 to 63 letters, digits "
                f"or hyphens, not starting or ending with a hyphen"
            )
    if labels[-1].isdigit():
        return f"{host!r} looks like an IP address; a domain is a host name ({_HOST_EXAMPLE})"
    return None


EXPLAINED_FORMATS = {"hostname": host_problem, "image-reference": image_problem}
"""The schema's `format` of a pattern -> what says which part of a value is wrong."""
