"""Saved plan files: exact round trip, atomic 0600 writes, and clear errors for broken files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import PlanFileError, ReconcilerError
from reconciler.plan.changes import (
    ABSENT,
    Action,
    Call,
    Change,
    FieldDiff,
    Plan,
    SecretRef,
    VariableDetail,
)
from reconciler.plan.json_form import JsonArray
from reconciler.plan.planfile import checksum_of, load_plan
from reconciler.platform.operations import get_operation
from tests.engine.test_render import SENTINEL, sample_plan, secret_create
from tests.fixtures.planfiles import TEST_PLATFORM, write_plan

MANIFESTS = ("platform/shop.yaml", "platform/shared/base.yml")


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "plan.json"
    write_plan(sample_plan(), path, manifest_files=MANIFESTS)
    return path


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _rewrite(path: Path, document: dict[str, Any], *, reseal: bool = True) -> None:
    """Write an altered plan file; `reseal` recomputes the checksum, as a buggy writer would."""
    if reseal:
        document["checksum"] = checksum_of(document)
    path.write_text(json.dumps(document))


def _load_error(path: Path) -> str:
    with pytest.raises(PlanFileError) as caught:
        load_plan(path)
    assert isinstance(caught.value, ReconcilerError)
    return str(caught.value)


class TestRoundTrip:
    def test_load_gives_back_the_exact_plan(self, saved: Path) -> None:
        loaded = load_plan(saved)
        assert (loaded.plan, loaded.manifest_files) == (sample_plan(), MANIFESTS)
        assert (loaded.platform, loaded.signature) == (TEST_PLATFORM, None)
        # the objects are rebuilt, not left as dicts
        change = loaded.plan.changes[0]
        assert isinstance(change, Change)
        assert change.action is Action.CREATE
        assert str(change.position) == "platform/shop.yaml:4:5"

    def test_secret_refs_and_absent_come_back_as_themselves(self, saved: Path) -> None:
        plan = load_plan(saved).plan
        secret = next(c for c in plan.changes if c.address.endswith("STRIPE_KEY"))
        body_value = secret.calls[0].body["variables"][0]["value"]
        assert body_value == SecretRef("fromEnv:SHOP_STRIPE_KEY", "0123456789abcdef")
        assert secret.diffs[0].before is ABSENT
        settings = next(c for c in plan.changes if c.kind == "settings")
        assert settings.diffs[1].before is ABSENT
        assert settings.diffs[4].after is ABSENT
        assert settings.diffs[2].after is None  # an explicit clear is not absent

    def test_absent_nested_in_a_value_round_trips(self, tmp_path: Path) -> None:
        change = Change(
            address="settings.shop/web/production",
            kind="settings",
            action=Action.UPDATE,
            before={"runtime": {"port": ABSENT}},
            after=None,
            diffs=(FieldDiff("build.watchPaths", ABSENT, ("a", "b")),),
        )
        plan = Plan(changes=(change,))
        write_plan(plan, tmp_path / "p.json", manifest_files=())
        assert load_plan(tmp_path / "p.json").plan == plan

    def test_arrays_load_immutable_and_equal_to_lists_or_tuples(self, saved: Path) -> None:
        plan = load_plan(saved).plan
        policies = next(c for c in plan.changes if c.kind == "policies")
        sent = policies.calls[0].body["policies"]
        assert isinstance(sent, JsonArray)
        assert sent == list(sent) and sent == tuple(sent)
        assert list(sent) == sent  # the reflected comparison too
        assert sent != [*sent, {}]

    def test_file_is_sorted_json_with_kind_and_manifest_files(self, saved: Path) -> None:
        document = _read(saved)
        assert document["kind"] == "reconciler-plan"
        assert document["manifest_files"] == list(MANIFESTS)
        assert document["manifest_digest"] == "sha256:aaaa"
        assert document["checksum"].startswith("sha256:")
        assert list(document) == sorted(document)

    def test_secret_sources_round_trip_and_plans_without_them_still_load(self, saved: Path) -> None:
        document = _read(saved)
        sources = [c.get("secret_source") for c in document["changes"]]
        assert {"fromEnv": "SHOP_STRIPE_KEY"} in sources
        assert {"fromFile": "secrets/tls.key"} in sources
        for change in document["changes"]:  # as a 1.0 writer before the field existed
            change.pop("secret_source", None)
        _rewrite(saved, document)
        loaded = load_plan(saved).plan
        assert not any(isinstance(change.detail, VariableDetail) for change in loaded.changes)

    def test_readers_ignore_unknown_fields(self, saved: Path) -> None:
        document = _read(saved)
        document["added_by_a_newer_minor_version"] = {"x": 1}
        document["changes"][0]["future_field"] = True
        document["format_version"] = "1.7"
        _rewrite(saved, document)
        assert load_plan(saved).plan == sample_plan()


class TestWriting:
    def test_mode_is_0600(self, saved: Path) -> None:
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600

    def test_overwrite_is_atomic_and_leaves_no_temp_file(self, tmp_path: Path) -> None:
        path = tmp_path / "plan.json"
        path.write_text("old")
        os.chmod(path, 0o644)
        write_plan(sample_plan(), path, manifest_files=MANIFESTS)
        assert load_plan(path).plan == sample_plan()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]

    def test_missing_directory_is_a_clear_error(self, tmp_path: Path) -> None:
        with pytest.raises(PlanFileError, match=r"cannot write plan file .*nowhere"):
            write_plan(sample_plan(), tmp_path / "nowhere" / "plan.json", manifest_files=())

    def test_refuses_a_plain_writeonly_value_in_a_call(self, tmp_path: Path) -> None:
        leaky_call = Call(
            get_operation("environments.setEnvironmentVariables"),
            {"project": "shop", "app": "web", "environment": "production",
             "variables": [{"key": "STRIPE_KEY", "value": SENTINEL, "kind": "writeonly"}]},
            "environment.*.set_environment_variables",
        )  # fmt: skip
        leaky = Plan(changes=(Change(**{**secret_create().__dict__, "calls": (leaky_call,)}),))
        path = tmp_path / "plan.json"
        with pytest.raises(PlanFileError) as caught:
            write_plan(leaky, path, manifest_files=())
        assert "STRIPE_KEY" in str(caught.value) and "refusing" in str(caught.value)
        assert SENTINEL not in str(caught.value)
        assert not path.exists()

    def test_sentinel_secret_never_reaches_the_file(self, tmp_path: Path) -> None:
        """Present only as a SecretRef and in a sensitive diff, the value is not written."""
        change = Change(
            **{
                **secret_create().__dict__,
                "diffs": (FieldDiff("value", SENTINEL, SENTINEL + "2", sensitive=True),),
            }
        )
        path = tmp_path / "plan.json"
        write_plan(Plan(changes=(change,)), path, manifest_files=())
        text = path.read_text()
        assert SENTINEL not in text
        assert '"$secret"' in text
        assert load_plan(path).plan.changes[0].diffs[0].after == "(sensitive value)"


class TestBrokenFiles:
    def test_missing_file(self, tmp_path: Path) -> None:
        message = _load_error(tmp_path / "absent.json")
        assert "does not exist" in message and "reconciler plan --out" in message

    def test_directory(self, tmp_path: Path) -> None:
        assert "is a directory" in _load_error(tmp_path)

    def test_not_json(self, tmp_path: Path) -> None:
        path = tmp_path / "plan.json"
        path.write_text("kind: reconciler-plan\n")
        message = _load_error(path)
        assert "invalid JSON at line 1 column 1" in message

    def test_truncated(self, saved: Path) -> None:
        saved.write_text(saved.read_text()[:500])
        assert "it may be truncated" in _load_error(saved)

    def test_not_utf8(self, tmp_path: Path) -> None:
        path = tmp_path / "plan.json"
        path.write_bytes(b"\xff\xfe{}")
        assert "not UTF-8" in _load_error(path)

    def test_top_level_not_an_object(self, tmp_path: Path) -> None:
        path = tmp_path / "plan.json"
        path.write_text("[1, 2]")
        assert "not a JSON object" in _load_error(path)

    def test_other_json_document(self, tmp_path: Path) -> None:
        path = tmp_path / "plan.json"
        path.write_text('{"format_version": "1.0", "planned_values": {}}')
        assert "is not a reconciler plan file" in _load_error(path)

    @pytest.mark.parametrize("version", ["2.0", "0.9", 1])
    def test_wrong_format_version(self, saved: Path, version: object) -> None:
        document = _read(saved)
        document["format_version"] = version
        _rewrite(saved, document)
        message = _load_error(saved)
        assert "format" in message and "1.0" in message

    def test_edited_file_fails_its_checksum(self, saved: Path) -> None:
        document = _read(saved)
        document["changes"] = document["changes"][1:]  # someone drops the project create
        _rewrite(saved, document, reseal=False)
        assert "was modified after it was saved" in _load_error(saved)

    @pytest.mark.parametrize(
        ("mutate", "expected"),
        [
            (lambda d: d.pop("changes"), "changes: is missing"),
            (lambda d: d.update(changes={}), "changes: expected an array, got an object"),
            (lambda d: d["changes"][0].update(address=5), "changes[0].address: expected a string, got a number"),
            (lambda d: d["changes"][0].update(address="shop"), "changes[0].address: expected a project address"),
            (lambda d: d["changes"][0].update(address="app.shop/web"), "changes[0].address: expected a project address of 1 part"),
            (lambda d: d["changes"][1].update(action="explode"), "changes[1].action: must be one of"),
            (lambda d: d["changes"][1].update(actions=["create"]), "changes[1].actions: does not match action 'update'"),
            (lambda d: d["changes"][1].update(kind="database"), "changes[1].kind: must be one of"),
            (lambda d: d["changes"][0]["calls"][0].update(creates="yes"), "changes[0].calls[0].creates: expected a boolean"),
            (lambda d: d["changes"][0].update(position="shop.yaml"), 'changes[0].position: expected "file:line:column"'),
            (lambda d: d["changes"][3]["diffs"][0].pop("path"), "changes[3].diffs[0].path: is missing"),
            (lambda d: d["changes"][4]["calls"][0]["body"]["variables"][0]["value"]["$secret"].pop("source"), "a secret reference must be"),
            (lambda d: d["changes"][7]["policy_edits"][0].update(op="move"), "changes[7].policy_edits[0].op: must be one of"),
            (lambda d: d["changes"][7]["policy_edits"][0].update(before_index=-1), "before_index: must not be negative"),
            (lambda d: d["changes"][4].update(secret_source="fromEnv:X"), 'changes[4].secret_source: expected {"fromEnv": str} or {"fromFile": str}'),
            (lambda d: d["changes"][4].update(secret_source={"fromEnv": "X", "fromFile": "y"}), "changes[4].secret_source: expected"),
            (lambda d: d["changes"][4].update(secret_source={"fromVault": "X"}), "changes[4].secret_source: expected"),
            (lambda d: d["changes"][4].update(secret_source={"fromFile": 7}), "changes[4].secret_source.fromFile: expected a string, got a number"),
            # what only one kind's change has is refused on another's, not dropped
            (lambda d: d["changes"][3].update(secret_source={"fromEnv": "X"}), "changes[3].secret_source: is only in a variable change"),
            (lambda d: d["changes"][4].update(policy_edits=d["changes"][7]["policy_edits"]), "changes[4].policy_edits: must be empty but for a policies change"),
            (lambda d: d["changes"][4].update(policy_test_changes=[]), "changes[4].policy_test_changes: is only in a policies change"),
            (lambda d: d["changes"][7].update(secret_source={"fromEnv": "X"}), "changes[7].secret_source: is only in a variable change"),
            (lambda d: d["notes"][0].update(severity="fatal"), "notes[0].severity: must be one of"),
            (lambda d: d.update(max_deletes=True), "max_deletes: expected an integer, got a boolean"),
            (lambda d: d.update(permissions=["a", None]), "permissions[1]: expected a string, got null"),
            (lambda d: d.update(manifest_files="shop.yaml"), "manifest_files: expected an array of strings"),
            (lambda d: d.update(manifest_files=["shop.yaml", 1]), "manifest_files: expected an array of strings"),
            (lambda d: d["platform"]["projects"].update(shop=5), "platform.projects: expected an object of project IDs by slug"),
            (lambda d: d["changes"][0]["calls"][0]["body"].update(name={"$absent": True}), 'changes[0].calls[0].body: a call sends no "$absent" marker'),
            (lambda d: d["metadata"].update(mode={"$secret": {"source": "fromEnv:X", "fingerprint": None}}), "metadata: expected plain JSON"),
            (lambda d: d["summary"].update(destroy=0), "summary.destroy: does not match the changes listed"),
        ],
    )  # fmt: skip
    def test_wrong_shapes_name_the_path(self, saved: Path, mutate: Any, expected: str) -> None:
        document = _read(saved)
        mutate(document)
        _rewrite(saved, document)
        message = _load_error(saved)
        assert "is not a valid plan file" in message
        assert expected in message
        assert "reconciler plan --out" in message  # says what to do

    def test_errors_never_echo_values(self, saved: Path) -> None:
        document = _read(saved)
        document["changes"][0]["address"] = {"nested": SENTINEL}
        _rewrite(saved, document)
        assert SENTINEL not in _load_error(saved)
