"""The dataset card (README.md of a bundle), its chart and the license file: text made from the
release's own rows only, so a rebuild writes the same bytes."""

from xml.sax.saxutils import escape

from annotation.withholding import SPLITS, fields_withheld, statement
from harness import distribution

from .models import Release


def as_text(value: str) -> str:
    """Text a person typed (release notes, a license name), safe in Markdown: any HTML in it is
    shown as written, never rendered by whoever displays the card (GitHub, Hugging Face, this app)."""
    return escape(value or "")


def tasks_in_order(counts: dict, taxonomy: dict | None = None) -> list[tuple[str, dict]]:
    """(task, {split: n}) in the order of the release's taxonomy snapshot; tasks it does not
    name (none, normally) after them by name. The counts keep no order of their own (Postgres
    stores JSON objects with sorted keys)."""
    per_task = counts.get("tasks", {})
    order = [t["name"] for t in (taxonomy or {}).get("tasks", []) if t["name"] in per_task]
    return [(name, per_task[name]) for name in order + sorted(set(per_task) - set(order))]


def dataset_card(release: Release, variant: str) -> str:
    counts, made = release.counts, release.construction
    lines = [
        f"# {release.benchmark.name} {release.version}",
        "",
        release.benchmark.description or "",
        "",
        f"A multimodal (image + question) evaluation benchmark built with benchforge. {counts['items']} questions "
        f"({counts['seeds']} seed questions and their rewrites) on {counts['images']} images; dev {counts['dev']}, "
        f"test {counts['test']}. This is the **{variant}** bundle.",
        "",
    ]
    if release.notes:
        lines += ["## Notes", "", as_text(release.notes), ""]
    lines += ["## What is withheld", ""]
    if variant == "public":
        lines += [f"- {line}" for line in statement(release.private)]
    else:
        lines += ["This private bundle holds everything. Its public bundle withholds:", ""]
        lines += [f"- {line}" for line in statement(release.private)]
    lines.append("")
    lines += ["## Questions per task and split", "", "| task | dev | test | total |", "| --- | ---: | ---: | ---: |"]
    for task, split in tasks_in_order(counts, release.taxonomy):
        lines.append(f"| {task} | {split.get('dev', 0)} | {split.get('test', 0)} | {sum(split.values())} |")
    lines += ["", "![questions per task](charts/items_per_task.svg)", "", "## How it was built", ""]
    lines.append(
        f"- Images collected: {made.get('images_collected', 0)}; accepted after screening: "
        f"{made.get('images_accepted', 0)} (rejected: {made.get('images_rejected', 0)})."
    )
    lines.append(
        f"- Seed questions: {made.get('seeds', 0)}; approved rewrites: {made.get('rewrites', 0)} "
        f"({made.get('rewrites_per_seed', 0)} per seed)."
    )
    for r in made.get("review_rounds", []):
        kind = "expert verification" if r["kind"] == "expert" else "cross-review"
        lines.append(
            f"- Review round {r['round']} ({kind}): {r.get('accepted', 0)} accepted, {r.get('revision', 0)} sent "
            f"back for revision, {r.get('rejected', 0)} rejected."
        )
    for key, label in (("qc_removed", "Removed by the quality filters"),):
        if key in made:
            lines.append(f"- {label}: {made[key]}.")
    lines += [
        "",
        "## Files",
        "",
        "- `items.jsonl`: one question per line (the schema is in `harness/release.py`).",
        "- `images/`: the images, named by their sha256.",
        "- `taxonomy.json`: categories and tasks, with each task's judging rule.",
        "- `mcq.tsv`: multiple-choice questions in MMBench's columns (when there are any).",
        "- `harness/`: the scoring harness; `manifest.json`: the sha256 of every file.",
        f"- `{distribution.wheel_name()}`: the same harness as a wheel, to install where you evaluate.",
        "- `inspect_task.py`: the release as Inspect tasks (`pip install inspect-ai`, then "
        "`inspect eval inspect_task.py --model openai/<name> -M responses_api=false -T grader=openai/<judge>`); "
        "its docstring says "
        "what it scores and where it differs from the harness.",
        "",
        "## Scoring",
        "",
        *scoring_lines(release, variant),
        "See `harness/README.md` for the models file and every command. `models.toml`, `predictions/` and "
        "`results/` are working files: `verify` leaves them out of its check.",
        "",
        "## License",
        "",
        f"{as_text(release.license)}. Each image keeps its own source and license (see `LICENSE`).",
        "",
    ]
    return "\n".join(lines)


def scoring_lines(release: Release, variant: str) -> list[str]:
    """The commands this bundle can run, and what they score: only modes it has the data for."""
    hidden = {split: fields_withheld(release.private, split) if variant == "public" else frozenset() for split in SPLITS}
    judged = [split for split in SPLITS if "reference_answer" not in hidden[split]]
    keyed = [split for split in SPLITS if "answer" not in hidden[split]]
    lines = [
        "Run the harness from this folder as it is, or install its wheel (with the SDK of your endpoints):",
        "",
        "```",
        f'pip install "./{distribution.wheel_name()}[openai]"   # then `benchforge-harness` = `python -m harness`',
        "python -m harness verify .                      # every file matches manifest.json",
    ]
    if judged:
        lines += [
            "python -m harness infer --model my-vlm          # answers -> predictions/my-vlm.jsonl",
            "python -m harness judge --judge my-judge --predictions predictions/my-vlm.jsonl",
        ]
    if keyed:
        lines.append("python -m harness mcq --model my-vlm            # multiple choice under CircularEval")
    lines += ["```", ""]
    if variant == "public" and (set(judged) != set(SPLITS) or set(keyed) != set(SPLITS)):
        runs = [
            f"`judge` scores the {' and '.join(judged)} split" if judged else "`judge` has no reference answer to grade with",
            f"`mcq` scores the {' and '.join(keyed)} split" if keyed else "`mcq` has no answer key",
        ]
        lines += [
            f"With this public bundle, {runs[0]} and {runs[1]}: the rest is withheld (see above) and skipped, and the "
            "harness says how many items it could not score. Scores on the withheld part come from the benchmark's "
            "leaderboard, which scores with the private bundle.",
            "",
        ]
    return lines


def license_text(release: Release) -> str:
    sources = sorted({(i.source, i.license) for i in release.images.all()})
    lines = [
        f"The questions, answers and annotations of {release.benchmark.name} {release.version} are released under "
        f"{release.license}.",
        "",
        "Images keep the license of their source:",
        "",
    ]
    lines += [f"- {source or 'unknown source'}: {license or 'license not recorded'}" for source, license in sources]
    return "\n".join(lines) + "\n"


def task_chart(counts: dict, taxonomy: dict | None = None) -> str:
    """Questions per task (in taxonomy order), dev and test stacked, as an SVG (no script, no external reference)."""
    tasks = tasks_in_order(counts, taxonomy)
    peak = max((sum(s.values()) for _, s in tasks), default=1) or 1
    row, width = 22, 360
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{220 + width + 60}" height="{row * len(tasks) + 30}" font-family="sans-serif" font-size="12">'
    ]
    for n, (task, split) in enumerate(tasks):
        y = 10 + n * row
        dev = round(width * split.get("dev", 0) / peak)
        test = round(width * split.get("test", 0) / peak)
        parts.append(f'<text x="212" y="{y + 13}" text-anchor="end">{escape(task)}</text>')
        parts.append(
            f'<rect x="220" y="{y}" width="{dev}" height="16" fill="#5b8def"><title>dev {split.get("dev", 0)}</title></rect>'
        )
        parts.append(
            f'<rect x="{220 + dev}" y="{y}" width="{test}" height="16" fill="#f0a24b"><title>test {split.get("test", 0)}</title></rect>'
        )
        parts.append(f'<text x="{226 + dev + test}" y="{y + 13}">{sum(split.values())}</text>')
    parts.append(f'<text x="220" y="{row * len(tasks) + 24}">blue: dev · orange: test</text></svg>')
    return "\n".join(parts) + "\n"


def score_chart(rows, label: str) -> str:
    """A score card's bars: one per task (or category), value on a 0-1 scale, as an SVG."""
    row, width = 22, 360
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{220 + width + 80}" height="{row * len(rows) + 30}" font-family="sans-serif" font-size="12">'
    ]
    for n, (name, value, count) in enumerate(rows):
        y = 10 + n * row
        bar = round(width * (value or 0))
        shown = "—" if value is None else f"{100 * value:.0f}%"
        parts.append(f'<text x="212" y="{y + 13}" text-anchor="end">{escape(name)}</text>')
        parts.append(f'<rect x="220" y="{y}" width="{bar}" height="16" fill="#5b8def"><title>{shown} of {count}</title></rect>')
        parts.append(f'<text x="{226 + bar}" y="{y + 13}">{shown} (n={count})</text>')
    parts.append(f'<text x="220" y="{row * len(rows) + 24}">{escape(label)}</text></svg>')
    return "\n".join(parts) + "\n"
