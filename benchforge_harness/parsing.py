"""Reading judge outputs: pointwise JSON ratings, pairwise last-line votes, TouchStone "s1 s2".

Judges wrap JSON in code fences, add text after it, write Chinese punctuation or full-width
digits. Every parser either returns a value it is sure of or raises ParseError saying why;
callers retry and then report, they never guess.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


class ParseError(ValueError):
    """A judge output could not be read; the message says what was missing."""


# Full-width ASCII (U+FF01..U+FF5E) maps to ASCII by a fixed offset; the rest is CJK punctuation.
_WIDTH_MAP = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_WIDTH_MAP.update(
    {
        0x3000: " ",  # ideographic space
        ord("，"): ",",
        ord("、"): ",",
        ord("："): ":",
        ord("；"): ";",
        ord("。"): ".",
        ord("“"): '"',
        ord("”"): '"',
        ord("„"): '"',
        ord("‘"): "'",
        ord("’"): "'",
        ord("「"): '"',
        ord("」"): '"',
        ord("『"): '"',
        ord("』"): '"',
        ord("【"): "[",
        ord("】"): "]",
        ord("（"): "(",
        ord("）"): ")",
    }
)


def normalize_text(text: str) -> str:
    """Full-width letters/digits and CJK punctuation -> ASCII, so patterns see one alphabet."""
    return text.translate(_WIDTH_MAP)


_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_NUMBER = r"[-+]?\d+(?:\.\d+)?"


@dataclass(frozen=True)
class Rating:
    value: float
    reason: str | None


def parse_rating(text: str, low: float = 1, high: float = 10, keys: tuple[str, ...] = ("rating", "score")) -> Rating:
    """Read {"rating": n, "reason": "..."} from a judge reply.

    Tries, in order: JSON objects inside code fences, JSON objects anywhere in the text (first
    the raw text, then its ASCII-normalized form), then a `rating: n` pattern. The value must
    lie in [low, high].
    """
    if not text or not text.strip():
        raise ParseError("empty judge output")
    key_names = tuple(k.lower() for k in keys) + ("评分", "分数", "得分")
    found = _plain_json_rating(text, key_names)  # the usual, well-behaved reply: one JSON object
    if found is not None:
        return Rating(_check_range(found[0], low, high), found[1])
    for candidate in _candidates(text):
        for obj in _json_objects(candidate):
            found = _rating_from_object(obj, key_names)
            if found is not None:
                value, reason = found
                return Rating(_check_range(value, low, high), reason)
    normalized = normalize_text(text)
    pattern = re.compile(
        r"[\"'*]*(?:" + "|".join(map(re.escape, key_names)) + r")[\"'*]*\s*[:=]\s*[\"'*]*\s*(" + _NUMBER + r")(?:\s*/\s*10)?",
        re.IGNORECASE,
    )
    values = {float(m.group(1)) for m in pattern.finditer(normalized)}
    if len(values) > 1:
        raise ParseError(f"several different ratings in the output: {sorted(values)}")
    if values:
        return Rating(_check_range(values.pop(), low, high), _loose_reason(normalized))
    raise ParseError("no rating found (expected JSON with a rating and a reason)")


def _plain_json_rating(text: str, key_names: tuple[str, ...]):
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    try:
        obj = json.loads(stripped)
    except json.JSONDecodeError:
        return None
    return _rating_from_object(obj, key_names) if isinstance(obj, dict) else None


def _candidates(text: str):
    """Fenced blocks, then the whole text; the ASCII-normalized forms only if those fail."""
    fenced = [m.group(1) for m in _FENCE.finditer(text)] if "```" in text else []
    candidates = fenced + [text]
    yield from candidates
    for candidate in candidates:
        yield normalize_text(candidate)


def _json_objects(text: str):
    """Every JSON object that starts at some '{' and decodes cleanly, in reading order."""
    decoder = _DECODER
    position = text.find("{")
    while position != -1:
        try:
            obj, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(obj, dict):
            yield obj
        position = text.find("{", end)


def _rating_from_object(obj: dict, key_names: tuple[str, ...]):
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in key_names:
        if key in lowered:
            value = _as_number(lowered[key])
            if value is None:
                raise ParseError(f"rating {lowered[key]!r} is not a number")
            reason = lowered.get("reason", lowered.get("理由", lowered.get("explanation")))
            return value, (str(reason) if reason is not None else None)
    return None


def _as_number(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(" + _NUMBER + r")\s*(?:/\s*10|分)?\s*", normalize_text(value))
        if match:
            return float(match.group(1))
    return None


def _check_range(value: float, low: float, high: float) -> float:
    if not low <= value <= high:
        raise ParseError(f"rating {value:g} is outside {low:g}-{high:g}")
    return int(value) if value == int(value) else value


def _loose_reason(text: str) -> str | None:
    match = re.search(r"reason[\"'*]*\s*:\s*\"?(.+?)\"?\s*(?:[,}]|$)", text, re.IGNORECASE | re.DOTALL)
    return match.group(1).strip() if match else None


# --------------------------------------------------------------------------- pairwise votes

ANSWER1, ANSWER2 = "Answer1", "Answer2"
UNABLE_ONE, UNABLE_TWO = "unable to decide: situation one", "unable to decide: situation two"
VOTES = (ANSWER1, ANSWER2, UNABLE_ONE, UNABLE_TWO)

_VOTE_PREFIX = re.compile(
    r"^(?:final\s+)?(?:vote|verdict|decision|answer|output|result|choice|judg(?:e)?ment)\s*[:=-]\s*", re.IGNORECASE
)
_ANSWER_VOTE = re.compile(r"^answer\s*[-_ ]?\s*(1|2|one|two)$", re.IGNORECASE)
_UNABLE_VOTE = re.compile(r"^unable\s+to\s+decide\W*(?:situation|case)\s*(1|2|one|two)$", re.IGNORECASE)


def parse_vote(text: str) -> str:
    """The vote on the judge's last non-empty line, as one of VOTES."""
    lines = [line.strip() for line in normalize_text(text or "").splitlines() if line.strip()]
    if not lines:
        raise ParseError("empty judge output")
    last = lines[-1]
    cleaned = re.sub(r"[*_`#>()\[\]\"']", "", last).strip().rstrip(".!").strip()
    for attempt in (cleaned, _VOTE_PREFIX.sub("", cleaned).strip()):
        if match := _ANSWER_VOTE.match(attempt):
            return ANSWER1 if match.group(1).lower() in ("1", "one") else ANSWER2
        if match := _UNABLE_VOTE.match(attempt):
            return UNABLE_ONE if match.group(1).lower() in ("1", "one") else UNABLE_TWO
    raise ParseError(f"last line is not a vote: {last[:80]!r}")


# --------------------------------------------------------------------------- TouchStone

_SCORE_PAIR = re.compile(r"^(" + _NUMBER + r")\s*(?:[,;/]\s*|\s+)(" + _NUMBER + r")$")


def parse_score_pair(text: str, low: float = 1, high: float = 10) -> tuple[float, float]:
    """The two scores "s1 s2" on the judge's first non-empty line."""
    lines = [line.strip() for line in normalize_text(text or "").splitlines() if line.strip()]
    if not lines:
        raise ParseError("empty judge output")
    first = re.sub(r"[*_`#\[\]\"']", "", lines[0]).strip()
    match = _SCORE_PAIR.match(first)
    if not match:
        raise ParseError(f"first line is not two scores: {lines[0][:80]!r}")
    return _check_range(float(match.group(1)), low, high), _check_range(float(match.group(2)), low, high)
