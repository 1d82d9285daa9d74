"""Plain aligned tables, for what people copy (DNS records) and for output that is not a
terminal: apply's report and `status` write the same way."""

from __future__ import annotations

from collections.abc import Sequence

DNS_RECORD_HEADER = ("DOMAIN", "TYPE", "NAME", "VALUE", "TTL")


def aligned(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """The header and rows as lines, each column as wide as its widest cell, two spaces
    between columns, no trailing spaces."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
