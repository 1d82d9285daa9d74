"""`opaque:` blocks in manifests: what they hold reaches the model (and the API's bodies) as
written, deep-merged; `defaults` and templates merge them like any mapping; and the manifest's
idea of what is known at each place agrees with the platform's (reconciler/platform/shapes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.manifest.opaque import MANIFEST_ONLY, PLATFORM_ONLY
from reconciler.manifest.schema import manifest_schema
from reconciler.manifest.validate import load_manifest
from reconciler.platform.shapes import ENVIRONMENT, MATCH_ITEM, POLICY, REGION
from tests.fixtures.cli import write_manifest

MANIFEST = """\
version: 1
templates:
  gpu:
    runtime: {opaque: {gpu: {kind: a100, count: 1}}}
projects:
  shop:
    apps:
      web:
        oci: {image: ghcr.io/acme/web:1.0}
        extends: [gpu]
        defaults:
          opaque: {tier: gold}
        environments:
          production:
            opaque: {support: {level: 2}}
            runtime:
              port: 8080
              opaque: {gpu: {count: 2}, healthcheck: {grpcService: health}}
            build: {opaque: {cacheDir: .cache}}
            regions:
              - {name: fra, replicas: {min: 1, max: 2}, opaque: {zone: a, replicas: {burst: 3}}}
            policies:
              - name: limit
                enabled: true
                match:
                  - path: {path: {prefix: /api}}
                    opaque: {country: {in: [DE]}, path: {path: {caseFold: true}}}
                opaque: {rateLimit: {perMinute: 100}}
              - name: deny
                enabled: true
                firewall: {action: ACTION_DENY}
                opaque: {firewall: {statusCode: 429}}
              - name: challenge
                enabled: true
                opaque: {firewall: {action: ACTION_CHALLENGE}}
"""


@pytest.fixture
def production(tmp_path: Path):
    manifest = load_manifest([write_manifest(tmp_path, MANIFEST)])
    return manifest.projects[0].apps[0].environment("production")


def test_opaque_blocks_reach_the_model_merged_across_defaults_and_templates(production) -> None:
    assert dict(production.opaque) == {"tier": "gold", "support": {"level": 2}}
    assert production.runtime.opaque["gpu"] == {"kind": "a100", "count": 2}
    assert production.runtime.opaque["healthcheck"] == {"grpcService": "health"}
    assert dict(production.build.opaque) == {"cacheDir": ".cache"}
    assert production.regions[0].opaque["replicas"] == {"burst": 3}


def test_a_policy_sends_its_opaque_members_merged_into_what_it_knows(production) -> None:
    limit, deny, challenge = (p.to_api() for p in production.policies)
    assert limit == {
        "name": "limit",
        "enabled": True,
        "match": [
            {"path": {"path": {"prefix": "/api", "caseFold": True}}, "country": {"in": ["DE"]}}
        ],
        "rateLimit": {"perMinute": 100},
    }
    assert production.policies[0].rule_kind is None
    assert deny["firewall"] == {"action": "ACTION_DENY", "statusCode": 429}
    assert challenge["firewall"] == {"action": "ACTION_CHALLENGE"}


def _properties(name: str) -> set[str]:
    defs = manifest_schema()["$defs"]
    node = defs[name] if name in defs else defs["settings"]["properties"][name]
    return set(node["properties"]) - {"opaque"}


@pytest.mark.parametrize(
    ("place", "shape", "read_only"),
    [
        ("settings", ENVIRONMENT, {"createdAt", "updatedAt"}),
        ("runtime", ENVIRONMENT.fields["runtime"], set()),
        ("build", ENVIRONMENT.fields["build"], set()),
        ("region", REGION, set()),
        ("policy", POLICY, {"id"}),
        ("matchItem", MATCH_ITEM, set()),
    ],
)
def test_what_an_opaque_place_knows_is_what_the_platform_documents(
    place: str, shape, read_only: set[str]
) -> None:
    """The manifest's known members at each opaque place (its schema's properties, and the
    members it knows but never sets) are exactly the platform's documented ones."""
    known = _properties(place) - MANIFEST_ONLY.get(place, frozenset())
    known |= PLATFORM_ONLY.get(place, frozenset())
    assert known == set(shape.fields) - set(read_only)
