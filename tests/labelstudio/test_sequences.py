"""Random sequences of steps on both sides of a project (tests/labelstudio/sequences.py says
which steps and what is checked after each): against the real Label Studio server, and, for many
more sequences, against an in-memory one. Seeds are fixed (a failure names its sequence and step);
BENCHFORGE_LS_SEQUENCES multiplies the number of sequences for a longer run."""

import os
from collections import Counter

import pytest

from curation import services as curation
from labelstudio.services import pull as pull_service
from labelstudio.services import push as push_service
from tests.factories import jpeg

from .fake_server import FakeLabelStudio
from .samples import label_studio_user, prefill_of
from .sequences import Sequence

pytestmark = pytest.mark.django_db
SCALE = int(os.environ.get("BENCHFORGE_LS_SEQUENCES", "1"))


@pytest.fixture
def images(benchmark, researcher):
    curation.image_indexes.forget()
    curation.known_index.forget()
    chart = benchmark.tasks.get(slug="chart")
    made = [
        curation.ingest_image(benchmark, jpeg(seed=4100 + n), original_name=f"{n}.jpg", tasks=[chart]).image for n in range(2)
    ]
    curation.screen_images(benchmark, [i.pk for i in made], action="accept", user=researcher)
    return chart, made


class RealSide:
    def __init__(self, api, annotators):
        self.api, self.annotators = api, annotators

    def prefill(self, task_id):
        return prefill_of(self.api, task_id)

    def annotate(self, task_id, result, *, parent_prediction, lead_time, by):
        body = {"result": result, "lead_time": lead_time, "completed_by": by}
        if parent_prediction:
            body["parent_prediction"] = parent_prediction
        return self.api.post(f"/api/tasks/{task_id}/annotations/", json=body).raise_for_status().json()

    def task(self, task_id):
        return self.api.get(f"/api/tasks/{task_id}/").raise_for_status().json()


class FakeSide:
    def __init__(self, server):
        self.server, self.annotators = server, [1, 2, 3]

    def prefill(self, task_id):
        return self.server.prefill(task_id)

    def annotate(self, task_id, result, **kwargs):
        return self.server.annotate(task_id, result, **kwargs)

    def task(self, task_id):
        return self.server.task(task_id)


def run(side, benchmark, researcher, images, *, sequences: int, steps: int, name: str):
    task, made = images
    total, stats = 0, Counter()
    for seed in range(sequences):
        sequence = Sequence(side, benchmark, researcher, made, task, seed=seed, title=f"{name} {seed}")
        total += sequence.run(steps)
        stats.update(sequence.stats)
    print(f"\n{name}: {sequences} sequences, {total} steps checked; {dict(sorted(stats.items()))}")
    # The sequences went through every rule, not only the easy ones.
    assert all(stats[what] for what in ("applied", "conflict", "held", "annotate_stale", "decide", "move")), stats
    return total


@pytest.mark.labelstudio
def test_random_sequences_against_the_real_server(ls_env, annotator_api, benchmark, researcher, images):
    annotators = [label_studio_user(annotator_api, f"seq{n}")["id"] for n in range(3)]
    assert run(RealSide(annotator_api, annotators), benchmark, researcher, images, sequences=6 * SCALE, steps=14, name="real") > 0


# 840 steps, each checking every item: minutes on a loaded machine, past the suite's 300 s limit.
@pytest.mark.timeout(900 * SCALE)
def test_random_sequences_in_process(benchmark, researcher, images, monkeypatch):
    server = FakeLabelStudio()
    for module in (push_service, pull_service):
        monkeypatch.setattr(module, "open_client", lambda *args, **kwargs: server)
    assert run(FakeSide(server), benchmark, researcher, images, sequences=40 * SCALE, steps=20, name="in-process") > 0
