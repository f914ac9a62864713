"""The scoring-mode registry: every way the harness scores, under one name, one signature and one
result shape (in the spirit of lm-evaluation-harness's task registry).

A mode registers:
  name      what the platform stores (a leaderboard method, a QC filter's mode)
  command   its CLI command (`python -m benchforge_harness <command>`), whose results.json says "command"
  run       run(client, items, *, sink, **settings) -> Scores; the settings a mode takes are its
            keyword arguments (models to ask, a judge, answers to judge, ...), see `accepts`
  headline  the field of a model's results that is its one number
  scale     what the headline is out of (1: a share, shown as a percentage; 10: a grade)
  groups    the per-group breakdown the leaderboard shows ("by_task" or "by_category") and the
            field of each group that is its value
  filters   the QC filters it decides (an item flagged or not, per model in turn)
  leaderboard  whether a release's leaderboard offers it
  scores    which items it scores (default: the open questions)
  passes    calls to the model under test per item, for a mode that asks it itself (CircularEval:
            one per option rotation); None: it scores answers given to it
  pass_tokens  the reply one pass expects (a letter; an open answer), for the estimate (estimate.py)
  judge_calls  calls to the judge per item (a pairwise vote is asked in both orders)
  cli       the options of its command line, in order ("name?": left out without a value), so a
            caller can spell the command that scores the same again (command_line)
  human     how people check its verdicts in a human-evaluation study (HumanCheck), or None
  item_results  item_results(rows, items, model) -> {item id: (value, label)}: one model's result on
            each item it has a decided result for, read from the rows its run wrote to the sink; value
            on a 0-1 scale whose mean over the items is the headline (on that scale), label what a
            person reads (win/tie/lose, solved/failed, the rating); None: the mode has no per-item
            result (item analysis and anchor splits need one)

Scores is the one result shape: per item (`rows`, `outcomes`, `flags`), per group and headline
(`results["models"][model]`, as results.json holds them), and the calls it took (`stats`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchforge_harness.calls import RunStats


@dataclass
class Scores:
    mode: str
    # Headline and per-group numbers: results["models"][model] (results.json's body, the report's input).
    results: dict
    # Per item: every row by key (a call's sink row; under CircularEval, each pass's verdict).
    rows: dict[str, dict]
    # The calls of this run, per endpoint asked.
    stats: dict[str, RunStats] = field(default_factory=dict)
    # Per item and model: solved | failed | error | skipped (modes that decide QC filters).
    outcomes: dict[str, dict[str, str]] = field(default_factory=dict)
    # Per item, when a QC filter was given: flagged, decided, solved_by, failed_by, errors, not_asked.
    flags: dict[str, dict] = field(default_factory=dict)
    # Sink keys of the calls a stop saved (never asked): a job counts them done.
    unasked: list[str] = field(default_factory=list)


def open_question(item: Any) -> bool:
    return not item.is_mcq


@dataclass(frozen=True)
class HumanCheck:
    """How people check a mode's verdicts (the platform's human-evaluation studies read this).

    study     the name of the study that rates this mode's scores
    rates     what a rater gives each answer: "score" (1-10, as the judge grades), "vote" (a side,
              as the judge votes against the anchor) or "choice" (the option a reply commits to,
              as the scoring read it)
    level     the level of Krippendorff's alpha between raters ("interval" or "nominal")
    verdicts  verdicts(rows, model) -> {item id: the judge's verdict on `model`'s answer}, read
              from the sink rows of the mode's run (keyed as the run wrote them); None when the
              verdicts are the passes the mode asked itself (CircularEval: recorded_passes)
    """

    study: str
    rates: str
    level: str
    verdicts: Callable[[Mapping[str, dict], str], dict[str, dict]] | None = None


@dataclass(frozen=True)
class Mode:
    name: str
    command: str
    title: str
    run: Callable[..., Scores]
    headline: str  # the field of a model's results that is its one number
    scale: float = 1.0
    groups: tuple[str, str, str] = ("by_task", "mean", "n")  # (breakdown, value field, count field)
    filters: tuple[str, ...] = ()
    leaderboard: bool = False  # a release's leaderboard scores with it
    prefix: str = ""  # before the headline's text ("win 40.0%")
    scores: Callable[[Any], bool] = open_question  # an item (benchforge_harness.release.Item) it scores
    passes: Callable[[Any], int] | None = None  # calls to the model under test per item, when it asks it itself
    pass_tokens: int = 8  # the completion tokens one pass expects (a letter)
    judge_calls: int = 0  # calls to the judge per item
    cli: tuple[str, ...] = ()  # its command line's options, in order; "name?" is optional
    item_results: Callable[[Mapping[str, dict], Any, str], dict[str, tuple[float, str]]] | None = None
    human: HumanCheck | None = None  # how people check its verdicts; None: no human-evaluation study rates it

    def takes(self, setting: str) -> bool:
        return setting in inspect.signature(self.run).parameters

    def accepts(self, settings: dict) -> dict:
        """The settings this mode's run takes, out of a larger set (the others are not its business)."""
        return {key: value for key, value in settings.items() if self.takes(key)}

    def headline_value(self, results: dict) -> float | None:
        return (results or {}).get(self.headline)

    def headline_text(self, results: dict) -> str:
        value = self.headline_value(results)
        if value is None:
            return "—"
        return f"{self.prefix}{100 * value:.1f}%" if self.scale == 1 else f"{self.prefix}{value:.2f} / {self.scale:g}"

    def per_group(self, results: dict) -> list[tuple[str, float | None, int]]:
        """(group, value on a 0-1 scale, n) for a model's results."""
        breakdown, value, count = self.groups
        rows = []
        for name, group in results.get(breakdown, {}).items():
            number = group.get(value)
            rows.append((name, None if number is None else number / self.scale, group.get(count, 0)))
        return rows

    def command_line(self, values: Mapping[str, Any], program: str = "python -m benchforge_harness") -> str | None:
        """`python -m benchforge_harness <command> --option value ...`, the options of `cli` with `values`
        (`program`: how the harness is run, e.g. an older bundle's `python -m harness`); None when the
        mode has no command line or a required option has no value."""
        if not self.command or not self.cli:
            return None
        words = [program, self.command]
        for option in self.cli:
            name = option.removesuffix("?")
            value = values.get(name)
            if value in (None, ""):
                if option.endswith("?"):
                    continue
                return None
            words.append(f"--{name} {value}")
        return " ".join(words)


MODES: dict[str, Mode] = {}


def register(mode: Mode) -> Mode:
    if mode.name in MODES or any(mode.command and m.command == mode.command for m in MODES.values()):
        raise ValueError(f"a scoring mode named {mode.name!r} (command {mode.command!r}) is already registered")
    MODES[mode.name] = mode
    return mode


def mode_for_filter(filter: str) -> Mode:
    """The mode that decides a QC filter."""
    for mode in MODES.values():
        if filter in mode.filters:
            return mode
    raise KeyError(filter)
