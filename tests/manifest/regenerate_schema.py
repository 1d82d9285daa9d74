"""Rewrite the derived definitions of schemas/manifest.schema.json (`appDefaults`, templates)
from the ones they are made of: `.venv/bin/python -m tests.manifest.regenerate_schema`.

reconciler/manifest/schema_derived.py says how; tests/manifest/test_schema.py fails while the
file is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reconciler.manifest.schema_derived import render, with_derived

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "manifest.schema.json"


def main() -> int:
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    updated = render(with_derived(json.loads(text)))
    if updated != text:
        SCHEMA_FILE.write_text(updated, encoding="utf-8")
        print(f"rewrote {SCHEMA_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
