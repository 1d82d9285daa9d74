"""Saved plans (`plan --out FILE`, `apply FILE`): the JSON plan plus what apply needs to recheck it.

The file is the documented JSON plan (`plan_to_dict`) with three more keys:
`kind: "reconciler-plan"`, `manifest_files` (the manifest sources, which apply
reloads to refuse a plan whose manifest changed) and `checksum`, a SHA-256 of
the rest that catches a file edited or cut after it was saved. It holds
secret references, never secret values, and is written atomically with mode
0600 because it still describes the infrastructure: `plan_file_text` is its content,
`reconciler.report.output.write_plan_file` the one writer (it also refuses a plan holding a
plain write-only value or any registered secret).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.errors import PlanFileError, PlanShapeError
from reconciler.plan.changes import FORMAT_VERSION, Plan
from reconciler.plan.json_form import plan_from_dict, plan_to_dict

PLAN_FILE_KIND = "reconciler-plan"
_REPLAN = "run `reconciler plan --out FILE` again and apply the new file"


@dataclass(frozen=True)
class SavedPlan:
    plan: Plan
    manifest_files: tuple[str, ...]


def plan_file_text(plan: Plan, *, manifest_files: Sequence[str]) -> str:
    """The content of the plan file of `plan`: its JSON form, its kind, its manifest files
    and the checksum of all that."""
    document = {
        **plan_to_dict(plan),
        "kind": PLAN_FILE_KIND,
        "manifest_files": list(manifest_files),
    }
    document["checksum"] = _checksum(document)
    return _dump(document)


def load_plan(path: Path) -> SavedPlan:
    """Read and validate a saved plan; every problem is a `PlanFileError` that says what to do."""
    path = Path(path)
    document = _read_json(path)
    if document.get("kind") != PLAN_FILE_KIND:
        raise PlanFileError(
            f'{path} is not a reconciler plan file (its "kind" is not {PLAN_FILE_KIND!r})',
            hint="pass the file written by `reconciler plan --out FILE`",
        )
    _check_version(path, document.get("format_version"))
    if document.get("checksum") != _checksum(document):
        raise PlanFileError(
            f"{path} was modified after it was saved (its checksum does not match its content)",
            hint=f"plan files must not be edited; {_REPLAN}",
        )
    try:
        plan = plan_from_dict(document)
        manifest_files = _manifest_files(document)
    except PlanShapeError as error:
        raise PlanFileError(
            f"{path} is not a valid plan file: {error.message}", hint=_REPLAN
        ) from None
    return SavedPlan(plan=plan, manifest_files=manifest_files)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanFileError(
            f"plan file {path} does not exist", hint="create one with `reconciler plan --out FILE`"
        ) from None
    except IsADirectoryError:
        raise PlanFileError(f"{path} is a directory, not a plan file") from None
    except UnicodeDecodeError:
        raise PlanFileError(f"{path} is not a plan file: it is not UTF-8 text") from None
    except OSError as error:
        raise PlanFileError(f"cannot read plan file {path}: {error.strerror}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        # the position, not the content: a mangled file could hold anything
        raise PlanFileError(
            f"{path} is not a plan file: invalid JSON at line {error.lineno} column {error.colno} "
            f"({error.msg}); it may be truncated",
            hint=_REPLAN,
        ) from None
    except (RecursionError, ValueError) as error:
        # nested too deeply, or an integer longer than Python converts (a mangled file)
        why = "nested too deeply" if isinstance(error, RecursionError) else "a number is too long"
        raise PlanFileError(f"{path} is not a plan file: {why}", hint=_REPLAN) from None
    if not isinstance(document, dict):
        raise PlanFileError(f"{path} is not a plan file: its top level is not a JSON object")
    return document


def _check_version(path: Path, version: Any) -> None:
    if not isinstance(version, str):
        raise PlanFileError(
            f"{path} has no format_version string; this reconciler reads plan format "
            f"{FORMAT_VERSION}",
            hint=_REPLAN,
        )
    # within a major version readers ignore unknown fields; another major is another format
    if version.split(".", 1)[0] != FORMAT_VERSION.split(".", 1)[0]:
        shown = version if len(version) <= 20 else version[:20] + "..."
        raise PlanFileError(
            f"{path} has plan format {shown!r}; this reconciler reads format {FORMAT_VERSION}",
            hint=f"use the reconciler version that wrote it, or {_REPLAN}",
        )


def _manifest_files(document: dict[str, Any]) -> tuple[str, ...]:
    files = document.get("manifest_files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise PlanShapeError("manifest_files", "expected an array of strings")
    return tuple(files)


def _checksum(document: dict[str, Any]) -> str:
    content = {key: value for key, value in document.items() if key != "checksum"}
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _dump(document: dict[str, Any]) -> str:
    return (
        json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    )
