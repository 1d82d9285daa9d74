"""Every file in invalid/ is refused with exactly the problems its header lists.

Header lines: `# expect: LINE:COLUMN: message fragment`, one per expected problem.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reconciler.manifest.validate import ManifestInvalid, load_manifest

CORPUS = Path(__file__).parent / "invalid"
EXPECT = re.compile(r"^# expect: (\d+):(\d+): (.+)$", re.MULTILINE)
CASES = sorted(CORPUS.glob("*.yaml"))


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_invalid_manifest_reports_exact_place_and_message(path: Path) -> None:
    expected = [
        (int(line), int(col), fragment) for line, col, fragment in EXPECT.findall(path.read_text())
    ]
    assert expected, f"{path.name} has no `# expect:` header"

    with pytest.raises(ManifestInvalid) as caught:
        load_manifest([path])

    problems = caught.value.problems
    found = [(p.line, p.column, p.message) for p in problems]
    assert len(problems) == len(expected), "\n".join(map(str, problems))
    for line, column, fragment in expected:
        assert any(
            (p_line, p_col) == (line, column) and fragment in message
            for p_line, p_col, message in found
        ), f"expected {line}:{column}: {fragment!r}; got:\n" + "\n".join(map(str, problems))
    assert all(p.file == str(path) for p in problems)
