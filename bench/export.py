"""Release build time against plain `tar` + `sha256sum` over the same files.

Run: .venv/bin/python bench/export.py [--items 5000] [--images 1000] [--image-kb 300]

Works in a throwaway embedded runtime (SQLite and media in a temporary folder): generates
--images photos of about --image-kb KB each (noise, so they do not compress, like real JPEGs),
one accepted seed question per image and rewrites up to --items questions, then builds a
release and prints, side by side:
  * writing one bundle (the files, the sha256 manifest) and its tar.gz, as the build does, vs
    `sha256sum` over the bundle's files plus `tar czf` of the same folder (target: under 2x);
  * the whole build job (snapshot, public and private bundles as tar.gz and zip, the Parquet
    export) for context: it writes five archives where the baseline writes one.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TARGET = 2.0


def setup(var: Path) -> None:
    os.environ.update(
        BENCHFORGE_VAR_DIR=str(var), MEDIA_ROOT=str(var / "media"), DJANGO_SETTINGS_MODULE="benchforge.settings", DEBUG="1"
    )
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["BENCHFORGE_JOB_RUNNER"] = "inline"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def photo(n: int, kb: int) -> bytes:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(n)
    side = int((kb * 1024 / 0.9) ** 0.5)  # noise JPEG at quality 90: about 0.9 bytes per pixel
    pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=90)
    return out.getvalue()


def populate(n_items: int, n_images: int, kb: int):
    from django.contrib.auth import get_user_model

    from annotation.models import Item, ItemImage
    from curation.models import Image
    from curation.services import ingest_image, load_preset

    benchmark = load_preset("alignmmbench", slug="bench")
    researcher = get_user_model().objects.create_user("bench-researcher", password="x" * 16)
    from benchforge.roles import RESEARCHER, set_role

    set_role(researcher, RESEARCHER)
    tasks = list(benchmark.tasks.order_by("pk"))
    started = time.perf_counter()
    size = 0
    for n in range(n_images):
        data = photo(n, kb)
        size += len(data)
        ingest_image(
            benchmark, data, original_name=f"photo-{n}.jpg", source="bench", license="CC0", tasks=[tasks[n % len(tasks)]]
        )
    Image.objects.filter(benchmark=benchmark).update(status="accepted")
    print(f"generated {n_images} images, {size / 1e6:.0f} MB, in {time.perf_counter() - started:.0f} s")
    images = list(Image.objects.filter(benchmark=benchmark).order_by("pk"))
    seeds = Item.objects.bulk_create(
        Item(
            benchmark=benchmark,
            task=tasks[n % len(tasks)],
            question=f"What is unusual in photo {n}?",
            reference_answer=f"Photo {n} shows random coloured noise; nothing in it is recognisable.",
            status="accepted",
            author=researcher,
        )
        for n in range(n_images)
    )
    ItemImage.objects.bulk_create(ItemImage(item=item, image=image) for item, image in zip(seeds, images))
    per_seed = max(0, (n_items - n_images) // n_images)
    Item.objects.bulk_create(
        Item(
            benchmark=benchmark,
            task=seed.task,
            question=f"{seed.question} (rewrite {k})",
            reference_answer=seed.reference_answer,
            seed=seed,
            status="accepted",
            author=researcher,
        )
        for seed in seeds
        for k in range(per_seed)
    )
    return benchmark, researcher


def baseline(folder: Path, work: Path) -> float:
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    started = time.perf_counter()
    subprocess.run(["sha256sum", *files], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["tar", "czf", str(work / "baseline.tar.gz"), "."], cwd=folder, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--image-kb", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        tmp = Path(tmp)
        setup(tmp / "var")
        from harness.bundle import write_tar_gz

        benchmark, researcher = populate(args.items, args.images, args.image_kb)
        from exports import services
        from exports.models import Release

        release = services.create_release(benchmark, user=researcher, version="1.0.0")
        started = time.perf_counter()
        services.start_build(release, user=researcher)
        job_seconds = time.perf_counter() - started
        release.refresh_from_db()
        if release.status != Release.Status.BUILT:
            raise SystemExit(f"the build failed: {release.job.message}")
        sizes = {f.kind: f.size for f in release.files.all()}

        folder = tmp / "bundle"
        started = time.perf_counter()
        services.write_bundle(release, "public", folder)
        write_tar_gz(folder, tmp / "ours.tar.gz", top=release.top)
        ours = time.perf_counter() - started
        theirs = baseline(folder, tmp)
        shutil.rmtree(folder)

        print(f"release: {release.counts['items']} items, {release.counts['images']} images")
        print(f"one bundle + its tar.gz (build):        {ours:6.1f} s")
        print(f"sha256sum + tar czf, same files:        {theirs:6.1f} s")
        ratio = ours / theirs
        print(f"ratio: {ratio:.2f}x (target < {TARGET}x) -> {'OK' if ratio < TARGET else 'SLOWER THAN TARGET'}")
        print(
            f"whole build job (snapshot, 4 archives, Parquet): {job_seconds:.1f} s; files: "
            + ", ".join(f"{kind} {size / 1e6:.0f} MB" for kind, size in sorted(sizes.items()))
        )


if __name__ == "__main__":
    main()
