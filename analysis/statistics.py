"""Per-item statistics of a results matrix (models x items, values 0-1, NaN where a model has no
result), vectorised: a release of 10,000 items and 20 models is a few array passes, never a query
or a Python loop per item. docs/item-analysis.md states every formula and threshold."""

from dataclasses import dataclass

import numpy as np

from . import irt

MIN_MODELS = 3  # below this an item's figures say nothing
RIGHT = 0.5  # a result at least this is "right" (a win, a solved item, a grade of 5/10 or more)
SATURATED = 0.9  # every model at least this: the item no longer separates models
UNANSWERABLE = 0.2  # every model at most this: a wrong key, an ungradable reference, an ambiguous image
NEGATIVE = -0.3  # point-biserial at most this: strong models fail it while weak ones pass
NEGATIVE_MODELS = 4  # ... counted from this many models (fewer: a correlation means little)
DISAGREEMENT = 0.5  # share of people's ratings that disagree with the judge
DISAGREEMENT_RATINGS = 2  # ... counted from this many ratings


@dataclass
class ItemFigures:
    n_models: np.ndarray
    difficulty: np.ndarray  # mean result
    share_right: np.ndarray
    discrimination: np.ndarray  # point-biserial against the rest score
    fit: irt.Fit | None
    scores: np.ndarray  # each model's mean result


def figures(results: np.ndarray) -> ItemFigures:
    y = np.asarray(results, dtype=float)
    present = ~np.isnan(y)
    w = present.astype(float)
    y0 = np.where(present, y, 0.0)
    n_models = w.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        difficulty = np.where(n_models > 0, y0.sum(0) / n_models, np.nan)
        share_right = np.where(n_models > 0, ((y0 >= RIGHT) * w).sum(0) / n_models, np.nan)
        # Each model's score on the other items (its rest score), so an item is not correlated with itself.
        totals, counts = y0.sum(1, keepdims=True), w.sum(1, keepdims=True)
        rest = (totals - y0) / np.maximum(counts - w, 1)
        mean_y = (y0 * w).sum(0) / n_models
        mean_r = (rest * w).sum(0) / n_models
        dy, dr = (y0 - mean_y) * w, (rest - mean_r) * w
        covariance = (dy * dr).sum(0)
        spread = np.sqrt((dy * dy).sum(0) * (dr * dr).sum(0))
        discrimination = np.where((n_models >= MIN_MODELS) & (spread > 1e-12), covariance / spread, np.nan)
        scores = np.where(counts[:, 0] > 0, totals[:, 0] / counts[:, 0], np.nan)
    fitted = irt.fit(y) if y.shape[0] >= MIN_MODELS else None
    return ItemFigures(n_models.astype(int), difficulty, share_right, discrimination, fitted, scores)


def flags(results: np.ndarray, found: ItemFigures, ratings: np.ndarray, disagreement: np.ndarray) -> list[list[str]]:
    """Each item's flag codes (analysis.models.Flag), in a fixed order."""
    y = np.asarray(results, dtype=float)
    enough = found.n_models >= MIN_MODELS
    with np.errstate(invalid="ignore"):
        saturated = enough & (np.nanmin(np.where(np.isnan(y), np.inf, y), 0) >= SATURATED)
        unanswerable = enough & (np.nanmax(np.where(np.isnan(y), -np.inf, y), 0) <= UNANSWERABLE)
        negative = (found.n_models >= NEGATIVE_MODELS) & (found.discrimination <= NEGATIVE)
        disagree = (ratings >= DISAGREEMENT_RATINGS) & (disagreement >= DISAGREEMENT)
    codes = ("saturated", "unanswerable", "negative_discrimination", "judge_disagreement")
    table = np.stack([saturated, unanswerable, np.nan_to_num(negative).astype(bool), disagree])
    return [[codes[f] for f in np.flatnonzero(table[:, i])] for i in range(y.shape[1])]
