from django.conf import settings
from django.db import models

from .workflow import DRAFT, STATUS_CHOICES


class Item(models.Model):
    """One question of a benchmark. Fleshed out by the authoring work (issue 4)."""

    benchmark = models.ForeignKey("curation.Benchmark", on_delete=models.CASCADE, related_name="items")
    task = models.ForeignKey("curation.Task", on_delete=models.PROTECT, related_name="items")
    question = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=DRAFT, db_index=True)
    version = models.PositiveIntegerField(default=1)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="authored_items")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["benchmark", "task", "status"])]

    def __str__(self):
        return f"Item #{self.pk}"
