"""Multiple-choice scoring (harness/README.md, `mcq`): the MCQ prompt, CircularEval passes, choice extraction.

Extraction has two steps. `heuristic_choice` reads the letter from a free-form reply when it is
unambiguous, maps refusals and empty replies to Z ("none of the options"), and otherwise
returns None. Only those None cases go to the LLM extractor (`parse_extractor_reply`). A reply
still unresolved after that counts as wrong: never a random guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.parsing import ParseError, normalize_text
from harness.release import CHOICE_LETTERS

NONE_OF_THEM = "Z"


@dataclass(frozen=True)
class CircularPass:
    """Pass k of an item: options rotated by k positions, the answer letter moved with them."""

    index: int
    options: dict[str, str]  # shown letter -> option text
    answer: str | None  # shown letter of the correct option
    source: dict[str, str]  # shown letter -> the option's letter in the original item


def circular_passes(choices: dict[str, str], answer: str | None) -> list[CircularPass]:
    """N passes for N options; in pass k the option shown at position j is original option j+k."""
    letters = list(choices)
    n = len(letters)
    passes = []
    for k in range(n):
        source = {CHOICE_LETTERS[j]: letters[(j + k) % n] for j in range(n)}
        options = {shown: choices[original] for shown, original in source.items()}
        shown_answer = None
        if answer is not None:
            shown_answer = CHOICE_LETTERS[(letters.index(answer) - k) % n]
        passes.append(CircularPass(index=k, options=options, answer=shown_answer, source=source))
    return passes


def format_options(options: dict[str, str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in options.items())


# --------------------------------------------------------------------------- heuristic extraction

_REFUSAL = re.compile(
    r"\b(?:i\s*(?:am|'m)\s*(?:sorry|unable|not able)|i\s*(?:can\s*not|cannot|can't|could\s*not|couldn't)"
    r"|(?:cannot|can't|unable\s+to|impossible\s+to|not\s+possible\s+to)\s+(?:determine|tell|answer|identify|see|say)"
    r"|none\s+of\s+the\s+(?:above|options|choices|answers)|no\s+(?:correct|valid)\s+(?:answer|option|choice))\b"
    r"|无法|不能确定|抱歉|对不起|都不(?:是|对|正确)|没有(?:正确|合适)",
    re.IGNORECASE,
)


def heuristic_choice(output: str, options: dict[str, str]) -> str | None:
    """The option letter the reply commits to, Z for refusals/empty replies, None when unsure."""
    text = normalize_text(output or "").strip()
    if not text:
        return NONE_OF_THEM
    letters = "".join(options)
    found = _explicit_letters(text, letters)
    if len(found) == 1:
        return found.pop()
    if len(found) > 1:
        return None  # several letters: let the extractor (or a human) decide
    by_text = _unique_option_text(text, options)
    if by_text:
        return by_text
    if _REFUSAL.search(text):
        return NONE_OF_THEM
    return None


def _explicit_letters(text: str, letters: str) -> set[str]:
    """Letters stated as the choice: a leading/closing option marker or an 'answer is X' phrase."""
    cls = f"[{re.escape(letters)}]"
    # A letter counts as a marker only when no word follows it directly ("A cat" is an article).
    marker_end = r"(?:[).:\]*,]|\s*$)"
    found: set[str] = set()
    patterns = [
        rf"^[\s(\[*\"']*({cls}){marker_end}",  # reply starts with the letter: "B", "(B) ...", "B. ..."
        rf"(?:^|\n)[\s(\[*\"']*({cls})[\s)\].:*\"']*$",  # last line is just the letter
        rf"(?:answer|option|choice|答案|选项|选择|选)\s*(?:is|should\s+be|would\s+be|will\s+be|为|是)?\s*[:]?\s*[(\[*\"']*\s*({cls})(?![A-Za-z0-9])",
        rf"(?<![A-Za-z0-9])({cls})\s*(?:is|would\s+be|seems)\s+(?:the\s+)?(?:correct|right|best)\b",
    ]
    for pattern in patterns:
        flags = re.IGNORECASE if pattern is patterns[2] or pattern is patterns[3] else 0
        for match in re.finditer(pattern, text, flags | re.MULTILINE):
            letter = match.group(1)
            if letter in letters:  # re.I must not turn "option a" into an article-like false hit
                found.add(letter)
    return found


def _unique_option_text(text: str, options: dict[str, str]) -> str | None:
    """The only option whose full text appears in the reply (a shorter text inside a longer one is ignored)."""
    lowered = text.casefold()
    hits = {}
    for letter, option in options.items():
        needle = normalize_text(option).strip().casefold().rstrip(".")
        if needle and _contains_phrase(lowered, needle):
            hits[letter] = needle
    hits = {
        letter: needle
        for letter, needle in hits.items()
        if not any(needle != other and needle in other for other in hits.values())
    }
    return next(iter(hits)) if len(hits) == 1 else None


def _contains_phrase(haystack: str, needle: str) -> bool:
    # Word boundaries only where the needle starts/ends with a word character (CJK has no spaces).
    left = r"(?<!\w)" if needle[0].isascii() and needle[0].isalnum() else ""
    right = r"(?!\w)" if needle[-1].isascii() and needle[-1].isalnum() else ""
    return re.search(left + re.escape(needle) + right, haystack) is not None


# --------------------------------------------------------------------------- LLM extractor reply


def parse_extractor_reply(reply: str, letters: str) -> str:
    """The letter (or Z) the extractor model answered; ParseError when it is not one of them."""
    allowed = letters + NONE_OF_THEM
    lines = [line.strip() for line in normalize_text(reply or "").splitlines() if line.strip()]
    if not lines:
        raise ParseError("empty extractor reply")
    for line in (lines[0], lines[-1]):
        cleaned = re.sub(r"[*_`#\"'()\[\].:]", " ", line).split()
        if len(cleaned) == 1 and cleaned[0] in allowed:
            return cleaned[0]
        match = re.match(r"^(?:answer|option|letter)\s*(?:is)?\s*[:]?\s*([A-Z])$", " ".join(cleaned), re.IGNORECASE)
        if match and match.group(1) in allowed:
            return match.group(1)
    raise ParseError(f"expected one of {', '.join(allowed)}, got {lines[0][:40]!r}")
