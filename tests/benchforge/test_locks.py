"""Row locks (issue 45): every one goes through benchforge.concurrency and locks exactly one table,
in the one order written there; a deadlock or serialization failure in a service safe to repeat is
run again, and one that was not is answered 409 "send it again", never 500."""

import ast
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import OperationalError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from benchforge import concurrency

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".venv", "tests", "node_modules", "bench", "docs", "locale"}


def _project_sources():
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] in SKIP or any(p.startswith(".") for p in parts):
            continue
        yield path


def test_every_row_lock_in_the_code_goes_through_benchforge_concurrency():
    elsewhere = []
    for path in _project_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "select_for_update":
                elsewhere.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert [e for e in elsewhere if not e.startswith("benchforge/concurrency.py:")] == []


def test_the_lock_order_names_real_models_once():
    models = [apps.get_model(label) for label in concurrency.LOCK_ORDER]
    assert len(set(models)) == len(models)


def _locking_sql(queries) -> list[str]:
    return [q["sql"] for q in queries if "FOR " in q["sql"] and "UPDATE" in q["sql"].split("FOR ", 1)[1]]


@pytest.fixture
def on_postgres(postgres):
    """The SQL of a lock, as Postgres gets it (SQLite takes no row locks at all)."""


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("on_postgres")
def test_each_lock_locks_one_table_without_joins_even_with_a_default_ordering_on_a_parent():
    every_model_with_a_lock = [apps.get_model(label) for label in concurrency.LOCK_ORDER]
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        for model in every_model_with_a_lock:
            concurrency.lock_or_none(model, 0)
            concurrency.lock_rows(model.objects.filter(pk__in=[0, 1]))
    sql = _locking_sql(queries.captured_queries)
    assert len(sql) == 2 * len(every_model_with_a_lock)
    for statement in sql:
        assert " JOIN " not in statement, statement
        assert "FOR NO KEY UPDATE OF" in statement, statement


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("on_postgres")
def test_a_build_step_locks_its_release_and_not_the_benchmark():
    """Release's default ordering is ("benchmark", "-created_at"): `.first()` under FOR UPDATE joined
    curation_benchmark and locked the benchmark row too, which closed a deadlock cycle with "assign
    evenly" and starting an assignment."""
    from exports.services import BuildTakenOver, _owned

    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        with pytest.raises(BuildTakenOver):
            _owned(0, SimpleNamespace(job=SimpleNamespace(pk=1)))
    [statement] = _locking_sql(queries.captured_queries)
    assert " JOIN " not in statement and "curation_benchmark" not in statement, statement


# ---- deadlocks -------------------------------------------------------------------------------------


def _two_rows():
    from curation.models import Benchmark

    return [Benchmark.objects.create(name=f"Lock order {n}", slug=f"lock-order-{n}").pk for n in range(2)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("on_postgres")
def test_a_deadlock_in_a_service_safe_to_repeat_is_run_again_and_both_requests_succeed():
    from curation.models import Benchmark

    first, second = _two_rows()
    barrier = threading.Barrier(2)
    runs, results = [], {}

    @concurrency.retried
    def service(name, one, other):
        runs.append(name)
        concurrency.lock(Benchmark, one)
        if runs.count(name) == 1:
            barrier.wait(10)  # both hold their first row: each now waits for the other's
        concurrency.lock(Benchmark, other)
        Benchmark.objects.filter(pk=one).update(description=name)
        return name

    def call(name, one, other):
        try:
            results[name] = service(name, one, other)
        except Exception as exc:  # what the request would have turned into a 500
            results[name] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=call, args=a) for a in (("a", first, second), ("b", second, first))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {"a": "a", "b": "b"}
    assert len(runs) == 3  # Postgres aborted one of them once; it ran again after the other committed


def _deadlock() -> OperationalError:
    """What Django raises when Postgres answers "deadlock detected" (SQLSTATE 40P01)."""
    import psycopg2.errors

    error = OperationalError("deadlock detected")
    error.__cause__ = psycopg2.errors.DeadlockDetected("deadlock detected")
    return error


def test_a_deadlock_that_was_not_retried_away_is_a_409_that_says_to_send_it_again(
    benchmark, annotator, counting, client_for, api_for, monkeypatch
):
    from annotation import services
    from annotation.services import create_item

    def deadlocked(*args, **kwargs):
        raise _deadlock()

    item = create_item(benchmark, task=counting, user=annotator, question="How many?")
    monkeypatch.setattr(services, "submit_item", deadlocked)
    page = client_for(annotator).post(
        f"/b/{benchmark.slug}/items/{item.pk}/submit/", {"version": item.version}, HTTP_HX_REQUEST="true"
    )
    assert page.status_code == 409, page.content[:300]
    assert "Send this again" in page.content.decode()
    api = api_for(annotator).post(f"/api/v1/benchmarks/{benchmark.slug}/items/{item.pk}/submit/", {"version": item.version})
    assert api.status_code == 409, api.content[:300]
    assert api.json()["code"] == "retry" and "Send this again" in api.json()["detail"]
