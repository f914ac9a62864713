from django.core.management.base import BaseCommand, CommandError

from benchforge.errors import DomainError
from curation.presets import PRESETS
from curation.services import load_preset


class Command(BaseCommand):
    help = "Create a benchmark from a taxonomy preset, or add the preset's missing tasks to an existing one."

    def add_arguments(self, parser):
        parser.add_argument("name", help=f"preset: {', '.join(sorted(PRESETS))}")
        parser.add_argument("--slug", default="", help="benchmark slug (default: the preset's key)")

    def handle(self, name, slug, **options):
        try:
            benchmark = load_preset(name, slug=slug)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"{benchmark.name} ({benchmark.slug}): {benchmark.categories.count()} categories, {benchmark.tasks.count()} tasks"
            )
        )
