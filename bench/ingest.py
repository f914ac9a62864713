"""Image ingest performance: our hashing vs imagehash, pHash agreement, near-dup query time.

Run: .venv/bin/python bench/ingest.py [--images N] [--index-size 1000000]

Prints, in one run:
  * images/s of curation.imaging.analyse_image (MD5 + SHA-256 + pHash + dHash + validation,
    one reduced JPEG decode) vs imagehash.phash on a full decode, per size (target >= 3x);
    the same with a 256 px thumbnail made from the same decode, as ingest does;
  * share of pHashes identical to imagehash's (target >= 90%) and the maximum distance
    (target <= 4);
  * median near-duplicate query time at radius 10 over 1,000,000 stored hashes, one core
    (target < 2 ms).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import imagehash  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image, ImageDraw, ImageFilter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from curation.imaging import analyse_image, hamming, hex_to_hash, perceptual_hashes  # noqa: E402
from curation.neardup import HashIndex  # noqa: E402

SIZES = [(1024, 768), (3000, 2000)]
THUMBNAIL_PX = 256


def photo_like_jpeg(rng: np.random.Generator, size: tuple[int, int], quality: int = 90) -> bytes:
    """A synthetic 'photo': smooth colour field, a few soft shapes, fine texture and sensor noise."""
    w, h = size
    field = rng.random((6, 8, 3)) * 255
    img = Image.fromarray(field.astype(np.uint8), "RGB").resize((w, h), Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(4, 12))):
        x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
        rw, rh = int(rng.integers(w // 20, w // 3)), int(rng.integers(h // 20, h // 3))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x0 + rw, y0 + rh), fill=colour)
        else:
            draw.rectangle((x0, y0, x0 + rw, y0 + rh), fill=colour)
    img = img.filter(ImageFilter.GaussianBlur(radius=max(1.0, w / 800)))
    arr = np.asarray(img, dtype=np.int16)
    arr = arr + rng.normal(0, 6, arr.shape).astype(np.int16)
    img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")
    out = io.BytesIO()
    img.save(out, "JPEG", quality=quality)
    return out.getvalue()


def reference_phash(data: bytes) -> int:
    return hex_to_hash(str(imagehash.phash(Image.open(io.BytesIO(data)))))


def timed(fn, items) -> tuple[float, list]:
    start = time.perf_counter()
    results = [fn(x) for x in items]
    return time.perf_counter() - start, results


def bench_hashing(count: int, rng: np.random.Generator) -> bool:
    ok = True
    all_distances: list[int] = []
    for size in SIZES:
        files = [photo_like_jpeg(rng, size) for _ in range(count)]
        ref_time, ref_hashes = timed(reference_phash, files)
        our_time, ours = timed(perceptual_hashes, files)
        full_time, _ = timed(analyse_image, files)
        thumb_time, _ = timed(lambda d: analyse_image(d, thumbnail_size=THUMBNAIL_PX), files)
        distances = [hamming(r, phash) for r, (phash, _dhash) in zip(ref_hashes, ours)]
        all_distances += distances
        speedup = ref_time / our_time
        ok &= speedup >= 3
        mb = sum(map(len, files)) / count / 1e6
        print(f"{size[0]}x{size[1]} ({count} JPEGs, {mb:.2f} MB each):")
        print(f"    imagehash.phash, full decode           {count / ref_time:7.1f} img/s")
        print(f"    ours: pHash + dHash, one decode        {count / our_time:7.1f} img/s = {speedup:4.1f}x (target >= 3x)")
        print(f"    ours + MD5 + SHA-256 + checks (ingest) {count / full_time:7.1f} img/s = {ref_time / full_time:4.1f}x")
        print(f"    ... + {THUMBNAIL_PX}px colour thumbnail          {count / thumb_time:7.1f} img/s = {ref_time / thumb_time:4.1f}x")
        print(f"    pHash identical to imagehash: {distances.count(0) / count:6.1%}, max distance {max(distances)}")
    identical = all_distances.count(0) / len(all_distances)
    worst = max(all_distances)
    ok &= identical >= 0.9 and worst <= 4
    print(
        f"pHash agreement over {len(all_distances)} images: identical {identical:.1%} (target >= 90%), "
        f"max distance {worst} (target <= 4)"
    )
    return ok


def bench_index(size: int, queries: int, rng: np.random.Generator) -> bool:
    hashes = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=size, dtype=np.int64)
    index = HashIndex()
    index.add_many(np.arange(size, dtype=np.int64), hashes)
    # Queries near stored hashes (a few flipped bits) plus random ones.
    probes = []
    for i in range(queries):
        base = int(hashes[rng.integers(0, size)])
        if i % 2:
            for bit in rng.choice(64, size=int(rng.integers(0, 8)), replace=False):
                base ^= 1 << int(bit)
            base = (base + (1 << 63)) % (1 << 64) - (1 << 63)
        else:
            base = int(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max))
        probes.append(base)
    index.query(probes[0], 10)  # warm up scratch buffers
    timings = []
    found = 0
    for probe in probes:
        start = time.perf_counter()
        ids, _ = index.query(probe, 10)
        timings.append(time.perf_counter() - start)
        found += len(ids)
    median_ms = statistics.median(timings) * 1000
    print(
        f"near-dup query, radius 10 over {size:,} hashes: median {median_ms:.3f} ms, "
        f"p95 {sorted(timings)[int(0.95 * len(timings))] * 1000:.3f} ms ({queries} queries, "
        f"{found} matches) (target < 2 ms)"
    )
    return median_ms < 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=60, help="JPEGs per size (default 60)")
    parser.add_argument("--index-size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    hashing_ok = bench_hashing(args.images, rng)
    index_ok = bench_index(args.index_size, args.queries, rng)
    print("all targets met" if hashing_ok and index_ok else "SOME TARGETS MISSED")
    return 0 if hashing_ok and index_ok else 1


if __name__ == "__main__":
    sys.exit(main())
