"""The scoring library called the way the platform calls it: plain items, a client, a sink.

No release folder and no CLI here: items are dicts, images come as bytes or loaders, rows go to a
sink that is not a file.
"""

import inspect
import json
import threading

import pytest

from benchforge_harness import llm
from benchforge_harness.calls import MemorySink
from benchforge_harness.cli import build_parser
from benchforge_harness.scoring import (
    ALL_FAIL,
    CALL_ERROR,
    FAILED,
    JUDGED_TEXT_ONLY,
    MODES,
    SKIPPED,
    SOLVED,
    TEXT_ONLY,
    answer_questions,
    circular_eval,
    combine_votes,
    extract_choice,
    filter_flag,
    hallucination_judge,
    mode_for_filter,
    pairwise_judge,
    pointwise_judge,
    recorded_passes,
    touchstone_judge,
    verdict_decided,
)
from benchforge_harness.scoring.inputs import as_items
from benchforge_harness.votes import ANCHOR, MODEL, SPLIT, UNABLE
from tests.fakes.llm_server import Completion, Fault
from tests.harness.conftest import PNG_1PX

KEY_ENV = "SCORING_TEST_KEY"


class DatabaseSink:
    """What the platform implements: rows stored elsewhere, finished rows read back on resume."""

    def __init__(self):
        self.table: dict[str, str] = {}  # key -> JSON, as a text column would hold it
        self.writes = 0
        self.closed = False
        self.lock = threading.Lock()

    def done_rows(self):
        rows = {key: json.loads(value) for key, value in self.table.items()}
        return {key: row for key, row in rows.items() if row["status"] in ("ok", "unparsed")}

    def write(self, row):
        with self.lock:
            self.table[row["key"]] = json.dumps(row)
            self.writes += 1

    def close(self):
        self.closed = True


@pytest.fixture
def client(fake_llm, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")

    def endpoint(name, vision=False, concurrency=4):
        return llm.Endpoint(
            name=name,
            provider="openai",
            base_url=fake_llm.base_url("openai"),
            model=name,
            api_key_env=KEY_ENV,
            vision=vision,
            max_concurrency=concurrency,
            max_retries=0,
        )

    names = {"vlm": True, "a": False, "b": False, "c": False, "judge": False, "extractor": False}
    with llm.LLMClient({n: endpoint(n, v) for n, v in names.items()}) as c:
        yield c


def options(body) -> dict:
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else content[-1]["text"]
    return {line[0]: line[3:] for line in text.splitlines() if len(line) > 3 and line[1:3] == ". "}


def picks(text: str):
    """A fake model that always picks the option whose text is `text` (so it is right or wrong on every pass)."""
    return lambda body: {v: k for k, v in options(body).items()}.get(text, "A")


MCQ = [
    {"id": "q1", "question": "Which fruit?", "choices": {"A": "pear", "B": "apple", "C": "plum"}, "answer": "B"},
    {"id": "q2", "question": "What colour?", "choices": {"A": "red", "B": "blue"}, "answer": "A"},
    {"id": "q3", "question": "Which shape?", "choices": {"A": "round", "B": "square"}, "answer": "B"},
    {"id": "q4", "question": "No key here", "choices": {"A": "x", "B": "y"}},
    {"id": "open", "question": "Describe it.", "reference_answer": "A pear."},
]


def mcq_script(correct: set):
    """Right on the items in `correct`, wrong (the first shown option that is not the key) elsewhere."""
    truth = {"Which fruit?": "apple", "What colour?": "red", "Which shape?": "square"}

    def reply(body):
        text = json.dumps(body)
        question = next(q for q in truth if q in text)
        shown = options(body)
        if question in correct:
            return {v: k for k, v in shown.items()}[truth[question]]
        return next(letter for letter, option in shown.items() if option != truth[question])

    return reply


# ------------------------------------------------------------------ CircularEval and QC


def test_circular_eval_over_several_models_writes_to_any_sink(client, fake_llm):
    fake_llm.script("a", mcq_script({"Which fruit?", "What colour?"}))
    fake_llm.script("b", mcq_script({"Which fruit?"}))
    sink = DatabaseSink()
    result = circular_eval(client, MCQ, models=["a", "b"], sink=sink)
    assert list(result.outcomes["a"]) == ["q1", "q2", "q3"] and result.results["skipped_without_answer_key"] == 1
    assert result.outcomes == {"a": {"q1": SOLVED, "q2": SOLVED, "q3": FAILED}, "b": {"q1": SOLVED, "q2": FAILED, "q3": FAILED}}
    # early stop: a wrong first pass skips the other rotations of that model on that item
    assert len(fake_llm.requests("b")) == 3 + 1 + 1
    assert result.results["calls"] == {
        "passes_asked": (3 + 2 + 1) + (3 + 1 + 1),
        "every_pass": 2 * (3 + 2 + 2),
        "after_a_wrong_pass": (0 + 0 + 1) + (0 + 1 + 1),  # CircularEval's own stop; no QC filter here
        "qc_stop_pairs": 0,
        "qc_stop_saved_at_least": 0,
        "qc_stop_saved_at_most": 0,
        "extractions": 0,
        "read": {"rules": 11, "extractor": 0, "unread": 0, "no_reply": 0},
    }
    assert sink.writes == 11 and all(json.loads(v)["step"] == "answer" for v in sink.table.values())
    summary = result.results
    assert summary["models"]["a"]["circular"] == pytest.approx(2 / 3) and summary["models"]["b"]["vanilla"] == pytest.approx(
        1 / 3
    )

    fake_llm.reset()  # resumed from the sink's rows: nothing is asked again
    again = circular_eval(client, MCQ, models=["a", "b"], sink=sink)
    assert fake_llm.requests() == [] and again.outcomes == result.outcomes


def test_text_only_filter_stops_asking_once_the_verdict_is_settled(client, fake_llm):
    # Three models: q1 solved by a and b (more than half: flagged, c is not asked);
    # q2 failed by a and b (can no longer reach more than half: not flagged, c is not asked);
    # q3 solved by a, failed by b: undecided, so c is asked.
    fake_llm.script("a", mcq_script({"Which fruit?", "Which shape?"}))
    fake_llm.script("b", mcq_script({"Which fruit?"}))
    fake_llm.script("c", mcq_script({"Which shape?"}))
    result = circular_eval(client, MCQ, models=["a", "b", "c"], sink=MemorySink(), text_only=True, qc_filter=TEXT_ONLY)
    assert result.outcomes["c"] == {"q1": SKIPPED, "q2": SKIPPED, "q3": SOLVED}
    assert len(fake_llm.requests("c")) == 2 and all("Which shape?" in json.dumps(r) for r in fake_llm.requests("c"))
    flags = result.flags
    assert {i: f["flagged"] for i, f in flags.items()} == {"q1": True, "q2": False, "q3": True}
    assert all(f["decided"] for f in flags.values())
    assert flags["q1"]["not_asked"] == ["c"] and flags["q3"]["solved_by"] == ["a", "c"]
    counts = result.results["calls"]
    # a: 3 + 1 + 2 passes; b: 3 + 1 + 1; c: only q3, 2 passes; c left out of q1 (3 passes) and q2 (2)
    assert counts["passes_asked"] == 6 + 5 + 2 and counts["every_pass"] == 3 * 7
    assert counts["after_a_wrong_pass"] == (0 + 1 + 0) + (0 + 1 + 1) + 0
    assert (counts["qc_stop_pairs"], counts["qc_stop_saved_at_least"], counts["qc_stop_saved_at_most"]) == (2, 2, 3 + 2)
    assert counts["every_pass"] == counts["passes_asked"] + counts["after_a_wrong_pass"] + counts["qc_stop_saved_at_most"]

    # What the QC stop saved is what the same run without it asks more: within the bounds above
    # (c, asked q1 and q2, fails both on the first pass: 2 passes, the least the bounds allow).
    without = circular_eval(
        client, MCQ, models=["a", "b", "c"], sink=MemorySink(), text_only=True, qc_filter=TEXT_ONLY, stop_when_decided=False
    )
    saved = without.results["calls"]["passes_asked"] - counts["passes_asked"]
    assert saved == 2 and counts["qc_stop_saved_at_least"] <= saved <= counts["qc_stop_saved_at_most"]
    assert without.results["calls"]["qc_stop_pairs"] == 0
    assert {i: f["flagged"] for i, f in without.flags.items()} == {i: f["flagged"] for i, f in flags.items()}


def test_all_fail_filter_stops_once_one_model_solves_the_item(client, fake_llm):
    fake_llm.script("a", mcq_script({"Which fruit?"}))
    fake_llm.script("b", mcq_script(set()))
    result = circular_eval(client, MCQ, models=["a", "b"], sink=MemorySink(), qc_filter=ALL_FAIL)
    assert result.outcomes["b"] == {"q1": SKIPPED, "q2": FAILED, "q3": FAILED}
    assert {i: f["flagged"] for i, f in result.flags.items()} == {"q1": False, "q2": True, "q3": True}
    assert result.results["qc"]["flagged"] == ["q2", "q3"]


def test_filter_rules():
    assert filter_flag(TEXT_ONLY, 2, 3) and not filter_flag(TEXT_ONLY, 2, 4)  # more than half, strictly
    assert filter_flag(ALL_FAIL, 0, 5) and not filter_flag(ALL_FAIL, 1, 5)
    assert verdict_decided(TEXT_ONLY, 3, 0, 5) and verdict_decided(TEXT_ONLY, 0, 3, 5) and not verdict_decided(TEXT_ONLY, 2, 2, 5)
    assert verdict_decided(TEXT_ONLY, 0, 2, 4) and not verdict_decided(TEXT_ONLY, 1, 1, 4)
    assert verdict_decided(ALL_FAIL, 1, 0, 5) and not verdict_decided(ALL_FAIL, 0, 4, 5) and verdict_decided(ALL_FAIL, 0, 5, 5)
    from benchforge_harness.io import InputError

    with pytest.raises(InputError, match="unknown QC filter 'most'"):
        filter_flag("most", 1, 2)


def test_the_filter_rules_at_every_count_and_a_moved_threshold():
    # The published rules (METHODS section 6) at the default threshold, for every count of models.
    for models in range(1, 7):
        for solved in range(models + 1):
            for failed in range(models - solved + 1):
                still_open = models - solved - failed
                assert filter_flag(TEXT_ONLY, solved, models) == (solved > models / 2)
                assert filter_flag(JUDGED_TEXT_ONLY, solved, models) == (solved > models / 2)
                assert filter_flag(ALL_FAIL, solved, models) == (solved == 0)
                assert verdict_decided(TEXT_ONLY, solved, failed, models) == (
                    solved > models / 2 or solved + still_open <= models / 2
                )
                assert verdict_decided(ALL_FAIL, solved, failed, models) == (solved >= 1 or still_open == 0)
    # A run may move the line: all-fail at 0.4 of 5 models flags items at most 2 models solve.
    assert filter_flag(ALL_FAIL, 2, 5, threshold=0.4) and not filter_flag(ALL_FAIL, 3, 5, threshold=0.4)
    assert verdict_decided(ALL_FAIL, 3, 0, 5, threshold=0.4) and not verdict_decided(ALL_FAIL, 2, 2, 5, threshold=0.4)
    assert verdict_decided(ALL_FAIL, 2, 3, 5, threshold=0.4)  # nobody left to push it over the line
    # text-only at 0.8 of 4 models: flagged only when all 4 solve it (more than 3.2).
    assert filter_flag(TEXT_ONLY, 4, 4, threshold=0.8) and not filter_flag(TEXT_ONLY, 3, 4, threshold=0.8)
    assert verdict_decided(TEXT_ONLY, 2, 1, 4, threshold=0.8) and not verdict_decided(TEXT_ONLY, 3, 0, 4, threshold=0.8)
    from benchforge_harness.io import InputError

    with pytest.raises(InputError, match="share of the models"):
        filter_flag(TEXT_ONLY, 1, 2, threshold=1.5)


def test_thresholds_are_compared_exactly_as_written_never_in_floating_point():
    # 29 of 50 is exactly 0.58, not more than it; 63 of 90 exactly 0.7 (0.58 * 50 is 28.999... in floats).
    assert not filter_flag(TEXT_ONLY, 29, 50, 0.58) and filter_flag(TEXT_ONLY, 30, 50, 0.58)
    assert not filter_flag(TEXT_ONLY, 63, 90, 0.7) and filter_flag(ALL_FAIL, 63, 90, 0.7)
    # Every two-decimal threshold against every count of up to 100 models, as whole-number comparisons:
    # more than t/100 of n  <=>  100 * solved > t * n.
    from fractions import Fraction

    for t in range(100):
        threshold = t / 100
        for models in range(1, 101):
            on_the_line = t * models // 100  # the counts either side of the line are the ones that can go wrong
            for solved in (on_the_line, on_the_line + 1):
                above = 100 * solved > t * models
                assert filter_flag(TEXT_ONLY, solved, models, threshold) == above, (solved, models, threshold)
                assert filter_flag(ALL_FAIL, solved, models, threshold) == (not above), (solved, models, threshold)
                assert verdict_decided(TEXT_ONLY, solved, models - solved, models, threshold)
                assert verdict_decided(TEXT_ONLY, solved, 0, models, threshold) == above
    # Other ways of writing a share are exact too.
    assert not filter_flag(TEXT_ONLY, 1, 3, Fraction(1, 3)) and filter_flag(TEXT_ONLY, 2, 3, Fraction(1, 3))
    assert not filter_flag(TEXT_ONLY, 29, 50, "0.58")


def test_a_moved_threshold_changes_what_circular_eval_flags_and_when_it_stops(client, fake_llm):
    # a solves q1 and q2, b solves q1. All-fail at 0.5 of 2 models flags items at most one model
    # solves: a's solving an item settles nothing (b is asked q1 and q2, and q2 is flagged), while
    # a's failing q3 settles it (at most b would solve it), so b is not asked q3.
    # At the published line (none solves it) a's solving q1 and q2 settles them: b is not asked.
    fake_llm.script("a", mcq_script({"Which fruit?", "What colour?"}))
    fake_llm.script("b", mcq_script({"Which fruit?"}))
    result = circular_eval(client, MCQ, models=["a", "b"], sink=MemorySink(), qc_filter=ALL_FAIL, threshold=0.5)
    assert {i: f["flagged"] for i, f in result.flags.items()} == {"q1": False, "q2": True, "q3": True}
    assert result.outcomes["b"] == {"q1": SOLVED, "q2": FAILED, "q3": SKIPPED}
    published = circular_eval(client, MCQ, models=["a", "b"], sink=MemorySink(), qc_filter=ALL_FAIL)
    assert {i: f["flagged"] for i, f in published.flags.items()} == {"q1": False, "q2": False, "q3": True}
    assert published.outcomes["b"]["q1"] == SKIPPED and published.outcomes["b"]["q2"] == SKIPPED


def test_text_only_filter_refuses_to_send_images(client):
    from benchforge_harness.io import InputError

    with pytest.raises(InputError, match="text_only=True"):
        circular_eval(client, MCQ, models=["a"], sink=MemorySink(), qc_filter=TEXT_ONLY)


def test_a_failed_call_leaves_the_item_undecided_and_is_asked_again(client, fake_llm):
    fake_llm.script(
        "a",
        lambda body: (
            Fault.bad_request("too long")
            if "What colour?" in json.dumps(body)
            else mcq_script({"Which fruit?", "Which shape?"})(body)
        ),
    )
    sink = MemorySink()
    result = circular_eval(client, MCQ, models=["a"], sink=sink, qc_filter=ALL_FAIL)
    assert result.outcomes["a"]["q2"] == CALL_ERROR
    assert result.flags["q2"]["errors"] == ["a"] and not result.flags["q2"]["decided"]
    assert not result.flags["q2"]["flagged"]  # an outage is never the reason an item is flagged
    fake_llm.script("a", mcq_script({"What colour?"}))
    fake_llm.reset()
    again = circular_eval(client, MCQ, models=["a"], sink=sink, qc_filter=ALL_FAIL)
    assert again.outcomes["a"]["q2"] == SOLVED
    assert all("What colour?" in json.dumps(r) for r in fake_llm.requests("a"))  # only the failed item


LETTERED = [
    {"id": f"i{i}", "question": f"Question {i}?", "choices": {"A": f"x{i}", "B": f"y{i}", "C": f"z{i}"}, "answer": "B"}
    for i in range(12)
]
FAILING = {0: f"y{0}", 4: f"y{4}", 6: f"x{6}", 1: f"y{1}", 9: f"z{9}"}  # item -> shown first option of the failing pass


def knows(known, failing=None):
    """Right on the items in `known`, wrong elsewhere; a 500 (for good: no retries) on the passes in `failing`."""

    def reply(body):
        n = int(json.dumps(body).split("Question ")[1].split("?")[0])
        shown = options(body)
        if failing and failing.get(n) == shown["A"]:
            return Fault.server_error(500)
        right = next(letter for letter, text in shown.items() if text == f"y{n}")
        return right if n in known else next(letter for letter in shown if letter != right)

    return reply


def test_calls_that_fail_for_good_leave_passes_undecided_not_wrong(client, fake_llm):
    known_a, known_b = {0, 2, 4, 6, 8, 10}, {0, 3, 6, 9}
    fake_llm.script("a", knows(known_a))
    fake_llm.script("b", knows(known_b))
    clean = circular_eval(client, LETTERED, models=["a", "b"], sink=MemorySink(), qc_filter=ALL_FAIL)
    clean_summary = clean.results

    fake_llm.script("a", knows(known_a, FAILING))
    sink = MemorySink()
    failing = circular_eval(client, LETTERED, models=["a", "b"], sink=sink, qc_filter=ALL_FAIL)
    summary = failing.results

    # Items 0 and 4 (known, their second pass fails), 6 (its first pass fails); 1 and 9 are not known,
    # so a wrong first pass decides them before their failing rotation is asked: only 0, 4 and 6
    # are undecided for model a.
    a = summary["models"]["a"]
    assert {r["id"] for r in summary["item_rows"] if r["model"] == "a" and r["circular"] is None} == {"i0", "i4", "i6"}
    assert a["undecided"] == 3 and a["n"] == 12 - 3 and a["failed_calls"] == 3
    clean_rows = {r["id"]: r for r in clean_summary["item_rows"] if r["model"] == "a"}
    remaining = [clean_rows[f"i{i}"] for i in range(12) if i not in (0, 4, 6)]
    assert a["circular"] == pytest.approx(sum(r["circular"] for r in remaining) / len(remaining))
    first_pass_ok = [clean_rows[f"i{i}"] for i in range(12) if i != 6]  # only item 6 failed on its first pass
    assert a["vanilla"] == pytest.approx(sum(r["vanilla"] for r in first_pass_ok) / len(first_pass_ok))

    # QC: every decided item has the clean run's flag; the outage flags nothing and clears nothing.
    flags, clean_flags = failing.flags, clean.flags
    undecided = {i for i, f in flags.items() if not f["decided"]}
    assert undecided == {"i4"}  # a's call failed and b did not solve it (b solves 0 and 6)
    assert not flags["i4"]["flagged"] and summary["qc"]["undecided"] == ["i4"]
    assert {i: f["flagged"] for i, f in flags.items() if i not in undecided} == {
        i: f["flagged"] for i, f in clean_flags.items() if i not in undecided
    }
    assert summary["qc"]["flagged"] == [i for i in clean_summary["qc"]["flagged"] if i not in undecided]

    # Resumable: the failed calls are asked again, and then the run equals the clean one.
    fake_llm.script("a", knows(known_a))
    fake_llm.reset()
    resumed = circular_eval(client, LETTERED, models=["a", "b"], sink=sink, qc_filter=ALL_FAIL).results
    # Items 0 and 4 from their failed second pass (2 passes each), item 6 from its failed first (3).
    assert len(fake_llm.requests("a")) == 2 + 2 + 3
    for model in ("a", "b"):
        assert resumed["models"][model]["circular"] == clean_summary["models"][model]["circular"]
        assert resumed["models"][model]["undecided"] == 0
    assert resumed["qc"]["flagged"] == clean_summary["qc"]["flagged"]


def test_images_as_bytes_or_a_loader_reach_a_vision_model(client, fake_llm):
    fake_llm.script("vlm", "B")
    loaded = []

    def load(name):  # the platform reads from its storage (here: a dict)
        loaded.append(name)
        return {"images/x.png": PNG_1PX}[name]

    items = [{**MCQ[0], "images": ["images/x.png"]}, {**MCQ[2], "images": [PNG_1PX]}]
    result = circular_eval(client, items, models=["vlm"], sink=MemorySink(), image_loader=load)
    assert result.outcomes["vlm"]["q1"] == FAILED  # "B" is right on pass 1 only
    for body in fake_llm.requests("vlm"):
        first = body["messages"][0]["content"][0]
        assert first["type"] == "image_url" and first["image_url"]["url"].startswith("data:image/png;base64,")
    assert loaded == ["images/x.png"] * 2  # read when each request is built, never before


# ------------------------------------------------------------------ choice extraction


def test_a_finished_runs_passes_are_read_again_from_its_rows_as_the_run_read_them(client, fake_llm):
    """What a store kept of a run (the platform keeps the sink's rows) gives back every pass's
    verdict: the rules' letter, the extractor's, and nothing for passes never asked."""

    def reply(body):
        n = int(json.dumps(body).split("Question ")[1].split("?")[0])
        right = next(letter for letter, text in options(body).items() if text == f"y{n}")
        return right if n % 2 else "hard to say, perhaps the middle sort of thing"  # even items: the extractor

    fake_llm.script("a", reply)
    fake_llm.script("extractor", lambda body: next(k for k, v in options(body).items() if v.startswith("y")))
    sink = MemorySink()
    result = circular_eval(client, LETTERED[:4], models=["a"], sink=sink, extractor="extractor")
    rows = dict(sink.rows)  # what a store kept
    again = recorded_passes(LETTERED[:4], "a", rows)
    assert again == sorted(result.rows.values(), key=lambda v: (v["id"], v["pass"]))
    assert [v["method"] for v in again if v["id"] == "i0"] == ["extractor"] * 3
    assert [v["method"] for v in again if v["id"] == "i1"] == ["heuristic"] * 3
    assert recorded_passes(LETTERED[:4], "b", rows) == []  # a model the run never asked


def test_extract_choice_rules_first_then_the_extractor(client, fake_llm):
    shown = {"A": "pear", "B": "apple"}
    assert (extract_choice(client, "extractor", "Which?", shown, "The answer is B.").letter, fake_llm.requests()) == ("B", [])
    refusal = extract_choice(client, "extractor", "Which?", shown, "I cannot tell from this.")
    assert (refusal.letter, refusal.method) == ("Z", "heuristic_none")
    fake_llm.script("extractor", ["hmm, maybe the fruit", "B"])
    extracted = extract_choice(client, "extractor", "Which?", shown, "The crunchy one from the orchard.")
    assert (extracted.letter, extracted.method, extracted.extractor_outputs) == ("B", "extractor", ("hmm, maybe the fruit", "B"))
    assert extract_choice(None, None, "Which?", shown, "The crunchy one.").method == "unresolved"
    fake_llm.script("extractor", Fault.bad_request("nope"))
    failed = extract_choice(client, "extractor", "Which?", shown, "The crunchy one, surely.")
    assert failed.method == "extractor_error" and "nope" in failed.error


# ------------------------------------------------------------------ judges


ITEMS = [
    {
        "id": 1,
        "question": "How many apples?",
        "task": "Counting",
        "category": "Perception",
        "reference_answer": "Three.",
        "description": "Three red apples.",
        "criteria": ["counts right"],
    },
    {
        "id": "2",
        "seed_id": "1",
        "question": "Count the apples.",
        "task": "Counting",
        "category": "Perception",
        "reference_answer": "Three.",
        "description": "Three red apples.",
    },
]


def test_pointwise_judge_with_dict_items_and_integer_ids(client, fake_llm):
    fake_llm.script(
        "judge", lambda body: '{"rating": 8, "reason": "ok"}' if "three" in json.dumps(body) else '{"rating": 4, "reason": "x"}'
    )
    sink = DatabaseSink()
    scored = pointwise_judge(
        client,
        ITEMS,
        judge="judge",
        answers={"m": {1: "three", "2": "four"}},
        sink=sink,
        rules={"Counting": "RELEASE RULE: counts must match."},
    )
    m = scored.results["models"]["m"]
    assert m["judged"] == 2 and m["mean"] == 6 and m["alignment"]["groups"] == 1
    assert set(scored.rows) == {"m\t1", "m\t2"} and sink.writes == 2 and sink.closed
    assert all("RELEASE RULE" in r["messages"][0]["content"] for r in fake_llm.requests("judge"))


def test_pairwise_judge_both_orders_and_the_vote_combination(client, fake_llm):
    fake_llm.script(
        "judge",
        lambda body: (
            "reasons\nAnswer1"
            if "[Answer1]\nmodel" in body["messages"][0]["content"]
            else "reasons\nAnswer2"
            if "[Answer2]\nmodel" in body["messages"][0]["content"]
            else "Answer1"
        ),
    )
    scored = pairwise_judge(
        client,
        ITEMS,
        judge="judge",
        anchor="anchor",
        anchor_answers={"1": "anchor says", "2": "anchor says"},
        answers={"m": {"1": "model says", "2": "model says"}},
        sink=MemorySink(),
        bootstrap=10,
    )
    prompts = [r["messages"][0]["content"] for r in fake_llm.requests("judge")]
    assert len(prompts) == 4 and sum("[Answer1]\nanchor" in p for p in prompts) == 2  # order 1: anchor first
    assert scored.results["models"]["m"]["win"] == 2 and scored.results["models"]["m"]["win_rate"] == 1.0


def test_combine_votes_follows_the_published_rules():
    assert combine_votes("Answer2", "Answer1") == MODEL  # the model's answer won in both orders
    assert combine_votes("Answer1", "Answer2") == ANCHOR
    assert combine_votes("Answer1", "Answer1") == SPLIT  # position wins each time: one win each -> tie
    assert combine_votes("Answer2", "unable to decide: situation one") == MODEL
    assert combine_votes("unable to decide: situation one", "unable to decide: situation two") == UNABLE


def test_touchstone_and_hallucination_judges(client, fake_llm):
    fake_llm.script(
        "judge", lambda body: "7 5" if "Assistant 1" in body["messages"][0]["content"] else '{"score": 2, "reason": "x"}'
    )
    touch = touchstone_judge(client, ITEMS, judge="judge", answers={"m": {"1": "three apples"}}, sink=MemorySink())
    assert touch.results["models"]["m"]["score"] == 6 and touch.results["models"]["m"]["no_answer"] == 1
    hall = hallucination_judge(
        client, ITEMS, judge="judge", answers={"m": {"1": "three apples", "2": "a dragon"}}, sink=MemorySink()
    )
    assert hall.results["models"]["m"]["mean"] == 2 and hall.results["models"]["m"]["scored"] == 2


def test_answer_questions_records_empty_replies_as_failures(client, fake_llm):
    fake_llm.script("a", lambda body: Completion(None, "content_filter") if "Count" in json.dumps(body) else "three")
    answers, stats = answer_questions(client, "a", ITEMS, sink=MemorySink())
    assert answers == {"1": "three"}
    assert stats.rows["2"]["status"] == "error" and "content filter" in stats.rows["2"]["error"]
    assert stats.cached == 0 and stats.errors == 1


# ------------------------------------------------------------------ the registry and the judged filter

OPEN = [{"id": f"o{i}", "question": f"Open question {i}?", "reference_answer": f"Answer {i}."} for i in range(3)]


def answering(grades: dict[str, int]):
    """A model whose answer to each open question names the grade it should get ("grade 8.")."""
    return lambda body: f"grade {grades['o' + json.dumps(body).split('Open question ')[1][0]]}."


def grader(body):
    """A judge that gives each answer the grade its text names."""
    answer = body["messages"][0]["content"].split("[Assistant's answer]")[1]
    return json.dumps({"rating": int(answer.split("grade ")[1].split(".")[0]), "reason": "as told"})


def test_judged_text_only_grades_answers_and_stops_once_the_verdict_is_settled(client, fake_llm):
    # Three models: flagged when more than 1.5 of them reach min_score 7. After a and b, o0 is solved
    # twice (flagged, settled) and o1 failed twice (two solvers are out of reach: settled), so c is
    # asked only o2 (solved by a, failed by b).
    grades = {"a": {"o0": 9, "o1": 3, "o2": 8}, "b": {"o0": 9, "o1": 2, "o2": 2}, "c": {"o0": 1, "o1": 1, "o2": 7}}
    for model, by_item in grades.items():
        fake_llm.script(model, answering(by_item))
    fake_llm.script("judge", grader)
    sink = MemorySink()
    scored = MODES["judged_text_only"].run(client, OPEN, sink=sink, models=["a", "b", "c"], judge="judge", min_score=7)
    assert scored.outcomes == {
        "a": {"o0": SOLVED, "o1": FAILED, "o2": SOLVED},
        "b": {"o0": SOLVED, "o1": FAILED, "o2": FAILED},
        "c": {"o0": SKIPPED, "o1": SKIPPED, "o2": SOLVED},
    }
    assert {i: f["flagged"] for i, f in scored.flags.items()} == {"o0": True, "o1": False, "o2": True}
    assert len(fake_llm.requests("c")) == 1 and len(fake_llm.requests("judge")) == 3 + 3 + 1
    assert sorted(scored.unasked) == ["answer\tc\to0", "answer\tc\to1", "judge\tc\to0", "judge\tc\to1"]
    assert scored.rows["c\to2"]["score"] == 7 and scored.rows["b\to2"]["method"] == "judged"
    assert {k.split("\t")[0] for k in sink.rows} == {"answer", "judge"}

    fake_llm.reset()  # resumed from the sink: nothing is asked again, the verdicts are the same
    again = MODES["judged_text_only"].run(client, OPEN, sink=sink, models=["a", "b", "c"], judge="judge", min_score=7)
    assert fake_llm.requests() == [] and again.flags == scored.flags


def test_every_mode_has_one_signature_and_a_headline_and_groups_the_leaderboard_reads():
    for mode in MODES.values():
        parameters = list(inspect.signature(mode.run).parameters.values())
        assert [p.name for p in parameters[:2]] == ["client", "items"], mode.name
        assert parameters[2].kind == inspect.Parameter.KEYWORD_ONLY and parameters[2].name == "sink", mode.name
    assert MODES["mcq"].headline_text({"circular": 0.5}) == "50.0%"
    assert MODES["pairwise"].headline_text({"win_rate": 0.25}) == "win 25.0%"
    assert MODES["pointwise"].headline_text({"mean": 7}) == "7.00 / 10" and MODES["pointwise"].headline_text({}) == "—"
    assert MODES["pointwise"].per_group({"by_task": {"Counting": {"mean": 8, "n": 3}}}) == [("Counting", 0.8, 3)]
    assert MODES["pointwise"].accepts({"judge": "j", "models": ["m"], "answers": {}}) == {"judge": "j", "answers": {}}
    assert mode_for_filter(ALL_FAIL) is MODES["mcq"] and mode_for_filter(JUDGED_TEXT_ONLY) is MODES["judged_text_only"]


@pytest.mark.parametrize(
    "name, reply, extra",
    [
        ("pointwise", '{"rating": 8, "reason": "ok"}', {}),
        ("pairwise", "Answer1", {"anchor": "anchor", "anchor_answers": {"1": "three", "2": "three"}, "bootstrap": 10}),
        ("touchstone", "7 5", {}),
        ("hallucination", '{"score": 2, "reason": "x"}', {}),
    ],
)
def test_a_judge_mode_asks_its_judge_as_often_per_item_as_it_registers(client, fake_llm, name, reply, extra):
    """The registry's judge_calls is what the leaderboard's estimate and job total count on."""
    mode = MODES[name]
    fake_llm.script("judge", lambda body: reply)
    mode.run(client, ITEMS, sink=MemorySink(), judge="judge", answers={"m": {"1": "three", "2": "four"}}, **extra)
    scored = [item for item in as_items(ITEMS) if mode.scores(item)]
    assert len(scored) == 2 and len(fake_llm.requests("judge")) == mode.judge_calls * len(scored)


def test_circular_eval_asks_each_item_at_most_the_passes_it_registers(client, fake_llm):
    mode = MODES["mcq"]
    fake_llm.script("a", mcq_script({"Which fruit?", "What colour?"}))
    mode.run(client, MCQ, sink=MemorySink(), models=["a"], all_passes=True)
    scored = [item for item in as_items(MCQ) if mode.scores(item)]
    assert [item.id for item in scored] == ["q1", "q2", "q3"]  # no key, or an open question: not scored
    assert len(fake_llm.requests("a")) == sum(mode.passes(item) for item in scored) == 7


def test_a_mode_spells_a_command_line_its_command_parses():
    parser = build_parser()
    values = {"release": "bench-1.0", "models": "models.toml", "judge": "j", "model": "m", "anchor": "a.jsonl"}
    values |= {"predictions": "p.jsonl", "out": "results/m", "extractor": "x"}
    spelled = {name: mode.command_line(values) for name, mode in MODES.items() if mode.cli}
    assert {"mcq", "pointwise", "pairwise"} <= set(spelled)  # every leaderboard method's
    for name, line in spelled.items():
        words = line.split()
        assert words[:3] == ["python", "-m", "benchforge_harness"]
        args = parser.parse_args(words[3:])  # an option the command does not know ends the test here
        assert args.command == MODES[name].command and args.out == "results/m" and args.release == "bench-1.0"
    assert spelled["mcq"].endswith("--model m --extractor x --out results/m")
    assert MODES["mcq"].command_line({**values, "extractor": ""}).endswith("--model m --out results/m")
    assert MODES["pairwise"].command_line({**values, "anchor": None}) is None  # a required option without a value
    assert MODES["judged_text_only"].command_line(values) is None  # no command of its own


def test_the_judged_filter_asks_what_it_registers_and_the_estimate_counts_it(client, fake_llm):
    """Without stopping, the judged filter asks each model `passes` answers and the judge
    `judge_calls` grades per item: what the one estimate (QC's and the leaderboard's) counts."""
    from benchforge_harness.scoring import Estimate, calls_per_item

    mode = MODES["judged_text_only"]
    for model in ("a", "b"):
        fake_llm.script(model, answering({"o0": 9, "o1": 3, "o2": 8}))
    fake_llm.script("judge", grader)
    mode.run(client, OPEN, sink=MemorySink(), models=["a", "b"], judge="judge", stop_when_decided=False)
    plan = Estimate()
    for model in ("a", "b"):
        plan.add_mode(mode, OPEN, model=model, judge="judge")
    lines = plan.priced(lambda name: client.endpoints[name])["lines"]
    for name in ("a", "b", "judge"):
        assert lines[name]["calls"] == len(fake_llm.requests(name)), name
    assert len(fake_llm.requests()) == 2 * sum(calls_per_item(mode, item) for item in as_items(OPEN)) == 12


def test_the_estimate_of_a_multiple_choice_pass_shows_every_option():
    from benchforge_harness.scoring import Estimate

    def tokens(last_option: str) -> int:
        choices = {letter: f"option {letter}" for letter in "ABCDEF"} | {"F": last_option}
        plan = Estimate()
        plan.add_mode(MODES["mcq"], [{"id": "q", "question": "Which?", "choices": choices, "answer": "A"}], model="m")
        [line] = plan.lines.values()
        assert line["calls"] == 6  # one pass per option
        return line["prompt_tokens"]

    assert tokens("x" * 400) - tokens("x") >= 6 * 99  # the sixth option is in all six passes


def test_pairwise_elo_is_rated_and_reported_with_the_settings_it_is_given(client, fake_llm):
    from benchforge_harness.metrics import EloSettings

    fake_llm.script("judge", lambda body: "Answer1")
    run = {
        "judge": "judge",
        "anchor": "anchor",
        "anchor_answers": {"1": "anchor says", "2": "anchor says"},
        "answers": {"m": {"1": "model says", "2": "model says"}},
        "bootstrap": 10,
    }
    usual = pairwise_judge(client, ITEMS, sink=MemorySink(), **run).results["elo"]
    steep = pairwise_judge(client, ITEMS, sink=MemorySink(), elo=EloSettings(k=32, initial=1500), **run).results["elo"]
    assert usual["settings"] | {"k": 4, "initial": 1000} == usual["settings"]
    assert steep["settings"]["k"] == 32 and steep["settings"]["initial"] == 1500
    assert steep["online"] != usual["online"] and abs(sum(steep["online"].values()) / 2 - 1500) < 1e-6


def test_the_modes_people_check_say_what_they_rate_and_read_the_judges_verdicts_from_their_rows():
    """The human-evaluation stage reads these (never a mode's name): what a rater gives, the alpha
    level, and the judge's verdict per item from the rows the mode's run wrote."""
    from benchforge_harness.scoring import MODES

    checked = {name: mode.human for name, mode in MODES.items() if mode.human is not None}
    assert {name: (c.study, c.rates, c.level) for name, c in checked.items()} == {
        "pointwise": ("pointwise", "score", "interval"),
        "pairwise": ("pairwise", "vote", "nominal"),
        "mcq": ("extraction", "choice", "nominal"),
    }
    assert checked["mcq"].verdicts is None  # people read the passes CircularEval asked itself
    assert MODES["pairwise"].takes("anchor") and not MODES["pointwise"].takes("anchor")

    graded = {"m\t1": {"status": "ok", "rating": 7}, "m\t2": {"status": "unparsed"}, "other\t1": {"status": "ok", "rating": 2}}
    assert checked["pointwise"].verdicts(graded, "m") == {"1": {"rating": 7}}

    voted = {
        "m\t1\t1": {"status": "ok", "vote": "Answer2"},  # order 1: the model's answer is answer 2
        "m\t1\t2": {"status": "ok", "vote": "Answer2"},  # order 2: the anchor's is
        "m\t2\t1": {"status": "ok", "vote": "Answer2"},  # only one order read: no verdict
        "m\t2\t2": {"status": "error"},
    }
    assert checked["pairwise"].verdicts(voted, "m") == {"1": {"outcome": "split", "votes": ["Answer2", "Answer2"]}}
