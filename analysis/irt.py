"""A two-parameter item response model fitted to a results matrix, in numpy (no other dependency).

P(model m right on item i) = 1 / (1 + exp(-a_i (theta_m - b_i))), with normal priors on theta and
b and a log-normal one on a: the joint maximum a posteriori (alternating damped Newton steps on
the abilities, the difficulties and the log-discriminations, every step one vectorised pass over
the matrix). Results may be fractions (a pointwise grade of 7/10 counts as 0.7 of a right
answer: the Bernoulli likelihood's quasi-likelihood) and missing (NaN: left out).

Why our own few dozen lines rather than `girth` (docs/item-analysis.md): with the handful of models
a leaderboard has, the priors are what keeps the fit finite (an item every model gets right has
no maximum-likelihood difficulty; girth's estimators expect such items removed first); fractions
and missing cells fit the same way; and a release of 10,000 items and 20 models fits in about a
second. With fewer than TWO_PARAMETER_MODELS models the discriminations are fixed at 1 (a Rasch
model): there is not enough to tell an item's slope from chance.
"""

from dataclasses import dataclass

import numpy as np

TWO_PARAMETER_MODELS = 5
PRIOR_THETA = 1.5  # sd of the abilities
PRIOR_B = 2.0  # sd of the difficulties
PRIOR_LOG_A = 0.5  # sd of log(a): a mostly within 0.4-2.7
ITERATIONS = 300
TOLERANCE = 1e-5


@dataclass
class Fit:
    theta: np.ndarray  # per model
    a: np.ndarray  # per item
    b: np.ndarray  # per item
    two_parameter: bool
    iterations: int


def _sigmoid(z):
    return 0.5 * (1 + np.tanh(0.5 * z))  # logistic without overflow


def fit(results: np.ndarray, *, two_parameter: bool | None = None) -> Fit:
    """Fit the model to `results` (models x items, values 0-1, NaN where a model has no result)."""
    y = np.asarray(results, dtype=float)
    present = ~np.isnan(y)
    y = np.where(present, y, 0.0)
    w = present.astype(float)
    models, items = y.shape
    if two_parameter is None:
        two_parameter = models >= TWO_PARAMETER_MODELS
    # Start from the observed shares: abilities and difficulties on the logit scale.
    model_share = np.clip((y * w).sum(1) / np.maximum(w.sum(1), 1), 0.02, 0.98)
    item_share = np.clip((y * w).sum(0) / np.maximum(w.sum(0), 1), 0.02, 0.98)
    theta = np.log(model_share / (1 - model_share))
    theta = (theta - theta.mean()) / max(theta.std(), 1.0)
    b = -np.log(item_share / (1 - item_share)) / 2
    log_a = np.zeros(items)
    done = ITERATIONS
    for step in range(1, ITERATIONS + 1):
        a = np.exp(log_a)
        p = _sigmoid(a * (theta[:, None] - b))
        residual, weight = w * (y - p), w * p * (1 - p)
        step_theta = ((residual * a).sum(1) - theta / PRIOR_THETA**2) / ((weight * a * a).sum(1) + 1 / PRIOR_THETA**2)
        theta = theta + np.clip(step_theta, -1, 1)

        p = _sigmoid(a * (theta[:, None] - b))
        residual, weight = w * (y - p), w * p * (1 - p)
        step_b = (-(residual * a).sum(0) - b / PRIOR_B**2) / ((weight * a * a).sum(0) + 1 / PRIOR_B**2)
        b = b + np.clip(step_b, -1, 1)
        biggest = max(np.abs(step_theta).max(initial=0), np.abs(step_b).max(initial=0))

        if two_parameter:
            p = _sigmoid(a * (theta[:, None] - b))
            residual, weight = w * (y - p), w * p * (1 - p)
            slope = a * (theta[:, None] - b)
            step_a = ((residual * slope).sum(0) - log_a / PRIOR_LOG_A**2) / ((weight * slope * slope).sum(0) + 1 / PRIOR_LOG_A**2)
            log_a = log_a + np.clip(step_a, -0.5, 0.5)
            biggest = max(biggest, np.abs(step_a).max(initial=0))
        if biggest < TOLERANCE:
            done = step
            break
    return Fit(theta=theta, a=np.exp(log_a), b=b, two_parameter=two_parameter, iterations=done)
