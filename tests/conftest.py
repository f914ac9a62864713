"""Shared fixtures: users per role, a benchmark, clients, external services, the browser.

Tests that need a service (Postgres, Redis + Celery worker, Chromium, Label Studio) call
`require(...)`: on a developer machine without it they skip with a loud reason; under CI
(CI=true) a missing service is a failure, never a silent skip.
"""

import os
import shutil
import warnings
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# ../shared/fixtures beside the clone (CI); BENCHFORGE_SHARED_FIXTURES names another place (a worktree elsewhere).
SHARED_FIXTURES = Path(os.environ.get("BENCHFORGE_SHARED_FIXTURES") or REPO_ROOT.parent / "shared" / "fixtures")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# A Postgres commit of a test database need not wait for the disk: nothing survives the run anyway.
# libpq reads PGOPTIONS for every connection, the test's and those of the workers and servers it
# starts (about a tenth off the tests that commit: jobs, exports, human evaluation).
os.environ["PGOPTIONS"] = " ".join(filter(None, [os.environ.get("PGOPTIONS", ""), "-c synchronous_commit=off"]))

# Parallel runs (`make test` runs pytest-xdist): each worker process gwN has its own test database
# (pytest-django appends _gwN), tmp_path, live server and free ports. What is shared across processes
# is kept apart here: each worker gets its own Redis database (WORKER_REDIS_URL), and tests that use
# one expensive shared server (Label Studio) all run on one worker (pytest_collection_modifyitems).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1"... or "" in a plain run
DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/15"


def worker_redis_url(base: str, worker: str, databases: str = "") -> str:
    """The Redis URL of one test process: `base` in a plain run; under xdist, worker gwN takes the
    Nth database of `databases` ("8-14" or "8,9,10"), or else database (base's - N): CI's /15 gives
    gw0 /15, gw1 /14... Keys, queues and broadcasts of one worker never meet another's."""
    if not worker:
        return base
    from urllib.parse import urlsplit, urlunsplit

    # A worker that replaces a crashed one is numbered past the count (gw4 of 4): it takes a slot again.
    index = int(worker.removeprefix("gw")) % int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1 << 30)
    parts = urlsplit(base)
    if databases:
        choices = [n for chunk in databases.split(",") for n in _number_range(chunk)]
        if index >= len(choices):
            raise pytest.UsageError(
                f"BENCHFORGE_TEST_REDIS_DBS={databases!r} names {len(choices)} databases, too few for {worker}"
            )
        number = choices[index]
    else:
        number = int(parts.path.strip("/") or 0) - index
        if number < 0:
            raise pytest.UsageError(f"{base} leaves no Redis database for {worker}: set BENCHFORGE_TEST_REDIS_DBS (e.g. 8-14)")
    return urlunsplit(parts._replace(path=f"/{number}"))


def _number_range(chunk: str) -> list[int]:
    first, _, last = chunk.strip().partition("-")
    return list(range(int(first), int(last or first) + 1))


# Set in the environment too, before any test module reads it, so every reader (and every process
# a test starts) uses this worker's database.
REDIS_URL = worker_redis_url(
    os.environ.get("BENCHFORGE_TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL,
    XDIST_WORKER,
    os.environ.get("BENCHFORGE_TEST_REDIS_DBS", ""),
)
os.environ["BENCHFORGE_TEST_REDIS_URL"] = REDIS_URL

# Fixtures that stand for one server shared by every test of the session: the tests using them run
# on one xdist worker (`--dist loadgroup`), so a single server is started, as in a plain run, and
# tests that change its state (Label Studio allows one personal token at a time) never race.
SERIAL_GROUPS = {"labelstudio_server": "labelstudio"}


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: a run with `-p no:xdist` has no such hook
def pytest_xdist_auto_num_workers(config):
    # `-n auto`: one process more than there are cores, since much of the suite waits on servers,
    # browsers and subprocesses (2 cores: 3 processes took 1,281 s where 2 took 1,454 s; 4 took 552 s
    # where 3 took 517 s on a faster machine), and at most 4 (each starts its own browser, live server
    # and workers).
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(4, max(2, cores + 1))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        for fixture, group in SERIAL_GROUPS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
                break
        if getattr(config.option, "loadgroup", False):
            _name_the_group(item)


def _name_the_group(item) -> None:
    """`--dist loadgroup` sends the tests whose node id ends in "@<group>" to one process; xdist
    (3.8) writes that ending into `item._nodeid`, which pytest 9 no longer reads (its node ids live
    in `item._id`), so every group was dealt out like ungrouped tests (two Label Studio servers, one
    per process). Written where pytest 9 keeps it; with a pytest that still reads `_nodeid`, xdist
    does it itself."""
    groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")})
    if not groups or not hasattr(item, "_id") or hasattr(item, "_nodeid") or "@" in item.nodeid.rpartition("]")[2]:
        return
    from _pytest.nodeid import NodeId

    item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


# Playwright's sync API runs an event loop in this thread; Django's ORM refuses to run
# "inside" it unless told it is safe (it is: the loop only drives the browser).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def require(available: bool, what: str) -> None:
    if available:
        return
    if IN_CI:
        pytest.fail(f"CI=true but {what} is not available: CI must provide it.")
    pytest.skip(f"SKIPPED LOUDLY: {what} is not available on this machine (CI runs this test).")


def shared_fixture(*parts: str) -> Path:
    path = SHARED_FIXTURES.joinpath(*parts)
    if not path.exists():
        # CI clones main with shared/ beside it: a missing fixture there is a broken setup, not a skip.
        if IN_CI:
            pytest.fail(f"CI=true but the shared fixture {path} is absent: CI must provide ../shared.")
        pytest.skip(f"shared fixture {path} is absent (this clone has no ../shared)")
    return path


_TEST_DATABASE: dict[str, str] = {}  # the name of this process's test database, while it exists


@pytest.fixture(scope="session")
def django_db_setup(
    request,
    django_test_environment,
    django_db_blocker,
    django_db_use_migrations,
    django_db_keepdb,
    django_db_createdb,
    django_db_modify_db_settings,
    tmp_path_factory,
):
    """pytest-django's own, except that the processes of a parallel run on Postgres copy one migrated
    template instead of each migrating its database (tests/databases.py)."""
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _disable_migrations

    from tests.databases import create_from_template

    if not django_db_use_migrations:
        _disable_migrations()
    keepdb = django_db_keepdb and not django_db_createdb
    worker = getattr(request.config, "workerinput", None)
    verbosity = request.config.option.verbose
    with django_db_blocker.unblock():
        if worker and connection.vendor == "postgresql" and not keepdb:
            old_config = create_from_template(connection, worker["workerid"], tmp_path_factory.getbasetemp().parent, verbosity)
        else:
            old_config = setup_databases(verbosity=verbosity, interactive=False, keepdb=keepdb)
    _TEST_DATABASE["name"] = connection.settings_dict["NAME"]
    yield
    _TEST_DATABASE.clear()
    if not django_db_keepdb:
        with django_db_blocker.unblock():
            try:
                teardown_databases(old_config, verbosity=verbosity)
            except Exception as exc:  # as pytest-django's own: a connection a thread left open keeps it
                request.node.warn(pytest.PytestWarning(f"Error when trying to teardown test databases: {exc!r}"))


def pytest_sessionfinish(session):
    # The controller of a parallel run on Postgres drops the template its processes copied.
    if hasattr(session.config, "workerinput") or not getattr(session.config.option, "numprocesses", None):
        return
    from django.conf import settings

    if settings.configured and settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        from django.db import connection
        from pytest_django.plugin import blocking_manager_key

        from tests.databases import drop_template

        with session.config.stash[blocking_manager_key].unblock():
            drop_template(connection)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a database test, once its fixtures are gone (its transaction rolled back): empty the
    tables the LLM call threads write on connections of their own (the reply cache and the usage
    ledger), which commit whatever the test's transaction does. Left there, a later test in the
    process met another test's cached replies (asked nothing, or got another script's answer) and
    a demo snapshot refused to seed over them."""
    result = yield
    if item.get_closest_marker("django_db") is None and not {"db", "transactional_db"} & set(getattr(item, "fixturenames", ())):
        return result
    from django.db import connection
    from pytest_django.plugin import blocking_manager_key

    from llm.models import CachedReply, Usage

    if connection.settings_dict["NAME"] != _TEST_DATABASE.get("name"):
        return result  # not on the test database (none made: the test was skipped first): touch nothing
    with item.config.stash[blocking_manager_key].unblock():
        opened = connection.connection is None
        with connection.cursor() as cursor:
            for model in (CachedReply, Usage):
                cursor.execute(f"DELETE FROM {connection.ops.quote_name(model._meta.db_table)}")
        if opened:  # left open, it outlived the session and kept the test database from being dropped
            connection.close()
    return result


@pytest.fixture(scope="session", autouse=True)
def _flush_by_delete():
    """A transactional test (live server, real workers, races) ends with Django emptying every table.
    On Postgres Django does it with one TRUNCATE of all ~70 tables, which makes a new file for each
    and takes ~1-3 s on a busy machine; the few rows a test leaves are gone as surely with DELETE, in
    a hundredth of that (one transaction: Django's foreign keys are checked at commit, so any order
    does). Resetting the id sequences, which only TRUNCATE does, still goes to Django's own."""
    from django.conf import settings

    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        yield
        return
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]

    DatabaseOperations.sql_flush = sql_flush
    yield
    DatabaseOperations.sql_flush = truncate


@pytest.fixture(autouse=True)
def _isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()


@pytest.fixture(scope="session", autouse=True)
def _jobs_run_inline():
    """Jobs run where they are enqueued, when the transaction commits, and work left for after a
    response runs inline too (a background thread's own connection would not see a test's uncommitted
    rows). Tests that need a real worker or a thread set their own mode with the `settings` fixture,
    which puts this back. Set for the whole session, not per test: a browser's request that reached the
    live server after its test had ended met the default runner, `thread`, and started this process's
    job sweeper, which then read the database during the next test's setup."""
    from django.test import override_settings

    with override_settings(BENCHFORGE_JOB_RUNNER="inline", BENCHFORGE_AFTER_RESPONSE="inline"):
        yield


@pytest.fixture(autouse=True)
def _outside_any_request():
    # A streamed response an earlier test left unread never finished its request in this thread:
    # RecentCounts would then leave its recount for a response that never ends.
    from benchforge import after_response

    after_response.forget_unfinished_request()


@pytest.fixture(autouse=True)
def _fresh_cache():
    # API throttle and token-failure counters live in the cache: each test starts from zero.
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _default_language():
    # A request through the test client leaves its language active in this thread (Django's
    # LocaleMiddleware activates, nothing deactivates): each test starts from the default, whatever
    # the test before it asked for in Chinese.
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Test users log in for real; the production hasher's cost is not what these tests check.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


PASSWORD = "correct-horse-battery"


@pytest.fixture
def make_user(db):
    from benchforge.services import create_or_update_user

    counter = {"n": 0}

    def make(role: str, username: str | None = None, benchmarks=()):
        counter["n"] += 1
        user, _ = create_or_update_user(username or f"{role}{counter['n']}", role, password=PASSWORD, benchmarks=benchmarks)
        return user

    return make


@pytest.fixture
def benchmark(request, db, accepted_snapshot):
    from curation.services import load_preset

    if "accepted" in request.fixturenames:
        copied = _copy_in_accepted(request, accepted_snapshot)
        if copied is not None:
            return copied
    return load_preset("alignmmbench", slug="demo")


def _copy_in_accepted(request, snapshot):
    """For a test that wants `accepted` (tests/exports/conftest.py): the benchmark, its annotator and
    researcher and the accepted items, copied in from what `accepted_snapshot` made once in this
    process, as the fixtures would make them (0.8 s each time: ~130 tests). None where they cannot
    be: not on Postgres (no snapshot), a transactional test (its rows are committed step by step),
    media not on the local disk (S3), or the people's usernames already taken by the test's own
    fixtures."""
    from django.contrib.auth import get_user_model
    from django.core.files.storage import FileSystemStorage, default_storage
    from django.db import connection

    from curation.models import Benchmark
    from tests.factories import ACCEPTED_ITEMS

    if not snapshot.taken or not connection.in_atomic_block or not isinstance(default_storage, FileSystemStorage):
        return None
    if get_user_model().objects.filter(username__in=["anna", "ross"]).exists() or Benchmark.objects.filter(slug="demo").exists():
        return None
    snapshot.copy_in(request.getfixturevalue("settings"))
    request.node.stash[ACCEPTED_ITEMS] = snapshot.made
    return Benchmark.objects.get(slug="demo")


@pytest.fixture(scope="session")
def accepted_snapshot(django_db_setup, django_db_blocker, tmp_path_factory):
    """The benchmark, anna (annotator), ross (researcher) and the accepted items, made once per process
    inside a transaction as a django_db test makes them; `made` is the items' ids in order. A fixture
    of `benchmark`, so that it is made before any test's own rows (a session fixture is set up before
    a test's function fixtures), not in the middle of the first test that wants it."""
    from benchforge.services import create_or_update_user
    from curation.services import load_preset
    from tests.exports.conftest import accept_items
    from tests.factories import RowSnapshot

    def seed() -> list[int]:
        benchmark = load_preset("alignmmbench", slug="demo")
        annotator, _ = create_or_update_user("anna", "annotator", password=PASSWORD, benchmarks=[benchmark])
        researcher, _ = create_or_update_user("ross", "researcher", password=PASSWORD)
        return [item.pk for item in accept_items(benchmark, annotator, researcher, benchmark.tasks.get(slug="counting"))]

    snapshot = RowSnapshot(tmp_path_factory.mktemp("accepted") / "media", committed=False)
    with django_db_blocker.unblock():
        try:
            return snapshot.record(seed)
        except RuntimeError as exc:  # rows an earlier test left behind: each test makes the items itself
            warnings.warn(f"the accepted items are made in each test: {exc}", stacklevel=1)
            return snapshot


@pytest.fixture
def private_benchmark(db):
    """A second benchmark, for checks that members of one never see the other's data."""
    from curation.services import load_preset

    return load_preset("mmbench", slug="private")


@pytest.fixture
def outsider(make_user, private_benchmark):
    """An annotator who belongs to the other benchmark only."""
    return make_user("annotator", "otto", benchmarks=[private_benchmark])


@pytest.fixture
def counting(benchmark):
    return benchmark.tasks.get(slug="counting")


@pytest.fixture
def image(benchmark, counting):
    """An accepted image tagged with the counting task (a row only, no file)."""
    from tests.factories import make_image

    return make_image(benchmark, tasks=[counting])


@pytest.fixture
def draft(benchmark, counting, annotator):
    from annotation import services

    return services.create_item(benchmark, task=counting, user=annotator)


@pytest.fixture
def fresh_image_indexes():
    """Test transactions roll back and SQLite reuses ids: start from empty in-process hash indexes."""
    from curation import services

    services.image_indexes.forget()
    services.known_index.forget()


@pytest.fixture
def annotator(make_user, benchmark):
    return make_user("annotator", "anna", benchmarks=[benchmark])


@pytest.fixture
def reviewer(make_user, benchmark):
    return make_user("reviewer", "rita", benchmarks=[benchmark])


@pytest.fixture
def researcher(make_user):
    return make_user("researcher", "ross")


@pytest.fixture
def client_for(client):
    from django.test import Client

    def make(user):
        c = Client()
        c.force_login(user)
        return c

    return make


@pytest.fixture
def api_for(db):
    from rest_framework.test import APIClient

    from benchforge.auth import create_token_for

    tokens = {}

    def make(user):
        if user.pk not in tokens:
            tokens[user.pk] = create_token_for(user)
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Token {tokens[user.pk]}")
        return c

    return make


@pytest.fixture
def fake_dns(monkeypatch):
    """fake_dns({"name": "address", ...}): those names resolve to those addresses (tests have no
    DNS, and need names that resolve to public, private or changing addresses)."""
    import socket

    real = socket.getaddrinfo
    table: dict[str, list[str]] = {}
    calls: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host in table:
            calls.append(host)
            family = lambda a: socket.AF_INET6 if ":" in a else socket.AF_INET  # noqa: E731
            return [(family(a), socket.SOCK_STREAM, 6, "", (a, port or 0)) for a in table[host]]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    def define(entries: dict[str, str | list[str]]):
        table.update({name: [a] if isinstance(a, str) else list(a) for name, a in entries.items()})
        return calls

    return define


@pytest.fixture
def postgres(transactional_db):
    """Real concurrent transactions on Postgres (the race kit, tests/races.py); SQLite serialises writers."""
    from django.db import connection

    require(connection.vendor == "postgresql", "Postgres via DATABASE_URL (the race tests need real concurrent transactions)")


@pytest.fixture
def celery_workers(transactional_db, tmp_path, settings):
    """Real Celery workers on Redis sharing the test database (tests/jobs/workers.py)."""
    from tests.jobs.workers import celery_workers_for

    yield from celery_workers_for(tmp_path, settings)


@pytest.fixture
def fake_llm():
    from tests.fakes.llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="session")
def s3_server():
    """One S3-compatible server (moto, loopback) and bucket for the whole session."""
    from tests.fakes.s3_server import FakeS3

    with FakeS3() as server:
        yield server


@pytest.fixture
def s3_media(s3_server, settings, monkeypatch):
    """Media in the S3 bucket for this test, configured the way an operator does it: the
    environment, read by the same function as the settings at startup. Starts and ends empty."""
    from benchforge.storage import media_storages

    for name, value in s3_server.environ().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_S3_SESSION_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    s3_server.empty()
    settings.STORAGES = media_storages(os.environ, spool_bytes=settings.FILE_UPLOAD_MAX_MEMORY_SIZE)
    yield s3_server
    s3_server.empty()


# ---------------------------------------------------------------- browser (Playwright + Debian chromium)


def chromium_path() -> str | None:
    candidate = os.environ.get("BENCHFORGE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return candidate if candidate and Path(candidate).exists() else None


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def browser():
    path = chromium_path()
    require(path is not None, "Debian chromium (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    # expect()'s own 5 s default is shorter than the pages' (10 s below): on a loaded CI machine a
    # large page (ReDoc renders the whole schema) can take longer; a failing check only waits longer.
    expect.set_options(timeout=15_000)
    with sync_playwright() as pw:
        # executable_path: never let Playwright download a browser of its own.
        browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(browser, live_server):
    """A page on the live server. The app's Content-Security-Policy stays on, and any violation
    the browser reports fails the test (unless it sets page.expect_csp_violations = True):
    every browser test also checks that no page needs inline script or style."""
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.csp_violations = []
    page.expect_csp_violations = False
    page.on("console", lambda msg: page.csp_violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    yield page
    context.close()
    if not page.expect_csp_violations:
        assert page.csp_violations == [], "the page broke its Content-Security-Policy"


def wait_until(page, expression: str, timeout: float = 10.0) -> None:
    """page.wait_for_function without eval inside the page, which the app's Content-Security-Policy
    forbids: polls page.evaluate (run by the browser's debugger protocol, outside the policy)."""
    import time

    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for: {expression}")
        page.wait_for_timeout(50)


def log_in(page, user, password: str = PASSWORD):
    """Log a user in through the real login form, on any page of any browser context."""
    # Leave the last page first: an image of it still loading once the cookies are gone is
    # redirected to the login page, which sets a new CSRF cookie over the one the form carries.
    page.goto("about:blank")
    page.context.clear_cookies()
    page.goto("/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", password)
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    return page


@pytest.fixture
def login_as(browser_page):
    """Log a user in through the real login form."""
    return lambda user, password=PASSWORD: log_in(browser_page, user, password)


# ---------------------------------------------------------------- the seeded demo, seeded once per process


@pytest.fixture(scope="session")
def demo_snapshot(django_db_setup, django_db_blocker, tmp_path_factory):
    """The demo `seed_demo` makes inside a test's transaction, seeded once per test process;
    `demo_snapshot.restore(settings)` copies it into a django_db test (tests/factories.py's DemoSnapshot)."""
    from tests.factories import DemoSnapshot

    with django_db_blocker.unblock():
        return DemoSnapshot.take(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="session")
def live_demo_snapshot(django_db_setup, django_db_blocker, tmp_path_factory):
    """The same demo as a transactional test (live server) seeds it, each step committing (so the
    jobs that run on commit have run), for those tests."""
    from tests.factories import DemoSnapshot

    with django_db_blocker.unblock():
        return DemoSnapshot.take(tmp_path_factory.mktemp("live-demo"), committed=True)


@pytest.fixture(scope="session")
def live_full_demo_snapshot(django_db_setup, django_db_blocker, tmp_path_factory):
    """The fuller demo `make run` seeds with no models file (`seed_demo --demo-models`), as a
    transactional test seeds it."""
    from tests.factories import DemoSnapshot

    with django_db_blocker.unblock():
        return DemoSnapshot.take(tmp_path_factory.mktemp("live-full-demo"), "--demo-models", committed=True)


@pytest.fixture
def cache_down(settings):
    """The shared cache unreachable (the project's Redis backend, a port nothing listens on), with the
    dashboard keeping counts so that it asks the cache."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once the socket is closed
    working = settings.CACHES
    settings.CACHES = {
        "default": {
            "BACKEND": "benchforge.redis_cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {"socket_connect_timeout": 1},
        }
    }
    settings.BENCHFORGE_DASHBOARD_CACHE_SECONDS = 60
    yield
    settings.CACHES = working  # before the suite's own fixtures clear the cache
