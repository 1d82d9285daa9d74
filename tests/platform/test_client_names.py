"""Error messages name objects by the slugs the client has seen, not by the IDs it sent."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from reconciler import errors
from reconciler.platform.client import PlatformClient
from reconciler.platform.messages import ObjectNames, describe_object
from reconciler.platform.operations import get_operation
from tests.platform.helpers import json_response, make_client, run

PROJECT = {"id": "proj_0123456789", "slug": "shop", "name": "Shop", "createdAt": 1}
APP = {"id": "app_0123456789", "slug": "web", "name": "Web", "createdAt": 1}
ON_APP = {"project": "proj_0123456789", "app": "app_0123456789"}


def _platform(failing: str, status: int, answers: dict[str, Any]) -> Any:
    """Answers `answers[operation]` (enveloped) and `status` for the `failing` operation."""

    def handle(request: httpx.Request) -> httpx.Response:
        operation = request.url.path.rsplit("/", 1)[1]
        if operation == failing:
            return httpx.Response(status)
        data = answers[operation]
        if isinstance(data, list):
            return json_response(200, {"data": data, "pagination": {"hasMore": False}})
        return json_response(200, {"data": data})

    return handle


async def _failure(client: PlatformClient, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """Send `calls` in order; the error the last one raises."""
    async with client:
        *before, (operation, body) = calls
        for earlier, earlier_body in before:
            if earlier.split(".")[1].startswith("list"):
                await client.list_all(earlier, earlier_body)
            else:
                await client.call(earlier, earlier_body)
        with pytest.raises(errors.ApiError) as caught:
            await client.call(operation, body)
        return caught.value


def test_a_403_after_reads_names_the_app_and_project_by_slug() -> None:
    handler = _platform(
        "environments.listEnvironments",
        403,
        {"projects.getProject": PROJECT, "apps.listApps": [APP]},
    )
    error = run(
        _failure(
            make_client(handler),
            [
                ("projects.getProject", {"project": "shop"}),
                ("apps.listApps", {"project": "proj_0123456789"}),
                ("environments.listEnvironments", ON_APP),
            ],
        )
    )
    assert str(error).startswith(
        'environments.listEnvironments: permission denied for app "web" in project "shop" (403)'
    )


def test_ids_the_client_has_not_seen_stay_ids() -> None:
    handler = _platform("apps.updateApp", 404, {})
    error = run(_failure(make_client(handler), [("apps.updateApp", ON_APP)]))
    assert str(error) == (
        'apps.updateApp: app "app_0123456789" in project "proj_0123456789" not found (404)'
    )


def test_created_objects_are_named_by_the_slug_they_were_created_with() -> None:
    handler = _platform(
        "environments.setEnvironmentVariables",
        400,
        {
            "projects.createProject": {"id": "proj_new0000001"},
            "apps.createApp": {"appId": "app_new00000001"},
        },
    )
    body = {"project": "proj_new0000001", "app": "app_new00000001", "environment": "preview"}
    error = run(
        _failure(
            make_client(handler),
            [
                ("projects.createProject", {"name": "Shop", "slug": "shop"}),
                ("apps.createApp", {"project": "proj_new0000001", "name": "W", "slug": "web"}),
                ("environments.setEnvironmentVariables", {**body, "variables": []}),
            ],
        )
    )
    assert 'invalid request for environment "preview" of app "web" in project "shop" (400)' in (
        str(error)
    )


def test_a_rename_is_named_by_the_slug_before_it() -> None:
    handler = _platform("projects.updateProject", 409, {"projects.getProject": PROJECT})
    error = run(
        _failure(
            make_client(handler),
            [
                ("projects.getProject", {"project": "shop"}),
                ("projects.updateProject", {"project": "proj_0123456789", "slug": "bookshelf"}),
            ],
        )
    )
    assert str(error).startswith(
        'projects.updateProject: project "shop" (new slug "bookshelf") conflicts with an '
        "existing one (409)"
    )


def test_a_successful_rename_updates_the_name() -> None:
    names = ObjectNames()
    names.learn("projects.getProject", {"project": "shop"}, PROJECT)
    names.learn(
        "projects.updateProject",
        {"project": "proj_0123456789", "slug": "shop-2"},
        {**PROJECT, "slug": "shop-2"},
    )
    assert names.slug_of("proj_0123456789") == "shop-2"


def test_environment_ids_are_named_by_their_slug() -> None:
    names = ObjectNames()
    names.learn("apps.listApps", {"project": "shop"}, [APP])
    names.learn("environments.listEnvironments", ON_APP, [{"id": "env_42", "slug": "preview"}])
    body = {**ON_APP, "environment": "env_42"}
    read = get_operation("environments.getEnvironment")
    described = describe_object(read, body, slug_of=names.slug_of)
    assert described == 'environment "preview" of app "web" in project "proj_0123456789"'


@pytest.mark.parametrize(
    "answer",
    [None, [], "text", {"id": 3, "slug": "x"}, {"id": "d_1"}, [{"slug": "web"}], {"appId": 1}],
)
def test_odd_answers_teach_nothing(answer: Any) -> None:
    names = ObjectNames()
    names.learn("apps.createApp", {"slug": "web"}, answer)
    names.learn("deployments.getDeployment", {"deploymentId": "d_1"}, answer)
    assert names.slug_of("d_1") is None
    assert names.slug_of("3") is None


def test_request_bodies_are_unchanged_by_naming() -> None:
    """The names only change messages: requests still carry the IDs the caller gave."""
    sent: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return json_response(200, {"data": PROJECT})

    async def twice() -> None:
        async with make_client(handle) as client:
            await client.call("projects.getProject", {"project": "shop"})
            await client.call("projects.getProject", {"project": "proj_0123456789"})

    run(twice())
    assert sent == [{"project": "shop"}, {"project": "proj_0123456789"}]
