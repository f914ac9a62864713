"""Sets of 64-bit perceptual hashes for the near-duplicate benches, as uint64 arrays.

* `uniform`: random bits (the easy case for any index).
* `issue_clustered`: the model first used to measure the problem (20,000 centres, 0-6 random bit
  flips, the 16 high bits biased towards 0).
* `image_derived`: hashes as real image collections produce them, derived from real image
  operations in two steps:

  1. Operations, for real (Pillow, the product's own `perceptual_hashes`): photo-like scenes are
     rendered at 640x480, saved as JPEG and hashed; then each is re-encoded, resized, cropped,
     brightened, captioned, letterboxed, rotated, shot again in a burst (the camera moved a
     little, new sensor noise, new exposure) and put through chains of these, and every variant
     file is hashed. The XOR of a variant's pHash with its scene's pHash is what the operation
     did to the bits: a library of real edit masks, and a table of bits changed per operation.
     Near-constant pictures (flat colours, faint noise, faint gradients, blank pages with a few
     lines, dark frames) are rendered and hashed too.
  2. Scaling up to millions: one scene per family of pictures. A family's first hash is the
     pHash of a new scene, rendered in numpy at the 32x32 grey size pHash reduces every picture
     to (the same scene model, same DCT and median rule as `curation.imaging.phash_of_gray`,
     checked bit for bit against it). Family sizes follow a power law (most scenes once, a few
     reposted or burst-shot thousands of times); every other member is the scene's hash XOR an
     edit mask drawn from step 1. A share of the set are the near-constant hashes of step 1,
     which pile up on a few values as blank pictures do.

  Step 1 measures which bits real operations flip and how many; step 2 applies them to many
  scenes (a mask measured on one scene applied to another keeps how many and which DCT bits
  flip, not exactly the same bits the new scene would flip: the approximation that makes ten
  million hashes take a minute rather than a day).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw, ImageEnhance

from bench.support import photos
from curation.imaging import perceptual_hashes, phash_of_gray, to_unsigned

U64 = np.uint64


def uniform(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True)


def flip_random_bits(values: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each value with `counts[i]` distinct random bits flipped."""
    out = values.copy()
    keys = rng.random((len(values), 64)).argsort(axis=1)  # a random order of the 64 bits per row
    for k in range(int(counts.max(initial=0))):
        rows = counts > k
        out[rows] ^= U64(1) << keys[rows, k].astype(np.uint64)
    return out


def issue_clustered(n: int, rng: np.random.Generator, centres: int = 20_000) -> np.ndarray:
    """20,000 centres whose 16 high bits are mostly 0 (each set with p = 0.15), members with 0-6
    random bits flipped: the model the issue's first measurement used."""
    low = uniform(centres, rng) & U64((1 << 48) - 1)
    high_bits = rng.random((centres, 16)) < 0.15
    high = (high_bits.astype(np.uint64) << np.arange(48, 64, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
    base = (low | high)[rng.integers(0, centres, n)]
    out = np.empty(n, dtype=np.uint64)
    for start in range(0, n, 1 << 20):
        stop = min(n, start + (1 << 20))
        out[start:stop] = flip_random_bits(base[start:stop], rng.integers(0, 7, stop - start), rng)
    return out


# ---- step 1: real operations on real files -----------------------------------------------

SCENE_SIZE = (640, 480)
_MARGIN = 40  # the canvas is larger than the picture so a burst can move the camera


def _jpeg(img: Image.Image, quality: int = 85) -> bytes:
    return photos.encode(img.convert("RGB"), "JPEG", quality=quality)


def _crop(img: Image.Image, rng: np.random.Generator, area: float) -> Image.Image:
    """Trim `area` of the picture (the kept part's aspect may differ a little), anywhere."""
    w, h = img.size
    keep_w = math.sqrt(1 - area) * rng.uniform(0.95, 1.05)
    keep_h = (1 - area) / keep_w
    cw, ch = min(w, round(w * keep_w)), min(h, round(h * keep_h))
    x, y = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
    return img.crop((x, y, x + cw, y + ch))


def _resize(img: Image.Image, factor: float) -> Image.Image:
    w, h = img.size
    return img.resize((max(1, round(w * factor)), max(1, round(h * factor))), Image.Resampling.LANCZOS)


def _caption(img: Image.Image, rng: np.random.Generator) -> Image.Image:
    out = img.copy()
    w, h = out.size
    draw = ImageDraw.Draw(out)
    bar = int(h * rng.uniform(0.08, 0.16))
    draw.rectangle((0, h - bar, w, h), fill=(0, 0, 0) if rng.random() < 0.5 else (255, 255, 255))
    draw.text((w // 20, h - bar + bar // 4), "caption text reposted", fill=(128, 128, 128))
    return out


def _watermark(img: Image.Image, rng: np.random.Generator) -> Image.Image:
    out = img.convert("RGBA")
    layer = Image.new("RGBA", out.size, (0, 0, 0, 0))
    w, h = out.size
    draw = ImageDraw.Draw(layer)
    x, y = int(w * rng.uniform(0.55, 0.75)), int(h * rng.uniform(0.8, 0.9))
    draw.rectangle((x, y, x + w // 4, y + h // 12), fill=(255, 255, 255, 110))
    draw.text((x + 4, y + 2), "@somebody", fill=(0, 0, 0, 160))
    return Image.alpha_composite(out, layer).convert("RGB")


def _letterbox(img: Image.Image, rng: np.random.Generator) -> Image.Image:
    w, h = img.size
    side = max(w, h)
    colour = (0, 0, 0) if rng.random() < 0.5 else (255, 255, 255)
    out = Image.new("RGB", (side, side), colour)
    out.paste(img, ((side - w) // 2, (side - h) // 2))
    return out


def _rotate(img: Image.Image, degrees: float) -> Image.Image:
    w, h = img.size
    turned = img.rotate(degrees, resample=Image.Resampling.BICUBIC)
    trim = math.ceil(max(w, h) * math.sin(math.radians(abs(degrees))))
    return turned.crop((trim, trim, w - trim, h - trim))


def _burst(canvas: Image.Image, rng: np.random.Generator, shift: float) -> Image.Image:
    """Another shot of the same scene: the camera moved by up to `shift` of the frame, the
    exposure changed a little, fresh sensor noise."""
    w, h = SCENE_SIZE
    dx = int(round(rng.uniform(-shift, shift) * w))
    dy = int(round(rng.uniform(-shift, shift) * h))
    dx, dy = max(-_MARGIN, min(_MARGIN, dx)), max(-_MARGIN, min(_MARGIN, dy))
    shot = canvas.crop((_MARGIN + dx, _MARGIN + dy, _MARGIN + dx + w, _MARGIN + dy + h))
    shot = ImageEnhance.Brightness(shot).enhance(rng.uniform(0.9, 1.1))
    return photos.add_noise(shot, rng, 4.0)


def _operations(rng: np.random.Generator):
    """(name, function(base picture, canvas) -> file bytes): every variant one scene gets."""
    ops = [
        ("re-encode JPEG q75", lambda b, c: _jpeg(b, 75)),
        ("re-encode JPEG q50", lambda b, c: _jpeg(b, 50)),
        ("re-encode JPEG q25", lambda b, c: _jpeg(b, 25)),
        ("re-encode WebP q70", lambda b, c: photos.encode(b, "WEBP", quality=70)),
        ("PNG screenshot at 80%", lambda b, c: photos.encode(_resize(b, 0.8), "PNG")),
        ("resize 50%", lambda b, c: _jpeg(_resize(b, 0.5))),
        ("resize 25%", lambda b, c: _jpeg(_resize(b, 0.25))),
        ("thumbnail 128 px", lambda b, c: _jpeg(_resize(b, 0.2))),
        ("crop 5% of the area", lambda b, c: _jpeg(_crop(b, rng, 0.05))),
        ("crop 10%", lambda b, c: _jpeg(_crop(b, rng, 0.10))),
        ("crop 25%", lambda b, c: _jpeg(_crop(b, rng, 0.25))),
        ("brightness x0.7 / x1.3", lambda b, c: _jpeg(ImageEnhance.Brightness(b).enhance(rng.choice([0.7, 1.3])))),
        ("contrast x0.75 / x1.3", lambda b, c: _jpeg(ImageEnhance.Contrast(b).enhance(rng.choice([0.75, 1.3])))),
        ("greyscale", lambda b, c: _jpeg(b.convert("L"))),
        ("caption bar", lambda b, c: _jpeg(_caption(b, rng))),
        ("watermark", lambda b, c: _jpeg(_watermark(b, rng))),
        ("letterboxed square", lambda b, c: _jpeg(_letterbox(b, rng))),
        ("rotated 2 degrees", lambda b, c: _jpeg(_rotate(b, rng.choice([-2.0, 2.0])))),
        ("burst shot, camera moved <= 1%", lambda b, c: _jpeg(_burst(c, rng, 0.01), 90)),
        ("burst shot, camera moved <= 3%", lambda b, c: _jpeg(_burst(c, rng, 0.03), 90)),
        ("burst shot, camera moved <= 6%", lambda b, c: _jpeg(_burst(c, rng, 0.06), 90)),
        ("crop 10% + resize 50% + JPEG q60", lambda b, c: _jpeg(_resize(_crop(b, rng, 0.10), 0.5), 60)),
        ("brightness x1.2 + resize 25% + q70", lambda b, c: _jpeg(_resize(ImageEnhance.Brightness(b).enhance(1.2), 0.25), 70)),
        ("burst <= 3% + thumbnail + caption", lambda b, c: _jpeg(_caption(_resize(_burst(c, rng, 0.03), 0.25), rng))),
    ]
    return ops


def _near_constant(rng: np.random.Generator, kind: str) -> bytes:
    w, h = SCENE_SIZE
    level = rng.integers(0, 256, 3)
    if kind == "dark frame":
        level = rng.integers(0, 24, 3)
    arr = np.broadcast_to(level.astype(np.float64), (h, w, 3)).copy()
    if kind == "faint gradient":
        angle = rng.uniform(0, 2 * math.pi)
        ramp = np.cos(angle) * np.linspace(-1, 1, w)[None, :] + np.sin(angle) * np.linspace(-1, 1, h)[:, None]
        arr += ramp[:, :, None] * rng.uniform(2, 10)
    if kind in ("faint noise", "dark frame"):
        arr += rng.normal(0, rng.uniform(0.5, 3), arr.shape)
    img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")
    if kind == "blank page":
        img = Image.new("RGB", (w, h), (255, 255, 255))
        draw = ImageDraw.Draw(img)
        for line in range(int(rng.integers(1, 6))):
            y = 40 + line * 28
            draw.rectangle((40, y, 40 + int(rng.integers(100, w - 80)), y + 8), fill=(30, 30, 30))
    return photos.encode(img, "JPEG", quality=int(rng.integers(60, 95)))


NEAR_CONSTANT_KINDS = ("flat colour", "faint noise", "faint gradient", "blank page", "dark frame")


@dataclass
class Operations:
    """What step 1 measured: per operation the bits changed, the edit masks, near-constant hashes."""

    scenes: int
    base: np.ndarray  # pHash of each scene's JPEG, uint64
    masks: np.ndarray  # XOR of every variant's pHash with its scene's
    op_of_mask: np.ndarray  # index into names
    names: list[str]
    near_constant: np.ndarray
    near_constant_kind: np.ndarray
    seconds: float
    files: int = 0
    bytes: int = 0
    distances_by_op: dict[str, np.ndarray] = field(default_factory=dict)


def measure_operations(scenes: int, rng: np.random.Generator, near_constant_per_kind: int = 60) -> Operations:
    started = time.perf_counter()
    names: list[str] = []
    base, masks, op_of_mask = [], [], []
    files = size = 0
    w, h = SCENE_SIZE
    for _ in range(scenes):
        canvas = photos.scene(rng, (w + 2 * _MARGIN, h + 2 * _MARGIN))
        data = photos.encode(canvas.crop((_MARGIN, _MARGIN, _MARGIN + w, _MARGIN + h)), "JPEG", quality=90)
        picture = Image.open(__import__("io").BytesIO(data)).convert("RGB")  # what a user would re-share
        original = to_unsigned(perceptual_hashes(data)[0])
        base.append(original)
        files, size = files + 1, size + len(data)
        ops = _operations(rng)
        if not names:
            names = [name for name, _ in ops]
        for i, (_, make) in enumerate(ops):
            variant = make(picture, canvas)
            files, size = files + 1, size + len(variant)
            masks.append(to_unsigned(perceptual_hashes(variant)[0]) ^ original)
            op_of_mask.append(i)
    near, near_kind = [], []
    for k, kind in enumerate(NEAR_CONSTANT_KINDS):
        for _ in range(near_constant_per_kind):
            data = _near_constant(rng, kind)
            files, size = files + 1, size + len(data)
            near.append(to_unsigned(perceptual_hashes(data)[0]))
            near_kind.append(k)
    result = Operations(
        scenes=scenes,
        base=np.array(base, dtype=np.uint64),
        masks=np.array(masks, dtype=np.uint64),
        op_of_mask=np.array(op_of_mask),
        names=names,
        near_constant=np.array(near, dtype=np.uint64),
        near_constant_kind=np.array(near_kind),
        seconds=time.perf_counter() - started,
        files=files,
        bytes=size,
    )
    distances = np.bitwise_count(result.masks)
    result.distances_by_op = {name: distances[result.op_of_mask == i] for i, name in enumerate(names)}
    return result


# ---- step 2: many scenes at pHash's own 32x32 size ------------------------------------------

_DCT = np.cos(np.pi * np.arange(8)[:, None] * (2 * np.arange(32)[None, :] + 1) / 64)
_GREY = np.array([0.299, 0.587, 0.114])  # ITU-R 601 luma, as Pillow's convert("L")


def phash_of_32x32(pixels: np.ndarray) -> np.ndarray:
    """pHash of many 32x32 grey pictures (uint8, shape (n, 32, 32)) at once, as uint64: the
    DCT-and-median rule of curation.imaging.phash_of_gray (which `check_batch_phash` compares)."""
    low = (_DCT @ pixels.astype(np.float64) @ _DCT.T).reshape(len(pixels), 64)
    middle = np.partition(low, (31, 32), axis=1)
    bits = low > ((middle[:, 31] + middle[:, 32]) / 2)[:, None]
    return np.packbits(bits, axis=1).view(">u8").ravel().astype(np.uint64)


def check_batch_phash(rng: np.random.Generator, count: int = 300) -> int:
    """How many of `count` rendered 32x32 scenes hash differently here than through the product."""
    pixels = render_scenes_32(count, rng)
    ours = phash_of_32x32(pixels)
    product = [to_unsigned(phash_of_gray(Image.fromarray(p, "L"))) for p in pixels]
    return int(np.count_nonzero(ours != np.array(product, dtype=np.uint64)))


def _upsample_matrix(src: int, dst: int) -> np.ndarray:
    """Pillow's bicubic resize along one axis, as a matrix (it is linear)."""
    eye = np.eye(src, dtype=np.float32)
    rows = [np.asarray(Image.fromarray(eye[i : i + 1], "F").resize((dst, 1), Image.Resampling.BICUBIC))[0] for i in range(src)]
    return np.array(rows).T  # (dst, src)


_UP_Y = _upsample_matrix(6, 32)
_UP_X = _upsample_matrix(8, 32)
_GRID = np.arange(32) + 0.5


def render_scenes_32(count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` scenes of photos.scene's model, rendered straight at 32x32 grey (uint8)."""
    field = rng.random((count, 6, 8, 3)) * 255
    field = np.clip(field + np.linspace(1, -1, 6)[None, :, None, None] * rng.uniform(-40, 90, count)[:, None, None, None], 0, 255)
    img = (_UP_Y @ (field @ _GREY) @ _UP_X.T).astype(np.float32)
    shapes = rng.integers(4, 12, count)
    for k in range(11):
        x0, y0 = rng.random(count) * 32, rng.random(count) * 32
        rw, rh = rng.uniform(32 / 20, 32 / 3, count), rng.uniform(32 / 20, 32 / 3, count)
        value = (rng.integers(0, 256, (count, 3)) @ _GREY).astype(np.float32)
        ellipse = rng.random(count) < 0.5
        # Per axis, a pixel's squared offset from the shape's centre in half-widths (an ellipse is
        # offset_x + offset_y <= 0.25); a rectangle counts 0 inside its span. Outside: infinite.
        offsets = []
        for origin, extent in ((y0, rh), (x0, rw)):
            g = (_GRID[None, :] - origin[:, None]) / extent[:, None]
            inside = (g >= 0) & (g <= 1) & (shapes > k)[:, None]
            offsets.append(np.where(inside, np.where(ellipse[:, None], (g - 0.5) ** 2, 0.0), np.inf).astype(np.float32))
        mask = offsets[0][:, :, None] + offsets[1][:, None, :] <= 0.25
        np.copyto(img, np.broadcast_to(value[:, None, None], img.shape), where=mask)
    img += rng.random(img.shape, dtype=np.float32) - 0.5  # sensor noise left after averaging down to 32x32
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def family_sizes(total: int, rng: np.random.Generator, exponent: float = 2.0, largest: int = 20_000) -> np.ndarray:
    """Sizes of picture families adding up to `total`: P(size = s) ~ s^-exponent, s <= largest."""
    s = np.arange(1, largest + 1)
    p = s.astype(np.float64) ** -exponent
    p /= p.sum()
    mean = float((s * p).sum())
    sizes = rng.choice(s, size=int(total / mean * 1.1) + 10, p=p)
    cut = int(np.searchsorted(np.cumsum(sizes), total))
    sizes = sizes[: cut + 1]
    sizes[-1] -= int(sizes.sum()) - total
    return sizes[sizes > 0]


@dataclass
class DerivedSet:
    hashes: np.ndarray
    families: int
    largest_family: int
    near_constant: int
    seconds: float


def image_derived(n: int, ops: Operations, rng: np.random.Generator, near_constant_share: float = 0.005) -> DerivedSet:
    started = time.perf_counter()
    n_flat = int(round(n * near_constant_share))
    sizes = family_sizes(n - n_flat, rng)
    out = np.empty(n, dtype=np.uint64)
    centres = np.empty(len(sizes), dtype=np.uint64)
    for start in range(0, len(sizes), 4096):
        stop = min(len(sizes), start + 4096)
        centres[start:stop] = phash_of_32x32(render_scenes_32(stop - start, rng))
    members = n - n_flat
    family_of = np.repeat(np.arange(len(sizes)), sizes)
    masks = ops.masks[rng.integers(0, len(ops.masks), members)]
    firsts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    masks[firsts] = 0  # each family holds its scene's own hash
    out[:members] = centres[family_of] ^ masks
    del family_of, masks
    out[members:] = ops.near_constant[rng.integers(0, len(ops.near_constant), n_flat)]
    rng.shuffle(out)
    return DerivedSet(out, len(sizes), int(sizes.max()), n_flat, time.perf_counter() - started)


def queries_near(stored: np.ndarray, count: int, rng: np.random.Generator, masks: np.ndarray | None = None) -> list[int]:
    """New pictures near stored ones: a stored hash with a fresh edit applied (a mask from step 1,
    or for the synthetic sets 0-7 random bits flipped)."""
    picked = stored[rng.integers(0, len(stored), count)]
    if masks is not None:
        edited = picked ^ masks[rng.integers(0, len(masks), count)]
    else:
        edited = flip_random_bits(picked, rng.integers(0, 8, count), rng)
    return [int(v) for v in edited]
