"""A frozen release of multiple-choice items scored by scripted models on the loopback server: one
item with a wrong answer key (every model "fails" it), one trivial (every model solves it), one
that weak models solve and strong ones fail, the rest solved in order of the models' strength."""

import json
import re

import pytest

from annotation.models import Item
from annotation.services import create_item, submit_item, update_item
from exports import leaderboard, services
from tests.factories import complete_fields, jpeg
from tests.llm.conftest import _llm_settings, declare  # noqa: F401 - the models file on the loopback server

COLOURS = ["red", "green", "blue"]
ITEMS = 12
WRONG_KEY, TRIVIAL, INVERTED = 0, 1, 2


def truth(n: int) -> str:
    return "blue" if n == WRONG_KEY else COLOURS[n % 3]


def solves(model: int, n: int) -> bool:
    """Whether scripted model `model` (0 weakest .. 3 strongest) picks the true colour of item n."""
    if n in (WRONG_KEY, TRIVIAL):
        return True  # the wrong key's item: every model says what is true, and the key says otherwise
    if n == INVERTED:
        return model <= 1
    return model >= n % 3 + 1


def scripted(model: int):
    def reply(body):
        text = json.dumps(body["messages"][-1]["content"])
        n = int(re.search(r"Colour question (\d+)", text).group(1))
        colour = truth(n) if solves(model, n) else COLOURS[(COLOURS.index(truth(n)) + 1) % 3]
        letter = re.search(rf"([A-D])\. {colour}", text)
        return letter.group(1) if letter else "I cannot tell."

    return reply


@pytest.fixture
def mcq_items(benchmark, annotator, researcher, counting):
    from curation.services import ingest_image, screen_images

    ocr = benchmark.tasks.get(slug="ocr")
    items = []
    for n in range(ITEMS):
        task = counting if n % 2 else ocr
        image = ingest_image(benchmark, jpeg(9300 + n), tasks=[task]).image
        screen_images(benchmark, [image.pk], action="accept", user=researcher)
        key = "A" if n == WRONG_KEY else "ABC"[COLOURS.index(truth(n))]
        fields = complete_fields(image, kind="mcq", choices=list(COLOURS), answer=key, question=f"Colour question {n}?")
        item = create_item(benchmark, task=task, user=annotator, assignee=annotator)
        item = update_item(item, fields, expected_version=item.version, user=annotator)
        items.append(submit_item(item, user=annotator))
    Item.objects.filter(pk__in=[i.pk for i in items]).update(status="accepted")
    return items


@pytest.fixture
def frozen_mcq(benchmark, researcher, mcq_items, django_capture_on_commit_callbacks):
    release = services.create_release(benchmark, user=researcher, version="1.0.0", dev_ratio=0.5)
    with django_capture_on_commit_callbacks(execute=True):
        services.start_build(release, user=researcher)
    release.refresh_from_db()
    return services.freeze(release, user=researcher)


@pytest.fixture
def score_models(frozen_mcq, researcher, declare, fake_llm, django_capture_on_commit_callbacks):  # noqa: F811
    """score_models(0, 1, ...): each scripted model scored under CircularEval, its job run to the end
    (and whatever the finished score starts: the item analysis)."""

    def score(*models):
        found = []
        for m in models:
            declare(f"model{m}", model=f"model-{m}", vision=True)
            fake_llm.script(f"model-{m}", scripted(m))
            with django_capture_on_commit_callbacks(execute=True):
                found.append(
                    leaderboard.submit(frozen_mcq, user=researcher, label=f"model {m}", method="mcq", endpoint=f"model{m}")
                )
        return found

    return score


def key_of(release, n: int) -> str:
    """The release id of fixture item n."""
    return next(key for key, row in release.items.values_list("key", "row") if row["question"] == f"Colour question {n}?")
