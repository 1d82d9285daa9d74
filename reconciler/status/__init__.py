"""`reconciler status`: what runs, per environment of the manifest (the deployments serving
it, its domains), read the way the planner reads: rendered by `reconciler.report.status`."""

from __future__ import annotations

from reconciler.status.read import (
    ATTACHED_ELSEWHERE,
    NOT_CREATED,
    DeploymentInfo,
    DnsRecordInfo,
    DomainInfo,
    EnvironmentStatus,
    StatusReport,
    gather_status,
)

__all__ = [
    "ATTACHED_ELSEWHERE",
    "NOT_CREATED",
    "DeploymentInfo",
    "DnsRecordInfo",
    "DomainInfo",
    "EnvironmentStatus",
    "StatusReport",
    "gather_status",
]
