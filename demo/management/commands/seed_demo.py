import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchforge.services import create_or_update_user
from curation.services import load_preset
from demo.services import DEMO_STEPS, run_demo_steps
from llm.demo import ensure_demo_models

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

    def add_arguments(self, parser):
        parser.add_argument(
            "--demo-models",
            action="store_true",
            help="when no models file exists, write one declaring the built-in offline demo endpoints (make run does)",
        )

    def handle(self, **options):
        if not settings.DEBUG:
            raise CommandError(
                "The demo creates accounts with published passwords, so it only runs with DEBUG on "
                "(the development default). Create real users with `manage.py create_user`."
            )
        started = time.monotonic()
        if options["demo_models"]:
            written = ensure_demo_models()
            if written is not None:
                self.stdout.write(
                    f"No models file, so {written} now declares the built-in demo endpoints (demo-strong, demo-fair, "
                    "demo-weak, demo-judge): offline, no key, their replies labelled as demo output. "
                    "Replace it with your own endpoints (docs/models.toml.example) to use real models."
                )
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
        # No address here: the server prints the one it really listens on (manage.py serve_demo).
        self.stdout.write(self.style.SUCCESS(f"Demo ready: log in as researcher (password {password})."))
