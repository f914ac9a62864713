"""Soak: 20 people clicking at once for a minute, on Postgres, gunicorn and a Celery worker; then
the invariants of every state change, asked in SQL.

Run: .venv/bin/python bench/soak.py [--seconds 60] [--clients 20] [--db-prefix bf_soak]

It creates a throwaway Postgres database (named after --db-prefix and this process, dropped at the
end), fills a benchmark (images with files, submitted items, a QC run's flagged items, seeds with
rewrites to verify), serves the app with gunicorn (2 workers x 4 threads, DEBUG off) and starts one
Celery worker (solo pool) on Redis for the jobs (release builds, round openings). Then --clients
closed-loop clients, each logged in as its own person, mix for --seconds:

  researchers (1 in 5)  assign evenly, assign by hand, reassign, cancel, give drafts to someone,
                        open and close review rounds, QC keep/remove, create / build / freeze
                        releases and edit their notes
  annotators (2 in 5)   queue "next" (starts an assignment), save the draft, submit it, withdraw one;
                        finish and submit a draft whose assignment was cancelled (then withdraw it)
  reviewers (2 in 5)    verdicts on their review queue, approve / reject rewrites

Targets are drawn from a few shared pools, so people collide on the same rows all the time, and one
request in five is sent twice at once (a double click). When the time is up it waits for the jobs
to finish and prints the answers per action, the number of server errors (5xx, target 0) and the
invariant violations (tests/races.py's INVARIANTS, target 0).

Connections: BENCH_POSTGRES_URL (admin, default postgres://postgres@127.0.0.1:5432/postgres),
BENCH_REDIS_URL (broker, default redis://127.0.0.1:6379/15).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import random
import secrets
import shutil
import string
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.throwaway import Workers, app_env, create_database, drop_database  # noqa: E402
from bench.support.web import serve  # noqa: E402

SLUG = "soak"
PASSWORD = "soak-password-not-used-for-login"
COMPLETE = {
    "question": "How many apples are on the table?",
    "reference_answer": "There are three red apples on the wooden table, two on the left and one on the right.",
    "criteria": [{"kind": "exact", "text": "The count is three."}],
}
VERSIONS = [f"1.0.{n}" for n in range(12)]


# ---- the data ---------------------------------------------------------------------------------------


def tiny_jpeg(n: int) -> bytes:
    from PIL import Image as PILImage

    rng = random.Random(n)
    img = PILImage.new("RGB", (48, 36), tuple(rng.randrange(256) for _ in range(3)))
    for x in range(0, 48, 6):
        img.putpixel((x, rng.randrange(36)), tuple(rng.randrange(256) for _ in range(3)))
    out = io.BytesIO()
    img.save(out, "JPEG", quality=80)
    return out.getvalue()


def fill(people: dict[str, int], images: int) -> dict:
    """The benchmark and its people (sessions and tokens), images with files, submitted items,
    a QC run's flagged items and seeds with rewrites. Returns what the clients need."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage
    from django.core.management import call_command

    from annotation.services import change_status_many, create_item, import_external_items, submit_item, update_item
    from annotation.workflow import ACCEPTED, QC_FLAGGED
    from benchforge.auth import create_token_for
    from benchforge.services import create_or_update_user
    from curation.models import Image
    from curation.services import load_preset
    from qc.models import QCItem, QCRun
    from rewrite.models import Rewrite, RewriteBatch
    from rewrite.services import ensure_default_templates

    started = time.monotonic()
    call_command("migrate", verbosity=0)
    benchmark = load_preset("alignmmbench", slug=SLUG)
    counting, ocr = benchmark.tasks.get(slug="counting"), benchmark.tasks.get(slug="ocr")
    counting.quota, ocr.quota = images // 2, images
    counting.save(update_fields=["quota"])
    ocr.save(update_fields=["quota"])
    users = {}
    for role, n in people.items():
        for k in range(n):
            users[f"{role}{k}"] = create_or_update_user(f"{role}{k}", role, password=PASSWORD, benchmarks=[benchmark])[0]
    rows = []
    for n in range(images):
        data = tiny_jpeg(n)
        digest = hashlib.sha256(data).hexdigest()
        name = default_storage.save(f"images/{digest[:2]}/{digest}.jpg", ContentFile(data))
        rows.append(
            Image(
                benchmark=benchmark,
                file=name,
                sha256=digest,
                md5=hashlib.md5(data).hexdigest(),
                phash=n,
                dhash=n,
                width=48,
                height=36,
                format="JPEG",
                file_size=len(data),
                status=Image.Status.ACCEPTED,
            )
        )
    made = Image.objects.bulk_create(rows)
    for n, image in enumerate(made):
        image.tasks.set([counting if n % 2 else ocr])
    annotators = [u for name, u in users.items() if name.startswith("annotator")]
    researcher = next(u for name, u in users.items() if name.startswith("researcher"))
    # Submitted items waiting for a review round, written on images nobody is handed (the last ones).
    spare = [i for n, i in enumerate(made) if n % 2 == 0][-60:]
    for n, image in enumerate(spare[:40]):
        author = annotators[n % len(annotators)]
        item = create_item(benchmark, task=ocr, user=author, assignee=author)
        item = update_item(item, {**COMPLETE, "images": [image.pk]}, expected_version=item.version, user=author)
        submit_item(item, user=author)
    # A QC run that flagged 60 multiple-choice items (imported, as an external benchmark's are).
    specs = [
        {
            "task": ocr,
            "external_id": f"qc{n}",
            "kind": "mcq",
            "question_type": "closed",
            "question": f"Question {n}: which of these is in the picture?",
            "choices": [f"thing {n}-{j}" for j in range(4)],
            "answer": "B",
            "images": [spare[40 + n % 20].pk],
        }
        for n in range(60)
    ]
    imported, problems = import_external_items(benchmark, specs, user=researcher)
    assert not problems, problems
    run = QCRun.objects.create(benchmark=benchmark, number=1, filter="text_only", model_names=["a", "b"], status="finished")
    QCItem.objects.bulk_create(QCItem(run=run, item=i, done=True, flagged=True, solved_by=["a", "b"]) for i in imported)
    change_status_many(imported, QC_FLAGGED, user=researcher, action="qc_flagged", note="QC run 1")
    # Accepted seeds with four rewrites each to verify.
    template = ensure_default_templates(benchmark)[0].latest
    batch = RewriteBatch.objects.create(
        benchmark=benchmark, number=1, endpoint="soak", model="soak", template_version=template, created_by=researcher
    )
    for n in range(30):
        seed = create_item(
            benchmark, task=ocr, user=researcher, status=ACCEPTED, **(COMPLETE | {"images": [spare[n % 20 + 40].pk]})
        )
        Rewrite.objects.bulk_create(
            Rewrite(seed=seed, batch=batch, position=k, text=f"Rewrite {k} of seed {n}: how many apples are there?")
            for k in range(4)
        )
    backend = next(path for path in settings.AUTHENTICATION_BACKENDS if "axes" not in path)
    clients = {}
    for name, user in users.items():
        session = SessionStore()
        session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(user.pk), backend
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        clients[name] = {"cookie": session.session_key, "token": create_token_for(user), "pk": user.pk}
    print(
        f"filled in {time.monotonic() - started:.0f} s: {images} images, {len(users)} people, 40 submitted items, "
        f"60 flagged by QC, 30 seeds with 4 rewrites each"
    )
    return {"clients": clients, "benchmark": benchmark.pk, "run": run.number}


# ---- the clients ------------------------------------------------------------------------------------


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.answers: dict[str, Counter] = defaultdict(Counter)
        self.errors: list[str] = []

    def add(self, action: str, status: int, detail: str = "") -> None:
        with self.lock:
            self.answers[action][status] += 1
            if status >= 500:
                self.errors.append(f"{action}: {status} {detail[:300]}")

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in self.answers.values())


class Person:
    """One logged-in person: a session for the pages (with the CSRF cookie and header), a token for
    the API, and a random generator of their own."""

    def __init__(self, name: str, info: dict, port: int, tally: Tally):
        csrf = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
        base = f"http://127.0.0.1:{port}"
        self.name, self.pk, self.tally, self.rng = name, info["pk"], tally, random.Random(name)
        self.pages = httpx.Client(
            base_url=base,
            cookies={"sessionid": info["cookie"], "csrftoken": csrf},
            headers={"X-CSRFToken": csrf},
            timeout=120,
        )
        self.api_client = httpx.Client(base_url=base, headers={"Authorization": f"Token {info['token']}"}, timeout=120)

    def request(self, action: str, client: httpx.Client, method: str, path: str, twice: bool = False, **kwargs):
        """Send one request (or the same one twice at once: a double click); each answer is tallied."""

        def send(out: list):
            try:
                response = client.request(method, path, **kwargs)
                out.append(response)
                self.tally.add(action, response.status_code, f"{method} {path}: {response.text[:300]}")
            except httpx.HTTPError as exc:
                self.tally.add(action, 599, f"{method} {path}: {type(exc).__name__}: {exc}")

        answers: list[httpx.Response] = []
        if twice:
            other = threading.Thread(target=send, args=(answers,))
            other.start()
            send(answers)
            other.join()
        else:
            send(answers)
        return answers[0] if answers else None

    def page(self, action, path, data=None, twice=False):
        return self.request(action, self.pages, "POST" if data is not None else "GET", path, twice, data=data)

    def api(self, action, method, path, body=None, twice=False):
        return self.request(action, self.api_client, method, path, twice, json=body)

    def double(self) -> bool:
        return self.rng.random() < 0.2


def pick(queryset, n: int = 1, rng=random, among: int = 500) -> list:
    """n ids drawn from the first `among` rows (a small pool: people collide on the same rows)."""
    ids = list(queryset.values_list("pk", flat=True)[:among])
    return rng.sample(ids, min(n, len(ids)))


def researcher_turn(me: Person, ctx: dict) -> None:
    from django.db.models import Q

    from annotation.models import Assignment, Item
    from curation.models import Image
    from exports.models import Release
    from qc.models import QCItem
    from review.models import ReviewRound

    b, rng = ctx["benchmark"], me.rng
    annotators = [n for n in ctx["clients"] if n.startswith("annotator")]
    action = rng.choices(
        ["evenly", "by hand", "reassign", "cancel", "give items", "round", "qc", "release", "build", "freeze", "notes"],
        [3, 3, 3, 2, 2, 2, 6, 2, 2, 1, 1],
    )[0]
    assign = f"/b/{SLUG}/assign/"
    if action == "evenly":
        me.page(action, assign, {"form": "evenly", "tasks": ["counting"], "assignees": annotators}, twice=me.double())
    elif action == "by hand":
        free = Image.objects.filter(benchmark_id=b, tasks__slug="ocr").exclude(assignments__task__slug="ocr")
        images = pick(free.order_by("pk"), 5, rng, among=40)
        body = {"form": "images", "task": "ocr", "images": images, "assignee": rng.choice(annotators)}
        me.page(action, assign, body, twice=me.double())
    elif action in ("reassign", "cancel"):
        open_ = Assignment.objects.filter(benchmark_id=b, status="open")
        if rng.random() < 0.5:  # half the time ones whose draft is started: the cancel/submit/withdraw path
            open_ = open_.filter(item__isnull=False)
        chosen = pick(open_.order_by("-pk"), 4, rng)
        if chosen:
            body = {"form": "open", "action": action, "assignments": chosen, "assignee": rng.choice(annotators)}
            me.page(action, assign, body)
    elif action == "give items":
        chosen = pick(Item.objects.filter(benchmark_id=b, status__in=["draft", "revision"]).order_by("-pk"), 3, rng)
        if chosen:
            me.page(action, assign, {"form": "items", "items": chosen, "assignee": rng.choice(annotators)})
    elif action == "round":
        current = ReviewRound.objects.filter(benchmark_id=b).exclude(status="closed").order_by("-number").first()
        rounds = f"/api/v1/benchmarks/{SLUG}/review/rounds/"
        reviewers = [n for n in ctx["clients"] if n.startswith("reviewer")]
        if current is None or rng.random() < 0.3:
            me.api("open round", "POST", rounds, {"per_item": 2, "reviewers": reviewers}, twice=me.double())
        elif time.time() - current.created_at.timestamp() > 10:
            me.api("close round", "POST", f"{rounds}{current.number}/close/", twice=me.double())
    elif action == "qc":
        entry = pick(QCItem.objects.filter(run__benchmark_id=b, flagged=True).order_by("pk"), 1, rng)
        if entry:
            item_id = QCItem.objects.get(pk=entry[0]).item_id
            decision = rng.choice(["keep", "remove"])
            path = f"/api/v1/benchmarks/{SLUG}/qc/runs/{ctx['run']}/items/{item_id}/decision/"
            me.api("qc decision", "POST", path, {"decision": decision}, twice=me.double())
    elif action == "release":
        body = {"version": rng.choice(VERSIONS), "notes": "soak"}
        me.api("create release", "POST", f"/api/v1/benchmarks/{SLUG}/releases/", body, twice=me.double())
    else:
        wanted = {"build": ~Q(status="frozen"), "freeze": Q(status="built"), "notes": Q()}[action]
        release = Release.objects.filter(wanted, benchmark_id=b).order_by("?").first()
        if release is None:
            return
        path = f"/api/v1/benchmarks/{SLUG}/releases/{release.version}/"
        if action == "notes":
            me.api("release notes", "PATCH", path, {"notes": f"edited by {me.name}"})
        else:
            me.api(action, "POST", f"{path}{action}/", twice=me.double())


def annotator_turn(me: Person, ctx: dict) -> None:
    from annotation.models import Item

    rng = me.rng
    if rng.random() < 0.1:  # take back one of their submitted items
        chosen = Item.objects.filter(benchmark_id=ctx["benchmark"], status="answered", author_id=me.pk).order_by("?").first()
        if chosen is not None:
            me.page("withdraw", f"/b/{SLUG}/items/{chosen.pk}/withdraw/", {"version": chosen.version})
        return
    orphan = None
    if rng.random() < 0.15:  # a draft of theirs whose assignment a researcher cancelled: finish and submit it
        orphan = (
            Item.objects.filter(benchmark_id=ctx["benchmark"], status="draft", author_id=me.pk)
            .exclude(assignments__status="open")
            .order_by("?")
            .first()
        )
    if orphan is not None:
        item_id = orphan.pk
    else:
        answer = me.page("queue next", f"/b/{SLUG}/queue/next/", {})
        location = answer.headers.get("location", "") if answer is not None else ""
        if "/items/" not in location:
            return
        item_id = int(location.rstrip("/").rsplit("/", 1)[1])
    path = f"/api/v1/benchmarks/{SLUG}/items/{item_id}/"
    got = me.api("open item", "GET", path)
    if got is None or got.status_code != 200:
        return
    item = got.json()
    saved = me.api("save item", "PATCH", path, {**COMPLETE, "version": item["version"]})
    if saved is None or saved.status_code != 200:
        return
    me.api("submit item", "POST", f"{path}submit/", {"version": saved.json()["version"]}, twice=me.double())


def reviewer_turn(me: Person, ctx: dict) -> None:
    from rewrite.models import Rewrite

    rng = me.rng
    if rng.random() < 0.4:
        chosen = pick(
            Rewrite.objects.filter(seed__benchmark_id=ctx["benchmark"]).exclude(state="approved").order_by("pk"), 1, rng
        )
        if chosen:
            verb = rng.choice(["approve", "approve", "reject"])
            body = {"reason": "not_fluent"} if verb == "reject" else None
            path = f"/api/v1/benchmarks/{SLUG}/rewrite/rewrites/{chosen[0]}/{verb}/"
            me.api(f"{verb} rewrite", "POST", path, body, twice=me.double())
        return
    queue = me.api("review queue", "GET", f"/api/v1/benchmarks/{SLUG}/reviews/")
    if queue is None or queue.status_code != 200 or not queue.json()["results"]:
        return
    review = rng.choice(queue.json()["results"])
    item = me.api("open item", "GET", f"/api/v1/benchmarks/{SLUG}/items/{review['item']}/")
    if item is None or item.status_code != 200:
        return
    verdict = rng.choices(["accept", "revision", "reject"], [6, 3, 1])[0]
    body = {"verdict": verdict, "reasons": [] if verdict == "accept" else ["incomplete"], "version": item.json()["version"]}
    me.api("verdict", "POST", f"/api/v1/benchmarks/{SLUG}/reviews/{review['id']}/", body, twice=me.double())


TURNS = {"researcher": researcher_turn, "annotator": annotator_turn, "reviewer": reviewer_turn}


def soak(port: int, ctx: dict, seconds: float, tally: Tally) -> None:
    from django.db import connection

    stop = time.monotonic() + seconds
    people = [Person(name, info, port, tally) for name, info in ctx["clients"].items()]
    start = threading.Barrier(len(people))

    def run(me: Person) -> None:
        turn = TURNS[me.name.rstrip(string.digits)]
        start.wait()
        try:
            while time.monotonic() < stop:
                try:
                    turn(me, ctx)
                except Exception as exc:  # a bench bug, not a server answer: say so and go on
                    tally.add("bench", 0, f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(p,)) for p in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def wait_for_jobs(timeout: float) -> int:
    """Seconds spent waiting until no job is queued or running (the builds and round openings)."""
    from jobs.models import Job

    start = time.monotonic()
    while Job.objects.filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).exists():
        if time.monotonic() - start > timeout:
            print(f"jobs still unfinished after {timeout:.0f} s")
            break
        time.sleep(0.2)
    return round(time.monotonic() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=20, help="1 in 5 researchers, 2 in 5 annotators, 2 in 5 reviewers")
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--db-prefix", default="bf_soak", help="the throwaway database's name starts with this")
    args = parser.parse_args()

    name = create_database(args.db_prefix)
    if name is None:
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    queue = f"bench-soak-{uuid.uuid4().hex[:8]}"
    models = tmp / "models.toml"
    models.write_text("# the soak asks no model\n")
    env = app_env(
        name,
        queue,
        models,
        tmp,
        ALLOWED_HOSTS="127.0.0.1",
        BENCHFORGE_SSL_REDIRECT="0",
        BENCHFORGE_SECURE_COOKIES="0",
        DB_CONN_MAX_AGE="60",
    )
    os.environ.update(env)
    researchers = max(1, args.clients // 5)
    people = {"researcher": researchers, "annotator": (args.clients - researchers) // 2}
    people["reviewer"] = args.clients - researchers - people["annotator"]
    workers = Workers(env, queue, tmp)
    server = None
    try:
        ctx = fill(people, args.images)
        workers.start()
        server, port = serve("benchforge.wsgi:application", env, workers=2, threads=4, log=tmp / "gunicorn.log")
        tally = Tally()
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        began = time.monotonic()
        soak(port, ctx, args.seconds, tally)
        elapsed = time.monotonic() - began
        waited = wait_for_jobs(300)
        from tests.races import INVARIANTS, broken

        violations = broken()
        from annotation.models import Assignment
        from curation.models import Task

        counting = Task.objects.get(benchmark_id=ctx["benchmark"], slug="counting")
        evenly = Assignment.objects.filter(task=counting, image__isnull=False).count()
        if evenly > counting.quota:  # only "assign evenly" hands out counting images, and it keeps the quota
            violations["counting assigned past its quota by assign evenly"] = [(evenly, counting.quota)]
        print(
            f"{args.clients} clients ({people['researcher']} researchers, {people['annotator']} annotators, "
            f"{people['reviewer']} reviewers) for {elapsed:.0f} s on Postgres, gunicorn 2 workers x 4 threads, "
            f"1 Celery worker; load average before {load}, after {', '.join(f'{x:.2f}' for x in os.getloadavg())}; "
            f"jobs finished {waited} s after the end"
        )
        print(f"{tally.total} requests ({tally.total / elapsed:.0f}/s); answers per action:")
        for action in sorted(tally.answers):
            answers = ", ".join(f"{status}: {n}" for status, n in sorted(tally.answers[action].items()))
            print(f"  {action:>15}  {answers}")
        server_errors = [e for e in tally.errors if not e.startswith("bench")]
        print(f"server errors (5xx): {len(server_errors)}")
        for error in server_errors[:10]:
            print(f"  {error}")
        bench_bugs = tally.answers.get("bench", Counter()).total()
        if bench_bugs:
            print(f"bench client exceptions (not server answers): {bench_bugs}")
        print(f"invariant violations: {sum(len(rows) for rows in violations.values())} (of {len(INVARIANTS) + 1} invariants)")
        for rule, rows in violations.items():
            print(f"  {rule}: {rows[:5]}")
        if server_errors:
            print("gunicorn log (end):\n" + (tmp / "gunicorn.log").read_text()[-3000:])
        return 1 if server_errors or violations else 0
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        workers.stop_all()
        drop_database(name)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
