"""What we remember about Label Studio: where a benchmark's server is (never its token), which
projects hold its items, and which task holds which item at which version."""

import copy
import os

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

URL_ENV = "LABEL_STUDIO_URL"
DEFAULT_TOKEN_ENV = "LABEL_STUDIO_API_KEY"
# Only variables made for Label Studio can be named: a researcher must not be able to send
# another secret of the server's environment (SECRET_KEY, a database password) to a URL they chose.
TOKEN_ENV_PATTERN = r"^LABEL_STUDIO_[A-Z0-9_]+$"
token_env_validator = RegexValidator(TOKEN_ENV_PATTERN, "Name a variable starting with LABEL_STUDIO_ (capitals, digits, _).")


class LabelStudioConnection(models.Model):
    """A benchmark's Label Studio server and the environment variable holding the access token."""

    benchmark = models.OneToOneField("curation.Benchmark", on_delete=models.CASCADE, related_name="labelstudio_connection")
    url = models.URLField(blank=True, help_text=f"Empty: the {URL_ENV} environment variable.")
    token_env = models.CharField(
        max_length=100,
        default=DEFAULT_TOKEN_ENV,
        validators=[token_env_validator],
        help_text="Name of the environment variable that holds the Label Studio access token.",
    )
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"Label Studio for {self.benchmark}"

    @property
    def server_url(self) -> str:
        return (self.url or os.environ.get(URL_ENV, "")).rstrip("/")


class LabelStudioLink(models.Model):
    """A Label Studio project holding items of a benchmark."""

    # What a pull does with a Label Studio change to an item past review (answered, in review,
    # accepted and later): leave it unapplied for a decision on the project's page (the default:
    # reviewed work stays as it was reviewed), or apply it and send the item through review again.
    class Reviewed(models.TextChoices):
        HOLD = "hold", _("leave it unapplied for a decision here")
        REVIEW = "review", _("apply it and send the item through review again")

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="labelstudio_links")
    url = models.CharField(max_length=300, help_text="The Label Studio server the project lives on.")
    project_id = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_pulled_at = models.DateTimeField(null=True, blank=True)
    # Set when Label Studio answered that the project no longer exists: pulls of every project
    # skip it (and say so) until it is unlinked.
    gone_at = models.DateTimeField(null=True, blank=True)
    reviewed = models.CharField(max_length=8, choices=Reviewed.choices, default=Reviewed.HOLD)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["url", "project_id"], name="unique_labelstudio_project"),
            models.UniqueConstraint(fields=["benchmark", "url", "title"], name="unique_labelstudio_project_title"),
        ]

    def __str__(self):
        return f"{self.title} (Label Studio project {self.project_id})"

    @property
    def project_url(self) -> str:
        return f"{self.url.rstrip('/')}/projects/{self.project_id}/data"

    def task_url(self, task_id: int) -> str:
        return f"{self.project_url}?task={task_id}"


class LabelStudioTask(models.Model):
    """One item as a Label Studio task, and the sync state between the two (values by key, see
    labelstudio.adapter.field_values):

    - `baseline`: the values both sides last agreed on (after a push or refresh, a pull that
      applied, a decision). Every merge is three-way against it.
    - `shown`, `prefill`: the values the task's pre-annotation shows, and which Label Studio
      prediction that is ({"prediction": id, "at": when Label Studio made it}); `earlier`: the
      task's previous pre-annotations (newest first, each with the baseline of its time, kept up
      to date with later agreements), for annotations started before a refresh.
    - `pushed_version`: the item version the task shows (data and pre-annotation); only a push
      or refresh sets it, so a re-push refreshes every task whose item changed since.
    - `pulled`: {annotation id: updated_at} of the annotations read already (an edited one is
      read again); `pending`: {key: decision} of what waits for the researcher on the project's
      page (a conflict, a disagreement between annotators, a change to an item past review).
    """

    link = models.ForeignKey(LabelStudioLink, on_delete=models.CASCADE, related_name="tasks")
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="labelstudio_tasks")
    task_id = models.PositiveIntegerField()
    pushed_version = models.PositiveIntegerField(help_text="The item version the task shows.")
    pushed_at = models.DateTimeField(auto_now_add=True)
    pulled = models.JSONField(default=dict, blank=True)
    pulled_at = models.DateTimeField(null=True, blank=True)
    verdict = models.CharField(max_length=20, blank=True, help_text="The annotator's verdict in the last pulled annotation.")
    annotator = models.CharField(max_length=200, blank=True, help_text="Who made the last pulled annotation, in Label Studio.")
    baseline = models.JSONField(default=dict, blank=True)
    shown = models.JSONField(default=dict, blank=True)
    prefill = models.JSONField(default=dict, blank=True)
    earlier = models.JSONField(default=list, blank=True)
    pending = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["link_id", "task_id"]
        constraints = [
            models.UniqueConstraint(fields=["link", "item"], name="unique_labelstudio_item_per_project"),
            models.UniqueConstraint(fields=["link", "task_id"], name="unique_labelstudio_task_per_project"),
        ]

    def __str__(self):
        return f"item #{self.item_id} as task {self.task_id}"

    def prefills(self) -> list[dict]:
        """The task's pre-annotations, current first, each {"prediction", "at", "shown", "base"}."""
        return copy.deepcopy([{**self.prefill, "shown": self.shown, "base": self.baseline}, *self.earlier])
