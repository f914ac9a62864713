"""QC runs (the text-only and all-fail filters of METHODS section 6, and a judged text-only
variant for open items), what each model answered, what was decided about flagged items, and
where an imported external item came from. Item statuses move only through annotation's
transition table (qc.services.decisions)."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from benchforge_harness import scoring

FILTER_TITLES = {
    "text_only": _("Text-only (answerable without the image)"),
    "all_fail": _("All-fail (no model solves it with the image)"),
    "judged_text_only": _("Judged text-only (open items, scored by a judge)"),
}


class QCRun(models.Model):
    # The filters the harness's scoring modes decide (benchforge_harness.scoring.MODES), titled in the
    # interface's language (the harness's own titles, English, name a filter added later).
    Filter = models.TextChoices(
        "Filter",
        [
            (name.upper(), (name, FILTER_TITLES.get(name, scoring.FILTER_TITLES[name])))
            for mode in scoring.MODES.values()
            for name in mode.filters
        ],
    )

    class Status(models.TextChoices):
        RUNNING = "running", _("Running")
        FINISHED = "finished", _("Finished")
        FAILED = "failed", _("Failed")

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="qc_runs")
    number = models.PositiveIntegerField()
    filter = models.CharField(max_length=20, choices=Filter.choices)
    model_names = models.JSONField(default=list, help_text="endpoint names of the models file, asked in this order")
    extractor = models.CharField(max_length=100, blank=True, help_text="endpoint reading a letter the rules could not")
    judge = models.CharField(max_length=100, blank=True, help_text="endpoint scoring open answers (judged filter)")
    # Text-only and judged: flagged when the share of models solving the item is above this.
    # All-fail: flagged when the share solving it is at most this (0: none solves it).
    threshold = models.FloatField(default=0.5)
    min_score = models.PositiveSmallIntegerField(default=7, help_text="judged filter: a 1-10 grade that counts as solved")
    early_stop = models.BooleanField(default=True)
    parts = models.PositiveSmallIntegerField(default=1)
    scope = models.JSONField(default=dict, blank=True)  # {"tasks": [ids], "items": [ids]} as asked
    estimate = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    jobs = models.ManyToManyField("jobs.Job", blank=True, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["benchmark", "-number"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "number"], name="unique_qc_run_number")]

    def __str__(self):
        return f"QC run {self.number} ({self.get_filter_display()})"

    @property
    def is_mcq(self) -> bool:
        return self.filter != self.Filter.JUDGED_TEXT_ONLY

    @property
    def with_images(self) -> bool:
        return self.filter == self.Filter.ALL_FAIL


class QCItem(models.Model):
    """One item in a run: the filter's verdict, and the decision a person took if it was flagged."""

    class Decision(models.TextChoices):
        REMOVE = "remove", _("Remove")
        KEEP = "keep", _("Keep")
        FIX = "fix", _("Fix")

    run = models.ForeignKey(QCRun, on_delete=models.CASCADE, related_name="entries")
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="qc_entries")
    part = models.PositiveSmallIntegerField(default=0)
    done = models.BooleanField(default=False, help_text="every model asked (or stopped early): the verdict is final")
    solved_by = models.JSONField(default=list, blank=True)
    failed_by = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=list, blank=True)
    not_asked = models.JSONField(default=list, blank=True)
    flagged = models.BooleanField(default=False)
    decision = models.CharField(max_length=8, choices=Decision.choices, blank=True)
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "item_id"]
        constraints = [models.UniqueConstraint(fields=["run", "item"], name="unique_qc_run_item")]
        indexes = [models.Index(fields=["run", "flagged", "decision"]), models.Index(fields=["run", "part"])]


# How an answer was read (QCAnswer.method, the harness's codes), for the adjudication page.
READ_METHODS = {
    "heuristic": _("rules"),
    "heuristic_none": _("rules: none of the options"),
    "extractor": _("LLM extractor"),
    "extractor_none": _("LLM extractor: none of the options"),
    "extractor_error": _("extractor call failed"),
    "unresolved": _("not read"),
    "model_error": _("model call failed"),
    "judged": _("judged"),
    "judge_error": _("judge call failed"),
}


class QCAnswer(models.Model):
    """One model's answer to one pass of an item (options rotated by `shift`), as it was read."""

    run = models.ForeignKey(QCRun, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="qc_answers")
    model = models.CharField(max_length=100)
    shift = models.PositiveSmallIntegerField(default=0, help_text="the pass: options rotated this many places")
    options = models.JSONField(default=dict, blank=True)  # shown letter -> option text
    shown_answer = models.CharField(max_length=1, blank=True)
    output = models.TextField(blank=True)
    letter = models.CharField(max_length=1, blank=True)
    method = models.CharField(max_length=20, blank=True)  # heuristic | extractor | ... | model_error | judged
    correct = models.BooleanField(default=False)
    score = models.PositiveSmallIntegerField(null=True, blank=True, help_text="judge grade 1-10 (judged filter)")
    reason = models.TextField(blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["item_id", "model", "shift"]
        constraints = [models.UniqueConstraint(fields=["run", "item", "model", "shift"], name="unique_qc_answer")]

    @property
    def method_label(self) -> str:
        return READ_METHODS.get(self.method, self.method)


class ExternalSource(models.Model):
    """Where an imported external item came from: the file's row (index, split, line)."""

    item = models.OneToOneField("annotation.Item", on_delete=models.CASCADE, related_name="external_source")
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    format = models.CharField(max_length=20)
    index = models.CharField(max_length=100, blank=True)
    split = models.CharField(max_length=20, blank=True)
    line = models.PositiveIntegerField(null=True, blank=True)
    copies = models.JSONField(default=list, blank=True, help_text="indexes of circular copies collapsed into this item")
