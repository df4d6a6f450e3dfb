"""Routing kernels of :class:`~engine.tree.TreeArrays` and :class:`~engine.tree.TreeEnsemble`.

numba kernels (iterative, single-threaded, ``nogil``, cached) that send rows of ``X``
(float64 C-contiguous) down one tree or a packed ensemble, and
:func:`float32_routing_threshold`, the float64 bound that reproduces scikit-learn's
float32 comparison exactly.
"""

from __future__ import annotations

import numpy as np

from engine._numba import njit

# Routing arrays.  The kernels take the node arrays in a routing form derived once per tree
# (see ``TreeArrays.routing_arrays``): child ids and features as uint64 with 0 at leaves (the
# root is never a child, so 0 is a free sentinel), which spares numba's negative-index
# wrap-around on every load, and the threshold actually compared (float64).  Measured on
# 200k rows (bench/bench_predict.py) this form beats scikit-learn's own Cython loop.


@njit
def _apply_kernel(children_left, children_right, feature, threshold, X):
    """Leaf id (int64 ``(n_samples,)``) reached by every row of ``X``.

    ``children_left``/``children_right``/``feature``: uint64 ``(n_nodes,)``, 0 at leaves;
    ``threshold``: float64 ``(n_nodes,)``, a row goes left when ``x[feature] <= threshold``;
    ``X``: float64 C-contiguous ``(n_samples, n_features)``.
    """
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        node = np.uint64(0)
        while True:
            left = children_left[node]
            if left == 0:
                break
            if X[i, feature[node]] <= threshold[node]:
                node = left
            else:
                node = children_right[node]
        out[i] = node
    return out


@njit
def _apply_cat_kernel(
    children_left, children_right, feature, threshold, cat_offsets, cat_values, X
):
    """Like :func:`_apply_kernel`, with categorical set splits.

    A node with a non-empty category set (``cat_offsets[i] < cat_offsets[i + 1]``, int64)
    sends a row left when its code ``x[feature]`` is one of ``cat_values[cat_offsets[i]:
    cat_offsets[i + 1]]`` (int64 codes); other nodes use ``x[feature] <= threshold``.
    """
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        node = np.uint64(0)
        while True:
            left = children_left[node]
            if left == 0:
                break
            v = X[i, feature[node]]
            start = cat_offsets[node]
            stop = cat_offsets[node + np.uint64(1)]
            if stop > start:
                go_left = False
                for j in range(start, stop):
                    if v == np.float64(cat_values[j]):
                        go_left = True
                        break
            else:
                go_left = v <= threshold[node]
            if go_left:
                node = left
            else:
                node = children_right[node]
        out[i] = node
    return out


@njit
def _apply_shape_kernel(
    children_left, children_right, feature, threshold, bp_offsets, bp_values, X
):
    """Like :func:`_apply_kernel`, with shape-function nodes (Literati, docs/spec.md section 1).

    A node with breakpoints ``u = bp_values[bp_offsets[i]:bp_offsets[i + 1]]`` (sorted
    float64, int64 offsets) sends a row left iff the number of breakpoints strictly below
    ``x[feature]`` is even (``searchsorted(u, x, 'left') % 2 == 0``); nodes without
    breakpoints use ``x[feature] <= threshold``.
    """
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        node = np.uint64(0)
        while True:
            left = children_left[node]
            if left == 0:
                break
            v = X[i, feature[node]]
            start = bp_offsets[node]
            stop = bp_offsets[node + np.uint64(1)]
            if stop > start:
                c = 0
                for j in range(start, stop):
                    if bp_values[j] < v:
                        c += 1
                    else:
                        break
                go_left = c % 2 == 0
            else:
                go_left = v <= threshold[node]
            if go_left:
                node = left
            else:
                node = children_right[node]
        out[i] = node
    return out


@njit
def _apply_missing_kernel(
    children_left,
    children_right,
    feature,
    threshold,
    missing_go_to_left,
    cat_offsets,
    cat_values,
    bp_offsets,
    bp_values,
    X,
):
    """Like :func:`_apply_kernel`, for trees that route missing values (NaN).

    A row whose ``x[feature]`` is NaN goes left iff ``missing_go_to_left[node]`` (uint8
    ``(n_nodes,)``, 1 = left), as scikit-learn >= 1.3 routes it.  Other rows follow the
    node's test: the category set (``cat_offsets``/``cat_values``, int64 CSR; all offsets 0
    when the tree has none), the shape function (``bp_offsets``/``bp_values``, int64 /
    float64 CSR; all offsets 0 when none), else ``x[feature] <= threshold``.
    """
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        node = np.uint64(0)
        while True:
            left = children_left[node]
            if left == 0:
                break
            v = X[i, feature[node]]
            if v != v:
                go_left = missing_go_to_left[node] != 0
            else:
                cat_start = cat_offsets[node]
                cat_stop = cat_offsets[node + np.uint64(1)]
                bp_start = bp_offsets[node]
                bp_stop = bp_offsets[node + np.uint64(1)]
                if cat_stop > cat_start:
                    go_left = False
                    for j in range(cat_start, cat_stop):
                        if v == np.float64(cat_values[j]):
                            go_left = True
                            break
                elif bp_stop > bp_start:
                    c = 0
                    for j in range(bp_start, bp_stop):
                        if bp_values[j] < v:
                            c += 1
                        else:
                            break
                    go_left = c % 2 == 0
                else:
                    go_left = v <= threshold[node]
            if go_left:
                node = left
            else:
                node = children_right[node]
        out[i] = node
    return out


@njit
def _ensemble_apply_kernel(node_offsets, children_left, children_right, feature, threshold, X):
    """Leaf ids int64 ``(n_samples, n_trees)`` (local to each tree) of concatenated trees.

    Tree ``t`` owns global nodes ``node_offsets[t]:node_offsets[t + 1]`` (uint64); child ids
    in the routing arrays are local to the tree, 0 at leaves.
    """
    n = X.shape[0]
    n_trees = node_offsets.shape[0] - 1
    out = np.empty((n, n_trees), dtype=np.int64)
    for t in range(n_trees):
        off = node_offsets[t]
        for i in range(n):
            node = np.uint64(0)
            while True:
                left = children_left[off + node]
                if left == 0:
                    break
                if X[i, feature[off + node]] <= threshold[off + node]:
                    node = left
                else:
                    node = children_right[off + node]
            out[i, t] = node
    return out


@njit
def _ensemble_sum_kernel(
    node_offsets,
    children_left,
    children_right,
    feature,
    threshold,
    values,
    tree_output,
    weight,
    X,
    out,
):
    """Accumulate leaf values of concatenated trees into ``out`` (n_samples, n_columns).

    For tree ``t`` and the leaf ``g`` (global id) a row reaches: if ``tree_output[t] == -1``
    add the whole row ``values[g, :]`` (forests), else add ``weight * values[g, 0]`` to column
    ``tree_output[t]`` (boosting).  Trees are added in order, so every element of ``out`` sees
    the same sequence of floating-point additions as scikit-learn's own loops.
    """
    n = X.shape[0]
    n_trees = node_offsets.shape[0] - 1
    n_cols = values.shape[1]
    for t in range(n_trees):
        off = node_offsets[t]
        k = tree_output[t]
        for i in range(n):
            node = np.uint64(0)
            while True:
                left = children_left[off + node]
                if left == 0:
                    break
                if X[i, feature[off + node]] <= threshold[off + node]:
                    node = left
                else:
                    node = children_right[off + node]
            g = off + node
            if k < 0:
                for c in range(n_cols):
                    out[i, c] += values[g, c]
            else:
                out[i, k] += weight * values[g, 0]
    return out


def float32_routing_threshold(threshold: np.ndarray) -> np.ndarray:
    """Thresholds ``t'`` with ``x <= t'`` iff ``float32(x) <= t`` for every float64 ``x``.

    scikit-learn casts ``X`` to float32 before comparing with its float64 thresholds.
    Rounding to float32 is monotone, so the rows going left form a half-line and one
    float64 bound ``t'`` reproduces the test exactly without rounding each value: with
    ``a`` the largest float32 ``<= t`` and ``b`` the next float32, values below the
    midpoint ``m = (a + b) / 2`` (exact in float64) round to ``a`` or less; ``m`` itself
    rounds to ``a`` only when round-half-to-even says so.  Infinite ``a``/``b`` use
    ``+-2**128`` (the float32 overflow boundary).  NaN thresholds stay NaN.
    """
    t = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        a = t.astype(np.float32)
        a = np.where(a.astype(np.float64) > t, np.nextafter(a, np.float32(-np.inf)), a)
        b = np.nextafter(a, np.float32(np.inf))
        a64 = np.where(np.isneginf(a), -(2.0**128), a.astype(np.float64))
        b64 = np.where(np.isposinf(b), 2.0**128, b.astype(np.float64))
        m = 0.5 * (a64 + b64)
        out = np.where(m.astype(np.float32) == a, m, np.nextafter(m, -np.inf))
    out = np.where(np.isposinf(t), np.inf, out)
    return np.where(np.isnan(t), np.nan, out).astype(np.float64)


# ---------------------------------------------------------------------------------------
