"""Multiple-choice scoring (benchforge_harness/README.md, `mcq`): the MCQ prompt, CircularEval passes, choice extraction.

Extraction has two steps. `heuristic_choice` reads the letter from a free-form reply when it is
unambiguous, maps refusals and empty replies to Z ("none of the options"), and otherwise
returns None. Only those None cases go to the LLM extractor (`parse_extractor_reply`). A reply
still unresolved after that counts as wrong: never a random guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchforge_harness.parsing import ParseError, normalize_text
from benchforge_harness.release import CHOICE_LETTERS

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
#
# The rules answer only when the reply commits to one option beyond doubt; everything else goes to
# the extractor. Option texts are read before letters: every occurrence of an option's whole text is
# masked by a token standing for that option, so a letter inside an option text ("Both B and C",
# "option C of question 3") is never taken for a letter the model chose. A commitment is a whole
# sentence of a fixed shape ("B", "(B) dog", "The answer is B.", "答案是B", "选B", "Answer: dog");
# it counts only when no other sentence commits to another option, and when it is not the reply's
# last sentence the rest must not name another option or hedge. Measured on the labelled corpus in
# tests/harness (bench/answer_reading.py prints the coverage).

_TOKEN_BASE = 0xE000  # private-use characters: one per option, never in real text after masking
_TOKENS = f"[{chr(_TOKEN_BASE)}-{chr(_TOKEN_BASE + 0xFF)}]"

_REFUSAL = re.compile(
    r"\b(?:i\s*(?:am|'m)\s*(?:sorry|unable|not\s+able)|i\s*(?:can\s*not|cannot|can't|could\s*not|couldn't)"
    r"|(?:cannot|can't|unable\s+to|impossible\s+to|not\s+possible\s+to)\s+(?:determine|tell|answer|identify|see|say)"
    r"|cannot\s+be\s+determined|not\s+enough\s+information|no\s+image"
    r"|none\s+of\s+the\s+(?:above|options|choices|answers)|no\s+(?:correct|valid)\s+(?:answer|option|choice))\b"
    r"|^\s*none\s*\.?\s*$"
    r"|无法|不能确定|不确定|抱歉|对不起|都不(?:是|对|正确)|没有(?:正确|合适)|看不到|看不清",
    re.IGNORECASE,
)
# Words that make a sentence conditional, negative, hedged or self-correcting: with one of them
# around, the rules do not decide.
_HEDGE = re.compile(
    r"(?i:(?<![a-z])(?:not|no|never|none|if|unless|whether|or|maybe|perhaps|might|may|could|possibly|probably"
    r"|likely|unsure|uncertain|either|neither|nor|except|but|however|although|though|wait|actually|instead"
    r"|rather|unclear|guess|assume|suppose|assuming|hypothetically|wrong|incorrect|false|exclude|eliminate"
    r"|ruled?\s+out|reconsider|correction|hmm)(?![a-z])|n't)"
    r"|不|没|非|无|否|如果|假如|假设|或|可能|也许|大概|但|然而|其实|错|排除|猜|还是",
)
_LEAD = r"(?:(?i:so|thus|therefore|hence|in\s+conclusion|in\s+summary|overall|finally|all\s+in\s+all)\s*[,:]?\s*|(?:所以|因此|综上所述|综上|故|最终|总之)\s*[,:]?\s*)?"
# Phrases that state a choice; allowed after other words in the same sentence.
_STATES = (
    r"(?i:(?:(?:the|my|our)\s+)?(?:(?:final|correct|right|best)\s+)?(?:answer|choice|option)"
    r"(?:\s+(?:is|would\s+be|should\s+be|will\s+be|must\s+be)\s*:?|\s*[:=])"
    r"|i\s*(?:would|'d|will|'ll)?\s*(?:choose|pick|select|go\s+with|answer))\s*"
    r"|(?:正确|最终|最佳)?答案(?:应该|应)?(?:是|为|选)\s*:?\s*|(?:正确|最终|最佳)?答案\s*:\s*"
    r"|(?:我|应该|应|故|所以|因此)?选(?:择)?\s*:?\s*"
)
# Labels that state a choice only when nothing else stands before them ("Option B.", "Answer B").
_LABELS = r"(?i:(?:final\s+)?(?:answer|option|choice))\s*|选项\s*:?\s*|答案\s*"
_OPEN = r"[\s(\[<{\"'*]*"
_CLOSE = r"[\s)\]>}\"'*]*"
_CORRECT = r"\s*(?i:(?:is|would\s+be)\s+(?:the\s+)?(?:correct|right|best)(?:\s+(?:answer|option|choice|one))?)|\s*(?:是|为)?(?:正确|对)的?(?:答案|选项)?"
_TAIL = r"\s*(?:选项|项)?\s*[.!。]*\s*$"


class _Reader:
    """The heuristic reading of one reply against one set of shown options."""

    def __init__(self, options: dict[str, str]):
        self.letters = "".join(options)
        self.label = f"[{re.escape(self.letters)}]"
        texts = {letter: _option_needle(text) for letter, text in options.items()}
        # Identical option texts cannot be told apart: their token stands for no single letter.
        self.by_token: dict[str, str | None] = {}
        self.needles: list[tuple[str, str]] = []
        seen: dict[str, str] = {}
        for letter, needle in texts.items():
            if not needle:
                continue
            if needle in seen:
                self.by_token[seen[needle]] = None
                continue
            token = chr(_TOKEN_BASE + len(seen))
            seen[needle] = token
            self.by_token[token] = letter
            self.needles.append((needle, token))
        self.needles.sort(key=lambda pair: -len(pair[0]))  # "dark red" before "red"
        # An option whose whole text is one of the letters makes every bare letter ambiguous.
        self.unreadable = any(needle.upper() in self.letters and len(needle) == 1 for needle in texts.values())
        target = (
            rf"(?:{_OPEN}(?P<letter>{self.label}){_CLOSE}(?:[.:,\-]?\s*(?P<own>{_TOKENS}))?|{_OPEN}(?P<text>{_TOKENS}){_CLOSE})"
        )
        self.pure = [
            re.compile(rf"^{_LEAD}(?:{_LABELS})?{target}{_TAIL}"),
            re.compile(rf"^{_LEAD}(?:(?i:option)\s*|选项\s*)?{target}(?:{_CORRECT}){_TAIL}"),
            re.compile(rf"^(?P<prefix>.*?){_LEAD}(?:{_STATES}){target}{_TAIL}"),
        ]
        self.stated = re.compile(rf"(?:{_STATES})(?:{_OPEN}(?P<letter>{self.label})(?![A-Za-z0-9])|{_OPEN}(?P<text>{_TOKENS}))")
        self.letter_token = re.compile(rf"(?<![A-Za-z0-9'])({self.label}|{_TOKENS})(?![A-Za-z0-9'])")

    def mask(self, text: str) -> str:
        for needle, token in self.needles:
            text = _phrase_pattern(needle).sub(token, text)
        return text

    def commitment(self, sentence: str) -> str | None:
        """The letter a whole sentence commits to, "" when it commits to something unreadable, else None."""
        for pattern in self.pure:
            match = pattern.match(sentence)
            if not match:
                continue
            prefix = match.groupdict().get("prefix")
            if prefix and (_HEDGE.search(prefix) or self.letter_token.search(prefix)):
                return None
            if match.group("letter"):
                own = match.group("own")
                if own and self.by_token.get(own) != match.group("letter"):
                    return ""  # "B. <the text of C>": the letter and the text disagree
                return match.group("letter")
            return self.by_token.get(match.group("text")) or ""
        return None

    def stated_letters(self, text: str) -> set[str]:
        """Every option any phrase anywhere states as the answer (also inside longer sentences)."""
        found = set()
        for match in self.stated.finditer(text):
            letter = match.group("letter") or self.by_token.get(match.group("text"))
            found.add(letter or "")
        return found

    def mentions(self, text: str) -> set[str]:
        return {self.by_token.get(t, "") if ord(t[0]) >= _TOKEN_BASE else t for t in self.letter_token.findall(text)}


def _option_needle(text: str) -> str:
    return re.sub(r"\s+", " ", _clean(normalize_text(str(text)))).strip().rstrip(".。").strip().casefold()


def _phrase_pattern(needle: str) -> re.Pattern:
    body = r"\s+".join(re.escape(part) for part in needle.split(" "))
    # Word boundaries only where the text starts/ends with an ASCII letter or digit (CJK has no spaces);
    # a number must not match inside a longer number ("2" in "12" or "2.5").
    left = r"(?<![A-Za-z0-9])(?<!\d\.)" if needle[0].isascii() and needle[0].isalnum() else ""
    right = r"(?![A-Za-z0-9])(?!\.\d)" if needle[-1].isascii() and needle[-1].isalnum() else ""
    return re.compile(left + body + right, re.IGNORECASE)


def _clean(text: str) -> str:
    """Markdown and LaTeX decoration off: bold, code, headings, quotes, \\boxed{B}, $...$."""
    text = re.sub(r"\\(?:boxed|text|textbf|mathrm)\s*\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"[*_`$]+", "", text)
    return re.sub(r"(?m)^[ \t]*(?:#+|>+)[ \t]*", "", text)


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")


def heuristic_choice(output: str, options: dict[str, str]) -> str | None:
    """The option letter the reply commits to beyond doubt, Z for refusals and empty replies, None
    for everything else (the LLM extractor's turn)."""
    text = _clean(normalize_text(output or "")).strip()
    if not text:
        return NONE_OF_THEM
    reader = _Reader(options)
    if reader.unreadable:
        return None
    masked = reader.mask(text)
    units: list[tuple[str, int, int]] = []  # (letter, start, end) of each committing sentence
    offset = 0
    for line in masked.splitlines(keepends=True):
        stripped = line.strip()
        start = offset + line.find(stripped) if stripped else offset
        letter = reader.commitment(stripped) if stripped else None
        if letter is not None:
            units.append((letter, start, start + len(stripped)))
        elif stripped:
            position = 0
            for sentence in _SENTENCE_END.split(stripped):
                at = stripped.find(sentence, position)
                position = at + len(sentence)
                letter = reader.commitment(sentence.strip())
                if letter is not None:
                    units.append((letter, start + at, start + position))
        offset += len(line)
    chosen = {letter for letter, _, _ in units}
    if not units:
        if _REFUSAL.search(text) and not reader.mentions(masked) and not reader.stated_letters(masked):
            return NONE_OF_THEM
        return None
    if len(chosen) != 1 or "" in chosen or reader.stated_letters(masked) - chosen:
        return None
    letter = chosen.pop()
    after_last = masked[units[-1][2] :]
    if not after_last.strip(" \t\n.!。"):
        return letter  # the reply ends on its commitment: what came before was the reasoning
    rest = "".join(masked[end:start] for (_, _, end), (_, start, _) in zip([("", 0, 0), *units], [*units, ("", len(masked), 0)]))
    if reader.mentions(rest) - {letter} or _HEDGE.search(rest):
        return None
    return letter


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
