"""`manage.py resend_jobs`: send the queued jobs the job queue never received (it was unreachable
when they were started), and re-queue the running jobs whose worker was lost. Workers do both
(when they start, and every few seconds); this is for doing it by hand."""

from django.core.management.base import BaseCommand

from jobs import services


class Command(BaseCommand):
    help = "Send the queued jobs the job queue (Celery broker) never received."

    def handle(self, *args, **options):
        sent = services.resend_unsent()
        left = services.Job.objects.filter(status=services.Job.Status.QUEUED, unsent_since__isnull=False).count()
        self.stdout.write(f"{sent} job(s) sent; {left} still not sent.")
        found = services.recover_lost()
        self.stdout.write(
            f"{len(found['recovered'])} job(s) whose worker was lost re-queued; {len(found['failed'])} failed (recovered too often)."
        )
