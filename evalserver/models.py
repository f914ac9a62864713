"""Submission windows on a frozen release, the outside teams that submit to them, and what they
submitted. A submission's score is an exports.Score scored on the leaderboard's one path; the
window records which items it scores and, when asked, the seeded shown/hidden division of them."""

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Window(models.Model):
    class Split(models.TextChoices):
        TEST = "test", _("Test split (the hidden answers)")
        DEV = "dev", _("Dev split (a practice phase)")

    class Registration(models.TextChoices):
        INVITE = "invite", _("By invitation link")
        OPEN = "open", _("Open registration")

    release = models.ForeignKey("exports.Release", on_delete=models.PROTECT, related_name="+")
    title = models.CharField(max_length=120)
    split = models.CharField(max_length=8, choices=Split.choices, default=Split.TEST)
    method = models.CharField(max_length=20)
    judge = models.CharField(max_length=100, blank=True)
    anchor = models.ForeignKey("exports.Score", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    opens_at = models.DateTimeField()
    closes_at = models.DateTimeField()
    daily_limit = models.PositiveIntegerField(default=3)
    total_limit = models.PositiveIntegerField(default=30)
    cost_cap_submission = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    cost_cap_team = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    hidden_fraction = models.FloatField(default=0.0, help_text="share of the split kept hidden until the window closes")
    split_seed = models.IntegerField(default=0)
    items = models.JSONField(default=list, help_text="the ids a submission answers (the split's open questions)")
    shown_items = models.JSONField(default=list, help_text="the seeded shown part (all items when nothing is hidden)")
    registration = models.CharField(max_length=8, choices=Registration.choices, default=Registration.INVITE)
    # Off by default: outside teams' models are not the owners', and their scores are on items the
    # owners withhold; item analysis and the internal leaderboard read them only when asked to.
    feeds_analysis = models.BooleanField(
        default=False, help_text="teams' scores also join the release's internal leaderboard and item analysis"
    )
    invite_token = models.CharField(max_length=64, default=new_secret)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-opens_at"]

    def __str__(self):
        return self.title

    @property
    def is_open(self) -> bool:
        return self.opens_at <= timezone.now() < self.closes_at

    @property
    def is_closed(self) -> bool:
        return timezone.now() >= self.closes_at

    @property
    def has_hidden_part(self) -> bool:
        return len(self.shown_items) < len(self.items)


class Team(models.Model):
    window = models.ForeignKey(Window, on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=80)
    join_code = models.CharField(max_length=64, default=new_secret)
    token_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the team's API token")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["window", "name"], name="unique_team_name_per_window")]

    def __str__(self):
        return self.name


class Membership(models.Model):
    window = models.ForeignKey(Window, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="eval_memberships")
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["window", "user"], name="one_team_per_window")]


class Submission(models.Model):
    window = models.ForeignKey(Window, on_delete=models.PROTECT, related_name="submissions")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.PROTECT, related_name="submissions")
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    model_name = models.CharField(max_length=100)
    score = models.OneToOneField("exports.Score", on_delete=models.PROTECT, related_name="+")
    sha256 = models.CharField(max_length=64, blank=True)
    size = models.PositiveBigIntegerField(default=0)
    estimated_cost = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    is_baseline = models.BooleanField(default=False)
    published = models.BooleanField(default=False)
    link = models.URLField(max_length=500, blank=True, help_text="paper or code")
    hidden_reason = models.CharField(max_length=500, blank=True, help_text="set by a researcher: off the public board")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["team", "created_at"], name="evalserver_team_day")]

    def __str__(self):
        return f"{self.model_name} ({self.team or 'baseline'})"
