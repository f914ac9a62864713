from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.selectors import items_of
from benchforge.errors import DomainError
from benchforge.roles import RESEARCHER, user_role
from curation.models import Benchmark
from jobs.selectors import job_entries
from labelstudio import services as lss
from labelstudio.models import LabelStudioLink

# Exit code of a pull when every project that exists was pulled but some were deleted in Label
# Studio (1 stays "a pull failed").
GONE_EXIT = 3


class Command(BaseCommand):
    help = (
        "Push a benchmark's items to a Label Studio project, or pull its annotations back into the items, "
        "as a tracked job. The server is the benchmark's Label Studio URL (or LABEL_STUDIO_URL); the access "
        "token comes from the environment variable its connection names (LABEL_STUDIO_API_KEY by default)."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["push", "pull", "unlink"])
        parser.add_argument("benchmark", help="benchmark slug")
        parser.add_argument("--user", required=True, help="username of the researcher doing it")
        parser.add_argument(
            "--title",
            help="push: project title (created if new, reused otherwise); "
            "pull: the project to pull (default: every project of the benchmark); unlink: the project to forget",
        )
        parser.add_argument(
            "--apply",
            choices=sorted(lss.APPLY_CHOICES),
            default=lss.ALL,
            help="pull: apply every annotation (all) or only accepted ones, whose verdict is OK (accepted)",
        )
        parser.add_argument(
            "--several",
            choices=sorted(lss.SEVERAL_CHOICES),
            default=lss.LATEST,
            help="pull: when annotators of one task disagree, the latest annotation wins (latest) "
            "or nothing is applied and the disagreement is reported for a decision here (flag)",
        )
        parser.add_argument("--task", default="", help="push: only items of this task slug")
        parser.add_argument("--status", default="", help="push: only items with this status")
        parser.add_argument("--item", type=int, action="append", default=[], help="push: only this item id (repeatable)")

    def handle(self, *args, **opts):
        user = get_user_model().objects.filter(username=opts["user"]).first()
        if user is None or user_role(user) != RESEARCHER:
            raise CommandError(f"'{opts['user']}' is not a researcher: Label Studio push and pull are run by a researcher.")
        benchmark = Benchmark.objects.filter(slug=opts["benchmark"]).first()
        if benchmark is None:
            raise CommandError(f"No benchmark with slug '{opts['benchmark']}'.")
        skipped = []  # pulls of projects known to be deleted in Label Studio
        try:
            if opts["action"] == "push":
                if not opts["title"]:
                    raise CommandError("Give the project title with --title.")
                items = items_of(benchmark, task=opts["task"], status=opts["status"])
                if opts["item"]:
                    items = items.filter(pk__in=opts["item"])
                jobs = [(None, lss.push_items_to_labelstudio(benchmark, items, project_title=opts["title"], user=user))]
            elif opts["action"] == "unlink":
                if not opts["title"]:
                    raise CommandError("Give the title of the project to unlink with --title.")
                link = LabelStudioLink.objects.filter(benchmark=benchmark, title=opts["title"]).first()
                if link is None:
                    raise CommandError(f"No Label Studio project of this benchmark is titled '{opts['title']}'.")
                lss.unlink(link, user=user)
                self.stdout.write(
                    f"Unlinked '{link.title}' (project {link.project_id} on {link.url}); nothing was deleted there."
                )
                return
            else:
                links = LabelStudioLink.objects.filter(benchmark=benchmark)
                if opts["title"]:
                    links = links.filter(title=opts["title"])
                if not links.exists():
                    raise CommandError(
                        "Nothing to pull: no Label Studio project of this benchmark"
                        + (f" is titled '{opts['title']}'." if opts["title"] else " (push items first).")
                    )
                jobs = []
                for link in links:
                    if link.gone_at and not opts["title"]:
                        # Known to be deleted in Label Studio: skipped (and said) until unlinked.
                        self.stderr.write(f"skipped '{link.title}': {lss.gone_message(link)}")
                        skipped.append(link)
                        continue
                    jobs.append((link, lss.pull_from_labelstudio(link, user=user, apply=opts["apply"], several=opts["several"])))
        except DomainError as exc:
            raise CommandError(exc.message) from None
        failed, gone = [], []
        for link, job in jobs:
            self.stdout.write(f"job #{job.pk} {job.kind} {job.status}: {job.message}")
            for entry in job_entries(job, outcome="skipped").filter(data__has_key="fields")[:50]:
                self.stdout.write(f"  {entry.key}: {entry.message}")
            for entry in job_entries(job, outcome="skipped").filter(data__has_key="disagreement")[:50]:
                self.stdout.write(f"  {entry.key}: {entry.message}")
            for entry in job_entries(job, outcome="error")[:50]:
                self.stdout.write(f"  error {entry.key}: {entry.message}")
            if not job.succeeded:
                is_gone = link is not None and LabelStudioLink.objects.filter(pk=link.pk, gone_at__isnull=False).exists()
                (gone if is_gone else failed).append(job.message)
        if failed:
            raise CommandError(" ".join(failed))
        if gone or skipped:
            # Everything that still exists was pulled; a deleted project still needs the researcher.
            raise CommandError(
                "Some projects no longer exist in Label Studio (reported above); the others were pulled. "
                "Unlink them with: manage.py labelstudio unlink SLUG --title TITLE --user USER",
                returncode=GONE_EXIT,
            )
