"""The navigation inside a benchmark: the pipeline's stages in order, each with what waits there
for the person looking (role-aware, an annotator's queue first), counted in one query; the
current stage's pages; global places apart; a stage is one entry of benchforge.navigation.STAGES."""

import re
from dataclasses import replace

import pytest
from django.test import RequestFactory
from django.urls import resolve

from annotation.models import Assignment, Item
from benchforge import navigation
from benchforge.roles import user_role
from curation.models import Benchmark, Image
from demo.management.commands.seed_demo import DEMO_SLUG
from qc.models import QCItem
from review.models import Review
from rewrite.selectors import seeds_to_verify
from tests.factories import make_image

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings, fresh_image_indexes, demo_snapshot):
    users = demo_snapshot.restore(settings)  # seeded once per process, copied in
    return Benchmark.objects.get(slug=DEMO_SLUG), users


def nav_for(user, benchmark, path=None):
    path = path or f"/b/{benchmark.slug}/"
    request = RequestFactory().get(path)
    request.user = user
    request.resolver_match = resolve(path)
    return navigation.benchmark_navigation(request, benchmark)


def counts(nav) -> dict:
    return {s["key"]: s["waiting"] for s in nav["stages"]}


def test_each_role_sees_its_stages_in_pipeline_order_with_what_waits_for_it(demo, django_assert_num_queries):
    benchmark, users = demo
    pending_images = Image.objects.filter(benchmark=benchmark, status="pending").count()
    answered = Item.objects.filter(benchmark=benchmark, status="answered").count()
    flagged = QCItem.objects.filter(run__benchmark=benchmark, flagged=True, done=True, decision="").count()
    ready = Item.objects.filter(benchmark=benchmark, status__in=["accepted", "rewritten", "qc_passed"]).count()
    assert min(pending_images, answered, flagged, ready) > 0  # the demo has work waiting at every stage

    user_role(users["researcher"])  # a request's user comes with its role (benchforge.roles.RoleModelBackend)
    with django_assert_num_queries(1):  # every stage counted in one query
        researcher = nav_for(users["researcher"], benchmark)
    assert [s["key"] for s in researcher["stages"]] == ["collect", "author", "review", "rewrite", "qc", "release", "humaneval"]
    assert counts(researcher) == {
        "collect": pending_images,
        "author": Assignment.objects.filter(assignee=users["researcher"], status="open").count(),
        "review": answered,  # items waiting for a round (the researcher has no reviews to give)
        "rewrite": seeds_to_verify(benchmark, users["researcher"]).count(),
        "qc": flagged,
        "release": ready,
        "humaneval": 0,  # no study asks the researcher for ratings
    }
    assert researcher["stages"][3]["waiting"] > 0 and researcher["stages"][4]["waiting_text"].endswith("wait for a decision")

    reviewer = nav_for(users["reviewer"], benchmark)
    assert [s["key"] for s in reviewer["stages"]] == ["collect", "author", "review", "rewrite", "release", "humaneval"]
    waiting = Review.objects.filter(reviewer=users["reviewer"], verdict="", round__status="open").count()
    assert counts(reviewer)["review"] == waiting == 1 and counts(reviewer)["release"] is None
    assert reviewer["stages"][2]["url"] == f"/b/{DEMO_SLUG}/review/queue/"  # their reviews, not the rounds

    annotator = nav_for(users["annotator"], benchmark)
    assert [s["key"] for s in annotator["stages"]] == ["collect", "author", "release", "humaneval"]
    queue = Assignment.objects.filter(assignee=users["annotator"], benchmark=benchmark, status="open").count()
    author = annotator["stages"][1]
    assert author["waiting"] == queue > 0 and author["url"] == f"/b/{DEMO_SLUG}/queue/"  # their queue is where Author leads
    assert annotator["work"][0]["key"] == "author"  # and what waits for them starts with it
    assert [link["label"] for link in author["links"]] == ["Items", "My queue", "New item"]  # no researcher pages


def test_the_header_marks_the_current_stage_lists_its_pages_and_keeps_global_places_apart(demo, client_for):
    benchmark, users = demo
    page = client_for(users["annotator"]).get(f"/b/{DEMO_SLUG}/images/").content.decode()
    header = re.search(r'<header class="site-header".*?</header>', page, re.S)[0]
    stages = re.search(r'<nav class="pipeline" aria-label="Pipeline">(.*?)</nav>', header, re.S)[1]
    assert re.findall(r'data-stage="(\w+)"', stages) == ["collect", "author", "release", "humaneval"]
    assert re.search(r'class="stage" data-stage="collect" aria-current="true">Collect<span class="count"', stages)
    assert "images wait for screening" in stages  # the count says what it counts, to screen readers too
    pages = re.search(r'<nav class="stagebar" aria-label="Collect pages">(.*?)</nav>', header, re.S)[1]
    assert 'href="/b/alignmmbench-demo/images/" aria-current="page">Images' in pages and "Known sets" not in pages
    places = re.search(r'<nav class="places" aria-label="Places">(.*?)</nav>', header, re.S)[1]
    assert ">Benchmarks<" in places and ">API docs<" in places and "Locked logins" not in places
    assert 'aria-controls="site-menu bench-menu"' in header and 'aria-expanded="false"' in header

    dashboard = client_for(users["annotator"]).get(f"/b/{DEMO_SLUG}/").content.decode()
    work = re.search(r'<section class="card your-work".*?</section>', dashboard, re.S)[0]
    assert re.findall(r'<li><a href="[^"]+">(\w+)</a>', work)[0] == "Author"  # their queue first


def test_adding_a_stage_is_one_entry(demo, monkeypatch):
    benchmark, users = demo
    extra = navigation.Stage(
        "human-eval",
        "Human evaluation",
        links=(navigation.Link("Studies", "release-list"),),
        waiting=everything_released,
        waiting_text=("%(n)s rating waits", "%(n)s ratings wait"),
        pages=("human-eval-",),
    )
    monkeypatch.setattr(navigation, "STAGES", (*navigation.STAGES, extra))
    nav = nav_for(users["annotator"], benchmark)
    assert nav["stages"][-1]["label"] == "Human evaluation"
    assert nav["stages"][-1]["waiting"] == Item.objects.filter(benchmark=benchmark).count()
    assert nav["stages"][-1]["waiting_text"].endswith("ratings wait")
    # A role that may not see a stage never gets it, nor its count.
    monkeypatch.setattr(navigation, "STAGES", (replace(extra, role="researcher"),))
    assert nav_for(users["reviewer"], benchmark)["stages"] == []


def everything_released(user, benchmark):
    return Item.objects.filter(benchmark=benchmark)


def test_the_counts_do_not_grow_with_the_benchmark(demo, client_for, django_assert_max_num_queries):
    """Every page shows the counts: they cost one query whatever the numbers (and page costs
    elsewhere stay constant: tests/benchforge/test_page_costs.py)."""
    benchmark, users = demo
    client = client_for(users["researcher"])
    client.get(f"/b/{DEMO_SLUG}/releases/")
    navigation.changed()  # counted afresh, not read from the cache
    with django_assert_max_num_queries(50) as before:
        client.get(f"/b/{DEMO_SLUG}/releases/")
    for _ in range(30):
        make_image(benchmark, status="pending")
    with django_assert_max_num_queries(len(before.captured_queries)):
        client.get(f"/b/{DEMO_SLUG}/releases/")


def _collect_count(client) -> int:
    page = client.get(f"/b/{DEMO_SLUG}/releases/").content.decode()
    found = re.search(r'data-stage="collect">Collect(?:<span class="count"[^>]*><span aria-hidden="true">(\d+)</span>)?', page)
    return int(found[1] or 0)


def test_the_counts_are_kept_per_member_until_something_changes(demo, client_for, django_assert_max_num_queries):
    """A member's counts are read from the cache (one query fewer per page) and are never stale after
    a change: a saved row of a watched model, a request that writes, a bulk update through a job."""
    benchmark, users = demo
    client = client_for(users["researcher"])
    navigation.changed()
    with django_assert_max_num_queries(50) as counted:
        shown = _collect_count(client)
    with django_assert_max_num_queries(len(counted.captured_queries) - 1):
        assert _collect_count(client) == shown
    make_image(benchmark, status="pending")  # a save: the signal drops the counts
    assert _collect_count(client) == shown + 1
    # A bulk update sends no signal: the POST that made it drops the counts once answered.
    Image.objects.filter(benchmark=benchmark, status="pending").update(status="accepted")
    assert _collect_count(client) == shown + 1  # (kept: no request wrote yet)
    client.post(f"/b/{DEMO_SLUG}/releases/")  # any write request (here refused or not, it may have written)
    assert _collect_count(client) == 0


def _bulk_accept_pending_images(run):
    """A job that writes in bulk (no signals), as imports and rounds do."""
    Image.objects.filter(benchmark_id=run.job.benchmark_id, status="pending").update(status="accepted")


def test_a_change_in_one_benchmark_refreshes_its_counts_and_leaves_the_others_kept(
    benchmark, private_benchmark, make_user, client_for, django_assert_num_queries
):
    """Each benchmark keeps its own version of the counts: a save, a delete, a write request or a
    job's end in benchmark A counts A afresh (right numbers after each) while B's kept counts stay
    valid (read from the cache, no query); a write whose benchmark is not known drops both."""
    from jobs import registry
    from jobs import services as jobs
    from review.models import ReviewRound, RoundItem

    a, b = benchmark, private_benchmark
    lead = make_user("researcher", "lead", benchmarks=[a, b])
    rita = make_user("reviewer", "rita", benchmarks=[a, b])
    for bench in (a, b):
        make_image(bench, status="pending")
    item = Item.objects.create(benchmark=a, task=a.tasks.first(), kind="single_turn", author=lead)
    open_round = ReviewRound.objects.create(benchmark=a, number=1, created_by=lead, status="open")
    entry = RoundItem.objects.create(round=open_round, item=item, version=1)

    def counts_of(user, bench) -> dict:
        user_role(user)
        visible = navigation.visible_stages(user)
        return navigation.cached_waiting_counts(user, bench, visible)

    def b_is_kept() -> None:
        for user in (lead, rita):
            with django_assert_num_queries(0):  # read from the cache: not counted again
                assert counts_of(user, b) == kept_b[user.pk]

    kept_b = {user.pk: counts_of(user, b) for user in (lead, rita)}
    assert kept_b[lead.pk]["collect"] == 1 and counts_of(lead, a)["collect"] == 1

    image = make_image(a, status="pending")  # a save in A
    assert counts_of(lead, a)["collect"] == 2
    b_is_kept()

    image.delete()  # a delete in A
    assert counts_of(lead, a)["collect"] == 1
    b_is_kept()

    assert counts_of(rita, a)["review"] == 0
    Review.objects.create(round_id=open_round.pk, entry_id=entry.pk, item_id=item.pk, reviewer=rita)  # found through its round
    assert counts_of(rita, a)["review"] == 1
    b_is_kept()

    Image.objects.filter(benchmark=a, status="pending").update(status="accepted")  # bulk: no signal
    client_for(lead).post(f"/b/{a.slug}/releases/")  # a request that may have written in A
    assert counts_of(lead, a)["collect"] == 0
    b_is_kept()

    make_image(a, status="pending")
    assert counts_of(lead, a)["collect"] == 1
    registry.register("nav-test-bulk-accept", _bulk_accept_pending_images, label="accept pending images")
    jobs.run_now(jobs.create_job("nav-test-bulk-accept", benchmark=a))  # a job's end in A
    assert counts_of(lead, a)["collect"] == 0
    b_is_kept()

    Image.objects.filter(benchmark=b, status="pending").update(status="accepted")
    client_for(lead).post("/accounts/logout/")  # a write outside any benchmark: every benchmark's counts go
    assert counts_of(lead, b)["collect"] == 0


def test_the_kept_header_is_the_one_built_for_each_request(demo, client_for, settings):
    """The header is kept per member, role, language and page; what differs per request (the CSRF
    field, the address the language switch returns to) is this request's, and a page of a stage that
    is no header link (an item) shows the stage's header, never another page's current link."""
    benchmark, users = demo
    items = list(Item.objects.filter(benchmark=benchmark).order_by("pk").values_list("pk", flat=True)[:2])
    pages = [
        f"/b/{DEMO_SLUG}/items/?status=draft",
        f"/b/{DEMO_SLUG}/items/?status=accepted",
        f"/b/{DEMO_SLUG}/items/{items[0]}/",
        f"/b/{DEMO_SLUG}/items/{items[1]}/",
        f"/b/{DEMO_SLUG}/queue/",
        f"/b/{DEMO_SLUG}/review/queue/",
        f"/b/{DEMO_SLUG}/images/",
    ]

    def header(client, path) -> str:
        page = client.get(path).content.decode()
        found = re.search(r'<header class="site-header".*?</header>', page, re.S)[0]
        tokens = set(re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', found))
        assert len(tokens) == 1  # both forms carry this response's token
        return found.replace(tokens.pop(), "TOKEN")

    for role in ("researcher", "annotator"):
        client = client_for(users[role])
        settings.BENCHFORGE_NAV_CACHE_SECONDS = 0  # nothing kept: each header built for its request
        fresh = {path: header(client, path) for path in pages}
        settings.BENCHFORGE_NAV_CACHE_SECONDS = 300
        navigation.changed()
        for _ in range(2):  # filled, then kept
            for path in pages:
                shown = header(client, path)
                assert shown == fresh[path], path
                assert f'name="next" value="{path.replace("&", "&amp;")}"' in shown
    assert 'aria-current="page">Items' in fresh[pages[0]] and 'aria-current="page"' not in fresh[pages[2]].split("stagebar")[-1]


def test_a_members_change_shows_in_the_kept_people_selects(benchmark, make_user, client_for):
    """The items list keeps its people selects until something changes in the benchmark: a member
    added or removed through the relation (a service, the admin, a command) is such a change."""
    lead = make_user("researcher", "lead", benchmarks=[benchmark])
    client = client_for(lead)

    def people() -> set[str]:
        page = client.get(f"/b/{benchmark.slug}/items/").content.decode()
        select = re.search(r'<select name="author">(.*?)</select>', page, re.S)[1]
        return set(re.findall(r'<option value="([^"]+)"', select))

    assert people() == {"lead"}
    newcomer = make_user("annotator", "newcomer", benchmarks=[benchmark])  # user.benchmarks.add(...)
    assert people() == {"lead", "newcomer"}
    benchmark.members.remove(newcomer)
    assert people() == {"lead"}
    newcomer.benchmarks.add(benchmark)
    assert people() == {"lead", "newcomer"}
    newcomer.benchmarks.clear()
    assert people() == {"lead"}


@pytest.fixture
def submittable(benchmark, make_user, fresh_image_indexes):
    """A lead, a writer and the writer's draft with an accepted image: what a submit needs."""
    from annotation.services import create_item
    from curation import services as curation
    from tests.factories import jpeg

    lead = make_user("researcher", "lead", benchmarks=[benchmark])
    writer = make_user("annotator", "writer", benchmarks=[benchmark])
    task = benchmark.tasks.get(slug="counting")
    image = curation.ingest_image(benchmark, jpeg(8300), tasks=[task]).image
    curation.screen_images(benchmark, [image.pk], action="accept", user=lead)
    return lead, writer, image, create_item(benchmark, task=task, user=writer)


def test_an_editor_save_leaves_the_kept_counts_and_a_submit_drops_them(
    benchmark, submittable, client_for, django_assert_num_queries
):
    """Autosave sends the editor's form every few seconds of typing: an edit is in no count, so the
    members' kept counts and headers stay valid (no recount on their next page), while a submit,
    which changes a count, still drops them."""
    from tests.annotation.test_pages import form_data

    lead, writer, image, item = submittable
    user_role(lead)
    visible = navigation.visible_stages(lead)

    before = navigation.cached_waiting_counts(lead, benchmark, visible)
    web = client_for(writer)
    base = f"/b/{benchmark.slug}/items/{item.pk}"
    for n, question in enumerate(("How many apples?", "How many red apples?"), start=1):
        saved = web.post(f"{base}/save/", form_data(item, n, image=image, question=question), HTTP_HX_REQUEST="true")
        assert saved.status_code == 200 and Item.objects.get(pk=item.pk).question == question
        with django_assert_num_queries(0):  # kept: not counted again
            assert navigation.cached_waiting_counts(lead, benchmark, visible) == before

    submitted = web.post(f"{base}/submit/", form_data(item, 3, image=image, question="How many red apples?"))
    assert submitted.status_code == 204 and Item.objects.get(pk=item.pk).status == "answered"
    after = navigation.cached_waiting_counts(lead, benchmark, visible)
    assert after["review"] == before["review"] + 1  # answered, waiting for a round: counted afresh


def test_the_compiled_counts_are_each_stages_own_count_for_every_member(demo, make_user, private_benchmark):
    """The counts query is compiled once per role and set of stages, then run with each member's and
    benchmark's ids: for every member of the demo (and one of another benchmark, and the same
    members there), each stage's number is what its selector's querysets count on their own."""
    benchmark, users = demo
    outsider = make_user("reviewer", "other-bench", benchmarks=[private_benchmark])
    private_benchmark.members.add(users["annotator"], users["researcher"])
    for bench in (benchmark, private_benchmark):
        for user in [*users.values(), outsider]:
            visible = navigation.visible_stages(user)
            expected = {}
            for stage in visible:
                found = stage.waiting(user, bench) if stage.waiting else None
                if found is not None:
                    found = sum(q.count() for q in (found if isinstance(found, tuple) else (found,)))
                expected[stage.key] = found
            assert navigation.waiting_counts(user, bench, visible) == expected, (user.username, bench.slug)
    assert any(n for n in navigation.waiting_counts(users["researcher"], benchmark, navigation.STAGES).values())


def test_a_submit_refreshes_the_kept_headers_counts_and_rebuilds_none_of_the_setup(
    benchmark, submittable, client_for, monkeypatch
):
    """A team submits and gives verdicts all day: such a write drops what counts its work, not what
    only its setup changes. After a submit the lead's next page shows the new count in its header,
    with the header, task rows and people select kept (none of them rebuilt), and the header with
    its count is the one built afresh for the request."""
    from benchforge.templatetags import navigation as header_tag
    from curation import selectors as curation_selectors
    from tests.annotation.test_pages import form_data

    lead, writer, image, item = submittable
    built = {"header": 0, "task rows": 0}
    real_header, real_rows = header_tag._header, curation_selectors._task_rows

    def counting_header(*args, **kwargs):
        built["header"] += 1
        return real_header(*args, **kwargs)

    def counting_rows(*args, **kwargs):
        built["task rows"] += 1
        return real_rows(*args, **kwargs)

    monkeypatch.setattr(header_tag, "_header", counting_header)
    monkeypatch.setattr(curation_selectors, "_task_rows", counting_rows)
    lead_web = client_for(lead)
    items_list = f"/b/{benchmark.slug}/items/"

    def review_count(page: str):
        link = re.search(r'<a href="[^"]*" class="stage" data-stage="review"[^>]*>(.*?)</a>', page, re.S)[1]
        found = re.search(r'<span aria-hidden="true">(\d+)</span>', link)
        return int(found[1]) if found else 0

    first = lead_web.get(items_list).content.decode()
    assert built == {"header": 1, "task rows": 1}
    before = review_count(first)

    submitted = client_for(writer).post(
        f"/b/{benchmark.slug}/items/{item.pk}/submit/", form_data(item, 1, image=image, question="How many apples?")
    )
    assert submitted.status_code == 204 and Item.objects.get(pk=item.pk).status == "answered"
    after = lead_web.get(items_list).content.decode()
    assert review_count(after) == before + 1  # counted afresh
    assert built == {"header": 1, "task rows": 1}  # kept: nothing of the setup rebuilt

    def header_of(page: str) -> str:
        found = re.search(r'<header class="site-header".*?</header>', page, re.S)[0]
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "TOKEN", found)

    navigation.changed()  # every kept value dropped: the header built for this request, with its count
    assert header_of(lead_web.get(items_list).content.decode()) == header_of(after)
    assert built["header"] == 2


def test_a_change_of_setup_rebuilds_what_the_pages_keep_of_it(benchmark, private_benchmark, make_user, client_for):
    """What is kept of a benchmark's setup (header, task rows, people selects) follows every way its
    setup changes: a task or benchmark saved (the admin, a service), a bulk update by a write request
    that is not marked as work only, a job's end; and another benchmark's stays kept meanwhile."""
    from jobs import registry
    from jobs import services as jobs

    lead = make_user("researcher", "lead", benchmarks=[benchmark, private_benchmark])
    web = client_for(lead)

    def items_page(bench) -> str:
        return web.get(f"/b/{bench.slug}/items/").content.decode()

    def task_options(page: str) -> str:
        return re.search(r'<select name="task"[^>]*>(.*?)</select>', page, re.S)[1]

    other_before = items_page(private_benchmark)
    task = benchmark.tasks.get(slug="counting")
    assert "Counting things" not in task_options(items_page(benchmark))

    task.name = "Counting things"
    task.save()  # a save of a setup model
    assert "Counting things" in task_options(items_page(benchmark))

    benchmark.name = "Renamed benchmark"
    benchmark.save()
    assert '<a class="bench-name"' in (page := items_page(benchmark)) and ">Renamed benchmark</a>" in page

    type(task).objects.filter(pk=task.pk).update(name="Counting, bulk")  # no signal
    web.post(f"/b/{benchmark.slug}/settings/", {})  # a write request in the benchmark, not marked work only
    assert "Counting, bulk" in task_options(items_page(benchmark))

    type(task).objects.filter(pk=task.pk).update(name="Counting by a job")
    registry.register("nav-test-noop", _bulk_accept_pending_images, label="a job")
    jobs.run_now(jobs.create_job("nav-test-noop", benchmark=benchmark))  # a job's end
    assert "Counting by a job" in task_options(items_page(benchmark))

    # Another benchmark's kept page is unchanged (the same names; its counts had no cause to move).
    assert task_options(items_page(private_benchmark)) == task_options(other_before)


def test_a_write_through_the_api_drops_its_own_benchmarks_kept_counts_only(
    benchmark, private_benchmark, make_user, client_for, django_assert_num_queries
):
    """Screening through the API (what the screening grid calls) counts its benchmark afresh and
    leaves another benchmark's kept counts valid, as a write to the benchmark's pages does."""
    lead = make_user("researcher", "lead", benchmarks=[benchmark, private_benchmark])
    images = [make_image(bench, status="pending") for bench in (benchmark, private_benchmark)]
    user_role(lead)
    visible = navigation.visible_stages(lead)
    kept = {bench.pk: navigation.cached_waiting_counts(lead, bench, visible) for bench in (benchmark, private_benchmark)}
    assert kept[benchmark.pk]["collect"] == 1

    screened = client_for(lead).post(
        f"/api/v1/benchmarks/{benchmark.slug}/images/screen/",
        {"ids": [images[0].pk], "action": "accept"},
        content_type="application/json",
    )
    assert screened.status_code == 200, screened.content
    assert navigation.cached_waiting_counts(lead, benchmark, visible)["collect"] == 0
    with django_assert_num_queries(0):  # still kept
        assert navigation.cached_waiting_counts(lead, private_benchmark, visible) == kept[private_benchmark.pk]
