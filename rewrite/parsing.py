"""Reading rewrites out of a model's reply (no Django: plain text in, lists out).

Models rarely return exactly N bare lines. This keeps what is usable and says why every other
line was left out, so a reviewer can see what was dropped next to the raw reply:

    result = parse_reply(reply, seed="图中有几只猫？", n=5, existing=[...])
    result.rewrites   # usable texts, in reply order, at most n
    result.dropped    # [Dropped(line, reason)], reason a key of DROP_REASONS
    result.refusal    # the model declined and gave nothing usable
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field

from django.utils.translation import gettext_lazy as _

DROP_REASONS = {
    "remark": _("a remark around the rewrites, not a rewrite"),
    "refusal": _("the model declined"),
    "seed": _("repeats the seed question"),
    "language": _("not in the seed's language"),
    "duplicate": _("repeats another rewrite"),
    "extra": _("more rewrites than asked for"),
    "empty": _("nothing left after numbering and quotes"),
}

# Numbering and bullets: "1." "1)" "1、" "(1)" "（1）" "①" "-" "*" "•" and Markdown headings/quotes.
_MARKER = re.compile(
    r"""^\s*(?:
        [#>]+\s*
      | [-*•·●▪◦–—]\s+
      | [(（\[]\s*\d{1,2}\s*[)）\]]\s*
      | \d{1,2}\s*(?:[.．、:：)）]|\s-)\s*
      | [①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮]\s*
    )""",
    re.VERBOSE,
)
# Labels a model puts before each rewrite: "Rewrite 1:", "Version 2 -", "改写2：", "问题三：".
_LABEL = re.compile(
    r"""^\s*(?:rewrite|rewritten\ question|rephrased\ question|paraphrase|version|variant|question|option|
        改写(?:版本|后的问题|问题)?|版本|问题|问法|说法|句子)
        \s*(?:\d{1,2}|[一二三四五六七八九十])?\s*[:：.\-—)）]\s*""",
    re.VERBOSE | re.IGNORECASE,
)
_QUOTES = [('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("「", "」"), ("『", "』"), ("«", "»"), ("`", "`"), ("＂", "＂")]
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
_FENCE = re.compile(r"^\s*```")

_REFUSAL = re.compile(
    r"""(?:\bI(?:'m|\ am)\ (?:sorry|unable|not\ able)|\bI\ (?:can(?:no|')t|won't|will\ not)\b|\bas\ an\ AI\b|
        \bcannot\ (?:help|assist|comply)|抱歉|对不起|我无法|我不能|无法(?:完成|提供|协助|回答|满足)|不能(?:提供|协助|完成)|作为(?:一个)?(?:AI|人工智能))""",
    re.VERBOSE | re.IGNORECASE,
)
# Remarks that open or close a reply rather than being a rewrite.
_REMARK = re.compile(
    r"""^(?:sure|certainly|of\ course|okay|ok|here\ (?:are|is)|below\ are|the\ following|these\ (?:rewrites|versions)|
        i\ hope|hope\ (?:this|these)|note[:：]|let\ me\ know|feel\ free|
        好的|当然|以下是|下面是|如下|这里是|这些改写|以上|希望|注意[:：]|注[:：]|说明[:：]|改写如下)""",
    re.VERBOSE | re.IGNORECASE,
)


# The seed echoed with a label naming it, in either language: "原问题：…", "Question: …", "Original
# question: …", "The original question is …", "题目是…", or with a note after it "…（原问题）". Only
# such labels: "Quick question: <seed>" or "麻烦看一下：<seed>" are (poor) rewrites, not the seed.
_ECHO_LABEL = re.compile(
    r"^\W*(?:(?:the\s+)?(?:original|given|source|seed|input|initial|old)?\s*(?:question|prompt|query|seed)(?:\s*\d{1,2})?"
    r"|(?:原|原始|给定|输入|种子|初始)?(?:问题|题目|问句)|原题|原句|原文)\W*[:：]\s*(?P<rest>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_ECHO_PHRASE = re.compile(
    r"^(?:(?:the\s+)?(?:original|seed|source|given|input)\s+question\s+(?:is|was|reads)|(?:原|原始|给定|种子|输入)?(?:问题|题目)(?:是|为))"
    r"\s*(?P<rest>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_TRAILING_NOTE = re.compile(r"\s*[(（\[【][^()（）\[\]【】]{1,30}[)）\]】]\s*$")


@dataclass(frozen=True)
class Dropped:
    line: str
    reason: str

    @property
    def label(self) -> str:
        return DROP_REASONS.get(self.reason, self.reason)

    def as_dict(self) -> dict:
        return {"line": self.line, "reason": self.reason}


@dataclass
class ParseResult:
    rewrites: list[str] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    refusal: bool = False


def normalized(text: str) -> str:
    """For comparisons: width-folded, lower case, without spaces or punctuation."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return "".join(ch for ch in folded if ch.isalnum())


def _strip_quotes(text: str) -> str:
    changed = True
    while changed and len(text) >= 2:
        changed = False
        for left, right in _QUOTES:
            if text.startswith(left) and text.endswith(right) and len(text) > len(left) + len(right) - 1:
                text = text[len(left) : len(text) - len(right)].strip()
                changed = True
                break
    return text


def _clean(line: str) -> tuple[str, bool]:
    """The text of one line without numbering, bullets, labels, emphasis and quotes, and whether
    it carried a list marker or label (rewrites usually do, remarks usually do not)."""
    text = line.strip()
    marked = False
    for _pass in range(3):  # "1. **Rewrite 1:** “...”" takes several passes
        before = text
        text = _EMPHASIS.sub(r"\2", text).strip()
        for pattern in (_MARKER, _LABEL):
            match = pattern.match(text)
            if match:
                text, marked = text[match.end() :].strip(), True
        text = _strip_quotes(text.strip("*_ ").strip())
        if text == before:
            break
    return text, marked


def _is_seed(text: str, seed_key: str) -> bool:
    """Whether a line is the seed itself, however it is labelled, quoted or annotated."""
    if not seed_key:
        return False
    pending, seen = [text], set()
    while pending:
        candidate = pending.pop().strip()
        if not candidate or candidate in seen:
            continue
        seen.add(candidate)
        if normalized(candidate) == seed_key:
            return True
        pending.append(_TRAILING_NOTE.sub("", candidate))
        pending.append(_clean(candidate)[0])
        for pattern in (_ECHO_LABEL, _ECHO_PHRASE):
            match = pattern.match(candidate)
            if match:
                pending.append(match.group("rest"))
    return False


def _is_chinese(text: str) -> bool | None:
    """Chinese when CJK characters make up at least a third of the letters; None for too few letters."""
    letters = [ch for ch in text if ch.isalpha()]
    if len(letters) < 3:
        return None
    cjk = sum(1 for ch in letters if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
    return cjk * 3 >= len(letters)


def _json_candidates(text: str) -> list[str] | None:
    """A reply that is a JSON list of strings (or an object holding one)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        data = json.loads(stripped)
    except ValueError:
        return None
    if isinstance(data, dict):
        data = next((v for v in data.values() if isinstance(v, list)), None)
    if isinstance(data, list) and data and all(isinstance(v, str) for v in data):
        return data
    return None


def parse_reply(reply: str, *, seed: str, n: int, existing: list[str] | tuple[str, ...] = ()) -> ParseResult:
    """Usable rewrites of `seed` in `reply` (at most `n`), every left-out line with its reason, and
    whether the reply was a refusal. `existing`: rewrites already kept for this seed (a retry must
    not repeat them)."""
    result = ParseResult()
    lines = [line for line in (reply or "").replace("\r\n", "\n").split("\n") if not _FENCE.match(line)]
    body = "\n".join(lines)
    from_json = _json_candidates(body)
    if from_json is not None:
        cleaned = [(_clean(value)[0], True, value) for value in from_json]
    else:
        cleaned = [(*_clean(line), line.strip()) for line in lines if line.strip()]
    seed_key = normalized(seed)
    echoes = [_is_seed(text, seed_key) or _is_seed(raw, seed_key) for text, _marked, raw in cleaned]
    # The seed echoed with a label ("Question: ...") is not a rewrite and says nothing about how the
    # rewrites are marked: it must not turn the unmarked rewrites into remarks.
    any_marked = any(marked for (_text, marked, _raw), echo in zip(cleaned, echoes) if not echo)
    candidates = len(cleaned) - sum(echoes)
    seen = {normalized(text) for text in existing}
    seed_chinese = _is_chinese(seed)
    refused = False
    for (text, marked, raw), echo in zip(cleaned, echoes):
        key = normalized(text)
        if not key:
            result.dropped.append(Dropped(raw, "empty"))
        elif echo:
            result.dropped.append(Dropped(raw, "seed"))
        elif _REFUSAL.search(text) and not marked:
            refused = True
            result.dropped.append(Dropped(raw, "refusal"))
        elif raw.lstrip().startswith("#") or (
            not marked and ((any_marked and candidates > 1) or _REMARK.match(text) or text.endswith((":", "：")))
        ):  # a Markdown heading is a title, never a rewrite
            result.dropped.append(Dropped(raw, "remark"))
        elif seed_chinese is not None and _is_chinese(text) not in (None, seed_chinese):
            result.dropped.append(Dropped(raw, "language"))
        elif key in seen:
            result.dropped.append(Dropped(raw, "duplicate"))
        elif len(result.rewrites) >= n:
            result.dropped.append(Dropped(raw, "extra"))
        else:
            seen.add(key)
            result.rewrites.append(text)
    result.refusal = refused and not result.rewrites
    return result
