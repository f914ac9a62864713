"""Rewrite batches: which seeds, what a batch would cost, starting it, and its job.

The job (`rewrite_batch`) asks every seed once through llm.services.run_calls, then once more,
with a corrective message, each seed whose reply had too few usable rewrites; a seed still short
needs a manual rewrite. Each call is a unit of the job, written together with its reply and
rewrites, so a resumed job (after a failure, a cancel or a killed worker) asks only what was not
recorded, and the shared response cache answers what a dead worker had already paid for.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.models import Item
from annotation.workflow import ACCEPTED
from benchforge import permissions
from benchforge.concurrency import lock
from benchforge.errors import Conflict, DomainError
from benchforge_harness.llm import estimate_text_tokens
from curation.models import Benchmark
from jobs import services as jobs
from llm import services as llm
from llm.client import check_endpoints, get_client, get_endpoint
from llm.selectors import job_usage

from .. import prompts
from ..models import BatchSeed, RawReply, Rewrite, RewriteBatch, TemplateVersion
from ..parsing import parse_reply
from ..similarity import max_similarity, sibling_similarities
from .templates import ensure_default_templates
from .verification import refresh_similarities, similarity_to_seed

BATCH_JOB = "rewrite_batch"
MAX_N = 10
RETRY_SUFFIX = "-retry"


def eligible_seeds(benchmark, *, include_mcq: bool = False, items=None):
    """Accepted seed items (never a rewrite) with a question: single-turn, plus multiple-choice
    when asked; multi-turn never. Without `items`, seeds already in a batch are left out."""
    kinds = [Item.Kind.SINGLE_TURN] + ([Item.Kind.MCQ] if include_mcq else [])
    seeds = Item.objects.filter(benchmark=benchmark, status=ACCEPTED, seed__isnull=True, kind__in=kinds).exclude(question="")
    if items is None:
        seeds = seeds.exclude(rewrite_batch_seeds__isnull=False)
    else:
        ids = {getattr(item, "pk", item) for item in items}
        seeds = seeds.filter(pk__in=ids)
        found = set(seeds.values_list("pk", flat=True))
        if found != ids:
            missing = sorted(ids - found)
            listed = ", ".join(f"#{pk}" for pk in missing[:10])
            if include_mcq:
                message = _(
                    "Item(s) %(items)s cannot be rewritten here: a seed must be an accepted item of this benchmark with "
                    "a question, single-turn or multiple-choice (multi-turn items are never rewritten)."
                )
            else:
                message = _(
                    "Item(s) %(items)s cannot be rewritten here: a seed must be an accepted item of this benchmark with "
                    "a question, single-turn (multi-turn items are never rewritten; multiple-choice only when asked)."
                )
            raise DomainError(message % {"items": listed})
    return seeds.order_by("pk")


def _version(benchmark, template_version) -> TemplateVersion:
    if template_version is None:
        # The default Chinese template, created with the benchmark's first estimate.
        return ensure_default_templates(benchmark)[0].latest
    pk = getattr(template_version, "pk", template_version)
    version = TemplateVersion.objects.select_related("template").filter(pk=pk, template__benchmark=benchmark).first()
    if version is None:
        raise DomainError(_("Choose a prompt template of this benchmark."))
    return version


def _check_n(n) -> int:
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise DomainError(_("The number of rewrites per seed must be a whole number.")) from None
    if not 1 <= n <= MAX_N:
        raise DomainError(_("Ask for 1 to %(max)s rewrites per seed.") % {"max": MAX_N})
    return n


def _first_messages(version: TemplateVersion, question: str, kind: str, choices, n: int) -> list[dict]:
    return prompts.first_messages(
        version.text,
        question=question,
        n=n,
        language=version.template.language,
        choices=choices if kind == Item.Kind.MCQ else (),
    )


def seed_key(item_id: int) -> str:
    return f"seed-{item_id}"


def estimate_batch(
    benchmark, *, endpoint: str, template_version=None, n: int = 5, include_mcq: bool = False, items=None, params=None
) -> dict:
    """What a batch would ask and cost: seeds, calls, estimated prompt and completion tokens and
    cost (None: the endpoint has no prices). A corrective retry adds up to one call per seed."""
    n = _check_n(n)
    version = _version(benchmark, template_version)
    rows = list(eligible_seeds(benchmark, include_mcq=include_mcq, items=items).values_list("pk", "question", "kind", "choices"))
    if not rows:
        raise DomainError(
            _(
                "No seed to rewrite: the benchmark has no accepted single-turn or multiple-choice item that is not already in a batch."
            )
            if include_mcq
            else _("No seed to rewrite: the benchmark has no accepted single-turn item that is not already in a batch.")
        )
    calls = [
        {"key": seed_key(pk), "messages": _first_messages(version, question, kind, choices, n), "params": dict(params or {})}
        for pk, question, kind, choices in rows
    ]
    # A reply is about n times the seed, plus line breaks.
    per_call = round(sum(estimate_text_tokens(question) for _pk, question, _k, _c in rows) / len(rows) * n * 1.2) + n
    estimate = llm.estimate(calls, endpoint=endpoint, expected_completion_tokens=per_call)
    return {"seeds": len(rows), **estimate, "n": n}


def start_batch(
    benchmark,
    *,
    user,
    endpoint: str,
    template_version=None,
    n: int = 5,
    include_mcq: bool = False,
    items=None,
    params: dict | None = None,
) -> RewriteBatch:
    """Store a batch over the eligible seeds (or those of `items`) and queue its job."""
    permissions.require_researcher(user, "Starting a rewrite batch")
    version = _version(benchmark, template_version)
    params = dict(params or {})
    estimate = estimate_batch(
        benchmark, endpoint=endpoint, template_version=version, n=n, include_mcq=include_mcq, items=items, params=params
    )
    # Before anything is stored: the endpoint exists, its key is set and its SDK installed (as QC and
    # the leaderboard check), so a batch never starts only to fail on its first request.
    with get_client() as client:
        check_endpoints(client, [endpoint])
    with transaction.atomic():
        # Batches of a benchmark take turns here: the seeds are read after the lock, so a batch started
        # twice at once (a double click) does not send the same seeds twice, and numbers never collide.
        lock(Benchmark, benchmark.pk)
        seed_ids = list(eligible_seeds(benchmark, include_mcq=include_mcq, items=items).values_list("pk", flat=True))
        if not seed_ids:
            raise Conflict(_("No seed to rewrite: another batch started meanwhile took every eligible seed."))
        number = (RewriteBatch.objects.filter(benchmark=benchmark).aggregate(n=Max("number"))["n"] or 0) + 1
        batch = RewriteBatch.objects.create(
            benchmark=benchmark,
            number=number,
            endpoint=endpoint,
            model=get_endpoint(endpoint).model,
            template_version=version,
            n=estimate["n"],
            include_mcq=include_mcq,
            params=params,
            estimate={k: estimate[k] for k in ("seeds", "calls", "prompt_tokens", "completion_tokens", "cost")},
            created_by=user,
        )
        BatchSeed.objects.bulk_create([BatchSeed(batch=batch, item_id=pk) for pk in seed_ids], batch_size=500)
        job = jobs.create_job(BATCH_JOB, user=user, benchmark=benchmark, total=len(seed_ids), params={"batch": batch.pk})
        RewriteBatch.objects.filter(pk=batch.pk).update(job=job)
        jobs.enqueue(job)
    batch.refresh_from_db()
    return batch


# ---------------------------------------------------------------- the job


def _parsed(batch: RewriteBatch, seed: BatchSeed, attempt: int, result, *, n: int, existing: list[str]):
    """The reply and its rewrites as unsaved rows, and the texts kept. `existing`: every rewrite the
    seed already has (any batch, by hand): a reply repeating one is not stored again, and each new
    rewrite's sibling similarity compares with them as well as with the reply's other rewrites."""
    question = seed.item.question
    parsed = parse_reply(result.text, seed=question, n=n, existing=existing)
    reply = RawReply(
        batch_seed_id=seed.pk,
        attempt=attempt,
        text=result.text,
        usage=result.usage,
        cached=result.cached,
        dropped=[d.as_dict() for d in parsed.dropped],
        refusal=parsed.refusal,
    )
    siblings = [
        max(within, max_similarity(text, existing))
        for text, within in zip(parsed.rewrites, sibling_similarities(parsed.rewrites))
    ]
    rewrites = [
        Rewrite(
            seed_id=seed.item_id,
            batch=batch,
            position=position,
            text=text,
            similarity_seed=similarity_to_seed(text, question),
            similarity_siblings=siblings[position],
        )
        for position, text in enumerate(parsed.rewrites)
    ]
    return reply, rewrites, parsed.rewrites


class _GroupWriter:
    """Replies of a group of answered calls, parsed by on_result and written in a few bulk queries
    by run_calls' on_group hook, in the transaction that records the group's entries: they commit
    with their entries or not at all (a killed worker leaves neither, and a resumed job asks those
    calls again, from the cache)."""

    def __init__(self):
        self.pending: list[tuple[RawReply, list[Rewrite], BatchSeed]] = []

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        if not pending:
            return
        replies = RawReply.objects.bulk_create([reply for reply, _rewrites, _seed in pending])
        rewrites = []
        for reply, (_r, rows, _seed) in zip(replies, pending):
            for row in rows:
                row.reply_id = reply.pk
            rewrites += rows
        Rewrite.objects.bulk_create(rewrites)
        # One UPDATE per (valid, state): almost always a single one ("done" with n rewrites).
        groups: dict[tuple[int, str], list[int]] = {}
        for _reply, _rows, seed in pending:
            groups.setdefault((seed.valid, seed.state), []).append(seed.pk)
        for (valid, state), ids in groups.items():
            BatchSeed.objects.filter(pk__in=ids).update(valid=valid, state=state)


def run_batch(run) -> dict:
    """Runner of "rewrite_batch": first requests, then corrective retries; usage and cost on the batch."""
    batch = RewriteBatch.objects.select_related("template_version__template").get(pk=run.params["batch"])
    RewriteBatch.objects.filter(pk=batch.pk).update(status=RewriteBatch.Status.RUNNING, finished_at=None)
    asking = _BatchRun(run, batch)
    run.say(
        _("Asking '%(endpoint)s' for %(n)s rewrites of each of %(seeds)s seeds.")
        % {"endpoint": batch.endpoint, "n": batch.n, "seeds": len(asking.rows)}
    )
    asking.ask_first()
    short = asking.short_seeds()
    if short:
        run.say(_("%(n)s seed(s) had too few usable rewrites: asking each once more.") % {"n": len(short)})
        asking.ask_again(short)
    return _finish_batch(run, batch, calls=len(asking.rows) + asking.retries_done + len(short))


class _BatchRun:
    """A rewrite batch's job run, its state explicit: the seeds (by id and by call key), what each
    seed already has, and the writer that stores a group of first replies with its entries."""

    def __init__(self, run, batch: RewriteBatch) -> None:
        self.run, self.batch, self.n = run, batch, batch.n
        self.version = batch.template_version
        self.rows = {
            seed.pk: seed
            for seed in BatchSeed.objects.filter(batch=batch)
            .select_related("item")
            .only("id", "state", "valid", "item_id", "item__question", "item__kind", "item__choices")
        }
        self.by_key = {seed_key(seed.item_id): seed for seed in self.rows.values()}
        self.by_key.update({seed_key(seed.item_id) + RETRY_SUFFIX: seed for seed in self.rows.values()})
        # What each seed already has (another batch, by hand, an earlier run of this job): a reply that
        # repeats one of them is not stored again, and similarity hints compare with all of them.
        self.existing: dict[int, list[str]] = {}
        seed_ids = [seed.item_id for seed in self.rows.values()]
        for seed_id, text in Rewrite.objects.filter(seed_id__in=seed_ids).values_list("seed_id", "text"):
            self.existing.setdefault(seed_id, []).append(text)
        self.retries_done = sum(1 for key in run.done_keys() if key.endswith(RETRY_SUFFIX))
        self.writer = _GroupWriter()

    def _messages(self, item) -> list[dict]:
        return _first_messages(self.version, item.question, item.kind, item.choices, self.n)

    # ------------------------------------------------------------ first requests

    def ask_first(self) -> None:
        calls = (llm.Call(seed_key(s.item.pk), self._messages(s.item), self.batch.params) for s in self.rows.values())
        total = len(self.rows) + self.retries_done
        llm.run_calls(
            self.run, calls, endpoint=self.batch.endpoint, on_result=self.on_first, on_group=self.writer.flush, total=total
        )
        # The rewrites the seeds had before gained new siblings: their own hints are brought up to date.
        for seed_id in sorted(self.existing):
            refresh_similarities(seed_id)

    def on_first(self, result):
        """Parsing only: the writer stores the group's replies with its entries."""
        if not result.ok:
            return None
        seed = self.by_key[result.call.key]
        existing = self.existing.get(seed.item_id, [])
        reply, rewrites, kept = _parsed(self.batch, seed, RawReply.Attempt.FIRST, result, n=self.n, existing=existing)
        state = BatchSeed.State.DONE if len(kept) >= self.n else BatchSeed.State.PENDING
        self.writer.pending.append((reply, rewrites, BatchSeed(pk=seed.pk, valid=len(kept), state=state)))
        return {"rewrite": {"kept": len(kept)}}

    # ------------------------------------------------------------ corrective retries

    def short_seeds(self) -> list[BatchSeed]:
        """Seeds whose first reply gave too few rewrites and that were not asked again yet."""
        return list(
            BatchSeed.objects.filter(batch=self.batch, state=BatchSeed.State.PENDING, replies__attempt=RawReply.Attempt.FIRST)
            .exclude(replies__attempt=RawReply.Attempt.RETRY)
            .select_related("item")
            .order_by("pk")
        )

    def ask_again(self, short: list[BatchSeed]) -> None:
        first = {r.batch_seed_id: r for r in RawReply.objects.filter(batch_seed__in=short, attempt=RawReply.Attempt.FIRST)}
        calls = (self._retry_call(seed, first[seed.pk]) for seed in short)
        total = len(self.rows) + self.retries_done + len(short)
        llm.run_calls(self.run, calls, endpoint=self.batch.endpoint, on_result=self.on_retry, total=total)

    def _retry_call(self, seed: BatchSeed, first: RawReply) -> llm.Call:
        item = seed.item
        messages = prompts.retry_messages(
            self._messages(item),
            first.text,
            question=item.question,
            kept=seed.valid,
            missing=self.n - seed.valid,
            language=self.version.template.language,
            refusal=first.refusal,
        )
        return llm.Call(seed_key(item.pk) + RETRY_SUFFIX, messages, self.batch.params)

    def on_retry(self, result):
        if not result.ok:
            return None
        seed = self.by_key[result.call.key]
        mine = Rewrite.objects.filter(reply__batch_seed_id=seed.pk).count()
        before = list(Rewrite.objects.filter(seed_id=seed.item_id).values_list("text", flat=True))
        reply, rewrites, kept = _parsed(
            self.batch, seed, RawReply.Attempt.RETRY, result, n=max(0, self.n - mine), existing=before
        )
        reply.save()
        for row in rewrites:
            row.reply = reply
        Rewrite.objects.bulk_create(rewrites)
        refresh_similarities(seed.item_id)
        valid = mine + len(kept)
        state = BatchSeed.State.DONE if valid >= self.n else BatchSeed.State.MANUAL
        BatchSeed.objects.filter(pk=seed.pk).update(valid=valid, state=state)
        return {"rewrite": {"kept": len(kept)}}


def _finish_batch(run, batch: RewriteBatch, *, calls: int) -> dict:
    """The batch's usage, cost and seed states stored and said; the job fails when calls failed."""
    summary = job_usage([run.job], get_endpoint(batch.endpoint), calls=calls)
    usage = {k: summary[k] for k in ("requests", "prompt_tokens", "completion_tokens", "cost", "answered_from_cache")}
    states = dict.fromkeys(BatchSeed.State.values, 0)
    for state in BatchSeed.objects.filter(batch=batch).values_list("state", flat=True):
        states[state] += 1
    seeds = sum(states.values())
    rewrites = Rewrite.objects.filter(batch=batch).count()
    result = {
        "seeds": seeds,
        "rewritten": states[BatchSeed.State.DONE],
        "needs_manual": states[BatchSeed.State.MANUAL],
        "pending": states[BatchSeed.State.PENDING],
        "rewrites": rewrites,
        "calls": summary["calls"],
        "errors": summary["errors"],
        **usage,
        "cost": usage["cost"] if usage["cost"] is not None else "unknown",
        "estimated_cost": batch.estimate.get("cost") if batch.estimate.get("cost") is not None else "unknown",
    }
    failed = summary["errors"] > 0
    RewriteBatch.objects.filter(pk=batch.pk).update(
        usage=usage,
        status=RewriteBatch.Status.FAILED if failed else RewriteBatch.Status.FINISHED,
        finished_at=timezone.now(),
    )
    run.say(
        _(
            "%(done)s of %(seeds)s seeds rewritten, %(manual)s need a manual rewrite; %(rewrites)s rewrites to verify; "
            "%(requests)s requests, cost %(cost)s."
        )
        % {
            "done": states[BatchSeed.State.DONE],
            "seeds": seeds,
            "manual": states[BatchSeed.State.MANUAL],
            "rewrites": rewrites,
            "requests": f"{summary['requests']:,}",
            "cost": _("unknown") if result["cost"] == "unknown" else result["cost"],
        }
    )
    if failed:
        run.fail(
            _("%(n)s call(s) failed (%(errors)s). Resume the job to ask them again: answered seeds are not asked again.")
            % {"n": summary["errors"], "errors": "; ".join(summary["first_errors"])},
            result=result,  # the usage shows on the failed job
        )
    return result
