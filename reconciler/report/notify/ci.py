"""Where a notification's reader finds the whole story: the CI run that posted it, read from
the variables GitHub Actions and GitLab CI set in every job. Outside those, there is none."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reconciler.escaping import clean

_URL = re.compile(r"https?://[^\s<>|&\"'`\\]+")
"""A link a Slack message can hold as is: nothing that would end `<url|label>` early."""
_TEXT_LIMIT = 200


@dataclass(frozen=True)
class RunLink:
    provider: str
    """`github` or `gitlab`."""
    url: str | None
    repository: str | None
    ref: str | None
    commit: str | None

    @property
    def label(self) -> str:
        """`GitHub Actions run` / `GitLab CI job`, for a link's text."""
        return "GitHub Actions run" if self.provider == "github" else "GitLab CI job"


def run_link(environ: Mapping[str, str]) -> RunLink | None:
    """The CI run this process belongs to, from its variables; None outside CI (or in one
    reconciler does not know: a generic body then has `run: null`)."""
    get = _reader(environ)
    if environ.get("GITHUB_ACTIONS") == "true" or get("GITHUB_RUN_ID"):
        server = get("GITHUB_SERVER_URL") or "https://github.com"
        repository, run_id = get("GITHUB_REPOSITORY"), get("GITHUB_RUN_ID")
        url = None
        if repository and run_id:
            url = f"{server.rstrip('/')}/{repository}/actions/runs/{run_id}"
            attempt = get("GITHUB_RUN_ATTEMPT")
            if attempt and attempt != "1":
                url += f"/attempts/{attempt}"
        return RunLink("github", _url(url), repository, get("GITHUB_REF_NAME"), get("GITHUB_SHA"))
    if environ.get("GITLAB_CI") == "true" or get("CI_PIPELINE_URL"):
        return RunLink(
            "gitlab",
            _url(get("CI_JOB_URL") or get("CI_PIPELINE_URL")),
            get("CI_PROJECT_PATH"),
            get("CI_COMMIT_REF_NAME"),
            get("CI_COMMIT_SHA"),
        )
    return None


def _reader(environ: Mapping[str, str]) -> Callable[[str], str | None]:
    def get(name: str) -> str | None:
        value = clean(environ.get(name, "").strip())[:_TEXT_LIMIT]
        return value or None

    return get


def _url(url: str | None) -> str | None:
    """`url` when it is a plain http(s) link, else None (a link is never made of odd text)."""
    return url if url is not None and _URL.fullmatch(url) else None
