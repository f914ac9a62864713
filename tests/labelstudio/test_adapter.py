"""The Label Studio mapping without a server: config, item -> task, annotation -> changes."""

import base64
from xml.etree import ElementTree

import pytest

from labelstudio import adapter as ls

from .samples import MCQ, MULTI_TURN, SINGLE, TWO_IMAGES, png_bytes


def image_src(image):
    return f"img:{image['id']}"


def names(config: str) -> dict[str, str]:
    return {el.get("name"): el.tag for el in ElementTree.fromstring(config).iter() if el.get("name")}


def test_config_has_every_field_and_only_the_optional_views_asked_for():
    plain = names(ls.labeling_config(with_history=False, with_options=False))
    assert plain["images"] == "Image" and plain["question"] == "Text"
    assert plain["reference_answer"] == "TextArea" and plain["question_type"] == "Choices" and plain["verdict"] == "Choices"
    for n in (1, 2, 3):
        assert plain[f"criterion_{n}_kind"] == "Choices" and plain[f"criterion_{n}_text"] == "TextArea"
    assert "criterion_4_text" not in plain
    assert "history" not in plain and "options" not in plain

    full = names(ls.labeling_config(**ls.config_sections([SINGLE, MCQ, MULTI_TURN])))
    assert full["history"] == "Text" and full["options"] == "Text"


def test_config_choices_are_the_shown_labels_and_the_verdict_is_required():
    root = ElementTree.fromstring(ls.labeling_config(with_history=False, with_options=False))
    verdict = next(el for el in root.iter("Choices") if el.get("name") == "verdict")
    assert verdict.get("required") == "true"
    assert [c.get("value") for c in verdict] == ["OK", "Needs revision"]
    kinds = next(el for el in root.iter("Choices") if el.get("name") == "criterion_2_kind")
    assert [c.get("value") for c in kinds] == list(ls.CRITERION_KINDS.values())


def test_task_carries_every_data_key_ids_in_meta_and_current_values_prefilled():
    task = ls.task_for_item(SINGLE, image_src=image_src)
    assert set(task["data"]) == {"context", "images", "question", "history", "options"}
    assert task["data"]["images"] == ["img:101"]
    assert task["data"]["history"] == "(no earlier turns)" and task["data"]["options"] == ""
    assert task["meta"] == {"benchforge_item": 1, "benchforge_benchmark": "demo", "benchforge_version": 1}
    prefill = ls.parse_result("t", task["predictions"][0]["result"])
    assert prefill.reference_answer == "Rising sales" and prefill.question_type == "open"
    assert prefill.criteria == {1: {"kind": "soft", "text": "mentions growth"}}


def test_task_keeps_image_order_history_turns_and_lettered_options():
    assert ls.task_for_item(TWO_IMAGES, image_src=image_src)["data"]["images"] == ["img:201", "img:202"]
    history = ls.task_for_item(MULTI_TURN, image_src=image_src)["data"]["history"]
    assert history == "User: What is in the picture?\n\nAssistant: A bar chart of sales."
    assert ls.task_for_item(MCQ, image_src=image_src)["data"]["options"] == "Hint: Count carefully\nA. 3\nB. 4\nC. 5"


def test_data_url_round_trips_the_bytes():
    content = png_bytes("red")
    url = ls.data_url(content, "PNG")
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == content


def region(name, kind, value):
    key = "text" if kind == "textarea" else "choices"
    return {"from_name": name, "to_name": "question", "type": kind, "value": {key: value}}


def test_annotation_becomes_field_changes_with_criterion_kinds():
    result = [
        region("reference_answer", "textarea", ["Sales rose every year"]),
        region("question_type", "choices", ["Compound"]),
        region("criterion_1_kind", "choices", ["Exact reference"]),
        region("criterion_1_text", "textarea", ["says 2023"]),
        region("criterion_2_kind", "choices", ["Range"]),
        region("criterion_2_text", "textarea", ["between 10 and 12"]),
        region("verdict", "choices", ["Needs revision"]),
    ]
    answer = ls.parse_result(7, result)
    assert answer.verdict == "needs_revision"
    assert ls.item_changes(SINGLE, answer, task_id=7) == {
        "reference_answer": "Sales rose every year",
        "question_type": "compound",
        "criteria": [{"kind": "exact", "text": "says 2023"}, {"kind": "range", "text": "between 10 and 12"}],
    }


def test_untouched_or_equal_fields_are_no_change():
    assert ls.item_changes(SINGLE, ls.parse_result(1, []), task_id=1) == {}
    same = ls.task_for_item(SINGLE, image_src=image_src)["predictions"][0]["result"] + [region("verdict", "choices", ["OK"])]
    answer = ls.parse_result(1, same)
    assert answer.verdict == "ok" and ls.item_changes(SINGLE, answer, task_id=1) == {}


def test_partial_result_changes_only_what_was_filled_and_keeps_a_known_kind():
    answer = ls.parse_result(3, [region("criterion_1_text", "textarea", ["mentions growth of 10%"])])
    assert answer.reference_answer is None and answer.verdict is None
    assert ls.item_changes(SINGLE, answer, task_id=3) == {"criteria": [{"kind": "soft", "text": "mentions growth of 10%"}]}


def test_codes_are_accepted_as_well_as_labels_and_foreign_regions_are_ignored():
    answer = ls.parse_result(
        5,
        [
            region("question_type", "choices", ["closed"]),
            {"from_name": "my_own_rating", "to_name": "question", "type": "rating", "value": {"rating": 4}},
        ],
    )
    assert answer.question_type == "closed"


@pytest.mark.parametrize(
    "result, problem",
    [
        ("not a list", "not a list"),
        ([42], "not an object"),
        ([{"from_name": "reference_answer", "value": "text"}], "no value object"),
        ([region("reference_answer", "textarea", 12)], "no text list"),
        ([region("question_type", "choices", ["Tricky"])], "'Tricky' is not a question type"),
        ([region("verdict", "choices", ["OK", "Needs revision"])], "has 2 choices"),
    ],
)
def test_malformed_results_name_the_task(result, problem):
    with pytest.raises(ls.LabelStudioResultError) as caught:
        ls.parse_result(41, result)
    assert "task 41" in caught.value.message and problem in caught.value.message


def test_criterion_text_without_any_kind_is_an_error_naming_the_task():
    answer = ls.parse_result(9, [region("criterion_2_text", "textarea", ["a second rule"])])
    with pytest.raises(ls.LabelStudioResultError, match="task 9: criterion 2 has a text but no kind"):
        ls.item_changes(SINGLE, answer, task_id=9)


def test_latest_not_skipped_annotation_speaks_for_the_task():
    annotations = [
        {"id": 1, "updated_at": "2026-01-02T00:00:00Z", "was_cancelled": False, "result": []},
        {"id": 2, "updated_at": "2026-01-03T00:00:00Z", "was_cancelled": True, "result": []},
        {"id": 3, "updated_at": "2026-01-01T00:00:00Z", "was_cancelled": False, "result": []},
    ]
    assert ls.latest_annotation(annotations)["id"] == 1
    assert ls.latest_annotation([annotations[1]]) is None and ls.latest_annotation([]) is None


def test_an_item_without_an_image_shows_a_picture_saying_so():
    task = ls.task_for_item({**SINGLE, "images": []}, image_src=image_src)
    assert len(task["data"]["images"]) == 1 and task["data"]["images"][0].startswith("data:image/svg+xml;base64,")
    assert b"no image" in base64.b64decode(task["data"]["images"][0].split(",", 1)[1])


def test_a_prefill_accepted_as_is_changes_nothing_even_with_blanks_trimmed():
    item = {
        **MCQ,
        "reference_answer": "B. 4  \r\nFour bars.\n",
        "description": "Bars",
        "criteria": [{"kind": "exact", "text": "B"}],
    }
    result = ls.task_for_item(item, image_src=image_src)["predictions"][0]["result"]
    trimmed = [
        {**r, "value": {"text": [t.replace("\r\n", "\n").strip() for t in r["value"]["text"]]}} if "text" in r["value"] else r
        for r in result
    ]
    assert ls.item_changes(item, ls.parse_result(1, trimmed), task_id=1) == {}


@pytest.mark.parametrize(
    "state, problem",
    [
        ({"choices": ["R", "G"], "answer": "E", "reference_answer": "E"}, "answer key: 'E' is not one of the options (A-B)"),
        ({"choices": ["R", "G", "B"], "answer": "B", "reference_answer": "C. Blue"}, "names option C"),
        ({"choices": ["Red", "Green"], "answer": "A", "reference_answer": "Green."}, "names option B"),
        ({"choices": ["Red"], "answer": "A", "reference_answer": "A"}, "needs 2 to 4 options"),
    ],
)
def test_answer_key_must_be_an_option_and_agree_with_the_reference(state, problem):
    field, message = ls.answer_key_problem(state)
    assert problem in message and field in ("answer key", "options")


def test_answer_key_agreeing_with_the_reference_is_fine():
    assert ls.answer_key_problem({"choices": ["Red", "Green"], "answer": "B", "reference_answer": "B. Green"}) is None
    assert ls.answer_key_problem({"choices": ["Red", "Green"], "answer": "B", "reference_answer": "A green one"}) is None


def test_three_way_applies_what_only_label_studio_changed_and_flags_what_both_changed():
    synced = {"reference_answer": "old", "question": "Q?", "description": ""}
    current = {"reference_answer": "edited here", "question": "Q?", "description": ""}
    apply, conflicts = ls.three_way(synced, current, {"question": "Better Q?", "reference_answer": "edited there"})
    assert apply == {"question": "Better Q?"}
    assert conflicts == {"reference_answer": {"local": "edited here", "labelstudio": "edited there", "synced": "old"}}
    apply, conflicts = ls.three_way(synced, current, {"reference_answer": "edited here"})
    assert apply == {} and conflicts == {}  # both made the same edit


def test_latest_per_annotator_keeps_each_annotators_latest():
    annotations = [
        {"id": 1, "updated_at": "2026-01-01", "created_username": "Ann ann@x.org, 2", "result": []},
        {"id": 2, "updated_at": "2026-01-03", "created_username": "Ann ann@x.org, 2", "result": []},
        {"id": 3, "updated_at": "2026-01-02", "created_username": "Bob bob@x.org, 3", "result": []},
        {"id": 4, "updated_at": "2026-01-04", "created_username": "Bob bob@x.org, 3", "was_cancelled": True},
    ]
    assert [a["id"] for a in ls.latest_per_annotator(annotations)] == [2, 3]
    assert ls.annotator(annotations[0]) == "Ann ann@x.org" and ls.annotator({"completed_by": 7}) == "user 7"
