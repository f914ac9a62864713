from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from benchforge.errors import DomainError
from curation import services
from curation.models import Benchmark
from jobs import services as jobs
from jobs.selectors import find_job, job_entries


class Command(BaseCommand):
    help = (
        "Import every image under a server folder into a benchmark, as a tracked job. "
        "Sub-folders named after a task slug tag their images with that task. "
        "Re-run with --resume JOB_ID to continue an interrupted import."
    )

    def add_arguments(self, parser):
        parser.add_argument("benchmark", help="benchmark slug")
        parser.add_argument("path", nargs="?", help="folder on this server (not needed with --resume)")
        parser.add_argument("--task", action="append", default=[], help="task slug for every image (repeatable)")
        parser.add_argument("--source", default="", help="where the images come from")
        parser.add_argument("--license", default="")
        parser.add_argument("--user", help="username recorded as collector")
        parser.add_argument("--resume", type=int, help="id of an earlier ingest_folder job to continue")

    def handle(self, *args, **opts):
        try:
            benchmark = Benchmark.objects.get(slug=opts["benchmark"])
        except Benchmark.DoesNotExist:
            raise CommandError(f"No benchmark with slug '{opts['benchmark']}'.") from None
        if opts["resume"]:
            job = find_job(opts["resume"], kind="ingest_folder", benchmark=benchmark)
            if job is None:
                raise CommandError(f"No ingest_folder job #{opts['resume']} for this benchmark.")
            if not job.succeeded:  # a finished job is reported as it is, not run again
                try:
                    job = jobs.requeue(job)
                except DomainError as exc:
                    raise CommandError(exc.message) from None
        else:
            if not opts["path"]:
                raise CommandError("Give the folder to import (or --resume JOB_ID).")
            path = Path(opts["path"]).resolve()
            if not path.is_dir():
                raise CommandError(f"{path} is not a folder.")
            tasks = list(benchmark.tasks.filter(slug__in=opts["task"]))
            missing = set(opts["task"]) - {t.slug for t in tasks}
            if missing:
                raise CommandError(f"Unknown task slug(s): {', '.join(sorted(missing))}.")
            user = None
            if opts["user"]:
                user = get_user_model().objects.filter(username=opts["user"]).first()
                if user is None:
                    raise CommandError(f"No user '{opts['user']}'.")
            try:
                job = services.create_import_job(
                    "ingest_folder",
                    benchmark,
                    user=user,
                    path=str(path),
                    source=opts["source"],
                    license=opts["license"],
                    tasks=tasks,
                )
            except DomainError as exc:
                raise CommandError(exc.message) from None
        job = jobs.run_now(job)
        self.stdout.write(f"job #{job.pk} {job.status}: {job.result or job.message}")
        for entry in job_entries(job, outcome="error"):
            self.stdout.write(f"  error {entry.key}: {entry.message}")
        if not job.succeeded:
            raise CommandError(job.message)
