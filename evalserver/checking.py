"""Checking an uploaded predictions file against a window, before anything is stored: the
harness's predictions format (benchforge_harness.PREDICTIONS_FORMAT), one line per item of the
window's split, every item present, none twice, none unknown, within the size limits. Every problem
is named with its line; a file with any problem is refused whole."""

import io
import json

from django.conf import settings
from django.utils.translation import gettext

from benchforge.errors import DomainError
from benchforge_harness import InputError, read_predictions

MAX_PROBLEMS = 20
MISSING_SHOWN = 10


def max_bytes() -> int:
    return getattr(settings, "BENCHFORGE_EVAL_MAX_PREDICTIONS_BYTES", 20 * 1024 * 1024)


def max_answer_chars() -> int:
    return getattr(settings, "BENCHFORGE_EVAL_MAX_ANSWER_CHARS", 20_000)


class RefusedFile(DomainError):
    """A predictions file refused whole: `extra["problems"]` lists each problem with its line."""

    code = "refused_file"


def refuse(problems: list[str]) -> RefusedFile:
    shown = problems[:MAX_PROBLEMS]
    more = len(problems) - len(shown)
    message = gettext("The predictions file was refused and nothing of it was kept: %(problems)s") % {
        "problems": "; ".join(shown)
    }
    if more:
        message += " " + gettext("(and %(count)s more problems)") % {"count": more}
    return RefusedFile(message, extra={"problems": shown})


def check(data: bytes, scored_release, *, window_ids: list[str], other_split: set[str], model: str | None) -> tuple[dict, str]:
    """({item id: answer}, the model's name: `model`, else the file's) for a file that answers every item of
    `window_ids`; RefusedFile otherwise. `scored_release` is the harness release restricted to the
    window's items; `other_split` the release's ids outside the window (named as such)."""
    if len(data) > max_bytes():
        raise refuse(
            [gettext("the file has %(size)s bytes, more than the limit of %(limit)s") % {"size": len(data), "limit": max_bytes()}]
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise refuse([gettext("the file is not UTF-8 text (byte %(byte)s)") % {"byte": exc.start}]) from None
    wanted = set(window_ids)
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue  # the harness's reader names it below, with the same line number
        if not isinstance(row, dict):
            continue
        item_id = row.get("id")
        if isinstance(item_id, int) and not isinstance(item_id, bool):
            item_id = str(item_id)
        if not isinstance(item_id, str):
            continue
        answer = row.get("answer")
        if isinstance(answer, str) and len(answer) > max_answer_chars():
            problems.append(
                gettext("line %(line)s: the answer to %(id)s has %(chars)s characters, more than %(limit)s")
                % {"line": number, "id": item_id[:80], "chars": len(answer), "limit": max_answer_chars()}
            )
        if item_id in first_line:
            problems.append(
                gettext("line %(line)s: %(id)s is answered again (first on line %(first)s); answer each item once")
                % {"line": number, "id": item_id[:80], "first": first_line[item_id]}
            )
        elif item_id in other_split:
            problems.append(
                gettext("line %(line)s: %(id)s is not an item of this window's split; leave it out")
                % {"line": number, "id": item_id[:80]}
            )
            first_line[item_id] = number
        elif item_id in wanted:
            first_line[item_id] = number
        if len(problems) > 3 * MAX_PROBLEMS:
            break
    if problems:
        raise refuse(problems)
    try:
        read = read_predictions(io.StringIO(text), scored_release, source="", model=model or None, open_questions_only=True)
    except InputError as exc:
        raise refuse([str(exc)]) from None
    present = set(read.answers) | set(read.errors)
    missing = [item for item in window_ids if item not in present]
    if missing:
        shown = ", ".join(missing[:MISSING_SHOWN]) + (" …" if len(missing) > MISSING_SHOWN else "")
        raise refuse([gettext("%(count)s items of the split have no line: %(ids)s") % {"count": len(missing), "ids": shown}])
    return read.answers, read.model
