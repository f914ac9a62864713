from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchforge.errors import DomainError
from curation import services
from curation.models import KnownImageSet


class Command(BaseCommand):
    help = (
        "Import a known image set (SFT data, prior benchmark) for contamination checks: a hash "
        "list (CSV with md5/phash columns, or JSONL) or a folder of images to hash. Existing "
        "images that match are flagged."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("path", help="hash list file or folder of images")
        parser.add_argument("--kind", default=KnownImageSet.Kind.OTHER, choices=KnownImageSet.Kind.values)
        parser.add_argument("--description", default="")

    def handle(self, *args, **opts):
        path = Path(opts["path"])
        try:
            if path.is_dir():
                rows, problems = services.hash_image_folder(path)
                for problem in problems:
                    self.stdout.write(f"  skipped {problem}")
            elif path.is_file():
                rows = services.parse_hash_list(path.read_bytes(), path.name)
            else:
                raise CommandError(f"{path} does not exist.")
            result = services.import_known_set(name=opts["name"], rows=rows, kind=opts["kind"], description=opts["description"])
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"set '{result.known_set.name}': {result.hashes_added} hashes added "
            f"({len(rows) - result.hashes_added} already in the set), {result.images_flagged} images newly flagged"
        )
