"""`python -m benchforge_harness` commands end to end against the loopback LLM server."""

import json
import math
import subprocess
import sys

import pytest

from benchforge_harness import metrics
from benchforge_harness.cli import main
from tests.conftest import REPO_ROOT
from tests.fakes.llm_server import Completion, Fault
from tests.harness.conftest import ITEMS, write_jsonl


def rating_from_answer(body):
    """The fake judge grades by a marker in the model answer: "[7]" -> 7, in varied formats."""
    text = body["messages"][0]["content"]
    answer = text.split("[Assistant's answer]")[1]
    if "[garbage]" in answer:
        return "I refuse to use the format."
    rating = int(answer.split("[")[1].split("]")[0])
    return [f'{{"rating": {rating}, "reason": "ok"}}', f'```json\n{{"rating": {rating}, "reason": "fenced"}}\n```\nDone.'][
        rating % 2
    ]


# ------------------------------------------------------------------ judge


def test_judge_scores_tasks_categories_and_alignment_then_reruns_for_free(env):
    answers = {
        "c1": "three [8]",
        "c1-r1": "three [6]",
        "c1-r2": "three [7]",
        "w1": "poem [9]",
        "w1-r1": "poem [9]",
        "t1": "apples [4]",
    }
    env.server.script("judge", rating_from_answer)
    preds = env.predictions("m", answers)
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j1")) == 0
    result = env.results("j1")["models"]["m"]
    assert result["judged"] == 6 and result["unparsed"] == 0 and result["no_answer"] == 0
    assert result["mean"] == pytest.approx((8 + 6 + 7 + 9 + 9 + 4) / 6)
    assert result["by_task"]["Counting"] == {"mean": 7.0, "n": 3}
    assert result["by_category"]["Reasoning"] == {"mean": 9.0, "n": 2}
    # groups: c1 -> [8, 6, 7] sigma sqrt(2/3); w1 -> [9, 9] sigma 0; t1 alone is left out
    assert result["alignment"]["groups"] == 2 and result["alignment"]["skipped_single"] == 1
    assert result["alignment"]["score"] == pytest.approx(2 / math.sqrt(2 / 3))
    # the judge never sees the image; multi-turn history and the task rule are in the prompt
    prompts = [r["messages"][0]["content"] for r in env.server.requests("judge")]
    assert all(isinstance(p, str) for p in prompts)
    history_prompt = next(p for p in prompts if "apples [4]" in p)
    assert "User: Describe the fruit." in history_prompt and "Assistant: Red apples." in history_prompt
    assert "multi-turn" in history_prompt
    counting_prompt = next(p for p in prompts if "three [8]" in p)
    assert "count in the answer differs" in counting_prompt
    samples = env.samples("j1")
    assert {s["id"] for s in samples} == set(answers)
    assert all(s["outputs"] and s["status"] == "ok" for s in samples)
    for name in ("report.md", "report.html", "charts/radar_tasks.svg", "charts/quadrant.svg"):
        assert (env.root / "j1" / name).exists(), name
    html = (env.root / "j1" / "report.html").read_text(encoding="utf-8")
    assert "<svg" in html and "src=" not in html  # charts inline: one self-contained file

    calls = len(env.server.requests("judge"))
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j2")) == 0
    assert len(env.server.requests("judge")) == calls  # every reply from the cache
    assert env.results("j2")["models"] == env.results("j1")["models"]
    assert env.results("j2")["run"]["usage"]["calls"] == 0
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j1")) == 0
    assert env.results("j1")["run"]["skipped"] == 6  # same folder: nothing left to do


def test_unreadable_judge_replies_are_retried_then_counted_never_averaged(env):
    def judge(body):
        messages = body["messages"]
        if "[garbage]" in messages[0]["content"]:
            return "no idea"
        if "[late]" in messages[0]["content"]:  # readable only once corrected
            return '{"rating": 5, "reason": "fixed"}' if len(messages) > 1 else "Rating would be good."
        return '{"rating": 8, "reason": "ok"}'

    env.server.script("judge", judge)
    preds = env.predictions("m", {"c1": "[garbage]", "c1-r1": "[late]", "w1": "fine"})
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j"), "--parse-retries", "2") == 0
    result = env.results("j")["models"]["m"]
    assert result["judged"] == 2 and result["unparsed"] == 1 and result["unparsed_ids"] == ["c1"]
    assert result["mean"] == pytest.approx((5 + 8) / 2)
    garbage = next(s for s in env.samples("j") if s["id"] == "c1")
    assert garbage["status"] == "unparsed" and garbage["outputs"] == ["no idea"] * 3 and "no rating" in garbage["parse_error"]
    retried = [r for r in env.server.requests("judge") if "[garbage]" in r["messages"][0]["content"]]
    assert len(retried) == 3 and "could not read a grade" in retried[-1]["messages"][-1]["content"]
    report = (env.root / "j" / "report.md").read_text(encoding="utf-8")
    assert "unparsed c1" in report


def test_an_interrupted_judge_run_resumes_without_repeating_work(env):
    env.server.script("judge", '{"rating": 6, "reason": "ok"}')
    preds = env.predictions("m", {i: "x" for i in ("c1", "c1-r1", "c1-r2", "w1")})
    out = env.root / "j"
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(out), cache=False) == 0
    lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    (out / "samples.jsonl").write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")  # as if killed halfway
    env.server.reset()
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(out), cache=False) == 0
    assert len(env.server.requests("judge")) == 2
    assert sorted(s["id"] for s in env.samples("j")) == ["c1", "c1-r1", "c1-r2", "w1"]


def test_failed_judge_calls_are_recorded_and_retried_on_the_next_run(env, capsys):
    env.server.script("judge", [Fault.bad_request("context too long"), '{"rating": 6, "reason": "ok"}'])
    preds = env.predictions("m", {"w1": "x"})
    # A failed call makes the run fail (exit 1), with its reason, until a rerun asks it again.
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j")) == 1
    err = capsys.readouterr().err
    assert "1 call(s) failed for good" in err and "1 x endpoint 'judge'" in err and "context too long" in err
    first = env.results("j")["models"]["m"]
    assert first["errors"] == 1 and first["error_ids"] == ["w1"] and first["mean"] is None
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j")) == 0
    assert env.results("j")["models"]["m"]["mean"] == 6


def test_resuming_with_other_settings_is_refused(env, capsys):
    env.server.script("judge", '{"rating": 6, "reason": "ok"}')
    preds = env.predictions("m", {"w1": "x"})
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j")) == 0
    prompts = env.root / "prompts"
    prompts.mkdir()
    (prompts / "pointwise.txt").write_text("Grade {{answer}} against {{reference}} for {{question}}.", encoding="utf-8")
    code = env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j"), "--prompts", str(prompts))
    assert code == 2
    assert "different settings (prompts)" in capsys.readouterr().err
    assert (
        env.run(
            "judge",
            "--judge",
            "judge",
            "--predictions",
            preds,
            "--out",
            str(env.root / "j"),
            "--prompts",
            str(prompts),
            "--restart",
        )
        == 0
    )
    assert list((env.root / "j").glob("samples.jsonl.*.old"))  # the earlier samples are set aside, not lost


@pytest.mark.parametrize(
    "problem,message",
    [
        ("bad_json", "m.jsonl:2: not valid JSON"),
        ("unknown_id", "m.jsonl:1: id 'nope' is not an item"),
        ("unknown_endpoint", "no endpoint named 'nobody'"),
    ],
)
def test_bad_inputs_fail_with_file_and_line(env, capsys, problem, message):
    path = env.root / "m.jsonl"
    if problem == "bad_json":
        path.write_text('{"id": "w1", "model": "m", "answer": "x"}\n{oops\n', encoding="utf-8")
    elif problem == "unknown_id":
        path.write_text('{"id": "nope", "model": "m", "answer": "x"}\n', encoding="utf-8")
    else:
        path.write_text('{"id": "w1", "model": "m", "answer": "x"}\n', encoding="utf-8")
    judge = "nobody" if problem == "unknown_endpoint" else "judge"
    assert env.run("judge", "--judge", judge, "--predictions", str(path), "--out", str(env.root / "j")) == 2
    assert message in capsys.readouterr().err


# ------------------------------------------------------------------ infer


def test_infer_sends_history_and_inline_images_and_records_failures(env):
    def vlm(body):
        last = body["messages"][-1]["content"]
        text = last if isinstance(last, str) else last[-1]["text"]
        return Fault.bad_request("image too large") if text == "Count the apples." else f"answer to {text}"

    env.server.script("vlm", vlm)
    out = env.root / "preds.jsonl"
    assert env.run("infer", "--model", "vlm", "--out", str(out)) == 1  # one failure: not fatal, reported
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert set(rows) == {"c1", "c1-r1", "c1-r2", "w1", "w1-r1", "t1"}  # MCQ items are left to `mcq`
    assert rows["c1"]["answer"] == "answer to How many apples?" and rows["c1"]["model"] == "vlm"
    assert rows["c1-r1"]["status"] == "error" and "image too large" in rows["c1-r1"]["error"]
    multi = next(r for r in env.server.requests("vlm") if len(r["messages"]) == 3)
    first, second, last = multi["messages"]
    assert first["role"] == "user" and first["content"][0]["type"] == "image_url"
    assert first["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert second == {"role": "assistant", "content": "Red apples."}
    assert last == {"role": "user", "content": "What did I ask before?"}

    env.server.script("vlm", "fixed now")
    env.server.reset()
    assert env.run("infer", "--model", "vlm", "--out", str(out)) == 0
    assert len(env.server.requests("vlm")) == 1  # only the failed item is asked again
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert rows["c1-r1"]["answer"] == "fixed now" and len(rows) == 6


def test_infer_refuses_images_for_a_text_only_endpoint(env, capsys):
    assert env.run("infer", "--model", "textlm", "--out", str(env.root / "p.jsonl")) == 2
    assert "vision = false" in capsys.readouterr().err
    env.server.script("textlm", "blind answer")
    assert env.run("infer", "--model", "textlm", "--out", str(env.root / "p.jsonl"), "--text-only") == 0
    assert all(isinstance(m["content"], str) for r in env.server.requests("textlm") for m in r["messages"])


# ------------------------------------------------------------------ mcq


def shown_options(body) -> dict:
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else content[-1]["text"]
    return {line[0]: line[3:] for line in text.splitlines() if len(line) > 3 and line[1:3] == ". "}


def test_mcq_circular_eval_early_stop_and_extraction(env):
    def vlm(body):
        options = shown_options(body)
        letter_of = {text: letter for letter, text in options.items()}
        if "apple" in letter_of:
            # pass 1 by letter, pass 2 by option text, pass 3 a paraphrase for the extractor, pass 4 a refusal
            n = len([r for r in env.server.requests("vlm") if "Which fruit?" in json.dumps(r)])
            return [letter_of["apple"], "Answer: apple", "The round one from the orchard.", "I cannot tell."][min(n - 1, 3)]
        return "B"  # colour item: wrong on the first pass ("blue")

    def extractor(body):
        text = body["messages"][0]["content"]
        options = {line[0]: line[3:] for line in text.split("The reply:")[0].splitlines() if line[1:3] == ". "}
        return {v: k for k, v in options.items()}["apple"] if "orchard" in text else "Z"

    env.server.script("vlm", vlm)
    env.server.script("extractor", extractor)
    assert env.run("mcq", "--model", "vlm", "--extractor", "extractor", "--out", str(env.root / "q")) == 0
    result = env.results("q")
    assert result["items"] == 2 and result["skipped_without_answer_key"] == 1  # m3 has no key
    vlm_result = result["models"]["vlm"]
    assert vlm_result["vanilla"] == 0.5  # fruit right on pass 1, colour wrong
    assert vlm_result["circular"] == 0.0  # fruit's 4th pass is a refusal -> Z -> wrong
    assert vlm_result["extraction"] == {"heuristic": 3, "extractor": 1, "heuristic_none": 1}
    assert vlm_result["needed_extractor"] == 1
    assert vlm_result["by_subcategory"]["Coarse"] == {"n": 1, "vanilla": 1.0, "circular": 0.0, "undecided": 0}
    colour_calls = [r for r in env.server.requests("vlm") if "What colour?" in json.dumps(r)]
    assert len(colour_calls) == 1  # wrong on pass 1: the second rotation is never asked
    samples = env.samples("q")
    fruit = [s for s in samples if s["id"] == "m1"]
    assert [s["shown_answer"] for s in fruit] == ["B", "A", "D", "C"]  # the key moves with the rotation
    assert [s["correct"] for s in fruit] == [True, True, True, False]
    items = {r["id"]: r for r in env.samples("q", "item_results.jsonl")}
    assert items["m1"]["passes_run"] == 4 and items["m2"]["passes_run"] == 1


def test_mcq_unresolved_without_extractor_counts_as_wrong(env):
    env.server.script("vlm", "Something round, I suppose.")
    assert env.run("mcq", "--model", "vlm", "--out", str(env.root / "q"), "--all-passes") == 0
    result = env.results("q")["models"]["vlm"]
    assert result["vanilla"] == 0.0 and result["circular"] == 0.0
    assert result["extraction"] == {"unresolved": 6}  # all passes run: 4 + 2


# ------------------------------------------------------------------ pairwise, touchstone, hallucination


def test_pairwise_both_orders_combined_per_category(env):
    # the judge prefers the answer containing "good", else cannot decide
    def judge(body):
        text = body["messages"][0]["content"]
        text = text if isinstance(text, str) else text[-1]["text"]
        first = text.split("[Answer1]")[1].split("[End of Answer1]")[0]
        second = text.split("[Answer2]")[1].split("[End of Answer2]")[0]
        if "good" in first and "good" not in second:
            return "reasons\nAnswer1"
        if "good" in second and "good" not in first:
            return "reasons\n**Answer 2**"
        return "unable to decide: situation one" if "both" in first else "unable to decide: situation two"

    env.server.script("judge", judge)
    anchor = env.predictions("anchor", {"c1": "meh", "c1-r1": "good", "w1": "both good too", "t1": "x"})
    model = env.predictions("m", {"c1": "good", "c1-r1": "meh", "w1": "both good", "w1-r1": "good"})
    assert (
        env.run(
            "pairwise",
            "--judge",
            "judge",
            "--anchor",
            anchor,
            "--predictions",
            model,
            "--out",
            str(env.root / "p"),
            "--text-only",
            "--bootstrap",
            "50",
        )
        == 0
    )
    result = env.results("p")
    m = result["models"]["m"]
    # c1 win, c1-r1 lose, w1 tie (unable), c1-r2/t1/w1-r1 failed (an answer is missing)
    assert (m["win"], m["tie"], m["lose"], m["failed"], m["total"]) == (1, 1, 1, 3, 6)
    assert m["win_rate"] == pytest.approx(1 / 6)
    assert m["by_category"]["Perception"]["win"] == 1 and m["by_category"]["Perception"]["lose"] == 1
    assert m["failed_ids"]["w1-r1"] == "no answer from the anchor"
    assert len(env.server.requests("judge")) == 6  # 3 questions x 2 orders
    assert set(result["elo"]["bootstrap"]) == {"m", "anchor"}
    assert (env.root / "p" / "charts" / "wtl_overall.svg").exists()


def test_pairwise_sends_images_to_a_vision_judge(env):
    env.server.script("vlm", "Answer1")
    anchor = env.predictions("anchor", {"c1": "a"})
    model = env.predictions("m", {"c1": "b"})
    assert (
        env.run(
            "pairwise",
            "--judge",
            "vlm",
            "--anchor",
            anchor,
            "--predictions",
            model,
            "--out",
            str(env.root / "p"),
            "--bootstrap",
            "10",
        )
        == 0
    )
    content = env.server.requests("vlm")[0]["messages"][0]["content"]
    assert content[0]["type"] == "image_url" and "(the image is attached)" in content[-1]["text"]
    # Answer1 in both orders: the anchor wins order 1, the model order 2 -> tie
    assert env.results("p")["models"]["m"]["tie"] == 1


def test_touchstone_swaps_positions_and_averages(env):
    def judge(body):
        text = body["messages"][0]["content"]
        first = text.split("[Assistant 1]")[1]
        return "8 6\nfirst is better" if first.strip().startswith("model says") else "5 9\nsecond is better"

    env.server.script("judge", judge)
    preds = env.predictions("m", {"w1": "model says apples", "w1-r1": "model says poem", "c1": "no description"})
    assert env.run("touchstone", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "t")) == 0
    m = env.results("t")["models"]["m"]
    # model: 8 when first, 9 when second -> 8.5; reference: 6 and 5 -> 5.5; only items with a description
    assert m["scored"] == 2 and m["score"] == 8.5 and m["reference_score"] == 5.5 and m["score_x100"] == 850
    assert len(env.server.requests("judge")) == 4
    prompt = env.server.requests("judge")[0]["messages"][0]["content"]
    assert "Three red apples on a table." in prompt and "A short poem." in prompt


def test_hallucination_scores_from_the_description(env):
    env.server.script(
        "judge",
        lambda body: (
            '{"score": 0, "reason": "ok"}'
            if "apples" in body["messages"][0]["content"].split("[Assistant's answer]")[1]
            else '{"score": 10, "reason": "made up"}'
        ),
    )
    preds = env.predictions("m", {"w1": "three apples", "w1-r1": "a dragon"})
    assert env.run("hallucination", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "h")) == 0
    m = env.results("h")["models"]["m"]
    assert m["mean"] == 5.0 and m["scored"] == 2


# ------------------------------------------------------------------ agreement and report


def test_agreement_pairs_judge_and_human_scores(env):
    judge = write_jsonl(
        env.root / "judge.jsonl",
        [{"id": f"q{i}", "model": "m", "status": "ok", "rating": r} for i, r in enumerate([1, 2, 3, 4, 5])]
        + [{"id": "q9", "model": "m", "status": "unparsed"}],
    )
    human = write_jsonl(env.root / "human.jsonl", [{"id": f"q{i}", "score": s} for i, s in enumerate([2, 4, 5, 4, 5])])
    assert env.run("agreement", "--judge", judge, "--human", human, "--out", str(env.root / "a")) == 0
    result = env.results("a")
    assert result["paired"] == 5 and result["judge_rows_not_ok"] == 1
    expected = metrics.agreement([1, 2, 3, 4, 5], [2, 4, 5, 4, 5])
    assert result["overall"] == pytest.approx(expected)
    assert result["overall"]["mae"] == 1.0 and result["overall"]["fuzzy_accuracy"] == 0.8


def test_report_command_rebuilds_from_results(env, capsys):
    env.server.script("judge", '{"rating": 6, "reason": "ok"}')
    preds = env.predictions("m", {"w1": "x", "w1-r1": "y"})
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j")) == 0
    (env.root / "j" / "report.md").unlink()
    assert env.run("report", str(env.root / "j" / "results.json")) == 0
    assert "| m | 6.000 | ∞ |" in (env.root / "j" / "report.md").read_text(encoding="utf-8")
    (env.root / "bad.json").write_text("{}", encoding="utf-8")
    assert env.run("report", str(env.root / "bad.json")) == 2
    assert "not a harness results file" in capsys.readouterr().err


def test_every_command_has_help_and_the_module_runs_from_a_release_folder(tmp_path):
    for command in ("infer", "mcq", "judge", "pairwise", "touchstone", "hallucination", "agreement", "report"):
        done = subprocess.run(
            [sys.executable, "-m", "benchforge_harness", command, "--help"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        assert "usage: python -m benchforge_harness " + command in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "benchforge_harness", "judge", "--judge", "j", "--predictions", "p.jsonl"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )
    assert done.returncode == 2 and "items.jsonl: file not found (is . a release folder?)" in done.stderr


def test_a_copy_of_the_harness_runs_inside_a_release_folder(tmp_path, fake_llm):
    """What a researcher does: cd into the release and `python -m benchforge_harness ...`, nothing installed."""
    import shutil

    release = tmp_path / "bench-1.0"
    shutil.copytree(
        REPO_ROOT / "benchforge_harness", release / "benchforge_harness", ignore=shutil.ignore_patterns("__pycache__")
    )
    write_jsonl(
        release / "items.jsonl",
        [i for i in ITEMS if not i.get("images")]
        + [{"id": "x1", "question": "Name the fruit.", "reference_answer": "An apple.", "task": "Recognition"}],
    )
    write_jsonl(release / "p.jsonl", [{"id": "x1", "model": "m", "answer": "apple"}])
    (release / "models.toml").write_text(
        f'[models.judge]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "judge"\n'
        'api_key_env = "HARNESS_TEST_KEY"\n',
        encoding="utf-8",
    )
    fake_llm.script("judge", '{"rating": 9, "reason": "right"}')
    check = (
        "import sys, benchforge_harness.cli, benchforge_harness.commands.report; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'benchforge', 'jobs', 'curation', 'annotation', 'labelstudio', 'rewrite', 'qc', 'exports')]; "
        "assert not bad, bad; assert benchforge_harness.cli.__file__.startswith(sys.argv[1]), benchforge_harness.cli.__file__"
    )
    env = {"PATH": "/usr/bin:/bin", "HARNESS_TEST_KEY": "x"}
    subprocess.run([sys.executable, "-c", check, str(release)], cwd=release, env=env, check=True)
    done = subprocess.run(
        [sys.executable, "-m", "benchforge_harness", "judge", "--judge", "judge", "--predictions", "p.jsonl"],
        cwd=release,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((release / "results" / "judge" / "results.json").read_text(encoding="utf-8"))
    assert results["models"]["m"]["mean"] == 9
    assert (release / ".harness-cache" / "responses.sqlite").exists()


def test_worker_processes_split_the_calls_and_merge_their_samples(env):
    env.server.script("judge", rating_from_answer)
    answers = {"c1": "[8]", "c1-r1": "[6]", "c1-r2": "[7]", "w1": "[9]", "w1-r1": "[garbage]", "t1": "[4]"}
    preds = env.predictions("m", answers)
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "one")) == 0
    assert (
        env.run(
            "judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "two"), "--workers", "2", cache=False
        )
        == 0
    )
    one, two = env.results("one"), env.results("two")
    assert two["models"] == one["models"]
    assert two["run"]["usage"]["calls"] == 6 + 2  # every job asked once, the unreadable one twice more
    assert sorted(s["key"] for s in env.samples("two")) == sorted(s["key"] for s in env.samples("one"))
    assert not list((env.root / "two").glob("*.part*"))
    distinct = {json.dumps(r["messages"]) for r in env.server.requests("judge")}
    assert len(env.server.requests("judge")) == 2 * 8 and len(distinct) == 8  # the same requests as one process


def test_rows_left_by_an_interrupted_worker_are_kept(env):
    from benchforge_harness.calls import SampleLog

    out = env.root / "j"
    out.mkdir()
    (out / "samples.jsonl").write_text(json.dumps({"key": "m\tc1", "status": "ok", "rating": 8}) + "\n", encoding="utf-8")
    (out / "samples.jsonl.part1").write_text(
        json.dumps({"key": "m\tw1", "status": "ok", "rating": 3}) + "\n" + '{"key": "m\\tt1", "sta', encoding="utf-8"
    )
    log = SampleLog(out / "samples.jsonl")
    assert log.finished("m\tc1") and log.finished("m\tw1") and not log.finished("m\tt1")  # torn line dropped
    log.compact(["m\tw1", "m\tc1"])
    assert [json.loads(line)["key"] for line in (out / "samples.jsonl").read_text().splitlines()] == ["m\tw1", "m\tc1"]
    assert not (out / "samples.jsonl.part1").exists()


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_workers_value_is_refused_with_its_expected_form(env, capsys, value):
    preds = env.predictions("m", {"w1": "x"})
    with pytest.raises(SystemExit) as exit_info:
        env.run("judge", "--judge", "judge", "--predictions", preds, "--workers", value)
    assert exit_info.value.code == 2
    assert f"expected 'auto' or a whole number of 1 or more, got '{value}'" in capsys.readouterr().err


# ------------------------------------------------------------------ limits, messages, exit codes


def test_workers_never_exceed_the_endpoint_concurrency_together(env, tmp_path):
    """4 worker processes and max_concurrency = 1: one request in flight at a time, not 4."""
    env.server.script("judge", '{"rating": 6, "reason": "ok"}')
    env.server.set_latency(0.05)
    models = tmp_path / "narrow.toml"
    models.write_text(
        f'[models.judge]\nprovider = "openai"\nbase_url = "{env.server.base_url("openai")}"\nmodel = "judge"\n'
        'api_key_env = "HARNESS_TEST_KEY"\nmax_concurrency = 1\nmax_retries = 0\n',
        encoding="utf-8",
    )
    answers = {i: "x" for i in ("c1", "c1-r1", "c1-r2", "w1", "w1-r1", "t1")}
    preds = [env.predictions(name, answers) for name in ("m1", "m2")]
    code = main(
        [
            "judge",
            "--release",
            str(tmp_path / "release"),
            "--models",
            str(models),
            "--no-cache",
            "--judge",
            "judge",
            "--predictions",
            *preds,
            "--out",
            str(tmp_path / "j"),
            "--workers",
            "4",
        ]
    )
    assert code == 0
    assert len(env.server.requests("judge")) == 12 and env.server.max_in_flight("judge") == 1
    assert env.results("j")["run"]["usage"]["calls"] == 12


@pytest.mark.parametrize("command", ["infer", "judge", "pairwise", "touchstone", "hallucination", "mcq"])
def test_an_unset_key_stops_before_the_first_call(env, capsys, monkeypatch, command):
    env.server.script("judge", '{"rating": 6, "reason": "ok"}')
    env.server.script("vlm", "B")
    preds = env.predictions("m", {"w1": "x"})
    monkeypatch.delenv("HARNESS_TEST_KEY")
    argv = {
        "infer": ["--model", "vlm"],
        "judge": ["--judge", "judge", "--predictions", preds],
        "pairwise": [
            "--judge",
            "judge",
            "--anchor",
            env.predictions("anchor", {"w1": "y"}),
            "--predictions",
            preds,
            "--text-only",
        ],
        "touchstone": ["--judge", "judge", "--predictions", preds],
        "hallucination": ["--judge", "judge", "--predictions", preds],
        "mcq": ["--model", "vlm"],
    }[command]
    assert env.run(command, *argv, "--out", str(env.root / "out" / command)) == 2
    err = capsys.readouterr().err
    assert "environment variable HARNESS_TEST_KEY is not set; set it to the API key" in err
    assert "cached" not in err and "from the cache" not in err
    assert env.server.requests() == []


@pytest.mark.parametrize("cache", [True, False])
def test_failed_calls_are_never_counted_as_cached_and_fail_the_run(env, capsys, cache):
    env.server.script("vlm", Fault.bad_request("image too large"))
    out = env.root / "p.jsonl"
    assert env.run("infer", "--model", "vlm", "--out", str(out), cache=cache) == 1
    err = capsys.readouterr().err
    assert "6 asked this run (0 answered from the cache)" in err and "6 failed" in err
    assert "6 x endpoint 'vlm'" in err and "image too large" in err  # the reason, once, with its count


def test_a_repeated_no_cache_run_sends_every_call_again_and_reports_no_cache_hit(env, capsys):
    env.server.script("vlm", "B")
    for run in (1, 2):
        assert env.run("infer", "--model", "vlm", "--out", str(env.root / f"p{run}.jsonl"), cache=False) == 0
        err = capsys.readouterr().err
        assert "6 asked this run (0 answered from the cache)" in err, err
        assert len(env.server.requests("vlm")) == 6 * run  # every call sent again
    # With the cache, the second run is answered from it: the numbers above are not a fixed string.
    assert env.run("infer", "--model", "vlm", "--out", str(env.root / "c1.jsonl")) == 0
    assert env.run("infer", "--model", "vlm", "--out", str(env.root / "c2.jsonl")) == 0
    assert "6 asked this run (6 answered from the cache)" in capsys.readouterr().err
    assert len(env.server.requests("vlm")) == 18


def test_judge_run_with_every_call_failing_exits_non_zero_and_says_why(env, capsys):
    env.server.script("judge", Completion(None, "content_filter"))
    preds = env.predictions("m", {"w1": "x", "c1": "y"})
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j")) == 1
    captured = capsys.readouterr()
    assert "2 call(s) failed for good" in captured.err and "content filter" in captured.err
    assert env.results("j")["models"]["m"]["errors"] == 2
    assert "from the cache" in captured.err and "(0 from the cache)" in captured.err


def test_the_console_ends_with_the_results_table(env, capsys):
    env.server.script("judge", rating_from_answer)
    preds = env.predictions("m", {"c1": "[8]", "c1-r1": "[6]"})
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["model", "mean", "alignment", "groups", "judged", "unparsed", "errors", "no", "answer"]
    assert lines[2].split()[:5] == ["m", "7.000", "1.000", "1", "2"]  # the numbers of results.json
    m = env.results("j")["models"]["m"]
    assert (m["mean"], m["alignment"]["score"], m["judged"]) == (7.0, 1.0, 2)


def test_integer_ids_in_predictions_match_string_item_ids(tmp_path, fake_llm, monkeypatch):
    release = tmp_path / "release"
    release.mkdir()
    write_jsonl(release / "items.jsonl", [{"id": "17", "question": "Name it.", "reference_answer": "An apple."}])
    preds = write_jsonl(tmp_path / "p.jsonl", [{"id": 17, "model": "m", "answer": "apple"}])
    (tmp_path / "models.toml").write_text(
        f'[models.judge]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "judge"\n'
        'api_key_env = "HARNESS_TEST_KEY"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("HARNESS_TEST_KEY", "x")
    fake_llm.script("judge", '{"rating": 9, "reason": "right"}')
    assert (
        main(
            [
                "judge",
                "--release",
                str(release),
                "--models",
                str(tmp_path / "models.toml"),
                "--no-cache",
                "--judge",
                "judge",
                "--predictions",
                preds,
                "--out",
                str(tmp_path / "j"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "j" / "results.json").read_text())["models"]["m"]["mean"] == 9
    human = write_jsonl(tmp_path / "human.jsonl", [{"id": 17, "model": "m", "score": 8}])
    assert (
        main(["agreement", "--judge", str(tmp_path / "j" / "samples.jsonl"), "--human", human, "--out", str(tmp_path / "a")]) == 0
    )


def test_mcq_qc_filter_from_the_command_line(env):
    env.server.script("textlm", "B")  # right on pass 1 of the fruit item only
    env.server.script("judge", "B")
    assert (
        env.run(
            "mcq",
            "--model",
            "textlm",
            "--model",
            "judge",
            "--text-only",
            "--qc-filter",
            "text_only",
            "--out",
            str(env.root / "q"),
        )
        == 0
    )
    result = env.results("q")
    assert result["qc"]["filter"] == "text_only" and result["qc"]["flagged"] == []
    # m1 and m2 both failed by the first model: with 2 models, no item can reach "more than half" any more
    assert result["models"]["judge"]["not_asked"] == 2 and len(env.server.requests("judge")) == 0
    # textlm: fruit right on pass 1, wrong on pass 2; colour wrong on pass 1. judge: left out of both.
    assert result["qc"]["calls"] == {
        "passes_asked": 3,
        "every_pass": (4 + 2) * 2,
        "after_a_wrong_pass": (4 - 2) + (2 - 1),
        "qc_stop_pairs": 2,
        "qc_stop_saved_at_least": 2,
        "qc_stop_saved_at_most": 4 + 2,
        "extractions": 0,
        "read": {"rules": 3, "extractor": 0, "unread": 0, "no_reply": 0},
    }
    report = (env.root / "q" / "report.md").read_text(encoding="utf-8")
    assert "Quality control: text_only filter" in report
    assert "The QC stop left out 2 (model, item) pair(s)" in report and "at least 2 and at most 6 passes" in report
    # The same run without the QC stop asks what the stop saved: within the bounds the report gives.
    assert env.run("mcq", "--model", "textlm", "--model", "judge", "--text-only", "--out", str(env.root / "all")) == 0
    without = env.results("all")["run"]["calls"]["passes_asked"]
    assert 2 <= without - 3 <= 6 and without == 6  # judge, answering B too, fails both items on pass 1


def knows_colour(body):
    """Solves the colour item on every pass (picks the option "red"), fails the fruit item."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else content[-1]["text"]
    shown = {line[0]: line[3:] for line in text.splitlines() if len(line) > 3 and line[1:3] == ". "}
    return next(letter for letter, option in shown.items() if option in ("red", "pear"))


def test_mcq_qc_threshold_from_the_command_line_moves_the_filters_line(env):
    env.server.script("textlm", knows_colour)  # solves m2 only
    env.server.script("judge", "A")  # m2 right on its first pass only: solves nothing
    base = ["mcq", "--model", "textlm", "--model", "judge", "--text-only", "--qc-filter", "text_only"]
    assert env.run(*base, "--out", str(env.root / "default")) == 0
    assert env.results("default")["qc"]["flagged"] == [] and env.results("default")["qc"]["threshold"] == 0.5

    # One model of two solving m2 is more than a share of 0.4 of them: flagged, and the judge is not asked about it.
    env.server.reset()
    assert env.run(*base, "--threshold", "0.4", "--out", str(env.root / "lower")) == 0
    qc = env.results("lower")["qc"]
    assert qc["flagged"] == ["m2"] and qc["threshold"] == 0.4
    asked = [json.dumps(body) for body in env.server.requests("judge")]
    assert asked and not any("What colour?" in body for body in asked)
    report = (env.root / "lower" / "report.md").read_text(encoding="utf-8")
    assert "more than a share of 0.4 of the models solve it" in report


@pytest.mark.parametrize("value", ["1", "1.5", "-0.1", "half", "nan", ""])
def test_mcq_refuses_a_threshold_that_is_not_a_share_of_the_models(env, capsys, value):
    with pytest.raises(SystemExit) as stopped:
        env.run("mcq", "--model", "textlm", "--qc-filter", "all_fail", "--threshold", value, "--out", str(env.root / "q"))
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert "--threshold" in error and "a share of the models from 0 up to (not including) 1" in error and repr(value) in error
    assert env.server.requests() == [] and not (env.root / "q").exists()  # nothing asked, nothing written


def test_mcq_threshold_without_a_qc_filter_is_refused(env, capsys):
    assert env.run("mcq", "--model", "textlm", "--threshold", "0.3", "--out", str(env.root / "q")) == 2
    assert "--threshold is the line of a QC filter: give it with --qc-filter" in capsys.readouterr().err
    assert env.server.requests() == [] and not (env.root / "q").exists()


def test_one_registry_feeds_the_cli_and_the_report_command():
    from benchforge_harness.cli import build_parser
    from benchforge_harness.commands import COMMANDS, report_builders

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # the registered sub-commands
    assert (
        set(commands)
        == set(COMMANDS)
        == {
            "infer",
            "mcq",
            "judge",
            "pairwise",
            "touchstone",
            "hallucination",
            "agreement",
            "report",
            "estimate",
            "verify",
            "submit",
        }
    )
    assert set(report_builders()) == {"mcq", "judge", "pairwise", "touchstone", "hallucination", "agreement"}
    # Every registered mode with a command has its module, imported by name where a tool sees it.
    from benchforge_harness.commands import SCORING
    from benchforge_harness.scoring import MODES

    assert [module.NAME for module in SCORING] == [mode.command for mode in MODES.values() if mode.command]
    assert all(callable(builder) for builder in report_builders().values())
