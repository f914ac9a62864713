"""Every text of an item has a limit (annotation/contract.py), checked on every save: the editor,
the API, Label Studio pulls (all through update_item) and imports (import_external_items). The
problem names the field, its size and the limit; an import reports it on the row and keeps the rest."""

import json

import pytest

from annotation import services
from annotation.contract import (
    CRITERION_MAX_CHARS,
    OPTION_MAX_CHARS,
    QUESTION_MAX_CHARS,
    REFERENCE_MAX_CHARS,
    TURN_MAX_CHARS,
)
from annotation.models import Item
from benchforge.errors import DomainError
from curation.models import Benchmark, Image
from jobs.models import Job
from qc.services import imports

pytestmark = pytest.mark.django_db


def refused(item, user, **changes) -> str:
    item.refresh_from_db()
    with pytest.raises(DomainError) as err:
        services.update_item(item, changes, expected_version=item.version, user=user)
    return err.value.message


def test_each_text_field_is_refused_past_its_limit_naming_it(draft, annotator):
    assert f"Question is {QUESTION_MAX_CHARS + 1:,} characters long; the limit is {QUESTION_MAX_CHARS:,}." in refused(
        draft, annotator, question="q" * (QUESTION_MAX_CHARS + 1)
    )
    assert "Reference answer is" in refused(draft, annotator, reference_answer="r" * (REFERENCE_MAX_CHARS + 1))
    assert f"Criterion 2 is {CRITERION_MAX_CHARS + 1:,} characters long" in refused(
        draft, annotator, criteria=[{"kind": "soft", "text": "ok"}, {"kind": "soft", "text": "c" * (CRITERION_MAX_CHARS + 1)}]
    )
    assert "Option B is" in refused(draft, annotator, kind="mcq", choices=["a", "b" * (OPTION_MAX_CHARS + 1)])
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "t" * (TURN_MAX_CHARS + 1)}]
    assert "Turn 2 of the dialogue history is" in refused(draft, annotator, kind="multi_turn", history=history)
    saved = services.update_item(draft, {"question": "q" * QUESTION_MAX_CHARS}, expected_version=draft.version, user=annotator)
    assert len(saved.question) == QUESTION_MAX_CHARS  # the limit itself is allowed


def test_the_api_refuses_an_over_long_question_with_a_400(api_for, annotator, benchmark, counting):
    api = api_for(annotator)
    created = api.post(
        "/api/v1/benchmarks/demo/items/", {"task": "counting", "question": "x" * (QUESTION_MAX_CHARS + 1)}, format="json"
    )
    assert created.status_code == 400 and "the limit is 20,000" in json.dumps(created.json())
    assert not Item.objects.exists()


def test_a_100_mb_question_does_not_import_and_the_other_rows_do(researcher, tmp_path):
    path = tmp_path / "questions.jsonl"
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"id": 1, "question": "Why?"}) + "\n")
        out.write('{"id": 2, "question": "' + "q" * (100 << 20) + '"}\n')  # a 100 MB cell
        out.write(json.dumps({"id": 3, "question": "x" * (QUESTION_MAX_CHARS + 5)}) + "\n")
        out.write(json.dumps({"id": 4, "question": "How?"}) + "\n")
    benchmark = Benchmark.objects.create(name="Big", slug="big")
    before = (Item.objects.count(), Image.objects.count(), Benchmark.objects.count())
    job = imports.import_path(benchmark, path, user=researcher, format=imports.MLLM_BENCH)
    assert job.status == Job.Status.SUCCEEDED, job.message
    errors = dict(job.entries.filter(outcome="error").values_list("key", "message"))
    assert errors["line 2"].startswith("line 2: the line is 100.0 MB; a line may be at most 64.0 MB")
    assert errors["line 3"] == f"line 3: Question is {QUESTION_MAX_CHARS + 5:,} characters long; the limit is 20,000."
    assert sorted(Item.objects.filter(benchmark=benchmark).values_list("external_id", flat=True)) == ["1", "4"]
    assert (Item.objects.count(), Image.objects.count(), Benchmark.objects.count()) == (before[0] + 2, *before[1:])
