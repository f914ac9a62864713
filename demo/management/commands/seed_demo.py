import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchforge.services import create_or_update_user
from curation.services import load_preset
from demo.services import DEMO_STEPS, run_demo_steps

DEMO_SLUG = "alignmmbench-demo"
# Development-only accounts, printed by `make run`; never used outside the embedded runtime.
# Their passwords are public, so the command refuses to run with DEBUG off.
DEMO_USERS = [
    ("researcher", "researcher", "bf-demo-researcher-2026"),
    ("reviewer", "reviewer", "bf-demo-reviewer-2026"),
    ("annotator", "annotator", "bf-demo-annotator-2026"),
    ("annotator2", "annotator", "bf-demo-annotator2-2026"),
]


class Command(BaseCommand):
    help = "Load the demo benchmark (AlignMMBench preset, generated images, items at every stage) and demo users. Safe to re-run."

    def handle(self, **options):
        if not settings.DEBUG:
            raise CommandError(
                "The demo creates accounts with published passwords, so it only runs with DEBUG on "
                "(the development default). Create real users with `manage.py create_user`."
            )
        started = time.monotonic()
        benchmark = load_preset("alignmmbench", slug=DEMO_SLUG)
        users = {
            username: create_or_update_user(username, role, password=password, benchmarks=[benchmark])[0]
            for username, role, password in DEMO_USERS
        }
        self.stdout.write(self.style.SUCCESS(f"Demo benchmark '{benchmark.name}' ({DEMO_SLUG}): {benchmark.tasks.count()} tasks"))
        run_demo_steps(benchmark, users, DEMO_STEPS, report=lambda line: self.stdout.write(f"  {line}"))
        self.stdout.write("Demo logins (development only):")
        for username, role, password in DEMO_USERS:
            self.stdout.write(f"  {username:<11} {password:<24} ({role})")
        self.stdout.write(f"Seeded in {time.monotonic() - started:.1f} s.")
        password = dict((u, p) for u, _, p in DEMO_USERS)["researcher"]
        self.stdout.write(
            self.style.SUCCESS(f"Ready: open http://127.0.0.1:8000 and log in as researcher (password {password}).")
        )
