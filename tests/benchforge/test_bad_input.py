"""Ordinary bad input gets a clear 400 (never a 500): deep JSON, NUL bytes, huge integers, odd
digits; and with DEBUG off the API answers every error, 404 and 500 included, as JSON."""

import pytest
from django.test import Client
from django.urls import path

from benchforge.urls import *  # noqa: F403 - the crash URLconf below extends the real one
from benchforge.urls import urlpatterns as real_urlpatterns
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db
HUGE = 10**40


def _crash(request):
    raise RuntimeError("boom")


urlpatterns = [path("api/v1/crash/", _crash), path("crash/", _crash), *real_urlpatterns]


def _detail(response) -> str:
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return response.json()["detail"]


def test_deeply_nested_json_is_a_400(api_for, annotator, benchmark):
    api = api_for(annotator)
    url = f"/api/v1/benchmarks/{benchmark.slug}/items/"
    for body in ("[" * 100_000, "[" * 100 + "]" * 100, '{"a":' * 80 + "1" + "}" * 80):
        response = api.generic("POST", url, body, content_type="application/json")
        assert response.status_code == 400 and "nested more than" in _detail(response)


@pytest.mark.parametrize(
    "body, reason",
    [
        ('{"task": "counting", "question": "a\\u0000b"}', "NUL"),
        ('{"task": "counting", "images": [%d]}' % HUGE, "64-bit"),
        ('{"task": "counting", "question": "x", "hint": NaN}', "not a JSON number"),
        ('{"task": "counting", "version": 1e999}', "too large"),
    ],
)
def test_json_the_database_cannot_store_is_a_400(api_for, annotator, benchmark, body, reason):
    response = api_for(annotator).generic(
        "POST", f"/api/v1/benchmarks/{benchmark.slug}/items/", body, content_type="application/json"
    )
    assert response.status_code == 400 and reason in _detail(response)


def test_ids_out_of_range_are_refused(api_for, annotator, benchmark, draft):
    api = api_for(annotator)
    for ids in ([2**63], [0]):  # one past the largest id (the parser), and no id at all (the serializer)
        response = api.post(
            f"/api/v1/benchmarks/{benchmark.slug}/images/screen/", {"ids": ids, "action": "accept"}, format="json"
        )
        assert response.status_code == 400 and ("ids" in _detail(response) or "64-bit" in _detail(response))
    response = api.patch(
        f"/api/v1/benchmarks/{benchmark.slug}/items/{draft.pk}/", {"version": -1, "question": "q"}, format="json"
    )
    assert response.status_code == 400 and "version" in _detail(response)


@pytest.mark.parametrize("name", ["author", "task", "status", "kind", "assignee"])
def test_nul_bytes_in_filters_are_a_400(api_for, client_for, annotator, benchmark, name):
    response = api_for(annotator).get(f"/api/v1/benchmarks/{benchmark.slug}/items/", {name: "anna\x00"})
    assert response.status_code == 400 and "NUL character" in _detail(response)
    page = client_for(annotator).get(f"/b/{benchmark.slug}/items/", {name: "x\x00"})
    assert page.status_code == 400 and "NUL character" in page.content.decode()


def test_nul_bytes_in_other_filters(api_for, client_for, annotator, benchmark):
    assert api_for(annotator).get("/api/v1/assignments/", {"benchmark": "demo\x00"}).status_code == 400
    assert client_for(annotator).get("/jobs/1/", {"outcome": "error\x00"}).status_code == 400


def test_nul_bytes_in_the_editor_are_a_400_and_nothing_changes(client_for, annotator, benchmark, draft):
    response = client_for(annotator).post(
        f"/b/{benchmark.slug}/items/{draft.pk}/save/",
        {"version": draft.version, "question": "How many\x00?"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400 and "NUL character" in response.content.decode()
    draft.refresh_from_db()
    assert draft.question == "" and draft.version == 1


def test_huge_or_odd_numbers_in_pages_are_handled(client_for, annotator, benchmark, draft):
    client = client_for(annotator)
    base = f"/b/{benchmark.slug}"
    # the editor's image list
    response = client.post(
        f"{base}/items/{draft.pk}/save/", {"version": draft.version, "image": str(HUGE)}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400 and "Images must be a whole number" in response.content.decode()
    # a version that is a digit to Python but not a number ("²")
    response = client.post(f"{base}/items/{draft.pk}/save/", {"version": "²"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and "which version" in response.content.decode()
    # the queue's "after this item" and the image chip
    assert client.get(f"{base}/queue/next/", {"item": str(HUGE)}).status_code == 302
    assert client.get(f"{base}/items/image-chip/", {"image_id": str(HUGE)}).status_code == 400
    assert client.get(f"{base}/items/image-chip/", {"image_id": "²"}).status_code == 400
    # ids in the address longer than any id
    assert client.get(f"{base}/items/{HUGE}/").status_code == 404
    assert client.get(f"/api/v1/jobs/{HUGE}/").status_code in (401, 403, 404)


def test_screening_form_with_huge_ids(api_for, annotator, benchmark):
    response = api_for(annotator).post(
        f"/api/v1/benchmarks/{benchmark.slug}/images/screen/", {"ids": [str(HUGE)], "action": "accept"}, format="multipart"
    )
    assert response.status_code == 400


@pytest.fixture
def production(settings):
    settings.DEBUG = False
    settings.ROOT_URLCONF = __name__


def test_api_errors_are_json_with_debug_off(production, annotator, api_for):
    client = Client(raise_request_exception=False)
    missing = client.get("/api/v1/no-such-endpoint/")
    assert missing.status_code == 404 and "nothing at this address" in _detail(missing)
    crash = api_for(annotator)
    crash.raise_request_exception = False
    response = crash.get("/api/v1/crash/")
    assert response.status_code == 500 and "Server error" in _detail(response)
    assert "boom" not in response.content.decode()  # no internals leak


def test_pages_get_styled_error_pages_with_debug_off(production, annotator, client_for, researcher):
    client = client_for(annotator)
    client.raise_request_exception = False
    missing = client.get("/b/nowhere/items/")
    assert missing.status_code == 404 and 'class="topbar"' in missing.content.decode()
    forbidden = client.get("/b/demo/assign/")
    assert forbidden.status_code == 403 and "needs the researcher role" in forbidden.content.decode()
    crash = client.get("/crash/")
    assert crash.status_code == 500 and "Something went wrong on our side" in crash.content.decode()
    assert "boom" not in crash.content.decode()


def test_a_form_refused_by_the_csrf_check_says_what_to_do(annotator):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "anna", "password": PASSWORD})
    body = response.content.decode()
    assert response.status_code == 403 and "Reload the page and send it again" in body
    assert 'class="topbar"' in body and "<style" not in body  # the app's page, no inline style for the CSP to block
    assert "_auth_user_id" not in client.session


# ---- strict integers: ASCII digits only ------------------------------------------------------------

ODD_DIGITS = ["²", "٣", "１２", "1²"]  # digits to str.isdigit, not whole numbers a person typed here


@pytest.mark.parametrize("value", ODD_DIGITS)
def test_odd_digits_never_reach_int(value, client_for, researcher, benchmark):
    from benchforge.inputs import BadInput, is_digits, optional_id, parse_id

    assert not is_digits(value) and optional_id(value) is None
    with pytest.raises(BadInput):
        parse_id(value)
    page = client_for(researcher).get("/qc/import/", {"job": value})
    assert page.status_code == 200


@pytest.mark.parametrize("value", ODD_DIGITS)
def test_the_qc_forms_item_ids_refuse_odd_digits(value, benchmark):
    from qc.forms import RunForm

    form = RunForm(data={"filter": "text_only", "items": f"1 {value}", "parts": 1}, benchmark=benchmark, endpoints={})
    assert not form.is_valid() and "Each item id must be a whole number" in str(form.errors["items"])


def test_an_api_id_field_refuses_odd_digits(api_for, annotator, benchmark):
    from benchforge.inputs import id_field

    assert id_field().run_validation("12") == 12
    response = api_for(annotator).post(
        f"/api/v1/benchmarks/{benchmark.slug}/images/screen/", {"ids": ["٣"], "action": "accept"}, format="json"
    )
    assert response.status_code == 400


def test_no_code_asks_str_isdigit():
    """isdigit/isdecimal/isnumeric accept digits int() refuses or reads otherwise; benchforge.inputs.is_digits
    (or parse_id) is the one test."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(r"\.is(digit|decimal|numeric)\(")
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for path in root.rglob("*.py")
        if not {".venv", "tests", "node_modules"} & set(path.relative_to(root).parts)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line.split("#", 1)[0])
    ]
    assert offenders == []
