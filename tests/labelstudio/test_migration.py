"""Existing sync records become baselines (migration 0003): the record a pull moved becomes the
baseline, the pulled annotation is remembered, and a task a pull touched is refreshed next push."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import Item
from curation.services import load_preset

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("labelstudio", "0002_sync_state_and_gone_projects")]
AFTER = [("labelstudio", "0003_baseline_sync")]


def test_existing_rows_keep_what_both_sides_agreed_on():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    # The other apps' tables are as they are now: their rows are made with today's models.
    benchmark = load_preset("alignmmbench", slug="old")
    task = benchmark.tasks.first()
    pulled_item = Item.objects.create(benchmark=benchmark, task=task, question="Q?", version=3)
    fresh_item = Item.objects.create(benchmark=benchmark, task=task, question="R?", version=1)
    link = old.get_model("labelstudio", "LabelStudioLink").objects.create(
        benchmark_id=benchmark.pk, url="http://ls", project_id=1, title="P"
    )
    shown = {
        "question": "Q?",
        "question_type": "open",
        "choices": [],
        "answer": "",
        "reference_answer": "Old.",
        "criteria": [{"kind": "exact", "text": "One."}],
        "description": "",
    }
    synced = {
        **shown,
        "reference_answer": "Pulled.",
        "criteria": [{"kind": "soft", "text": "One."}, {"kind": "range", "text": "Two."}],
    }
    Task = old.get_model("labelstudio", "LabelStudioTask")
    Task.objects.create(
        link=link,
        item_id=pulled_item.pk,
        task_id=10,
        pushed_version=3,
        shown=shown,
        synced=synced,
        pulled_annotation_id=77,
        pulled_annotation_updated_at="2026-11-01T10:00:00Z",
        pulled_at="2026-11-01T10:01:00Z",
    )
    Task.objects.create(
        link=link,
        item_id=fresh_item.pk,
        task_id=11,
        pushed_version=1,
        shown={**shown, "question": "R?"},
        synced={**shown, "question": "R?"},
    )

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("labelstudio", "LabelStudioTask")
    pulled, untouched = new.objects.get(task_id=10), new.objects.get(task_id=11)
    assert pulled.baseline["reference_answer"] == "Pulled." and pulled.baseline["criterion_2_text"] == "Two."
    assert pulled.baseline["criterion_1_kind"] == "soft" and pulled.shown["criterion_1_kind"] == "exact"
    assert pulled.shown["criterion_2_text"] == "" and pulled.pulled == {"77": "2026-11-01T10:00:00Z"}
    assert pulled.pushed_version == 0  # the task shows an older version than the pull recorded: refreshed next push
    assert untouched.pushed_version == 1 and untouched.pulled == {} and untouched.baseline["question"] == "R?"
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
