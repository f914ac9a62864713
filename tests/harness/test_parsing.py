"""Reading judge outputs the way real judges write them."""

import pytest

from benchforge_harness.parsing import (
    ANSWER1,
    ANSWER2,
    UNABLE_ONE,
    UNABLE_TWO,
    ParseError,
    normalize_text,
    parse_rating,
    parse_score_pair,
    parse_vote,
)


@pytest.mark.parametrize(
    "output,rating,reason",
    [
        ('{"rating": 7, "reason": "minor slip"}', 7, "minor slip"),
        ('```json\n{"rating": 8, "reason": "good"}\n```', 8, "good"),
        ('Here is my verdict:\n{"rating": 4, "reason": "half wrong"}\nHope this helps! {not json}', 4, "half wrong"),
        ("{“rating”：９，“reason”：“全部正确”}", 9, "全部正确"),  # Chinese quotes/colon/comma, full-width 9
        ('{"Rating": "６", "Reason": "部分正确"}', 6, "部分正确"),
        ('{"rating": "7/10", "reason": "ok"}', 7, "ok"),
        ('{"评分": 3, "理由": "答非所问"}', 3, "答非所问"),
        ('{"reason": "说明“RUNNING BIBLE”", "rating": 10}', 10, "说明“RUNNING BIBLE”"),  # quotes inside the reason
        ("Rating: 5\nReason: more than half is wrong", 5, None),
        ('{"rating": 6.5, "reason": "x"}', 6.5, "x"),
    ],
)
def test_pointwise_ratings(output, rating, reason):
    parsed = parse_rating(output)
    assert parsed.value == rating
    if reason is not None:
        assert parsed.reason == reason


@pytest.mark.parametrize(
    "output,message",
    [
        ("", "empty"),
        ("The answer is pretty good overall.", "no rating"),
        ('{"rating": 11, "reason": "x"}', "outside 1-10"),
        ('{"rating": 0, "reason": "x"}', "outside 1-10"),
        ('{"rating": "great", "reason": "x"}', "not a number"),
        ("rating: 3 ... on reflection rating: 8", "several different ratings"),
    ],
)
def test_pointwise_failures_say_why(output, message):
    with pytest.raises(ParseError, match=message):
        parse_rating(output)


def test_hallucination_range_allows_zero():
    assert parse_rating('{"score": 0, "reason": "all supported"}', low=0, high=10, keys=("score",)).value == 0


@pytest.mark.parametrize(
    "output,vote",
    [
        ("Answer1", ANSWER1),
        ("Both are close, but the second counts correctly.\nAnswer2", ANSWER2),
        ("reasoning...\n\n**Answer 1**\n", ANSWER1),
        ("Final verdict: Answer2.", ANSWER2),
        ("unable to decide: situation one", UNABLE_ONE),
        ("Both are badly wrong.\nUnable to decide: Situation Two", UNABLE_TWO),
        ("unable to decide (situation 2)", UNABLE_TWO),
        ("Ａｎｓｗｅｒ１", ANSWER1),
    ],
)
def test_votes_come_from_the_last_line(output, vote):
    assert parse_vote(output) == vote


@pytest.mark.parametrize(
    "output",
    [
        "Answer1\nI think answer one is better because it is longer.",  # vote not on the last line
        "Answer1 or Answer2, hard to say",
        "",
        "unable to decide",
    ],
)
def test_votes_that_are_not_votes_fail(output):
    with pytest.raises(ParseError):
        parse_vote(output)


@pytest.mark.parametrize(
    "output,pair",
    [
        ("7 9\nAssistant 2 is more complete.", (7, 9)),
        ("８ ６\n理由……", (8, 6)),
        ("**6, 8**\nexplanation", (6, 8)),
        ("\n  5.5 7\n", (5.5, 7)),
    ],
)
def test_touchstone_first_line(output, pair):
    assert parse_score_pair(output) == pair


@pytest.mark.parametrize("output", ["Assistant 1: 7\nAssistant 2: 9", "7\n9", "11 3", "seven nine"])
def test_touchstone_first_line_failures(output):
    with pytest.raises(ParseError):
        parse_score_pair(output)


def test_normalize_text_maps_full_width_and_cjk_punctuation():
    assert normalize_text("ＡＢＣ１２３，：“”（）　") == 'ABC123,:""() '
