"""The API explains itself: a root listing every endpoint, the schema as YAML or JSON, Swagger UI
and ReDoc from local files, and JSON errors whatever the client asks for."""

import json

import pytest
from django.test import Client

from benchforge.apidocs import EMPTY_STYLE_HASH, REDOC_CSP
from benchforge.security import DEFAULT_CSP, csp_header

pytestmark = pytest.mark.django_db

ACCEPTS = [
    None,
    "*/*",
    "text/html",
    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "application/yaml",
    "application/xml",
]


@pytest.fixture
def researcher(make_user, benchmark):
    return make_user("researcher", "ross", benchmarks=[benchmark])


def _get(client, url, accept):
    return client.get(url, **({"HTTP_ACCEPT": accept} if accept else {}))


@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("url", ["/api/v1/", "/api/v1/me/", "/api/schema/", "/api/v1/benchmarks/demo/items/"])
def test_anonymous_requests_get_a_json_401_whatever_they_accept(url, accept):
    response = _get(Client(), url, accept)
    assert response.status_code == 401
    assert response["Content-Type"].startswith("application/json")
    assert "credentials" in response.json()["detail"].lower()


@pytest.mark.parametrize("accept", ACCEPTS)
def test_errors_of_signed_in_clients_are_json_too(client_for, researcher, accept):
    client = client_for(researcher)
    for url, status in [("/api/v1/no-such-endpoint/", 404), ("/api/v1/benchmarks/nope/", 404), ("/api/v1/jobs/999999/", 404)]:
        response = _get(client, url, accept)
        assert response.status_code == status, url
        assert response["Content-Type"].startswith("application/json"), (url, accept)
        assert response.json()["detail"]


@pytest.mark.parametrize("accept", ACCEPTS)
def test_successful_answers_are_json_even_when_a_browser_asks_for_html(client_for, researcher, accept):
    response = _get(client_for(researcher), "/api/v1/me/", accept)
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert response.json() == {"username": "ross", "role": "researcher"}


def test_the_root_lists_every_endpoint_with_methods_descriptions_and_links(client_for, researcher):
    body = _get(client_for(researcher), "/api/v1/", None).json()
    rows = {row["path"]: row for row in body["endpoints"]}
    assert rows["/api/v1/benchmarks/"]["methods"] == ["GET", "POST"]
    assert rows["/api/v1/benchmarks/"]["url"] == "http://testserver/api/v1/benchmarks/"
    assert rows["/api/v1/auth/token/"]["methods"] == ["POST"]
    assert rows["/api/v1/auth/token/"]["description"].startswith("POST username and password")
    submit = rows["/api/v1/benchmarks/<slug:slug>/items/<id:pk>/submit/"]
    assert submit["methods"] == ["POST"] and "url" not in submit  # a path with parameters has no link
    # Read from the URL config: every /api/v1/ route is there (the other apps' too).
    assert {"/api/v1/jobs/", "/api/v1/llm/endpoints/", "/api/v1/known-sets/", "/api/v1/assignments/"} <= set(rows)
    assert all(row["description"] and row["methods"] for row in rows.values())
    assert body["docs"]["swagger_ui"].endswith("/api/docs/")


def test_every_link_of_the_root_answers_json(client_for, researcher):
    client = client_for(researcher)
    links = [row["url"] for row in client.get("/api/v1/").json()["endpoints"] if "url" in row and "GET" in row["methods"]]
    assert len(links) >= 5
    answered = []
    for url in links:
        response = client.get(url)
        assert response["Content-Type"].startswith("application/json"), url
        # The LLM endpoints list says, as a 400, that no models file is configured in the tests.
        assert response.status_code == 200 or (response.status_code == 400 and response.json()["detail"]), url
        answered.append(response.status_code)
    assert answered.count(200) >= len(links) - 1


def test_the_schema_is_yaml_by_default_and_json_on_request(client_for, researcher):
    client = client_for(researcher)
    default = client.get("/api/schema/")
    assert default.status_code == 200 and default["Content-Type"].startswith("application/vnd.oai.openapi;")
    assert default.content.startswith(b"openapi: 3")
    for response in (client.get("/api/schema/?format=json"), client.get("/api/schema/", HTTP_ACCEPT="application/json")):
        assert response.status_code == 200 and "json" in response["Content-Type"]
        schema = json.loads(response.content)
        assert "/api/v1/" in schema["paths"] and "/api/v1/me/" in schema["paths"]


def test_docs_pages_load_their_assets_from_the_app(client_for, researcher):
    client = client_for(researcher)
    for url, bundle in [
        ("/api/docs/", "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"),
        ("/api/docs/redoc/", "/static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
    ]:
        response = client.get(url)
        html = response.content.decode()
        assert response.status_code == 200 and bundle in html
        assert "https://" not in html and "http://" not in html.replace('xmlns="http://', "")
        assert "<style" not in html and "<script>" not in html


def test_docs_pages_send_anonymous_visitors_to_the_login_page():
    response = Client().get("/api/docs/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_only_redoc_relaxes_the_csp_and_by_exactly_what_it_needs(client_for, researcher):
    client = client_for(researcher)
    assert client.get("/api/docs/")["Content-Security-Policy"] == csp_header(DEFAULT_CSP)
    assert client.get("/api/v1/")["Content-Security-Policy"] == csp_header(DEFAULT_CSP)
    redoc = client.get("/api/docs/redoc/")["Content-Security-Policy"]
    assert redoc == csp_header(REDOC_CSP)
    differences = {k: v for k, v in REDOC_CSP.items() if DEFAULT_CSP.get(k) != v}
    # The hash of an empty <style> (no other inline style) and a blob: worker; nothing else.
    assert differences == {"style-src": f"'self' {EMPTY_STYLE_HASH}", "worker-src": "blob:"}
    assert EMPTY_STYLE_HASH == "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"


def test_favicon_is_served():
    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("benchforge/favicon.ico")
