"""Builders shared by the tests: generated pictures and their encodings, zips, image rows without
files, complete item fields, and checks that stored files match their rows."""

import hashlib
import io
import itertools
import shutil
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
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
    return encode(photo(size, seed), "JPEG", quality=kw.pop("quality", 92), **kw)


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


class DemoSnapshot:
    """The rows and media files `seed_demo` makes, taken once per test process and copied into each
    test that wants the demo (`restore`): the same demo as seeding it again, without the seconds the
    seeding takes each time. Only on Postgres (COPY); elsewhere `restore` seeds for real.

    A test's transaction holds back what waits for a commit (jobs run on commit), so the demo differs
    with where it is seeded: `committed` takes it seeded as a transactional test (live server) seeds
    it, every step committing; otherwise as inside a test's transaction, rolled back after."""

    def __init__(self, options: tuple[str, ...], media: Path, models_file: Path, committed: bool):
        self.options, self.media, self.models_file, self.committed = options, media, models_file, committed
        self.tables: list[tuple[str, bytes]] = []

    @classmethod
    def take(cls, folder: Path, *options: str, committed: bool = False) -> "DemoSnapshot":
        from contextlib import nullcontext

        from django.core.cache import cache
        from django.core.management import call_command
        from django.db import connection, transaction
        from django.test import override_settings

        from curation import services

        snapshot = cls(options, folder / "media", folder / "models.toml", committed)
        if connection.vendor != "postgresql":
            return snapshot
        snapshot.media.mkdir(parents=True)
        tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
        quote = connection.ops.quote_name
        models = {"BENCHFORGE_MODELS": snapshot.models_file} if "--demo-models" in options else {}
        # As the autouse fixtures of tests/conftest.py set them for every test, seeding as in development.
        with (
            override_settings(
                DEBUG=True,
                MEDIA_ROOT=snapshot.media,
                BENCHFORGE_JOB_RUNNER="inline",
                PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
                **models,
            ),
            nullcontext() if committed else transaction.atomic(),
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
            call_command("seed_demo", *options, stdout=io.StringIO())
            after = contents()
            changed = [table for table in tables if after[table] != before[table]]
            crowded = [table for table in changed if before[table][0]]
            for table in (table for table in changed if table not in crowded):
                data = io.BytesIO()
                cursor.copy_expert(f"COPY {quote(table)} TO STDOUT", data)
                snapshot.tables.append((table, data.getvalue()))
            if not committed:
                # The rows go with the transaction (the id sequences stay past them, so rows made
                # later never take an id of the copy).
                transaction.set_rollback(True)
        # What was committed goes as a transactional test's flush takes it: seeded with commits, and
        # rows another connection committed meanwhile (the LLM ledger records paid calls on a
        # connection of its own, so that no rollback loses them). Also when the snapshot cannot be
        # used (below): the demo seeded with commits is not left for the next test.
        with transaction.atomic(), connection.cursor() as cursor:
            for table in changed:
                cursor.execute(f"DELETE FROM {quote(table)}")
        services.image_indexes.forget()
        services.known_index.forget()
        cache.clear()
        if crowded:
            raise RuntimeError(
                f"seed_demo changed {', '.join(crowded)}, which had rows before (an earlier test of this process"
                " left them): a snapshot cannot copy them"
            )
        return snapshot

    def restore(self, settings) -> dict:
        """The demo in this test's database and MEDIA_ROOT (and models file, with --demo-models);
        its people by username, as `seed_demo` returns them."""
        from django.contrib.auth import get_user_model
        from django.db import connection, transaction

        from demo.management.commands.seed_demo import DEMO_USERS

        if self.committed == connection.in_atomic_block:
            raise RuntimeError(
                "this demo snapshot was seeded "
                + ("with commits, for transactional tests" if self.committed else "inside a transaction, for django_db tests")
            )
        if not self.tables:
            return seed_demo(settings, *self.options)
        if "--demo-models" in self.options:
            from llm.demo import ensure_demo_models

            ensure_demo_models()  # what seed_demo writes when the test's models file is missing
        shutil.copytree(self.media, settings.MEDIA_ROOT, dirs_exist_ok=True)
        # Postgres checks the foreign keys at commit (Django makes them deferrable): any order loads.
        with transaction.atomic(), connection.cursor() as cursor:
            for table, data in self.tables:
                cursor.copy_expert(f"COPY {connection.ops.quote_name(table)} FROM STDIN", io.BytesIO(data))
        return {u.username: u for u in get_user_model().objects.filter(username__in=[name for name, _, _ in DEMO_USERS])}
