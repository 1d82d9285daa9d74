"""Rewrite the generated parts of schemas/manifest.schema.json (which the package ships through
its reconciler/schemas link): the settings' members from their declaration and the platform's
spec, `appDefaults` and templates from `settings`:
`.venv/bin/python -m tests.manifest.regenerate_schema`.

reconciler/manifest/schema_settings.py and schema_derived.py say how;
tests/manifest/test_schema.py fails while the file is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reconciler.manifest.schema_derived import render, with_derived
from reconciler.platform.api_document import api_document

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "manifest.schema.json"


def main() -> int:
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    updated = render(with_derived(json.loads(text), api_document()))
    if updated != text:
        SCHEMA_FILE.write_text(updated, encoding="utf-8")
        print(f"rewrote {SCHEMA_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
