"""Scoring as plain functions, called by the CLI commands and by the platform alike.

Each takes an LLMClient, endpoint names, items (harness.release.Item or dicts of the same
fields; images as paths, bytes, callables, or references an image_loader resolves), answers
as {model: {item id: text}}, settings, and a sink that receives one row per finished call
(calls.Sink; SampleLog is the CLI's JSONL one, MemorySink keeps rows in memory).

    circular.py  circular_eval (CircularEval over models, early stopping, QC filters),
                 extract_choice, filter_flag, verdict_decided, summarize_circular,
                 recorded_passes (a finished run's passes read again from its sink rows)
    judges.py    pointwise_judge, pairwise_judge, touchstone_judge, hallucination_judge
    answers.py   answer_questions (a model under test answers the open questions)
    inputs.py    as_item(s), image loading, the conversation of an item

__all__ is the public part (what the CLI and the platform use); the modules are internal. A
sink's rows have status OK, UNPARSED (both FINAL: not asked again) or ERROR (asked again).
"""

from harness.calls import ERROR, FINAL, OK, UNPARSED, MemorySink, RunStats, SampleLog, Sink
from harness.mcq import circular_passes, format_options
from harness.scoring.answers import answer_questions
from harness.scoring.circular import (
    ALL_FAIL,
    CALL_ERROR,
    CALL_FAILURES,
    EXTRACTOR_METHODS,
    FAILED,
    SKIPPED,
    SOLVED,
    TEXT_ONLY,
    Choice,
    CircularEvalResult,
    circular_eval,
    extract_choice,
    filter_flag,
    recorded_passes,
    summarize_circular,
    verdict_decided,
)
from harness.scoring.inputs import ImageLoader, as_item, as_items, conversation, path_loader
from harness.scoring.judges import Scored, hallucination_judge, pairwise_judge, pointwise_judge, touchstone_judge
from harness.votes import combine_votes

__all__ = [
    "ALL_FAIL",
    "CALL_ERROR",
    "CALL_FAILURES",
    "ERROR",
    "EXTRACTOR_METHODS",
    "FAILED",
    "FINAL",
    "OK",
    "SKIPPED",
    "SOLVED",
    "TEXT_ONLY",
    "UNPARSED",
    "Choice",
    "CircularEvalResult",
    "ImageLoader",
    "MemorySink",
    "RunStats",
    "SampleLog",
    "Scored",
    "Sink",
    "answer_questions",
    "as_item",
    "as_items",
    "circular_eval",
    "circular_passes",
    "combine_votes",
    "conversation",
    "extract_choice",
    "filter_flag",
    "format_options",
    "hallucination_judge",
    "pairwise_judge",
    "path_loader",
    "pointwise_judge",
    "recorded_passes",
    "summarize_circular",
    "touchstone_judge",
    "verdict_decided",
]
