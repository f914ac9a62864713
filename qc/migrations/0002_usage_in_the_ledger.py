"""A QC run's usage is read from the usage ledger (llm.Usage) of its jobs, like every job that
calls a model. Runs made before this copied their client's counters onto QCRun.usage
({"job J run R": {"usage": {endpoint: counts}, "cost": {...}}}): those counts move onto the
ledger rows of the same job runs (the requests counted as they were sent are kept when higher),
then the field goes."""

from django.db import migrations

COUNTS = {
    "calls": "requests",
    "cache_hits": "cache_hits",
    "retries": "retries",
    "failures": "failures",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
}


def usage_to_ledger(apps, schema_editor):
    QCRun = apps.get_model("qc", "QCRun")
    Usage = apps.get_model("llm", "Usage")
    Job = apps.get_model("jobs", "Job")
    for run in QCRun.objects.exclude(usage={}).iterator():
        for label, record in (run.usage or {}).items():
            try:
                _job, job_id, _run, run_no = label.split()
                job_id, run_no = int(job_id), int(run_no)
            except ValueError:
                continue
            if not Job.objects.filter(pk=job_id).exists():
                continue
            for endpoint, counts in (record.get("usage") or {}).items():
                row, _ = Usage.objects.get_or_create(job_id=job_id, run=run_no, endpoint=endpoint)
                for name, column in COUNTS.items():
                    value = int(counts.get(name) or 0)
                    setattr(row, column, max(getattr(row, column), value) if column == "requests" else value)
                row.save()


class Migration(migrations.Migration):
    dependencies = [
        ("qc", "0001_initial"),
        ("llm", "0003_usage_ledger"),
    ]

    operations = [
        migrations.RunPython(usage_to_ledger, migrations.RunPython.noop),
        migrations.RemoveField(model_name="qcrun", name="usage"),
    ]
