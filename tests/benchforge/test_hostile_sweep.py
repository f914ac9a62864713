"""Every route of the seeded demo (every stage has rows: items, reviews, a rewrite batch, a QC run,
a release) gets hostile values in every field name the code reads, as a researcher (who may do
everything) and as an annotator (who is refused most of it). Nothing may answer a server error,
and no HTML page may carry a script payload raw. The field names are read from the code and the
templates, so a new view's parameters join the sweep without anyone listing them."""

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.urls import get_resolver

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.django_db

APPS = (
    "annotation",
    "benchforge",
    "curation",
    "dashboard",
    "evalserver",
    "exports",
    "humaneval",
    "jobs",
    "labelstudio",
    "llm",
    "qc",
    "review",
    "rewrite",
)

# The ways ordinary and hostile input has broken views before: NUL (Postgres refuses it), numbers
# past 64 bits (SQLite overflows), numbers Python parses but no column holds, paths, script.
HOSTILE = [
    "bad\x00value",
    "9" * 40,
    "-1",
    "0",
    "1e999",
    "NaN",
    "../../../etc/passwd",
    "x" * 5000,
    '"><img src=x onerror=alert(1)>',
]
SCRIPT = HOSTILE[-1]
MULTIPART = HOSTILE[0]

FIELD_PATTERNS = [
    r"""\b(?:GET|POST|FILES|query_params|data|params)\.(?:get|getlist|pop)\(\s*["'](\w+)["']""",
    r"""\b(?:GET|POST|query_params|data)\[\s*["'](\w+)["']\s*\]""",
    r"""^\s+(\w+)\s*=\s*(?:forms|serializers)\.\w+\(""",
]


def field_names() -> list[str]:
    names = set()
    for app in APPS:
        for path in Path(REPO_ROOT, app).rglob("*.py"):
            text = path.read_text()
            for pattern in FIELD_PATTERNS:
                names.update(re.findall(pattern, text, flags=re.MULTILINE))
        for path in Path(REPO_ROOT, app).rglob("*.html"):
            names.update(re.findall(r"""\bname=["'](\w+)["']""", path.read_text()))
    names -= {"csrfmiddlewaretoken", "password", "username"}  # logging in is test_auth's business
    return sorted(names)


def _patterns():
    def walk(patterns, prefix=""):
        for p in patterns:
            if hasattr(p, "url_patterns"):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            else:
                yield prefix + str(p.pattern)

    # Logging out would turn every later request into a login redirect that tests nothing.
    return [r for r in walk(get_resolver().url_patterns) if not r.startswith(("admin/", "^media", "accounts/logout"))]


@pytest.fixture
def demo(settings, fresh_image_indexes, demo_snapshot):
    from curation.models import Benchmark
    from demo.management.commands.seed_demo import DEMO_SLUG

    users = demo_snapshot.restore(settings)  # seeded once per process, copied in
    return Benchmark.objects.get(slug=DEMO_SLUG), users


def _route_values(benchmark) -> dict[str, str]:
    from annotation.models import Assignment, Item
    from exports.models import Release
    from jobs.models import Job
    from labelstudio.models import LabelStudioLink
    from review.models import Review

    def first(queryset):
        row = queryset.order_by("pk").first()
        return row.pk if row else 1

    release = Release.objects.filter(benchmark=benchmark).order_by("pk").first()
    item = Item.objects.filter(benchmark=benchmark, seed__isnull=True).order_by("pk").first()
    return {
        "slug": benchmark.slug,
        "item_id": str(item.pk),
        "pk": str(first(benchmark.images.all())),
        "job_id": str(first(Job.objects.all())),
        "assignment_id": str(first(Assignment.objects.filter(benchmark=benchmark))),
        "link_id": str(first(LabelStudioLink.objects.all())),
        "review_id": str(first(Review.objects.all())),
        "number": "1",
        "task_slug": benchmark.tasks.order_by("pk").first().slug,
        "version": release.version if release else "1.0.0",
        "kind": "public.zip",
    }


def _eval_values(benchmark, users) -> dict[str, str]:
    """A submission window on the demo's release with a team of the annotator and one submission,
    so the evaluation server's routes are swept past their lookups (rows made directly: the demo's
    release is not frozen, and scoring is not what is swept)."""
    from datetime import timedelta

    from django.utils import timezone

    from evalserver.models import Membership, Submission, Team, Window
    from exports.models import Release, Score

    release = Release.objects.filter(benchmark=benchmark).order_by("pk").first()
    items = list(release.items.filter(split="test").values_list("key", flat=True)) if release else []
    now = timezone.now()
    window = Window.objects.create(
        release=release,
        title="Sweep",
        method="pointwise",
        judge="judge",
        opens_at=now - timedelta(days=1),
        closes_at=now + timedelta(days=1),
        items=items,
        shown_items=items[: len(items) // 2],
        created_by=users["researcher"],
    )
    team = Team.objects.create(window=window, name="Sweepers", token_hash="0" * 64, created_by=users["annotator"])
    Membership.objects.create(window=window, team=team, user=users["annotator"])
    score = Score.objects.create(
        release=release, label="swept", method="pointwise", source="upload", created_by=users["annotator"]
    )
    sub = Submission.objects.create(window=window, team=team, submitted_by=users["annotator"], model_name="swept", score=score)
    return {"pk": str(window.pk), "sub": str(sub.pk)}


def _routes(benchmark, users=None) -> list[str]:
    values = _route_values(benchmark)
    evals = _eval_values(benchmark, users) if users else {"pk": "1", "sub": "1"}
    routes = []
    for route in _patterns():
        if route.startswith(("eval/", "api/v1/eval/")):
            for name, value in evals.items():
                route = route.replace(f"<id:{name}>", value)
        for name, value in values.items():
            for converter in ("slug", "id", "str"):
                route = route.replace(f"<{converter}:{name}>", value)
        assert "<" not in route, f"no value for a parameter of {route}: add it to _route_values"
        routes.append("/" + route)
    return routes


def test_the_sweep_reads_the_fields_of_every_stage():
    names = set(field_names())
    # One field each that only one stage reads: if the discovery breaks, the sweep says so.
    assert {"image_id", "question", "reason", "decision", "statuses", "dev_ratio", "against", "template"} <= names, names


# Under load (2 cores, load 16) one role took ~480 s, past the suite's 300 s; a third of that was
# Django's multipart parser reading ~250 fields per POST nine times per route. The views read the
# same request.POST from either encoding, so each route gets one multipart POST (the NUL value,
# which is what broke parsers) and the other values urlencoded, and a method a route answers with
# 405 (decided before any input is read) is not sent again. Every route gets the same fields, so
# each value's query string is encoded once, not once per route and method (a tenth of the time).
@pytest.mark.timeout(900)
@pytest.mark.parametrize("role", ["researcher", "annotator"])
def test_no_route_answers_hostile_input_with_a_server_error(client_for, demo, role):
    benchmark, users = demo
    client = client_for(users[role])
    client.raise_request_exception = False
    fields = field_names()
    encoded = {value: urlencode(dict.fromkeys(fields, value)) for value in HOSTILE}
    form = "application/x-www-form-urlencoded"
    failures = []
    for route in _routes(benchmark, users):
        not_allowed = set()
        for value in HOSTILE:
            methods = {
                "GET": lambda: client.get(f"{route}?{encoded[value]}"),
                "POST": (
                    (lambda: client.post(route, dict.fromkeys(fields, value)))
                    if value == MULTIPART
                    else (lambda: client.post(route, encoded[value], content_type=form))
                ),
            }
            for name, send in methods.items():
                if name in not_allowed:
                    continue
                response = send()
                if response.status_code == 405:
                    not_allowed.add(name)
                if response.status_code >= 500:
                    failures.append(f"{name} {route} with {value[:20]!r}: {response.status_code}")
                elif value == SCRIPT and response.get("Content-Type", "").startswith("text/html"):
                    if SCRIPT in response.content.decode(errors="replace"):
                        failures.append(f"{name} {route} echoes the payload unescaped")
    assert failures == []
