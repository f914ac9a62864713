"""A human-evaluation study: people rate model answers that a judge already scored on a frozen
release, blind, so the platform can say how far the judge's verdicts follow theirs.

A study takes its items from leaderboard scores (the model's answer and the judge's verdict are
stored with the score); every rating a rater owes exists from the start as a row without a value,
so a rater's queue, progress and the balance of the assignment are plain queries."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Study(models.Model):
    class Mode(models.TextChoices):
        POINTWISE = "pointwise", _("Pointwise scores (1-10 with a reason)")
        PAIRWISE = "pairwise", _("Pairwise votes against the anchor")
        EXTRACTION = "extraction", _("Choice-extraction checks (which option a reply commits to)")

    class Status(models.TextChoices):
        OPEN = "open", _("Open")
        CLOSED = "closed", _("Closed")

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="studies")
    release = models.ForeignKey("exports.Release", on_delete=models.PROTECT, related_name="+")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    mode = models.CharField(max_length=12, choices=Mode.choices)
    scores = models.ManyToManyField("exports.Score", related_name="+")
    per_task = models.PositiveIntegerField(help_text="items sampled per task")
    ratings_per_item = models.PositiveSmallIntegerField(default=2)
    seed = models.BigIntegerField(default=0)
    minutes_per_rating = models.FloatField(default=1.5, help_text="for the rater-hours estimate")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    cited_on_card = models.BooleanField(default=False, help_text="the release's card page cites this closed study")
    validates = models.BooleanField(
        default=False,
        help_text="a researcher marked this study as the validation of its scores' judges (the leaderboard shows it)",
    )
    # Counts every save and import of a rating: the stored figures (StudyFigures) say which count
    # they were computed at.
    ratings_version = models.PositiveIntegerField(default=0)
    figures_queued = models.BooleanField(default=False, help_text="a job to recompute the figures is on its way")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "number"], name="unique_study_number")]

    def __str__(self):
        return f"study {self.number}: {self.title}"


class StudyRater(models.Model):
    """A member picked to rate; known in every export and figure by a pseudonym only."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="raters")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    pseudonym = models.CharField(max_length=40)
    seed = models.BigIntegerField(help_text="shuffles this rater's item order and answer sides")

    class Meta:
        ordering = ["pseudonym"]
        constraints = [
            models.UniqueConstraint(fields=["study", "pseudonym"], name="unique_study_pseudonym"),
            models.UniqueConstraint(fields=["study", "user"], name="unique_study_rater"),
        ]


class StudyItem(models.Model):
    """One model's answer to one release item, with the judge's verdict on it (never shown to raters)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    score = models.ForeignKey("exports.Score", on_delete=models.PROTECT, related_name="+")
    key = models.CharField(max_length=120, help_text="the release item's id")
    task = models.CharField(max_length=200)
    category = models.CharField(max_length=200, blank=True)
    answer = models.TextField()
    anchor_answer = models.TextField(blank=True)
    # {"rating": 7} (pointwise), {"outcome": "model"|"anchor"|"split"|"unable_one"|..., "votes": [v1, v2]}
    # (pairwise) or {"choice": "B"|"none"|None, "reader": "rule"|"extractor"|"", "method"} (extraction:
    # what the MCQ scoring read from the reply, by rule or by its LLM extractor)
    judge = models.JSONField(default=dict)
    # extraction: the options as that pass showed them ({shown letter: text}) and which pass it was
    options = models.JSONField(default=dict, blank=True)
    pass_index = models.PositiveSmallIntegerField(null=True, blank=True)
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["study", "score", "key"], name="unique_study_answer")]


class Rating(models.Model):
    """A rating one rater owes or gave: a score, a vote or a choice by the study's mode. `vote` is the side chosen (model, anchor, unable_one,
    unable_two), already translated from the positions the rater saw (`anchor_first`)."""

    class Source(models.TextChoices):
        PLATFORM = "platform", _("Rated here")
        IMPORT = "import", _("Imported")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="ratings")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="ratings")
    rater = models.ForeignKey(StudyRater, on_delete=models.CASCADE, related_name="ratings")
    position = models.PositiveIntegerField(help_text="place in this rater's queue")
    anchor_first = models.BooleanField(default=False)
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    vote = models.CharField(max_length=12, blank=True)
    choice = models.CharField(max_length=4, blank=True, help_text="extraction: the shown letter read, or none")
    reason = models.TextField(blank=True)
    saved_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.PLATFORM)

    class Meta:
        ordering = ["rater", "position"]
        constraints = [models.UniqueConstraint(fields=["item", "rater"], name="unique_rating_per_rater")]
        indexes = [models.Index(fields=["rater", "saved_at", "position"], name="rating_queue")]

    @property
    def is_saved(self) -> bool:
        return self.saved_at is not None


class RatingTally(models.Model):
    """How many ratings one rater owes on one score's answers in a study, and how many of them are
    saved: kept as ratings are created, saved for the first time and imported (services), so
    progress and the leaderboard's counts add up a few of these rows instead of counting a study's
    ratings on every page."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="tallies")
    rater = models.ForeignKey(StudyRater, on_delete=models.CASCADE, related_name="tallies")
    score = models.ForeignKey("exports.Score", on_delete=models.PROTECT, related_name="+")
    owed = models.PositiveIntegerField(default=0)
    saved = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rater", "score"], name="unique_tally_per_rater_score")]


class StudyFigures(models.Model):
    """A study's agreement figures, computed from its saved ratings when they change
    (services.refresh_figures): pages read them and never recompute them at scale."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, primary_key=True, related_name="stored_figures")
    figures = models.JSONField()
    version = models.PositiveIntegerField(help_text="the study's ratings_version they were computed at")
    ratings = models.PositiveIntegerField(help_text="saved ratings they were computed from")
    computed_at = models.DateTimeField(auto_now=True)
