"""Job kinds: each app registers the runners of its kinds in its AppConfig.ready().

A runner is `run(job_run) -> dict | None`: it works through its units, records each one with
`job_run.record(key, outcome, ...)`, skips `job_run.done_keys()` (units finished in earlier runs),
and returns the job's summary (None: counts of ok/skipped/error units). The job runner does the
rest: claiming, heartbeat, cancelling, failures, resuming, cleaning staged uploads.
"""

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class JobKind:
    name: str
    run: Callable
    label: str


_KINDS: dict[str, JobKind] = {}


def register(name: str, run: Callable, *, label: str = "") -> JobKind:
    if name in _KINDS and _KINDS[name].run is not run:
        raise ValueError(f"job kind {name!r} is registered twice")
    _KINDS[name] = JobKind(name, run, label or name.replace("_", " "))
    return _KINDS[name]


def get(name: str) -> JobKind:
    try:
        return _KINDS[name]
    except KeyError:
        known = ", ".join(sorted(_KINDS)) or "none"
        raise LookupError(f"no job kind {name!r} is registered (known: {known})") from None


def label(name: str) -> str:
    kind = _KINDS.get(name)
    return kind.label if kind else name.replace("_", " ")


def names() -> list[str]:
    return sorted(_KINDS)


# A job may belong to a benchmark: jobs keeps only its id (jobs sits below curation, which owns
# benchmarks), and asks the lookups curation registers here for the benchmarks themselves.
_benchmarks_by_id: Callable | None = None
_benchmark_ids_with_slug: Callable | None = None


def register_benchmarks(*, by_id: Callable, ids_with_slug: Callable) -> None:
    """`by_id(ids) -> {id: benchmark}`; `ids_with_slug(slug)` -> the ids of benchmarks with that slug
    (a list or a queryset of ids)."""
    global _benchmarks_by_id, _benchmark_ids_with_slug
    _benchmarks_by_id, _benchmark_ids_with_slug = by_id, ids_with_slug


def benchmarks_by_id(ids) -> dict:
    ids = {pk for pk in ids if pk is not None}
    if not ids or _benchmarks_by_id is None:
        return {}
    return _benchmarks_by_id(ids)


def benchmark(benchmark_id):
    """The benchmark numbered `benchmark_id`, or None (no id, or it is gone)."""
    return benchmarks_by_id([benchmark_id]).get(benchmark_id)


def benchmark_ids_with_slug(slug: str):
    return _benchmark_ids_with_slug(slug) if _benchmark_ids_with_slug is not None else []
