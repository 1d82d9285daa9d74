"""Error statuses become errors a user can act on, whatever the error body looks like."""

from __future__ import annotations

import httpx
import pytest

from reconciler import errors
from reconciler.errors import ReconcilerError
from tests.platform.helpers import call_once, json_response, make_client, problem, run, scripted

APP_BODY = {"project": "shop", "app": "web"}


def fail(operation: str, body: dict, response: httpx.Response, **kw: object) -> errors.ApiError:
    with pytest.raises(errors.ApiError) as caught:
        run(call_once(make_client(scripted(response), **kw), operation, body))  # type: ignore[arg-type]
    return caught.value


@pytest.mark.parametrize(
    ("status", "cls", "operation"),
    [
        (400, errors.InvalidRequest, "apps.updateApp"),
        (401, errors.AuthenticationError, "apps.updateApp"),
        (403, errors.PermissionDenied, "apps.updateApp"),
        (404, errors.NotFound, "apps.updateApp"),
        (409, errors.Conflict, "apps.updateApp"),
        (412, errors.PreconditionFailed, "apps.deleteApp"),  # updateApp does not list 412
    ],
)
def test_statuses_map_to_error_classes_with_exit_code_1(
    status: int, cls: type, operation: str
) -> None:
    error = fail(operation, APP_BODY, httpx.Response(status))
    assert type(error) is cls
    assert isinstance(error, ReconcilerError)
    assert error.exit_code == 1
    assert error.operation == operation
    assert error.status == status
    assert error.detail is None
    assert not error.ambiguous


def test_not_found_names_the_object_from_the_request() -> None:
    error = fail("apps.getApp", APP_BODY, httpx.Response(404))
    assert str(error) == 'apps.getApp: app "web" in project "shop" not found (404)'


@pytest.mark.parametrize(
    ("operation", "body", "expected"),
    [
        ("projects.getProject", {"project": "shop"}, 'project "shop" not found'),
        (
            "environments.getEnvironment",
            {"project": "shop", "app": "web", "environment": "preview"},
            'environment "preview" of app "web" in project "shop" not found',
        ),
        ("deployments.getDeployment", {"deploymentId": "d_42"}, 'deployment "d_42" not found'),
        (
            "domains.getDomain",
            {"domain": "shop.example.com"},
            'domain "shop.example.com" not found',
        ),
        # a create's 404 is about its parent
        ("apps.createApp", {"project": "shop", "name": "W", "slug": "web"}, 'project "shop" not'),
        (
            "domains.createDomain",
            {"project": "shop", "app": "web", "environment": "production", "domain": "a.example"},
            'environment "production" of app "web" in project "shop" not found',
        ),
    ],
)
def test_not_found_objects(operation: str, body: dict, expected: str) -> None:
    assert expected in str(fail(operation, body, httpx.Response(404)))


def test_problem_detail_is_shown() -> None:
    error = fail("apps.getApp", APP_BODY, problem(404, "No app with slug web"))
    assert (
        str(error)
        == 'apps.getApp: app "web" in project "shop" not found (404): No app with slug web'
    )
    assert error.detail == "No app with slug web"


@pytest.mark.parametrize(
    ("payload", "shown"),
    [
        ({"message": "bad slug"}, "bad slug"),
        ({"title": "Bad Request"}, "Bad Request"),
        ({"detail": "first", "message": "second"}, "first"),
        ({"detail": 42, "title": "fallback"}, "fallback"),
        ({"error": {"detail": "nested"}}, None),
        (["detail"], None),
        ("just a string", None),
    ],
)
def test_detail_is_taken_only_from_known_string_members(payload: object, shown: str | None) -> None:
    error = fail("apps.updateApp", APP_BODY, json_response(400, payload))
    assert error.detail == shown
    assert str(error).startswith(
        'apps.updateApp: invalid request for app "web" in project "shop" (400)'
    )
    if shown is None:
        assert str(error).endswith("(400)")


def test_non_json_error_bodies_show_nothing() -> None:
    error = fail("apps.getApp", APP_BODY, httpx.Response(404, text="<html>Not Found</html>"))
    assert str(error) == 'apps.getApp: app "web" in project "shop" not found (404)'


def test_long_details_are_truncated() -> None:
    error = fail("apps.getApp", APP_BODY, problem(400, "x" * 5000))
    assert error.detail is not None and len(error.detail) <= 500


def test_unauthenticated_with_a_key_says_invalid_and_names_the_variable() -> None:
    error = fail("projects.listProjects", {}, httpx.Response(401))
    assert (
        error.message == "projects.listProjects: the API key (RECONCILER_API_KEY) is invalid (401)"
    )
    assert "RECONCILER_API_KEY" in str(error.hint)


def test_a_401_shows_the_platform_s_words_whole_when_they_hold_no_key() -> None:
    """A placeholder such as `Bearer <key>` is no credential: the message keeps it whole."""
    answer = problem(401, "missing Authorization header; send Authorization: Bearer <key>")
    error = fail("projects.listProjects", {}, answer)
    assert error.message == (
        "projects.listProjects: the API key (RECONCILER_API_KEY) is invalid (401): "
        "missing Authorization header; send Authorization: Bearer <key>"
    )


def test_permission_denied_names_the_id_specific_permission_when_known() -> None:
    with pytest.raises(errors.PermissionDenied) as caught:
        run(
            call_once(
                make_client(scripted(httpx.Response(403))),
                "apps.updateApp",
                APP_BODY,
                object_id="app_123",
            )
        )
    message = str(caught.value)
    assert 'lacks "app.app_123.update_app"' in message
    assert '"app.*.update_app"' in message  # the hint offers the wildcard too


def test_permission_denied_names_the_wildcard_without_an_id() -> None:
    error = fail("domains.listDomains", {}, httpx.Response(403))
    assert 'lacks "environment.*.read_domain"' in str(error)


def test_conflict_names_the_object_and_the_uniqueness_rule() -> None:
    body = {"name": "Shop", "slug": "shop"}
    error = fail("projects.createProject", body, problem(409, "slug taken"))
    assert str(error).startswith(
        'projects.createProject: project "shop" conflicts with an existing one (409): slug taken'
    )
    assert error.hint == "project slugs are unique in the workspace"


def test_conflict_on_rename_shows_the_new_slug() -> None:
    error = fail("apps.updateApp", {**APP_BODY, "slug": "site"}, httpx.Response(409))
    assert 'app "web" in project "shop" (new slug "site") conflicts' in str(error)
    assert error.hint == "app slugs are unique in their project"


def test_domain_conflict_explains_one_environment_rule() -> None:
    body = {"project": "shop", "app": "web", "environment": "production", "domain": "a.example"}
    error = fail("domains.createDomain", body, httpx.Response(409))
    assert 'domain "a.example" conflicts' in str(error)
    assert "only one environment" in str(error.hint)


def test_precondition_on_delete_explains_delete_protection() -> None:
    error = fail("apps.deleteApp", APP_BODY, httpx.Response(412))
    assert str(error).startswith(
        'apps.deleteApp: app "web" in project "shop": delete protection is on (412)'
    )
    assert "deleteProtection: false" in str(error.hint)


def test_precondition_on_stop_explains_production_cannot_be_stopped() -> None:
    error = fail("deployments.stopDeployment", {"deploymentId": "d_1"}, httpx.Response(412))
    assert 'deployment "d_1"' in str(error)
    assert "preview" in str(error.hint)


@pytest.mark.parametrize("status", [301, 302, 405, 418])
def test_other_statuses_are_unexpected_with_a_short_preview(status: int) -> None:
    response = httpx.Response(status, text="<html>" + "y" * 1000 + "</html>")
    error = fail("apps.getApp", APP_BODY, response)
    assert type(error) is errors.UnexpectedResponse
    assert error.status == status
    assert (
        f"apps.getApp: unexpected response (HTTP {status}): a status the platform API does not "
        "answer to this operation: <html>yyy"
    ) in str(error)
    assert len(error.message) < 350


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"environment": "env_1"}, 'domains.listDomains: environment "env_1" not found (404)'),
        ({"app": "web"}, 'domains.listDomains: app "web" not found (404)'),
        ({"project": "shop", "app": "web"}, 'app "web" in project "shop" not found'),
        ({"search": "x"}, "domains.listDomains: the workspace not found (404)"),
    ],
)
def test_filters_name_only_what_the_request_sent(body: dict, expected: str) -> None:
    assert expected in str(fail("domains.listDomains", body, httpx.Response(404)))


def test_non_string_identifiers_are_shown_safely() -> None:
    error = fail("projects.getProject", {"project": 12345}, httpx.Response(404))
    assert str(error) == 'projects.getProject: project "12345" not found (404)'


@pytest.mark.parametrize(
    ("operation", "body", "needed"),
    [
        ("apps.getApp", {"project": "shop", "app": "app_77"}, "app.app_77.read_app"),
        ("apps.getApp", {"project": "shop", "app": "web"}, "app.*.read_app"),
        (
            "apps.createApp",
            {"project": "proj_5", "name": "W", "slug": "w"},
            "project.proj_5.create_app",
        ),
        ("projects.deleteProject", {"project": "proj_5"}, "project.proj_5.delete_project"),
        ("projects.deleteProject", {"project": "shop"}, "project.*.delete_project"),
        ("apps.listApps", {"project": "proj_5"}, "app.*.read_app"),
    ],
)
def test_permission_uses_an_id_the_request_already_names(
    operation: str, body: dict, needed: str
) -> None:
    assert f'lacks "{needed}"' in str(fail(operation, body, httpx.Response(403)))
