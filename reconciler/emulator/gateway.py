"""gateway.* operations: the ordered policy list of an environment.

Behaving like a newer platform (`store.newer`, EmulatorConfig.accept_unknown), a policy keeps
the members the spec does not list as they were sent (a kind of its own such as `rateLimit`,
a rule's or a match condition's members), and returns them on reads.
"""

from __future__ import annotations

from typing import Any

from reconciler.emulator.context import ENV_TARGET, LIST_FIELDS, Call, Operation, data, listing
from reconciler.emulator.errors import invalid, not_found
from reconciler.emulator.pagination import paginate
from reconciler.emulator.store import Obj
from reconciler.emulator.validation import Arr, Bool, Str, ip_or_cidr, re2_syntax
from reconciler.emulator.validation import Obj as ObjSpec

LOGGING_FLAGS = ("requestHeaders", "responseHeaders", "requestBody", "responseBody", "query")

STRING_MATCH = ObjSpec(
    fields={
        "exact": Str(min=1, max=1024),
        "prefix": Str(min=1, max=1024),
        "regex": Str(min=1, max=1024, extra=re2_syntax),
        "ignoreCase": Bool(),
    },
    exactly_one=(("exact", "prefix", "regex"),),
)
NAMED_MATCH = ObjSpec(
    fields={"name": Str(min=1, max=256), "present": Bool(only_true=True), "value": STRING_MATCH},
    required=("name",),
    exactly_one=(("present", "value"),),
)
IP_LIST = Arr(item=Str(min=1, max=64, extra=ip_or_cidr), min=1, max=100)
# each member of a condition holds the shape the spec gives for it:
# {"path": {"path": {...}}, "method": {"methods": [...]}, "header": {...}, ...}
CONDITION = ObjSpec(
    fields={
        "path": ObjSpec(fields={"path": STRING_MATCH}, required=("path",)),
        "method": ObjSpec(
            fields={"methods": Arr(item=Str(min=1, max=64), min=1)}, required=("methods",)
        ),
        "header": NAMED_MATCH,
        "queryParam": NAMED_MATCH,
        "remoteIp": ObjSpec(
            fields={"in": IP_LIST, "notIn": IP_LIST}, exactly_one=(("in", "notIn"),)
        ),
    },
    at_least_one_member=True,
)
MATCH = Arr(item=CONDITION, max=10, nullable=True)
FIREWALL = ObjSpec(fields={"action": Str(enum=("ACTION_DENY",))}, required=("action",))
LOGGING = ObjSpec(fields={name: Bool() for name in LOGGING_FLAGS})
POLICY = ObjSpec(
    fields={
        "name": Str(min=1, max=256),
        "enabled": Bool(),
        "match": MATCH,
        "firewall": FIREWALL,
        "logging": LOGGING,
    },
    required=("name", "enabled"),
    exactly_one=(("firewall", "logging"),),
)


KNOWN_MEMBERS = ("name", "enabled", "match", "firewall", "logging")
UPDATE_FIELDS = ("project", "app", "environment", "policyId")


def _rule(call: Call, policy: Obj, body: dict[str, Any]) -> None:
    """Set the firewall or logging rule (a policy holds exactly one)."""
    newer = call.store.newer is not None
    if body.get("firewall") is not None:
        policy.pop("logging", None)
        kept = dict(body["firewall"]) if newer else {}
        policy["firewall"] = {**kept, "action": body["firewall"]["action"]}
    elif body.get("logging") is not None:
        policy.pop("firewall", None)
        flags = {name: body["logging"].get(name, False) for name in LOGGING_FLAGS}
        policy["logging"] = {**body["logging"], **flags} if newer else flags


def _unknown_members(call: Call, policy: Obj, body: dict[str, Any], *skip: str) -> None:
    """A newer platform's policy keeps the members the spec does not list (its kind's rule)."""
    if call.store.newer is None:
        return
    for name, value in body.items():
        if name not in KNOWN_MEMBERS and name not in skip:
            policy[name] = value


def _build(call: Call, item: dict[str, Any]) -> Obj:
    policy: Obj = {
        "id": call.store.new_id("pol_"),
        "name": item["name"],
        "enabled": item["enabled"],
    }
    if item.get("match") is not None:
        policy["match"] = item["match"]
    _rule(call, policy, item)
    _unknown_members(call, policy, item)
    return policy


def list_policies(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    _, _, env = call.env_target(body, "read_policies")
    policies = call.store.policies.get(env["id"], [])
    order = {policy["id"]: index for index, policy in enumerate(policies)}
    page, pagination = paginate(
        "gateway.listPolicies",
        body,
        {"environment": env["id"], "ids": list(order)},
        policies,
        lambda p: (order[p["id"]],),
        key_size=1,
    )
    return listing(page, pagination)


def set_policies(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    _, _, env = call.env_target(body, "set_policies")
    call.store.policies[env["id"]] = [_build(call, item) for item in body["policies"]]
    call.touch()
    return data({})


def update_policy(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    if body.get("firewall") is not None and body.get("logging") is not None:
        raise invalid("firewall", "send either firewall or logging, not both")
    _, _, env = call.env_target(body, "update_policy")
    policies = call.store.policies.get(env["id"], [])
    policy = next((p for p in policies if p["id"] == body["policyId"]), None)
    if policy is None:
        raise not_found("policy", body["policyId"])
    for name in ("name", "enabled"):
        if name in body:
            policy[name] = body[name]
    if "match" in body:
        if body["match"] is None:
            policy.pop("match", None)
        else:
            policy["match"] = body["match"]
    _rule(call, policy, body)
    _unknown_members(call, policy, body, *UPDATE_FIELDS)
    call.touch()
    return data({})


_REQUIRED = ("project", "app", "environment")

OPERATIONS = {
    "gateway.listPolicies": Operation(
        list_policies, ObjSpec(fields={**ENV_TARGET, **LIST_FIELDS}, required=_REQUIRED), False
    ),
    "gateway.setPolicies": Operation(
        set_policies,
        ObjSpec(
            fields={**ENV_TARGET, "policies": Arr(item=POLICY, max=50)},
            required=(*_REQUIRED, "policies"),
        ),
        True,
    ),
    "gateway.updatePolicy": Operation(
        update_policy,
        ObjSpec(
            fields={
                **ENV_TARGET,
                "policyId": Str(min=1, max=512),
                "name": Str(min=1, max=256),
                "enabled": Bool(),
                "match": MATCH,
                "firewall": FIREWALL,
                "logging": LOGGING,
            },
            required=(*_REQUIRED, "policyId"),
        ),
        True,
    ),
}
