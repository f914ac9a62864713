"""How close two questions are in wording: overlap of character n-grams (Dice coefficient).

Character n-grams need no word segmentation, so the same measure works for Chinese and English:
bigrams when either text has Chinese characters (a Chinese word is one to a few characters),
trigrams otherwise. It is a hint for reviewers (a near copy of the seed changes no style), never
a decision.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from .parsing import normalized

NEAR_COPY = 0.8


def has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" for ch in text)


@lru_cache(maxsize=8192)
def ngrams(text: str, size: int) -> tuple[dict[str, int], int]:
    """A text's n-gram counts and their total (cached: a batch compares each text several times)."""
    compact = normalized(text)
    if len(compact) <= size:
        grams = Counter([compact]) if compact else Counter()
    else:
        grams = Counter(compact[i : i + size] for i in range(len(compact) - size + 1))
    return dict(grams), sum(grams.values())


def similarity(a: str, b: str) -> float:
    """0 (no shared n-gram) to 1 (same characters in the same order), rounded to 3 places."""
    size = 2 if has_cjk(a) or has_cjk(b) else 3
    (left, left_total), (right, right_total) = ngrams(a, size), ngrams(b, size)
    if not left_total + right_total:
        return 0.0
    if len(left) > len(right):
        left, right = right, left
    shared = sum(min(count, right.get(gram, 0)) for gram, count in left.items())
    return round(2 * shared / (left_total + right_total), 3)


def sibling_similarities(texts: list[str]) -> list[float]:
    """For each text, its highest similarity to another of `texts`."""
    return [
        max((similarity(text, other) for j, other in enumerate(texts) if j != i), default=0.0) for i, text in enumerate(texts)
    ]


def max_similarity(text: str, others) -> float:
    return max((similarity(text, other) for other in others), default=0.0)


def is_near_copy(score: float | None) -> bool:
    return score is not None and score >= NEAR_COPY
