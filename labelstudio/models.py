"""What we remember about Label Studio: where a benchmark's server is (never its token), which
projects hold its items, and which task holds which item at which version."""

import os

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

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


class LabelStudioTask(models.Model):
    """One item as a Label Studio task. `pushed_version` is the item version the task was last
    synced with (pushed, refreshed or pulled). An annotation's change conflicts only with a field
    edited here since its last sync (a status change or an edit of another field is no conflict)."""

    link = models.ForeignKey(LabelStudioLink, on_delete=models.CASCADE, related_name="tasks")
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="labelstudio_tasks")
    task_id = models.PositiveIntegerField()
    pushed_version = models.PositiveIntegerField()
    pushed_at = models.DateTimeField(auto_now_add=True)
    # The annotation last applied (or found to change nothing); its updated_at tells a later edit apart.
    pulled_annotation_id = models.PositiveIntegerField(null=True, blank=True)
    pulled_annotation_updated_at = models.CharField(max_length=40, blank=True)
    pulled_at = models.DateTimeField(null=True, blank=True)
    verdict = models.CharField(max_length=20, blank=True, help_text="The annotator's verdict in the last pulled annotation.")
    annotator = models.CharField(max_length=200, blank=True, help_text="Who made the last pulled annotation, in Label Studio.")
    # The fields Label Studio may change: as the task's pre-annotation shows them (what an
    # annotation is read against), and as last synced either way (what a conflict is judged against).
    shown = models.JSONField(default=dict, blank=True)
    synced = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["link_id", "task_id"]
        constraints = [
            models.UniqueConstraint(fields=["link", "item"], name="unique_labelstudio_item_per_project"),
            models.UniqueConstraint(fields=["link", "task_id"], name="unique_labelstudio_task_per_project"),
        ]

    def __str__(self):
        return f"item #{self.item_id} as task {self.task_id}"
