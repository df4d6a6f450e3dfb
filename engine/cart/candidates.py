"""Candidate thresholds of a continuous feature at a node (docs/spec.md section 5, DICS).

Every strategy returns a sorted array of thresholds **snapped** to the midpoint of the
unique-value gap that contains each raw candidate, deduplicated (so at most
``n_unique - 1``), then filtered by ``min_samples_leaf``; the builder scores them all with
the same impurity kernel (:mod:`engine.criteria`).  Snapping: with ``u`` the sorted unique
values, a raw candidate ``tau`` with ``u[i] <= tau < u[i+1]`` becomes
``(u[i] + u[i+1]) / 2``; candidates below ``u[0]`` or at/above ``u[-1]`` are dropped.

Strategies (``k`` is the ``n_candidates`` parameter of the estimators):

==================  ==========================================================================
``exhaustive``      all midpoints between consecutive distinct values (CART).
``quantile``        ``np.quantile(x, j / (k + 1))``, ``j = 1..k`` (linear interpolation,
                    default ``k = 16``); all midpoints when ``n_unique <= k + 1``.
``histogram``       the ``k - 1`` inner edges of ``k`` equal-width bins over ``[min, max]``
                    (default ``k = 16``).
``random``          ``k`` midpoints drawn uniformly without replacement among those allowed
                    by ``min_samples_leaf`` (default ``k = 16``; seeded).
``dics_paper``      the global DICS dictionary (:func:`dics_dictionary`: mini-batch k-means
                    with K = number of classes on standardised ``X``, the ``m`` farthest
                    centroid pairs, variance-adjusted boundaries in raw units); the builder
                    can sample ``k`` dictionary entries per node and remove used ones.
``kmeans1d``        1-D k-means (Lloyd, initialised at evenly spaced unique values) on the
                    node's values, ``k`` clusters (default: number of classes, 8 for
                    regression); midpoints of adjacent centroids (or variance-adjusted).
``class_centroid``  per-class mean and std of the feature at the node; the variance-adjusted
                    boundary between adjacent class means (at most ``K - 1``; label-aware,
                    classification only).
``kde_valley``      strict local minima of a Gaussian KDE (Scott bandwidth
                    ``std(ddof=1) n^(-1/5)``) on a 256-point grid over ``[min, max]``.
==================  ==========================================================================

When a strategy other than ``exhaustive``/``random``/``quantile`` yields no candidate for a
feature, the ``quantile`` strategy with ``k = 16`` is used instead (``fallback=True``).  For
``dics_paper`` the builder applies the fallback per node (only when no feature has a
candidate), so a node keeps at most ``m`` candidates per feature.  Candidate strategies use
row counts, not sample weights; weights enter through the impurity kernel.

Variance-adjusted boundary of clusters (or classes) ``i < j`` along a feature:
``zeta = (s_i mu_j + s_j mu_i) / (s_i + s_j)`` with ``s`` the within-cluster standard deviation
plus ``eps`` (the point at equal standardised distance from both means).

Public API: :data:`STRATEGIES`, :func:`strategies_for`, :func:`candidate_thresholds`,
:func:`dics_dictionary` (returns :class:`DICSDictionary`).  The numba kernels (``*_raw``,
:func:`snap_positions`, :func:`node_positions`) work on one node's sorted values and are
what the CART builder calls at every node; they live in :mod:`engine.cart._candidate_kernels`,
the DICS dictionary in :mod:`engine.cart.dics`.
"""

from __future__ import annotations

import numpy as np

from engine._numba import register_warmup
from engine._random import rng_state
from engine.cart._candidate_kernels import (
    FALLBACK_Q,
    KDE_GRID,
    LABEL_AWARE,
    STRATEGIES,
    kde_density,
    node_positions,
    thresholds_of,
)
from engine.cart.dics import dics_dictionary


def strategy_code(strategy: str, task: str = "classification") -> int:
    """Code of a strategy name; ``ValueError`` naming the allowed values otherwise."""
    allowed = strategies_for(task)
    if strategy not in allowed:
        extra = ""
        if strategy in LABEL_AWARE and task == "regression":
            extra = f" ({strategy!r} needs class labels)"
        raise ValueError(
            f"splitter must be one of {list(allowed)} for {task}, got {strategy!r}{extra}"
        )
    return STRATEGIES.index(strategy)


def strategies_for(task: str) -> tuple[str, ...]:
    """Strategy names usable for ``task`` (regression has no label-aware strategy)."""
    if task == "regression":
        return tuple(s for s in STRATEGIES if s not in LABEL_AWARE)
    return STRATEGIES


def default_k(strategy: str, n_classes: int) -> int:
    """Default ``k`` of a strategy (0 = not used / all): 16 for quantile, histogram and
    random; the number of classes for kmeans1d (8 for regression, ``n_classes == 0``);
    0 (no per-node sampling) for dics_paper."""
    if strategy in ("quantile", "histogram", "random"):
        return 16
    if strategy == "kmeans1d":
        return n_classes if n_classes >= 2 else 8
    return 0


# ---------------------------------------------------------------------------------------
# public one-feature API
# ---------------------------------------------------------------------------------------


def _class_codes(y, n_classes):
    y = np.asarray(y)
    if y.dtype.kind in "iub" and n_classes is not None:
        codes = y.astype(np.int64)
        if codes.size and (codes.min() < 0 or codes.max() >= n_classes):
            raise ValueError(f"y must hold class codes 0..{n_classes - 1}")
        return codes, int(n_classes)
    classes, codes = np.unique(y, return_inverse=True)
    return codes.astype(np.int64).reshape(-1), max(int(classes.size), 1)


def candidate_thresholds(
    x,
    y=None,
    strategy: str = "exhaustive",
    k: int | None = None,
    random_state=None,
    *,
    task: str | None = None,
    n_classes: int | None = None,
    min_samples_leaf: int = 1,
    variance_adjusted: bool | None = None,
    fallback: bool = True,
    dictionary=None,
    m_pairs: int | None = None,
) -> np.ndarray:
    """Candidate thresholds of one continuous feature: sorted float64, snapped, unique.

    Parameters
    ----------
    x : array (n,) float
        The feature's values at the node (finite).
    y : array (n,), optional
        Class labels (classification) or float targets.  Needed by ``class_centroid``; sets
        the default ``k`` of ``kmeans1d`` and the clusters of ``dics_paper`` (number of
        classes).  Regression when ``task='regression'`` or ``y`` is float.
    strategy : one of :data:`STRATEGIES`
    k : int, optional
        The strategy's ``k`` (see the module docstring); ``None`` = its default.
        For ``dics_paper`` here: ignored (no per-node sampling on one feature).
    random_state : int, RandomState or None
        Seed of ``random`` and of the k-means of ``dics_paper``.
    n_classes : int, optional
        With integer ``y``: the codes are ``0..n_classes-1``.
    min_samples_leaf : int
        Drop thresholds leaving fewer rows on a side.
    variance_adjusted : bool, optional
        Boundaries of ``dics_paper``/``class_centroid`` (default True) and ``kmeans1d``
        (default False).
    fallback : bool
        Use ``quantile`` (k = 16) when the strategy yields nothing.
    dictionary : array of float, optional
        ``dics_paper`` only: this feature's global dictionary thresholds (e.g.
        ``DICSDictionary.feature(j)``).  Without it the dictionary is computed from ``x``
        alone (k-means on the standardised feature).
    m_pairs : int, optional
        ``dics_paper`` without ``dictionary``: centroid pairs kept.

    Returns
    -------
    float64 array of thresholds (midpoints of unique-value gaps), ascending; empty for a
    constant feature or fewer than 2 rows.

    Raises
    ------
    ValueError
        Unknown strategy (the message lists them), ``class_centroid`` without class labels,
        non-finite ``x``, bad ``k``.
    """
    x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(x)):
        raise ValueError("x holds NaN or infinite values")
    if task is None:
        task = (
            "regression" if y is not None and np.asarray(y).dtype.kind == "f" else "classification"
        )
    code = strategy_code(strategy, task)
    if strategy == "class_centroid" and y is None:
        raise ValueError("strategy 'class_centroid' needs the class labels y")
    if task == "classification" and y is not None:
        ys, K = _class_codes(y, n_classes)
        if ys.shape != x.shape:
            raise ValueError(f"y has shape {ys.shape}, expected {x.shape} like x")
    else:
        ys, K = np.zeros(x.shape[0], dtype=np.int64), 0
    if k is None:
        k = default_k(strategy, K)
    k = int(k)
    if strategy in ("quantile", "histogram", "random", "kmeans1d") and k < 1:
        raise ValueError(f"n_candidates (k) must be a positive int for {strategy!r}, got {k}")
    va = strategy != "kmeans1d" if variance_adjusted is None else bool(variance_adjusted)
    order = np.argsort(x, kind="stable")
    xs = np.ascontiguousarray(x[order])
    ysorted = np.ascontiguousarray(ys[order])
    dvals = np.empty(0)
    if strategy == "dics_paper":
        if dictionary is None:
            d = dics_dictionary(
                x.reshape(-1, 1),
                K if K >= 2 else 8,
                m_pairs=m_pairs,
                variance_adjusted=va,
                random_state=random_state,
            )
            dvals = d.feature(0)
        else:
            dvals = np.array(dictionary, dtype=np.float64, order="C").reshape(-1)
    raw = np.empty(max(k, K, dvals.size, KDE_GRID, FALLBACK_Q) + 1, dtype=np.float64)
    out = np.empty(max(xs.shape[0], 1), dtype=np.int64)
    n_pos = node_positions(
        code,
        xs,
        ysorted,
        max(K, 1),
        k,
        int(min_samples_leaf),
        va,
        bool(fallback),
        dvals,
        dvals.size,
        rng_state(random_state),
        raw,
        out,
    )
    return thresholds_of(xs, out, n_pos)


@register_warmup("candidates")
def _warmup() -> None:
    """Compile the per-node kernels with the dtypes of real calls."""
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    y = np.array([0, 0, 1, 1, 0, 1], dtype=np.int64)
    for s in STRATEGIES:
        candidate_thresholds(x, y, s, random_state=0, dictionary=np.array([1.5, 2.5]))
    kde_density(x, KDE_GRID)
    # the split-strategies page's impurity-decrease curve calls the position kernel itself
    from engine.criteria import exhaustive_gains

    exhaustive_gains(x, y)
