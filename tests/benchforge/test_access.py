"""Who can see and do what, through pages and the API."""

import pytest

from curation.models import Benchmark

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/", "/b/demo/", "/b/demo/taxonomy/", "/benchmarks/new/", "/jobs/1/", "/media/x.jpg"])
def test_pages_redirect_anonymous_users_to_login(client, benchmark, url):
    resp = client.get(url)
    assert resp.status_code == 302
    assert resp["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize(
    "url", ["/api/v1/me/", "/api/v1/benchmarks/", "/api/v1/benchmarks/demo/", "/api/schema/", "/api/v1/jobs/1/"]
)
def test_api_refuses_anonymous_requests_as_json(client, benchmark, url):
    resp = client.get(url, HTTP_ACCEPT="application/json")
    assert resp.status_code == 401
    assert "credentials" in resp.json()["detail"].lower()


def test_a_user_without_role_sees_nothing(client_for, make_user, benchmark):
    nobody = make_user("annotator", "nobody")
    nobody.groups.clear()
    nobody._benchforge_role = None
    from django.contrib.auth import get_user_model

    fresh = get_user_model().objects.get(pk=nobody.pk)
    assert client_for(fresh).get("/").status_code == 403


def test_annotator_sees_only_member_benchmarks(client_for, annotator, private_benchmark):
    c = client_for(annotator)
    home = c.get("/").content.decode()
    assert "/b/demo/" in home and "/b/private/" not in home
    assert c.get("/b/demo/").status_code == 200
    assert c.get("/b/private/").status_code == 404
    assert c.get("/b/private/taxonomy/").status_code == 404


@pytest.mark.parametrize("role", ["annotator", "reviewer"])
def test_only_researchers_change_the_taxonomy(client_for, make_user, benchmark, role):
    user = make_user(role, benchmarks=[benchmark])
    c = client_for(user)
    assert c.get("/benchmarks/new/").status_code == 403
    assert c.post("/b/demo/taxonomy/preset/", {"preset": "mmbench"}).status_code == 403
    assert c.get("/b/demo/taxonomy/counting/").status_code == 403
    assert c.get("/b/demo/settings/").status_code == 403
    assert benchmark.tasks.count() == 13


def test_researcher_sees_every_benchmark(client_for, researcher, benchmark, private_benchmark):
    home = client_for(researcher).get("/").content.decode()
    assert "/b/demo/" in home and "/b/private/" in home


def test_dashboard_counts_items_per_task_and_stage(client_for, annotator, benchmark):
    from annotation.models import Item

    counting = benchmark.tasks.get(slug="counting")
    Item.objects.create(benchmark=benchmark, task=counting, question="How many?", status="draft")
    Item.objects.create(benchmark=benchmark, task=counting, question="How many cats?", status="accepted")
    resp = client_for(annotator).get("/b/demo/")
    rows = {r["task"].slug: r for r in resp.context["rows"]}
    labels = resp.context["status_labels"]
    assert rows["counting"]["statuses"][labels.index("Draft")] == 1
    assert rows["counting"]["statuses"][labels.index("Accepted")] == 1
    assert rows["counting"]["total"] == 2 and rows["ocr"]["total"] == 0
    assert resp.context["grand_total"] == 2


# ------------------------------------------------------------------ API


def test_token_login_and_me(client, annotator):
    resp = client.post("/api/v1/auth/token/", {"username": "anna", "password": "correct-horse-battery"})
    assert resp.status_code == 200
    token = resp.json()["token"]
    me = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}")
    assert me.json() == {"username": "anna", "role": "annotator"}


def test_wrong_password_gets_a_clear_api_error(client, annotator):
    resp = client.post("/api/v1/auth/token/", {"username": "anna", "password": "nope"})
    assert resp.status_code == 400
    assert "Unable to log in" in str(resp.json())


def test_api_benchmark_visibility(api_for, annotator, private_benchmark):
    api = api_for(annotator)
    slugs = [b["slug"] for b in api.get("/api/v1/benchmarks/").json()["results"]]
    assert slugs == ["demo"]
    assert api.get("/api/v1/benchmarks/private/").status_code == 404
    detail = api.get("/api/v1/benchmarks/demo/").json()
    assert len(detail["tasks"]) == 13 and detail["loaded_preset"] == "alignmmbench"


def test_api_create_benchmark_needs_researcher(api_for, annotator, researcher):
    assert api_for(annotator).post("/api/v1/benchmarks/", {"name": "X"}, format="json").status_code == 403
    resp = api_for(researcher).post("/api/v1/benchmarks/", {"name": "Touch", "preset": "touchstone"}, format="json")
    assert resp.status_code == 201, resp.content
    assert Benchmark.objects.get(slug="touch").tasks.count() == 27
    dup = api_for(researcher).post("/api/v1/benchmarks/", {"name": "Touch"}, format="json")
    assert dup.status_code == 409 and "already exists" in dup.json()["detail"]  # creating what exists: 409, naming it
    assert dup.json()["existing"] == {"slug": "touch", "name": "Touch"}
    bad = api_for(researcher).post("/api/v1/benchmarks/", {"name": "Y", "preset": "nope"}, format="json")
    assert bad.status_code == 400 and "preset" in bad.json()


def test_api_task_patch_is_validated_and_role_checked(api_for, annotator, researcher, benchmark):
    url = "/api/v1/benchmarks/demo/tasks/counting/"
    assert api_for(annotator).patch(url, {"quota": 5}, format="json").status_code == 403
    bad = api_for(researcher).patch(url, {"collection_keywords": "not a list"}, format="json")
    assert bad.status_code == 400 and "list of strings" in str(bad.json())
    ok = api_for(researcher).patch(url, {"quota": 5}, format="json")
    assert ok.status_code == 200 and ok.json()["quota"] == 5


def test_openapi_schema_is_served_to_logged_in_users(api_for, annotator):
    resp = api_for(annotator).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert resp.status_code == 200
    paths = resp.json()["paths"]
    assert "/api/v1/benchmarks/" in paths and "/api/v1/jobs/{id}/" in paths


def test_jobs_are_visible_to_members_only(api_for, client_for, annotator, make_user, benchmark, private_benchmark):
    from jobs.services import create_job

    mine = create_job("ingest_zip", benchmark=benchmark)
    theirs = create_job("ingest_zip", benchmark=private_benchmark)
    api = api_for(annotator)
    assert api.get(f"/api/v1/jobs/{mine.pk}/").json()["status"] == "queued"
    assert api.get(f"/api/v1/jobs/{theirs.pk}/").status_code == 404
    assert client_for(annotator).get(f"/jobs/{theirs.pk}/").status_code == 404
    assert client_for(annotator).get(f"/jobs/{mine.pk}/progress/").status_code == 200


def test_the_role_is_read_with_the_user_on_every_request(client_for, make_user, benchmark):
    from django.contrib.auth.models import Group
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from benchforge.roles import set_role

    person = make_user("annotator", "pat", benchmarks=[benchmark])
    c = client_for(person)
    with CaptureQueriesContext(connection) as queries:
        assert c.get("/benchmarks/new/").status_code == 403
    group_reads = [q["sql"] for q in queries.captured_queries if "auth_user_groups" in q["sql"]]
    assert len(group_reads) == 1 and '"auth_user"' in group_reads[0]  # one query: the user with the role
    set_role(person, "researcher")  # takes effect on the very next request, no re-login
    assert c.get("/benchmarks/new/").status_code == 200
    person.groups.add(Group.objects.get_or_create(name="annotator")[0])  # two roles: the higher counts
    assert c.get("/benchmarks/new/").status_code == 200
    person.groups.clear()
    assert c.get("/").status_code == 403
    set_role(person, "annotator")
    type(person).objects.filter(pk=person.pk).update(is_active=False)  # deactivated: logged out at once
    assert c.get("/").status_code == 302
