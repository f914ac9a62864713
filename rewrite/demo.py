"""Demo rewrites for `make run` (development only). With the built-in demo endpoints in the models
file (llm.demo), a real batch: started and run as a user's would be, its demo replies parsed and
checked, waiting for verification, with one approval and one rejection. Without them, a finished
batch of canned, messy replies on two seeds, parsed the way a real batch parses them."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from annotation.models import Item
from annotation.services import create_item
from annotation.workflow import ACCEPTED
from curation.models import Image
from jobs import services as jobs
from llm import demo as llm_demo

from . import services
from .models import BatchSeed, RawReply, Rewrite, RewriteBatch
from .parsing import parse_reply
from .services.verification import similarity_to_seed

DEMO_ENDPOINT = "demo-glm"
SEEDS = [
    ("这张图片里最显眼的颜色是什么？", "最显眼的是大块的暖色调（以画面中面积最大的色块为准）。"),
    ("图中一共有几个椭圆形？", "按画面中完整或部分可见的椭圆逐个计数得到的数量。"),
]


def _variants(question: str) -> list[str]:
    core = question.rstrip("？?。")
    if any("\u4e00" <= ch <= "\u9fff" for ch in question):
        return [
            f"请问{core}？",
            f"能告诉我{core}吗？",
            f"我想了解一下，{core}？",
            f"麻烦看一下：{core}？",
            f"{core}，你能看出来吗？",
            f"{core}呢？",
        ]
    return [f"Could you tell me: {core}?", f"I'd like to know {core}.", f"Please say {core}.", f"Quick question: {core}?"]


def _canned(question: str) -> tuple[str, str | None, str]:
    """A first reply, an optional corrective-retry reply, for the demo's two kinds of mess."""
    v = _variants(question)
    return (
        "好的，以下是改写：\n" + "\n".join(f"{i}. “{t}”" for i, t in enumerate(v[:5], 1)) + "\n希望对你有帮助！",
        None,
        "done",
    )


def _short(question: str) -> tuple[str, str, str]:
    v = _variants(question)
    return ("- " + question + "\n- " + v[0] + "\n- " + v[0] + "\n- 「" + v[1] + "」", v[2] + "\n", "manual")


def _demo_seeds(benchmark, users) -> list[Item]:
    seeds = list(
        Item.objects.filter(benchmark=benchmark, status=ACCEPTED, seed__isnull=True, kind=Item.Kind.SINGLE_TURN)
        .exclude(question="")
        .order_by("pk")[:2]
    )
    if seeds:
        return seeds
    images = Image.objects.filter(benchmark=benchmark, status=Image.Status.ACCEPTED, item_links__isnull=True).order_by("pk")
    made = []
    for image, (question, answer) in zip(images[: len(SEEDS)], SEEDS):
        task = image.tasks.order_by("pk").first() or benchmark.tasks.order_by("pk").first()
        if task is None:
            break
        made.append(
            create_item(
                benchmark,
                task=task,
                user=users["annotator"],
                status=ACCEPTED,
                question=question,
                reference_answer=answer,
                criteria=[{"kind": "soft", "text": "The answer names what the image shows."}],
                images=[image.pk],
            )
        )
    return made


def _run_demo_batch(benchmark, users) -> str:
    """A batch through the product's own service and job, on the demo endpoint."""
    researcher, reviewer = users["researcher"], users["reviewer"]
    with transaction.atomic():
        _demo_seeds(benchmark, users)
    batch = services.start_batch(benchmark, user=researcher, endpoint=llm_demo.ANSWERING[0], n=5)
    jobs.see_through(batch.job)
    batch.refresh_from_db()
    rewrites = list(Rewrite.objects.filter(batch=batch).order_by("seed_id", "position")[:2])
    if len(rewrites) == 2:
        services.approve(rewrites[0], user=reviewer)
        services.reject(rewrites[1], user=reviewer, reason=Rewrite.Reason.FLUENCY)
    return (
        f"Rewrite: batch {batch.number} on {batch.endpoint} ({batch.get_status_display().lower()}), "
        f"{Rewrite.objects.filter(batch=batch).count()} rewrites of {batch.seeds.count()} seeds waiting for verification."
    )


def add_demo(benchmark, users) -> str:
    """Idempotent. `users`: demo users keyed by username (researcher, reviewer, annotator)."""
    if RewriteBatch.objects.filter(benchmark=benchmark, endpoint__in=[DEMO_ENDPOINT, *llm_demo.ANSWERING]).exists():
        return "rewrite demo: already there"
    if llm_demo.demo_endpoints_ready():
        return _run_demo_batch(benchmark, users)
    researcher, reviewer = users["researcher"], users["reviewer"]
    template = services.ensure_default_templates(benchmark, user=researcher)[0]
    with transaction.atomic():
        seeds = _demo_seeds(benchmark, users)
        if not seeds:
            return "rewrite demo: no accepted seed and no unused accepted picture to write one on; skipped"
        number = (RewriteBatch.objects.filter(benchmark=benchmark).aggregate(n=Max("number"))["n"] or 0) + 1
        batch = RewriteBatch.objects.create(
            benchmark=benchmark,
            number=number,
            endpoint=DEMO_ENDPOINT,
            model="glm-4 (canned demo replies)",
            template_version=template.latest,
            n=5,
            status=RewriteBatch.Status.FINISHED,
            estimate={"seeds": len(seeds), "calls": len(seeds), "prompt_tokens": 0, "completion_tokens": 0, "cost": None},
            usage={"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": None, "answered_from_cache": 0},
            created_by=researcher,
        )
        for seed, make in zip(seeds, (_canned, _short)):
            first, retry, state = make(seed.question)
            batch_seed = BatchSeed.objects.create(batch=batch, item=seed, state=state)
            kept: list[str] = []
            for attempt, text in ((RawReply.Attempt.FIRST, first), (RawReply.Attempt.RETRY, retry)):
                if text is None:
                    continue
                parsed = parse_reply(text, seed=seed.question, n=5 - len(kept), existing=kept)
                reply = RawReply.objects.create(
                    batch_seed=batch_seed,
                    attempt=attempt,
                    text=text,
                    dropped=[d.as_dict() for d in parsed.dropped],
                    refusal=parsed.refusal,
                )
                for position, rewrite in enumerate(parsed.rewrites):
                    Rewrite.objects.create(
                        seed=seed,
                        batch=batch,
                        reply=reply,
                        position=position,
                        text=rewrite,
                        similarity_seed=similarity_to_seed(rewrite, seed.question),
                    )
                kept += parsed.rewrites
            batch_seed.valid = len(kept)
            batch_seed.save(update_fields=["valid"])
            services.refresh_similarities(seed.pk)
        first_rewrites = list(Rewrite.objects.filter(seed=seeds[0], batch=batch).order_by("position")[:2])
        services.approve(first_rewrites[0], user=reviewer)
        services.reject(first_rewrites[1], user=reviewer, reason=Rewrite.Reason.FLUENCY)
    return (
        f"rewrite demo: batch {batch.number} with {Rewrite.objects.filter(batch=batch).count()} rewrites of "
        f"{len(seeds)} seeds (one approved, one rejected)"
    )
