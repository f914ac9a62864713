"""A release's leaderboard: predictions uploaded or asked of an endpoint, scored by the harness's
library as a job against the loopback server; the score card names the release and the judge."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from exports import services
from exports.models import Score

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]
URL = "/api/v1/benchmarks/demo/releases/1.0.0/leaderboard/"


@pytest.fixture
def frozen(built, researcher):
    return services.freeze(built(), user=researcher)


def open_ids(release) -> list[str]:
    return [row["id"] for row in release.items.order_by("order").values_list("row", flat=True) if not row["choices"]]


def predictions(lines) -> SimpleUploadedFile:
    return SimpleUploadedFile("predictions.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode())


def post(api, data, capture):
    with capture(execute=True):
        return api.post(URL, data, format="multipart")


def test_uploaded_predictions_are_judged_and_the_score_card_names_release_and_judge(
    frozen, researcher, annotator, api_for, client_for, declare, fake_llm, django_capture_on_commit_callbacks
):
    declare("judge", model="judge-model", params={"temperature": 0})
    fake_llm.script("judge-model", '{"rating": 7, "reason": "mostly right"}')
    ids = open_ids(frozen)
    upload = predictions([{"id": int(i), "answer": f"Three apples ({i})."} for i in ids])  # integer ids are fine
    response = post(
        api_for(researcher),
        {"label": "my-vlm", "method": "pointwise", "judge": "judge", "predictions": upload},
        django_capture_on_commit_callbacks,
    )
    assert response.status_code == 201, response.content
    score = Score.objects.get(pk=response.json()["id"])
    assert score.status == Score.Status.DONE, score.job.message
    assert score.results["judged"] == 18 and score.results["mean"] == 7 and score.results["errors"] == 0
    assert score.results["by_task"]["计数"] == {"mean": 7, "n": 18}
    assert score.scored_with["release"] == "1.0.0" and len(score.scored_with["bundle_sha256"]) == 64
    assert score.scored_with["endpoints"]["judge"]["model"] == "judge-model"
    assert score.scored_with["endpoints"]["judge"]["params"] == {"temperature": 0}
    assert len(fake_llm.requests("judge-model")) == 18
    judged = " ".join(json.dumps(r) for r in fake_llm.requests("judge-model"))
    assert "SECRET-REFERENCE-0" in judged  # the judge grades against the private reference answers
    # Members see the leaderboard and the card; only researchers score.
    board = client_for(annotator).get("/b/demo/releases/1.0.0/leaderboard/").content.decode()
    assert "my-vlm" in board and "7.00 / 10" in board and "Score a model" not in board
    card = client_for(annotator).get(f"/b/demo/releases/1.0.0/leaderboard/{score.pk}/").content.decode()
    assert "/b/demo/releases/1.0.0/" in card and "judge-model" in card and "temperature=0" in card
    chart = client_for(annotator).get(f"/b/demo/releases/1.0.0/leaderboard/{score.pk}/chart.svg")
    assert chart["Content-Type"] == "image/svg+xml" and "计数".encode() in chart.content and b"70%" in chart.content
    refused = post(
        api_for(annotator),
        {"label": "x", "method": "pointwise", "judge": "judge", "predictions": predictions([])},
        django_capture_on_commit_callbacks,
    )
    assert refused.status_code == 403
    listed = api_for(annotator).get(URL).json()
    assert [(s["label"], s["headline"]) for s in listed] == [("my-vlm", "7.00 / 10")]


def test_a_bad_predictions_file_is_refused_with_its_lines_and_nothing_is_asked(
    frozen, researcher, api_for, declare, fake_llm, django_capture_on_commit_callbacks
):
    declare("judge", model="judge-model")
    first, second = open_ids(frozen)[:2]
    upload = SimpleUploadedFile(
        "p.jsonl",
        (
            json.dumps({"id": first, "answer": "three"})
            + "\n{not json\n"
            + json.dumps({"id": "999999", "answer": "x"})
            + "\n"
            + json.dumps({"id": first, "prediction": "again"})
            + "\n"
            + json.dumps({"id": second, "answer": 3})
            + "\n"
        ).encode(),
    )
    response = post(
        api_for(researcher),
        {"label": "bad", "method": "pointwise", "judge": "judge", "predictions": upload},
        django_capture_on_commit_callbacks,
    )
    assert response.status_code == 400
    detail = response.json()["detail"]
    for expected in (
        "line 2: not valid JSON",
        "line 3: id '999999' is not an item of the release demo 1.0.0",
        'line 4: the answer is under "prediction": name it "answer"',
        "line 5: the answer of item",
    ):
        assert expected in detail
    assert not Score.objects.exists() and fake_llm.requests() == []


def test_scores_need_a_frozen_release_and_usable_endpoints_before_any_call(
    built, researcher, api_for, declare, fake_llm, monkeypatch, django_capture_on_commit_callbacks
):
    from benchforge.errors import DomainError
    from exports import leaderboard

    draft = built()
    declare("judge", model="judge-model")
    with pytest.raises(DomainError, match="not frozen: freeze it first"):
        leaderboard.submit(draft, user=researcher, label="m", method="pointwise", predictions=b"{}", judge="judge")
    release = services.freeze(draft, user=researcher)
    upload = json.dumps({"id": open_ids(release)[0], "answer": "three"}).encode()
    with pytest.raises(DomainError, match="No LLM endpoint named 'nobody'|no endpoint named 'nobody'"):
        leaderboard.submit(release, user=researcher, label="m", method="pointwise", predictions=upload, judge="nobody")
    monkeypatch.delenv("BENCHFORGE_TEST_LLM_KEY")
    with pytest.raises(DomainError, match="BENCHFORGE_TEST_LLM_KEY"):
        leaderboard.submit(release, user=researcher, label="m", method="pointwise", predictions=upload, judge="judge")
    with pytest.raises(DomainError, match="CircularEval"):
        leaderboard.submit(release, user=researcher, label="m", method="mcq", predictions=upload)
    assert not Score.objects.exists() and fake_llm.requests() == []


def _letter_of(option: str):
    """A scripted model that always picks `option`, wherever CircularEval moved it."""

    def reply(body):
        text = json.dumps(body["messages"][-1]["content"])
        match = re.search(rf"([A-D])\. {option}", text)
        return match.group(1) if match else "I cannot tell."

    return reply


def test_an_endpoint_is_asked_for_mcq_under_circular_eval_and_for_pairwise_against_an_anchor(
    frozen, researcher, api_for, client_for, declare, fake_llm, django_capture_on_commit_callbacks
):
    declare("vlm", model="vlm-model", vision=True)
    declare("anchor", model="anchor-model", vision=True)
    declare("judge", model="judge-model", vision=True)
    fake_llm.script("vlm-model", _letter_of("three"))
    api = api_for(researcher)
    mcq = post(api, {"label": "vlm", "method": "mcq", "endpoint": "vlm"}, django_capture_on_commit_callbacks).json()
    scored = Score.objects.get(pk=mcq["id"])
    assert scored.status == Score.Status.DONE, scored.job.message
    assert scored.results["n"] == 4 and scored.results["circular"] == 1.0  # 4 OCR items, solved in every rotation
    assert len(fake_llm.requests("vlm-model")) == 4 * 3  # three options: three passes each
    assert all(
        m["role"] != "user" or "image_url" in json.dumps(m) for r in fake_llm.requests("vlm-model") for m in r["messages"][:1]
    )

    fake_llm.script("anchor-model", "Two apples.")
    fake_llm.script("vlm-model", "Three red apples.")
    fake_llm.script("judge-model", "Answer 2 is better.\nAnswer 2")
    anchor = post(
        api,
        {"label": "anchor", "method": "pointwise", "endpoint": "anchor", "judge": "judge"},
        django_capture_on_commit_callbacks,
    )
    fake_llm.script("judge-model", "Answer 2 is better.\nAnswer 2")
    pairwise = post(
        api,
        {"label": "vlm", "method": "pairwise", "endpoint": "vlm", "judge": "judge", "anchor": anchor.json()["id"]},
        django_capture_on_commit_callbacks,
    ).json()
    score = Score.objects.get(pk=pairwise["id"])
    assert score.status == Score.Status.DONE, score.job.message
    assert len(score.answers) == 18 and set(score.answers.values()) == {"Three red apples."}
    assert score.results["total"] == 18 and score.results["failed"] == 0
    # Always "the second answer": each model wins the order where it comes second, so every question ties.
    assert score.results["tie"] == 18
    page = client_for(researcher).get(f"/b/demo/releases/1.0.0/leaderboard/{score.pk}/").content.decode()
    assert "against" in page and "anchor" in page


def test_uploads_follow_the_harness_format_and_hostile_files_get_a_message_not_an_error_page(
    frozen, researcher, api_for, declare, fake_llm, django_capture_on_commit_callbacks
):
    declare("judge", model="judge-model")
    open_id = open_ids(frozen)[0]
    mcq_id = next(r["id"] for r in frozen.items.order_by("order").values_list("row", flat=True) if r["choices"])
    cases = {
        # What the CLI refuses, the platform refuses: one format, read by benchforge_harness.release.read_predictions.
        json.dumps({open_id: "three"}).encode(): "one JSON object mapping ids to answers",
        (json.dumps({"id": open_id, "response": "three"}) + "\n").encode(): 'under "response": name it "answer"',
        (json.dumps({"id": mcq_id, "answer": "C"}) + "\n").encode(): f"item '{mcq_id}' is a multiple-choice question",
        b"[" * 100_000 + b"]" * 100_000: "line 1: it is nested more than 64 levels deep",
        (
            b'{"id": "' + open_id.encode() + b'", "answer": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
        ): "nested more than 64 levels deep",
        b"\xff\xfe\x00garbage": "not UTF-8 text",
        b"": "empty",
        b"17\n": 'expected a JSON object {"id", "model", "answer"}, got int',
        (
            json.dumps({"id": open_id, "model": "a", "answer": "x"})
            + "\n"
            + json.dumps({"id": open_id, "model": "b", "answer": "y"})
            + "\n"
        ).encode(): "one model per file",
    }
    for data, expected in cases.items():
        response = post(
            api_for(researcher),
            {"label": "m", "method": "pointwise", "judge": "judge", "predictions": SimpleUploadedFile("p.jsonl", data)},
            django_capture_on_commit_callbacks,
        )
        assert response.status_code == 400, (data[:40], response.status_code)
        assert expected in response.json()["detail"], (data[:40], response.json()["detail"])
    assert not Score.objects.exists() and fake_llm.requests() == []


def test_the_cli_reads_the_same_format_and_refuses_the_same_files(frozen, tmp_path):
    from benchforge_harness.io import InputError
    from benchforge_harness.release import load_predictions
    from exports import leaderboard

    release = leaderboard.scoring_release(frozen)
    open_id = open_ids(frozen)[0]
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({open_id: "three"}))
    with pytest.raises(InputError, match="one JSON object mapping ids to answers"):
        load_predictions(path, release)
    path.write_text(json.dumps({"id": open_id, "prediction": "three", "model": "m"}) + "\n")
    with pytest.raises(InputError, match='under "prediction"'):
        load_predictions(path, release)
    path.write_text(json.dumps({"id": int(open_id), "model": "m", "answer": "three"}) + "\n")
    assert load_predictions(path, release).answers == {open_id: "three"}
