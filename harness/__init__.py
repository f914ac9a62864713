"""benchforge scoring harness: score models on a benchforge release.

Pure Python (no Django, no required dependency): a copy of this package ships in every release
and runs anywhere with `python -m harness` (or `benchforge-harness`, the installed wheel's
script). Provider SDKs (openai; zai-sdk or zhipuai for GLM) are imported when a call needs them.

The public API, what the CLI and the benchforge platform use (harness/README.md, "As a library"):

    harness            the names in __all__ below, each imported on first use
    harness.scoring    the registry of scoring modes (MODES: CircularEval, the judges, the quality
                       filters, agreement), their one result shape (Scores), answering, the sink
                       protocol and the vocabulary of their results
    harness.llm        endpoints, the chat client, its cache and limiter protocols, token
                       estimates and cost
    harness.cli        main(argv) -> exit status: the command line
    harness.distribution   the harness's own source tree and wheel (what a release carries)
    harness.tabular    the one reader of TSV, CSV, JSON Lines and JSON lists (exact lines, bounded
                       nesting and sizes, per-row and per-file problems)
    harness.metrics    the formulas every report prints (alignment, judge-human agreement,
                       pairwise tallies, Elo, Bradley-Terry, agreement between human raters)

Everything else (harness.commands, calls, parsing, report, charts, mcq, votes, io,
and the modules inside scoring/ and llm/) is internal: it may change in any release. The
version follows semantic versioning; a release's manifest.json records the harness it carries.
"""

import importlib

__version__ = "0.2.0"

# Public name -> "module" or "module:attribute" it comes from.
_EXPORTS = {
    # the release reader
    "Release": "harness.release",
    "load_release": "harness.release",
    "load_predictions": "harness.release",
    "CHOICE_LETTERS": "harness.release",
    "SCHEMA_VERSION": "harness.release",
    "InputError": "harness.io",
    # the predictions format (what `infer` writes, judges read, the leaderboard accepts)
    "PREDICTIONS_FORMAT": "harness.release",
    "read_predictions": "harness.release",
    "parse_item": "harness.release",
    # the task rules a judge reads (the human-evaluation stage shows raters the same text)
    "judge_rules": "harness.release",
    "in_language": "harness.release",
    # the release writer: manifest, verification, reproducible archives
    "write_manifest": "harness.bundle",
    "verify_bundle": "harness.bundle:verify",
    "sha256_file": "harness.bundle",
    "write_tar_gz": "harness.bundle",
    "write_zip": "harness.bundle",
    "ZIP_TIME": "harness.bundle",
    # judge prompts (built in, or a folder of edited copies)
    "Prompts": "harness.prompts",
    # the languages a release, an item and the prompts may be in (en, zh) and the default
    "LANGUAGES": "harness.prompts",
    "DEFAULT_LANGUAGE": "harness.prompts",
    # the client
    "LLMClient": "harness.llm",
    "load_endpoints": "harness.llm",
    "ResponseCache": "harness.llm",
    # scoring (the README's example; every mode is in harness.scoring.MODES)
    "pointwise_judge": "harness.scoring",
    "MemorySink": "harness.calls",
    "SampleLog": "harness.calls",
    # the subpackages themselves (from harness import scoring)
    "scoring": "harness.scoring:",
    "llm": "harness.llm:",
    "cli": "harness.cli:",
    "distribution": "harness.distribution:",
    "metrics": "harness.metrics:",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    # Lazy, so `python -m harness verify` and `import harness` load only what they use.
    if name not in _EXPORTS:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    module, _, attribute = _EXPORTS[name].partition(":")
    if _EXPORTS[name].endswith(":"):
        value = importlib.import_module(module)
    else:
        value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
