"""Releases: a frozen, versioned snapshot of a benchmark (its items, images and taxonomy as they
were) and the files built from it. A frozen release refuses every change: model saves and
deletes, bulk creates and updates, and queryset updates and deletes, of the release and of every
row that belongs to it.

The guard reads the release's status under a lock on its row, in the same transaction as the write
it guards: a freeze (which holds that lock) either commits before the check, which then sees it, or
waits until the write is done. A check made before, then a write, would let a freeze in between."""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.utils.translation import gettext_lazy as _

from annotation.withholding import PARTS, default_private
from benchforge.concurrency import lock_rows
from benchforge.errors import DomainError
from benchforge_harness import scoring

SEMVER = RegexValidator(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$", "Use a semantic version: MAJOR.MINOR.PATCH, e.g. 1.0.0.")
# What a public bundle may withhold (name: words); annotation.withholding is the one home.
PRIVATE_PARTS = {name: part.label for name, part in PARTS.items()}


class FrozenRelease(DomainError):
    status = 409
    code = "release_frozen"


def _refuse(release) -> None:
    raise FrozenRelease(
        f"Release {release.version} of {release.benchmark} is frozen: it never changes. Build a new version instead."
    )


def _refuse_if_frozen(release_ids) -> None:
    """Lock these releases' rows (in id order) and refuse if one of them is frozen. Call it inside
    the transaction of the write it guards."""
    locked = lock_rows(Release.objects.filter(pk__in=release_ids))
    frozen = next((r.pk for r in locked if r.status == Release.Status.FROZEN), None)
    if frozen is not None:
        _refuse(Release.objects.select_related("benchmark").get(pk=frozen))


class FrozenGuardQuerySet(models.QuerySet):
    """Every bulk path (bulk_create, bulk_update, update, delete) is refused when it touches a
    frozen release (or its rows), as save() and delete() are."""

    def release_ids(self):
        raise NotImplementedError

    def release_ids_of(self, objs) -> set:
        """The releases these instances belong to, in memory and as stored (a row moved out of one counts)."""
        raise NotImplementedError

    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        with transaction.atomic(using=self.db):
            _refuse_if_frozen(sorted(self.release_ids_of(objs)))
            return super().bulk_create(objs, *args, **kwargs)

    def bulk_update(self, objs, *args, **kwargs):
        objs = list(objs)
        with transaction.atomic(using=self.db):
            _refuse_if_frozen(sorted(self.release_ids_of(objs)))
            return super().bulk_update(objs, *args, **kwargs)

    def update(self, **kwargs):
        with transaction.atomic(using=self.db):
            _refuse_if_frozen(self.release_ids())
            return super().update(**kwargs)

    def delete(self):
        with transaction.atomic(using=self.db):
            _refuse_if_frozen(self.release_ids())
            return super().delete()


class ReleaseQuerySet(FrozenGuardQuerySet):
    def release_ids(self):
        return list(self.values_list("pk", flat=True))

    def release_ids_of(self, objs) -> set:
        return {obj.pk for obj in objs if obj.pk is not None}


class ReleaseRowQuerySet(FrozenGuardQuerySet):
    def release_ids(self):
        return list(self.values_list("release_id", flat=True).distinct())

    def release_ids_of(self, objs) -> set:
        stored = [obj.pk for obj in objs if obj.pk is not None]
        found = {obj.release_id for obj in objs if obj.release_id is not None}
        if stored:
            found |= set(self.model._base_manager.using(self.db).filter(pk__in=stored).values_list("release_id", flat=True))
        return found


class Release(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        BUILDING = "building", _("Building")
        BUILT = "built", _("Built (not frozen)")
        FROZEN = "frozen", _("Frozen")

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.PROTECT, related_name="releases")
    version = models.CharField(max_length=40, validators=[SEMVER])
    notes = models.TextField(blank=True)
    # What goes in: item statuses and tasks (ids; empty: every task).
    statuses = models.JSONField(default=list)
    tasks = models.JSONField(default=list, blank=True)
    dev_ratio = models.FloatField(default=0.4)
    split_seed = models.IntegerField(default=0)
    private = models.JSONField(
        default=default_private,
        blank=True,
        help_text="what the public bundle withholds (annotation.withholding.PARTS); the private bundle holds everything",
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
    language = models.CharField(max_length=8, blank=True, help_text="the benchmark's language when the release was built")
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
        with transaction.atomic():
            if self.pk:
                _refuse_if_frozen([self.pk])
            super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        with transaction.atomic():
            _refuse_if_frozen([self.pk])
            return super().delete(*args, **kwargs)


class ReleaseRow(models.Model):
    """Base of the rows that belong to a release: they change only while it is not frozen."""

    objects = ReleaseRowQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        with transaction.atomic():
            _refuse_if_frozen([self.release_id])
            super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        with transaction.atomic():
            _refuse_if_frozen([self.release_id])
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
        PUBLIC_TAR = "public.tar.gz", _("Public bundle (.tar.gz)")
        PUBLIC_ZIP = "public.zip", _("Public bundle (.zip)")
        PRIVATE_TAR = "private.tar.gz", _("Private bundle (.tar.gz)")
        PRIVATE_ZIP = "private.zip", _("Private bundle (.zip)")
        PARQUET = "parquet", _("Parquet (Hugging Face datasets layout)")

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


METHOD_TITLES = {
    "pointwise": _("Pointwise judge (1-10) with alignment"),
    "pairwise": _("Pairwise judge against an anchor"),
    "mcq": _("Multiple choice under CircularEval"),
    "touchstone": _("TouchStone: both answers scored from the image description"),
    "hallucination": _("Hallucination degree (0-10, lower is better) from the image description"),
}


class Score(models.Model):
    """One model's result on a frozen release (its leaderboard): scored by the harness's library
    as a job, with the settings that produced it, so the number can be traced and reproduced."""

    # The harness's scoring modes a leaderboard offers (benchforge_harness.scoring.MODES), in its order.
    # Titled in the interface's language; a mode added later shows the harness's (English) title.
    Method = models.TextChoices(
        "Method",
        [
            (mode.name.upper(), (mode.name, METHOD_TITLES.get(mode.name, mode.title)))
            for mode in scoring.MODES.values()
            if mode.leaderboard
        ],
    )

    class Source(models.TextChoices):
        UPLOAD = "upload", _("Uploaded predictions")
        INFER = "infer", _("Asked the endpoint")

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        DONE = "done", _("Scored")
        FAILED = "failed", _("Failed")

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
