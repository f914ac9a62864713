"""Release builds: bundle writing against plain `tar` + `sha256sum`, and peak memory at two sizes.

Run: .venv/bin/python bench/export.py [--items 5000,50000] [--items-per-image 20] [--image-kb 40]
                                      [--compare 5000,1000,300] [--no-compare]

Each release lives in a throwaway embedded runtime (SQLite and media in a temporary folder): one
process generates the benchmark (noise photos, so they do not compress, like real JPEGs; one
accepted seed question per image and rewrites of it up to the item count), then a fresh process
builds a release of it (snapshot, public and private bundles as tar.gz and zip, the Parquet
export) and reports its peak resident memory (ru_maxrss) and how much it grew during the build.

  * Speed (--compare ITEMS,IMAGES,KB): writing one bundle (the files, the sha256 manifest) and its
    tar.gz, as the build does, vs `sha256sum` over the bundle's files plus `tar czf` of the same
    folder (target: under 2x).
  * Memory (--items, one image per --items-per-image items, --image-kb each): the build's memory
    does not grow with the release (the largest build's growth within 1.5x of the smallest's).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TARGET = 2.0
MEMORY_TARGET = 1.5


def setup(var: Path) -> None:
    os.environ.update(
        BENCHFORGE_VAR_DIR=str(var), MEDIA_ROOT=str(var / "media"), DJANGO_SETTINGS_MODULE="benchforge.settings", DEBUG="1"
    )
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["BENCHFORGE_JOB_RUNNER"] = "inline"
    import django

    django.setup()


def photo(n: int, kb: int) -> bytes:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(n)
    side = int((kb * 1024 / 0.9) ** 0.5)  # noise JPEG at quality 90: about 0.9 bytes per pixel
    pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=90)
    return out.getvalue()


def populate(n_items: int, n_images: int, kb: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation.models import Item, ItemImage
    from benchforge.roles import RESEARCHER, set_role
    from curation.models import Image
    from curation.services import ingest_image, load_preset

    call_command("migrate", verbosity=0)
    benchmark = load_preset("alignmmbench", slug="bench")
    researcher = get_user_model().objects.create_user("bench-researcher", password="x" * 16)
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
    for start in range(0, len(seeds), 500):
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
            for seed in seeds[start : start + 500]
            for k in range(per_seed)
        )
    return {"images": n_images, "image_mb": size / 1e6, "seconds": time.perf_counter() - started}


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def build(var: Path, compare: bool) -> dict:
    from django.contrib.auth import get_user_model

    from curation.models import Benchmark
    from exports import services
    from exports.models import Release

    benchmark = Benchmark.objects.get(slug="bench")
    researcher = get_user_model().objects.get(username="bench-researcher")
    release = services.create_release(benchmark, user=researcher, version="1.0.0")
    before = rss_bytes()
    started = time.perf_counter()
    services.start_build(release, user=researcher)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    release.refresh_from_db()
    if release.status != Release.Status.BUILT:
        raise SystemExit(f"the build failed: {release.job.message}")
    result = {
        "items": release.counts["items"],
        "images": release.counts["images"],
        "seconds": seconds,
        "rss_before": before,
        "peak": peak,
        "files": {f.kind: f.size for f in release.files.all()},
    }
    if compare:
        from benchforge_harness.bundle import write_tar_gz

        folder = var / "bundle"
        started = time.perf_counter()
        services.write_bundle(release, "public", folder)
        write_tar_gz(folder, var / "ours.tar.gz", top=release.top)
        result["ours"] = time.perf_counter() - started
        result["theirs"] = baseline(folder, var)
        shutil.rmtree(folder)
    return result


def baseline(folder: Path, work: Path) -> float:
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    started = time.perf_counter()
    subprocess.run(["sha256sum", *files], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["tar", "czf", str(work / "baseline.tar.gz"), "."], cwd=folder, check=True)
    return time.perf_counter() - started


def child(args) -> None:
    """One step in its own process, so the build's memory is not the generator's."""
    var = Path(args.var)
    setup(var)
    from django.conf import settings

    settings.DEBUG = False  # DEBUG keeps every SQL statement: memory a deployed build never spends
    if args.step == "populate":
        result = populate(args.items_one, args.images_one, args.image_kb)
    else:
        result = build(var, args.with_tar)
    print("RESULT " + json.dumps(result))


def run_step(var: Path, step: str, items: int, images: int, kb: int, with_tar: bool = False) -> dict:
    command = [sys.executable, __file__, "--step", step, "--var", str(var), "--items-one", str(items)]
    command += ["--images-one", str(images), "--image-kb", str(kb)] + (["--with-tar"] if with_tar else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{step} failed:\n{done.stdout}\n{done.stderr}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def one_release(items: int, images: int, kb: int, with_tar: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        var = Path(tmp) / "var"
        made = run_step(var, "populate", items, images, kb)
        built = run_step(var, "build", items, images, kb, with_tar)
    growth = (built["peak"] - built["rss_before"]) / 1e6
    print(
        f"{built['items']:>7,} items, {built['images']:,} images ({made['image_mb']:.0f} MB): build {built['seconds']:6.1f} s, "
        f"peak RSS {built['peak'] / 1e6:5.0f} MB, grew {growth:4.0f} MB during the build (load {os.getloadavg()[0]:.1f}); "
        + ", ".join(f"{kind} {size / 1e6:.0f} MB" for kind, size in sorted(built["files"].items())),
        flush=True,
    )
    return built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", default="5000,50000", help="release sizes for the memory figures, comma-separated")
    parser.add_argument("--items-per-image", type=int, default=20)
    parser.add_argument("--image-kb", type=int, default=40)
    parser.add_argument("--compare", default="5000,1000,300", help="items,images,KB of the release for the speed figure")
    parser.add_argument("--no-compare", action="store_true")
    parser.add_argument("--step", choices=["populate", "build"], help=argparse.SUPPRESS)
    parser.add_argument("--var", help=argparse.SUPPRESS)
    parser.add_argument("--items-one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--images-one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--with-tar", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        child(args)
        return 0
    ok = True
    if not args.no_compare:
        items, images, kb = (int(x) for x in args.compare.split(","))
        built = one_release(items, images, kb, with_tar=True)
        ratio = built["ours"] / built["theirs"]
        ok &= ratio < TARGET
        print(f"    one bundle + its tar.gz (build):        {built['ours']:6.1f} s")
        print(f"    sha256sum + tar czf, same files:        {built['theirs']:6.1f} s")
        print(f"    ratio: {ratio:.2f}x (target < {TARGET}x) -> {'OK' if ratio < TARGET else 'SLOWER THAN TARGET'}")
    sizes = [int(x) for x in args.items.split(",") if x]
    results = [one_release(n, max(1, n // args.items_per_image), args.image_kb, with_tar=False) for n in sizes]
    if len(results) > 1:
        small, large = results[0], results[-1]
        grew = [(b["peak"] - b["rss_before"]) for b in (small, large)]
        ratio = grew[1] / max(grew[0], 1)
        ok &= ratio < MEMORY_TARGET
        print(
            f"memory growth during the build: {grew[0] / 1e6:.0f} MB at {small['items']:,} items, {grew[1] / 1e6:.0f} MB at "
            f"{large['items']:,}: {ratio:.2f}x for {large['items'] / small['items']:.0f}x the items (target < {MEMORY_TARGET}x)"
        )
    print("all targets met" if ok else "SOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
