"""Every write of the rewrite app, by domain: prompt templates, batches (estimate, start, the
`rewrite_batch` job) and verification (approve, reject, edit, manual rewrites)."""

from .batches import BATCH_JOB, eligible_seeds, estimate_batch, run_batch, start_batch
from .templates import DEFAULT_NAMES, add_version, create_template, ensure_default_templates
from .verification import add_manual, approve, edit, refresh_similarities, reject

__all__ = [
    "BATCH_JOB",
    "DEFAULT_NAMES",
    "add_manual",
    "add_version",
    "approve",
    "create_template",
    "edit",
    "eligible_seeds",
    "ensure_default_templates",
    "estimate_batch",
    "refresh_similarities",
    "reject",
    "run_batch",
    "start_batch",
]
