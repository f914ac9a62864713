"""Builders shared by the tests: generated pictures and their encodings, zips, image rows without
files, complete item fields, and checks that stored files match their rows."""

import functools
import hashlib
import io
import itertools
import shutil
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import ImageDraw

from curation.models import Image


def photo(size=(640, 480), seed=0):
    """Smooth colours plus shapes: enough structure for stable perceptual hashes."""
    rng = np.random.default_rng(seed)
    field = (rng.random((4, 5, 3)) * 255).astype(np.uint8)
    img = PILImage.fromarray(field, "RGB").resize(size, PILImage.Resampling.BICUBIC)
    draw = ImageDraw.Draw(img)
    for _ in range(5):
        x, y = int(rng.integers(0, size[0])), int(rng.integers(0, size[1]))
        draw.ellipse((x, y, x + size[0] // 4, y + size[1] // 3), fill=tuple(int(c) for c in rng.integers(0, 256, 3)))
    return img


def encode(img, fmt="JPEG", **kwargs):
    out = io.BytesIO()
    img.save(out, fmt, **kwargs)
    return out.getvalue()


def png_header_only(width, height):
    """A PNG claiming huge dimensions with almost no data: a decompression-bomb shape."""

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")


def jpeg(seed=0, size=(640, 520), **kw):
    return _jpeg(seed, tuple(size), tuple(sorted(kw.items())))


@functools.lru_cache(maxsize=1024)
def _jpeg(seed, size, options):
    # The same picture for the same arguments: made once per process (about 4 ms each), since many
    # tests ingest the same seeds (a release's ten pictures in ~130 tests). Bytes: nothing can change them.
    options = dict(options)
    return encode(photo(size, seed), "JPEG", quality=options.pop("quality", 92), **options)


def media_files(settings):
    root = Path(settings.MEDIA_ROOT)
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not p.relative_to(root).as_posix().startswith("imports/")
    )


def stored_files_match_rows(settings):
    """Every stored file belongs to an image row (or is a release's built file) and every row's
    files exist: no orphans."""
    from exports.models import ReleaseFile

    expected = set(ReleaseFile.objects.values_list("storage_name", flat=True))
    for file, thumb in Image.objects.values_list("file", "thumbnail"):
        expected |= {file, thumb}
    return set(media_files(settings)) == expected


def make_zip(entries):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in entries:
            zf.writestr(zipfile.ZipInfo(name), data)  # ZipInfo keeps names like ../x verbatim
    return out.getvalue()


def add_images(benchmark, n, start=0, **kw):
    from curation import services

    return [services.ingest_image(benchmark, jpeg(1000 + start + i), **kw).image for i in range(n)]


_counter = itertools.count(1)


def make_image(benchmark, *, status="accepted", contaminated=False, tasks=()):
    """An Image row as ingest would leave it (no file on disk needed for these tests)."""
    n = next(_counter)
    digest = hashlib.sha256(f"image-{n}".encode()).hexdigest()
    image = Image.objects.create(
        benchmark=benchmark,
        file=f"images/{digest[:2]}/{digest[2:4]}/{digest}.jpg",
        sha256=digest,
        md5=hashlib.md5(digest.encode()).hexdigest(),
        phash=n,
        dhash=n,
        width=800,
        height=600,
        format="JPEG",
        file_size=1000,
        status=status,
        contaminated=contaminated,
    )
    image.tasks.set(tasks)
    return image


def complete_fields(image, **overrides):
    """Fields of a single-turn item that is ready to submit."""
    fields = {
        "question": "How many apples are on the table?",
        "reference_answer": "There are three red apples on the wooden table, two on the left and one on the right.",
        "criteria": [{"kind": "exact", "text": "The count is three."}],
        "images": [image.pk],
    }
    fields.update(overrides)
    return fields


def b64_jpeg_variants(n: int) -> list[str]:
    """Base64 JPEGs: n // 2 pictures, each also as a smaller, more compressed copy (a near
    duplicate), for MMBench-style rows."""
    import base64

    out = []
    for k in range(n // 2):
        picture = photo((640, 520), 700 + k)
        out.append(base64.b64encode(encode(picture, "JPEG", quality=92)).decode())
        out.append(base64.b64encode(encode(picture.resize((560, 455)), "JPEG", quality=60)).decode())
    return out


def seed_demo(settings, *options: str) -> dict:
    """The demo `make run` seeds (`seed_demo` with `options`, e.g. "--demo-models"), seeded as in
    development; its people by username."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from demo.management.commands.seed_demo import DEMO_USERS

    settings.DEBUG = True  # the demo only seeds in development
    call_command("seed_demo", *options, stdout=io.StringIO())
    settings.DEBUG = False
    return {u.username: u for u in get_user_model().objects.filter(username__in=[name for name, _, _ in DEMO_USERS])}


# The ids of the accepted items a test's `benchmark` fixture copied in (tests/conftest.py), for `accepted`.
ACCEPTED_ITEMS = pytest.StashKey[list]()


class RowSnapshot:
    """The rows and media files `seed()` makes, taken once per test process and copied into each test
    that wants them (`record`, then `copy_in`): the same rows as making them again, without the seconds that takes.
    Only on Postgres (COPY); elsewhere `taken` is False and the test makes them for real.

    A test's transaction holds back what waits for a commit (jobs run on commit), so the rows differ
    with where they are made: `committed` takes them made as a transactional test (live server) makes
    them, every step committing; otherwise as inside a test's transaction, rolled back after."""

    def __init__(self, media: Path, committed: bool):
        self.media, self.committed = media, committed
        self.tables: list[tuple[str, bytes]] = []
        self.made = None  # what seed() returned

    @property
    def taken(self) -> bool:
        return bool(self.tables)

    def record(self, seed, **overrides) -> "RowSnapshot":
        """Run seed() (with these settings on top of the ones every test has) and keep what it made."""
        from contextlib import nullcontext

        from django.core.cache import cache
        from django.db import connection, transaction
        from django.test import override_settings

        from curation import services

        if connection.vendor != "postgresql":
            return self
        self.media.mkdir(parents=True)
        tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
        quote = connection.ops.quote_name
        # As the autouse fixtures of tests/conftest.py set them for every test.
        with (
            override_settings(
                MEDIA_ROOT=self.media,
                BENCHFORGE_JOB_RUNNER="inline",
                PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
                **overrides,
            ),
            nullcontext() if self.committed else transaction.atomic(),
            connection.cursor() as cursor,
        ):

            def contents() -> dict[str, tuple[int, str]]:
                found = {}
                for table in tables:
                    cursor.execute(
                        f"SELECT count(*), md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM {quote(table)} t"
                    )
                    found[table] = cursor.fetchone()
                return found

            services.image_indexes.forget()
            services.known_index.forget()
            before = contents()
            self.made = seed()
            after = contents()
            changed = [table for table in tables if after[table] != before[table]]
            crowded = [table for table in changed if before[table][0]]
            for table in (table for table in changed if table not in crowded):
                data = io.BytesIO()
                cursor.copy_expert(f"COPY {quote(table)} TO STDOUT", data)
                self.tables.append((table, data.getvalue()))
            if not self.committed:
                # The rows go with the transaction (the id sequences stay past them, so rows made
                # later never take an id of the copy).
                transaction.set_rollback(True)
        # What was committed goes as a transactional test's flush takes it: made with commits, and
        # rows another connection committed meanwhile (the LLM ledger records paid calls on a
        # connection of its own, so that no rollback loses them). Also when the snapshot cannot be
        # used (below): rows made with commits are not left for the next test.
        with transaction.atomic(), connection.cursor() as cursor:
            for table in changed:
                cursor.execute(f"DELETE FROM {quote(table)}")
        services.image_indexes.forget()
        services.known_index.forget()
        cache.clear()
        if crowded:
            self.tables = []
            raise RuntimeError(
                f"seeding changed {', '.join(crowded)}, which had rows before (an earlier test of this process"
                " left them): a snapshot cannot copy them"
            )
        return self

    def copy_in(self, settings) -> None:
        """The rows into this test's database and the files into its MEDIA_ROOT."""
        from django.db import connection, transaction

        from curation import services

        if self.committed == connection.in_atomic_block:
            raise RuntimeError(
                "this snapshot was taken "
                + ("with commits, for transactional tests" if self.committed else "inside a transaction, for django_db tests")
            )
        shutil.copytree(self.media, settings.MEDIA_ROOT, dirs_exist_ok=True)
        # Postgres checks the foreign keys at commit (Django makes them deferrable): any order loads.
        with transaction.atomic(), connection.cursor() as cursor:
            for table, data in self.tables:
                cursor.copy_expert(f"COPY {connection.ops.quote_name(table)} FROM STDIN", io.BytesIO(data))
        # The in-process hash indexes are rebuilt from the rows on their next use.
        services.image_indexes.forget()
        services.known_index.forget()


class DemoSnapshot(RowSnapshot):
    """The demo `seed_demo` makes (with `options`, e.g. "--demo-models"), as a RowSnapshot."""

    def __init__(self, options: tuple[str, ...], media: Path, models_file: Path, committed: bool):
        super().__init__(media, committed)
        self.options, self.models_file = options, models_file

    @classmethod
    def take(cls, folder: Path, *options: str, committed: bool = False) -> "DemoSnapshot":
        from django.core.management import call_command

        snapshot = cls(options, folder / "media", folder / "models.toml", committed)
        models = {"BENCHFORGE_MODELS": snapshot.models_file} if "--demo-models" in options else {}
        # seed_demo only seeds in development
        return snapshot.record(lambda: call_command("seed_demo", *options, stdout=io.StringIO()), DEBUG=True, **models)

    def restore(self, settings) -> dict:
        """The demo in this test's database and MEDIA_ROOT (and models file, with --demo-models);
        its people by username, as `seed_demo` returns them."""
        from django.contrib.auth import get_user_model

        from demo.management.commands.seed_demo import DEMO_USERS

        if not self.taken:
            return seed_demo(settings, *self.options)
        if "--demo-models" in self.options:
            from llm.demo import ensure_demo_models

            ensure_demo_models()  # what seed_demo writes when the test's models file is missing
        self.copy_in(settings)
        return {u.username: u for u in get_user_model().objects.filter(username__in=[name for name, _, _ in DEMO_USERS])}
