"""Reads of the rewrite app: templates, batches and their seeds, what a seed's verification page
shows, provenance of approved rewrites (for releases) and the per-benchmark numbers."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count, Q
from django.http import Http404

from annotation.models import Item
from annotation.selectors import with_payload_data
from jobs.selectors import work_state
from llm.selectors import usage_of

from .models import BatchSeed, PromptTemplate, RawReply, Rewrite, RewriteBatch, TemplateVersion
from .parsing import DROP_REASONS
from .similarity import is_near_copy


def templates_of(benchmark):
    return PromptTemplate.objects.filter(benchmark=benchmark).prefetch_related("versions")


def get_template(benchmark, pk: int) -> PromptTemplate:
    template = PromptTemplate.objects.filter(benchmark=benchmark, pk=pk).first()
    if template is None:
        raise Http404("No such template in this benchmark.")
    return template


def template_versions(benchmark):
    """Every version of every template, newest first within a template (for a batch form)."""
    return (
        TemplateVersion.objects.filter(template__benchmark=benchmark)
        .select_related("template")
        .order_by("template__name", "-number")
    )


def batches_of(benchmark):
    return (
        RewriteBatch.objects.filter(benchmark=benchmark)
        .select_related("template_version__template", "job", "created_by")
        .annotate(
            seed_count=Count("seeds", distinct=True),
            manual_count=Count("seeds", filter=Q(seeds__state=BatchSeed.State.MANUAL), distinct=True),
        )
    )


def batch_list(benchmark, limit: int = 50) -> list[RewriteBatch]:
    """The newest batches, each with `state` (batch_state) for the list."""
    batches = list(batches_of(benchmark)[:limit])
    for batch in batches:
        batch.state = batch_state(batch)
    return batches


def get_batch(benchmark, number: int) -> RewriteBatch:
    batch = batches_of(benchmark).filter(number=number).first()
    if batch is None:
        raise Http404("No such rewrite batch in this benchmark.")
    return batch


def batch_overview(batch: RewriteBatch) -> dict:
    """Seeds by state, rewrites by state, the estimate next to what was paid, the job."""
    seeds = Counter(dict(batch.seeds.values_list("state").annotate(n=Count("id")).order_by()))
    rewrites = Counter(dict(batch.rewrites.values_list("state").annotate(n=Count("id")).order_by()))
    return {
        "seeds": {state: seeds.get(state, 0) for state in BatchSeed.State.values},
        "seed_total": sum(seeds.values()),
        "rewrites": {state: rewrites.get(state, 0) for state in Rewrite.State.values},
        "rewrite_total": sum(rewrites.values()),
        "estimate": batch.estimate,
        "usage": batch_usage(batch),
        "job": batch.job,
        "state": batch_state(batch),
    }


def batch_usage(batch: RewriteBatch) -> dict:
    """What the batch's job spent so far, from the usage ledger (while it runs, too); a batch
    without a job (the demo's) shows what it recorded."""
    if batch.job_id is None:
        return batch.usage
    spent = usage_of([batch.job_id])["endpoints"].get(batch.endpoint)
    if spent is None:
        return batch.usage
    keys = ("requests", "prompt_tokens", "completion_tokens", "cost")
    return {**{key: spent[key] for key in keys}, "answered_from_cache": spent["cache_hits"]}


def batch_state(batch: RewriteBatch) -> dict:
    """What a person sees, read from the batch's job (jobs.selectors.work_state): while the job is
    not finished, or when it failed or was cancelled, the job's state (with its reason); once it
    succeeded, the batch's. A job that died before the batch recorded its end shows "Failed" or
    "Interrupted", never "Running" forever. `resumable`: Resume applies (a researcher's action)."""
    return work_state([batch.job], label=batch.get_status_display(), code=batch.status)


def batch_seeds(batch: RewriteBatch, *, state: str = ""):
    rows = batch.seeds.select_related("item").annotate(
        pending=Count("item__rewrite_candidates", filter=Q(item__rewrite_candidates__state=Rewrite.State.PENDING), distinct=True)
    )
    rows = rows.order_by("id")
    return rows.filter(state=state) if state else rows


def seeds_to_verify(benchmark, user=None):
    """Seed items with rewrites still to verify, oldest seed first. With `user`: only rewrites they
    may approve (not ones they wrote by hand or edited: someone else approves those)."""
    rewrites = Rewrite.objects.filter(state=Rewrite.State.PENDING)
    if user is not None:
        rewrites = rewrites.exclude(source=Rewrite.Source.MANUAL, created_by=user).exclude(edited=True, edited_by=user)
    return Item.objects.filter(benchmark=benchmark, pk__in=rewrites.values("seed_id")).order_by("pk")


def waiting_for(user, benchmark):
    """The navigation's Rewrite count: seeds with rewrites this user may verify."""
    return seeds_to_verify(benchmark, user)


def next_seed(benchmark, *, after: int | None = None, user=None) -> Item | None:
    seeds = seeds_to_verify(benchmark, user)
    if after is not None:
        later = seeds.filter(pk__gt=after).first()
        return later or seeds.exclude(pk=after).first()
    return seeds.first()


def get_seed(benchmark, item_id: int) -> Item:
    seed = with_payload_data(Item.objects.filter(benchmark=benchmark, pk=item_id, seed__isnull=True)).first()
    if seed is None:
        raise Http404("No such seed item in this benchmark.")
    return seed


def seed_rewrites(seed: Item, *, order: str = "") -> list[Rewrite]:
    """The seed's rewrites; order "similarity": most similar (to the seed or a sibling) first."""
    rows = list(
        Rewrite.objects.filter(seed=seed)
        .select_related("batch", "reply", "decided_by", "created_by", "edited_by", "item")
        .order_by("id")
    )
    if order == "similarity":
        rows.sort(key=lambda r: -max(r.similarity_seed, r.similarity_siblings))
    return rows


def seed_replies(seed: Item) -> list[dict]:
    """Every raw reply for the seed, with what parsing left out of it."""
    replies = RawReply.objects.filter(batch_seed__item=seed).select_related("batch_seed__batch").order_by("created_at", "id")
    return [
        {
            "reply": reply,
            "batch": reply.batch_seed.batch,
            "dropped": [{"line": d["line"], "reason": DROP_REASONS.get(d["reason"], d["reason"])} for d in reply.dropped],
        }
        for reply in replies
    ]


def seed_batch_state(seed: Item) -> BatchSeed | None:
    return BatchSeed.objects.filter(item=seed).select_related("batch").order_by("-batch__number").first()


def rewrite_count(item: Item) -> dict:
    """For the item editor: how many approved rewrites a seed has (and how many wait), or, for a
    rewrite, its seed."""
    if item.seed_id:
        return {"is_rewrite": True, "seed": item.seed_id}
    counts = Counter(dict(Rewrite.objects.filter(seed=item).values_list("state").annotate(n=Count("id")).order_by()))
    return {
        "is_rewrite": False,
        "approved": counts.get(Rewrite.State.APPROVED, 0),
        "pending": counts.get(Rewrite.State.PENDING, 0),
        "rejected": counts.get(Rewrite.State.REJECTED, 0),
    }


def provenance(item_ids) -> dict[int, dict]:
    """For approved rewrite items: where each came from. Keys: batch (id), batch_number, model,
    endpoint, template, template_version, source ("llm" | "manual"), edited. Items that are not
    approved rewrites are absent."""
    rows = Rewrite.objects.filter(item_id__in=list(item_ids), state=Rewrite.State.APPROVED).select_related(
        "batch__template_version__template"
    )
    found = {}
    for row in rows:
        batch = row.batch
        version = batch.template_version if batch else None
        found[row.item_id] = {
            "batch": batch.pk if batch else None,
            "batch_number": batch.number if batch else None,
            "model": batch.model if batch else None,
            "endpoint": batch.endpoint if batch else None,
            "template": version.template.name if version else None,
            "template_version": version.number if version else None,
            "source": row.source,
            "edited": row.edited,
        }
    return found


def rewrite_stats(benchmark) -> dict:
    """Seeds rewritten, rewrites generated / approved / rejected by reason, approved per seed."""
    rewrites = Rewrite.objects.filter(seed__benchmark=benchmark)
    states = Counter(dict(rewrites.values_list("state").annotate(n=Count("id")).order_by()))
    sources = Counter(dict(rewrites.values_list("source").annotate(n=Count("id")).order_by()))
    reasons = Counter(
        dict(rewrites.filter(state=Rewrite.State.REJECTED).values_list("reason").annotate(n=Count("id")).order_by())
    )
    per_seed = Counter(
        dict(rewrites.filter(state=Rewrite.State.APPROVED).values_list("seed_id").annotate(n=Count("id")).order_by())
    )
    seeds_in_batches = BatchSeed.objects.filter(batch__benchmark=benchmark).values("item_id").distinct().count()
    needs_manual = (
        BatchSeed.objects.filter(batch__benchmark=benchmark, state=BatchSeed.State.MANUAL)
        .exclude(item__rewrite_candidates__state=Rewrite.State.APPROVED)
        .values("item_id")
        .distinct()
        .count()
    )
    considered = set(rewrites.values_list("seed_id", flat=True).distinct())
    distribution = Counter(per_seed.get(seed, 0) for seed in considered)
    rewritten = len(per_seed)
    approved = states.get(Rewrite.State.APPROVED, 0)
    near_copies = sum(
        1 for a, b in rewrites.values_list("similarity_seed", "similarity_siblings") if is_near_copy(a) or is_near_copy(b)
    )
    return {
        "batches": RewriteBatch.objects.filter(benchmark=benchmark).count(),
        "seeds_in_batches": seeds_in_batches,
        "seeds_rewritten": rewritten,
        "seeds_needing_manual": needs_manual,
        "generated": sources.get(Rewrite.Source.LLM, 0),
        "manual": sources.get(Rewrite.Source.MANUAL, 0),
        "near_copies": near_copies,
        "pending": states.get(Rewrite.State.PENDING, 0),
        "approved": approved,
        "rejected": states.get(Rewrite.State.REJECTED, 0),
        "rejected_by_reason": {code: reasons.get(code, 0) for code in Rewrite.Reason.values},
        "approved_per_seed": {str(k): distribution[k] for k in sorted(distribution)},
        "mean_approved_per_seed": round(approved / rewritten, 2) if rewritten else None,
    }


def reason_labels() -> dict[str, str]:
    return {code: str(label) for code, label in Rewrite.Reason.choices}


def get_rewrite(benchmark, pk: int) -> Rewrite:
    rewrite = Rewrite.objects.select_related("seed", "batch").filter(seed__benchmark=benchmark, pk=pk).first()
    if rewrite is None:
        raise Http404("No such rewrite in this benchmark.")
    return rewrite


def rewrite_panel(benchmark) -> dict:
    """rewrite_stats plus the rejection reasons as (label, count) for pages (the dashboard's panel)."""
    stats = rewrite_stats(benchmark)
    labels = reason_labels()
    stats["rejected_labelled"] = [(labels[code], n) for code, n in stats["rejected_by_reason"].items() if n]
    return stats
