"""Apply's pre-write secret check refuses a value longer than the platform stores."""

from __future__ import annotations

import pytest

from reconciler.apply import check_safety
from reconciler.errors import ApplyRefused
from reconciler.manifest.model import MAX_VALUE_CHARS
from reconciler.plan.secrets import resolve_ref
from tests.engine.apply_plans import plan_of, secret, variables


def test_a_too_long_secret_is_refused_naming_address_source_length_and_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LONG_TOKEN", "t0ken-" * 3000)  # 18000 characters
    monkeypatch.setenv("FINE_TOKEN", "fine")
    plan = plan_of(
        variables("s", "a", "production", ["TOKEN"], value=secret("LONG_TOKEN"))
        + variables("s", "a", "preview", ["TOKEN"], value=secret("FINE_TOKEN"))
    )
    with pytest.raises(ApplyRefused) as refused:
        check_safety(plan, max_deletes=10, allow_replace=False, resolve=resolve_ref)
    message = str(refused.value)
    assert message.startswith("secrets the plan must send cannot be sent, nothing was applied")
    assert (
        "variable.s/a/production/TOKEN: secret fromEnv:LONG_TOKEN has 18000 characters; "
        f"a variable value may have at most {MAX_VALUE_CHARS}"
    ) in message
    assert "preview" not in message
    assert "t0ken" not in message


def test_missing_and_too_long_secrets_are_listed_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LONG_TOKEN", "x" * (MAX_VALUE_CHARS + 1))
    monkeypatch.delenv("UNSET_TOKEN", raising=False)
    plan = plan_of(
        variables("s", "a", "production", ["LONG"], value=secret("LONG_TOKEN"))
        + variables("s", "a", "preview", ["GONE"], value=secret("UNSET_TOKEN"))
    )
    with pytest.raises(ApplyRefused) as refused:
        check_safety(plan, max_deletes=10, allow_replace=False, resolve=resolve_ref)
    message = str(refused.value)
    assert "variable.s/a/production/LONG: secret fromEnv:LONG_TOKEN has 16385" in message
    assert "variable.s/a/preview/GONE: the environment variable UNSET_TOKEN is not set" in message
