"""Impurity kernels shared by every tree builder of the engine (CART, Literati, CIT stage B).

Conventions (all kernels are ``@njit(cache=True, nogil=True)``):

* class labels are int64 codes ``0..K-1``; regression targets are float64;
  sample weights are float64 (pass ones for unweighted data);
* a split of values sorted ascending ``x_sorted[0] <= ... <= x_sorted[n-1]`` is given by its
  **position** ``p`` (1 <= p <= n-1): rows ``[0, p)`` go left, rows ``[p, n)`` go right.  A
  threshold ``t`` corresponds to ``p = searchsorted(x_sorted, t, side='right')`` (left iff
  ``x <= t``);
* criterion codes: :data:`GINI` (0), :data:`ENTROPY` (1), :data:`SQUARED_ERROR` (2).

Formulas (``c_k`` weighted class counts, ``W`` their sum, ``S = sum w y``, ``Q = sum w y^2``):

* Gini ``1 - sum_k c_k^2 / W^2``;
* entropy ``-sum_k (c_k/W) log2 (c_k/W)`` (base 2, as scikit-learn);
* squared error ``Q / W - (S / W)^2``;
* impurity decrease of a split of a node ``t`` into ``L`` and ``R``:
  ``i(t) - W_L/W_t i(L) - W_R/W_t i(R)``; a builder reports it weighted by the node's share
  ``W_t / W_root`` (scikit-learn's ``impurity_improvement``, summed per feature for
  ``feature_importances_``).

To pick the best split a builder compares a *proxy* that orders splits of one node like the
impurity decrease and is cheaper: ``-W_L i(L) - W_R i(R)`` for Gini/entropy and
``S_L^2 / W_L + S_R^2 / W_R`` for squared error.  They are computed with the same
floating-point expressions as scikit-learn's ``Criterion.proxy_impurity_improvement`` so that
exact ties are broken alike (see ``tests/test_cart.py``).

Public Python helpers: :func:`criterion_code`, :func:`threshold_gains` (impurity decrease at
given thresholds of one feature: sort once, prefix counts, look every threshold up) and
:func:`exhaustive_gains` (the impurity-decrease curve over all midpoints).
"""

from __future__ import annotations

import math

import numpy as np

from engine._numba import njit, register_warmup

GINI = 0
ENTROPY = 1
SQUARED_ERROR = 2

#: criterion name -> code; ``log_loss`` is scikit-learn's alias of ``entropy``.
CRITERIA = {"gini": GINI, "entropy": ENTROPY, "log_loss": ENTROPY, "squared_error": SQUARED_ERROR}
CLASSIFICATION_CRITERIA = ("gini", "entropy", "log_loss")
REGRESSION_CRITERIA = ("squared_error",)
#: a node whose impurity is at most this is pure (scikit-learn's ``EPSILON``).
EPSILON = float(np.finfo(np.float64).eps)

_LN2 = math.log(2.0)


def criterion_code(criterion: str, task: str) -> int:
    """Code of ``criterion`` for ``task`` ('classification' | 'regression').

    Raises ``ValueError`` naming the parameter and the allowed values.
    """
    allowed = CLASSIFICATION_CRITERIA if task == "classification" else REGRESSION_CRITERIA
    if criterion not in allowed:
        raise ValueError(f"criterion must be one of {list(allowed)} for {task}, got {criterion!r}")
    return CRITERIA[criterion]


# ---------------------------------------------------------------------------------------
# node statistics and impurities
# ---------------------------------------------------------------------------------------


@njit
def weighted_class_counts(y, w, n_classes):
    """Weighted class counts float64 ``(n_classes,)`` of codes ``y`` (int64) with weights ``w``."""
    out = np.zeros(n_classes, dtype=np.float64)
    for i in range(y.shape[0]):
        out[y[i]] += w[i]
    return out


@njit
def gini(counts, total):
    """Gini impurity ``1 - sum c_k^2 / W^2`` of weighted class counts (0 for ``W <= 0``)."""
    if total <= 0.0:
        return 0.0
    sq = 0.0
    for k in range(counts.shape[0]):
        sq += counts[k] * counts[k]
    return 1.0 - sq / (total * total)


@njit
def entropy(counts, total):
    """Entropy in bits ``-sum p_k log2 p_k``, ``p_k = c_k / W`` (0 for ``W <= 0``)."""
    if total <= 0.0:
        return 0.0
    h = 0.0
    for k in range(counts.shape[0]):
        c = counts[k]
        if c > 0.0:
            p = c / total
            h -= p * (math.log(p) / _LN2)
    return h


@njit
def squared_error(w_sum, wy_sum, wyy_sum):
    """Weighted variance ``Q / W - (S / W)^2`` of a node from its sums (0 for ``W <= 0``)."""
    if w_sum <= 0.0:
        return 0.0
    mean = wy_sum / w_sum
    return wyy_sum / w_sum - mean * mean


@njit
def class_impurity(counts, total, criterion):
    """Gini (``criterion == 0``) or entropy (1) of weighted class counts."""
    if criterion == ENTROPY:
        return entropy(counts, total)
    return gini(counts, total)


@njit
def class_children_proxy(left, w_left, total, w_node, criterion):
    """Proxy ``-W_R i(R) - W_L i(L)`` of a classification split.

    ``left``: weighted class counts of the left child; ``total``: of the node; right counts
    are ``total - left`` and ``W_R = w_node - w_left``.
    """
    w_right = w_node - w_left
    n_classes = left.shape[0]
    if criterion == ENTROPY:
        h_left = 0.0
        h_right = 0.0
        for k in range(n_classes):
            c = left[k]
            if c > 0.0:
                c /= w_left
                h_left -= c * (math.log(c) / _LN2)
            c = total[k] - left[k]
            if c > 0.0:
                c /= w_right
                h_right -= c * (math.log(c) / _LN2)
        return -w_right * h_right - w_left * h_left
    sq_left = 0.0
    sq_right = 0.0
    for k in range(n_classes):
        c = left[k]
        sq_left += c * c
        c = total[k] - left[k]
        sq_right += c * c
    g_left = 1.0 - sq_left / (w_left * w_left)
    g_right = 1.0 - sq_right / (w_right * w_right)
    return -w_right * g_right - w_left * g_left


@njit
def squared_error_proxy(sum_left, w_left, sum_total, w_node):
    """Proxy ``S_L^2 / W_L + S_R^2 / W_R`` of a squared-error split."""
    sum_right = sum_total - sum_left
    return sum_left * sum_left / w_left + sum_right * sum_right / (w_node - w_left)


@njit
def impurity_decrease(parent, w_node, imp_left, w_left, imp_right, w_right):
    """``i(t) - W_L/W_t i(L) - W_R/W_t i(R)`` (not weighted by the node's share)."""
    return parent - (w_right / w_node) * imp_right - (w_left / w_node) * imp_left


# ---------------------------------------------------------------------------------------
# one sorted scan: prefix statistics, then any candidate set
# ---------------------------------------------------------------------------------------


@njit
def prefix_class_counts(y_sorted, w_sorted, n_classes):
    """Prefix weighted class counts float64 ``(n + 1, n_classes)``: row ``p`` holds the counts
    of rows ``[0, p)`` of the sorted order (row 0 is zero, row ``n`` the node's counts)."""
    n = y_sorted.shape[0]
    out = np.zeros((n + 1, n_classes), dtype=np.float64)
    for i in range(n):
        for k in range(n_classes):
            out[i + 1, k] = out[i, k]
        out[i + 1, y_sorted[i]] += w_sorted[i]
    return out


@njit
def prefix_sums(y_sorted, w_sorted):
    """Prefix sums float64 ``(n + 1, 3)`` of ``w``, ``w y`` and ``w y^2`` over the sorted rows."""
    n = y_sorted.shape[0]
    out = np.zeros((n + 1, 3), dtype=np.float64)
    for i in range(n):
        w = w_sorted[i]
        y = y_sorted[i]
        out[i + 1, 0] = out[i, 0] + w
        out[i + 1, 1] = out[i, 1] + w * y
        out[i + 1, 2] = out[i, 2] + w * y * y
    return out


@njit
def class_gains_at(prefix, positions, criterion):
    """Impurity decrease (Gini or entropy) at split positions, from :func:`prefix_class_counts`.

    ``positions``: int64, each in ``[0, n]``; a position with an empty side gets gain 0.
    Returns float64 ``(len(positions),)``.
    """
    n = prefix.shape[0] - 1
    total = prefix[n]
    w_node = total.sum()
    parent = class_impurity(total, w_node, criterion)
    out = np.zeros(positions.shape[0], dtype=np.float64)
    right = np.empty(total.shape[0], dtype=np.float64)
    for j in range(positions.shape[0]):
        p = positions[j]
        if p <= 0 or p >= n:
            continue
        left = prefix[p]
        w_left = left.sum()
        w_right = w_node - w_left
        if w_left <= 0.0 or w_right <= 0.0:
            continue
        for k in range(total.shape[0]):
            right[k] = total[k] - left[k]
        out[j] = impurity_decrease(
            parent,
            w_node,
            class_impurity(left, w_left, criterion),
            w_left,
            class_impurity(right, w_right, criterion),
            w_right,
        )
    return out


@njit
def squared_error_gains_at(prefix, positions):
    """Squared-error decrease at split positions, from :func:`prefix_sums`."""
    n = prefix.shape[0] - 1
    w_node = prefix[n, 0]
    parent = squared_error(w_node, prefix[n, 1], prefix[n, 2])
    out = np.zeros(positions.shape[0], dtype=np.float64)
    for j in range(positions.shape[0]):
        p = positions[j]
        if p <= 0 or p >= n:
            continue
        w_left = prefix[p, 0]
        w_right = w_node - w_left
        if w_left <= 0.0 or w_right <= 0.0:
            continue
        imp_left = squared_error(w_left, prefix[p, 1], prefix[p, 2])
        imp_right = squared_error(w_right, prefix[n, 1] - prefix[p, 1], prefix[n, 2] - prefix[p, 2])
        out[j] = impurity_decrease(parent, w_node, imp_left, w_left, imp_right, w_right)
    return out


@njit
def positions_of(x_sorted, thresholds):
    """Split position (rows with ``x <= t``) of every threshold: int64 ``searchsorted right``."""
    out = np.empty(thresholds.shape[0], dtype=np.int64)
    for j in range(thresholds.shape[0]):
        out[j] = np.searchsorted(x_sorted, thresholds[j], side="right")
    return out


# ---------------------------------------------------------------------------------------
# Python helpers
# ---------------------------------------------------------------------------------------


def _prepare(x, y, sample_weight, criterion, n_classes):
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x holds NaN or infinite values")
    y = np.asarray(y)
    if y.shape != x.shape:
        raise ValueError(f"y has shape {y.shape}, expected {x.shape} like x")
    w = (
        np.ones(x.shape[0])
        if sample_weight is None
        else np.ascontiguousarray(sample_weight, dtype=np.float64)
    )
    if w.shape != x.shape:
        raise ValueError(f"sample_weight has shape {w.shape}, expected {x.shape} like x")
    task = "regression" if criterion == "squared_error" else "classification"
    code = criterion_code(criterion, task)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    ws = w[order]
    if task == "classification":
        yc = np.ascontiguousarray(y, dtype=np.int64)
        if yc.size and yc.min() < 0:
            raise ValueError("y must hold class codes 0..K-1 for a classification criterion")
        k = int(n_classes) if n_classes is not None else int(yc.max()) + 1 if yc.size else 1
        prefix = prefix_class_counts(yc[order], ws, k)
    else:
        prefix = prefix_sums(np.ascontiguousarray(y, dtype=np.float64)[order], ws)
    return xs, prefix, code, task


def threshold_gains(
    x, y, thresholds, criterion="gini", *, sample_weight=None, n_classes=None, min_samples_leaf=1
):
    """Impurity decrease of the splits ``x <= t`` for every threshold ``t`` of one feature.

    Parameters
    ----------
    x : array (n,) float
        Feature values of the node's rows.
    y : array (n,)
        int class codes ``0..K-1`` (Gini/entropy) or float targets (``'squared_error'``).
    thresholds : array (m,) float
        Any thresholds (need not be sorted or midpoints).
    criterion : {'gini', 'entropy', 'log_loss', 'squared_error'}
    sample_weight : array (n,) float, optional
    n_classes : int, optional
        ``K`` (default ``max(y) + 1``).
    min_samples_leaf : int
        Splits leaving fewer rows on a side get gain ``nan``.

    Returns
    -------
    gains : float64 (m,)
        ``i(t) - W_L/W i(L) - W_R/W i(R)``; 0 when one side is empty, ``nan`` when a side
        has fewer than ``min_samples_leaf`` rows.
    n_left : int64 (m,)
        Rows going left.
    """
    xs, prefix, code, task = _prepare(x, y, sample_weight, criterion, n_classes)
    t = np.ascontiguousarray(thresholds, dtype=np.float64).reshape(-1)
    pos = positions_of(xs, t)
    if task == "classification":
        gains = class_gains_at(prefix, pos, code)
    else:
        gains = squared_error_gains_at(prefix, pos)
    n = xs.shape[0]
    small = (pos < min_samples_leaf) | (n - pos < min_samples_leaf)
    small &= (pos > 0) & (pos < n)
    gains = np.where(small, np.nan, gains)
    return gains, pos


def exhaustive_gains(
    x, y, criterion="gini", *, sample_weight=None, n_classes=None, min_samples_leaf=1
):
    """The impurity-decrease curve of one feature over all exhaustive thresholds.

    Returns ``(thresholds, gains)``: the midpoints between consecutive distinct values of
    ``x`` (float64, ascending) and the impurity decrease at each (``nan`` where a side would
    hold fewer than ``min_samples_leaf`` rows).  Arguments as :func:`threshold_gains`.
    """
    from engine.cart._candidate_kernels import all_positions, thresholds_of

    x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(x)):
        raise ValueError("x holds NaN or infinite values")
    xs = np.sort(x, kind="stable")
    positions = np.empty(max(xs.shape[0], 1), dtype=np.int64)
    t = thresholds_of(xs, positions, all_positions(xs, 1, positions))
    gains, _ = threshold_gains(
        x,
        y,
        t,
        criterion,
        sample_weight=sample_weight,
        n_classes=n_classes,
        min_samples_leaf=min_samples_leaf,
    )
    return t, gains


@register_warmup("criteria")
def _warmup() -> None:
    """Compile every kernel with the dtypes of real calls (float64 values, int64 codes)."""
    x = np.array([0.0, 1.0, 2.0, 3.0])
    yc = np.array([0, 0, 1, 1], dtype=np.int64)
    yr = np.array([0.0, 0.5, 1.0, 2.0])
    w = np.ones(4)
    pos = np.array([1, 2], dtype=np.int64)
    counts = weighted_class_counts(yc, w, 2)
    for code in (GINI, ENTROPY):
        class_impurity(counts, 4.0, code)
        class_children_proxy(counts * 0.5, 2.0, counts, 4.0, code)
        class_gains_at(prefix_class_counts(yc, w, 2), pos, code)
    squared_error(4.0, 3.5, 5.25)
    squared_error_proxy(0.5, 2.0, 3.5, 4.0)
    squared_error_gains_at(prefix_sums(yr, w), pos)
    positions_of(x, np.array([0.5, 1.5]))
