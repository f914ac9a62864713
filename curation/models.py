from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Case, F, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from benchforge_harness import DEFAULT_LANGUAGE, LANGUAGES

# The languages a benchmark may be in: those the scoring harness has prompts in.
# The harness's languages, named in the interface's language.
LANGUAGE_NAMES = {"en": _("English"), "zh": _("Simplified Chinese")}
BENCHMARK_LANGUAGES = [(code, LANGUAGE_NAMES.get(code, name)) for code, name in LANGUAGES.items()]


class Benchmark(models.Model):
    """A benchmark under construction: its taxonomy, images, items and releases hang off it."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    preset = models.CharField(max_length=40, blank=True, help_text=_("Preset the taxonomy was loaded from, if any."))
    language = models.CharField(
        max_length=8,
        choices=BENCHMARK_LANGUAGES,
        default=DEFAULT_LANGUAGE,
        help_text=_("The language of its questions: the scoring harness asks and judges in it."),
    )
    is_external = models.BooleanField(default=False, help_text=_("Imported from an existing benchmark (e.g. an MMBench TSV)."))
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="benchmarks")
    near_dup_threshold = models.PositiveSmallIntegerField(
        default=8,
        validators=[MaxValueValidator(32)],
        help_text=_("Images whose perceptual hashes differ by fewer bits than this are near duplicates."),
    )
    min_short_edge = models.PositiveIntegerField(default=512, help_text=_("Shorter images are flagged as low resolution."))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Category(models.Model):
    """A group of tasks. `parent` gives deeper trees (MMBench L1 -> L2; tasks are the L3 leaves)."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="categories")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    name = models.CharField(max_length=200, help_text=_("In the benchmark's language."))
    name_en = models.CharField(max_length=200, blank=True, help_text=_("English name, shown in the English interface."))
    description = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["order", "name"]
        verbose_name_plural = "categories"
        constraints = [models.UniqueConstraint(fields=["benchmark", "name"], name="unique_category_name")]

    def __str__(self):
        return self.display_name

    @property
    def display_name(self) -> str:
        return category_name(self.name, self.name_en)

    @property
    def path(self) -> str:
        return f"{self.parent.name} / {self.name}" if self.parent_id else self.name

    @property
    def display_path(self) -> str:
        """The path as this interface names it (`path` is the stored names, for data)."""
        return f"{self.parent.display_name} / {self.display_name}" if self.parent_id else self.display_name


def english_interface() -> bool:
    """Whether the page is in English (any interface language but Chinese): English aliases show."""
    return not (get_language() or "").lower().startswith("zh")


def category_name(name: str, name_en: str = "") -> str:
    """A category as this interface names it: its English alias in the English interface."""
    return name_en if name_en and english_interface() else name


def task_name(name: str, name_en: str = "") -> str:
    """A task as this interface names it: the benchmark's own name (e.g. "计数") in the Chinese
    interface; in the English one the English alias with the original beside it ("Counting · 计数"),
    so an English-speaking researcher and a Chinese annotator can tell they mean the same task."""
    if name_en and name_en != name and english_interface():
        return f"{name_en} · {name}"
    return name


def task_label(name: str, category: str, parent: str | None = None) -> str:
    """A task as people read it, with its category: "Counting (Perception & Understanding)",
    "OCR (Perception / Fine-grained Single-instance Perception)"."""
    return f"{name} ({parent} / {category})" if parent else f"{name} ({category})"


def taxonomy_order(via: str = "") -> list:
    """Order rows by their task's place in the taxonomy (`via`: the path to the task, e.g.
    "task__"): the top-level category, then the category under it (tasks directly under a
    top-level category first), then the task's own order and name. The one definition of
    "taxonomy order": task lists, selects and per-task tables all use it."""
    category = f"{via}category__"
    return [
        Coalesce(F(f"{category}parent__order"), F(f"{category}order")).asc(),
        Coalesce(F(f"{category}parent__name"), F(f"{category}name")).asc(),
        Case(
            When(**{f"{category}parent__isnull": True}, then=Value(-1)),
            default=F(f"{category}order"),
            output_field=models.IntegerField(),
        ).asc(),
        F(f"{category}name").asc(),
        F(f"{via}order").asc(),
        F(f"{via}name").asc(),
    ]


class Task(models.Model):
    """A task type (leaf of the taxonomy) with what collectors and judges need to know."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="tasks")
    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="tasks")
    # The texts are in the benchmark's language (what annotators read and the judge is given);
    # the *_en aliases are what the English interface shows beside them, when they differ.
    name = models.CharField(max_length=200, help_text=_("In the benchmark's language."))
    name_en = models.CharField(max_length=200, blank=True, help_text=_("English name, shown in the English interface."))
    slug = models.SlugField(max_length=80)
    description = models.TextField(blank=True)
    description_en = models.TextField(blank=True)
    collection_keywords = models.JSONField(default=list, blank=True, help_text=_("Search terms for collecting images."))
    guideline = models.TextField(blank=True, help_text=_("What annotators must do for this task."))
    guideline_en = models.TextField(
        blank=True, help_text=_("The guideline in English, shown beside it in the English interface.")
    )
    judge_rules = models.TextField(blank=True, help_text=_("Task-specific hints given to the LLM judge."))
    judge_rules_en = models.TextField(
        blank=True, help_text=_("The judge rules in English, for people (the judge gets the rules above).")
    )
    quota = models.PositiveIntegerField(default=0, validators=[MinValueValidator(0)], help_text=_("Target number of seed items."))
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = taxonomy_order()
        constraints = [models.UniqueConstraint(fields=["benchmark", "slug"], name="unique_task_slug")]

    def __str__(self):
        return self.display_name

    @property
    def display_name(self) -> str:
        return task_name(self.name, self.name_en)

    @property
    def label(self) -> str:
        """The task as people read it, with its category: "Counting (Perception & Understanding)".
        Load the task with select_related("category__parent") where many are shown."""
        category = self.category
        return task_label(self.display_name, category.display_name, category.parent.display_name if category.parent_id else None)

    def english_texts(self) -> dict[str, str]:
        """The English texts the English interface shows beside the task's own ({} in the Chinese
        interface, and for a field without an alias or whose alias is the same text)."""
        if not english_interface():
            return {}
        pairs = {"description": self.description_en, "guideline": self.guideline_en, "judge_rules": self.judge_rules_en}
        return {field: text for field, text in pairs.items() if text and text != getattr(self, field)}


# ---- images, screening, contamination (hash values: signed 64-bit, see curation.imaging) ----


class Image(models.Model):
    """One distinct picture in a benchmark. The file is content-addressed by SHA-256, so the
    same bytes are stored once on disk; the same MD5 exists at most once per benchmark."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        ACCEPTED = "accepted", _("Accepted")
        REJECTED = "rejected", _("Rejected")

    class RejectReason(models.TextChoices):
        UNIDENTIFIABLE = "unidentifiable", _("Unidentifiable objects or text")
        PRIVACY = "privacy", _("Personal privacy")
        OFFENSIVE = "offensive", _("Offensive content")
        SIMILAR = "similar", _("Similar to an image already included")
        LOW_QUALITY = "low_quality", _("Low quality")
        OTHER = "other", _("Other (see note)")

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="images")
    file = models.FileField(max_length=200, help_text="images/aa/bb/<sha256>.<ext> under MEDIA_ROOT")
    thumbnail = models.FileField(max_length=200, blank=True)
    original_name = models.CharField(max_length=255, blank=True)
    sha256 = models.CharField(max_length=64, db_index=True)
    md5 = models.CharField(max_length=32)
    phash = models.BigIntegerField()
    dhash = models.BigIntegerField()
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    format = models.CharField(max_length=8)
    file_size = models.PositiveIntegerField()
    animated = models.BooleanField(default=False)

    source = models.CharField(max_length=1000, blank=True, help_text="Where the image came from (URL, photographer, dataset).")
    license = models.CharField(max_length=200, blank=True)
    collected_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    collected_at = models.DateTimeField(default=timezone.now)
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    tasks = models.ManyToManyField(Task, blank=True, related_name="images")

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    reject_reason = models.CharField(max_length=20, choices=RejectReason.choices, blank=True)
    reject_note = models.TextField(blank=True)
    screened_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    screened_at = models.DateTimeField(null=True, blank=True)

    low_resolution = models.BooleanField(default=False)
    near_duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="near_duplicates"
    )
    near_duplicate_distance = models.PositiveSmallIntegerField(null=True, blank=True, help_text="pHash bits apart")
    near_duplicate_resolved = models.BooleanField(default=False, help_text="A person kept it after seeing the pair.")
    contaminated = models.BooleanField(default=False, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "md5"], name="unique_image_md5_per_benchmark")]
        indexes = [models.Index(fields=["benchmark", "status"])]

    def __str__(self):
        return f"image #{self.pk} {self.sha256[:12]}"

    @property
    def needs_near_dup_review(self) -> bool:
        return self.near_duplicate_of_id is not None and not self.near_duplicate_resolved


class KnownImageSet(models.Model):
    """Images that must not enter a benchmark (an SFT dataset, a prior benchmark...),
    known by MD5 and/or pHash. Sets apply to every benchmark."""

    class Kind(models.TextChoices):
        SFT = "sft", _("SFT / training dataset")
        BENCHMARK = "benchmark", _("Prior benchmark")
        OTHER = "other", _("Other")

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.OTHER)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class KnownHash(models.Model):
    known_set = models.ForeignKey(KnownImageSet, on_delete=models.CASCADE, related_name="hashes")
    md5 = models.CharField(max_length=32, blank=True, db_index=True)
    phash = models.BigIntegerField(null=True, blank=True)
    label = models.CharField(max_length=500, blank=True, help_text=_("Id or file name in the original set."))

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~models.Q(md5="") | models.Q(phash__isnull=False), name="known_hash_has_a_hash")
        ]


class ContaminationMatch(models.Model):
    class Kind(models.TextChoices):
        MD5 = "md5", _("Same bytes (MD5)")
        PHASH = "phash", _("Perceptual hash")

    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="contamination_matches")
    known_set = models.ForeignKey(KnownImageSet, on_delete=models.CASCADE, related_name="matches")
    known_hash = models.ForeignKey(KnownHash, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    distance = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["image_id", "distance"]
        constraints = [models.UniqueConstraint(fields=["image", "known_set"], name="one_match_per_image_and_set")]
