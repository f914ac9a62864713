"""Taxonomy: benchmarks, presets, tasks, members; loading a preset as a job."""

from django.db import transaction
from django.db.models import Q
from django.utils.text import slugify
from django.utils.translation import gettext, gettext_noop, pgettext_lazy

from benchforge.concurrency import create_unique, lock_or_none
from benchforge.errors import AlreadyExists, DomainError
from jobs import reports
from jobs import services as jobs
from jobs.selectors import jobs_of

from ..models import Benchmark, Category, Task
from ..presets import PRESETS, CategorySpec

# The English texts beside a task's own (Task.name_en and the rest).
TASK_ALIASES = ("name_en", "description_en", "guideline_en", "judge_rules_en")


def unique_task_slug(name: str) -> str:
    return slugify(name.replace("/", " ").replace("&", "and"))[:80] or "task"


@transaction.atomic
def preset_language(preset: str) -> str:
    """The language of a benchmark made from `preset` when none is chosen ('' without a preset: the default)."""
    return PRESETS[preset].language if preset in PRESETS else ""


def create_benchmark(
    *, name: str, slug: str = "", description: str = "", user=None, preset: str = "", language: str = ""
) -> Benchmark:
    slug = slug or slugify(name)[:80]
    language = language or preset_language(preset)
    if not slug:
        raise DomainError(gettext("A benchmark needs a name made of letters or digits."))
    benchmark, created = create_unique(
        lambda: Benchmark.objects.create(
            name=name, slug=slug, description=description, created_by=user, **({"language": language} if language else {})
        ),
        lambda: Benchmark.objects.filter(slug=slug).first(),
    )
    if not created:
        raise AlreadyExists(
            f"A benchmark with the slug '{slug}' already exists; choose another name or slug.",
            extra={"existing": {"slug": slug, "name": benchmark.name}},
        )
    if user is not None:
        benchmark.members.add(user)
    if preset:
        load_preset(preset, benchmark=benchmark)
    return benchmark


CREATED_BENCHMARK = "created_benchmark"  # an import job's params: it made its benchmark itself


def discard_created_benchmark(job) -> str:
    """When an import whose file was refused made its benchmark itself and nothing went into it,
    the benchmark goes (a refused file leaves no empty benchmark behind). Returns a sentence for
    the job's message ('' when the benchmark stays)."""
    if job.benchmark_id is None or not job.params.get(CREATED_BENCHMARK):
        return ""
    with transaction.atomic():
        locked = lock_or_none(Benchmark, job.benchmark_id, for_delete=True)
        if locked is None:
            return ""
        if locked.items.exists() or locked.images.exists() or jobs_of(locked).exclude(pk=job.pk).exists():
            return ""
        jobs.detach_benchmark(job)  # the job stays, to say what was wrong
        locked.delete()
    return f"The benchmark '{locked.name}' made for this import was removed again."


@transaction.atomic
def load_preset(key: str, *, benchmark: Benchmark | None = None, slug: str = "", user=None) -> Benchmark:
    """Create or complete a benchmark's taxonomy from a preset.

    Re-running is safe: existing categories and tasks are matched by name/slug and only
    missing ones are added, so researchers' edits (quotas, guidelines) are never overwritten;
    a task's empty description, keywords, guideline or judging text is filled in from the preset.
    """
    preset = PRESETS.get(key)
    if preset is None:
        raise DomainError(f"Unknown preset '{key}'. Available presets: {', '.join(sorted(PRESETS))}.", code="unknown_preset")
    if benchmark is None:
        benchmark, created = Benchmark.objects.get_or_create(
            slug=slug or preset.key,
            defaults={"name": preset.name, "description": preset.description, "language": preset.language, "created_by": user},
        )
        if user is not None:
            benchmark.members.add(user)
    if not benchmark.preset:
        benchmark.preset = preset.key
        benchmark.save(update_fields=["preset"])
    # A benchmark in English made from a Chinese preset takes the preset's English texts as its own.
    english = benchmark.language == "en" and preset.language != "en"

    def add(spec: CategorySpec, parent: Category | None, order: int):
        spec = spec.in_english() if english else spec
        # A category made before it had an English name went by that name: matched either way.
        names = Q(name=spec.name) | (Q(name=spec.name_en) | Q(name_en=spec.name_en) if spec.name_en else Q())
        category = Category.objects.filter(names, benchmark=benchmark).first()
        if category is None:
            category = Category.objects.create(
                benchmark=benchmark,
                name=spec.name,
                name_en=spec.name_en,
                parent=parent,
                description=spec.description,
                order=order,
            )
        for i, task in enumerate(spec.tasks):
            task = task.in_english() if english else task
            texts = {
                "description": task.description,
                "collection_keywords": list(task.keywords),
                "guideline": task.guideline,
                "judge_rules": task.judge_rules,
                "name_en": task.name_en,
                "description_en": task.description_en,
                "guideline_en": task.guideline_en,
                "judge_rules_en": task.judge_rules_en,
            }
            row, created = Task.objects.get_or_create(
                benchmark=benchmark,
                slug=unique_task_slug(task.name_en or task.name),  # a Chinese name has no slug of its own
                defaults={
                    "category": category,
                    "name": task.name,
                    **texts,
                    "quota": task.quota or preset.default_quota,
                    "order": i,
                },
            )
            # A task loaded before the preset carried these texts gets them; one a researcher
            # filled in keeps theirs.
            blank = {field: value for field, value in texts.items() if value and not getattr(row, field)}
            if not created and blank:
                Task.objects.filter(pk=row.pk).update(**blank)
        for j, child in enumerate(spec.children):
            add(child, category, j)

    for order, spec in enumerate(preset.categories):
        add(spec, None, order)
    return benchmark


def update_task(task: Task, **fields) -> Task:
    allowed = {"name", "description", "collection_keywords", "guideline", "judge_rules", "quota", *TASK_ALIASES}
    unknown = set(fields) - allowed
    if unknown:
        raise DomainError(f"These task fields cannot be edited: {', '.join(sorted(unknown))}.")
    for key, value in fields.items():
        setattr(task, key, value)
    task.full_clean()
    task.save()
    return task


def set_members(benchmark: Benchmark, users) -> None:
    benchmark.members.set(users)


def tasks_by_slugs(benchmark: Benchmark, slugs) -> list[Task]:
    slugs = [s for s in slugs if s]
    tasks = list(benchmark.tasks.filter(slug__in=slugs))
    missing = set(slugs) - {t.slug for t in tasks}
    if missing:
        raise DomainError(f"Unknown task(s) in this benchmark: {', '.join(sorted(missing))}.", code="unknown_task")
    return tasks


def start_preset_load(benchmark: Benchmark, preset: str, *, user):
    """Load a preset into a benchmark as a job (the page does not wait for it)."""
    if preset not in PRESETS:
        raise DomainError(f"Unknown preset '{preset}'. Available presets: {', '.join(sorted(PRESETS))}.", code="unknown_preset")
    return jobs.start_job("load_preset", user=user, benchmark=benchmark, total=1, params={"preset": preset})


# What the preset job reports (jobs.reports: shown in the reader's language).
TAXONOMY_HAS = gettext_noop("taxonomy has %(n)s tasks")
reports.declare(TAXONOMY_HAS)
reports.declare_result_labels({"tasks": pgettext_lazy("job result", "Tasks")})


def run_preset_load(run) -> dict:
    preset = run.params["preset"]
    with run.unit(preset) as unit:
        load_preset(preset, benchmark=run.benchmark)
        unit.ok(reports.text(TAXONOMY_HAS, n=run.benchmark.tasks.count()))
    return {"tasks": run.benchmark.tasks.count()}
