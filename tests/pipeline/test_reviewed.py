"""Reviewed equals applied: the pull request's plan publishes the digest of its calls; the merge
applies `-f ... --reviewed DIGEST_OR_FILE` only when the plan it makes again sends those calls.
Played as the two jobs would, against the emulator."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.plan.changes import Action, Call, Change, Plan, SecretRef
from reconciler.plan.review import Reviewed, calls_digest, differences, sent_calls
from reconciler.platform.operations import get_operation
from tests.fixtures.cli import Seed, shop_manifest, write_manifest
from tests.pipeline.test_saved_plan_binding import APPS as WEB

APPS = WEB + "      variables: {LOG_LEVEL: info}\n"
DIGEST = re.compile(r"calls:v1:(?:keyed|presence):[0-9a-f]{64}")


def pull_request_plan(cli: Any, manifest: Path) -> str:
    """The PR job: plan as markdown (the comment), which carries the digest."""
    result = cli("plan", "-f", str(manifest), "--format", "markdown")
    assert result.exit_code == 0, result.output
    [digest] = DIGEST.findall(result.stdout)
    document = json.loads(cli("plan", "-f", str(manifest), "--format", "json").stdout)
    assert document["calls_digest"] == digest
    return digest


def test_an_out_of_band_change_after_the_review_refuses_the_merge(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    """The PR plan said "set LOG_LEVEL"; before the merge someone adds a variable by hand. The
    merge's plan would delete it (prune): not reviewed, so refused before any write."""
    seed.project("shop")
    seed.app("shop", "web", oci={"image": "ghcr.io/acme/web:1.0"})
    manifest = write_manifest(tmp_path, shop_manifest(APPS))
    digest = pull_request_plan(cli, manifest)
    seed.variables(
        "shop", "web", "production", [{"key": "HOTFIX", "value": "1", "kind": "recoverable"}]
    )
    before = len(seed.writes())
    refused = cli("apply", "-f", str(manifest), "--auto-approve", "--reviewed", digest)
    assert refused.exit_code == 1, refused.output
    assert "the plan made now is not the plan that was reviewed" in refused.stderr
    assert f"reviewed {digest}" in refused.stderr
    assert seed.writes()[before:] == []


def test_no_change_since_the_review_applies(cli: Any, seed: Seed, tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, shop_manifest(APPS))
    digest = pull_request_plan(cli, manifest)
    applied = cli("apply", "-f", str(manifest), "--auto-approve", "--reviewed", digest)
    assert applied.exit_code == 0, applied.output
    assert "Apply complete! Resources: 4 added" in applied.stdout
    # applied, nothing more to send: the same digest is no obstacle to a second run
    again = cli("apply", "-f", str(manifest), "--auto-approve", "--reviewed", digest)
    assert again.exit_code == 0, again.output


def test_two_pull_requests_reviewed_apart_are_not_applied_together(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    """PR A and PR B were each planned against main without the other; main merges both. The
    merge job of B plans A+B, which is not what B's review saw."""
    manifest = write_manifest(tmp_path, shop_manifest(APPS))
    assert cli("apply", "-f", str(manifest), "--auto-approve").exit_code == 0
    only_b = write_manifest(tmp_path, shop_manifest(APPS.replace("info", "debug")), "b.yaml")
    reviewed_b = tmp_path / "b-plan.json"
    assert cli("plan", "-f", str(only_b), "--out", str(reviewed_b)).exit_code == 0
    both = APPS.replace("info", "debug").replace("1.0", "2.0")
    merged = write_manifest(tmp_path, shop_manifest(both), "merged.yaml")
    refused = cli("apply", "-f", str(merged), "--auto-approve", "--reviewed", str(reviewed_b))
    assert refused.exit_code == 1, refused.output
    assert "+ app.shop/web: planned now, not in the reviewed plan" in refused.stderr
    # the file form names each address; the variable B changed is the same call as reviewed
    assert "variable.shop/web/production/LOG_LEVEL" not in refused.stderr


def test_reviewed_is_only_for_apply_f_and_must_be_a_digest_or_a_plan(
    cli: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, shop_manifest(APPS))
    planfile = tmp_path / "p.json"
    assert cli("plan", "-f", str(manifest), "--out", str(planfile)).exit_code == 0
    with_file = cli("apply", str(planfile), "--reviewed", str(planfile))
    assert (
        with_file.exit_code == 1 and "--reviewed cannot be used with PLANFILE" in with_file.stderr
    )
    nonsense = cli("apply", "-f", str(manifest), "--auto-approve", "--reviewed", "sha256:1234")
    assert nonsense.exit_code == 1 and "neither a digest" in nonsense.stderr


# --- the digest itself ------------------------------------------------------------------------


def _plan(calls: list[tuple[str, str, dict[str, Any]]], mode: str = "presence") -> Plan:
    return Plan(
        changes=tuple(
            Change(
                address,
                "project",
                Action.UPDATE,
                {},
                {},
                calls=(Call(get_operation(op), body, "p"),),
            )
            for address, op, body in calls
        ),
        metadata={"fingerprint_mode": mode},
    )


bodies = st.dictionaries(st.sampled_from(["name", "slug", "x"]), st.text(max_size=5), max_size=3)
calls = st.lists(
    st.tuples(
        st.sampled_from(["project.a", "project.b", "project.c"]),
        st.just("projects.updateProject"),
        bodies,
    ),
    unique_by=lambda c: c[0],
    max_size=3,
)


@settings(max_examples=200)
@given(calls, calls)
def test_the_digest_is_equal_exactly_when_no_address_differs(
    one: list[Any], other: list[Any]
) -> None:
    first, second = _plan(one), _plan(other)
    same_digest = calls_digest(first) == calls_digest(second)
    lines = differences(
        sent_calls(first, fingerprints=False), sent_calls(second, fingerprints=False)
    )
    assert same_digest == (lines == [])
    assert Reviewed.of_plan(first).digest == calls_digest(first)


def test_a_secret_counts_by_its_reference_and_by_its_fingerprint_only_when_keyed() -> None:
    def with_secret(fingerprint: str | None, mode: str) -> Plan:
        body = {"variables": [{"key": "K", "value": SecretRef("fromEnv:K", fingerprint)}]}
        return _plan(
            [("variable.s/a/production/K", "environments.setEnvironmentVariables", body)], mode
        )

    assert calls_digest(with_secret("aa", "presence")) == calls_digest(
        with_secret("bb", "presence")
    )
    assert calls_digest(with_secret("aa", "keyed")) != calls_digest(with_secret("bb", "keyed"))
    assert calls_digest(with_secret("aa", "keyed")).startswith("calls:v1:keyed:")


@pytest.mark.parametrize("mode", ["presence", "keyed"])
def test_the_digest_names_its_mode(mode: str) -> None:
    assert DIGEST.fullmatch(calls_digest(_plan([], mode)))
