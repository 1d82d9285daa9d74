"""Saved plans (`plan --out FILE`, `apply FILE`): the JSON plan plus what apply needs to recheck it.

The file is the documented JSON plan (`plan_to_dict`) with more keys: `kind: "reconciler-plan"`,
`manifest_files` (the manifest sources, which apply reloads to refuse a plan whose manifest
changed), `platform` (the base URL the plan was made against and the IDs of the projects it
read, so that apply refuses another platform), `checksum`, a SHA-256 of the rest that catches a
file edited or cut after it was saved, and, when `RECONCILER_FINGERPRINT_KEY` was set,
`signature`, an HMAC-SHA256 of the same content under that key: unlike the checksum, nobody
without the key can recompute it for an edited file. It holds secret references, never secret
values, and is written atomically with mode 0600 because it still describes the infrastructure:
`plan_file_text` is its content, `reconciler.report.output.write_plan_file` the one writer (it
also refuses a plan holding a plain write-only value; a secret value, a `Secret`, cannot be
encoded at all).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reconciler.errors import PlanFileError, PlanShapeError
from reconciler.escaping import escaped_json
from reconciler.json_types import JsonValue
from reconciler.plan.changes import FORMAT_VERSION, Plan
from reconciler.plan.json_form import plan_from_dict, plan_to_dict

PLAN_FILE_KIND = "reconciler-plan"
_REPLAN = "run `reconciler plan --out FILE` again and apply the new file"


@dataclass(frozen=True)
class PlatformBinding:
    """Where a plan was made: the base URL as the command named it (`local:` with the state
    file's absolute path for the built-in emulator) and `projects`, slug -> ID of every project
    the plan read (the workspace's identity, as far as the API shows one)."""

    base_url: str
    projects: Mapping[str, str]

    def to_json(self) -> dict[str, JsonValue]:
        return {"base_url": self.base_url, "projects": dict(sorted(self.projects.items()))}


@dataclass(frozen=True)
class SavedPlan:
    plan: Plan
    manifest_files: tuple[str, ...]
    platform: PlatformBinding | None
    """None in a file written before plans recorded their platform."""
    signature: str | None = field(default=None, compare=False)
    content: str = field(default="", compare=False)
    """The canonical text the checksum and the signature cover."""

    def signed_with(self, key: bytes) -> bool:
        """Whether the file carries a signature and `key` made it."""
        return self.signature is not None and hmac.compare_digest(
            self.signature, _signature(self.content, key)
        )


def plan_file_text(
    plan: Plan,
    *,
    manifest_files: Sequence[str],
    platform: PlatformBinding,
    signing_key: bytes | None = None,
) -> str:
    """The content of the plan file of `plan`: its JSON form, its kind, its manifest files, its
    platform, the checksum of all that and, with `signing_key`, its signature."""
    document = {
        **plan_to_dict(plan),
        "kind": PLAN_FILE_KIND,
        "manifest_files": list(manifest_files),
        "platform": platform.to_json(),
    }
    content = _canonical(document)
    document["checksum"] = _checksum(content)
    if signing_key is not None:
        document["signature"] = _signature(content, signing_key)
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
    content = _canonical(_covered(document))
    if document.get("checksum") != _checksum(content):
        raise PlanFileError(
            f"{path} was modified after it was saved (its checksum does not match its content)",
            hint=f"plan files must not be edited; {_REPLAN}",
        )
    try:
        plan = plan_from_dict(document)
        manifest_files = _manifest_files(document)
        platform = _platform(document.get("platform"))
        signature = document.get("signature")
        if signature is not None and not isinstance(signature, str):
            raise PlanShapeError("signature", "expected a string")
    except PlanShapeError as error:
        raise PlanFileError(
            f"{path} is not a valid plan file: {error.message}", hint=_REPLAN
        ) from None
    return SavedPlan(plan, manifest_files, platform, signature, content)


def _read_json(path: Path) -> dict[str, object]:
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


def _check_version(path: Path, version: object) -> None:
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


def _manifest_files(document: Mapping[str, object]) -> tuple[str, ...]:
    found = document.get("manifest_files")
    files: list[object] = found if isinstance(found, list) else []
    names = tuple(name for name in files if isinstance(name, str))
    if not isinstance(found, list) or len(names) != len(files):
        raise PlanShapeError("manifest_files", "expected an array of strings")
    return names


def _platform(value: object) -> PlatformBinding | None:
    if value is None:
        return None
    base_url = value.get("base_url") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(base_url, str):
        raise PlanShapeError("platform", 'expected an object with a "base_url" string')
    found = value.get("projects", {})
    listed: dict[object, object] = found if isinstance(found, dict) else {}
    projects = {
        slug: id_ for slug, id_ in listed.items() if isinstance(slug, str) and isinstance(id_, str)
    }
    if not isinstance(found, dict) or len(projects) != len(listed):
        raise PlanShapeError("platform.projects", "expected an object of project IDs by slug")
    return PlatformBinding(base_url, projects)


def checksum_of(document: Mapping[str, object]) -> str:
    """The checksum a plan file's document carries (anyone can recompute it: it proves a file
    whole, not unedited)."""
    return _checksum(_canonical(_covered(document)))


def _covered(document: Mapping[str, object]) -> dict[str, object]:
    """What the checksum and the signature cover: everything but themselves."""
    return {key: value for key, value in document.items() if key not in ("checksum", "signature")}


def _canonical(content: Mapping[str, object]) -> str:
    return json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _checksum(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()


def _signature(content: str, key: bytes) -> str:
    return "hmac-sha256:" + hmac.new(key, content.encode("utf-8"), hashlib.sha256).hexdigest()


def _dump(document: Mapping[str, object]) -> str:
    """The file's text: invisible characters of the manifests' text escaped (`escaped_json`),
    as anyone who looks at the file sees it; the checksum covers the data, not this text."""
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return escaped_json(text) + "\n"
