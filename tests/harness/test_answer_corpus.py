"""The heuristic answer reader on the labelled corpus: it never returns a wrong letter (precision
100%), a refusal only where a human reads none of the options, and leaves every unsure reply to the
extractor. Its coverage is printed by bench/answer_reading.py and reported in docs/qc.md."""

from collections import Counter

import pytest

from benchforge_harness.mcq import NONE_OF_THEM, heuristic_choice
from tests.harness.answer_corpus import CASES, OPTION_SETS, UNSURE


def test_the_corpus_is_large_and_varied():
    assert len(CASES) >= 300
    labels = Counter(label for _, _, label in CASES)
    assert labels[UNSURE] >= 50 and labels[NONE_OF_THEM] >= 10
    assert len({reply for _, reply, _ in CASES}) > 280  # replies, not one reply many times
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in reply) for _, reply, _ in CASES) >= 50  # Chinese
    for name, _, label in CASES:
        assert label in (UNSURE, NONE_OF_THEM) or label in OPTION_SETS[name]


@pytest.mark.parametrize("name,reply,label", CASES, ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_the_rules_never_read_a_wrong_letter(name, reply, label):
    read = heuristic_choice(reply, OPTION_SETS[name])
    assert read is None or read == label, f"read {read!r} where a human reads {label!r}"


def test_the_rules_settle_most_clear_replies():
    clear = [(name, reply, label) for name, reply, label in CASES if label != UNSURE]
    settled = sum(heuristic_choice(reply, OPTION_SETS[name]) == label for name, reply, label in clear)
    # A floor well under the measured coverage (docs/qc.md), so a rule change that loses whole
    # reply styles shows up here rather than as a slow rise in extractor calls.
    assert settled / len(clear) >= 0.6
