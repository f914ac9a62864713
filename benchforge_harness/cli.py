"""`python -m benchforge_harness <command>`: score models on a release folder."""

from __future__ import annotations

import argparse
import sys

from benchforge_harness import __version__
from benchforge_harness.commands import COMMANDS
from benchforge_harness.io import InputError
from benchforge_harness.llm import ConfigError

DESCRIPTION = """\
Score models on a benchforge release. Typical order, from inside the release folder:
  python -m benchforge_harness infer --model my-vlm                      # answers -> predictions/my-vlm.jsonl
  python -m benchforge_harness judge --judge glm-4 --predictions predictions/my-vlm.jsonl
Model endpoints (OpenAI-compatible or ZhipuAI) are declared in a models TOML file; keys come from
the environment. Every command resumes where an interrupted run stopped, caches model replies,
and writes results.json, per-sample JSONL and a Markdown/HTML report. `<command> --help` for more.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchforge_harness", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"benchforge harness {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    for command in COMMANDS.values():
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.run(args)
    except (InputError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished samples are saved; run the same command again to resume", file=sys.stderr)
        return 130
