"""Writes of the qc app, by domain (re-exported here: callers import `qc.services`):

runs.py       scope, estimate, start_run, and the `qc_run` job (run_qc_part)
sink.py       the harness Sink that keeps a run's calls as job entries (resumable)
decisions.py  remove / keep / fix a flagged item
imports.py    external benchmarks (MMBench TSV, MLLM-Bench, AlignMMBench) as the `qc_import` job
"""

from .decisions import decide
from .imports import FORMATS, IMPORT_JOB, import_path, run_import, start_import
from .runs import QC_RUN_JOB, estimate, harness_item, run_qc_part, scope, start_run

__all__ = [
    "FORMATS",
    "IMPORT_JOB",
    "QC_RUN_JOB",
    "decide",
    "estimate",
    "harness_item",
    "import_path",
    "run_import",
    "run_qc_part",
    "scope",
    "start_import",
    "start_run",
]
