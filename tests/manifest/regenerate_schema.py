"""Rewrite the generated parts of schemas/manifest.schema.json and its copy in the package
(reconciler/schemas): the settings' members from their declaration and the platform's spec,
`appDefaults` and templates from `settings`: `.venv/bin/python -m tests.manifest.regenerate_schema`.

reconciler/manifest/schema_settings.py and schema_derived.py say how;
tests/manifest/test_schema.py fails while a file is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reconciler.manifest.schema_derived import render, with_derived
from reconciler.platform.api_document import api_document

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "schemas" / "manifest.schema.json"
SCHEMA_FILES = (SCHEMA_FILE, ROOT / "reconciler" / "schemas" / "manifest.schema.json")


def regenerated() -> str:
    return render(with_derived(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), api_document()))


def main() -> int:
    updated = regenerated()
    for path in SCHEMA_FILES:
        if path.read_text(encoding="utf-8") != updated:
            path.write_text(updated, encoding="utf-8")
            print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
