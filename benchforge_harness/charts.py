"""Hand-written SVG charts (no plotting library ships with a release): radar, quadrant, W/T/L bars."""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
WTL_COLOURS = {"win": "#59a14f", "tie": "#bab0ac", "lose": "#e15759", "failed": "#333333"}
FONT = "font-family='Helvetica, Arial, sans-serif'"


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
        f"viewBox='0 0 {width:.0f} {height:.0f}' {FONT} font-size='12'>"
        f"<title>{escape(title)}</title><rect width='100%' height='100%' fill='white'/>" + "".join(body) + "</svg>\n"
    )


def _text(
    x: float, y: float, text: str, anchor: str = "middle", size: int = 12, weight: str = "normal", fill: str = "#222"
) -> str:
    return (
        f"<text x='{x:.1f}' y='{y:.1f}' text-anchor='{anchor}' font-size='{size}' "
        f"font-weight='{weight}' fill='{fill}'>{escape(str(text))}</text>"
    )


def _legend(names: list[str], x: float, y: float) -> list[str]:
    body = []
    for i, name in enumerate(names):
        colour = PALETTE[i % len(PALETTE)]
        body.append(f"<rect x='{x:.1f}' y='{y + i * 18 - 10:.1f}' width='12' height='12' fill='{colour}'/>")
        body.append(_text(x + 18, y + i * 18, name, anchor="start"))
    return body


def radar(series: dict[str, dict[str, float | None]], axes: list[str], max_value: float, title: str) -> str:
    """One polygon per model over the axes (tasks); a missing value is drawn at the centre."""
    size, legend_width = 520, 220
    cx, cy, radius = size / 2, size / 2 + 10, size / 2 - 90
    body = [_text((size + legend_width) / 2, 22, title, size=15, weight="bold")]
    n = len(axes)
    if n < 3:
        body.append(_text(size / 2, size / 2, "a radar needs at least three tasks", fill="#888"))
        return _svg(size + legend_width, size, body, title)

    def point(index: int, value: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * index / n
        r = radius * max(0.0, min(value, max_value)) / max_value
        return cx + r * math.cos(angle), cy + r * math.sin(angle)

    for step in range(1, 6):  # rings at a fifth of the scale each
        ring = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, max_value * step / 5) for i in range(n)))
        body.append(f"<polygon points='{ring}' fill='none' stroke='#ddd'/>")
        if step < 5:  # the outer ring's value would sit on the first axis label
            lx, ly = point(0, max_value * step / 5)
            body.append(_text(lx + 4, ly - 2, f"{max_value * step / 5:g}", anchor="start", size=9, fill="#999"))
    for i, axis in enumerate(axes):
        x, y = point(i, max_value)
        body.append(f"<line x1='{cx:.1f}' y1='{cy:.1f}' x2='{x:.1f}' y2='{y:.1f}' stroke='#ddd'/>")
        lx, ly = point(i, max_value * 1.12)
        anchor = "middle" if abs(lx - cx) < 10 else ("start" if lx > cx else "end")
        body.append(_text(lx, ly + 4, axis, anchor=anchor, size=11))
    for index, (_model, values) in enumerate(series.items()):
        colour = PALETTE[index % len(PALETTE)]
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, values.get(a) or 0.0) for i, a in enumerate(axes)))
        body.append(f"<polygon points='{points}' fill='{colour}' fill-opacity='0.12' stroke='{colour}' stroke-width='2'/>")
    body += _legend(list(series), size + 10, 60)
    return _svg(size + legend_width, size, body, title)


def quadrant(points: dict[str, tuple[float | None, float | None]], title: str, x_label: str, y_label: str) -> str:
    """Models by average score (x) and alignment (y), split at the means of the finite values.

    An infinite alignment (every seed group scored identically) is drawn on the top edge, marked ∞.
    """
    width, height, legend_width = 560, 440, 220
    left, right, top, bottom = 70, width - 20, 50, height - 60
    body = [_text((width + legend_width) / 2, 24, title, size=15, weight="bold")]
    usable = {m: (x, y) for m, (x, y) in points.items() if x is not None and y is not None}
    if not usable:
        body.append(_text(width / 2, height / 2, "no model has both an average score and an alignment score", fill="#888"))
        return _svg(width + legend_width, height, body, title)
    xs = [x for x, _ in usable.values()]
    finite_ys = [y for _, y in usable.values() if math.isfinite(y)]
    x_low, x_high = _padded_range(xs)
    y_low, y_high = _padded_range(finite_ys or [0.0, 1.0])
    has_infinite = len(finite_ys) < len(usable)
    plot_top = top + (24 if has_infinite else 0)

    def sx(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * (right - left)

    def sy(y: float) -> float:
        if not math.isfinite(y):
            return top + 8
        return bottom - (y - y_low) / (y_high - y_low) * (bottom - plot_top)

    body.append(f"<rect x='{left}' y='{top}' width='{right - left}' height='{bottom - top}' fill='none' stroke='#999'/>")
    mx = sum(xs) / len(xs)
    body.append(f"<line x1='{sx(mx):.1f}' y1='{top}' x2='{sx(mx):.1f}' y2='{bottom}' stroke='#bbb' stroke-dasharray='4 3'/>")
    if finite_ys:
        my = sum(finite_ys) / len(finite_ys)
        body.append(f"<line x1='{left}' y1='{sy(my):.1f}' x2='{right}' y2='{sy(my):.1f}' stroke='#bbb' stroke-dasharray='4 3'/>")
    for tick in _ticks(x_low, x_high):
        body.append(_text(sx(tick), bottom + 16, f"{tick:g}", size=10, fill="#666"))
    for tick in _ticks(y_low, y_high):
        body.append(_text(left - 6, sy(tick) + 3, f"{tick:g}", anchor="end", size=10, fill="#666"))
    if has_infinite:
        body.append(_text(left - 6, top + 12, "∞", anchor="end", size=12, fill="#666"))
    body.append(_text((left + right) / 2, height - 18, x_label))
    body.append(
        f"<text transform='translate(18 {(top + bottom) / 2:.0f}) rotate(-90)' text-anchor='middle'>{escape(y_label)}</text>"
    )
    body.append(_text(right - 6, plot_top + 14, "high score, consistent", anchor="end", size=10, fill="#888"))
    body.append(_text(left + 6, bottom - 6, "low score, inconsistent", anchor="start", size=10, fill="#888"))
    for _index, (model, (x, y)) in enumerate(usable.items()):
        colour = PALETTE[list(points).index(model) % len(PALETTE)]
        body.append(f"<circle cx='{sx(x):.1f}' cy='{sy(y):.1f}' r='6' fill='{colour}'/>")
    body += _legend(list(points), width + 10, 60)
    return _svg(width + legend_width, height, body, title)


def _padded_range(values: list[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    pad = (high - low) * 0.1 or max(abs(high) * 0.1, 0.5)
    return low - pad, high + pad


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=raw)
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def wtl_bars(rows: list[tuple[str, dict]], title: str) -> str:
    """Horizontal 100% bars of win/tie/lose (and failed, when any) per row label."""
    label_width, bar_width, row_height = 260, 420, 26
    height = 70 + row_height * len(rows) + 30
    width = label_width + bar_width + 40
    body = [_text(width / 2, 24, title, size=15, weight="bold")]
    parts = ["win", "tie", "lose"] + (["failed"] if any(r.get("failed") for _, r in rows) else [])
    for i, part in enumerate(parts):
        x = label_width + i * 90
        body.append(f"<rect x='{x}' y='36' width='12' height='12' fill='{WTL_COLOURS[part]}'/>")
        body.append(_text(x + 16, 46, part, anchor="start"))
    for index, (label, counts) in enumerate(rows):
        y = 62 + index * row_height
        total = sum(counts.get(p, 0) for p in parts) or 1
        body.append(_text(label_width - 8, y + 15, label, anchor="end"))
        x = float(label_width)
        for part in parts:
            share = counts.get(part, 0) / total
            w = share * bar_width
            if w > 0:
                body.append(f"<rect x='{x:.1f}' y='{y}' width='{w:.1f}' height='{row_height - 6}' fill='{WTL_COLOURS[part]}'/>")
                if w > 28:
                    body.append(_text(x + w / 2, y + 14, str(counts.get(part, 0)), size=10, fill="white"))
            x += w
    return _svg(width, height, body, title)


def bars(values: dict[str, float | None], max_value: float, title: str, unit: str = "") -> str:
    """Plain horizontal bars (one value per label), for accuracies and means."""
    label_width, bar_width, row_height = 260, 420, 24
    height = 50 + row_height * len(values) + 20
    body = [_text((label_width + bar_width + 80) / 2, 24, title, size=15, weight="bold")]
    for index, (label, value) in enumerate(values.items()):
        y = 40 + index * row_height
        body.append(_text(label_width - 8, y + 14, label, anchor="end"))
        if value is None:
            body.append(_text(label_width + 4, y + 14, "n/a", anchor="start", fill="#888"))
            continue
        w = bar_width * max(0.0, min(value, max_value)) / max_value
        body.append(f"<rect x='{label_width}' y='{y}' width='{w:.1f}' height='{row_height - 6}' fill='{PALETTE[0]}'/>")
        body.append(_text(label_width + w + 4, y + 13, f"{value:.3g}{unit}", anchor="start", size=10))
    return _svg(label_width + bar_width + 80, height, body, title)
