"""Image ingest performance: our hashing vs imagehash, pHash agreement, and imports against the
time their hashing alone takes.

Run: .venv/bin/python bench/ingest.py [--images N] [--tsv-rows 10000] [--folder-images 2000]
     [--url-delays 0,0.1] [--url-order mixed|grouped] [--one-by-one] [--no-imports]

Prints, in one run:
  * images/s of curation.imaging.analyse_image (MD5 + SHA-256 + pHash + dHash + validation,
    one reduced JPEG decode) vs imagehash.phash on a full decode, per size (target >= 3x);
    the same with a 256 px thumbnail made from the same decode, as ingest does;
  * share of pHashes identical to imagehash's (target >= 90%) and the maximum distance
    (target <= 4);
  * imports on the embedded runtime (SQLite and media in a temporary folder, the job run here):
    an MMBench TSV of --tsv-rows rows with small generated 96x72 JPEGs (every fifth row sharing
    the image of the row before, circular copies), a folder of --folder-images photo-like
    800x600 JPEGs, an MMBench TSV whose images are those photos, the photos as a zip, and as
    URL lists served by 8 loopback HTTP "sites" (bench/support/image_server.py, in a process of
    its own) that wait --url-delays seconds before each reply (the network's latency), the
    sites' URLs taking turns (or each site's together: --url-order grouped). Printed: rows (or
    images) per second, beside the time the hashing alone takes on the same images with the
    same threads and worker processes (decode + MD5 + SHA-256 + pHash + dHash + thumbnail, as
    ingest does), and for the TSVs the CPU time of hashing plus writing the files (no
    database: an import's floor). Targets: each import within 1.3x of its hashing alone; the
    10,000-row TSV at 300 rows/s or more. --one-by-one also times the same imports storing one
    image at a time (what imports did before issue 24).
Near-duplicate search is measured by bench/neardup.py.

Timing on a shared machine: the hashers take turns on every image (so load from other
processes falls on all of them alike) and each is timed by the CPU time of this process,
best of --passes passes, which is what one core spends on it. Wall-clock speed-ups and query
times are printed next to them.
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import imagehash  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.support.photos import photo_like_jpeg  # noqa: E402
from benchforge_harness.tabular import TSV, TableReader  # noqa: E402
from curation.imaging import analyse_image, hamming, hex_to_hash, perceptual_hashes  # noqa: E402

SIZES = [(1024, 768), (3000, 2000)]
SITES = 8  # loopback web sites a URL list's images are spread over
THUMBNAIL_PX = 256


def reference_phash(data: bytes) -> int:
    return hex_to_hash(str(imagehash.phash(Image.open(io.BytesIO(data)))))


def timed_in_turns(fns: dict, items, passes: int) -> tuple[dict, dict, dict]:
    """Run every function on every item, taking turns per item; returns per function the
    best-pass CPU seconds, the best-pass wall seconds and the results of the last pass."""
    cpu = {name: float("inf") for name in fns}
    wall = dict(cpu)
    results: dict = {}
    for _ in range(passes):
        spent_cpu = dict.fromkeys(fns, 0.0)
        spent_wall = dict.fromkeys(fns, 0.0)
        results = {name: [] for name in fns}
        for item in items:
            for name, fn in fns.items():
                c, w = time.process_time(), time.perf_counter()
                results[name].append(fn(item))
                spent_cpu[name] += time.process_time() - c
                spent_wall[name] += time.perf_counter() - w
        for name in fns:
            cpu[name] = min(cpu[name], spent_cpu[name])
            wall[name] = min(wall[name], spent_wall[name])
    return cpu, wall, results


def bench_hashing(count: int, passes: int, rng: np.random.Generator) -> bool:
    ok = True
    all_distances: list[int] = []
    for size in SIZES:
        files = [photo_like_jpeg(rng, size) for _ in range(count)]
        cpu, wall, results = timed_in_turns(
            {
                "imagehash": reference_phash,
                "ours": perceptual_hashes,
                "ingest": analyse_image,
                "thumb": lambda d: analyse_image(d, thumbnail_size=THUMBNAIL_PX),
            },
            files,
            passes,
        )
        distances = [hamming(r, phash) for r, (phash, _dhash) in zip(results["imagehash"], results["ours"])]
        all_distances += distances
        speedup = cpu["imagehash"] / cpu["ours"]
        ok &= speedup >= 3
        mb = sum(map(len, files)) / count / 1e6

        def rate(name):
            return f"{count / cpu[name]:7.1f} img/s = {cpu['imagehash'] / cpu[name]:4.1f}x (wall {wall['imagehash'] / wall[name]:4.1f}x)"

        print(f"{size[0]}x{size[1]} ({count} JPEGs, {mb:.2f} MB each; CPU time, best of {passes} passes):")
        print(f"    imagehash.phash, full decode           {count / cpu['imagehash']:7.1f} img/s")
        print(f"    ours: pHash + dHash, one decode        {rate('ours')} (target >= 3x)")
        print(f"    ours + MD5 + SHA-256 + checks (ingest) {rate('ingest')}")
        print(f"    ... + {THUMBNAIL_PX}px colour thumbnail          {rate('thumb')}")
        print(f"    pHash identical to imagehash: {distances.count(0) / count:6.1%}, max distance {max(distances)}")
    identical = all_distances.count(0) / len(all_distances)
    worst = max(all_distances)
    ok &= identical >= 0.9 and worst <= 4
    print(
        f"pHash agreement over {len(all_distances)} images: identical {identical:.1%} (target >= 90%), "
        f"max distance {worst} (target <= 4)"
    )
    return ok


def embedded_runtime(var: Path) -> None:
    os.environ.update(BENCHFORGE_VAR_DIR=str(var), MEDIA_ROOT=str(var / "media"), DJANGO_SETTINGS_MODULE="benchforge.settings")
    for name in ("DATABASE_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    os.environ["BENCHFORGE_JOB_RUNNER"] = "inline"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.DEBUG = False  # DEBUG keeps every SQL statement
    call_command("migrate", verbosity=0)


def hashing_alone(images: list[bytes], media: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (of this process and its worker processes) to analyse every image as
    ingest does, with the workers imports use and in the same messages (batches of INGEST_BATCH
    files, two messages per worker process; a file at a time in the threads without processes).
    With `media`, each image's content-addressed files are written under it too, as ingest
    writes them: what an import cannot do without, whatever its database side costs."""
    from curation import hashing
    from curation.content import Disk
    from curation.imaging import ImageLimits
    from curation.services import INGEST_BATCH
    from curation.services.ingest import THUMBNAIL_PX, ingest_processes, ingest_threads, messages

    processes, limits = ingest_processes(), ImageLimits()
    disk = Disk(str(media)) if media is not None else None
    chunks = [chunk for n in range(0, len(images), INGEST_BATCH) for chunk in messages(images[n : n + INGEST_BATCH], processes)]

    def analyse(chunk: list[bytes]):
        future = hashing.submit(processes, chunk, limits, THUMBNAIL_PX, disk) if processes else None
        return future.result() if future is not None else hashing.analyse_many(chunk, limits, THUMBNAIL_PX, disk)

    with ThreadPoolExecutor(ingest_threads()) as pool:
        list(pool.map(analyse, chunks[: 2 * max(processes, 1)]))  # the worker processes start (kept for the imports)
        started, cpu = time.perf_counter(), _cpu_seconds()
        list(pool.map(analyse, chunks))
        return time.perf_counter() - started, _cpu_seconds() - cpu


def _cpu_seconds() -> float:
    """CPU time of this process and of its worker processes (ingest's pool; its threads'
    time is in this process's)."""
    return time.process_time() + sum(_process_cpu(pid) for pid in _worker_pids())


def _worker_pids() -> list[int]:
    from curation import hashing

    pool = hashing._pool
    return list(pool._processes) if pool is not None and pool._processes else []


def _process_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def bench_imports(args, var: Path) -> bool:
    from django.contrib.auth import get_user_model

    from bench.qc import write_tsv
    from benchforge.roles import RESEARCHER, set_role
    from curation.services import ingest as ingesting
    from curation.services.ingest import ingest_processes, ingest_threads

    lead = get_user_model().objects.create_user("bench-lead", password="x" * 16)
    set_role(lead, RESEARCHER)
    ok = True
    tsv = var / "bench.tsv"
    write_tsv(tsv, args.tsv_rows)
    images = [base64.b64decode(v) for v in _tsv_images(tsv)]
    folder = var / "photos"
    folder.mkdir()
    rng = np.random.default_rng(11)
    for n in range(args.folder_images):
        (folder / f"photo-{n:05d}.jpg").write_bytes(photo_like_jpeg(rng, (800, 600)))
    photos = [p.read_bytes() for p in sorted(folder.iterdir())]
    photo_tsv = var / "photos.tsv"
    photo_rows = len(photos) * 5 // 4  # every fifth row shares the image of the row before
    if photos:
        write_tsv(photo_tsv, photo_rows, pictures=photos)
    ways = ["batched"] + (["one by one"] if args.one_by_one else [])
    print(
        f"imports on the embedded runtime, {ingest_threads()} threads, {ingest_processes()} worker processes "
        f"(load {os.getloadavg()[0]:.1f}):"
    )
    for way in ways:
        if way == "one by one":
            ingesting.Ingester.store = ingesting.Ingester.store_one_by_one
        ok &= _tsv_import(lead, var, tsv, args.tsv_rows, images, way, "small generated 96x72 JPEGs", rows_target=True)
        if not photos:
            continue
        ok &= _tsv_import(lead, var, photo_tsv, photo_rows, photos, way, "the folder's photo-like 800x600 JPEGs")
        hashing, hashing_cpu = hashing_alone(photos)
        for kind, what, path, server in _image_sources(var, folder, args.url_delays, args.url_order):
            ok &= _image_import(lead, kind, what, path, len(photos), way, (hashing, hashing_cpu), server)
    return ok


def _image_sources(var: Path, folder: Path, delays: list[float], order: str):
    """The folder's photos as a folder, a zip archive (deflated, as `zip` makes it) and a URL list
    served over loopback by plain HTTP servers in a process of their own (its CPU is printed
    apart from the import's), one reply taking each of `delays` seconds."""
    yield "ingest_folder", "folder", folder, None
    archive = var / "photos.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(folder.iterdir()):
            zipped.write(path, f"photos/{path.name}")
    yield "ingest_zip", f"zip ({archive.stat().st_size / 1e6:.0f} MB, deflated)", archive, None
    urls = var / "photos-urls.txt"
    from django.conf import settings

    settings.BENCHFORGE_URL_IMPORT_ALLOW_PRIVATE = True  # the servers are on loopback
    for delay in delays:
        server = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).parent / "support" / "image_server.py"),
                str(folder),
                "--sites",
                str(SITES),
                "--delay",
                str(delay),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            ports = server.stdout.readline().strip().split(",")
            names = sorted(path.name for path in folder.iterdir())
            if order == "mixed":  # site after site
                site_of = [n % len(ports) for n in range(len(names))]
            else:  # each site's URLs together
                site_of = [n * len(ports) // len(names) for n in range(len(names))]
            urls.write_text("".join(f"http://127.0.0.1:{ports[site]}/{name}\n" for site, name in zip(site_of, names)))
            what = f"URL list ({len(ports)} loopback sites, {order}, replies after {delay * 1000:.0f} ms)"
            yield "ingest_url_list", what, urls, server.pid
        finally:
            server.terminate()
            server.wait()


def _image_import(lead, kind: str, what: str, path: Path, images: int, way: str, alone: tuple, server: int | None) -> bool:
    """Import the photos from `path` with a `kind` job and print its speed beside their hashing
    alone (wall and CPU seconds); `server`: the pid of the HTTP server the images come from."""
    from curation import services as curation
    from jobs.services import run_now

    benchmark = curation.create_benchmark(name=f"{what} {way}", user=lead)
    hashing, hashing_cpu = alone
    served = _process_cpu(server) if server else 0.0
    started, cpu = time.perf_counter(), _cpu_seconds()
    job = run_now(curation.create_import_job(kind, benchmark, user=lead, path=str(path)))
    took, took_cpu = time.perf_counter() - started, _cpu_seconds() - cpu
    served = _process_cpu(server) - served if server else 0.0
    assert job.status == "succeeded", job.message
    assert job.result["added"] == images, job.result
    ratio = took / hashing
    server_note = f"; the HTTP server, on the same cores, {served:.1f} s" if server else ""
    print(
        f"  {what}: {images:,} photo-like 800x600 JPEGs, {way}: {took:6.1f} s = {images / took:5.0f} images/s; "
        f"hashing alone {hashing:5.1f} s; import / hashing {ratio:.2f}x (target <= 1.3x)\n"
        f"    CPU time: import {took_cpu:6.1f} s, hashing alone {hashing_cpu:5.1f} s, import / hashing "
        f"{took_cpu / hashing_cpu:.2f}x{server_note} (load {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    return way != "batched" or ratio <= 1.3


def _tsv_import(lead, var: Path, tsv: Path, rows: int, images: list[bytes], way: str, what: str, rows_target=False) -> bool:
    """Import `tsv` into a new benchmark and print its speed beside its images' hashing alone."""
    from curation import services as curation
    from qc.services import import_path

    benchmark = curation.create_benchmark(name=f"{tsv.stem} {way}", user=lead)
    hashing, hashing_cpu = hashing_alone(images)
    _, files_cpu = hashing_alone(images, var / f"files-alone-{tsv.stem}-{way.replace(' ', '-')}")
    started, cpu, main = time.perf_counter(), _cpu_seconds(), time.thread_time()
    job = import_path(benchmark, tsv, user=lead)
    took, took_cpu, main = time.perf_counter() - started, _cpu_seconds() - cpu, time.thread_time() - main
    assert job.status == "succeeded", job.message
    rate, ratio = rows / took, took / hashing
    targets = ">= 300 rows/s, <= 1.3x" if rows_target else "<= 1.3x"
    print(
        f"  MMBench TSV, {rows:,} rows ({len(images):,} images: {what}; {tsv.stat().st_size / 1e6:.1f} MB), {way}:\n"
        f"    {took:6.1f} s = {rate:5.0f} rows/s; hashing alone {hashing:5.1f} s; import / hashing {ratio:.2f}x "
        f"(targets {targets}; {job.result['imported']:,} items, {job.result['images']:,} images)\n"
        f"    CPU time (every thread and worker process; load from other processes left out): import {took_cpu:6.1f} s = "
        f"{rows / took_cpu:5.0f} rows/s; hashing alone {hashing_cpu:5.1f} s; import / hashing "
        f"{took_cpu / hashing_cpu:.2f}x (load {os.getloadavg()[0]:.1f})\n"
        f"    hashing and writing the same files alone (no database): CPU {files_cpu:6.1f} s = "
        f"{files_cpu / hashing_cpu:.2f}x hashing alone, the floor of import / hashing with files on this disk\n"
        f"    of which the job's own thread (reading, checks, the database side; the job runs here): {main:6.1f} s = "
        f"{rows / main:5.0f} rows/s",
        flush=True,
    )
    return way != "batched" or (ratio <= 1.3 and (rate >= 300 or not rows_target))


def _tsv_images(path: Path):
    with path.open("rb") as handle:
        for record in TableReader(handle, name=path.name, format=TSV, required=("image",)):
            if not record.problem and len(record.value["image"]) > 16:  # base64, not a shared-image index
                yield record.value["image"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=60, help="JPEGs per size (default 60)")
    parser.add_argument("--passes", type=int, default=3, help="timing passes, the best counts (default 3)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tsv-rows", type=int, default=10_000)
    parser.add_argument("--folder-images", type=int, default=2000, help="0: no folder import")
    parser.add_argument(
        "--url-delays",
        type=lambda text: [float(v) for v in text.split(",")],
        default=[0.0, 0.1],
        help="seconds each loopback server waits before a reply, one URL-list import each (default 0,0.1)",
    )
    parser.add_argument(
        "--url-order",
        choices=("mixed", "grouped"),
        default="mixed",
        help="URL lists: the sites' URLs one after another (mixed) or each site's together (grouped)",
    )
    parser.add_argument("--one-by-one", action="store_true", help="also time storing one image at a time")
    parser.add_argument("--no-imports", action="store_true")
    parser.add_argument("--no-hashing", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    ok = True
    if not args.no_hashing:
        ok &= bench_hashing(args.images, args.passes, rng)
    if not args.no_imports:
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
            embedded_runtime(Path(tmp) / "var")
            ok &= bench_imports(args, Path(tmp))
    print("all targets met" if ok else "SOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
