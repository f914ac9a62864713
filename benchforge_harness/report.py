"""Reports: one structure rendered as Markdown (charts as SVG files) and as self-contained HTML."""

from __future__ import annotations

import html
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from benchforge_harness.io import write_json


@dataclass
class Table:
    headers: list[str]
    rows: list[list]


@dataclass
class Chart:
    name: str  # file stem under charts/
    svg: str
    caption: str = ""


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)  # str paragraphs, Tables and Charts, in order


@dataclass
class Report:
    title: str
    intro: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)


def json_safe(value):
    """Strict JSON has no infinity: store it as the string "inf" (float("inf") reads it back)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def number(value) -> float | None:
    """A results.json number back as a float ("inf" included); None stays None."""
    return None if value is None else float(value)


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if value in ("inf", "-inf"):
        return "∞" if value == "inf" else "-∞"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        if math.isnan(value):
            return "n/a"
        return f"{value:.{digits}f}"
    return str(value)


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def to_markdown(report: Report) -> str:
    lines = [f"# {report.title}", ""]
    for paragraph in report.intro:
        lines += [paragraph, ""]
    for section in report.sections:
        lines += [f"## {section.title}", ""]
        for block in section.blocks:
            if isinstance(block, Table):
                lines.append("| " + " | ".join(_md_cell(h) for h in block.headers) + " |")
                lines.append("|" + "---|" * len(block.headers))
                for row in block.rows:
                    lines.append("| " + " | ".join(_md_cell(fmt(c)) for c in row) + " |")
                lines.append("")
            elif isinstance(block, Chart):
                lines += [f"![{block.caption or block.name}](charts/{block.name}.svg)", ""]
            else:
                lines += [str(block), ""]
    return "\n".join(lines).rstrip() + "\n"


def text_table(table: Table) -> str:
    """A table as aligned plain-text columns, for the console."""
    cells = [[str(h) for h in table.headers]] + [[fmt(c) for c in row] for row in table.rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


_CSS = """
body{font-family:Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}figure{margin:1em 0}
figcaption{color:#666;font-size:90%}
"""


def to_html(report: Report) -> str:
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(report.title)}</title>",
        f"<style>{_CSS}</style></head><body><h1>{html.escape(report.title)}</h1>",
    ]
    parts += [f"<p>{html.escape(p)}</p>" for p in report.intro]
    for section in report.sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        for block in section.blocks:
            if isinstance(block, Table):
                parts.append("<table><tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in block.headers) + "</tr>")
                for row in block.rows:
                    cells = "".join(
                        f"<td class='num'>{html.escape(fmt(c))}</td>"
                        if isinstance(c, (int, float)) and not isinstance(c, bool)
                        else f"<td>{html.escape(fmt(c))}</td>"
                        for c in row
                    )
                    parts.append(f"<tr>{cells}</tr>")
                parts.append("</table>")
            elif isinstance(block, Chart):
                caption = f"<figcaption>{html.escape(block.caption)}</figcaption>" if block.caption else ""
                parts.append(f"<figure>{block.svg}{caption}</figure>")
            else:
                parts.append(f"<p>{html.escape(str(block))}</p>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_outputs(out_dir: str | os.PathLike, results: dict, report: Report) -> dict[str, Path]:
    """results.json, report.md, report.html and charts/*.svg in `out_dir`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "results.json", json_safe(results))
    write_report(out_dir, report)
    return {"results": out_dir / "results.json", "markdown": out_dir / "report.md", "html": out_dir / "report.html"}


def write_report(out_dir: Path, report: Report) -> None:
    charts = out_dir / "charts"
    for section in report.sections:
        for block in section.blocks:
            if isinstance(block, Chart):
                charts.mkdir(exist_ok=True)
                (charts / f"{block.name}.svg").write_text(block.svg, encoding="utf-8")
    (out_dir / "report.md").write_text(to_markdown(report), encoding="utf-8")
    (out_dir / "report.html").write_text(to_html(report), encoding="utf-8")
