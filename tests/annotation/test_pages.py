"""Item pages (editor saves over htmx, conflicts, submit, history, lists, queue, assignment,
import) and the items API, with their permissions."""

import datetime
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotation import services
from annotation.models import Assignment, Item, ItemRevision
from annotation.workflow import ANSWERED
from curation.services import load_preset
from tests.factories import complete_fields, make_image

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def url(item, suffix=""):
    return f"/b/{item.benchmark.slug}/items/{item.pk}/{suffix}"


def form_data(item, version, image=None, **overrides):
    data = {
        "version": str(version),
        "task": item.task.slug,
        "kind": "single_turn",
        "question_type": "open",
        "question": "How many apples?",
        "reference_answer": "Three apples.",
        "description": "",
        "criterion_kind": ["exact"],
        "criterion_text": ["Three."],
        "image": [str(image.pk)] if image else [],
    }
    data.update(overrides)
    return data


# ---- editor ------------------------------------------------------------------------------------------


def test_editor_shows_the_item_its_task_guideline_and_what_is_missing(client_for, annotator, draft):
    page = client_for(annotator).get(url(draft))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-key="ctrl+s"' in html and 'data-key="ctrl+Enter"' in html and 'data-key="ctrl+."' in html
    assert "Ask for a count of clearly countable things" in html  # the counting guideline
    assert "Attach at least one accepted image." in html
    assert 'hx-trigger="submit, input delay:1500ms"' in html  # drafts autosave


def test_the_editor_shows_a_guideline_edited_since_the_last_view(client_for, api_for, annotator, researcher, draft):
    """The tasks' guidelines are kept between views of the editor until something changes in the benchmark."""
    web = client_for(annotator)
    assert "Count the red things only." not in web.get(url(draft)).content.decode()
    edited = api_for(researcher).patch(
        f"/api/v1/benchmarks/{draft.benchmark.slug}/tasks/{draft.task.slug}/",
        {"guideline": "Count the red things only."},
        format="json",
    )
    assert edited.status_code == 200, edited.content
    html = web.get(url(draft)).content.decode()
    assert '<p data-field="guideline" class="pre-line" lang="zh">Count the red things only.</p>' in html


def test_other_annotators_see_the_item_read_only_and_other_benchmarks_are_404(
    client_for, make_user, benchmark, draft, researcher
):
    otto = make_user("annotator", "otto", benchmarks=[benchmark])
    page = client_for(otto).get(url(draft)).content.decode()
    assert "is not yours" in page and "read-only" in page and 'data-key="ctrl+s"' not in page
    denied = client_for(otto).post(url(draft, "save/"), form_data(draft, 1, question="mine"), **HTMX)
    assert denied.status_code == 403 and "is not yours" in denied.content.decode()
    stranger = make_user("annotator", "sam", benchmarks=[load_preset("mmbench", slug="other")])
    for path in (url(draft), url(draft, "history/")):
        assert client_for(stranger).get(path).status_code == 404
    assert client_for(stranger).post(url(draft, "save/"), form_data(draft, 1), **HTMX).status_code == 404
    assert client_for(researcher).get(url(draft)).status_code == 200


def test_saving_bumps_the_version_and_updates_the_form(client_for, annotator, draft, image):
    resp = client_for(annotator).post(url(draft, "save/"), form_data(draft, 1, image), **HTMX)
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "Saved · version 2" in html and 'id="item-version" value="2" hx-swap-oob="true"' in html
    assert "Complete: ready to submit." in html
    draft.refresh_from_db()
    assert draft.question == "How many apples?" and draft.version == 2
    assert [c.text for c in draft.criteria.all()] == ["Three."]


def test_a_save_breaking_a_rule_says_why_and_keeps_the_version(client_for, annotator, draft):
    resp = client_for(annotator).post(
        url(draft, "save/"), form_data(draft, 1, criterion_kind=["exact"] * 4, criterion_text=["a", "b", "c", "d"]), **HTMX
    )
    assert resp.status_code == 400 and "at most 3 criteria" in resp.content.decode()
    draft.refresh_from_db()
    assert draft.version == 1


def test_two_editors_from_the_same_version_the_second_gets_409_with_both_texts(client_for, annotator, researcher, draft, image):
    first = client_for(researcher).post(
        url(draft, "save/"), form_data(draft, 1, image, question="How many green apples?"), **HTMX
    )
    assert first.status_code == 200
    second = client_for(annotator).post(url(draft, "save/"), form_data(draft, 1, image, question="How many red apples?"), **HTMX)
    assert second.status_code == 409
    html = second.content.decode()
    assert "changed by ross" in html and "How many green apples?" in html and "How many red apples?" in html
    assert 'data-conflict="keep-mine" data-version="2"' in html
    draft.refresh_from_db()
    assert draft.question == "How many green apples?"
    # "Keep mine": the form resends its text with the version it was shown.
    kept = client_for(annotator).post(url(draft, "save/"), form_data(draft, 2, image, question="How many red apples?"), **HTMX)
    assert kept.status_code == 200
    draft.refresh_from_db()
    assert draft.question == "How many red apples?" and draft.version == 3


def test_submit_saves_first_then_refuses_an_incomplete_item(client_for, annotator, draft):
    resp = client_for(annotator).post(url(draft, "submit/"), form_data(draft, 1, reference_answer=""), **HTMX)
    assert resp.status_code == 400
    html = resp.content.decode()
    assert "Not submitted yet" in html and "Write the reference answer" in html
    assert 'id="item-version" value="2"' in html  # the text was saved: the form moves to the new version
    draft.refresh_from_db()
    assert draft.question == "How many apples?" and draft.status == "draft"


def test_submit_from_the_queue_moves_to_the_next_piece_of_work(client_for, annotator, researcher, benchmark, counting):
    images = [make_image(benchmark, tasks=[counting]) for _ in range(2)]
    services.assign_images(benchmark, task=counting, image_ids=[i.pk for i in images], assignee=annotator, user=researcher)
    c = client_for(annotator)
    opened = c.post("/b/demo/queue/next/")
    item = Item.objects.get()
    assert opened.status_code == 302 and opened["Location"] == url(item)
    first = Assignment.objects.get(image=images[0])
    resp = c.post(url(item, "submit/"), form_data(item, 1, images[0]), **HTMX)
    # Submitting (a POST) starts the next assignment and opens its draft.
    second_item = Item.objects.exclude(pk=item.pk).get()
    assert resp.status_code == 204 and resp["HX-Redirect"] == url(second_item)
    item.refresh_from_db()
    first.refresh_from_db()
    assert item.status == ANSWERED and first.status == "done"
    assert [link.image_id for link in second_item.item_images.all()] == [images[1].pk]
    # The last one submitted: back to the (empty) queue.
    resp = c.post(url(second_item, "submit/"), form_data(second_item, 1, images[1]), **HTMX)
    assert resp["HX-Redirect"] == "/b/demo/queue/"


def test_a_get_never_starts_work_it_offers_a_button_that_posts(client_for, annotator, researcher, benchmark, counting):
    images = [make_image(benchmark, tasks=[counting]) for _ in range(2)]
    services.assign_images(benchmark, task=counting, image_ids=[i.pk for i in images], assignee=annotator, user=researcher)
    c = client_for(annotator)
    first, second = Assignment.objects.order_by("pk")
    for address in ("/b/demo/queue/next/", f"/b/demo/queue/{first.pk}/", f"/b/demo/queue/{second.pk}/"):
        page = c.get(address)
        html = page.content.decode()
        assert page.status_code == 200 and "Start writing" in html
        assert (
            'method="post"' in html
            and f'action="/b/demo/queue/{first.pk if "next" in address else address.split("/")[-2]}/"' in html
        )
    assert not Item.objects.exists()
    started = c.post(f"/b/demo/queue/{second.pk}/")
    item = Item.objects.get()
    assert started["Location"] == url(item)
    # Work already started opens on a GET (still nothing new created).
    assert c.get(f"/b/demo/queue/{second.pk}/")["Location"] == url(item)
    assert Item.objects.count() == 1
    # The queue page and the editor offer forms, not links, for starting work.
    queue = c.get("/b/demo/queue/").content.decode()
    assert not re.search(r'href="/b/demo/queue/(next|\d+)/', queue)
    assert queue.count('method="post" action="/b/demo/queue/') == 3
    editor = c.get(url(item)).content.decode()
    assert 'id="next-form" method="post" action="/b/demo/queue/next/"' in editor and f'name="item" value="{item.pk}"' in editor
    # "Next" after this item is the other assignment, started by the editor's POST.
    nxt = c.post("/b/demo/queue/next/", {"item": item.pk})
    assert nxt["Location"] == url(Item.objects.exclude(pk=item.pk).get())


def test_kind_switch_keeps_only_the_sections_of_the_chosen_kind(client_for, annotator, draft, image):
    c = client_for(annotator)
    c.post(
        url(draft, "save/"),
        form_data(draft, 1, image, kind="mcq", choice=["two", "three"], answer="B", hint="Count them."),
        **HTMX,
    )
    draft.refresh_from_db()
    assert draft.choices == ["two", "three"] and draft.answer == "B" and draft.hint == "Count them."
    c.post(
        url(draft, "save/"),
        form_data(
            draft,
            2,
            image,
            kind="multi_turn",
            turn=["Hi, what is this?", "A fruit bowl."],
            incoherent="on",
            choice=["two", "three"],
            answer="B",
        ),
        **HTMX,
    )
    draft.refresh_from_db()
    assert draft.kind == "multi_turn" and draft.choices == [] and draft.answer == ""
    assert draft.history == [{"role": "user", "content": "Hi, what is this?"}, {"role": "assistant", "content": "A fruit bowl."}]
    assert draft.incoherent


def test_line_breaks_from_browsers_are_stored_as_newlines(client_for, annotator, draft):
    client_for(annotator).post(url(draft, "save/"), form_data(draft, 1, question="Line one\r\nLine two"), **HTMX)
    draft.refresh_from_db()
    assert draft.question == "Line one\nLine two"


def test_history_page_shows_each_version_and_what_changed(client_for, annotator, draft, image):
    c = client_for(annotator)
    c.post(url(draft, "save/"), form_data(draft, 1, image, question="How many apples are there?"), **HTMX)
    c.post(url(draft, "save/"), form_data(draft, 2, image, question="How many pears are there?"), **HTMX)
    resp = c.get(url(draft, "history/"))
    html = resp.content.decode()
    assert [r["revision"].version for r in resp.context["rows"]] == [3, 2, 1]
    assert "<del>apples</del><ins>pears</ins>" in html
    changed = [c["field"] for c in resp.context["rows"][1]["changes"]]
    assert changed == ["question", "reference_answer", "images", "criteria"]


def test_taking_back_a_submitted_item(client_for, annotator, draft, image):
    c = client_for(annotator)
    c.post(url(draft, "submit/"), form_data(draft, 1, image), **HTMX)
    draft.refresh_from_db()
    assert draft.status == ANSWERED
    assert "Take back to draft" in c.get(url(draft)).content.decode()
    c.post(url(draft, "withdraw/"), {"version": draft.version})
    draft.refresh_from_db()
    assert draft.status == "draft" and draft.revisions.first().action == "returned"


def test_image_chip_refuses_images_that_cannot_be_used(client_for, annotator, benchmark, image):
    c = client_for(annotator)
    ok = c.get(f"/b/demo/items/image-chip/?image_id={image.pk}")
    assert ok.status_code == 200 and f'name="image" value="{image.pk}"' in ok.content.decode()
    pending = make_image(benchmark, status="pending")
    bad = c.get(f"/b/demo/items/image-chip/?image_id={pending.pk}")
    assert bad.status_code == 400 and "not accepted" in bad.content.decode()
    assert c.get("/b/demo/items/image-chip/?image_id=99999").status_code == 400


# ---- lists, queue, assignment, import, dashboard ---------------------------------------------------------


def test_item_list_filters_and_paginates(client_for, annotator, researcher, benchmark, counting, make_user):
    ocr = benchmark.tasks.get(slug="ocr")
    otto = make_user("annotator", "otto", benchmarks=[benchmark])
    for n in range(55):
        services.create_item(
            benchmark,
            task=counting if n % 2 else ocr,
            user=annotator if n < 50 else otto,
            kind="mcq" if n % 5 == 0 else "single_turn",
        )
    c = client_for(annotator)
    first = c.get("/b/demo/items/")
    assert len(first.context["page"].object_list) == 50 and first.context["page"].has_next
    assert len(c.get("/b/demo/items/" + first.context["page"].next_query).context["page"].object_list) == 5
    assert c.get("/b/demo/items/?author=otto").context["page"].count == 5
    assert c.get("/b/demo/items/?task=ocr&kind=mcq").context["page"].count == 6
    assert c.get("/b/demo/items/?status=accepted").context["page"].count == 0


def test_only_researchers_assign_work(client_for, annotator, benchmark):
    c = client_for(annotator)
    assert c.get("/b/demo/assign/").status_code == 403
    assert c.post("/b/demo/assign/", {"form": "evenly", "assignees": ["anna"]}).status_code == 403
    assert c.get("/b/demo/items/import/").status_code == 403


def test_researcher_assigns_by_hand_evenly_and_moves_work(client_for, researcher, annotator, benchmark, counting, make_user):
    otto = make_user("annotator", "otto", benchmarks=[benchmark])
    counting.quota = 4
    counting.save()
    images = [make_image(benchmark, tasks=[counting]) for _ in range(5)]
    c = client_for(researcher)
    page = c.get("/b/demo/assign/?task=counting")
    assert page.status_code == 200 and page.context["images"].paginator.count == 5
    resp = c.post(
        "/b/demo/assign/?task=counting",
        {"form": "images", "task": "counting", "images": [images[0].pk], "assignee": "anna"},
        follow=True,
    )
    assert "1 image(s) assigned to anna" in resp.content.decode()
    resp = c.post("/b/demo/assign/", {"form": "evenly", "tasks": ["counting"], "assignees": ["anna", "otto"]}, follow=True)
    assert "3 image(s) assigned evenly" in resp.content.decode()
    assert Assignment.objects.filter(assignee=otto).count() == 2 and Assignment.objects.filter(assignee=annotator).count() == 2
    moved = list(Assignment.objects.filter(assignee=otto).values_list("pk", flat=True))
    c.post("/b/demo/assign/", {"form": "open", "action": "reassign", "assignments": moved, "assignee": "anna"})
    assert Assignment.objects.filter(assignee=annotator).count() == 4
    c.post("/b/demo/assign/", {"form": "open", "action": "cancel", "assignments": moved[:1]})
    assert Assignment.objects.count() == 3
    resp = c.post("/b/demo/assign/", {"form": "images", "task": "counting", "assignee": "anna"}, follow=True)
    assert "Select at least one image." in resp.content.decode()


def test_queue_page_lists_open_work_with_a_next_shortcut(client_for, annotator, researcher, benchmark, counting):
    empty = client_for(annotator).get("/b/demo/queue/")
    assert "Nothing to do" in empty.content.decode()
    assert client_for(annotator).post("/b/demo/queue/next/", follow=True).redirect_chain[-1][0] == "/b/demo/queue/"
    images = [make_image(benchmark, tasks=[counting]) for _ in range(3)]
    services.assign_images(benchmark, task=counting, image_ids=[i.pk for i in images], assignee=annotator, user=researcher)
    page = client_for(annotator).get("/b/demo/queue/")
    assert page.context["page"].count == 3 and 'data-key="n"' in page.content.decode()


def test_import_page_runs_an_alignmmbench_import_job(client_for, researcher, benchmark, django_capture_on_commit_callbacks):
    rows = [
        {
            "question_id": "00000001-0",
            "image_path": "images/1.jpg",
            "history": [],
            "prompt": "How many?",
            "ref_answer": "Two.",
            "task": "Counting",
            "category": "Perception & Understanding",
        },
        {
            "question_id": "00000001-1",
            "image_path": "images/1.jpg",
            "history": [],
            "prompt": "Count them.",
            "ref_answer": "Two.",
            "task": "Counting",
            "category": "Perception & Understanding",
        },
    ]
    upload = SimpleUploadedFile("metadata.jsonl", "\n".join(json.dumps(r) for r in rows).encode())
    c = client_for(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        resp = c.post("/b/demo/items/import/", {"file": upload}, follow=True)
    assert "Import job #" in resp.content.decode()
    assert Item.objects.filter(benchmark=benchmark, is_external=True).count() == 2
    assert "Imported 2 items" in c.get("/b/demo/items/import/").content.decode()
    bad = c.post("/b/demo/items/import/", {"file": SimpleUploadedFile("notes.txt", b"x")})
    assert "Upload the metadata.jsonl file" in bad.content.decode()


def test_dashboard_shows_submissions_per_day_per_annotator_and_task(client_for, annotator, researcher, benchmark, counting):
    today = timezone.localdate()
    for n, days_ago in enumerate([0, 0, 0, 2, 20]):
        item = services.create_item(benchmark, task=counting, user=annotator, question=f"q{n}")
        ItemRevision.objects.create(
            item=item,
            version=2,
            snapshot={},
            action="submitted",
            changed_by=annotator,
            changed_at=timezone.now() - datetime.timedelta(days=days_ago),
        )
    resp = client_for(researcher).get("/b/demo/")
    progress = resp.context["progress"]
    anna = next(p for p in progress["people"] if p["username"] == "anna")
    assert anna["total"] == 4  # the submission 20 days ago is outside the window
    assert [b["n"] for b in anna["bars"]][-3:] == [1, 0, 3] and anna["bars"][-1]["percent"] == 100
    assert anna["per_active_day"] == 2.0
    counting_row = next(t for t in progress["tasks"] if t["task"].slug == "counting")
    assert counting_row["total"] == 4 and progress["days"][-1] == today
    assert 'id="progress-people"' in resp.content.decode()


# ---- API ---------------------------------------------------------------------------------------------


def test_api_lists_and_filters_items_of_my_benchmarks_only(api_for, annotator, benchmark, counting, make_user):
    for n in range(3):
        services.create_item(benchmark, task=counting, user=annotator, question=f"q{n}", kind="mcq" if n == 0 else "single_turn")
    other = load_preset("mmbench", slug="other")
    api = api_for(annotator)
    body = api.get("/api/v1/benchmarks/demo/items/?kind=mcq").json()
    assert body["count"] == 1 and body["results"][0]["kind"] == "mcq" and body["results"][0]["criteria"] == []
    assert api.get("/api/v1/benchmarks/demo/items/").json()["count"] == 3
    assert api.get(f"/api/v1/benchmarks/{other.slug}/items/").status_code == 404


def test_api_item_list_has_no_n_plus_one(api_for, annotator, benchmark, counting, django_assert_max_num_queries):
    img = make_image(benchmark, tasks=[counting])
    for n in range(30):
        services.create_item(benchmark, task=counting, user=annotator, **complete_fields(img, question=f"q{n}"))
    with django_assert_max_num_queries(14):
        body = api_for(annotator).get("/api/v1/benchmarks/demo/items/").json()
    assert len(body["results"]) == 30 and all(r["images"][0]["id"] == img.pk for r in body["results"])


def test_api_create_patch_with_version_and_submit(api_for, annotator, researcher, benchmark, image):
    api = api_for(annotator)
    created = api.post("/api/v1/benchmarks/demo/items/", {"task": "counting", "question": "How many apples?"}, format="json")
    assert created.status_code == 201, created.content
    item = created.json()
    assert item["version"] == 1 and item["status"] == "draft" and item["author"] == "anna"
    path = f"/api/v1/benchmarks/demo/items/{item['id']}/"

    missing = api.patch(path, {"question": "x"}, format="json")
    assert missing.status_code == 400 and "version" in missing.json()
    bad = api.patch(path, {"version": 1, "criteria": [{"kind": "vibe", "text": "x"}]}, format="json")
    assert bad.status_code == 400 and "vibe" in json.dumps(bad.json())

    patched = api.patch(
        path,
        {
            "version": 1,
            "reference_answer": "Three red apples.",
            "images": [image.pk],
            "criteria": [{"kind": "exact", "text": "three"}],
        },
        format="json",
    )
    assert patched.status_code == 200 and patched.json()["version"] == 2
    assert patched.json()["criteria"] == [{"kind": "exact", "text": "three"}]

    stale = api_for(researcher).patch(path, {"version": 1, "question": "Overwrite?"}, format="json")
    assert stale.status_code == 409
    body = stale.json()
    assert (
        body["code"] == "stale_version"
        and body["current_version"] == 2
        and body["current"]["reference_answer"] == "Three red apples."
    )

    incomplete = api.patch(path, {"version": 2, "criteria": []}, format="json")
    assert incomplete.status_code == 200
    not_ready = api.post(f"{path}submit/", {"version": 3}, format="json")
    assert not_ready.status_code == 400 and not_ready.json()["problems"] == ["Add 1 to 3 grading criteria."]
    api.patch(path, {"version": 3, "criteria": [{"kind": "soft", "text": "about apples"}]}, format="json")
    submitted = api.post(f"{path}submit/", {"version": 4}, format="json")
    assert submitted.status_code == 200 and submitted.json()["status"] == "answered"
    history = api.get(f"{path}history/").json()
    assert [r["action"] for r in history["results"]] == ["submitted", "edited", "edited", "edited", "created"]


def test_api_permissions_follow_the_services(api_for, annotator, make_user, benchmark, draft, reviewer):
    otto = make_user("annotator", "otto", benchmarks=[benchmark])
    path = f"/api/v1/benchmarks/demo/items/{draft.pk}/"
    assert api_for(otto).get(path).status_code == 200
    denied = api_for(otto).patch(path, {"version": 1, "question": "mine"}, format="json")
    assert denied.status_code == 403 and "is not yours" in denied.json()["detail"]
    assert api_for(reviewer).patch(path, {"version": 1, "question": "mine"}, format="json").status_code == 403
    stranger = make_user("annotator", "sam", benchmarks=[load_preset("mmbench", slug="other")])
    assert api_for(stranger).get(path).status_code == 404
    assert api_for(stranger).patch(path, {"version": 1, "question": "x"}, format="json").status_code == 404


def test_api_lists_my_assignments(api_for, annotator, researcher, benchmark, counting, make_user):
    otto = make_user("annotator", "otto", benchmarks=[benchmark])
    images = [make_image(benchmark, tasks=[counting]) for _ in range(3)]
    services.assign_images(benchmark, task=counting, image_ids=[i.pk for i in images[:2]], assignee=annotator, user=researcher)
    services.assign_images(benchmark, task=counting, image_ids=[images[2].pk], assignee=otto, user=researcher)
    mine = api_for(annotator).get("/api/v1/assignments/").json()
    assert [a["image"] for a in mine["results"]] == [images[0].pk, images[1].pk]
    assert mine["results"][0]["task"] == "counting" and mine["results"][0]["status"] == "open"
    assert api_for(annotator).get("/api/v1/assignments/?status=done").json()["count"] == 0


def test_openapi_schema_lists_the_item_endpoints(api_for, annotator):
    paths = api_for(annotator).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    for path in (
        "/api/v1/benchmarks/{slug}/items/",
        "/api/v1/benchmarks/{slug}/items/{id}/",
        "/api/v1/benchmarks/{slug}/items/{id}/submit/",
        "/api/v1/assignments/",
    ):
        assert path in paths
    assert "409" in paths["/api/v1/benchmarks/{slug}/items/{id}/"]["patch"]["responses"]


def test_openapi_schema_generates_without_warnings(tmp_path):
    from django.core.management import call_command

    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "schema.yml"))
    assert "/api/v1/benchmarks/{slug}/items/{id}/submit/" in (tmp_path / "schema.yml").read_text()


def test_the_editor_header_history_count_follows_each_save(client_for, annotator, draft, image):
    c = client_for(annotator)
    assert ">history (1 version)</a>" in c.get(url(draft)).content.decode()
    for version in (2, 3):
        saved = c.post(url(draft, "save/"), form_data(draft, version - 1, image, question=f"Question {version}?"), **HTMX)
        html = saved.content.decode()
        assert f"Saved · version {version}" in html
        assert f'id="history-link" href="{url(draft, "history/")}" hx-swap-oob="true">history ({version} versions)</a>' in html
