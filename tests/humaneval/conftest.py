"""A frozen release with judged leaderboard scores (on the loopback LLM server): a pointwise score
whose judge gives item-dependent ratings, and a pairwise score against an anchor with mixed votes."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from exports import services
from exports.models import Score
from tests.exports.conftest import accepted, built  # noqa: F401 - the release fixtures
from tests.llm.conftest import _llm_settings, declare  # noqa: F401 - the models file on the loopback server

POINTWISE_LABEL = "SECRET-MODEL-ALPHA"
PAIRWISE_LABEL = "SECRET-MODEL-BETA"
ANCHOR_LABEL = "SECRET-ANCHOR-GAMMA"
API = "/api/v1/benchmarks/demo/releases/1.0.0/leaderboard/"


def open_ids(release) -> list[str]:
    return [row["id"] for row in release.items.order_by("order").values_list("row", flat=True) if not row["choices"]]


def _number(body) -> int:
    found = re.findall(r"apples \(#(\d+)\)", json.dumps(body))
    return int(found[-1]) if found else 0


def pointwise_reply(body) -> str:
    return json.dumps({"rating": _number(body) % 10 + 1, "reason": "SECRET-JUDGE-REASON"})


def pairwise_reply(body) -> str:
    return ["Answer1", "Answer2", "unable to decide: situation one"][_number(body) % 3]


def _upload(api, capture, data):
    with capture(execute=True):
        response = api.post(API, data, format="multipart")
    assert response.status_code == 201, response.content
    score = Score.objects.get(pk=response.json()["id"])
    assert score.status == Score.Status.DONE, score.job.message
    return score


def _predictions(ids, text) -> SimpleUploadedFile:
    lines = "".join(json.dumps({"id": i, "answer": text.format(i=i)}) + "\n" for i in ids)
    return SimpleUploadedFile("predictions.jsonl", lines.encode())


@pytest.fixture
def scored(built, researcher, api_for, declare, fake_llm, django_capture_on_commit_callbacks):  # noqa: F811
    release = services.freeze(built(), user=researcher)
    declare("judge", model="judge-model", vision=True)
    ids = open_ids(release)
    api = api_for(researcher)
    fake_llm.script("judge-model", pointwise_reply)
    pointwise = _upload(
        api,
        django_capture_on_commit_callbacks,
        {
            "label": POINTWISE_LABEL,
            "method": "pointwise",
            "judge": "judge",
            "predictions": _predictions(ids, "Three apples (#{i})."),
        },
    )
    anchor = _upload(
        api,
        django_capture_on_commit_callbacks,
        {"label": ANCHOR_LABEL, "method": "pointwise", "judge": "judge", "predictions": _predictions(ids, "Two apples (#{i}).")},
    )
    fake_llm.script("judge-model", pairwise_reply)
    pairwise = _upload(
        api,
        django_capture_on_commit_callbacks,
        {
            "label": PAIRWISE_LABEL,
            "method": "pairwise",
            "judge": "judge",
            "anchor": anchor.pk,
            "predictions": _predictions(ids, "Three red apples (#{i})."),
        },
    )
    return {"release": release, "pointwise": pointwise, "pairwise": pairwise, "anchor": anchor}


@pytest.fixture
def raters(make_user, benchmark):
    return [make_user("annotator", name, benchmarks=[benchmark]) for name in ("rita", "raul", "rosa")]


# ---- a multiple-choice score, for choice-extraction checks ----

MCQ_LABEL = "SECRET-MODEL-DELTA"


def _letter_in(body, option: str) -> str | None:
    match = re.search(rf"([A-D])\. {option}", json.dumps(body["messages"][-1]["content"]))
    return match.group(1) if match else None


def model_reply(body) -> str:
    """Items 6 and 8 answered with a bare letter (the rules read it); 7 and 9 in words the rules
    cannot settle (the extractor's turn). Always the option "three", wherever the pass put it."""
    number = int(re.findall(r"How many\? \((\d+)\)", json.dumps(body["messages"][-1]["content"]))[-1])
    letter = _letter_in(body, "three")
    return letter if number % 2 == 0 else f"Looking closely, I would go with the one saying three, so {letter.lower()}-ish maybe"


def extractor_reply(body) -> str:
    return _letter_in(body, "three") or "Z"


@pytest.fixture
def mcq(built, researcher, api_for, declare, fake_llm, django_capture_on_commit_callbacks):  # noqa: F811
    release = services.freeze(built(), user=researcher)
    declare("secret-vlm-endpoint", model="vlm-model", vision=True)
    declare("reader", model="extractor-model")
    fake_llm.script("vlm-model", model_reply)
    fake_llm.script("extractor-model", extractor_reply)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(researcher).post(
            API, {"label": MCQ_LABEL, "method": "mcq", "endpoint": "secret-vlm-endpoint", "judge": "reader"}, format="json"
        )
    assert response.status_code == 201, response.content
    score = Score.objects.get(pk=response.json()["id"])
    assert score.status == Score.Status.DONE, score.job.message
    return {"release": release, "extraction": score}
