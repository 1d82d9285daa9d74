"""Generated environment-variable names for write-only values, which export cannot read
back and writes as `fromEnv` references."""

from __future__ import annotations

import re
from dataclasses import dataclass

from reconciler.address import Address


@dataclass(frozen=True)
class SecretInput:
    """A write-only variable exported as `fromEnv: env_name`: its value must be provided."""

    env_name: str
    project: str
    app: str
    environment: str
    key: str

    @property
    def address(self) -> str:
        return str(Address.of("variable", self.project, self.app, self.environment, self.key))


class SecretNames:
    """Hands out unique environment-variable names like SHOP_WEB_PRODUCTION_STRIPE_KEY."""

    def __init__(self) -> None:
        self.inputs: list[SecretInput] = []
        self._taken: set[str] = set()

    def name_for(self, project: str, app: str, environment: str, key: str) -> str:
        base = re.sub(r"[^A-Z0-9]", "_", f"{project}_{app}_{environment}_{key}".upper())
        if base[0].isdigit():
            base = f"_{base}"  # an environment-variable name cannot start with a digit
        name, suffix = base, 2
        while name in self._taken:  # `a-b/c` and `a/b-c` would otherwise collide
            name, suffix = f"{base}_{suffix}", suffix + 1
        self._taken.add(name)
        self.inputs.append(SecretInput(name, project, app, environment, key))
        return name
