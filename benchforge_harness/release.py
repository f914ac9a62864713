"""The release bundle as the harness reads it: items.jsonl, taxonomy.json, manifest.json, predictions.

items.jsonl: one JSON object per line, one line per question (a seed or an approved rewrite).

    field             type                         meaning
    id                string, required, unique     stable item id
    question          string, required             the final user question
    seed_id           string | null                id of the seed this rewrite belongs to (null on seeds);
                                                   items sharing a seed form one alignment group
    category          string | null                top taxonomy level (AlignMMBench category, MLLM-Bench
                                                   level, MMBench L1)
    subcategory       string | null                middle level when the taxonomy has three (MMBench L2)
    task              string | null                leaf (task / capability / MMBench L3); selects the
                                                   judge's task rule
    question_type     string | null                open-ended | closed-ended | compound | multiple-choice
    history           list of {"role", "content"}  earlier turns, oldest first; role user|assistant
    images            list of strings              paths relative to the release folder
                                                   (images/<sha256>.<ext>); attached to the first user turn
    reference_answer  string | null                withheld (null) in a public bundle when private
    criteria          list of strings              per-sample judging criteria (MLLM-Bench), may be empty
    description       string | null                fine-grained image description (TouchStone)
    hint              string | null                multiple-choice hint shown before the question
    choices           object letter -> text | null multiple-choice options, letters A, B, C... in order
    answer            string | null                correct letter of a multiple-choice item
    split             string | null                dev | test
    language          string | null                en | zh: the language of the question and of the
                                                   prompts that ask and judge it; null: the
                                                   release's ("language" in manifest.json, else en)
    meta              object                       anything else the exporter wants to keep

taxonomy.json (optional): {"categories": [...], "tasks": [{"name", "category", "subcategory",
"judge_rule"}]}; a task's "judge_rule" text replaces the harness's built-in rule for that task.

predictions (written by `infer`, read by every judge and by the platform's leaderboard upload):
PREDICTIONS_FORMAT below, read by `read_predictions`. A later line for the same id replaces an
earlier one (`infer` appends every attempt).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchforge_harness.io import InputError, iter_jsonl_numbered
from benchforge_harness.prompts import DEFAULT_LANGUAGE, LANGUAGES
from benchforge_harness.tabular import loads_bounded

SCHEMA_VERSION = 1
QUESTION_TYPES = ("open-ended", "closed-ended", "compound", "multiple-choice")
CHOICE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXY"  # Z is reserved for "none of the options"
ROLES = ("user", "assistant")

_STRING_FIELDS = (
    "seed_id",
    "category",
    "subcategory",
    "task",
    "question_type",
    "reference_answer",
    "description",
    "hint",
    "answer",
    "split",
    "language",
)
_KNOWN_FIELDS = {"id", "question", "history", "images", "criteria", "choices", "meta", *_STRING_FIELDS}


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    seed_id: str | None = None
    category: str | None = None
    subcategory: str | None = None
    task: str | None = None
    question_type: str | None = None
    history: tuple[dict, ...] = ()
    images: tuple[str, ...] = ()
    reference_answer: str | None = None
    criteria: tuple[str, ...] = ()
    description: str | None = None
    hint: str | None = None
    choices: dict[str, str] | None = None
    answer: str | None = None
    split: str | None = None
    language: str | None = None
    meta: dict = field(default_factory=dict)

    @property
    def group(self) -> str:
        """The alignment group: the seed's id for rewrites, the item's own id for seeds."""
        return self.seed_id or self.id

    @property
    def is_mcq(self) -> bool:
        return bool(self.choices)


@dataclass
class Release:
    root: Path
    items: list[Item]
    taxonomy: dict
    manifest: dict

    @property
    def language(self) -> str:
        return self.manifest.get("language") or DEFAULT_LANGUAGE

    @property
    def languages(self) -> list[str]:
        """The languages its items are in (each item's own, else the release's), sorted."""
        return sorted({item.language or self.language for item in self.items})

    @property
    def name(self) -> str:
        name, version = self.manifest.get("name"), self.manifest.get("version")
        return f"{name} {version}" if name and version else (name or self.root.resolve().name)

    def item(self, item_id: str) -> Item:
        return self.by_id[item_id]

    @property
    def by_id(self) -> dict[str, Item]:
        if not hasattr(self, "_by_id"):
            self._by_id = {item.id: item for item in self.items}
        return self._by_id

    def image_path(self, relative: str) -> Path:
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise InputError(f"image path {relative!r} points outside the release folder")
        return path

    def judge_rule(self, task: str | None) -> str | None:
        """A task rule from taxonomy.json, when the release defines one."""
        return judge_rules(self.taxonomy, [task]).get(task or "")

    def judge_rules(self) -> dict[str, str]:
        """{task: rule} for the tasks of the release's items that taxonomy.json gives a rule: they
        replace the built-in ones. What the platform's leaderboard judges with too."""
        return judge_rules(self.taxonomy, {item.task for item in self.items})


def in_language(items: Iterable[Item], language: str) -> list[Item]:
    """The items, those that do not name their own language put in `language` (the release's)."""
    return [item if item.language else replace(item, language=language) for item in items]


def judge_rules(taxonomy: dict, tasks: Iterable[str | None]) -> dict[str, str]:
    """{task: its judge_rule in `taxonomy` (taxonomy.json)} for those of `tasks` that have one."""
    wanted = {task for task in tasks if task}
    rules: dict[str, str] = {}
    for entry in taxonomy.get("tasks", []):
        if isinstance(entry, dict) and entry.get("name") in wanted and entry.get("judge_rule"):
            rules.setdefault(entry["name"], str(entry["judge_rule"]))
    return rules


def parse_item(row: dict[str, Any], where: str) -> Item:
    """Validate one items.jsonl row; `where` is "file:line" for error messages."""
    unknown = sorted(set(row) - _KNOWN_FIELDS)
    if unknown:
        raise InputError(f"{where}: unknown field(s) {', '.join(unknown)} (see benchforge_harness/release.py for the schema)")
    for name in ("id", "question"):
        if not isinstance(row.get(name), str) or not row[name].strip():
            raise InputError(f"{where}: '{name}' must be a non-empty string")
    values: dict[str, Any] = {"id": row["id"], "question": row["question"]}
    for name in _STRING_FIELDS:
        value = row.get(name)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{where}: '{name}' must be a string or null, got {type(value).__name__}")
        values[name] = value or None
    if values["language"] is not None and values["language"] not in LANGUAGES:
        raise InputError(f"{where}: language {values['language']!r} is not one of {', '.join(LANGUAGES)}")
    if values["question_type"] is not None and values["question_type"] not in QUESTION_TYPES:
        raise InputError(f"{where}: question_type {values['question_type']!r} is not one of {', '.join(QUESTION_TYPES)}")
    values["history"] = tuple(_parse_history(row.get("history") or [], where))
    values["images"] = tuple(_string_list(row.get("images") or [], "images", where))
    values["criteria"] = tuple(_string_list(row.get("criteria") or [], "criteria", where))
    choices = row.get("choices")
    if choices:
        if not isinstance(choices, dict) or not all(isinstance(v, str) for v in choices.values()):
            raise InputError(f"{where}: 'choices' must be an object mapping letters to option texts")
        expected = CHOICE_LETTERS[: len(choices)]
        if list(choices) != list(expected) or len(choices) < 2:
            raise InputError(f"{where}: choices must use the letters {', '.join(expected) or 'A, B'} in order (2 or more)")
        values["choices"] = dict(choices)
        if values["answer"] is not None and values["answer"] not in choices:
            raise InputError(f"{where}: answer {values['answer']!r} is not one of the choices {', '.join(choices)}")
    elif values["answer"] is not None:
        raise InputError(f"{where}: 'answer' is set but the item has no choices")
    meta = row.get("meta") or {}
    if not isinstance(meta, dict):
        raise InputError(f"{where}: 'meta' must be an object")
    values["meta"] = meta
    return Item(**values)


def _parse_history(turns: Any, where: str) -> list[dict]:
    if not isinstance(turns, list):
        raise InputError(f'{where}: \'history\' must be a list of {{"role", "content"}} turns')
    parsed = []
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict) or turn.get("role") not in ROLES or not isinstance(turn.get("content"), str):
            raise InputError(f'{where}: history[{index}] must be {{"role": "user"|"assistant", "content": "..."}}')
        parsed.append({"role": turn["role"], "content": turn["content"]})
    return parsed


def _string_list(value: Any, name: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: '{name}' must be a list of strings")
    return value


def load_items(path: str | os.PathLike) -> list[Item]:
    path = Path(path)
    items: list[Item] = []
    first_line: dict[str, int] = {}
    for lineno, row in iter_jsonl_numbered(path):
        where = f"{path}:{lineno}"
        item = parse_item(row, where)
        if item.id in first_line:
            raise InputError(f"{where}: duplicate id {item.id!r} (first on line {first_line[item.id]})")
        first_line[item.id] = lineno
        items.append(item)
    for item in items:
        if item.seed_id is not None and item.seed_id not in first_line:
            raise InputError(f"{path}:{first_line[item.id]}: seed_id {item.seed_id!r} is not an item id in this file")
    if not items:
        raise InputError(f"{path}: no items")
    return items


def load_release(root: str | os.PathLike, *, split: str | None = None) -> Release:
    """The release folder `root`; with `split`, only the items of that anchor split (splits/<split>.json
    or a path to a split file: benchforge_harness.anchors), so a command scores just those."""
    root = Path(root)
    items_path = root / "items.jsonl"
    if not items_path.exists():
        raise InputError(f"{items_path}: file not found (is {root} a release folder?)")
    manifest = _optional_json(root / "manifest.json")
    language = manifest.get("language") or DEFAULT_LANGUAGE
    if language not in LANGUAGES:
        raise InputError(f"{root / 'manifest.json'}: language {language!r} is not one of {', '.join(LANGUAGES)}")
    items = load_items(items_path)
    if split:
        from benchforge_harness.anchors import read_split, split_path  # only commands given --split need it

        wanted = set(read_split(split_path(root, split)).anchors)
        items = [item for item in items if item.id in wanted]
        if not items:
            raise InputError(f"none of the items of split {split!r} is in {items_path}")
    return Release(
        root=root,
        items=in_language(items, language),
        taxonomy=_optional_json(root / "taxonomy.json"),
        manifest=manifest,
    )


def _optional_json(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        value = loads_bounded(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    if not isinstance(value, dict):
        raise InputError(f"{path}: expected a JSON object")
    return value


# --------------------------------------------------------------------------- predictions


@dataclass(frozen=True)
class Predictions:
    model: str
    path: Path
    answers: dict[str, str]  # item id -> answer text
    errors: dict[str, str]  # item id -> why inference failed (no answer)


# The one predictions format: what `infer` writes, every judge reads, and the platform's
# leaderboard accepts as an upload (it calls read_predictions too).
PREDICTIONS_FORMAT = (
    'JSON Lines: one object per line, {"id": the item\'s id, "model": the model\'s name, "answer": its answer '
    '(text, or null with "error" saying why there is none)}; a whole number id (17) is read as "17"; a later line '
    "for the same id replaces an earlier one; one model per file"
)
MAX_PROBLEMS = 10
# Other tools' names for the answer: refused with a message naming "answer", never read as no answer.
_ANSWER_ALIASES = ("prediction", "response", "output", "pred")


def read_predictions(
    lines: Iterable[str], release: Release, *, source: str, model: str | None = None, open_questions_only: bool = False
) -> Predictions:
    """Read predictions (PREDICTIONS_FORMAT) from `lines` (an open file, or io.StringIO of an
    upload); `source` names them in messages ("file:line: ...", or "line N: ..." when empty). Every id must be an item of the
    release (`open_questions_only`: an open question, not a multiple-choice one). Every problem
    is reported, up to MAX_PROBLEMS, in one InputError; nothing is returned from input with any."""
    answers: dict[str, str] = {}
    errors: dict[str, str] = {}
    models: set[str] = set()
    problems: list[str] = []
    lineno = 0
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{lineno}" if source else f"line {lineno}"
        row, problem = _json_object(line)
        if problem:
            problems.append(f"{where}: {problem}")
        elif lineno == 1 and "id" not in row and row and not any(k in row for k in ("answer", "model")):
            problems.append(
                f"{where}: this looks like one JSON object mapping ids to answers; write one line per item instead "
                f'({{"id": ..., "model": ..., "answer": ...}})'
            )
        else:
            problem = _prediction(row, release, answers, errors, models, open_questions_only)
            if problem:
                problems.append(f"{where}: {problem}")
        if len(problems) > MAX_PROBLEMS:
            break
    name = source or "the file"
    if not lineno and not problems:
        problems.append(f"{name}: empty (expected {PREDICTIONS_FORMAT})")
    if len(models) > 1:
        problems.append(
            f"{name}: expected exactly one 'model' name in the file (one model per file), found {', '.join(sorted(models))}"
        )
    if problems:
        more = f"; and more (only the first {MAX_PROBLEMS} are listed)" if len(problems) > MAX_PROBLEMS else ""
        raise InputError("; ".join(problems[:MAX_PROBLEMS]) + more)
    if model is None:
        if len(models) != 1:
            raise InputError(f"{name}: expected exactly one 'model' name in the file, found none")
        model = models.pop()
    return Predictions(model=model, path=Path(source or "predictions"), answers=answers, errors=errors)


def _json_object(line: str) -> tuple[dict, str | None]:
    try:
        row = loads_bounded(line)
    except ValueError as exc:  # invalid, nested too deeply, or a NUL: the reader's own words
        return {}, str(exc)
    if not isinstance(row, dict):
        return {}, f'expected a JSON object {{"id", "model", "answer"}}, got {type(row).__name__}'
    return row, None


def _prediction(row: dict, release: Release, answers: dict, errors: dict, models: set, open_only: bool) -> str | None:
    """Take one line into answers/errors/models; the problem with it, or None."""
    item_id = row.get("id")
    if isinstance(item_id, int) and not isinstance(item_id, bool):
        item_id = str(item_id)  # items.jsonl ids are strings; 17 in a predictions file means "17"
    if not isinstance(item_id, str):
        return '"id" must be the item\'s id (a string, or a whole number)'
    item = release.by_id.get(item_id)
    if item is None:
        return f"id {item_id!r} is not an item of the release {release.name}"
    if open_only and item.is_mcq:
        return (
            f"item {item_id!r} is a multiple-choice question: those are scored under CircularEval (the model is asked "
            "each question with its options rotated), not from uploaded answers; leave it out of this file"
        )
    name = row.get("model")
    if name is not None and not isinstance(name, str):
        return '"model" must be text'
    if name:
        models.add(name)
    if "answer" not in row:
        alias = next((k for k in _ANSWER_ALIASES if k in row), None)
        if alias:
            return f'the answer is under "{alias}": name it "answer"'
        if not row.get("error"):
            return 'no "answer" (write "answer": null with an "error" when the model gave none)'
    answer = row.get("answer")
    if isinstance(answer, str):
        answers[item_id] = answer
        errors.pop(item_id, None)
    elif answer is None:
        errors[item_id] = str(row.get("error") or "no answer")
        answers.pop(item_id, None)
    else:
        return f"the answer of item {item_id!r} must be text or null, got {type(answer).__name__}"
    return None


def load_predictions(path: str | os.PathLike, release: Release, model: str | None = None) -> Predictions:
    """Read a predictions JSONL file (PREDICTIONS_FORMAT); every id must be a release item."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    with path.open("r", encoding="utf-8-sig") as lines:
        return read_predictions(lines, release, source=str(path), model=model)
