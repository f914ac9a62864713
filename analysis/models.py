"""Item analysis of a frozen release: per-item statistics from its leaderboard scores, the flags an
owner acts on, the anchor split, and the items owners chose to leave out of the next release.

Everything here is derived from scores (recomputed by a job when a score is added), except
LeftOut, which is a decision people made."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

DEFAULT_K = 100


class Analysis(models.Model):
    """One release's item analysis for one scoring method (its leaderboard's models of that method)."""

    release = models.ForeignKey("exports.Release", on_delete=models.CASCADE, related_name="+")
    method = models.CharField(max_length=20)
    k = models.PositiveIntegerField(default=DEFAULT_K, help_text="anchor items in the small split")
    # The job that writes it now: an older job (superseded by a newer score) finishes without writing.
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # What the figures were computed from: [{"score", "label", "job"}] in the order of the matrix.
    scored_models = models.JSONField(default=list, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    # {"items", "models", "irt", "flags": {code: n}, "abilities": {label: theta}, "scores": {label: mean}}
    summary = models.JSONField(default=dict, blank=True)
    # The anchor split (benchforge_harness.anchors.Split.to_dict(), validation inside "about"); {} until chosen.
    split = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["release", "method"], name="unique_analysis_method")]

    def __str__(self):
        return f"item analysis of {self.release_id} ({self.method})"


class ScoreResults(models.Model):
    """One score's per-item results as its scoring mode defines them (benchforge_harness.scoring.Mode.item_results),
    read once from its job's rows: {release item id: [value 0-1, label]}. `job` says which scoring run
    they were read from (a score scored again is read again)."""

    score = models.OneToOneField("exports.Score", on_delete=models.CASCADE, related_name="+")
    job_id = models.PositiveBigIntegerField(null=True)
    results = models.JSONField(default=dict)


class Flag(models.TextChoices):
    SATURATED = "saturated", _("Saturated")
    UNANSWERABLE = "unanswerable", _("Unanswerable")
    NEGATIVE = "negative_discrimination", _("Negative discrimination")
    DISAGREEMENT = "judge_disagreement", _("Judge and people disagree")


class ItemStat(models.Model):
    """An item's figures in an analysis: a compact row the page reads (no score is decoded per view)."""

    analysis = models.ForeignKey(Analysis, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=120, help_text="the item's id in the release")
    item_id = models.PositiveBigIntegerField()
    order = models.PositiveIntegerField()
    task = models.CharField(max_length=200)
    question = models.TextField(blank=True)
    expected = models.TextField(blank=True, help_text="its answer key (with the option's text) or reference answer")
    n_models = models.PositiveIntegerField(default=0)
    difficulty = models.FloatField(
        null=True, help_text="mean result (0-1): the share of models right, or the mean normalised score"
    )
    share_right = models.FloatField(null=True)
    discrimination = models.FloatField(
        null=True, help_text="point-biserial: result against the models' scores on the other items"
    )
    irt_a = models.FloatField(null=True)
    irt_b = models.FloatField(null=True)
    ratings = models.PositiveIntegerField(default=0, help_text="people's ratings of answers to it (human evaluation)")
    disagreement = models.FloatField(null=True, help_text="share of those ratings that disagree with the judge")
    flags = models.JSONField(default=list, blank=True)
    flagged = models.BooleanField(default=False)
    anchor = models.BooleanField(default=False)
    # {model label: [value, label]} and {model label: answer (cut)}: what the page shows under the item.
    results = models.JSONField(default=dict, blank=True)
    answers = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["analysis", "order"]
        constraints = [models.UniqueConstraint(fields=["analysis", "key"], name="unique_item_stat")]
        indexes = [
            models.Index(fields=["analysis", "task", "order"]),
            models.Index(fields=["analysis", "order"], condition=Q(flagged=True), name="item_stat_flagged"),
        ]


class LeftOut(models.Model):
    """An item its owners chose to leave out of the releases built from now on (until taken back)."""

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="+")
    item_id = models.PositiveBigIntegerField(help_text="the benchmark item")
    key = models.CharField(max_length=120, help_text="its id in the release it was analysed in")
    release = models.ForeignKey("exports.Release", on_delete=models.CASCADE, related_name="+")
    reason = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["benchmark", "item_id"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "item_id"], name="unique_left_out_item")]
