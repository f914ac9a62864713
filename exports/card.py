"""The dataset card (README.md of a bundle), its chart and the license file: text made from the
release's own rows only, so a rebuild writes the same bytes."""

from collections import Counter
from xml.sax.saxutils import escape

from annotation.withholding import SPLITS, fields_withheld, statement
from benchforge_harness import distribution

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


def _title(release: Release) -> list[str]:
    return [f"# {release.benchmark.name} {release.version}", "", release.benchmark.description or "", ""]


def _notes(release: Release) -> list[str]:
    return ["## Notes", "", as_text(release.notes), ""] if release.notes else []


def _per_task(release: Release) -> list[str]:
    lines = ["## Questions per task and split", "", "| task | dev | test | total |", "| --- | ---: | ---: | ---: |"]
    for task, split in tasks_in_order(release.counts, release.taxonomy):
        lines.append(f"| {task} | {split.get('dev', 0)} | {split.get('test', 0)} | {sum(split.values())} |")
    return [*lines, "", "![questions per task](charts/items_per_task.svg)", ""]


def _construction(release: Release) -> list[str]:
    made = release.construction
    lines = ["## How it was built", ""]
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
    return [*lines, ""]


def dataset_card(release: Release, variant: str) -> str:
    """README.md of a bundle (variant: public or private)."""
    counts = release.counts
    lines = [
        *_title(release),
        f"A multimodal (image + question) evaluation benchmark built with benchforge. {counts['items']} questions "
        f"({counts['seeds']} seed questions and their rewrites) on {counts['images']} images; dev {counts['dev']}, "
        f"test {counts['test']}. This is the **{variant}** bundle.",
        "",
        *_notes(release),
        "## What is withheld",
        "",
    ]
    if variant == "public":
        lines += [f"- {line}" for line in statement(release.private)]
    else:
        lines += ["This private bundle holds everything. Its public bundle withholds:", ""]
        lines += [f"- {line}" for line in statement(release.private)]
    lines.append("")
    lines += [*_per_task(release), *_construction(release)]
    lines += [
        "## Files",
        "",
        "- `items.jsonl`: one question per line (the schema is in `benchforge_harness/release.py`).",
        "- `images/`: the images, named by their sha256.",
        "- `taxonomy.json`: categories and tasks, with each task's judging rule.",
        "- `mcq.tsv`: multiple-choice questions in MMBench's columns (when there are any).",
        "- `benchforge_harness/`: the scoring harness; `manifest.json`: the sha256 of every file.",
        f"- `{distribution.wheel_name()}`: the same harness as a wheel, to install where you evaluate.",
        "- `inspect_task.py`: the release as Inspect tasks (`pip install inspect-ai`, then "
        "`inspect eval inspect_task.py --model openai/<name> -M responses_api=false -T grader=openai/<judge>`); "
        "its docstring says "
        "what it scores and where it differs from the harness.",
        "",
        "## Scoring",
        "",
        *scoring_lines(release, variant),
        *extra_card_lines(release, variant),
        "See `benchforge_harness/README.md` for the models file and every command. `models.toml`, `predictions/` and "
        "`results/` are working files: `verify` leaves them out of its check.",
        "",
        "## License",
        "",
        f"{as_text(release.license)}. Each image keeps its own source and license (see `LICENSE`).",
        "",
    ]
    return "\n".join(lines)


# Files a stage above exports adds to a bundle (item analysis: an anchor split), with their card section.
_extras_finder = None


def register_bundle_extras(find) -> None:
    """`find(release, variant)` -> [(path inside the bundle, text, card lines)]."""
    global _extras_finder
    _extras_finder = find


def bundle_extras(release: Release, variant: str) -> list[tuple[str, str, list[str]]]:
    return _extras_finder(release, variant) if _extras_finder is not None else []


def extra_card_lines(release: Release, variant: str) -> list[str]:
    return [line for _path, _text, lines in bundle_extras(release, variant) for line in lines]


# The columns of the Parquet export (exports.parquet.FEATURES), what each holds.
HUB_COLUMNS = (
    ("id", "string", "the question's id in the release: the key of a model's predictions"),
    ("question", "string", "the question (the last user turn)"),
    (
        "seed_id",
        "string",
        "for a rewrite, the id of the seed question it rephrases (empty for a seed); "
        "a seed and its rewrites are one group of the alignment score",
    ),
    ("category", "string", "the task's category (capability level)"),
    ("subcategory", "string", "the task's subcategory, when the taxonomy has one"),
    ("task", "string", "the task (its judging rule is in the release's taxonomy)"),
    ("question_type", "string", "open-ended, close-ended or compound"),
    ("history", "string", 'JSON: the earlier turns of a multi-turn item, [{"role", "content"}]'),
    ("images", "list of images", "the item's images, embedded (decoded by `datasets`)"),
    ("image_licenses", "list of strings", "each image's licence, in the order of `images`"),
    ("image_sources", "list of strings", "each image's source, in the order of `images`"),
    ("reference_answer", "string", "the reference answer a judge grades against (empty where withheld)"),
    ("criteria", "list of strings", "the per-question criteria of a pairwise judge (empty where withheld)"),
    ("description", "string", "a fine-grained description of the image (TouchStone-style judging)"),
    ("hint", "string", "a hint shown before a multiple-choice question"),
    ("choices", "string", 'JSON: the options of a multiple-choice item, {"A": ..., "B": ...}; empty otherwise'),
    ("answer", "string", "the letter of the right option (empty where withheld)"),
    ("split", "string", "dev or test"),
    ("meta", "string", "JSON: where the item came from (a rewrite's batch, model and template...)"),
)


def hub_card(release: Release, splits: dict[str, int]) -> str:
    """The card of the Parquet export (its README.md below the Hub metadata): what this export
    holds, its splits and columns, what it withholds, the licences, how to load it and how to score
    with the harness (which is not in it: the release's bundles carry it)."""
    counts = release.counts
    licences = Counter(license or "license not recorded" for license in release.images.values_list("license", flat=True))
    files = ", ".join(f'"{s}": "data/{s}-00000-of-00001.parquet"' for s in splits)
    lines = [
        *_title(release),
        f"The public part of release {release.version} of {release.benchmark.name}, a multimodal (image + question) "
        f"evaluation benchmark built with benchforge, as a Hugging Face dataset: {sum(splits.values())} questions "
        f"({counts['seeds']} seed questions and their rewrites) on {counts['images']} images, one row per question "
        "with its images embedded, in Parquet files under `data/`, one per split.",
        "",
        *_notes(release),
        "## Splits",
        "",
        "| split | rows |",
        "| --- | ---: |",
        *(f"| {split} | {n} |" for split, n in splits.items()),
        "",
        "## What is withheld",
        "",
        "This export holds the rows of the release's public bundle: what the release keeps private is left empty.",
        "",
        *(f"- {line}" for line in statement(release.private)),
        "",
        "## Columns",
        "",
        "| column | type | what it holds |",
        "| --- | --- | --- |",
        *(f"| `{name}` | {kind} | {what} |" for name, kind, what in HUB_COLUMNS),
        "",
        "The header's `dataset_info` declares the same columns as `datasets` features.",
        "",
        *_per_task(release),
        *_construction(release),
        "## Licence",
        "",
        f"The questions, answers and annotations: {as_text(release.license)}. Each image keeps the licence of its "
        "source, given row by row in `image_licenses` (and its source in `image_sources`). The images of this "
        "release, by licence:",
        "",
        *(f"- {as_text(name)}: {n}" for name, n in sorted(licences.items())),
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        'dataset = load_dataset("path/to/this/folder")  # or the Hub repository it was uploaded to',
        f'dataset = load_dataset("parquet", data_files={{{files}}})  # the files alone',
        "```",
        "",
        "## Scoring with the harness",
        "",
        "The scoring harness is not in this export: every bundle of the release carries it "
        f"(`{release.top}-public.tar.gz` or `.zip`, from the release's page), with the same questions under the "
        "same `id`s. Answer the questions with your model, write the answers one JSON object a line, "
        '`{"id": ..., "model": "my-vlm", "answer": ...}`, to `my-vlm.jsonl`, then, in the unpacked public bundle '
        "(with Python 3.11 or later, and a `models.toml` declaring your judge `my-judge`; the bundle's README and "
        "`benchforge_harness/README.md` say more):",
        "",
        "```",
        "python -m venv ../harness-env && . ../harness-env/bin/activate",
        f'pip install "./{distribution.wheel_name()}[openai]"',
        "python -m benchforge_harness judge --judge my-judge --predictions ../my-vlm.jsonl",
        "python -m benchforge_harness mcq --model my-vlm   # multiple choice: the harness asks the model itself",
        "```",
        "",
        "What a public bundle withholds (above) is not scored there: the benchmark's leaderboard scores it.",
        "",
    ]
    return "\n".join(lines)


def scoring_lines(release: Release, variant: str) -> list[str]:
    """The commands this bundle can run, and what they score: only modes it has the data for."""
    hidden = {split: fields_withheld(release.private, split) if variant == "public" else frozenset() for split in SPLITS}
    judged = [split for split in SPLITS if "reference_answer" not in hidden[split]]
    keyed = [split for split in SPLITS if "answer" not in hidden[split]]
    wheel = distribution.wheel_name()
    lines = [
        "Run these commands in this folder (the unpacked bundle), with Python 3.11 or later and nothing else "
        "installed: the first two make an environment of its own outside this folder (so `verify` finds nothing "
        "added here) and install the bundled harness with the SDK of OpenAI-compatible servers (`[zai]` instead "
        "for GLM endpoints). Before `infer`, write `models.toml` here, declaring the endpoints `my-vlm` (the model "
        "under test) and `my-judge`, and export the API key variables it names (`benchforge_harness/README.md`, "
        "section 1).",
        "",
        "```",
        "python -m venv ../harness-env && . ../harness-env/bin/activate",
        f'pip install "./{wheel}[openai]"',
        "python -m benchforge_harness verify .",
    ]
    if judged:
        lines += [
            "python -m benchforge_harness infer --model my-vlm",
            "python -m benchforge_harness judge --judge my-judge --predictions predictions/my-vlm.jsonl",
        ]
    if keyed:
        lines.append("python -m benchforge_harness mcq --model my-vlm")
    lines += [
        "```",
        "",
        "`verify` checks every file against manifest.json; `infer` writes the answers to `predictions/my-vlm.jsonl`; "
        "`judge` grades them against the reference answers; `mcq` asks the multiple-choice questions under "
        "CircularEval. Each writes `results/<command>/` (results.json and a report). After the install, "
        "`benchforge-harness` is the same as `python -m benchforge_harness`, anywhere.",
        "",
    ]
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
