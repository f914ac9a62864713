from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("humaneval", "0001_studies_and_blind_ratings"),
    ]

    operations = [
        migrations.AlterField(
            model_name="study",
            name="mode",
            field=models.CharField(
                choices=[
                    ("pointwise", "Pointwise scores (1-10 with a reason)"),
                    ("pairwise", "Pairwise votes against the anchor"),
                    ("extraction", "Choice-extraction checks (which option a reply commits to)"),
                ],
                max_length=12,
            ),
        ),
        migrations.AddField(
            model_name="study",
            name="cited_on_card",
            field=models.BooleanField(default=False, help_text="the release's card page cites this closed study"),
        ),
        migrations.AddField(
            model_name="studyitem",
            name="options",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="studyitem",
            name="pass_index",
            field=models.PositiveSmallIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="rating",
            name="choice",
            field=models.CharField(blank=True, help_text="extraction: the shown letter read, or none", max_length=4),
        ),
    ]
