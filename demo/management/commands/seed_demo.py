from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchforge.services import create_or_update_user
from curation.services import ingest_image, load_preset, screen_images
from demo.images import demo_pictures
from demo.services import seed_demo_work

DEMO_SLUG = "alignmmbench-demo"
DEMO_SOURCE = "benchforge demo generator (drawn in code)"
# Development-only accounts, printed by `make run`; never used outside the embedded runtime.
# Their passwords are public, so the command refuses to run with DEBUG off.
DEMO_USERS = [
    ("researcher", "researcher", "bf-demo-researcher-2026"),
    ("reviewer", "reviewer", "bf-demo-reviewer-2026"),
    ("annotator", "annotator", "bf-demo-annotator-2026"),
    ("annotator2", "annotator", "bf-demo-annotator2-2026"),
]


class Command(BaseCommand):
    help = "Load the demo benchmark (AlignMMBench preset, generated images) and demo users. Safe to re-run."

    def handle(self, **options):
        if not settings.DEBUG:
            raise CommandError(
                "The demo creates accounts with published passwords, so it only runs with DEBUG on "
                "(the development default). Create real users with `manage.py create_user`."
            )
        benchmark = load_preset("alignmmbench", slug=DEMO_SLUG)
        users = {
            username: create_or_update_user(username, role, password=password, benchmarks=[benchmark])[0]
            for username, role, password in DEMO_USERS
        }
        tasks = {task.slug: task for task in benchmark.tasks.all()}
        added = []
        # Through the real ingest: same checks, hashes and flags as any upload. The pictures
        # are drawn deterministically, so a re-run finds every one already stored (same MD5).
        for picture in demo_pictures():
            outcome = ingest_image(
                benchmark,
                picture.data,
                original_name=picture.name,
                source=DEMO_SOURCE,
                license="CC0-1.0",
                collected_by=users["annotator"],
                tasks=[tasks[picture.task_slug]],
            )
            if outcome.created:
                added.append(outcome.image)
        # So the authoring queues have work, the first run accepts two thirds of the clean new
        # pictures; the rest (and the flagged ones) wait on the screening grid. Re-runs never
        # touch screening decisions.
        clean = [image.pk for image in added if not (image.low_resolution or image.near_duplicate_of_id or image.contaminated)]
        if clean:
            screen_images(benchmark, clean[: len(clean) * 2 // 3], action="accept", user=users["researcher"])
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo benchmark '{benchmark.name}' ({DEMO_SLUG}): {benchmark.tasks.count()} tasks, "
                f"{benchmark.images.count()} images ({len(added)} added now)"
            )
        )
        self.stdout.write("Demo logins (development only):")
        for username, role, password in DEMO_USERS:
            self.stdout.write(f"  {username:<11} {password:<20} ({role})")
        assigned = seed_demo_work(benchmark)
        self.stdout.write(f"Demo work: {assigned} new image assignment(s) in the annotators' queues.")
