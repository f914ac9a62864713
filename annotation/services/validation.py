"""What makes an item well formed (checked on every save) and complete (checked before review)."""

from collections import Counter

from django.utils.translation import gettext as _

from benchforge.errors import DomainError
from curation.models import Benchmark, Image

from ..contract import (
    CRITERION_MAX_CHARS,
    FIELD_LABELS,
    MAX_TURNS,
    OPTION_MAX_CHARS,
    ROLES_IN_TURN,
    SEED_ONLY_FIELDS,
    TEXT_FIELDS,
    TEXT_LIMITS,
    TURN_MAX_CHARS,
    item_snapshot,
    too_long,
)
from ..models import CHOICE_LETTERS, MAX_CHOICES, MAX_CRITERIA, Criterion, Item

# The choices' values, read once (an enum's .values builds a new list each time: per imported row).
_KINDS = frozenset(Item.Kind.values)
_QUESTION_TYPES = frozenset(Item.QuestionType.values)
_CRITERION_KINDS = frozenset(Criterion.Kind.values)


def _letters(n: int) -> str:
    return CHOICE_LETTERS[:n]


def load_image_rows(ids) -> dict[int, dict]:
    return {
        row["pk"]: row for row in Image.objects.filter(pk__in=list(ids)).values("pk", "benchmark_id", "status", "contaminated")
    }


def _image_problems(item: Item, image_ids, rows: dict[int, dict]) -> list[str]:
    problems = []
    for image_id in image_ids:
        row = rows.get(image_id)
        if row is None or row["benchmark_id"] != item.benchmark_id:
            problems.append(_("Image #%(id)s does not exist in this benchmark.") % {"id": image_id})
        elif row["status"] != Image.Status.ACCEPTED:
            problems.append(
                _("Image #%(id)s is %(status)s, not accepted: only images accepted in screening can be used.")
                % {"id": image_id, "status": str(Image.Status(row["status"]).label).lower()}
            )
        elif row["contaminated"] and not item.is_external:
            problems.append(
                _("Image #%(id)s matches a known dataset or benchmark (contaminated) and cannot be used.") % {"id": image_id}
            )
    return problems


def image_refusals(benchmark: Benchmark, image_ids) -> list[str]:
    """Why these images cannot be used in the benchmark's own items (empty: all usable)."""
    ids = list(image_ids)
    return _image_problems(Item(benchmark=benchmark), ids, load_image_rows(ids))


def shape_problems(item: Item, state: dict, before_images=(), image_rows: dict | None = None) -> list[str]:
    """Rules every stored version obeys, draft or not. Images already on the item
    (`before_images`) are re-checked by readiness instead: they may have been rejected since.
    `image_rows`: the images' load_image_rows, when the caller read them for many items at once."""
    problems = []
    kind = state["kind"]
    if kind not in _KINDS:
        problems.append(f"Unknown kind '{kind}'; use one of: {', '.join(Item.Kind.values)}.")
    if state["question_type"] not in _QUESTION_TYPES:
        problems.append(f"Unknown question type '{state['question_type']}'; use one of: {', '.join(Item.QuestionType.values)}.")
    for name in TEXT_FIELDS:
        if not isinstance(state[name], str):
            problems.append(f"'{name}' must be text.")
        elif found := too_long(FIELD_LABELS[name], state[name], TEXT_LIMITS[name]):
            problems.append(found)
    if not isinstance(state["incoherent"], bool):
        problems.append("'incoherent' must be true or false.")

    problems += _history_problems(state["history"], kind)
    if state["incoherent"] and kind != Item.Kind.MULTI_TURN:
        problems.append("Only multi-turn items can be marked incoherent.")

    problems += _choice_problems(state, kind)
    problems += _criteria_problems(state["criteria"])
    problems += _image_shape_problems(item, state["images"], before_images, image_rows)

    if item.seed_id is not None:
        seed_only = [f for f in SEED_ONLY_FIELDS if state[f]]
        if seed_only:
            problems.append(
                f"Item #{item.pk or 'new'} is a rewrite of #{item.seed_id}: its images, reference answer and "
                "criteria are the seed's; edit the seed instead."
            )
    return problems


def _history_problems(history, kind: str) -> list[str]:
    """The dialogue history's shape: a list of alternating turns, on multi-turn items only."""
    problems = []
    if not isinstance(history, list):
        problems.append("The dialogue history must be a list of turns.")
    elif history and kind != Item.Kind.MULTI_TURN:
        problems.append("Only multi-turn items have a dialogue history: switch the kind to multi-turn or remove the turns.")
    elif len(history) > MAX_TURNS:
        problems.append(f"The dialogue history has {len(history)} turns; the limit is {MAX_TURNS}.")
    else:
        for i, turn in enumerate(history, 1):
            if not isinstance(turn, dict) or set(turn) != {"role", "content"} or not isinstance(turn.get("content"), str):
                problems.append(f'Turn {i} must be {{"role": "user" or "assistant", "content": text}}.')
                continue
            if found := too_long(_("Turn %(n)s of the dialogue history") % {"n": i}, turn["content"], TURN_MAX_CHARS):
                problems.append(found)
            expected = ROLES_IN_TURN[(i - 1) % 2]
            if turn["role"] != expected:
                problems.append(
                    f"Turn {i} must be a {expected} turn: the history starts with the user and alternates user / assistant."
                )
        if history and len(history) % 2:
            problems.append("The history must end with an assistant turn: the final user turn is the question itself.")
    return problems


def _choice_problems(state: dict, kind: str) -> list[str]:
    """Options, answer key and hint: on multiple-choice items only, the key one of the options."""
    problems = []
    choices = state["choices"]
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        problems.append("Options must be a list of texts.")
    elif kind != Item.Kind.MCQ and (choices or state["answer"] or state["hint"]):
        problems.append("Only multiple-choice items have options, an answer key or a hint: switch the kind or clear them.")
    elif len(choices) > MAX_CHOICES:
        problems.append(f"A multiple-choice item has at most {MAX_CHOICES} options (A-D); this one has {len(choices)}.")
    elif any(len(c) > OPTION_MAX_CHARS for c in choices):
        problems += [
            too_long(_("Option %(letter)s") % {"letter": letter}, c, OPTION_MAX_CHARS)
            for letter, c in zip(CHOICE_LETTERS, choices)
            if len(c) > OPTION_MAX_CHARS
        ]
    elif state["answer"] and state["answer"] not in _letters(len(choices)):
        span = f"A-{_letters(len(choices))[-1]}" if choices else "none yet"
        problems.append(f"The answer key '{state['answer']}' is not one of the options ({span}).")
    return problems


def _criteria_problems(criteria) -> list[str]:
    """Criteria: a list of at most MAX_CRITERIA {kind, text}."""
    problems = []
    if not isinstance(criteria, list):
        problems.append("Criteria must be a list.")
    else:
        if len(criteria) > MAX_CRITERIA:
            problems.append(f"An item has at most {MAX_CRITERIA} criteria; this one has {len(criteria)}.")
        for i, criterion in enumerate(criteria, 1):
            if not isinstance(criterion, dict) or not isinstance(criterion.get("text"), str):
                problems.append(f'Criterion {i} must be {{"kind": ..., "text": ...}}.')
            elif found := too_long(_("Criterion %(n)s") % {"n": i}, criterion["text"], CRITERION_MAX_CHARS):
                problems.append(found)
            elif criterion.get("kind") not in _CRITERION_KINDS:
                problems.append(
                    f"Criterion {i} has an unknown kind '{criterion.get('kind')}'; use one of: "
                    f"{', '.join(Criterion.Kind.values)}."
                )
    return problems


def _image_shape_problems(item: Item, images, before_images, image_rows: dict | None) -> list[str]:
    """Image ids: listed once each; the ones added since `before_images` usable."""
    problems = []
    if not isinstance(images, list) or not all(isinstance(i, int) for i in images):
        problems.append("Images must be a list of image ids.")
    else:
        repeated = sorted(i for i, n in Counter(images).items() if n > 1)
        problems += [f"Image #{i} is listed twice." for i in repeated]
        added = [i for i in dict.fromkeys(images) if i not in set(before_images)]
        problems += _image_problems(item, added, image_rows if image_rows is not None else load_image_rows(added))
    return problems


def completeness_problems(item: Item, state: dict, image_rows: dict | None = None) -> list[str]:
    """What a version still lacks before review (empty list: ready). `image_rows`: the images'
    screening state when the caller already has it."""
    problems = []
    if not state["question"].strip():
        problems.append(_("Write the question."))
    kind = state["kind"]
    if kind == Item.Kind.MULTI_TURN:
        if not state["history"]:
            problems.append(_("A multi-turn item needs at least one user/assistant exchange before the question."))
        for i, turn in enumerate(state["history"], 1):
            if not str(turn.get("content", "")).strip():
                problems.append(_("Turn %(n)s (%(role)s) is empty.") % {"n": i, "role": turn.get("role")})
    if kind == Item.Kind.MCQ:
        choices = state["choices"]
        if not 2 <= len(choices) <= MAX_CHOICES:
            problems.append(
                _("A multiple-choice item needs 2 to %(max)s options (A-D); it has %(n)s.")
                % {"max": MAX_CHOICES, "n": len(choices)}
            )
        seen: dict[str, str] = {}
        for letter, text in zip(CHOICE_LETTERS, choices):
            key = " ".join(text.split()).casefold()
            if not key:
                problems.append(_("Option %(letter)s is empty.") % {"letter": letter})
            elif key in seen:
                problems.append(
                    _("Options %(first)s and %(second)s are the same; options must be distinct.")
                    % {"first": seen[key], "second": letter}
                )
            else:
                seen[key] = letter
        if not state["answer"] and not item.is_external:
            problems.append(_("Choose the correct option (the answer key)."))
    if item.seed_id is None:
        if not state["reference_answer"].strip():
            problems.append(
                _("Write the reference answer: complete enough that a judge who cannot see the image can grade an answer.")
            )
        criteria = state["criteria"]
        # A multiple-choice item is graded by its key: options and key make it complete.
        if not item.is_external and not criteria and kind != Item.Kind.MCQ:
            problems.append(_("Add 1 to %(max)s grading criteria.") % {"max": MAX_CRITERIA})
        for i, criterion in enumerate(criteria, 1):
            if not criterion["text"].strip():
                problems.append(_("Criterion %(n)s has no text.") % {"n": i})
        if not state["images"] and not item.is_external:
            problems.append(_("Attach at least one accepted image."))
        rows = image_rows if image_rows is not None else load_image_rows(state["images"])
        problems += _image_problems(item, state["images"], rows)
    return problems


def readiness_problems(item: Item, snapshot: dict | None = None) -> list[str]:
    """What the item lacks before it can be submitted for review; empty when it is ready.
    `snapshot`: its item_snapshot() when the caller has it."""
    rows = None
    if "item_images" in getattr(item, "_prefetched_objects_cache", {}):
        # Loaded with their images (selectors.with_payload_data): no extra query.
        rows = {
            link.image_id: {
                "pk": link.image_id,
                "benchmark_id": link.image.benchmark_id,
                "status": link.image.status,
                "contaminated": link.image.contaminated,
            }
            for link in item.item_images.all()
        }
    return completeness_problems(item, snapshot if snapshot is not None else item_snapshot(item), rows)


def raise_problems(problems: list[str], *, prefix: str = "Not saved") -> None:
    if problems:
        raise DomainError(f"{prefix}: " + " ".join(problems), code="invalid", extra={"problems": problems})
