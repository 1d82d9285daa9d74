"""The vendored OpenAPI document of the platform API (schemas/platform-api.openapi.json, shipped
inside the package as reconciler/schemas): the one source of the operations
(reconciler/platform/operations.py) and of the shapes of what they answer
(reconciler/platform/shapes.py).

It is read once, when first needed: a quarter of a megabyte that a command which never calls the
platform (`validate`) never parses.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

DOCUMENT_RESOURCE = ("schemas", "platform-api.openapi.json")


class ApiDocumentError(Exception):
    """The document does not say what reconciler reads from it: a broken build, never a user's
    mistake, so it is raised as soon as the document is read."""


@functools.cache
def api_document() -> Mapping[str, Any]:
    # the standard library's `json`, which every command has imported already: orjson parses
    # this document 0.3 ms faster but takes longer than that to import
    content = resources.files("reconciler").joinpath(*DOCUMENT_RESOURCE).read_bytes()
    document: dict[str, Any] = json.loads(content)
    return document


def schema_at(document: Mapping[str, Any], reference: str) -> Mapping[str, Any]:
    """The schema a `$ref` (`#/components/schemas/App`) names in `document`."""
    found: Any = document
    for part in reference.removeprefix("#/").split("/"):
        if not isinstance(found, Mapping) or part not in found:
            raise ApiDocumentError(f"{reference} names nothing in the document")
        found = found[part]
    if not isinstance(found, Mapping):
        raise ApiDocumentError(f"{reference} is not a schema")
    return found
