"""The orders a plan and its apply follow, in one place.

`ReadAt`: where a kind's live state is read, which is also the depth of the `Location` its
`read` is given (a project reads itself; apps are listed per project; settings are read per app,
both environments at once; an environment kind per environment, or once per project and shared).

`ApplyPhase`: within one environment, the order of the calls of the kinds (lower first). A
domain moving between environments is deleted before it is created; settings come before the
variables and policies a deployment reads with them; removals of variables after their sets.
"""

from __future__ import annotations

import enum


class ReadAt(enum.IntEnum):
    PROJECT = 1
    APP = 2
    ENVIRONMENT = 3


class ApplyPhase(enum.IntEnum):
    DOMAIN_DELETIONS = 0
    DOMAIN_CREATIONS = 1
    SETTINGS = 2
    VARIABLE_SETS = 3
    VARIABLE_REMOVALS = 4
    POLICIES = 5
