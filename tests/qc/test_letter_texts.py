"""QC on a benchmark whose option texts name other options' letters ("option C of question 3: red 2"):
under CircularEval rotation the letter inside a quoted option text is never read as the model's
choice, so the text-only and all-fail flags match what the models really answered."""

import re

import pytest

from jobs.models import Job
from qc.models import QCAnswer, QCItem
from qc.services import start_run
from tests.qc.conftest import make_mcq_items, prompt_of

pytestmark = pytest.mark.django_db(transaction=True)

KNOWN = {"m1": {0, 1, 2, 3}, "m2": {0, 1, 4, 5}, "m3": {0, 2, 4, 6}}  # items each model solves
ITEMS = 8
STYLES = ["Answer: {text}", "{text}", "The answer is {text}.", "答案是{text}"]


def lettered_choices(n: int, count: int = 4) -> list[str]:
    # Every text names a letter that is not its own: rotated, most passes show it under another one.
    colours = ["red", "blue", "green", "yellow"]
    return [f"option {'CADB'[j]} of question {n}: {colours[j]} {j + 1}" for j in range(count)]


def replier(model: str):
    def reply(body: dict) -> str:
        text = prompt_of(body)
        n = int(re.search(r"Question (\d+):", text).group(1))
        options = dict(re.findall(r"^([A-D])\. (.*)$", text, re.M))
        right = lettered_choices(n)[1]  # the key is B
        shown_right = next(letter for letter, t in options.items() if t == right)
        if n in KNOWN[model]:
            chosen = right
        else:
            # A wrong option, preferably one whose text names the letter the right option is shown under.
            wrong = [t for t in options.values() if t != right]
            chosen = next((t for t in wrong if f"option {shown_right} " in t), wrong[0])
        style = STYLES[(n + len(model)) % len(STYLES)]
        return style.format(text=chosen)

    return reply


def truth(filter: str) -> set[int]:
    solved = {n: sum(n in known for known in KNOWN.values()) for n in range(ITEMS)}
    if filter == "text_only":
        return {n for n, count in solved.items() if count > len(KNOWN) / 2}
    return {n for n, count in solved.items() if count == 0}


@pytest.mark.parametrize("filter", ["text_only", "all_fail"])
def test_flags_match_the_truth_when_option_texts_name_letters(filter, declare, fake_llm, benchmark, researcher):
    declare({name: {"vision": True} for name in KNOWN})
    for name in KNOWN:
        fake_llm.script(name, replier(name))
    make_mcq_items(benchmark, researcher, ITEMS, answer="B", images=filter == "all_fail", choices=lettered_choices)

    run = start_run(benchmark, user=researcher, filter=filter, models=list(KNOWN), early_stop=False)

    job = run.jobs.get()
    assert job.status == Job.Status.SUCCEEDED, job.message
    flagged = {int(e.item.external_id[1:]) for e in QCItem.objects.filter(run=run, flagged=True).select_related("item")}
    assert flagged == truth(filter)
    answers = QCAnswer.objects.filter(run=run)
    assert answers.count() == len(KNOWN) * ITEMS * 4
    # Every pass read by the rules (no extractor declared) and read as the option whose text was quoted.
    for answer in answers:
        assert answer.method == "heuristic", answer.output
        assert answer.options[answer.letter] in answer.output
