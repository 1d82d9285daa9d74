"""A command that refuses ends with its exit code, never a signal, however early it stops.

`plan` and `apply` against an `https://` platform start loading the TLS certificates on another
thread before they read the manifest or the saved plan (reconciler/platform/transport.py). A
refusal that came before the load was done (a plan file missing or edited) used to exit while
OpenSSL was still parsing the bundle: OpenSSL's exit handler freed what the load was using,
and from one such run in two to one in twenty (with the machine's load) printed the right
message, then died of SIGSEGV (139) or SIGABRT (134). `http://` platforms (the emulator)
loaded the certificates too then, and crashed alike; they load none now.

The race is the scheduler's, so each refusal runs many times, as real processes two at a time
(both threads of a run need a CPU at once for the crash) against the emulator on loopback;
every run must exit 1 with its message. `https://` names the emulator's port as a TLS platform:
the refusal comes before any connection.

Where the certificates are slow to load (a stalled network mount, here a FIFO nothing writes
to yet), the refusal's exit waits for them, then exits with its own code.
"""

from __future__ import annotations

import errno
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import certifi
import pytest

from tests.e2e.processes import CliProcess, run, wait_until
from tests.fixtures.cli import platform_env, run_cli, shop_manifest, write_manifest

RUNS = 12  # per case: before the fix, at least one of them crashed in most of the tries
AT_ONCE = 2
MANIFEST = shop_manifest(
    """\
    web:
      name: Web
      oci: {image: ghcr.io/acme/web:1.0}
    """
)


def _refused_every_time(emulator: Any, scheme: str, planfile: Path, message: str) -> None:
    env = platform_env(emulator)
    env["RECONCILER_BASE_URL"] = emulator.base_url.replace("http://", f"{scheme}://")
    with ThreadPoolExecutor(AT_ONCE) as pool:
        results = list(pool.map(lambda _: run(["apply", str(planfile)], env=env), range(RUNS)))
    codes = [result.exit_code for result in results]
    assert codes == [1] * RUNS, f"exit codes {codes}; a negative one is the signal that ended it"
    for result in results:
        assert message in result.stderr, result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_missing_plan_file_is_refused_with_exit_1_every_time(
    emulator: Any, tmp_path: Path, scheme: str
) -> None:
    missing = tmp_path / "missing.json"
    _refused_every_time(emulator, scheme, missing, f"plan file {missing} does not exist")


def test_an_edited_plan_file_is_refused_with_exit_1_every_time(
    emulator: Any, tmp_path: Path
) -> None:
    """Over https://, where the load is started (over http:// it is the missing file's case)."""
    planfile = tmp_path / "plan.json"
    manifest = write_manifest(tmp_path, MANIFEST)
    saved = run_cli(
        ["plan", "-f", str(manifest), "--out", str(planfile)], env=platform_env(emulator)
    )
    assert saved.exit_code == 0, saved.output
    document = json.loads(planfile.read_text())
    document["manifest_files"] = [str(tmp_path / "other.yaml")]  # the checksum no longer matches
    planfile.write_text(json.dumps(document))
    _refused_every_time(emulator, "https", planfile, "was modified after it was saved")


def test_a_refusal_exits_with_its_code_once_a_slow_load_of_the_certificates_ends(
    emulator: Any, tmp_path: Path
) -> None:
    bundle = tmp_path / "stalled.pem"
    os.mkfifo(bundle)  # opening it to read blocks until a writer comes, as a stalled mount does
    env = platform_env(emulator)
    env["RECONCILER_BASE_URL"] = emulator.base_url.replace("http://", "https://")
    env["SSL_CERT_FILE"] = str(bundle)
    missing = tmp_path / "missing.json"
    with CliProcess(["apply", str(missing)], env=env) as refusing:
        refusing.wait_for_stderr(f"plan file {missing} does not exist")
        writer = _writer_once_read(bundle, refusing)
        left = Path(certifi.where()).read_bytes()
        try:  # the load goes on, and the exit after it
            while left:
                left = left[os.write(writer, left) :]
        except BrokenPipeError:
            pytest.fail(f"exited while its certificates were loading: {refusing.finish()}")
        finally:
            os.close(writer)
        finished = refusing.finish()
    assert finished.exit_code == 1, finished.output
    assert "Traceback" not in finished.output


def _writer_once_read(fifo: Path, process: CliProcess) -> int:
    """The FIFO's write end, opened once the load has opened it to read (polled: a FIFO tells
    nothing else); fails if the process ended first."""
    opened: list[int] = []

    def reader_there() -> bool:
        try:
            opened.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as error:
            if error.errno != errno.ENXIO:  # ENXIO: no reader (yet, or any more)
                raise
            return process.popen.poll() is not None
        return True

    wait_until(reader_there, "the certificates' load opening the bundle")
    assert opened, f"exited with {process.finish().exit_code} before its load read the bundle"
    os.set_blocking(opened[0], True)
    return opened[0]
