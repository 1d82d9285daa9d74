"""A request as the gateway sees it: method, path, query parameters, headers and client IP."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from reconciler.policy_tests.choices import split_target

Values = str | Sequence[str]
"""One value, or every value of a name given several times, in the order sent."""


@dataclass(frozen=True, init=False)
class Request:
    """One request. `path` is as sent, without the query string (`from_target` splits a whole
    target); `query` maps case-sensitive names to their values; `headers` are kept under
    lower-case names (header names are case-insensitive), the values of names that differ only
    in case joined in order; `client_ip` is the connection's address (None: unknown)."""

    method: str
    path: str
    query: Mapping[str, tuple[str, ...]]
    headers: Mapping[str, tuple[str, ...]]
    client_ip: str | None

    def __init__(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Values] | None = None,
        headers: Mapping[str, Values] | None = None,
        client_ip: str | None = None,
    ) -> None:
        if "?" in path:
            raise ValueError(
                f"path {path!r} holds a query string: pass the parameters as `query`, "
                "or build the request with Request.from_target"
            )
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "query", _value_lists(query or {}, _same))
        object.__setattr__(self, "headers", _value_lists(headers or {}, str.lower))
        object.__setattr__(self, "client_ip", client_ip)

    @classmethod
    def from_target(
        cls,
        method: str,
        target: str,
        *,
        headers: Mapping[str, Values] | None = None,
        client_ip: str | None = None,
    ) -> Request:
        """A request for a target such as `/search?q=a&page=2` (the query split as the gateway
        splits it, nothing decoded)."""
        path, query = split_target(target)
        return cls(method, path, query=query, headers=headers, client_ip=client_ip)


def _same(name: str) -> str:
    return name


def _value_lists(
    table: Mapping[str, Values], key: Callable[[str], str]
) -> dict[str, tuple[str, ...]]:
    merged: dict[str, tuple[str, ...]] = {}
    for name, values in table.items():
        listed = (values,) if isinstance(values, str) else tuple(values)
        if not all(isinstance(value, str) for value in listed):
            raise TypeError(f"the values of {name!r} must be strings")
        merged[key(name)] = merged.get(key(name), ()) + listed
    return merged
