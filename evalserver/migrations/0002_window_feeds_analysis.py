from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evalserver", "0001_submission_windows_teams_submissions"),
    ]

    operations = [
        migrations.AddField(
            model_name="window",
            name="feeds_analysis",
            field=models.BooleanField(
                default=False, help_text="teams' scores also join the release's internal leaderboard and item analysis"
            ),
        ),
    ]
