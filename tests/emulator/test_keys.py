"""The keys file (`--keys`): format and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.emulator.auth import ALL_PERMISSIONS, KeysFileError, load_keys


def test_loads_keys_with_wildcard_and_id_grants(tmp_path: Path) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text(
        "keys:\n"
        "  - key: ci\n"
        "    permissions: [project.*.read_project, environment.env_abc12345.read_domain]\n"
        "  - key: empty\n"
    )
    ci, empty = load_keys(path)
    assert ci.allows("project", "read_project", "proj_x")
    assert ci.allows("environment", "read_domain", "env_abc12345")
    assert not ci.allows("environment", "read_domain", "env_other")
    assert not ci.allows("environment", "read_domain")
    assert empty.permissions == [] and "ci" not in repr(ci)


def test_every_permission_of_the_spec_is_known() -> None:
    assert len(ALL_PERMISSIONS) == 26
    assert "environment.*.rollback_deployment" in ALL_PERMISSIONS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("keys: [", "keys.yaml:1:"),
        ("keys: []", "non-empty list"),
        ("other: 1", "non-empty list"),
        ("keys: [{key: ''}]", "keys[0].key"),
        ("keys: [{key: a}, {key: a}]", "duplicate"),
        ("keys: [{key: a, permissions: [project.*.fly]}]", "keys[0].permissions[0]"),
        ("keys: [{key: a, permissions: [cluster.*.read]}]", "not a permission"),
        ("keys: [{key: a, permissions: project.*.read_project}]", "must be a list"),
        ("keys: [{key: a, role: admin}]", "keys[0]"),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text(text)
    with pytest.raises(KeysFileError, match=message.replace("[", r"\[").replace("*", r"\*")):
        load_keys(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(KeysFileError, match="cannot read"):
        load_keys(tmp_path / "absent.yaml")
