from django.core.management.base import BaseCommand

from jobs.staging import sweep_staged


class Command(BaseCommand):
    help = (
        "Delete staged uploads no job will use: of succeeded jobs, of jobs abandoned (failed, cancelled or "
        "interrupted, not resumed) for longer than BENCHFORGE_STAGED_UPLOAD_DAYS, and orphans older than an hour."
    )

    def handle(self, **options):
        deleted = sweep_staged()
        self.stdout.write(f"{len(deleted)} staged upload(s) deleted.")
        for name in deleted:
            self.stdout.write(f"  {name}")
