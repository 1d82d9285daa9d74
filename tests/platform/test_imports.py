"""What calling the platform costs at start-up: the HTTP client imports httpx without httpx's
own command-line client (rich's console, progress bar and syntax highlighter, pygments'
lexers), which no command runs."""

from __future__ import annotations

import json
import subprocess
import sys

LOADED = (
    "import json, sys\n"
    "from reconciler.platform.connect import connect\n"
    "from reconciler.platform.client import PlatformClient\n"
    "loaded = [m for m, module in sys.modules.items() if module is not None]\n"
    "print(json.dumps(sorted(m for m in loaded if m.split('.')[0] in ('rich', 'pygments')"
    " or m == 'httpx._main')))\n"
)


def test_the_client_does_not_import_httpx_command_line_client() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOADED], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []


def test_httpx_still_offers_its_main_stand_in() -> None:
    """httpx's own fallback for a missing command-line client is what is left in its place."""
    code = "import reconciler.platform.client, httpx; print(callable(httpx.main))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"
