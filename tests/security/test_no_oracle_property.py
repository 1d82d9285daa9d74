"""The property a pull request's plan must have: nothing it prints depends on a secret value.

For any manifest (here: manifests full of guesses, one of them right), the plan in every format,
the saved plan, `validate` and every error read byte for byte the same whatever the values of
the secrets the manifest does not show. The one exception is the comparison a fingerprint key
makes at a write-only variable's own address ("no change" or "update"): with the key, the
saved plan and the JSON carry that variable's fingerprint, and nothing else differs.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.plan.secrets import fingerprint, with_fingerprint
from reconciler.sensitive import Secret
from tests.fixtures.cli import CliResult, Seed

Cli = Callable[..., CliResult]

FP_KEY = "a-fingerprint-key-for-the-oracle-property"

# Secret values as a CI holds them: any text but NUL (which no environment variable can hold)
# and lone surrogates (which no process receives), not empty (empty is "not set"), without
# whitespace at the ends (a file secret is read as written; an env one as well).
SECRET_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"),
    min_size=1,
    max_size=12,
).filter(lambda s: s.strip() == s and s.strip())
WORD = st.text(alphabet="abcdefxyz0123456789-_ ./:@`*[]!#\n", min_size=1, max_size=12)


@st.composite
def attacks(draw: Any) -> dict[str, Any]:
    """Two values of the secrets, and a manifest whose free text holds guesses: the first
    value itself, alone or inside other text, and decoys."""
    right = draw(SECRET_TEXT)
    wrong = draw(SECRET_TEXT.filter(lambda s: s != right and right not in s and s not in right))
    decoys = draw(st.lists(WORD, max_size=4))
    guesses = [right, f"{draw(WORD)}{right}{draw(WORD)}", f"1 to {right}", *decoys]
    guesses = draw(st.permutations(guesses))
    return {
        "right": right,
        "wrong": wrong,
        "guesses": guesses,
        "invalid": draw(st.booleans()),
        "waive": draw(st.booleans()),
    }


def _manifest(attack: dict[str, Any]) -> dict[str, Any]:
    guesses: list[str] = attack["guesses"]
    variables: dict[str, Any] = {
        "PIN": {"fromEnv": "CI_PIN"},
        "TLS": {"fromFile": "tls.key"},
    }
    for index, guess in enumerate(guesses):
        variables[f"PLAIN_{index}"] = guess
        variables[f"HIDDEN_{index}"] = {"value": guess, "kind": "writeonly", "description": guess}
        variables[f"NOTED_{index}"] = {"value": "x", "description": guess}
    if attack["invalid"]:  # errors quote what the manifest wrote: the guesses, in keys
        variables.update({f"BAD KEY {guess}": "x" for guess in guesses})
    environment: dict[str, Any] = {
        "runtime": {"healthcheck": {"method": "GET", "path": "/healthz"}},
        "variables": variables,
    }
    if attack["waive"]:
        environment["checks"] = {
            "production-delete-protection": {"off": True, "reason": " ".join(guesses)}
        }
    return {
        "version": 1,
        "projects": {
            "shop": {
                "name": guesses[0],
                "apps": {
                    "web": {
                        "name": guesses[-1],
                        "oci": {"image": "nginx:1.27"},
                        "environments": {"production": environment},
                    }
                },
            }
        },
    }


SECRET_KEYS = ("PIN", "TLS")
"""The variables whose values are the secrets (the others hold what the manifest wrote)."""
_MARKER = re.compile(r"\[fp2:[0-9a-f]{16}\]")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
"""When a plan was made (its JSON's metadata): the one thing two runs may differ in by nature."""


_KEYED_DIGEST = re.compile(r"calls:v1:keyed:[0-9a-f]{64}")


def _own_fingerprints_masked(value: Any) -> Any:
    """The plan's JSON with the fingerprints of the secrets at their own addresses masked: in
    their references (`$secret`) and in the descriptions their set calls send. Nothing else."""
    if isinstance(value, list):
        return [_own_fingerprints_masked(item) for item in value]
    if not isinstance(value, dict):
        return value
    masked = {key: _own_fingerprints_masked(item) for key, item in value.items()}
    reference = masked.get("$secret")
    if isinstance(reference, dict) and str(reference.get("source")).startswith(
        ("fromEnv:CI_PIN", "fromFile:")
    ):
        masked["$secret"] = {**reference, "fingerprint": "(own address)"}
    if masked.get("key") in SECRET_KEYS and isinstance(masked.get("description"), str):
        masked["description"] = _MARKER.sub("[fp2:(own address)]", masked["description"])
    return masked


def _outputs(cli: Cli, directory: Path, secret: str, *, fingerprint_key: bool) -> dict[str, str]:
    """Everything a plan job shows, with the secrets holding `secret`."""
    (directory / "tls.key").write_text(secret, encoding="utf-8")
    env = {"CI_PIN": secret, "RECONCILER_FINGERPRINT_KEY": FP_KEY if fingerprint_key else None}
    manifest = str(directory / "platform.yaml")
    shown: dict[str, str] = {}
    validated = cli("validate", "-f", manifest, env=env)
    shown["validate"] = f"{validated.exit_code}\n{validated.stdout}\n{validated.stderr}"
    for output_format in ("text", "json", "markdown", "sarif"):
        result = cli("plan", "-f", manifest, "--format", output_format, env=env)
        shown[output_format] = f"{result.exit_code}\n{result.stdout}\n{result.stderr}"
    saved = directory / "plan.json"
    saved.unlink(missing_ok=True)
    result = cli("plan", "-f", manifest, "--out", str(saved), env=env)
    shown["saved"] = saved.read_text() if saved.exists() else "(not saved)"
    if saved.exists() and not fingerprint_key:  # the checksum covers the time
        document = json.loads(shown["saved"])
        document.pop("checksum")
        shown["saved"] = json.dumps(document, indent=1)
    if fingerprint_key:  # the exception: the secrets' fingerprints at their own addresses
        code, _, rest = shown["json"].partition("\n")
        if code == "0":  # a plan: its JSON on stdout, then stderr
            out, _, err = rest.rpartition("\n}\n")
            document = _own_fingerprints_masked(json.loads(out + "\n}"))
            shown["json"] = f"{code}\n{json.dumps(document, indent=1)}\n{err}"
        if saved.exists():
            document = json.loads(shown["saved"])
            for name in ("checksum", "signature"):  # both cover the fingerprints
                document.pop(name, None)
            shown["saved"] = json.dumps(_own_fingerprints_masked(document), indent=1)
        # the digest of the calls covers their fingerprints (calls:v1:keyed:...), as the
        # checksum does: a hash of what is masked above, at the same addresses
        shown = {name: _KEYED_DIGEST.sub("calls:v1:keyed:(digest)", t) for name, t in shown.items()}
    return {name: _TIME.sub("(time)", text) for name, text in shown.items()}


def _seed(emulator: Any, attack: dict[str, Any]) -> None:
    """Live state the plan compares with: the secrets' variables already there (write-only,
    without a fingerprint), a write-only guess with the fingerprint of its own value, and a
    variable the manifest no longer lists (a deletion: the CAUTION box a guess could blank)."""
    emulator.reset()
    seed = Seed(emulator)
    seed.project("shop", "Shop")
    seed.app("shop", "web", oci={"image": "nginx:1.27"})
    guess = attack["guesses"][0]
    marked = with_fingerprint(
        guess,
        fingerprint(FP_KEY.encode(), "variable.shop/web/production/HIDDEN_0", Secret(guess)),
    )
    seed.variables(
        "shop",
        "web",
        "production",
        [
            {"key": "PIN", "value": "live", "kind": "writeonly"},
            {"key": "TLS", "value": "live", "kind": "writeonly"},
            {"key": "HIDDEN_0", "value": guess, "kind": "writeonly", "description": marked},
            {"key": "OLD", "value": "x", "kind": "recoverable"},
        ],
    )


def _check(cli: Cli, emulator: Any, attack: dict[str, Any], *, fingerprint_key: bool) -> None:
    _seed(emulator, attack)
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        (directory / ".git").mkdir()  # the repository fromFile stays in
        text = json.dumps(_manifest(attack), indent=1)
        (directory / "platform.yaml").write_text(text, encoding="utf-8")
        right = _outputs(cli, directory, attack["right"], fingerprint_key=fingerprint_key)
        wrong = _outputs(cli, directory, attack["wrong"], fingerprint_key=fingerprint_key)
    for name, shown in right.items():
        assert "[REDACTED]" not in shown, name
        assert shown == wrong[name], name


# each example runs validate and five plans twice against the shared emulator
_SLOW = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@settings(max_examples=12, suppress_health_check=_SLOW)
@given(attack=attacks())
def test_a_plan_without_the_fingerprint_key_shows_nothing_of_a_secret(
    cli: Cli, emulator: Any, attack: dict[str, Any]
) -> None:
    """What a pull request's plan job holds: secrets, and no fingerprint key."""
    _check(cli, emulator, attack, fingerprint_key=False)


@settings(max_examples=8, suppress_health_check=_SLOW)
@given(attack=attacks())
def test_a_plan_with_the_fingerprint_key_shows_only_the_fingerprint_at_its_address(
    cli: Cli, emulator: Any, attack: dict[str, Any]
) -> None:
    """With the key (GitLab hands every unprotected variable to merge-request pipelines), the
    secrets' own fingerprints are the only difference."""
    _check(cli, emulator, attack, fingerprint_key=True)
