"""How close two questions are in wording: overlap of character n-grams (Dice coefficient).

Character n-grams need no word segmentation, so the same measure works for Chinese and English:
bigrams when either text has Chinese characters (a Chinese word is one to a few characters),
trigrams otherwise. It is a hint for reviewers (a near copy of the seed changes no style), never
a decision.
"""

from __future__ import annotations

from collections import Counter

from .parsing import normalized

NEAR_COPY = 0.8


def has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" for ch in text)


def ngrams(text: str, size: int) -> Counter:
    compact = normalized(text)
    if len(compact) <= size:
        return Counter([compact]) if compact else Counter()
    return Counter(compact[i : i + size] for i in range(len(compact) - size + 1))


def similarity(a: str, b: str) -> float:
    """0 (no shared n-gram) to 1 (same characters in the same order), rounded to 3 places."""
    size = 2 if has_cjk(a) or has_cjk(b) else 3
    left, right = ngrams(a, size), ngrams(b, size)
    total = sum(left.values()) + sum(right.values())
    if not total:
        return 0.0
    return round(2 * sum((left & right).values()) / total, 3)


def max_similarity(text: str, others) -> float:
    return max((similarity(text, other) for other in others), default=0.0)


def is_near_copy(score: float | None) -> bool:
    return score is not None and score >= NEAR_COPY
