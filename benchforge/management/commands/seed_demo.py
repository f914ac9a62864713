from django.core.management.base import BaseCommand

from benchforge.services import create_or_update_user
from curation.services import load_preset

DEMO_SLUG = "alignmmbench-demo"
# Development-only accounts, printed by `make run`; never used outside the embedded runtime.
DEMO_USERS = [
    ("researcher", "researcher", "demo-researcher-pw"),
    ("reviewer", "reviewer", "demo-reviewer-pw"),
    ("annotator", "annotator", "demo-annotator-pw"),
    ("annotator2", "annotator", "demo-annotator2-pw"),
]


class Command(BaseCommand):
    help = "Load the demo benchmark (AlignMMBench preset, generated images) and demo users. Safe to re-run."

    def handle(self, **options):
        benchmark = load_preset("alignmmbench", slug=DEMO_SLUG)
        for username, role, password in DEMO_USERS:
            create_or_update_user(username, role, password=password, benchmarks=[benchmark])
        self.stdout.write(self.style.SUCCESS(f"Demo benchmark '{benchmark.name}' ({DEMO_SLUG}): {benchmark.tasks.count()} tasks"))
        self.stdout.write("Demo logins (development only):")
        for username, role, password in DEMO_USERS:
            self.stdout.write(f"  {username:<11} {password:<20} ({role})")
