"""The tested versions CI installs (.ci/constraints.txt): one exact pin for every dependency the
project declares, inside the range pyproject.toml gives users, and .ci/run installs them (`bash .ci/newest` runs
the same suite against the newest releases, so this file says nothing of the environment)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / ".ci" / "constraints.txt"


def pins() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"{line!r}: a constraint is an exact pin (name==version)"
            found[canonicalize_name(name)] = version
    return found


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    return [Requirement(line) for line in lines]


def test_every_declared_dependency_is_pinned_inside_its_range() -> None:
    pinned = pins()
    for requirement in declared():
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement.name} has no tested version in .ci/constraints.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{requirement.name}=={pinned[name]} is outside pyproject.toml's {requirement}"
        )


def test_ci_installs_the_pinned_versions() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -c .ci/constraints.txt -e '.[test]'" in script
