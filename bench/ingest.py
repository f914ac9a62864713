"""Image ingest performance: our hashing vs imagehash, pHash agreement.

Run: .venv/bin/python bench/ingest.py [--images N]

Prints, in one run:
  * images/s of curation.imaging.analyse_image (MD5 + SHA-256 + pHash + dHash + validation,
    one reduced JPEG decode) vs imagehash.phash on a full decode, per size (target >= 3x);
    the same with a 256 px thumbnail made from the same decode, as ingest does;
  * share of pHashes identical to imagehash's (target >= 90%) and the maximum distance
    (target <= 4).
Near-duplicate search is measured by bench/neardup.py.

Timing on a shared machine: the hashers take turns on every image (so load from other
processes falls on all of them alike) and each is timed by the CPU time of this process,
best of --passes passes, which is what one core spends on it. Wall-clock speed-ups and query
times are printed next to them.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import imagehash  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.support.photos import photo_like_jpeg  # noqa: E402
from curation.imaging import analyse_image, hamming, hex_to_hash, perceptual_hashes  # noqa: E402

SIZES = [(1024, 768), (3000, 2000)]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=60, help="JPEGs per size (default 60)")
    parser.add_argument("--passes", type=int, default=3, help="timing passes, the best counts (default 3)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    ok = bench_hashing(args.images, args.passes, rng)
    print("all targets met" if ok else "SOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
