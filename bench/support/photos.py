"""Synthetic photographs for the benches: made locally with Pillow and numpy, nothing downloaded.

A scene is a smooth colour field, a light gradient (sky brighter than ground, or the reverse),
a handful of hard-edged shapes, a slight lens blur, fine texture and sensor noise: enough of a
photograph's structure that perceptual hashes behave as on photographs (the low frequencies
carry the picture; noise and re-encoding only move the bits that sit near the median).
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw, ImageFilter


def scene(rng: np.random.Generator, size: tuple[int, int], *, noise: float = 6.0) -> Image.Image:
    """One random photo-like RGB scene of `size` (width, height)."""
    w, h = size
    field = rng.random((6, 8, 3)) * 255
    # Light falls from above more often than not: a vertical ramp of random strength and sign.
    ramp = np.linspace(1, -1, 6)[:, None, None] * rng.uniform(-40, 90)
    field = np.clip(field + ramp, 0, 255)
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
    return add_noise(img, rng, noise)


def add_noise(img: Image.Image, rng: np.random.Generator, sigma: float) -> Image.Image:
    if sigma <= 0:
        return img
    arr = np.asarray(img, dtype=np.int16)
    arr = arr + rng.normal(0, sigma, arr.shape).astype(np.int16)
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), img.mode)


def encode(img: Image.Image, fmt: str = "JPEG", **params) -> bytes:
    out = io.BytesIO()
    if fmt == "JPEG":
        params.setdefault("quality", 90)
    img.save(out, fmt, **params)
    return out.getvalue()


def photo_like_jpeg(rng: np.random.Generator, size: tuple[int, int], quality: int = 90) -> bytes:
    return encode(scene(rng, size), "JPEG", quality=quality)
