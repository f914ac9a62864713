"""benchforge scoring harness: score models on a benchforge release.

Pure Python (no Django, no required dependency): a copy of this package ships in every release
and runs anywhere with `python -m benchforge_harness` (or `benchforge-harness`, the installed wheel's
script). Provider SDKs (openai; zai-sdk or zhipuai for GLM) are imported when a call needs them.

The public API, what the CLI and the benchforge platform use (benchforge_harness/README.md, "As a library"):

    benchforge_harness               the names in __all__ below, each imported on first use
    benchforge_harness.scoring       the registry of scoring modes (MODES: CircularEval, the judges, the
                                     quality filters, agreement), their one result shape (Scores),
                                     answering, the sink protocol and the vocabulary of their results
    benchforge_harness.llm           endpoints, the chat client, its cache and limiter protocols, token
                                     estimates and cost
    benchforge_harness.cli           main(argv) -> exit status: the command line
    benchforge_harness.distribution  the harness's own source tree and wheel (what a release carries)
    benchforge_harness.tabular       the one reader of TSV, CSV, JSON Lines and JSON lists (exact lines,
                                     bounded nesting and sizes, per-row and per-file problems)
    benchforge_harness.metrics       the formulas every report prints (alignment, judge-human agreement,
                                     pairwise tallies, Elo, Bradley-Terry, agreement between human raters)
    benchforge_harness.anchors       anchor splits: choosing k items that predict the full score, the
                                     split file, and the estimate (with an interval) from results on them

Everything else (benchforge_harness.commands, calls, parsing, report, charts, mcq, votes, io,
and the modules inside scoring/ and llm/) is internal: it may change in any release. The
version follows semantic versioning; a release's manifest.json records the harness it carries.
"""

import importlib

__version__ = "0.3.0"

# Public name -> "module" or "module:attribute" it comes from.
_EXPORTS = {
    # the release reader
    "Release": "benchforge_harness.release",
    "load_release": "benchforge_harness.release",
    "load_predictions": "benchforge_harness.release",
    "CHOICE_LETTERS": "benchforge_harness.release",
    "SCHEMA_VERSION": "benchforge_harness.release",
    "InputError": "benchforge_harness.io",
    # the predictions format (what `infer` writes, judges read, the leaderboard accepts)
    "PREDICTIONS_FORMAT": "benchforge_harness.release",
    "read_predictions": "benchforge_harness.release",
    "parse_item": "benchforge_harness.release",
    # the task rules a judge reads (the human-evaluation stage shows raters the same text)
    "judge_rules": "benchforge_harness.release",
    "in_language": "benchforge_harness.release",
    # the release writer: manifest, verification, reproducible archives
    "MANIFEST": "benchforge_harness.bundle",
    "write_manifest": "benchforge_harness.bundle",
    "verify_bundle": "benchforge_harness.bundle:verify",
    "sha256_file": "benchforge_harness.bundle",
    "write_tar_gz": "benchforge_harness.bundle",
    "write_zip": "benchforge_harness.bundle",
    "ZIP_TIME": "benchforge_harness.bundle",
    # judge prompts (built in, or a folder of edited copies)
    "Prompts": "benchforge_harness.prompts",
    # the languages a release, an item and the prompts may be in (en, zh) and the default
    "LANGUAGES": "benchforge_harness.prompts",
    "DEFAULT_LANGUAGE": "benchforge_harness.prompts",
    # the client
    "LLMClient": "benchforge_harness.llm",
    "load_endpoints": "benchforge_harness.llm",
    "ResponseCache": "benchforge_harness.llm",
    # scoring (the README's example; every mode is in benchforge_harness.scoring.MODES)
    "pointwise_judge": "benchforge_harness.scoring",
    "MemorySink": "benchforge_harness.calls",
    "SampleLog": "benchforge_harness.calls",
    # the subpackages themselves (from harness import scoring)
    "scoring": "benchforge_harness.scoring:",
    "llm": "benchforge_harness.llm:",
    "cli": "benchforge_harness.cli:",
    "distribution": "benchforge_harness.distribution:",
    "metrics": "benchforge_harness.metrics:",
    "anchors": "benchforge_harness.anchors:",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    # Lazy, so `python -m benchforge_harness verify` and `import harness` load only what they use.
    if name not in _EXPORTS:
        raise AttributeError(f"module 'benchforge_harness' has no attribute {name!r}")
    module, _, attribute = _EXPORTS[name].partition(":")
    if _EXPORTS[name].endswith(":"):
        value = importlib.import_module(module)
    else:
        value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
