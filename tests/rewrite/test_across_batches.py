"""A second batch over the same seeds: a rewrite the seed already has (from any batch) is not stored
again, and similarity hints compare every new rewrite with all the seed's rewrites, on every attempt;
the older rewrites' hints are brought up to date too."""

import pytest

from rewrite import services
from rewrite.models import BatchSeed, RawReply, Rewrite
from rewrite.similarity import is_near_copy
from tests.rewrite.conftest import five, question_of
from tests.rewrite.reply_corpus import GOOD

pytestmark = pytest.mark.django_db(transaction=True)


def start(benchmark, user, version, **kwargs):
    return services.start_batch(benchmark, user=user, endpoint="glm", template_version=version, **kwargs)


def test_a_second_batch_stores_no_rewrite_the_seed_already_has(declare, fake_llm, benchmark, seeds, zh_template, researcher):
    declare()
    fake_llm.script("glm-4", lambda body: five(question_of(body)))
    first = start(benchmark, researcher, zh_template)
    assert Rewrite.objects.filter(batch=first).count() == 5 * len(seeds)

    # The same model, the same replies: every line repeats a rewrite the seed has, on both attempts.
    second = start(benchmark, researcher, zh_template, items=[seed.pk for seed in seeds])
    assert Rewrite.objects.filter(batch=second).count() == 0
    for seed in seeds:
        texts = list(Rewrite.objects.filter(seed=seed).values_list("text", flat=True))
        assert len(texts) == len(set(texts)) == 5
    assert set(BatchSeed.objects.filter(batch=second).values_list("state", flat=True)) == {BatchSeed.State.MANUAL}
    dropped = [d["reason"] for reply in RawReply.objects.filter(batch_seed__batch=second) for d in reply.dropped]
    assert dropped and set(dropped) == {"duplicate"}


def test_near_copies_from_another_batch_are_flagged_on_every_attempt(
    declare, fake_llm, benchmark, seeds, zh_template, researcher
):
    declare()
    distinct = GOOD["zh"][:5]  # five rewrites unlike one another
    fake_llm.script("glm-4", "\n".join(distinct))
    first = start(benchmark, researcher, zh_template, items=[seeds[0].pk])
    assert Rewrite.objects.filter(batch=first).count() == 5
    assert not any(is_near_copy(r.similarity_siblings) for r in Rewrite.objects.filter(batch=first))

    # Near copies of the first batch's rewrites, all five in the first reply (no retry follows,
    # which used to be the only step that compared with other batches).
    fake_llm.script("glm-4", "\n".join(line.rstrip("？。") + "呀？" for line in distinct))
    # (Another temperature: the first batch's cached reply does not answer this one.)
    second = start(benchmark, researcher, zh_template, items=[seeds[0].pk], params={"temperature": 0.9})
    new = list(Rewrite.objects.filter(batch=second))
    assert len(new) == 5 and {r.reply.attempt for r in new} == {RawReply.Attempt.FIRST}
    assert all(is_near_copy(r.similarity_siblings) for r in new), [(r.text, r.similarity_siblings) for r in new]
    # The older rewrites now have near copies too, and their hints say so.
    assert all(is_near_copy(r.similarity_siblings) for r in Rewrite.objects.filter(batch=first))
