"""A release runs in Inspect: `inspect eval <bundle>/inspect_task.py --model openai/<name>` with the
real inspect-ai package against the loopback server (OPENAI_BASE_URL/OPENAI_API_KEY point at it),
and its scores equal the bundled harness's on the same replies.

The scripted model answers multiple-choice rotations right, except that on half of the items it
misses the rotation where the right option is shown first: CircularEval (every rotation) and the
first pass then differ, so both numbers are checked. The judge's grade follows the reference
answer it is shown, so the mean depends on every item being graded against its own reference."""

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import require

from .conftest import stored

INSPECT = Path(sys.prefix) / "bin" / "inspect"


def _text(body: dict) -> str:
    parts = []
    for message in body["messages"]:
        content = message["content"]
        parts += [content] if isinstance(content, str) else [p.get("text", "") for p in content if p.get("type") == "text"]
    return "\n".join(parts)


def answer(body: dict) -> str:
    text = _text(body)
    options = dict(re.findall(r"^([A-Z])\. (.+)$", text, flags=re.M))
    if not options:
        return "There are three apples on the table."
    right = next(letter for letter, option in options.items() if option == "three")
    item = int(re.search(r"How many\? \((\d+)\)", text).group(1))
    return "B" if item % 2 and right == "A" else right


def grade(body: dict) -> str:
    n = int(re.search(r"SECRET-REFERENCE-(\d+)", _text(body)).group(1))
    return json.dumps({"rating": n + 3, "reason": "follows the reference"})


# What only the English, or only the Chinese, templates say (the grader's rubric, the MCQ question).
RUBRIC = {"en": "Choose a grade from 1 to 10", "zh": "从 1 到 10 中选一个分数"}
ASK = {"en": "Answer with the letter of the option you choose", "zh": "请只回答你所选选项的字母"}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_inspect_eval_of_a_bundle_scores_what_the_harness_scores(built, benchmark, counting, tmp_path, fake_llm, language):
    require(INSPECT.is_file(), "inspect-ai (the `inspect` extra, installed by make test)")
    benchmark.language = language  # Inspect asks and grades in the release's language, as the harness does
    benchmark.save(update_fields=["language"])
    counting.judge_rules = "RELEASE-RULE: every apple on the table counts."
    counting.save()
    release = built()
    with tarfile.open(stored(release, "private.tar.gz")) as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / release.top
    assert (root / "inspect_task.py").is_file()
    assert "inspect_task.py" in (root / "README.md").read_text(encoding="utf-8")
    fake_llm.script("vlm", answer)
    fake_llm.script("judge", grade)

    # The bundled harness on the same replies.
    base_url = fake_llm.base_url("openai")
    models = tmp_path / "models.toml"
    models.write_text(
        f'[models.vlm]\nprovider = "openai"\nbase_url = "{base_url}"\nmodel = "vlm"\napi_key_env = "FAKE_KEY"\nvision = true\n\n'
        f'[models.judge]\nprovider = "openai"\nbase_url = "{base_url}"\nmodel = "judge"\napi_key_env = "FAKE_KEY"\n'
    )
    env = {**os.environ, "FAKE_KEY": "test-key", "BENCHFORGE_MODELS": str(models)}

    def harness(*args):
        done = subprocess.run(
            [sys.executable, "-m", "benchforge_harness", *args], cwd=root, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr

    harness("infer", "--model", "vlm", "--no-cache")
    harness("judge", "--judge", "judge", "--predictions", "predictions/vlm.jsonl", "--no-cache", "--out", "results/judge")
    harness("mcq", "--model", "vlm", "--all-passes", "--no-cache", "--out", "results/mcq")
    judged, mcq = (json.loads((root / "results" / c / "results.json").read_text(encoding="utf-8")) for c in ("judge", "mcq"))
    fake_llm.reset()

    # Inspect, exactly as the card says, offline but for the loopback server.
    inspect_env = {
        key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "INSPECT_", "ANTHROPIC_", "HF_"))
    }
    inspect_env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="test-key", HOME=str(tmp_path), NO_COLOR="1")
    command = [INSPECT, "eval", "inspect_task.py", "--model", "openai/vlm", "-M", "responses_api=false"]
    command += ["-T", "grader=openai/judge", "--log-format", "json", "--display", "plain", "--no-score-display"]
    ran = subprocess.run(command, cwd=root, env=inspect_env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    logs = {}
    for path in (root / "logs").glob("*.json"):
        log = json.loads(path.read_text(encoding="utf-8"))
        assert log["status"] == "success", log.get("error")
        logs[log["eval"]["task"].split("/")[-1]] = log
    assert set(logs) == {"mcq", "open_ended"}

    items = [json.loads(line) for line in (root / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    choice_items = [i for i in items if i["choices"]]
    open_items = [i for i in items if not i["choices"] and i["reference_answer"]]
    mcq_log, open_log = logs["mcq"], logs["open_ended"]
    assert mcq_log["results"]["total_samples"] == sum(len(i["choices"]) for i in choice_items)  # one per rotation
    assert open_log["results"]["total_samples"] == len(open_items)
    metrics = {name: m["value"] for s in mcq_log["results"]["scores"] for name, m in s["metrics"].items()}
    scored = mcq["models"]["vlm"]
    assert 0 < scored["circular"] < scored["vanilla"]  # the script makes the two differ
    assert metrics["circular"] == scored["circular"]
    assert metrics["first_pass"] == scored["vanilla"]
    metrics = {name: m["value"] for s in open_log["results"]["scores"] for name, m in s["metrics"].items()}
    assert judged["models"]["vlm"]["judged"] == len(open_items) and judged["models"]["vlm"]["errors"] == 0
    assert metrics["unreadable"] == 0
    assert abs(metrics["rating"] - judged["models"]["vlm"]["mean"]) < 1e-9

    # The grader saw the release's rubric, and the model the item's image.
    graded = fake_llm.requests("judge")
    assert len(graded) == len(open_items)
    assert all(RUBRIC[language] in _text(body) for body in graded)
    counted = [i for i in open_items if i["task"] == counting.name]
    assert counted and sum("RELEASE-RULE: every apple" in _text(body) for body in graded) == len(counted)
    asked = fake_llm.requests("vlm")
    assert all(ASK[language] in _text(body) for body in asked if re.search(r"^[A-Z]\. ", _text(body), flags=re.M))
    assert all(
        any(p.get("type") == "image_url" for m in b["messages"] if isinstance(m["content"], list) for p in m["content"])
        for b in asked
    )
    # Inspect's logs are working files: the bundle still verifies.
    harness("verify", ".")


def test_inspect_eval_of_the_public_bundle_scores_the_dev_split_and_says_what_the_test_split_lacks(built, tmp_path, fake_llm):
    """The card's command on the public bundle, whose test split has no answer keys nor reference
    answers: both tasks run on what they can score and say what they left out."""
    require(INSPECT.is_file(), "inspect-ai (the `inspect` extra, installed by make test)")
    release = built()  # the default withholds the test split's answer keys, references and criteria
    with tarfile.open(stored(release, "public.tar.gz")) as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / release.top
    fake_llm.script("vlm", answer)
    fake_llm.script("judge", grade)
    inspect_env = {
        key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "INSPECT_", "ANTHROPIC_", "HF_"))
    }
    inspect_env.update(OPENAI_BASE_URL=fake_llm.base_url("openai"), OPENAI_API_KEY="test-key", HOME=str(tmp_path), NO_COLOR="1")
    command = [INSPECT, "eval", "inspect_task.py", "--model", "openai/vlm", "-M", "responses_api=false"]
    command += ["-T", "grader=openai/judge", "--log-format", "json", "--display", "plain", "--no-score-display"]
    ran = subprocess.run(command, cwd=root, env=inspect_env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    items = [json.loads(line) for line in (root / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    keyed = [i for i in items if i["choices"] and i["answer"]]
    unkeyed = [i for i in items if i["choices"] and not i["answer"]]
    referenced = [i for i in items if not i["choices"] and i["reference_answer"]]
    unreferenced = [i for i in items if not i["choices"] and not i["reference_answer"]]
    assert keyed and unkeyed and referenced and unreferenced
    assert {i["split"] for i in keyed + referenced} == {"dev"} and {i["split"] for i in unkeyed + unreferenced} == {"test"}
    said = ran.stdout + ran.stderr
    assert f"mcq: {len(unkeyed)} item(s) of the test split left out: this public bundle withholds their answer keys" in said
    assert (
        f"open_ended: {len(unreferenced)} item(s) of the test split left out: this public bundle withholds their reference answers"
        in said
    )
    logs = {}
    for path in (root / "logs").glob("*.json"):
        log = json.loads(path.read_text(encoding="utf-8"))
        assert log["status"] == "success", log.get("error")
        logs[log["eval"]["task"].split("/")[-1]] = log
    assert logs["mcq"]["results"]["total_samples"] == sum(len(i["choices"]) for i in keyed)
    assert logs["open_ended"]["results"]["total_samples"] == len(referenced)
    assert logs["mcq"]["eval"]["metadata"]["skipped"][0].startswith(f"mcq: {len(unkeyed)} item(s) of the test split")
