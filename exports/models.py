"""Releases: a frozen, versioned snapshot of a benchmark (its items, images and taxonomy as they
were) and the files built from it. A frozen release refuses every change: model saves and
deletes, and queryset updates and deletes, of the release and of every row that belongs to it."""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from benchforge.errors import DomainError

SEMVER = RegexValidator(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$", "Use a semantic version: MAJOR.MINOR.PATCH, e.g. 1.0.0.")
PRIVATE_PARTS = {
    "test_answers": "answer keys of the test split",
    "reference_answers": "reference answers",
    "criteria": "per-sample criteria",
}


class FrozenRelease(DomainError):
    status = 409
    code = "release_frozen"


def _refuse(release) -> None:
    raise FrozenRelease(
        f"Release {release.version} of {release.benchmark} is frozen: it never changes. Build a new version instead."
    )


class FrozenGuardQuerySet(models.QuerySet):
    """Bulk updates and deletes are refused when they touch a frozen release (or its rows)."""

    def frozen_release(self):
        raise NotImplementedError

    def update(self, **kwargs):
        frozen = self.frozen_release()
        if frozen is not None:
            _refuse(frozen)
        return super().update(**kwargs)

    def delete(self):
        frozen = self.frozen_release()
        if frozen is not None:
            _refuse(frozen)
        return super().delete()


class ReleaseQuerySet(FrozenGuardQuerySet):
    def frozen_release(self):
        return self.filter(status=Release.Status.FROZEN).select_related("benchmark").first()


class ReleaseRowQuerySet(FrozenGuardQuerySet):
    def frozen_release(self):
        return (
            Release.objects.filter(status=Release.Status.FROZEN, pk__in=self.values("release_id"))
            .select_related("benchmark")
            .first()
        )


class Release(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        BUILDING = "building", "Building"
        BUILT = "built", "Built (not frozen)"
        FROZEN = "frozen", "Frozen"

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.PROTECT, related_name="releases")
    version = models.CharField(max_length=40, validators=[SEMVER])
    notes = models.TextField(blank=True)
    # What goes in: item statuses and tasks (ids; empty: every task).
    statuses = models.JSONField(default=list)
    tasks = models.JSONField(default=list, blank=True)
    dev_ratio = models.FloatField(default=0.4)
    split_seed = models.IntegerField(default=0)
    private = models.JSONField(
        default=list, blank=True, help_text="what the public bundle withholds: " + ", ".join(PRIVATE_PARTS)
    )
    license = models.CharField(max_length=200, default="CC BY-NC-SA 4.0")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    source = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="the release this one is compared with",
    )
    # Filled by the build: the snapshot's time (the manifest's created_at), taxonomy, numbers.
    built_at = models.DateTimeField(null=True, blank=True)
    taxonomy = models.JSONField(default=dict, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    construction = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    frozen_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    frozen_at = models.DateTimeField(null=True, blank=True)

    objects = ReleaseQuerySet.as_manager()

    class Meta:
        ordering = ["benchmark", "-created_at"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "version"], name="unique_release_version")]

    def __str__(self):
        return f"{self.benchmark.slug} {self.version}"

    @property
    def is_frozen(self) -> bool:
        return self.status == self.Status.FROZEN

    @property
    def top(self) -> str:
        """The folder name inside its archives."""
        return f"{self.benchmark.slug}-{self.version}"

    def save(self, *args, **kwargs):
        if self.pk and type(self).objects.filter(pk=self.pk, status=self.Status.FROZEN).exists():
            _refuse(self)
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self.pk and type(self).objects.filter(pk=self.pk, status=self.Status.FROZEN).exists():
            _refuse(self)
        return super().delete(*args, **kwargs)


class ReleaseRow(models.Model):
    """Base of the rows that belong to a release: they change only while it is not frozen."""

    objects = ReleaseRowQuerySet.as_manager()

    class Meta:
        abstract = True

    def _check_release(self):
        if Release.objects.filter(pk=self.release_id, status=Release.Status.FROZEN).exists():
            _refuse(Release.objects.get(pk=self.release_id))

    def save(self, *args, **kwargs):
        self._check_release()
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        self._check_release()
        return super().delete(*args, **kwargs)


class ReleaseItem(ReleaseRow):
    """One question as the release holds it: its items.jsonl row (everything, private parts
    included) and where it came from."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=120, help_text="the item's id in the release (items.jsonl 'id')")
    item_id = models.PositiveBigIntegerField(help_text="the benchmark item it was taken from")
    task = models.CharField(max_length=200)
    split = models.CharField(max_length=8)
    row = models.JSONField()
    provenance = models.JSONField(default=dict)
    order = models.PositiveIntegerField()

    class Meta:
        ordering = ["release", "order"]
        constraints = [models.UniqueConstraint(fields=["release", "key"], name="unique_release_item_key")]


class ReleaseImage(ReleaseRow):
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="images")
    name = models.CharField(max_length=120, help_text="images/<sha256>.<ext> inside the bundle")
    sha256 = models.CharField(max_length=64)
    storage_name = models.CharField(max_length=300)
    size = models.PositiveBigIntegerField()
    source = models.CharField(max_length=1000, blank=True)
    license = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["release", "name"]
        constraints = [models.UniqueConstraint(fields=["release", "name"], name="unique_release_image")]


class ReleaseFile(ReleaseRow):
    class Kind(models.TextChoices):
        PUBLIC_TAR = "public.tar.gz", "Public bundle (.tar.gz)"
        PUBLIC_ZIP = "public.zip", "Public bundle (.zip)"
        PRIVATE_TAR = "private.tar.gz", "Private bundle (.tar.gz)"
        PRIVATE_ZIP = "private.zip", "Private bundle (.zip)"
        PARQUET = "parquet", "Parquet (Hugging Face datasets layout)"

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="files")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    storage_name = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()

    class Meta:
        ordering = ["release", "kind"]
        constraints = [models.UniqueConstraint(fields=["release", "kind"], name="unique_release_file")]

    @property
    def is_private(self) -> bool:
        return self.kind.startswith("private")


class Score(models.Model):
    """One model's result on a frozen release (its leaderboard): scored by the harness's library
    as a job, with the settings that produced it, so the number can be traced and reproduced."""

    class Method(models.TextChoices):
        POINTWISE = "pointwise", "Pointwise judge (1-10) with alignment"
        PAIRWISE = "pairwise", "Pairwise judge against an anchor"
        MCQ = "mcq", "Multiple choice under CircularEval"

    class Source(models.TextChoices):
        UPLOAD = "upload", "Uploaded predictions"
        INFER = "infer", "Asked the endpoint"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        DONE = "done", "Scored"
        FAILED = "failed", "Failed"

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="scores")
    label = models.CharField(max_length=100, help_text="the model's name on the leaderboard")
    method = models.CharField(max_length=20, choices=Method.choices)
    source = models.CharField(max_length=10, choices=Source.choices)
    endpoint = models.CharField(max_length=100, blank=True, help_text="the model's endpoint (source: infer)")
    judge = models.CharField(max_length=100, blank=True, help_text="judge endpoint (pointwise, pairwise)")
    anchor = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # {release item id: answer}; what was uploaded, or what the endpoint answered.
    answers = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    results = models.JSONField(default=dict, blank=True)
    scored_with = models.JSONField(default=dict, blank=True, help_text="release, bundle, harness and judge settings")
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.label} on {self.release} ({self.method})"
