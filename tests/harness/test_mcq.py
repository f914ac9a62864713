"""CircularEval passes and choice extraction (METHODS.md 6)."""

import pytest

from benchforge_harness.mcq import (
    circular_passes,
    format_options,
    heuristic_choice,
    parse_extractor_reply,
)
from benchforge_harness.parsing import ParseError

CHOICES = {"A": "cat", "B": "dog", "C": "horse", "D": "cow"}


def test_four_options_give_four_rotated_passes_with_the_key_remapped():
    passes = circular_passes(CHOICES, "C")
    assert [p.index for p in passes] == [0, 1, 2, 3]
    assert passes[0].options == CHOICES and passes[0].answer == "C"
    # pass 1 shows B,C,D,A: "horse" (originally C) is now shown as B
    assert passes[1].options == {"A": "dog", "B": "horse", "C": "cow", "D": "cat"}
    assert passes[1].answer == "B"
    assert passes[2].answer == "A"
    assert passes[3].answer == "D"
    for p in passes:  # the shown key always points at the same option text
        assert p.options[p.answer] == "horse"
        assert p.source[p.answer] == "C"


def test_two_option_item_has_two_passes():
    passes = circular_passes({"A": "yes", "B": "no"}, "A")
    assert [(p.options, p.answer) for p in passes] == [({"A": "yes", "B": "no"}, "A"), ({"A": "no", "B": "yes"}, "B")]


def test_format_options():
    assert format_options({"A": "cat", "B": "dog"}) == "A. cat\nB. dog"


@pytest.mark.parametrize(
    "output,letter",
    [
        ("B", "B"),
        ("(C)", "C"),
        ("D. cow", "D"),
        ("The answer is B.", "B"),
        ("After looking closely, I believe the correct option is (A) cat.", "A"),
        ("答案是C", "C"),
        ("选项：Ｂ", "B"),  # full-width letter
        ("The animal has hooves and a mane.\nC", "C"),
        ("dog", "B"),  # the reply is exactly one option's text
        ("The answer is (B) dog.", "B"),
        ("I'm sorry, I cannot determine the animal from this image.", "Z"),  # refusal
        ("无法判断", "Z"),
        ("", "Z"),
    ],
)
def test_heuristic_extraction(output, letter):
    assert heuristic_choice(output, CHOICES) == letter


@pytest.mark.parametrize(
    "output",
    [
        "A cat and a dog are both visible.",  # "A" is an article, and two option texts appear
        "Either A or B could be right: option A fits the ears, option B the tail.",
        "It looks like a domestic pet of some kind.",  # paraphrase: needs the LLM extractor
        "It is clearly a dog.",  # prose that names an option: the extractor reads it (the question may ask "which is NOT")
        "The answer is A. Wait, no: B.",
        "B. horse",  # the letter and the text disagree
    ],
)
def test_heuristic_leaves_hard_cases_unresolved(output):
    assert heuristic_choice(output, CHOICES) is None


def test_option_text_inside_a_longer_option_does_not_count_twice():
    choices = {"A": "red", "B": "dark red", "C": "blue"}
    assert heuristic_choice("Answer: dark red", choices) == "B"
    assert heuristic_choice("red", choices) == "A"


def test_a_letter_inside_an_option_text_is_not_the_choice():
    # The rotated CircularEval pass: the only option whose whole text the reply quotes is A.
    choices = {"A": "option C of question 3: red 2", "B": "option A of question 3: blue 1", "C": "Both B and C"}
    assert heuristic_choice("Answer: option C of question 3: red 2", choices) == "A"
    assert heuristic_choice("Both B and C", choices) == "C"
    assert heuristic_choice("B and C", choices) is None


def test_an_option_whose_text_is_a_letter_leaves_every_reply_to_the_extractor():
    assert heuristic_choice("B", {"A": "B", "B": "A"}) is None


@pytest.mark.parametrize("reply,letter", [("B", "B"), ("Z", "Z"), ("**C**", "C"), ("Answer: D", "D"), ("(A)\n", "A")])
def test_extractor_reply(reply, letter):
    assert parse_extractor_reply(reply, "ABCD") == letter


@pytest.mark.parametrize("reply", ["", "E", "I think B or C", "maybe"])
def test_extractor_reply_failures(reply):
    with pytest.raises(ParseError):
        parse_extractor_reply(reply, "ABCD")
