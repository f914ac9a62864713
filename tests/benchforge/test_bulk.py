"""bulk_insert stores exactly what Django's bulk_create would, gives ids in order, and splits
large batches into statements the database accepts (SQLite: 999 parameters)."""

import pytest
from django.db import IntegrityError, transaction

from benchforge.bulk import bulk_insert, insert_rows, update_rows
from curation.models import ContaminationMatch, Image, KnownHash, KnownImageSet
from jobs.models import Job, JobEntry
from tests.factories import make_image

pytestmark = pytest.mark.django_db


def entries(job, n):
    return [
        JobEntry(
            job=job, key=f"line {i}", outcome="ok" if i % 3 else "error", message=f"row {i}", data={"row": i, "é": [i, None]}
        )
        for i in range(n)
    ]


def stored(job):
    return list(JobEntry.objects.filter(job=job).order_by("pk").values("key", "outcome", "message", "data"))


def test_rows_match_bulk_create_and_get_their_ids_in_order():
    ours, django = Job.objects.create(kind="test"), Job.objects.create(kind="test")
    rows = entries(ours, 400)  # 400 x 6 values: several statements on SQLite
    bulk_insert(rows, ids=True)
    JobEntry.objects.bulk_create(entries(django, 400))
    assert stored(ours) == stored(django) and len(stored(ours)) == 400
    assert [r.pk for r in rows] == sorted(r.pk for r in rows) and len({r.pk for r in rows}) == 400
    by_pk = {e.pk: e for e in JobEntry.objects.filter(job=ours)}
    assert all(by_pk[r.pk].key == r.key and by_pk[r.pk].data == r.data for r in rows)
    # auto_now_add filled as on save(), one time for rows inserted together
    assert {by_pk[r.pk].created_at for r in rows} == {rows[0].created_at} and rows[0].created_at is not None
    assert not rows[0]._state.adding


def test_without_ids_nothing_is_read_back_and_conflicts_can_be_skipped(benchmark):
    images = [make_image(benchmark), make_image(benchmark)]
    known_set = KnownImageSet.objects.create(name="train")
    known = KnownHash.objects.create(known_set=known_set, md5="0" * 32, phash=1)
    first = ContaminationMatch(image=images[0], known_set=known_set, known_hash=known, kind="md5")
    bulk_insert([first])
    assert first.pk is None and ContaminationMatch.objects.count() == 1
    again = [ContaminationMatch(image=image, known_set=known_set, known_hash=known, kind="md5") for image in images]
    bulk_insert(again, ignore_conflicts=True)
    assert sorted(ContaminationMatch.objects.values_list("image_id", flat=True)) == sorted(i.pk for i in images)
    with pytest.raises(ValueError):
        bulk_insert(again, ids=True, ignore_conflicts=True)
    with pytest.raises(TypeError):
        bulk_insert([first, Image()])


def test_plain_rows_store_what_instances_store_and_get_their_ids_in_order():
    ours, django = Job.objects.create(kind="test"), Job.objects.create(kind="test")
    rows = [(ours.pk, e.key, e.outcome, e.message, e.data) for e in entries(ours, 400)]
    new_ids = insert_rows(JobEntry, ("job_id", "key", "outcome", "message", "data"), rows, ids=True)
    JobEntry.objects.bulk_create(entries(django, 400))
    assert stored(ours) == stored(django) and len(stored(ours)) == 400
    assert new_ids == sorted(new_ids) and len(set(new_ids)) == 400
    by_pk = {e.pk: e for e in JobEntry.objects.filter(job=ours)}
    assert [by_pk[pk].key for pk in new_ids] == [r[1] for r in rows]
    assert len({e.created_at for e in by_pk.values()}) == 1  # auto_now_add: one time for the rows


def test_plain_rows_take_the_defaults_of_the_columns_they_leave_out():
    job = Job.objects.create(kind="test")
    assert insert_rows(JobEntry, ("job_id", "key", "outcome"), [(job.pk, "a", "ok"), (job.pk, "b", "error")]) == []
    assert stored(job) == [
        {"key": "a", "outcome": "ok", "message": "", "data": {}},
        {"key": "b", "outcome": "error", "message": "", "data": {}},
    ]
    # A unique constraint refuses a row: skipped with ignore_conflicts, an error without.
    insert_rows(JobEntry, ("job_id", "key", "outcome"), [(job.pk, "a", "skipped"), (job.pk, "c", "ok")], ignore_conflicts=True)
    assert [(e["key"], e["outcome"]) for e in stored(job)] == [("a", "ok"), ("b", "error"), ("c", "ok")]
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows(JobEntry, ("job_id", "key", "outcome"), [(job.pk, "a", "ok")])
    with pytest.raises(ValueError):
        insert_rows(JobEntry, ("job_id", "nonsense"), [(job.pk, 1)])


def test_updated_rows_hold_what_bulk_update_stores(benchmark):
    ours, django = Job.objects.create(kind="test"), Job.objects.create(kind="test")
    for job in (ours, django):
        insert_rows(JobEntry, ("job_id", "key", "outcome"), [(job.pk, f"line {i}", "ok") for i in range(300)])
    changes = {i: ("error", f"row {i}", {"row": i, "é": [i, None]}) for i in range(0, 300, 2)}

    def rows_of(job):
        return {int(e.key.split()[1]): e for e in JobEntry.objects.filter(job=job)}

    ours_rows, django_rows = rows_of(ours), rows_of(django)
    update_rows(JobEntry, ("outcome", "message", "data"), [(ours_rows[i].pk, *values) for i, values in changes.items()])
    for i, (outcome, message, data) in changes.items():
        entry = django_rows[i]
        entry.outcome, entry.message, entry.data = outcome, message, data
    JobEntry.objects.bulk_update([django_rows[i] for i in changes], ["outcome", "message", "data"])
    assert stored(ours) == stored(django) and sum(e["outcome"] == "error" for e in stored(ours)) == 150
    # A foreign key by its id, and None
    image, other = make_image(benchmark), make_image(benchmark)
    update_rows(Image, ("near_duplicate_of_id", "near_duplicate_distance"), [(image.pk, other.pk, 3)])
    image.refresh_from_db()
    assert (image.near_duplicate_of, image.near_duplicate_distance) == (other, 3)
    update_rows(Image, ("near_duplicate_of_id", "near_duplicate_distance"), [(image.pk, None, None)])
    image.refresh_from_db()
    assert (image.near_duplicate_of, image.near_duplicate_distance) == (None, None)
    with pytest.raises(ValueError):
        update_rows(Image, ("id",), [(image.pk, 5)])
    with pytest.raises(ValueError):
        update_rows(Image, ("nonsense",), [(image.pk, 5)])


def test_a_maker_makes_what_the_model_makes(benchmark, researcher):
    from benchforge.bulk import unsaved

    image = make_image(benchmark)
    values = dict(
        benchmark=benchmark,
        file="images/x.jpg",
        sha256="a" * 64,
        md5="b" * 32,
        phash=-5,
        dhash=7,
        width=10,
        height=20,
        format="jpeg",
        collected_by=researcher,
        near_duplicate_of=image,
        job=None,
    )
    made, plain = unsaved(Image)(**values), Image(**values)
    fields = [f.attname for f in Image._meta.concrete_fields]
    assert [getattr(made, f) for f in fields if f != "collected_at"] == [getattr(plain, f) for f in fields if f != "collected_at"]
    assert made.benchmark is benchmark and made.near_duplicate_of is image and made.collected_by is researcher
    assert made._state.adding and made.pk is None and made.job is None
    entry, other = unsaved(JobEntry)(key="k"), unsaved(JobEntry)(key="l")
    assert entry.data == {} and entry.data is not other.data  # a callable default, called per instance
    with pytest.raises(KeyError):
        unsaved(Image)(nonsense=1)
