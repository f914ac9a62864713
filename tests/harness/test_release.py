"""The release item schema the harness reads, and its error messages."""

import json

import pytest

from benchforge_harness.io import InputError
from benchforge_harness.prompts import BUILTIN_DIR, Prompts, Template
from benchforge_harness.release import load_predictions, load_release


def write_release(root, rows, taxonomy=None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "items.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    if taxonomy is not None:
        (root / "taxonomy.json").write_text(json.dumps(taxonomy), encoding="utf-8")
    return root


SEED = {
    "id": "s1",
    "question": "How many apples?",
    "task": "Counting",
    "category": "Perception",
    "reference_answer": "Three apples.",
    "images": ["images/abc.jpg"],
    "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
}
REWRITE = {
    "id": "s1-r1",
    "seed_id": "s1",
    "question": "Count the apples.",
    "task": "Counting",
    "reference_answer": "Three apples.",
}
MCQ = {
    "id": "m1",
    "question": "Which animal?",
    "choices": {"A": "cat", "B": "dog"},
    "answer": "B",
    "category": "Perception",
    "subcategory": "Coarse Perception",
    "task": "image topic",
    "question_type": "multiple-choice",
}


def test_a_valid_release_loads_with_groups(tmp_path):
    release = load_release(write_release(tmp_path / "rel", [SEED, REWRITE, MCQ]))
    assert [i.id for i in release.items] == ["s1", "s1-r1", "m1"]
    assert release.item("s1-r1").group == "s1" and release.item("s1").group == "s1"
    assert release.item("s1").history[1] == {"role": "assistant", "content": "hello"}
    assert release.item("m1").is_mcq and not release.item("s1").is_mcq
    assert release.image_path("images/abc.jpg") == (tmp_path / "rel" / "images" / "abc.jpg").resolve()


@pytest.mark.parametrize(
    "row,message",
    [
        ({"id": "x", "question": "q", "refrence_answer": "typo"}, r"unknown field\(s\) refrence_answer"),
        ({"id": "x"}, "'question' must be a non-empty string"),
        ({"id": "x", "question": "q", "question_type": "essay"}, "question_type 'essay' is not one of"),
        ({"id": "x", "question": "q", "choices": {"A": "1", "C": "2"}}, "choices must use the letters A, B"),
        ({"id": "x", "question": "q", "choices": {"A": "1", "B": "2"}, "answer": "C"}, "answer 'C' is not one of the choices"),
        ({"id": "x", "question": "q", "history": [{"role": "system", "content": "x"}]}, r"history\[0\]"),
        ({"id": "x", "question": "q", "criteria": "one string"}, "'criteria' must be a list of strings"),
    ],
)
def test_bad_rows_are_named_by_file_and_line(tmp_path, row, message):
    root = write_release(tmp_path / "rel", [SEED, row])
    with pytest.raises(InputError, match=message) as error:
        load_release(root)
    assert "items.jsonl:2:" in str(error.value)


def test_duplicate_ids_and_dangling_seeds(tmp_path):
    with pytest.raises(InputError, match=r"items.jsonl:2: duplicate id 's1' \(first on line 1\)"):
        load_release(write_release(tmp_path / "a", [SEED, SEED]))
    with pytest.raises(InputError, match=r"items.jsonl:1: seed_id 's1' is not an item id"):
        load_release(write_release(tmp_path / "b", [REWRITE]))


def test_broken_json_line_is_named(tmp_path):
    root = tmp_path / "rel"
    root.mkdir()
    (root / "items.jsonl").write_text(json.dumps(SEED) + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"items.jsonl:3: not valid JSON"):
        load_release(root)


def test_missing_release_folder_is_explained(tmp_path):
    with pytest.raises(InputError, match="is .* a release folder"):
        load_release(tmp_path)


def test_image_paths_cannot_escape_the_release(tmp_path):
    release = load_release(write_release(tmp_path / "rel", [SEED]))
    with pytest.raises(InputError, match="outside the release folder"):
        release.image_path("../../etc/passwd")


def test_taxonomy_judge_rule_overrides(tmp_path):
    release = load_release(
        write_release(tmp_path / "rel", [SEED], {"tasks": [{"name": "Counting", "judge_rule": "Count carefully."}]})
    )
    assert release.judge_rule("Counting") == "Count carefully."
    assert release.judge_rule("OCR") is None


def test_predictions_later_lines_replace_earlier_ones(tmp_path):
    release = load_release(write_release(tmp_path / "rel", [SEED, REWRITE]))
    path = tmp_path / "p.jsonl"
    path.write_text(
        json.dumps({"id": "s1", "model": "m", "answer": None, "error": "timeout"})
        + "\n"
        + json.dumps({"id": "s1-r1", "model": "m", "answer": None, "error": "timeout"})
        + "\n"
        + json.dumps({"id": "s1", "model": "m", "answer": "three"})
        + "\n",
        encoding="utf-8",
    )
    predictions = load_predictions(path, release)
    assert predictions.model == "m"
    assert predictions.answers == {"s1": "three"}
    assert predictions.errors == {"s1-r1": "timeout"}


def test_predictions_for_unknown_items_or_mixed_models_are_refused(tmp_path):
    release = load_release(write_release(tmp_path / "rel", [SEED]))
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "nope", "model": "m", "answer": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p.jsonl:1: id 'nope' is not an item"):
        load_predictions(path, release)
    path.write_text(
        json.dumps({"id": "s1", "model": "m", "answer": "x"})
        + "\n"
        + json.dumps({"id": "s1", "model": "n", "answer": "x"})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match="exactly one 'model' name"):
        load_predictions(path, release)


# ------------------------------------------------------------------ prompt templates


def test_template_sections_and_single_pass_substitution(tmp_path):
    template = Template("t", "Q: {{question}}\n{{#hint}}Hint: {{hint}}\n{{/hint}}End", tmp_path / "t.txt")
    assert template.render(question="{{hint}} literally", hint="") == "Q: {{hint}} literally\nEnd\n"
    assert template.render(question="q", hint="look left") == "Q: q\nHint: look left\nEnd\n"
    with pytest.raises(InputError, match=r"uses \{\{hint\}\}"):
        template.render(question="q")


def test_every_shipped_template_renders(tmp_path):
    prompts = Prompts()
    for name in (
        "pointwise",
        "pairwise",
        "touchstone",
        "hallucination",
        "mcq_question",
        "mcq_extract",
        "retry_pointwise",
        "retry_pairwise",
        "retry_touchstone",
        "retry_hallucination",
        "retry_mcq_extract",
    ):
        template = prompts.get(name)
        text = template.render(**{field: "x" for field in template.fields})
        assert "{{" not in text, name
    assert "count" in prompts.task_rule("Counting").lower()
    assert prompts.task_rule("OCR") and prompts.task_rule("Incoherence") and prompts.task_rule("Chart") == ""


def test_prompt_folder_overrides_builtin(tmp_path):
    (tmp_path / "pointwise.txt").write_text("Just {{answer}}", encoding="utf-8")
    assert Prompts(tmp_path).get("pointwise").render(answer="hi") == "Just hi\n"
    assert Prompts(tmp_path).get("pairwise").path == BUILTIN_DIR / "pairwise.txt"  # not overridden
