"""The lazy package faces (reconciler.platform, reconciler.policy_tests): a name loads its
module when first asked for, and not before."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

import reconciler.platform
import reconciler.policy_tests

ASK_ONE_NAME = """
import sys
import types
import reconciler.policy_tests as face
before = "reconciler.policy_tests.engine" in sys.modules
face.compile_policies
print(before, "reconciler.policy_tests.engine" in sys.modules)
"""


def test_a_name_loads_its_module_when_asked_for() -> None:
    done = subprocess.run(
        [sys.executable, "-c", ASK_ONE_NAME], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("face", [reconciler.platform, reconciler.policy_tests])
def test_every_name_resolves_and_is_listed(face: types.ModuleType) -> None:
    names = face.__all__
    assert names and set(names) <= set(dir(face))
    for name in names:
        assert getattr(face, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        reconciler.policy_tests.nothing  # noqa: B018
