"""/api/v1/llm/: researchers only; estimates before, batches with their usage after."""

import pytest

from llm.models import LLMBatch
from tests.llm.conftest import KEY_ENV, calls_for

pytestmark = pytest.mark.django_db(transaction=True)

OPERATIONS = [
    ("get", "/api/v1/llm/endpoints/"),
    ("post", "/api/v1/llm/estimate/"),
    ("post", "/api/v1/llm/batches/"),
    ("get", "/api/v1/llm/batches/{batch}/"),
    ("get", "/api/v1/llm/batches/{batch}/calls/"),
]


@pytest.fixture
def batch(declare, fake_llm, researcher):
    from llm.services import start_batch_in_parts

    declare()
    fake_llm.script("m", "ok")
    return start_batch_in_parts(calls_for(3), endpoint="ep", parts=1, user=researcher)


@pytest.mark.parametrize("method, url", OPERATIONS)
def test_every_operation_needs_a_login_and_the_researcher_role(
    method, url, batch, client, api_for, annotator, reviewer, researcher, fake_llm
):
    url = url.format(batch=batch.pk)
    body = {"endpoint": "ep", "calls": calls_for(1, prefix="fresh")}
    assert getattr(client, method)(url, body, content_type="application/json").status_code in (401, 403)
    for user in (annotator, reviewer):
        response = getattr(api_for(user), method)(url, body, format="json")
        assert response.status_code == 403 and "researcher role" in response.json()["detail"]
    asked = len(fake_llm.requests())
    assert getattr(api_for(researcher), method)(url, body, format="json").status_code in (200, 201)
    assert len(fake_llm.requests()) == asked + (1 if url.endswith("/batches/") else 0)


def test_the_estimate_before_a_run(declare, api_for, researcher, fake_llm):
    declare(input_cost_per_mtok=3.0, output_cost_per_mtok=15.0)
    response = api_for(researcher).post(
        "/api/v1/llm/estimate/", {"endpoint": "ep", "calls": calls_for(10), "expected_completion_tokens": 100}, format="json"
    )
    assert response.status_code == 200, response.json()
    data = response.json()
    assert data["calls"] == 10 and data["completion_tokens"] == 1000 and data["prompt_tokens"] > 0
    assert data["cost"] == round((data["prompt_tokens"] * 3 + 1000 * 15) / 1e6, 6) and data["cost_note"].startswith("rough")
    assert fake_llm.requests() == []


def test_the_estimate_says_why_the_cost_is_unknown(declare, api_for, researcher):
    declare()
    data = api_for(researcher).post("/api/v1/llm/estimate/", {"endpoint": "ep", "calls": calls_for(2)}, format="json").json()
    assert data["cost"] is None and "declares no prices" in data["cost_note"]


def test_bad_requests_get_a_message_a_person_can_act_on(declare, api_for, researcher):
    declare()
    api = api_for(researcher)
    unknown = api.post("/api/v1/llm/estimate/", {"endpoint": "gpt-9", "calls": calls_for(1)}, format="json")
    assert unknown.status_code == 400 and "No LLM endpoint named 'gpt-9'" in unknown.json()["detail"]
    empty = api.post("/api/v1/llm/batches/", {"endpoint": "ep", "calls": []}, format="json")
    assert empty.status_code == 400 and "calls" in empty.json()["detail"]
    bad = api.post(
        "/api/v1/llm/batches/", {"endpoint": "ep", "calls": [{"messages": [{"role": "robot", "content": "x"}]}]}, format="json"
    )
    assert bad.status_code == 400 and "message 0 must be a dict with role one of system, user, assistant" in bad.json()["detail"]
    assert not LLMBatch.objects.exists()


def test_a_batch_from_the_api_runs_and_reports_its_usage(declare, api_for, researcher, fake_llm):
    declare(input_cost_per_mtok=1.0, output_cost_per_mtok=1.0)
    fake_llm.script("m", "an answer")
    api = api_for(researcher)
    created = api.post(
        "/api/v1/llm/batches/", {"endpoint": "ep", "label": "probe", "parts": 2, "calls": calls_for(5)}, format="json"
    )
    assert created.status_code == 201, created.json()
    data = created.json()
    assert (data["label"], data["calls"], data["ok"], data["pending"], len(data["jobs"])) == ("probe", 5, 5, 0, 2)
    assert data["estimate"]["calls"] == 5 and data["actual"]["requests"] == 5 and data["actual"]["cost"] > 0
    assert [job["state"] for job in data["jobs"]] == ["succeeded", "succeeded"]
    detail = api.get(f"/api/v1/llm/batches/{data['id']}/").json()
    assert detail["actual"] == data["actual"]
    calls = api.get(f"/api/v1/llm/batches/{data['id']}/calls/?status=ok").json()
    assert calls["count"] == 5 and calls["results"][0]["reply"] == "an answer" and calls["results"][0]["attempts"] == 1
    assert api.get(f"/api/v1/llm/batches/{data['id']}/calls/?status=error").json()["count"] == 0
    assert api.get("/api/v1/llm/batches/999999/").status_code == 404


def test_the_endpoint_list_shows_bounds_prices_and_whether_the_key_is_set(declare, api_for, researcher, monkeypatch):
    declare(max_concurrency=7, output_cost_per_mtok=2.5)
    declare("other", api_key_env="UNSET_TEST_KEY_VARIABLE")
    monkeypatch.delenv("UNSET_TEST_KEY_VARIABLE", raising=False)
    response = api_for(researcher).get("/api/v1/llm/endpoints/")
    rows = response.json()
    assert [(r["name"], r["max_concurrency"], r["output_cost_per_mtok"], r["key_set"]) for r in rows] == [
        ("ep", 7, 2.5, True),
        ("other", 4, None, False),
    ]
    assert "id.secret" not in response.content.decode() and KEY_ENV not in response.content.decode()
