"""get_item_for reads an item with compiled queries (the editor opens one on every step of an
annotator's day): what it leaves loaded must be what the ORM's select_related/prefetch_related
left, read without a further query, and a bad id is a 404 whatever route it came by."""

import pytest
from django.db import connection
from django.http import Http404
from django.test.utils import CaptureQueriesContext

from annotation.models import Item
from annotation.selectors import get_item_for
from annotation.services import create_item, update_item
from benchforge.inputs import MAX_ID
from curation import services as curation
from tests.factories import jpeg

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


@pytest.fixture
def items(benchmark, counting, annotator, reviewer, researcher):
    images = [curation.ingest_image(benchmark, jpeg(8100 + n), tasks=[counting]).image for n in range(3)]
    curation.screen_images(benchmark, [i.pk for i in images], action="accept", user=researcher)
    seed = create_item(benchmark, task=counting, user=annotator, assignee=reviewer)
    seed = update_item(
        seed,
        {
            "question": "How many apples?",
            "reference_answer": "Three.",
            # Out of id order: the item's own order must win.
            "images": [images[2].pk, images[0].pk, images[1].pk],
            "criteria": [{"kind": "exact", "text": "three"}, {"kind": "soft", "text": "counts them"}],
        },
        expected_version=seed.version,
        user=annotator,
    )
    rewrite = create_item(benchmark, task=counting, user=annotator, seed=seed)
    imported = create_item(benchmark, task=counting, user=researcher, author=None)
    Item.objects.filter(pk=imported.pk).update(author=None)  # an imported item has no author
    return [seed, rewrite, imported]


def _as_seen(item) -> dict:
    """What the editor, the readiness check and a 409 read of an item."""
    return {
        "fields": {f.attname: getattr(item, f.attname) for f in Item._meta.concrete_fields},
        "author": item.author.username if item.author else None,
        "assignee": item.assignee.username if item.assignee else None,
        "links": [(link.pk, link.image_id, link.order, link.item_id) for link in item.item_images.all()],
        "images": [(link.image.pk, link.image.status, link.image.file.name) for link in item.item_images.all()],
        "criteria": [(c.pk, c.kind, c.text, c.order) for c in item.criteria.all()],
    }


def test_an_item_is_loaded_as_the_orm_would_load_it_and_read_without_a_query(items, researcher, benchmark):
    for item in items:
        expected = (
            Item.objects.select_related("author", "assignee").prefetch_related("item_images__image", "criteria").get(pk=item.pk)
        )
        found = get_item_for(researcher, benchmark.slug, item.pk)
        with CaptureQueriesContext(connection) as queries:
            seen = _as_seen(found)
            seed = _as_seen(found.seed) if found.seed_id else None
        assert seen == _as_seen(expected)
        assert queries.captured_queries == []
        if item.seed_id:
            assert seed == _as_seen(Item.objects.get(pk=item.seed_id))
    seed = items[0]
    assert [link.image_id for link in get_item_for(researcher, benchmark.slug, seed.pk).item_images.all()] == [
        link.image_id for link in seed.item_images.order_by("order")
    ]


def test_an_item_elsewhere_or_a_bad_id_is_a_404(items, benchmark, private_benchmark, counting, researcher, make_user):
    member = make_user("annotator", benchmarks=[benchmark])
    elsewhere = create_item(private_benchmark, task=private_benchmark.tasks.first(), user=researcher)
    for item_id in (elsewhere.pk, MAX_ID, MAX_ID + 1, 0, -1, "12a", "١٢", str(items[0].pk) + " "):
        with pytest.raises(Http404):
            get_item_for(researcher, benchmark.slug, item_id)
    with pytest.raises(Http404):
        get_item_for(member, private_benchmark.slug, elsewhere.pk)
    assert get_item_for(member, benchmark.slug, str(items[0].pk)).pk == items[0].pk
