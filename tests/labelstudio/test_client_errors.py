"""How the client (label-studio-sdk underneath) turns what goes wrong into LabelStudioError
messages a person can act on. No server: httpx's MockTransport answers, or a closed loopback port."""

import base64
import json
import time

import httpx
import pytest

from labelstudio.client import LabelStudioClient, LabelStudioError

URL = "http://ls.test:8080"
LEGACY = "a" * 40


def jwt(**claims) -> str:
    """An unsigned JWT with these claims (the SDK reads a token's claims without verifying them)."""

    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def client_answering(handler, token=LEGACY, **kwargs) -> tuple[LabelStudioClient, list[httpx.Request]]:
    """A client whose requests `handler(request) -> httpx.Response` answers; also the requests sent."""
    sent = []

    def record(request):
        sent.append(request)
        return handler(request)

    kwargs.setdefault("retries", 0)
    return LabelStudioClient(URL, token, token_env="LABEL_STUDIO_API_KEY", transport=httpx.MockTransport(record), **kwargs), sent


def failure(call, handler, **kwargs) -> tuple[LabelStudioError, list[httpx.Request]]:
    client, sent = client_answering(handler, **kwargs)
    with client, pytest.raises(LabelStudioError) as caught:
        call(client)
    return caught.value, sent


def reply(status, body=None, **kwargs):
    return lambda request: httpx.Response(status, json=body, **kwargs) if body is not None else httpx.Response(status, **kwargs)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_token_names_the_variable_to_fix(status):
    error, _ = failure(lambda c: c.check(), reply(status, {"detail": "Invalid token."}))
    assert error.code == "labelstudio_auth"
    assert error.message.startswith(f"Label Studio at {URL} refused the access token (HTTP {status}: Invalid token.)")
    assert "environment variable LABEL_STUDIO_API_KEY" in error.message and "personal access token" in error.message


def test_validation_errors_are_shown_with_what_was_being_done():
    body = {
        "status_code": 400,
        "detail": "Validation error",
        "validation_errors": {"title": ["Ensure this field has at least 3 characters."]},
    }
    error, _ = failure(lambda c: c.create_project(title="ab", label_config="<View/>"), reply(400, body))
    assert error.code == "labelstudio" and error.status == 502
    assert error.message == (
        "Label Studio answered HTTP 400 when creating the project 'ab': Validation error "
        "{'title': ['Ensure this field has at least 3 characters.']}"
    )


def test_a_missing_project_asks_whether_it_was_deleted():
    error, _ = failure(lambda c: c.get_project(7), reply(404, {"detail": "Not found."}))
    assert "has no such object (reading project 7: HTTP 404: Not found.)" in error.message
    assert "deleted in Label Studio" in error.message


def test_a_redirect_is_not_followed_and_says_which_url_to_use():
    error, sent = failure(lambda c: c.check(), reply(301, headers={"Location": "https://ls.test/api/projects/"}))
    assert len(sent) == 1  # never went to the other address
    assert error.code == "labelstudio_config"
    assert "redirected listing projects to https://ls.test/api/projects/ (HTTP 301)" in error.message


def test_a_server_that_is_not_label_studio_is_named():
    page = reply(200, content=b"<html><body>Welcome to nginx!</body></html>", headers={"Content-Type": "text/html"})
    error, _ = failure(lambda c: c.check(), page)
    assert "answered something benchforge cannot read" in error.message and f"Is {URL} a Label Studio server?" in error.message
    assert "Welcome to nginx!" in error.message

    wrong_shape = reply(200, {"tasks": "not a list"})
    error, _ = failure(lambda c: list(c.iter_tasks(3)), wrong_shape)
    assert f"Is {URL} a Label Studio server?" in error.message


def test_an_unreachable_server_is_a_clear_error():
    with LabelStudioClient("http://127.0.0.1:9", "token", timeout=2, retries=0) as client:
        with pytest.raises(LabelStudioError, match="Cannot reach Label Studio at http://127.0.0.1:9 .*Check the URL"):
            client.check()


def test_a_silent_server_times_out_with_the_timeout_in_the_message():
    def silent(request):
        raise httpx.ReadTimeout("timed out", request=request)

    error, _ = failure(lambda c: c.check(), silent, timeout=5)
    assert error.message.startswith(f"Label Studio at {URL} did not answer within 5 s (listing projects; ReadTimeout)")


def test_reads_are_retried_but_writes_are_not(monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # the SDK's backoff between tries
    error, sent = failure(lambda c: c.check(), reply(503, {"detail": "busy"}), retries=2)
    assert len(sent) == 3 and "HTTP 503 when listing projects: busy" in error.message
    # A retried import whose first try was stored after all would duplicate the tasks.
    error, sent = failure(lambda c: c.import_tasks(3, [{"data": {}}]), reply(503, {"detail": "busy"}), retries=2)
    assert len(sent) == 1 and "HTTP 503 when importing 1 tasks into project 3" in error.message
    error, sent = failure(lambda c: c.create_project(title="abc", label_config="<View/>"), reply(502, {}), retries=2)
    assert len(sent) == 1


def test_an_import_that_returns_too_few_ids_is_an_error():
    error, _ = failure(lambda c: c.import_tasks(3, [{"data": {}}, {"data": {}}]), reply(201, {"task_count": 2, "task_ids": [9]}))
    assert error.message == "Label Studio imported 2 tasks into project 3 but returned ids [9]."


def test_tasks_are_listed_page_by_page_until_the_server_says_there_are_no_more():
    pages = {1: [{"id": 1}, {"id": 2}], 2: [{"id": 3}]}

    def tasks(request):
        assert request.url.path == "/api/tasks/" and request.url.params["include"] == "id,meta"
        page = int(request.url.params["page"])
        if page not in pages:
            return httpx.Response(404, json={"detail": "Invalid page."})
        return httpx.Response(200, json={"tasks": pages[page], "total": 3})

    client, sent = client_answering(tasks)
    with client:
        assert [t["id"] for t in client.iter_tasks(5, include="id,meta")] == [1, 2, 3]
    assert [int(r.url.params["page"]) for r in sent] == [1, 2, 3]
    assert {r.url.params["project"] for r in sent} == {"5"} and {r.url.params["fields"] for r in sent} == {"task_only"}


def test_annotations_come_back_as_the_json_the_server_sent():
    annotation = {
        "id": 4,
        "result": [{"from_name": "verdict", "value": {"choices": ["OK"]}}],
        "updated_at": "2026-01-02T03:04:05.678901Z",
        "was_cancelled": False,
    }

    def tasks(request):
        if request.url.params["page"] != "1":
            return httpx.Response(404, json={"detail": "Invalid page."})
        return httpx.Response(200, json={"tasks": [{"id": 12, "meta": {}, "annotations": [annotation]}], "total": 1})

    client, sent = client_answering(tasks)
    with client:
        assert [t["annotations"] for t in client.iter_tasks_with_work(7)] == [[annotation]]
    # Every task's annotations in one paged listing, without the tasks' data (their inline images).
    assert sent[0].url.path == "/api/tasks/" and sent[0].url.params["fields"] == "all"
    assert "data" in sent[0].url.params["omit"].split(",")


def test_an_expired_personal_access_token_is_refused_before_any_request():
    with pytest.raises(LabelStudioError) as caught:
        client_answering(reply(200, {}), token=jwt(token_type="refresh", exp=int(time.time()) - 60))
    assert caught.value.code == "labelstudio_auth"
    assert "The Label Studio access token in LABEL_STUDIO_API_KEY cannot be used: API key has expired" in caught.value.message


def test_a_personal_access_token_the_server_will_not_refresh_is_a_token_error():
    refused = reply(401, {"detail": "Token is blacklisted", "code": "token_not_valid"})
    error, sent = failure(lambda c: c.check(), refused, token=jwt(token_type="refresh", exp=int(time.time()) + 3600))
    assert sent[0].url.path == "/api/token/refresh/"
    assert error.code == "labelstudio_auth" and "Token is blacklisted" in error.message


def test_a_path_prefix_is_kept_for_every_call_and_the_token_refresh():
    access = jwt(token_type="access", exp=int(time.time()) + 300)

    def server(request):
        if request.url.path.endswith("/api/token/refresh/"):
            return httpx.Response(200, json={"access": access})
        return httpx.Response(200, json={"results": [], "count": 0})

    sent = []
    transport = httpx.MockTransport(lambda request: sent.append(request) or server(request))
    with LabelStudioClient(
        "https://example.org/ls/", jwt(token_type="refresh", exp=int(time.time()) + 3600), transport=transport, retries=0
    ) as client:
        assert client.url == "https://example.org/ls"
        client.check()
    assert [r.url.path for r in sent] == ["/ls/api/token/refresh/", "/ls/api/projects/"]
    assert sent[1].headers["authorization"] == f"Bearer {access}"


@pytest.mark.parametrize(
    "url, token, problem",
    [
        ("", "t", "must start with http:// or https://"),
        ("localhost:8080", "t", "must start with http:// or https://"),
        ("ftp://ls.test", "t", "must start with http:// or https://"),
        (URL, "", "No Label Studio access token: set the environment variable LABEL_STUDIO_API_KEY"),
    ],
)
def test_missing_url_or_token_is_a_configuration_error(url, token, problem):
    with pytest.raises(LabelStudioError, match=problem) as caught:
        LabelStudioClient(url, token, token_env="LABEL_STUDIO_API_KEY")
    assert caught.value.code == "labelstudio_config"
