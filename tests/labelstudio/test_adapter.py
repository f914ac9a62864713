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
    assert set(task["data"]) == {"context", "images", "question", "history", "options", "mcq"}
    assert task["data"]["mcq"] == [] and ls.task_for_item(MCQ, image_src=image_src)["data"]["mcq"] == [{"kind": "mcq"}]
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


def region(name, kind, value, origin=None):
    key = "text" if kind == "textarea" else "choices"
    found = {"from_name": name, "to_name": "question", "type": kind, "value": {key: value}}
    return {**found, "origin": origin} if origin else found


def changes(payload, result, task_id=1):
    """The item changes an annotation makes of an item whose task showed it as it is (no edit since)."""
    values = ls.field_values(payload)
    given = ls.given_values(ls.parse_result(task_id, result), task_id=task_id, kind=payload["kind"])
    merged = ls.merge(values, values, ls.proposals(given, values))
    assert not merged.conflicts and not merged.agreed
    return ls.item_changes(values, {**values, **merged.apply}, task_id=task_id)


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
    assert ls.parse_result(7, result).verdict == "needs_revision"
    assert changes(SINGLE, result, task_id=7) == {
        "reference_answer": "Sales rose every year",
        "question_type": "compound",
        "criteria": [{"kind": "exact", "text": "says 2023"}, {"kind": "range", "text": "between 10 and 12"}],
    }


def test_untouched_or_equal_fields_are_no_change():
    assert changes(SINGLE, []) == {}
    same = ls.task_for_item(SINGLE, image_src=image_src)["predictions"][0]["result"] + [region("verdict", "choices", ["OK"])]
    assert ls.parse_result(1, same).verdict == "ok" and changes(SINGLE, same) == {}


def test_partial_result_changes_only_what_was_filled_and_keeps_a_known_kind():
    result = [region("criterion_1_text", "textarea", ["mentions growth of 10%"])]
    answer = ls.parse_result(3, result)
    assert answer.reference_answer is None and answer.verdict is None
    assert changes(SINGLE, result, task_id=3) == {"criteria": [{"kind": "soft", "text": "mentions growth of 10%"}]}


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
    with pytest.raises(ls.LabelStudioResultError, match="task 9: criterion 2 has a text but no kind"):
        changes(SINGLE, [region("criterion_2_text", "textarea", ["a second rule"])], task_id=9)


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
    assert changes(item, trimmed) == {}


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
    base = ls.field_values({"reference_answer": "old", "question": "Q?"})
    here = {**base, "reference_answer": "edited here"}
    merged = ls.merge(base, here, {"question": "Better Q?", "reference_answer": "edited there"})
    assert merged.apply == {"question": "Better Q?"} and merged.agreed == {}
    assert merged.conflicts == {"reference_answer": {"base": "old", "here": "edited here", "labelstudio": "edited there"}}
    both = ls.merge(base, here, {"reference_answer": "edited here"})  # both made the same edit
    assert both.apply == {} and both.conflicts == {} and both.agreed == {"reference_answer": "edited here"}
    assert ls.merge(base, here, {"reference_answer": "old"}) == ls.Merge()  # Label Studio's value is the agreed one


def test_criteria_merge_by_position_and_part_so_one_text_changes_nothing_else():
    three = ls.field_values(
        {"criteria": [{"kind": "soft", "text": "one"}, {"kind": "range", "text": "two"}, {"kind": "exact", "text": "three"}]}
    )
    merged = ls.merge(three, three, {"criterion_1_text": "one, better"})
    assert ls.item_changes(three, {**three, **merged.apply}, task_id=1) == {
        "criteria": [
            {"kind": "soft", "text": "one, better"},
            {"kind": "range", "text": "two"},
            {"kind": "exact", "text": "three"},
        ]
    }


def test_a_stale_prefill_left_as_it_was_is_no_change():
    # The task's pre-fill still shows one exact criterion; a pull since gave the item three, the
    # first one soft. A second annotation from that pre-fill changes criterion 1's text only.
    shown = ls.field_values({"criteria": [{"kind": "exact", "text": "one"}]})
    now = ls.field_values(
        {"criteria": [{"kind": "soft", "text": "one"}, {"kind": "range", "text": "two"}, {"kind": "exact", "text": "three"}]}
    )
    result = [region("criterion_1_kind", "choices", ["Exact reference"]), region("criterion_1_text", "textarea", ["one, better"])]
    given = ls.given_values(ls.parse_result(1, result), task_id=1, kind="single_turn")
    asked = ls.proposals(given, shown)
    assert asked == {"criterion_1_text": "one, better"}
    merged = ls.merge(now, now, asked)
    assert ls.item_changes(now, {**now, **merged.apply}, task_id=1)["criteria"] == [
        {"kind": "soft", "text": "one, better"},
        {"kind": "range", "text": "two"},
        {"kind": "exact", "text": "three"},
    ]


def test_a_region_the_editor_kept_from_the_prefill_is_no_change_whatever_the_prefill_showed():
    result = [
        region("reference_answer", "textarea", ["an old value"], origin="prediction"),
        region("question_type", "choices", ["Compound"], origin="prediction-changed"),
    ]
    given = ls.given_values(ls.parse_result(1, result), task_id=1, kind="single_turn")
    assert given == {"question_type": "compound"}


def test_an_emptied_field_is_left_out_never_deleted():
    result = [region("description", "textarea", ["  "]), region("edit_options", "textarea", [""])]
    assert ls.given_values(ls.parse_result(1, result), task_id=1, kind="mcq") == {}


def test_an_annotation_is_read_against_the_prefill_it_started_from():
    prefills = [
        {"prediction": 30, "at": "2026-01-03T10:00:00Z"},
        {"prediction": 20, "at": "2026-01-02T10:00:00Z"},
        {"prediction": None, "at": None},
    ]
    named = {"parent_prediction": 30, "created_at": "2026-01-01T00:00:00Z"}
    assert ls.started_from(named, prefills) is prefills[0]
    # Replaced predictions are forgotten by Label Studio: the time the annotator opened the task tells.
    opened_before = {"parent_prediction": None, "created_at": "2026-01-03T10:00:30Z", "lead_time": 60}
    assert ls.started_from(opened_before, prefills) is prefills[1]
    assert ls.started_from({"created_at": "2025-12-01T00:00:00Z"}, prefills) is prefills[2]


def test_only_multiple_choice_tasks_show_options_and_the_answer_key():
    config = ElementTree.fromstring(ls.labeling_config(with_history=False, with_options=True))
    repeater = next(config.iter("Repeater"))
    assert repeater.get("on") == "$mcq"
    assert {el.get("name") for el in repeater.iter() if el.get("name")} == {"options", "edit_options", "answer_key"}
    assert not [r for r in ls.prefill_result({**SINGLE, "choices": ["x", "y"]}) if r["from_name"] == "edit_options"]


def test_latest_per_annotator_keeps_each_annotators_latest():
    annotations = [
        {"id": 1, "updated_at": "2026-01-01", "created_username": "Ann ann@x.org, 2", "result": []},
        {"id": 2, "updated_at": "2026-01-03", "created_username": "Ann ann@x.org, 2", "result": []},
        {"id": 3, "updated_at": "2026-01-02", "created_username": "Bob bob@x.org, 3", "result": []},
        {"id": 4, "updated_at": "2026-01-04", "created_username": "Bob bob@x.org, 3", "was_cancelled": True},
    ]
    assert [a["id"] for a in ls.latest_per_annotator(annotations)] == [3, 2]  # oldest first
    assert ls.annotator(annotations[0]) == "Ann ann@x.org" and ls.annotator({"completed_by": 7}) == "user 7"
