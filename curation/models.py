from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class Benchmark(models.Model):
    """A benchmark under construction: its taxonomy, images, items and releases hang off it."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    preset = models.CharField(max_length=40, blank=True, help_text="Preset the taxonomy was loaded from, if any.")
    is_external = models.BooleanField(default=False, help_text="Imported from an existing benchmark (e.g. an MMBench TSV).")
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="benchmarks")
    near_dup_threshold = models.PositiveSmallIntegerField(
        default=8, validators=[MaxValueValidator(32)],
        help_text="Images whose perceptual hashes differ by fewer bits than this are near duplicates.",
    )
    min_short_edge = models.PositiveIntegerField(default=512, help_text="Shorter images are flagged as low resolution.")
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
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["order", "name"]
        verbose_name_plural = "categories"
        constraints = [models.UniqueConstraint(fields=["benchmark", "name"], name="unique_category_name")]

    def __str__(self):
        return self.name

    @property
    def path(self) -> str:
        return f"{self.parent.name} / {self.name}" if self.parent_id else self.name


class Task(models.Model):
    """A task type (leaf of the taxonomy) with what collectors and judges need to know."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="tasks")
    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="tasks")
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80)
    description = models.TextField(blank=True)
    collection_keywords = models.JSONField(default=list, blank=True, help_text="Search terms for collecting images.")
    guideline = models.TextField(blank=True, help_text="What annotators must do for this task.")
    judge_rules = models.TextField(blank=True, help_text="Task-specific hints given to the LLM judge.")
    quota = models.PositiveIntegerField(default=0, validators=[MinValueValidator(0)], help_text="Target number of seed items.")
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["category__order", "order", "name"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "slug"], name="unique_task_slug")]

    def __str__(self):
        return self.name
