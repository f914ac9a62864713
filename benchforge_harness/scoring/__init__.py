"""Scoring as a registry of modes, called by the CLI commands and by the platform alike.

Every mode (modes.py) is run(client, items, *, sink, **settings) -> Scores: an LLMClient, items
(benchforge_harness.release.Item or dicts of the same fields; images as paths, bytes, callables, or
references an image_loader resolves), a sink that receives one row per finished call
(Sink; harness.SampleLog is the CLI's JSONL one, harness.MemorySink keeps rows in memory), and the mode's
own settings (models to ask, the judge, answers as {model: {item id: text}}, ...). MODES lists
them by name; the CLI's scoring commands, the leaderboard's methods and the QC filters are
read from it.

    modes.py     Mode, Scores (the one result shape), MODES, register, mode_for_filter
    filters.py   the QC filters: filter_flag, verdict_decided (with a threshold), asking models in turn,
                 stop_savings (where a run's calls went: asked, left after a wrong pass, left out by a stop)
    circular.py  circular_eval (mode "mcq": CircularEval, the text-only and all-fail filters), extract_choice,
                 recorded_passes (a finished run's passes read again from its sink rows)
    judges.py    pointwise_judge, pairwise_judge, touchstone_judge, hallucination_judge
    judged.py    judged_text_only (the judged text-only filter: answers without images, graded)
    agreement.py judge_agreement (judge vs human scores)
    answers.py   answer_questions (a model under test answers the open questions)
    inputs.py    as_item(s), image loading, the conversation of an item

__all__ is the public part (what the CLI and the platform use); the modules are internal. A
sink's rows have status OK, UNPARSED (both FINAL: not asked again) or ERROR (asked again).
"""

from benchforge_harness.calls import ERROR, FINAL, Sink
from benchforge_harness.llm.cost import DEFAULT_COMPLETION_TOKENS
from benchforge_harness.mcq import NONE_OF_THEM, circular_passes, format_options
from benchforge_harness.scoring.agreement import judge_agreement
from benchforge_harness.scoring.answers import answer_questions
from benchforge_harness.scoring.circular import (
    CALL_FAILURES,
    EXTRACTOR_METHODS,
    READ_BY,
    circular_eval,
    extract_choice,
    mcq_item_results,
    read_counts,
    recorded_passes,
    with_answer_key,
)
from benchforge_harness.scoring.estimate import Estimate, calls_per_item
from benchforge_harness.scoring.filters import (
    ALL_FAIL,
    CALL_ERROR,
    DEFAULT_THRESHOLD,
    FAILED,
    JUDGED_TEXT_ONLY,
    SKIPPED,
    SOLVED,
    TEXT_ONLY,
    check_filter,
    filter_flag,
    stop_savings,
    verdict_decided,
)
from benchforge_harness.scoring.filters import TITLES as FILTER_TITLES
from benchforge_harness.scoring.judged import judged_text_only
from benchforge_harness.scoring.judges import (
    described,
    described_with_reference,
    hallucination_judge,
    pairwise_item_results,
    pairwise_judge,
    pairwise_verdicts,
    pointwise_item_results,
    pointwise_judge,
    pointwise_verdicts,
    touchstone_judge,
    with_reference,
)
from benchforge_harness.scoring.modes import MODES, HumanCheck, Mode, Scores, mode_for_filter, register
from benchforge_harness.votes import combine_votes

# The command line of a judge that reads the predictions of the model under test.
JUDGE_CLI = ("release", "models", "judge", "predictions", "out")

# The registry, in the order the leaderboard offers its methods.
register(
    Mode(
        "pointwise",
        "judge",
        "Pointwise judge (1-10) with alignment",
        pointwise_judge,
        headline="mean",
        scale=10,
        leaderboard=True,
        scores=with_reference,
        judge_calls=1,
        cli=JUDGE_CLI,
        item_results=pointwise_item_results,
        human=HumanCheck("pointwise", rates="score", level="interval", verdicts=pointwise_verdicts),
    )
)
register(
    Mode(
        "pairwise",
        "pairwise",
        "Pairwise judge against an anchor",
        pairwise_judge,
        headline="win_rate",
        groups=("by_category", "win_rate", "total"),
        leaderboard=True,
        prefix="win ",
        judge_calls=2,  # both orders
        cli=("release", "models", "judge", "anchor", "predictions", "out"),
        item_results=pairwise_item_results,
        human=HumanCheck("pairwise", rates="vote", level="nominal", verdicts=pairwise_verdicts),
    )
)
register(
    Mode(
        "mcq",
        "mcq",
        "Multiple choice under CircularEval",
        circular_eval,
        headline="circular",
        groups=("by_task", "circular", "n"),
        filters=(TEXT_ONLY, ALL_FAIL),
        leaderboard=True,
        scores=with_answer_key,
        passes=lambda item: len(item.choices),  # one per rotation, at most (a failed pass skips the rest)
        cli=("release", "models", "model", "extractor?", "out"),
        item_results=mcq_item_results,
        human=HumanCheck("extraction", rates="choice", level="nominal"),  # people read its passes' replies
    )
)
register(
    Mode(
        "touchstone",
        "touchstone",
        "TouchStone: both answers scored from the image description",
        touchstone_judge,
        headline="score",
        scale=10,
        groups=("by_category", "mean", "n"),
        scores=described_with_reference,
        judge_calls=2,  # positions swapped
        cli=JUDGE_CLI,
    )
)
register(
    Mode(
        "hallucination",
        "hallucination",
        "Hallucination degree (0-10, lower is better) from the image description",
        hallucination_judge,
        headline="mean",
        scale=10,
        groups=("by_category", "mean", "n"),
        scores=described,
        judge_calls=1,
        cli=JUDGE_CLI,
    )
)
register(
    Mode(
        JUDGED_TEXT_ONLY,
        "",
        "Judged text-only filter",
        judged_text_only,
        headline="solved",
        filters=(JUDGED_TEXT_ONLY,),
        scores=with_reference,
        passes=lambda item: 1,  # each model answers the question without the image
        pass_tokens=DEFAULT_COMPLETION_TOKENS,
        judge_calls=1,  # and the judge grades that answer
    )
)
register(
    Mode(
        "agreement",
        "agreement",
        "Judge-human agreement",
        judge_agreement,
        headline="spearman",
    )
)

__all__ = [
    "ALL_FAIL",
    "CALL_ERROR",
    "CALL_FAILURES",
    "DEFAULT_THRESHOLD",
    "ERROR",
    "Estimate",
    "EXTRACTOR_METHODS",
    "FAILED",
    "FINAL",
    "JUDGED_TEXT_ONLY",
    "MODES",
    "Mode",
    "NONE_OF_THEM",
    "READ_BY",
    "SKIPPED",
    "SOLVED",
    "Scores",
    "Sink",
    "TEXT_ONLY",
    "FILTER_TITLES",
    "HumanCheck",
    "answer_questions",
    "calls_per_item",
    "circular_eval",
    "check_filter",
    "circular_passes",
    "combine_votes",
    "extract_choice",
    "filter_flag",
    "format_options",
    "hallucination_judge",
    "mcq_item_results",
    "mode_for_filter",
    "pairwise_item_results",
    "pairwise_judge",
    "pairwise_verdicts",
    "pointwise_item_results",
    "pointwise_judge",
    "pointwise_verdicts",
    "read_counts",
    "recorded_passes",
    "register",
    "stop_savings",
    "touchstone_judge",
    "verdict_decided",
]
