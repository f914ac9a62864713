"""Two editors saving the same item at the same instant, on real Postgres connections (threads):
exactly one save wins, the other gets 409 with the winner's content. Needs DATABASE_URL on
Postgres (SQLite serialises writers, so it cannot show the race)."""

import threading

import pytest
from django.db import connection

from annotation import services
from annotation.models import Item
from annotation.services.items import _bump
from benchforge.errors import StaleVersion
from tests.conftest import require

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
ROUNDS = 10


@pytest.fixture
def postgres():
    require(connection.vendor == "postgresql", "Postgres via DATABASE_URL (real concurrent saves)")


def race(*calls):
    """Run the calls in threads released together; each returns ("ok", value) or ("stale", extra)."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def run(n, call):
        try:
            barrier.wait()
            results[n] = ("ok", call())
        except StaleVersion as exc:
            results[n] = ("stale", exc.extra)
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=run, args=(n, call)) for n, call in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def test_simultaneous_saves_from_one_version_never_both_succeed(postgres, benchmark, annotator, researcher):
    counting = benchmark.tasks.get(slug="counting")
    for round_ in range(ROUNDS):
        item = services.create_item(benchmark, task=counting, user=annotator, question="start")
        texts = {annotator: f"annotator {round_}", researcher: f"researcher {round_}"}
        results = race(
            *[
                (
                    lambda user=user, text=text: (
                        services.update_item(
                            Item.objects.get(pk=item.pk), {"question": text}, expected_version=1, user=user
                        ).question
                    )
                )
                for user, text in texts.items()
            ]
        )
        assert sorted(r[0] for r in results) == ["ok", "stale"], results
        winner = next(r[1] for r in results if r[0] == "ok")
        loser = next(r[1] for r in results if r[0] == "stale")
        assert loser["current_version"] == 2 and loser["current"]["question"] == winner
        item.refresh_from_db()
        assert item.question == winner and item.version == 2
        assert list(item.revisions.values_list("version", flat=True).order_by("version")) == [1, 2]


def test_the_conditional_update_alone_lets_only_one_writer_through(postgres, benchmark, annotator):
    # Both writers read version 1 without any row lock: the UPDATE ... WHERE version = 1 decides.
    counting = benchmark.tasks.get(slug="counting")
    for _round in range(ROUNDS):
        item = services.create_item(benchmark, task=counting, user=annotator, question="start")
        copies = [Item.objects.get(pk=item.pk), Item.objects.get(pk=item.pk)]
        results = race(
            *[(lambda copy=copy, n=n: _bump(copy, 1, question=f"writer {n}").version) for n, copy in enumerate(copies)]
        )
        assert sorted(r[0] for r in results) == ["ok", "stale"], results
        item.refresh_from_db()
        assert item.version == 2
