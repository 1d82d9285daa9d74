"""Live state -> manifest: `reconciler export`.

Three steps, each usable alone and each in its own module:

1. `live.read_workspace` reads the live objects with the fewest calls, concurrently.
2. `convert.project_entry` turns one live project into the manifest's plain-data form,
   writing only what differs from the spec's defaults, keys in the order a person writes
   them; write-only variables become `fromEnv` references (`secret_names`). With
   `--templates`, `templates.factor_templates` then writes what several apps share once.
3. `yaml_out.dump_manifest` renders YAML that `reconciler validate` accepts.

This module puts them together (`export_workspace`, `Export`). The result round-trips:
planning the exported manifest against the same live state reports no changes (write-only
values are compared by presence).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import UnexpectedResponse
from reconciler.export.convert import (
    ExportNotes,
    ExportOptions,
    app_entry,
    environment_entry,
    factor_defaults,
    policy_entry,
    project_entry,
    user_description,
)
from reconciler.export.live import (
    ExportedApp,
    ExportedEnvironment,
    ExportedProject,
    cannot_read,
    exported_environment,
    read_workspace,
)
from reconciler.export.secret_names import SecretInput, SecretNames
from reconciler.export.templates import factor_templates
from reconciler.export.yaml_out import dump_manifest, header_lines
from reconciler.platform.protocol import Platform

__all__ = [
    "Export",
    "ExportNotes",
    "ExportOptions",
    "ExportedApp",
    "ExportedEnvironment",
    "ExportedProject",
    "SecretInput",
    "SecretNames",
    "app_entry",
    "build_export",
    "dump_manifest",
    "environment_entry",
    "export_workspace",
    "exported_environment",
    "factor_defaults",
    "factor_templates",
    "header_lines",
    "manifest_document",
    "policy_entry",
    "project_entry",
    "read_workspace",
    "user_description",
]


_DEFAULT_OPTIONS = ExportOptions()


TEMPLATES_FILE = "_templates"
"""With --out-dir, the templates' file (`_templates.yaml`): no project slug has an underscore."""


def manifest_document(
    entries: Mapping[str, Mapping[str, Any]], templates: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A whole manifest file holding the given `projects` entries (prune left at its defaults),
    and `templates` when there are any."""
    document: dict[str, Any] = {"version": 1}
    if templates:
        document["templates"] = dict(templates)
    document["projects"] = dict(entries)
    return document


@dataclass
class Export:
    """The manifest data per project slug (and the templates they extend), and the secrets a
    user must provide."""

    projects: dict[str, dict[str, Any]]
    secrets: list[SecretInput]
    options: ExportOptions = field(default_factory=ExportOptions)
    templates: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What was left out because no manifest can hold it (convert.ExportNotes)."""

    def single_document(self) -> dict[str, Any]:
        return manifest_document(self.projects, self.templates)

    def documents_by_project(self) -> dict[str, dict[str, Any]]:
        """One document per project slug, and the templates' own (`TEMPLATES_FILE`)."""
        documents = {
            slug: manifest_document({slug: entry}) for slug, entry in self.projects.items()
        }
        if self.templates:
            documents[TEMPLATES_FILE] = {"version": 1, "templates": self.templates}
        return documents

    def render(self) -> str:
        """One manifest holding every project."""
        return dump_manifest(self.single_document(), header=self._header(self.secrets))

    def render_by_project(self) -> dict[str, str]:
        """One manifest per project slug, each naming the secrets it needs (and the
        templates' file)."""
        return {
            name: dump_manifest(
                document, header=self._header([s for s in self.secrets if s.project == name])
            )
            for name, document in self.documents_by_project().items()
        }

    def _header(self, secrets: Sequence[SecretInput]) -> list[str]:
        return header_lines(pinned_ids=self.options.pin_ids, secrets=secrets)


def build_export(
    projects: Sequence[ExportedProject], options: ExportOptions = _DEFAULT_OPTIONS
) -> Export:
    names = SecretNames()
    notes = ExportNotes()
    entries = {}
    for project in projects:
        try:
            entries[project.slug] = project_entry(project, names, options, notes)
        except (KeyError, TypeError, AttributeError, ValueError, UnexpectedResponse) as error:
            # The client checks envelopes, not every member: a response missing one is
            # reported with the project it belongs to, never as a traceback.
            raise cannot_read(f'project "{project.slug}"', error) from None
    templates: dict[str, Any] = {}
    if options.templates:
        templates, entries = factor_templates(entries)
    return Export(entries, names.inputs, options, templates, list(notes))


async def export_workspace(
    client: Platform, project_slugs: Sequence[str] = (), options: ExportOptions = _DEFAULT_OPTIONS
) -> Export:
    return build_export(await read_workspace(client, project_slugs), options)
