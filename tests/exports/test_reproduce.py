"""A leaderboard score reproduces from its bundle: the platform and the harness the private bundle
carries read the same predictions format, judge with the same rules (taxonomy.json), prompts and
answer reading, and give equal numbers, item by item and overall."""

import copy
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from exports import leaderboard, services
from exports.models import Score

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]
URL = "/api/v1/benchmarks/demo/releases/1.0.0/leaderboard/"
RULE = "RELEASE-RULE: only the exact count earns more than 5."


def judge_reply(body) -> str:
    """A judge whose grade depends on every byte of the prompt (template, rule, reference, answer)."""
    prompt = json.dumps(body["messages"], sort_keys=True)
    rating = 1 + int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 10
    return json.dumps({"rating": rating, "reason": "graded"})


def test_a_platform_score_and_the_bundled_harness_give_equal_numbers(
    built, counting, researcher, api_for, client_for, declare, fake_llm, tmp_path, django_capture_on_commit_callbacks
):
    counting.judge_rules = RULE  # the release's own rule for Counting, in its taxonomy.json
    counting.save()
    release = services.freeze(built(), user=researcher)
    assert {t["name"]: t["judge_rule"] for t in release.taxonomy["tasks"]}[counting.name] == RULE
    models = declare("judge", model="judge-model")
    fake_llm.script("judge-model", judge_reply)
    ids = [r["id"] for r in release.items.order_by("order").values_list("row", flat=True) if not r["choices"]]
    lines = [{"id": i, "model": "my-vlm", "answer": f"I count {n % 4 + 2} apples."} for n, i in enumerate(ids)]
    upload = SimpleUploadedFile("p.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode())
    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(researcher).post(
            URL, {"label": "my-vlm", "method": "pointwise", "judge": "judge", "predictions": upload}, format="multipart"
        )
    assert response.status_code == 201, response.content
    score = Score.objects.get(pk=response.json()["id"])
    assert score.status == Score.Status.DONE, score.job.message
    platform_prompts = [json.dumps(r) for r in fake_llm.requests("judge-model")]
    assert len(platform_prompts) == 18 and all(RULE in p for p in platform_prompts)  # the release's rule, not the built-in
    platform = {
        key.split("\t")[1]: data["rating"]
        for key, data in score.job.entries.filter(key__startswith="judge:").values_list("key", "data")
    }

    # The bundled harness, from the unpacked private bundle, on the same predictions and judge.
    with tarfile.open(leaderboard_bundle(release)) as archive:
        archive.extractall(tmp_path, filter="data")
    (tmp_path / leaderboard.predictions_file_name(score)).write_text(leaderboard.predictions_jsonl(score), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    command = leaderboard.reproduce_commands(score)[-1].split()
    assert command[:4] == ["python", "-m", "benchforge_harness", "judge"]
    # A score made with a bundle whose harness predates the rename runs that bundle's own package.
    from benchforge_harness import distribution

    older = copy.copy(score)
    older.scored_with = {**score.scored_with, "bundle_harness_version": "0.2.4"}
    steps = leaderboard.reproduce_commands(older)
    assert distribution.wheel_name("0.2.4") in steps[3] and steps[-1].startswith("python -m harness judge ")
    assert f"python -m harness verify {release.top}" in steps
    result = subprocess.run(
        [sys.executable, *command[1:], "--workers", "1", "--no-cache", "--models", str(models)],
        cwd=tmp_path,
        env={**env, "PYTHONSAFEPATH": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / command[command.index("--out") + 1]
    harness_results = json.loads((out / "results.json").read_text())["models"]["my-vlm"]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    bundled = {row["id"]: row["rating"] for row in samples}
    assert len(bundled) == 18 and bundled == platform
    assert len(set(bundled.values())) > 1  # grades that differ, so equal means equal
    assert harness_results["mean"] == score.results["mean"]
    assert harness_results["by_task"] == score.results["by_task"]
    assert harness_results["alignment"]["score"] == pytest.approx(score.results["alignment"]["score"])
    assert sorted(json.dumps(r) for r in fake_llm.requests("judge-model")[18:]) == sorted(platform_prompts)  # same prompts
    print(f"platform mean {score.results['mean']}, bundled harness mean {harness_results['mean']}, 18 items equal")
    # The score card shows the whole bundle sha256 and the commands.
    card = client_for(researcher).get(f"/b/demo/releases/1.0.0/leaderboard/{score.pk}/").content.decode()
    assert score.scored_with["bundle_sha256"] in card and "python -m benchforge_harness judge --release demo-1.0.0" in card
    download = client_for(researcher).get(f"/b/demo/releases/1.0.0/leaderboard/{score.pk}/predictions.jsonl")
    assert download.content.decode() == leaderboard.predictions_jsonl(score)


def leaderboard_bundle(release):
    from tests.exports.conftest import stored

    return stored(release, "private.tar.gz")


def test_the_score_cards_commands_reproduce_the_score_on_a_machine_with_only_python(
    built, researcher, api_for, client_for, declare, fake_llm, tmp_path, django_capture_on_commit_callbacks
):
    """What the score card shows, copied from the page and run as it stands in a folder holding the
    download, the predictions file and models.toml: nothing installed but Python."""
    from tests.conftest import require
    from tests.exports.conftest import WHEELHOUSE, clean_machine, run_as_shown, stored
    from tests.llm.conftest import KEY_ENV

    require(any(WHEELHOUSE.glob("openai-*.whl")), f"the wheels of the openai extra in {WHEELHOUSE} (make setup)")
    release = services.freeze(built(), user=researcher)
    models = declare("judge", model="judge-model")
    fake_llm.script("judge-model", judge_reply)
    ids = [r["id"] for r in release.items.order_by("order").values_list("row", flat=True) if not r["choices"]]
    lines = [{"id": i, "model": "my-vlm", "answer": f"I count {n % 4 + 2} apples."} for n, i in enumerate(ids)]
    upload = SimpleUploadedFile("p.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode())
    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(researcher).post(
            URL, {"label": "my-vlm", "method": "pointwise", "judge": "judge", "predictions": upload}, format="multipart"
        )
    score = Score.objects.get(pk=response.json()["id"])
    assert score.status == Score.Status.DONE, score.job.message
    page = client_for(researcher).get(f"/b/demo/releases/1.0.0/leaderboard/{score.pk}/").content.decode()
    shown = html.unescape(re.search(r'<pre class="copyable" id="reproduce">(.*?)</pre>', page, flags=re.S).group(1))
    commands = [line for line in shown.splitlines() if line.strip()]
    assert any(line.startswith("pip install ") for line in commands)

    download = tmp_path / "download"
    download.mkdir()
    shutil.copyfile(stored(release, "private.tar.gz"), download / f"{release.top}-private.tar.gz")
    (download / leaderboard.predictions_file_name(score)).write_text(leaderboard.predictions_jsonl(score), encoding="utf-8")
    shutil.copyfile(models, download / "models.toml")
    ran = run_as_shown(commands, download, {**clean_machine(tmp_path), KEY_ENV: "id.secret"})
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    out = download / commands[-1].split("--out ")[1].split()[0]
    reproduced = json.loads((out / "results.json").read_text(encoding="utf-8"))["models"]["my-vlm"]
    assert reproduced["mean"] == score.results["mean"] and reproduced["by_task"] == score.results["by_task"]
