from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation import services
from benchforge.errors import DomainError
from benchforge.roles import RESEARCHER, user_role
from curation.models import Benchmark
from curation.services import load_preset
from jobs import services as jobs
from jobs.selectors import find_job, job_entries


class Command(BaseCommand):
    help = (
        "Import an AlignMMBench metadata.jsonl (images, if any, next to it under images/) into a benchmark "
        "as external items, as a tracked job. Re-running adds nothing already imported; "
        "--resume JOB_ID continues an interrupted job."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", help="metadata.jsonl on this server (not needed with --resume)")
        parser.add_argument("--benchmark", required=True, help="benchmark slug")
        parser.add_argument(
            "--create",
            action="store_true",
            help="create the benchmark (AlignMMBench taxonomy, marked external) if it does not exist",
        )
        parser.add_argument("--user", required=True, help="username of the researcher running the import")
        parser.add_argument("--resume", type=int, help="id of an earlier import_alignmmbench job to continue")

    def handle(self, *args, **opts):
        user = get_user_model().objects.filter(username=opts["user"]).first()
        if user is None or user_role(user) != RESEARCHER:
            raise CommandError(f"'{opts['user']}' is not a researcher: imports are run by a researcher.")
        benchmark = Benchmark.objects.filter(slug=opts["benchmark"]).first()
        if benchmark is None:
            if not opts["create"]:
                raise CommandError(f"No benchmark with slug '{opts['benchmark']}' (add --create to make one).")
            benchmark = load_preset("alignmmbench", slug=opts["benchmark"], user=user)
            Benchmark.objects.filter(pk=benchmark.pk).update(is_external=True)
        if opts["resume"]:
            job = find_job(opts["resume"], kind=services.ALIGNMMBENCH_JOB, benchmark=benchmark)
            if job is None:
                raise CommandError(f"No {services.ALIGNMMBENCH_JOB} job #{opts['resume']} for this benchmark.")
            if not job.succeeded:  # a finished job is reported as it is, not run again
                try:
                    job = jobs.run_now(jobs.requeue(job))
                except DomainError as exc:
                    raise CommandError(exc.message) from None
        else:
            if not opts["path"]:
                raise CommandError("Give the metadata.jsonl to import (or --resume JOB_ID).")
            path = Path(opts["path"]).resolve()
            if not path.is_file():
                raise CommandError(f"{path} is not a file.")
            job = services.import_alignmmbench(benchmark, path, user)
        self.stdout.write(f"job #{job.pk} {job.status}: {job.message}")
        for entry in job_entries(job, outcome="error")[:50]:
            self.stdout.write(f"  error {entry.key}: {entry.message}")
        if not job.succeeded:
            raise CommandError(job.message)
