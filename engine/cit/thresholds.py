"""Stage B's candidate thresholds of the conditional inference trees
(:mod:`engine.cit.tree`): the candidate midpoints of a feature at a node
(:func:`threshold_candidates`), the ranges of the node's features and the constant-column
test.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.utils import check_random_state

from engine._numba import njit

THRESHOLD_METHODS = ("exact", "random", "percentile", "histogram")

#: A column (or a regression target) is constant when its range is at most this many ulps
#: of its magnitude.
CONSTANT_ULPS = 4.0


@njit
def column_ranges(X, rows, features):
    """``(low, high)`` float64 (f,) of the ``features`` (int64) of ``X`` over ``rows``."""
    nf = features.shape[0]
    low = np.full(nf, np.inf)
    high = np.full(nf, -np.inf)
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(nf):
            v = X[r, features[j]]
            if v < low[j]:
                low[j] = v
            if v > high[j]:
                high[j] = v
    return low, high


def is_constant(low, high):
    """Whether ranges ``[low, high]`` (arrays) are constant up to rounding: at most
    :data:`CONSTANT_ULPS` ulps of their magnitude (relative to each column's own scale)."""
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    scale = np.maximum(np.abs(low), np.abs(high))
    return (high - low) <= CONSTANT_ULPS * np.finfo(np.float64).eps * scale


def _n_thresholds(max_thresholds, n_unique: int) -> int:
    """``k`` of :func:`threshold_candidates` for a node feature with ``n_unique`` distinct
    values (as citrees' ``calculate_max_value`` on the number of unique values, except
    ``None``: ours is 'sqrt', citrees' is every value); the caller caps it at the number of
    midpoints.  Raises ValueError on a bad ``max_thresholds``."""
    if max_thresholds is None or max_thresholds == "sqrt":
        return max(1, int(math.ceil(math.sqrt(n_unique))))
    if max_thresholds == "log2":
        return max(1, int(math.ceil(math.log2(max(n_unique, 2)))))
    if isinstance(max_thresholds, (int, np.integer)) and not isinstance(max_thresholds, bool):
        if max_thresholds < 1:
            raise ValueError(f"max_thresholds must be >= 1, got {max_thresholds}")
        return int(max_thresholds)
    if isinstance(max_thresholds, float) and 0.0 < max_thresholds <= 1.0:
        return max(1, int(math.ceil(max_thresholds * n_unique)))
    raise ValueError(
        "max_thresholds must be None, 'sqrt', 'log2', an int >= 1 or a fraction in "
        f"(0, 1], got {max_thresholds!r}"
    )


def threshold_candidates(
    x, method: str = "exact", max_thresholds=None, *, rng=None, min_samples_leaf: int = 1
) -> np.ndarray:
    """Stage-B candidate thresholds (sorted float64) of one feature at a node.

    From the midpoints ``m`` of the sorted unique values ``u`` of ``x``: ``exact`` all of
    them; ``random`` ``k`` distinct midpoints drawn without replacement; ``percentile``
    ``unique(percentile(m, linspace(0, 100, k)))``; ``histogram`` the unique edges of
    ``np.histogram(m, bins=k)`` (``k + 1`` equally spaced edges from ``min(m)`` to
    ``max(m)``).  All midpoints when ``x`` has at most 4 unique values.  ``k`` from
    ``max_thresholds`` on the number of unique values ``|u|`` (None/'sqrt':
    ceil(sqrt(|u|)), 'log2': ceil(log2(|u|)), an int, or ceil(fraction * |u|)), then capped
    at ``|m| = |u| - 1`` as in citrees: a histogram never has more bins than there are
    midpoints (``max_thresholds=256`` on 100 unique values gives 99 bins, 100 edges).
    Thresholds leaving fewer than ``min_samples_leaf`` rows on a side (left iff ``x <= t``)
    are dropped.  Raises ValueError on an unknown ``method`` or a bad ``max_thresholds``.
    """
    if method not in THRESHOLD_METHODS:
        raise ValueError(
            f"threshold_method must be one of {list(THRESHOLD_METHODS)}, got {method!r}"
        )
    x = np.asarray(x, dtype=np.float64)
    u = np.unique(x)
    mid = (u[:-1] + u[1:]) / 2.0
    if mid.size == 0:
        return mid
    if method != "exact" and u.size > 4:
        k = min(_n_thresholds(max_thresholds, u.size), mid.size)
        if method == "random":
            if k < mid.size:
                rng = check_random_state(rng)
                mid = np.sort(mid[rng.choice(mid.size, size=k, replace=False)])
        elif method == "percentile":
            mid = np.unique(np.percentile(mid, np.linspace(0.0, 100.0, k)))
        else:
            mid = np.unique(np.histogram(mid, bins=k)[1])
    if min_samples_leaf > 1:
        xs = np.sort(x)
        pos = np.searchsorted(xs, mid, side="right")
        mid = mid[(pos >= min_samples_leaf) & (x.size - pos >= min_samples_leaf)]
    return np.ascontiguousarray(mid, dtype=np.float64)
