"""One baseline per task (the values both sides last agreed on, by key), the task's pre-annotations,
the annotations read, the decisions waiting on the project's page, and a per-project rule for items
past review.

Existing rows: the old `synced` record (updated by pulls) becomes the baseline, `shown` stays what
the pre-annotation shows, the one pulled annotation goes into `pulled`. A row a pull touched had its
`pushed_version` moved to the item's version although the task kept showing older values: it is set
to 0 so that the next push refreshes the task."""

from django.db import migrations, models

CRITERIA = 3


def _by_key(values: dict) -> dict:
    """labelstudio.adapter.field_values as of this migration (the app's may change later)."""
    if not values:
        return {}
    flat = {
        "question": values.get("question") or "",
        "question_type": values.get("question_type") or "",
        "choices": list(values.get("choices") or []),
        "answer": values.get("answer") or "",
        "reference_answer": values.get("reference_answer") or "",
        "description": values.get("description") or "",
    }
    criteria = list(values.get("criteria") or [])
    for n in range(1, CRITERIA + 1):
        criterion = criteria[n - 1] if n <= len(criteria) else {}
        flat[f"criterion_{n}_kind"] = criterion.get("kind") or ""
        flat[f"criterion_{n}_text"] = criterion.get("text") or ""
    return flat


def forward(apps, schema_editor):
    Task = apps.get_model("labelstudio", "LabelStudioTask")
    for row in Task.objects.all().iterator(chunk_size=500):
        row.baseline = _by_key(row.synced or row.shown)
        row.shown = _by_key(row.shown or row.synced)
        if row.pulled_annotation_id:
            row.pulled = {str(row.pulled_annotation_id): row.pulled_annotation_updated_at}
        if row.pulled_at is not None:
            row.pushed_version = 0
        row.save(update_fields=["baseline", "shown", "pulled", "pushed_version"])


class Migration(migrations.Migration):
    dependencies = [
        ("labelstudio", "0002_sync_state_and_gone_projects"),
    ]

    operations = [
        migrations.AddField(
            model_name="labelstudiolink",
            name="reviewed",
            field=models.CharField(
                choices=[
                    ("hold", "leave it unapplied for a decision here"),
                    ("review", "apply it and send the item through review again"),
                ],
                default="hold",
                max_length=8,
            ),
        ),
        migrations.AddField(model_name="labelstudiotask", name="baseline", field=models.JSONField(blank=True, default=dict)),
        migrations.AddField(model_name="labelstudiotask", name="prefill", field=models.JSONField(blank=True, default=dict)),
        migrations.AddField(model_name="labelstudiotask", name="earlier", field=models.JSONField(blank=True, default=list)),
        migrations.AddField(model_name="labelstudiotask", name="pending", field=models.JSONField(blank=True, default=dict)),
        migrations.AddField(model_name="labelstudiotask", name="pulled", field=models.JSONField(blank=True, default=dict)),
        migrations.AlterField(
            model_name="labelstudiotask",
            name="pushed_version",
            field=models.PositiveIntegerField(help_text="The item version the task shows."),
        ),
        migrations.RunPython(forward, migrations.RunPython.noop),
        migrations.RemoveField(model_name="labelstudiotask", name="synced"),
        migrations.RemoveField(model_name="labelstudiotask", name="pulled_annotation_id"),
        migrations.RemoveField(model_name="labelstudiotask", name="pulled_annotation_updated_at"),
    ]
