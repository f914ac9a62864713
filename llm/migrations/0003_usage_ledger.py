"""The request counter becomes the usage and cost ledger: beside the requests each job run sent,
its cache hits, retries, failures and the tokens it paid for. Jobs run before this kept their paid
tokens in their call entries (data["llm"]["paid_*_tokens"], over every run): those are moved onto
the ledger row of the job's last run at that endpoint, so their pages show the same usage."""

from django.db import migrations, models


def tokens_from_entries(apps, schema_editor):
    Usage = apps.get_model("llm", "Usage")
    JobEntry = apps.get_model("jobs", "JobEntry")
    spent: dict[tuple[int, str], dict] = {}
    for job_id, data in JobEntry.objects.filter(data__has_key="llm").values_list("job_id", "data").iterator(2000):
        info = data.get("llm") or {}
        endpoint = info.get("endpoint") or ""
        if not endpoint:
            continue
        row = spent.setdefault((job_id, endpoint), {"prompt": 0, "completion": 0, "hits": 0, "attempts": 0})
        row["prompt"] += int(info.get("paid_prompt_tokens") or 0)
        row["completion"] += int(info.get("paid_completion_tokens") or 0)
        row["hits"] += bool(info.get("cached")) and not info.get("paid")
        row["attempts"] += int(info.get("attempts") or 0)
    for (job_id, endpoint), row in spent.items():
        last = Usage.objects.filter(job_id=job_id, endpoint=endpoint).order_by("-run").first()
        if last is None:
            Job = apps.get_model("jobs", "Job")
            runs = Job.objects.filter(pk=job_id).values_list("runs", flat=True).first()
            if runs is None:
                continue
            last = Usage(job_id=job_id, run=max(runs, 1), endpoint=endpoint, requests=row["attempts"])
        last.prompt_tokens += row["prompt"]
        last.completion_tokens += row["completion"]
        last.cache_hits += row["hits"]
        last.save()


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0003_unsent"),
        ("llm", "0002_sent_requests"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="sentrequests", name="unique_sent_requests"),
        migrations.RenameModel(old_name="SentRequests", new_name="Usage"),
        migrations.AlterModelOptions(name="usage", options={"verbose_name_plural": "usage"}),
        migrations.AlterField(
            model_name="usage",
            name="requests",
            field=models.PositiveIntegerField(default=0, help_text="HTTP requests sent, retries included"),
        ),
        migrations.AddField(
            model_name="usage",
            name="cache_hits",
            field=models.PositiveIntegerField(default=0, help_text="calls answered from the response cache"),
        ),
        migrations.AddField(
            model_name="usage",
            name="retries",
            field=models.PositiveIntegerField(default=0, help_text="requests sent again after a failed attempt"),
        ),
        migrations.AddField(
            model_name="usage",
            name="failures",
            field=models.PositiveIntegerField(default=0, help_text="calls that failed for good"),
        ),
        migrations.AddField(model_name="usage", name="prompt_tokens", field=models.PositiveBigIntegerField(default=0)),
        migrations.AddField(model_name="usage", name="completion_tokens", field=models.PositiveBigIntegerField(default=0)),
        migrations.AddConstraint(
            model_name="usage",
            constraint=models.UniqueConstraint(fields=("job", "run", "endpoint"), name="unique_usage_row"),
        ),
        migrations.RunPython(tokens_from_entries, migrations.RunPython.noop),
    ]
