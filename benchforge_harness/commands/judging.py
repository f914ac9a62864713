"""The skeleton every judge command shares (judge, pairwise, touchstone, hallucination).

A judge command reads a release and the predictions of the models under test, asks one judge
endpoint about each answer through its scoring mode (benchforge_harness.scoring.MODES), keeps the samples
in a resumable log and writes results.json and the mode's report. What differs between the
commands is said by a JudgeCommand: its mode, options, the prompt template, and anything it
checks or adds before scoring (`prepare`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchforge_harness.calls import SampleLog
from benchforge_harness.commands import common
from benchforge_harness.prompts import Prompts
from benchforge_harness.release import Release, load_release
from benchforge_harness.report import Section, Table, json_safe
from benchforge_harness.scoring import MODES


@dataclass
class Prepared:
    """What a command adds before scoring: `settings` join run.json's settings (after "retry"),
    `options` go to the mode's run as keywords."""

    settings: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeCommand:
    mode: str  # its scoring mode, whose command name it has
    summary: str  # the line in the command list of --help
    description: str
    template: str  # the prompt template; "retry_" + template re-asks an unreadable reply
    report: Callable[[dict], Any]  # results -> its Report (the module's build_report)
    noun: str = "judged"  # "<sent> <noun> this run" in the closing line
    # Options of this command only: the first set before --predictions, the second after it.
    options_before: Callable[[argparse.ArgumentParser], None] | None = None
    options_after: Callable[[argparse.ArgumentParser], None] | None = None
    # Checks and inputs of this command, once the client is ready (args, release, prompts, answers, client).
    prepare: Callable[..., Prepared] | None = None

    @property
    def name(self) -> str:
        return MODES[self.mode].command

    def add_parser(self, subparsers) -> None:
        parser = subparsers.add_parser(
            self.name, help=self.summary, description=self.description, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        common.add_release_option(parser)
        common.add_llm_options(parser)
        common.add_judge_option(parser)
        if self.options_before:
            self.options_before(parser)
        common.add_predictions_option(parser)
        if self.options_after:
            self.options_after(parser)
        common.add_run_options(parser, f"results/{self.name}")
        parser.set_defaults(run=self.run)

    def run(self, args) -> int:
        release: Release = load_release(args.release, split=args.split)
        common.say_skipped(self.name, release, MODES[self.mode].scores, "open")
        prompts = Prompts(args.prompts, args.language)
        versions = common.prompt_versions(prompts, release, [self.template, f"retry_{self.template}"])
        answers = common.answers_of(common.load_all_predictions(args.predictions, release))
        client = common.ready_client(args, [args.judge])
        prepared = self.prepare(args, release, prompts, answers, client) if self.prepare else Prepared()
        out = Path(args.out)
        common.require_same_settings(
            out,
            {
                "command": self.name,
                "judge": common.endpoint_identity(client.endpoints[args.judge]),
                "prompts": versions,
                **prepared.settings,
                "parse_retries": args.parse_retries,
            },
            args.restart,
        )
        log = SampleLog(out / "samples.jsonl")
        mode = MODES[self.mode]
        scored = mode.run(
            client,
            release.items,
            sink=log,
            judge=args.judge,
            answers=answers,
            prompts=prompts,
            parse_retries=args.parse_retries,
            **prepared.options,
            **common.run_options(args),
        )
        log.compact(scored.rows)
        stats = scored.stats[args.judge]
        results = {
            **scored.results,
            "release": release.name,
            "prompts": versions,
            "run": common.run_section(stats, client, args.judge, "judge"),
        }
        return common.finish(
            self.name,
            out,
            results,
            self.report(json_safe(results)),
            common.failed_rows(scored.rows.values()),
            f"{stats.sent} {self.noun} this run ({stats.cached} from the cache), {stats.skipped} already done, "
            f"{stats.usage.get('calls', 0)} judge calls",
        )


def per_category_means(models: dict) -> Section:
    """The reports' "Per category" section: each model's mean score in each category, categories in
    the order the models' results first name them."""
    categories = list(dict.fromkeys(c for m in models.values() for c in m["by_category"]))
    rows = [[c] + [models[name]["by_category"].get(c, {}).get("mean") for name in models] for c in categories]
    return Section("Per category", [Table(["category"] + list(models), rows)])
