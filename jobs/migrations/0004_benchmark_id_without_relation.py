"""A job keeps its benchmark's id, not a foreign key: jobs sits below curation and declares no
relation to it. The column stays `benchmark_id` with its values (no data is copied on Postgres:
only the foreign key constraint goes); curation deletes a benchmark's jobs itself."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0003_unsent"),
    ]

    operations = [
        migrations.AlterField(
            model_name="job",
            name="benchmark",
            field=models.PositiveBigIntegerField(blank=True, null=True, db_index=True, db_column="benchmark_id"),
        ),
        migrations.RenameField(model_name="job", old_name="benchmark", new_name="benchmark_id"),
        # The same index on the same columns, named as before: only the field's name changed.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="job", name="jobs_job_benchma_562bfd_idx"),
                migrations.AddIndex(
                    model_name="job",
                    index=models.Index(fields=["benchmark_id", "kind", "-created_at"], name="jobs_job_benchma_562bfd_idx"),
                ),
            ]
        ),
        migrations.AlterField(
            model_name="job",
            name="benchmark_id",
            field=models.PositiveBigIntegerField(blank=True, null=True, db_index=True),
        ),
    ]
