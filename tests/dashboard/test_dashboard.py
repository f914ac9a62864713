"""The dashboard opens with summary cards; the per-task tables are folded and leave out empty
stages and tasks without submissions."""

import re

import pytest

from annotation import services
from tests.factories import complete_fields, make_image

pytestmark = pytest.mark.django_db


def headers(html: str, table_id: str) -> list[str]:
    table = html.split(f'id="{table_id}"', 1)[1].split("</thead>", 1)[0]
    return re.findall(r"<th>([^<]*)</th>", table)


def test_a_new_benchmark_shows_cards_and_no_table_of_zeros(client_for, annotator, benchmark):
    html = client_for(annotator).get("/b/demo/").content.decode()
    quota = sum(t.quota or 0 for t in benchmark.tasks.all())
    assert html.index('id="summary-cards"') < html.index('id="stage-counts"')
    assert f'0 <span class="muted">accepted of {quota} wanted</span>' in html
    assert "None yet" in html and "0 submitted in the last" in html
    assert headers(html, "stage-counts") == ["Category", "Task", "Quota", "Total", "Progress"]
    assert '<details class="fold" id="stage-details">' in html and '<details class="fold" id="progress">' in html
    assert 'id="progress-tasks"' not in html and "No task had a submission" in html


def test_cards_and_tables_follow_the_items(client_for, annotator, benchmark, counting):
    image = make_image(benchmark, tasks=[counting])
    make_image(benchmark, status="pending", tasks=[counting])
    services.create_item(benchmark, task=counting, user=annotator, **complete_fields(image))
    answered = services.create_item(benchmark, task=counting, user=annotator, **complete_fields(image, question="Which?"))
    services.submit_item(answered, user=annotator, expected_version=answered.version)
    html = client_for(annotator).get("/b/demo/").content.decode()
    assert "2 collected · 1 waiting for screening" in html
    assert "<li><b>1</b> draft</li>" in html and "<li><b>1</b> answered</li>" in html
    assert headers(html, "stage-counts") == ["Category", "Task", "Quota", "Draft", "Answered", "Total", "Progress"]
    assert "1 submitted in the last" in html and "by 1 annotator" in html
    pace = html.split('id="progress-tasks"', 1)[1].split("</table>", 1)[0]
    assert re.findall(r'data-task="([^"]+)"', pace) == ["counting"]


def test_the_kept_counts_follow_a_rename_and_each_role_and_language_has_its_own(
    client_for, api_for, annotator, researcher, benchmark, counting, settings
):
    """The counts part is kept rendered (views.counts_html): a second view reuses it, a write in the
    benchmark renders it again, and a role or language never gets another's copy."""
    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 30
    ann, res = client_for(annotator), client_for(researcher)
    qc_link = 'href="/b/demo/qc/"'  # offered to researchers only
    assert qc_link in res.get("/b/demo/").content.decode()
    kept = ann.get("/b/demo/").content.decode()
    assert qc_link not in kept and counting.name in kept
    assert ann.get("/b/demo/").content.decode().count(counting.name) == kept.count(counting.name)

    renamed = api_for(researcher).patch("/api/v1/benchmarks/demo/tasks/counting/", {"name": "Tallying"}, format="json")
    assert renamed.status_code == 200, renamed.content
    again = ann.get("/b/demo/").content.decode()
    assert "Tallying" in again and qc_link not in again
    chinese = client_for(annotator)
    chinese.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    assert "道题目/天" in chinese.get("/b/demo/").content.decode() and "items a day" in ann.get("/b/demo/").content.decode()


def test_a_due_part_is_recounted_by_one_request_while_the_others_show_the_last_count(benchmark, settings):
    """At a million items a recount takes seconds: while one request recounts a due part, the
    others show the last count (with its time) instead of each recounting it."""
    from datetime import timedelta

    from django.core.cache import cache
    from django.utils import timezone

    from dashboard.views import RecentCounts

    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 30
    counted = []

    def count(b):
        counted.append(b.pk)
        return len(counted)

    assert RecentCounts(benchmark).get("part", count) == 1 and RecentCounts(benchmark).get("part", count) == 1
    key = f"dashboard:{benchmark.pk}:part:{timezone.localdate().isoformat()}"
    long_ago = timezone.now() - timedelta(seconds=31)
    cache.set(key, (1, long_ago), 300)  # due for a recount
    cache.add(f"{key}:recount", 1, 60)  # ...which another request is doing
    waiting = RecentCounts(benchmark)
    assert waiting.get("part", count) == 1 and waiting.counted_at == long_ago and counted == [benchmark.pk]
    cache.delete(f"{key}:recount")  # that request is gone without a result: the next one recounts
    again = RecentCounts(benchmark)
    assert again.get("part", count) == 2 and again.counted_at > long_ago and cache.get(f"{key}:recount") is None
    assert RecentCounts(benchmark).get("part", count) == 2 and len(counted) == 2


def test_the_request_that_claims_a_due_recount_does_not_wait_for_it(client_for, annotator, benchmark, settings):
    """At a million items a recount took the request that claimed it about two seconds: it now shows
    the last count like everyone else and recounts once its response is sent."""
    from datetime import timedelta

    from django.core.cache import cache
    from django.utils import timezone

    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 30
    client = client_for(annotator)
    make_image(benchmark, status="pending")
    assert "1 collected · 1 waiting for screening" in client.get("/b/demo/").content.decode()
    key = f"dashboard:{benchmark.pk}:images:{timezone.localdate().isoformat()}"
    long_ago = timezone.now() - timedelta(seconds=31)
    cache.set(key, ({"pending": 7}, long_ago), 300)  # due, and not what the table holds
    from benchforge import navigation

    navigation.setup_changed(benchmark.pk)  # the kept rendering too (a write of work leaves it)

    shown = client.get("/b/demo/").content.decode()
    assert "7 collected · 7 waiting for screening" in shown  # the last count, without waiting
    value, counted_at, _took = cache.get(key)
    assert value["pending"] == 1 and counted_at > long_ago  # recounted once the response was sent
    assert cache.get(f"{key}:recount") is None
    navigation.setup_changed(benchmark.pk)
    assert "1 collected · 1 waiting for screening" in client.get("/b/demo/").content.decode()


def test_a_part_that_takes_long_to_count_is_recounted_less_often(benchmark, settings):
    """At a million items a part took seconds to count, every half minute, slowing every page while
    it ran: a part is due again only after SPACING times its counting time, if that is longer."""
    from datetime import timedelta

    from django.core.cache import cache
    from django.utils import timezone

    from dashboard.views import RecentCounts

    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 30
    counted = []

    def count(b):
        counted.append(b.pk)
        return len(counted)

    key = f"dashboard:{benchmark.pk}:part:{timezone.localdate().isoformat()}"
    assert RecentCounts(benchmark).get("part", count) == 1
    value, counted_at, took = cache.get(key)
    assert value == 1 and 0 <= took < 1
    # Counted 31 s ago in 2 s: due after 200 s, not 30.
    cache.set(key, (1, timezone.now() - timedelta(seconds=31), 2.0), 3000)
    assert RecentCounts(benchmark).get("part", count) == 1 and counted == [benchmark.pk]
    cache.set(key, (1, timezone.now() - timedelta(seconds=201), 2.0), 3000)
    assert RecentCounts(benchmark).get("part", count) == 2
    # A quick part keeps the configured period; an entry from before this change (no time) too.
    cache.set(key, (2, timezone.now() - timedelta(seconds=31)), 3000)
    assert RecentCounts(benchmark).get("part", count) == 3
    cache.set(key, (3, timezone.now() - timedelta(seconds=31), 0.01), 3000)
    assert RecentCounts(benchmark).get("part", count) == 4


def test_the_kept_counts_survive_a_teams_writes_and_follow_its_setup(client_for, annotator, benchmark, settings, monkeypatch):
    """The rendered counts show RecentCounts' numbers, which no write drops: a submit or a verdict
    (a write of work) leaves the rendering kept, a task renamed (the setup) renders it again."""
    from benchforge import navigation
    from dashboard import views

    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 300
    rendered = []
    real = views._counts_context
    monkeypatch.setattr(views, "_counts_context", lambda *args: rendered.append(1) or real(*args))
    client = client_for(annotator)
    client.get("/b/demo/")
    navigation.changed(benchmark.pk)  # what a submit, a verdict or a rating drops
    client.get("/b/demo/")
    assert len(rendered) == 1
    task = benchmark.tasks.get(slug="counting")
    task.name = "Counting, renamed"
    task.save()
    assert "Counting, renamed" in client.get("/b/demo/").content.decode()
    assert len(rendered) == 2
