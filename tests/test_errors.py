"""One exception hierarchy: every `ReconcilerError` of reconciler is defined in
`reconciler.errors`, and its docstring shows each one."""

from __future__ import annotations

import importlib
import pkgutil

import reconciler
from reconciler import errors
from reconciler.errors import ReconcilerError

# TEMPORARY: defined in reconciler.manifest while that package is reworked by another change;
# to be moved into reconciler.errors then (the docstring lists them already).
_STILL_IN_MANIFEST = {"ManifestInvalid", "SecretUnavailable", "SecretTooLong", "SecretRefused"}


def _every_subclass(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _every_subclass(sub)
    return found


def test_every_reconciler_error_is_defined_in_reconciler_errors() -> None:
    for module in pkgutil.walk_packages(reconciler.__path__, "reconciler."):
        if not module.name.startswith(("reconciler.emulator", "reconciler.__main__")):
            importlib.import_module(module.name)
    elsewhere = sorted(
        f"{cls.__module__}.{cls.__name__}"
        for cls in _every_subclass(ReconcilerError)
        if cls.__module__ != errors.__name__
        and cls.__name__ not in _STILL_IN_MANIFEST
        and cls.__module__.startswith("reconciler.")
    )
    assert elsewhere == []


def test_the_hierarchy_is_shown_in_one_place() -> None:
    doc = errors.__doc__ or ""
    for cls in _every_subclass(ReconcilerError) | {ReconcilerError}:
        if cls.__module__.startswith("reconciler."):
            assert cls.__name__ in doc, f"{cls.__name__} is missing from reconciler.errors"
