"""Pictures for the demo benchmark, drawn in code (no downloads, no data files).

Each picture suits one AlignMMBench task (a bar chart for Chart, fruit to count for Counting,
a sign for OCR...). The drawing is seeded, so the same bytes come out on every run and
re-seeding adds nothing. Two pictures are deliberately flawed to show the screening flags:
one is below the 512 px minimum edge, one is a re-encoded copy of another (a near duplicate).
"""

from __future__ import annotations

import io
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageEnhance, ImageFont


@dataclass(frozen=True)
class DemoPicture:
    name: str
    task_slug: str
    data: bytes


WORDS = [
    "OPEN",
    "EXIT",
    "CAFE",
    "SALE",
    "BUS 42",
    "MUSEUM",
    "PLATFORM 3",
    "NO PARKING",
    "BAKERY",
    "LIBRARY",
    "PHARMACY",
    "TICKETS",
]


def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _colour(rng: random.Random, low: int = 0, high: int = 255) -> tuple[int, int, int]:
    return tuple(rng.randint(low, high) for _ in range(3))


def _gradient(size: tuple[int, int], start, end, angle: int = 0) -> Image.Image:
    w, h = size
    column = Image.new("RGB", (1, 256))
    for y in range(256):
        t = y / 255
        column.putpixel((0, y), tuple(round(a + (b - a) * t) for a, b in zip(start, end)))
    img = column.resize((w, h), Image.Resampling.BILINEAR)
    return img.rotate(angle, resample=Image.Resampling.BICUBIC, fillcolor=end) if angle else img


def scenery(rng: random.Random, size=(960, 640)) -> Image.Image:
    w, h = size
    img = _gradient(size, _colour(rng, 90, 200), _colour(rng, 200, 255))
    draw = ImageDraw.Draw(img)
    sun_x, sun_r = rng.randint(w // 8, w * 7 // 8), rng.randint(h // 14, h // 7)
    draw.ellipse((sun_x - sun_r, h // 6 - sun_r, sun_x + sun_r, h // 6 + sun_r), fill=_colour(rng, 200, 255))
    for layer in range(3):
        base = h // 2 + layer * h // 7
        points = [(0, h)] + [(x, base - rng.randint(0, h // 4)) for x in range(0, w + 80, rng.randint(80, 200))] + [(w, h)]
        draw.polygon(points, fill=_colour(rng, 20, 140))
    return img


def bar_chart(rng: random.Random, size=(900, 640)) -> Image.Image:
    w, h = size
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    font = _font(22)
    draw.text((40, 20), rng.choice(["Monthly sales", "Visitors per year", "Rainfall (mm)", "Votes"]), fill="black", font=font)
    left, bottom = 80, h - 60
    draw.line((left, 70, left, bottom), fill="black", width=3)
    draw.line((left, bottom, w - 30, bottom), fill="black", width=3)
    bars = rng.randint(3, 8)
    width = (w - left - 60) // bars
    for i in range(bars):
        top = rng.randint(90, bottom - 30)
        x = left + 20 + i * width
        draw.rectangle((x, top, x + width * 2 // 3, bottom), fill=_colour(rng, 30, 220))
        draw.text((x, bottom + 10), chr(65 + i), fill="black", font=font)
    return img


def fruit_stall(rng: random.Random, size=(800, 800)) -> Image.Image:
    img = Image.new("RGB", size, _colour(rng, 120, 200))
    draw = ImageDraw.Draw(img)
    w, h = size
    draw.rectangle((0, h * 2 // 3, w, h), fill=_colour(rng, 60, 120))
    for _ in range(rng.randint(5, 17)):
        r = rng.randint(25, 55)
        x, y = rng.randint(r, w - r), rng.randint(r, h - r)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=_colour(rng), outline="black", width=2)
    return img


def street_sign(rng: random.Random, size=(1024, 640)) -> Image.Image:
    w, h = size
    img = _gradient(size, _colour(rng, 0, 120), _colour(rng, 100, 220), angle=rng.randint(0, 359))
    draw = ImageDraw.Draw(img)
    for _ in range(rng.randint(2, 5)):  # buildings behind the sign
        x, bw = rng.randint(0, w - 100), rng.randint(80, 260)
        draw.rectangle((x, rng.randint(h // 4, h * 2 // 3), x + bw, h), fill=_colour(rng, 40, 200))
    sw, sh = rng.randint(w // 3, w // 2), rng.randint(h // 5, h // 3)
    x0, y0 = rng.randint(20, w - sw - 20), rng.randint(20, h - sh - 20)
    draw.rounded_rectangle((x0, y0, x0 + sw, y0 + sh), radius=20, fill=_colour(rng, 0, 90), outline="white", width=6)
    draw.text((x0 + 24, y0 + sh // 2 - 30), rng.choice(WORDS), fill="white", font=_font(56))
    return img


def poster(rng: random.Random, size=(640, 900)) -> Image.Image:
    w, h = size
    img = _gradient(size, _colour(rng), _colour(rng))
    draw = ImageDraw.Draw(img)
    for _ in range(rng.randint(3, 7)):
        x, y, r = rng.randint(0, w), rng.randint(0, h), rng.randint(40, 200)
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape((x - r, y - r, x + r, y + r), fill=_colour(rng))
    draw.rectangle((0, h - 200, w, h), fill=_colour(rng, 0, 60))
    draw.text((30, h - 170), rng.choice(["SUMMER FAIR", "JAZZ NIGHT", "BOOK WEEK", "OPEN DAY"]), fill="white", font=_font(58))
    draw.text((30, h - 90), f"{rng.randint(1, 28)} / {rng.randint(1, 12)}  ·  free entry", fill="white", font=_font(30))
    return img


def odd_one_out(rng: random.Random, size=(720, 720)) -> Image.Image:
    img = Image.new("RGB", size, _colour(rng, 180, 255))
    draw = ImageDraw.Draw(img)
    n = rng.randint(3, 6)
    cell = size[0] // n
    odd = (rng.randrange(n), rng.randrange(n))
    for j in range(n):
        row_colour = _colour(rng, 0, 200)  # one colour per row, so rows differ between puzzles
        for i in range(n):
            x = i * cell + cell // 2 + rng.randint(-cell // 6, cell // 6)
            y = j * cell + cell // 2 + rng.randint(-cell // 6, cell // 6)
            r = cell // 3 if (i, j) != odd else cell // 5
            draw.regular_polygon((x, y, r), n_sides=rng.choice([3, 6]) if (i, j) == odd else 4, fill=row_colour)
    return img


def comparison(rng: random.Random, size=(1000, 560)) -> Image.Image:
    w, h = size
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    for panel in range(2):
        x0 = panel * w // 2
        draw.rectangle((x0 + 10, 10, x0 + w // 2 - 10, h - 10), fill=_colour(rng, 150, 255), outline="black", width=3)
        for _ in range(rng.randint(2, 6)):
            cx, cy, r = x0 + rng.randint(60, w // 2 - 60), rng.randint(60, h - 60), rng.randint(20, 60)
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=_colour(rng, 0, 150))
    draw.text((w // 4 - 40, h - 60), "before", fill="black", font=_font(32))
    draw.text((3 * w // 4 - 40, h - 60), "after", fill="black", font=_font(32))
    return img


def flowchart(rng: random.Random, size=(880, 700)) -> Image.Image:
    w, h = size
    img = Image.new("RGB", size, _colour(rng, 225, 255))
    draw = ImageDraw.Draw(img)
    font = _font(24)
    steps = rng.randint(3, 5)
    boxes = []
    for i in range(steps):
        x = rng.randint(40, w - 300)
        y = 30 + i * (h - 60) // steps
        boxes.append((x, y, x + 240, y + 70))
        draw.rounded_rectangle(boxes[-1], radius=12, fill=_colour(rng, 120, 230), outline="black", width=3)
        draw.text(
            (x + 20, y + 22), rng.choice(["start", "check input", "valid?", "retry", "save", "done"]), fill="black", font=font
        )
    for a, b in zip(boxes, boxes[1:]):
        draw.line(((a[0] + a[2]) // 2, a[3], (b[0] + b[2]) // 2, b[1]), fill="black", width=4)
    return img


def emblem(rng: random.Random, size=(700, 700)) -> Image.Image:
    img = Image.new("RGB", size, _colour(rng, 200, 255))
    draw = ImageDraw.Draw(img)
    cx, cy = size[0] // 2 + rng.randint(-120, 120), size[1] // 2 + rng.randint(-120, 120)
    for r in range(rng.randint(250, 320), 20, -rng.randint(40, 80)):
        sides = rng.choice([0, 3, 5, 8])
        fill = _colour(rng)
        if sides:
            draw.regular_polygon((cx, cy, r), n_sides=sides, rotation=rng.randint(0, 90), fill=fill)
        else:
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
    angle = rng.random() * math.tau
    draw.line((cx, cy, cx + 300 * math.cos(angle), cy + 300 * math.sin(angle)), fill="black", width=10)
    return img


# (drawing, task slug) pairs; 35 pictures = 9 kinds x 4 variants, minus one.
KINDS: list[tuple[str, Callable[[random.Random], Image.Image], str]] = [
    ("scenery", scenery, "writing"),
    ("bar-chart", bar_chart, "chart"),
    ("fruit-stall", fruit_stall, "counting"),
    ("street-sign", street_sign, "ocr"),
    ("poster", poster, "description"),
    ("odd-one-out", odd_one_out, "reasoning"),
    ("before-after", comparison, "comparison"),
    ("flowchart", flowchart, "problem"),
    ("emblem", emblem, "recognition"),
]


def _jpeg(img: Image.Image, quality: int = 90) -> bytes:
    out = io.BytesIO()
    img.save(out, "JPEG", quality=quality)
    return out.getvalue()


def demo_pictures() -> Iterator[DemoPicture]:
    """36 pictures: 34 distinct ones at useful sizes, one too small, one near duplicate."""
    first = None
    count = 0
    for variant in range(4):
        for kind, draw, task in KINDS:
            if count == 35:
                break
            rng = random.Random(f"{kind}-{variant}")
            img = draw(rng)
            if count == 34:  # deliberately below the 512 px minimum edge: flagged low resolution
                img = img.resize((img.width * 400 // max(img.size), img.height * 400 // max(img.size)))
            first = first or img
            yield DemoPicture(f"{kind}-{variant + 1}.jpg", task, _jpeg(img))
            count += 1
    # A slightly cropped, brighter, more compressed copy of the first picture: a near duplicate.
    w, h = first.size
    copy = ImageEnhance.Brightness(first.crop((w // 60, h // 60, w, h))).enhance(1.08)
    yield DemoPicture("scenery-1-copy.jpg", KINDS[0][2], _jpeg(copy, quality=70))
