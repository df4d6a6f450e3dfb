"""CART builder (numba) and the scikit-learn compatible ``CARTClassifier``/``CARTRegressor``.

The builder grows a binary tree entirely inside one numba call (``nogil``):

* **presort once**: every feature's row order is sorted once per fit (``order[f]``, with the
  sorted values ``xs[f]``); a node owns the same contiguous segment ``[start, end)`` of every
  feature's arrays, and a split partitions every feature's segment stably (left rows first),
  so each node sees every feature already sorted - O(n_node) per feature instead of a sort;
* **split search** at a node, per feature: the strategy's candidate positions
  (:func:`engine.candidates.node_positions`; ``exhaustive`` scans inline), then one pass that
  accumulates weighted class counts (or sums) in sorted order and evaluates the impurity
  proxy of :mod:`engine.criteria` at the candidates only; the best proxy wins (strictly
  greater; features in index order, positions left to right);
* **categorical features** (``categorical_features``): best subset split.  Categories are
  ordered by the class-1 proportion (binary classification) or the mean target
  (regression) and the best prefix of that order is taken - optimal for Gini, entropy and
  squared error (Breiman et al. 1984, section 9.4).  Multiclass: a *heuristic* - every
  one-vs-rest ordering (categories by the proportion of class ``c``, for every class
  present) is scanned and the best prefix over all orderings is kept; it is not guaranteed
  to find the optimal subset;
* **growth**: depth-first with an explicit stack (nodes numbered in pre-order, left child
  first, as scikit-learn's ``DepthFirstTreeBuilder``), or best-first by weighted impurity
  decrease when ``max_leaf_nodes`` is set (scikit-learn's ``BestFirstTreeBuilder``);
* stopping rules as scikit-learn: ``depth >= max_depth``, ``n < min_samples_split``,
  ``n < 2 min_samples_leaf``, impurity <= eps, no valid split, or
  ``improvement + eps < min_impurity_decrease``.

With ``splitter='exhaustive'`` the tree equals scikit-learn's ``DecisionTreeClassifier`` /
``DecisionTreeRegressor`` on data whose values are float32-representable and without ties
between different splits (scikit-learn visits features in a random order, we in index
order); ``tests/test_cart.py`` checks it node by node.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from engine._numba import njit, register_warmup
from engine.candidates import (
    CLASS_CENTROID,
    DICS_PAPER,
    EXHAUSTIVE,
    FALLBACK_Q,
    KDE_GRID,
    LABEL_AWARE,
    QUANTILE,
    STRATEGIES,
    DICSDictionary,
    default_k,
    dics_dictionary,
    insertion_argsort,
    midpoint,
    node_positions,
    rng_below,
    strategies_for,
    strategy_code,
)
from engine.compare import ModelSpec, ParamSpec, register_model
from engine.criteria import (
    EPSILON,
    class_children_proxy,
    class_impurity,
    criterion_code,
    squared_error,
    squared_error_proxy,
)
from engine.tree import TREE_LEAF, TREE_UNDEFINED, TreeArrays

__all__ = [
    "CARTClassifier",
    "CARTRegressor",
    "GrownTree",
    "build_tree",
    "feature_breakpoints",
    "grow_tree",
    "presort",
]

_INT_MAX = np.iinfo(np.int64).max


# ---------------------------------------------------------------------------------------
# numba kernels
# ---------------------------------------------------------------------------------------


def presort(X):
    """Per-feature sorted row order and values of ``X`` (float64 ``(n, p)``).

    Returns ``(order, xs)``: int64 and float64 C-contiguous ``(p, n)`` with
    ``xs[f] = X[order[f], f]`` ascending.  numpy's SIMD quicksort (ties in an arbitrary
    but deterministic order; ties never change a split) - about 6x faster than a stable
    sort and nothing to compile.
    """
    Xt = np.ascontiguousarray(X.T)
    order = np.argsort(Xt, axis=1, kind="quicksort")
    xs = np.take_along_axis(Xt, order, axis=1)
    return np.ascontiguousarray(order, dtype=np.int64), np.ascontiguousarray(xs)


@njit
def _copy_row(dst, src):
    """``dst[:] = src`` as a loop (no broadcasting checks to compile)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit
def _node_stats(ord_seg, y_code, y_val, w, is_classif, out):
    """Weighted class counts (classification) or ``(W, S, Q)`` of the rows ``ord_seg``."""
    out[:] = 0.0
    if is_classif:
        for i in range(ord_seg.shape[0]):
            idx = ord_seg[i]
            out[y_code[idx]] += w[idx]
    else:
        for i in range(ord_seg.shape[0]):
            idx = ord_seg[i]
            wi = w[idx]
            yi = y_val[idx]
            out[0] += wi
            out[1] += wi * yi
            out[2] += wi * yi * yi


@njit
def _stats_weight(stats, is_classif):
    if is_classif:
        return stats.sum()
    return stats[0]


@njit
def _stats_impurity(stats, is_classif, criterion):
    if is_classif:
        return class_impurity(stats, stats.sum(), criterion)
    return squared_error(stats[0], stats[1], stats[2])


@njit
def _scan_numeric(
    xs_seg,
    ord_seg,
    y_code,
    y_val,
    w,
    is_classif,
    criterion,
    total,
    w_node,
    min_samples_leaf,
    positions,
    n_pos,
    exhaustive,
    left,
):
    """Best proxy over split positions of one sorted feature segment.

    ``exhaustive``: every position between distinct values allowed by ``min_samples_leaf``;
    else ``positions[:n_pos]`` (sorted, valid).  Returns ``(best_proxy, best_pos, n_eval)``
    (``best_pos = -1`` when nothing was evaluated).
    """
    n = xs_seg.shape[0]
    best = -np.inf
    best_pos = -1
    n_eval = 0
    lo = max(min_samples_leaf, 1)
    hi = n - lo
    if hi < lo:
        return best, best_pos, n_eval
    if not exhaustive:
        if n_pos == 0:
            return best, best_pos, n_eval
        hi = positions[n_pos - 1]
    w_left = 0.0
    j = 0
    if is_classif:
        left[:] = 0.0
        for i in range(hi):
            idx = ord_seg[i]
            wi = w[idx]
            left[y_code[idx]] += wi
            w_left += wi
            p = i + 1
            if exhaustive:
                if p < lo or xs_seg[p] <= xs_seg[i]:
                    continue
            else:
                if p != positions[j]:
                    continue
                j += 1
            if w_left <= 0.0 or w_node - w_left <= 0.0:
                continue  # a side of zero weight: not a split of the weighted data
            proxy = class_children_proxy(left, w_left, total, w_node, criterion)
            n_eval += 1
            if proxy > best:
                best = proxy
                best_pos = p
    else:
        s_left = 0.0
        s_total = total[1]
        for i in range(hi):
            idx = ord_seg[i]
            wi = w[idx]
            s_left += wi * y_val[idx]
            w_left += wi
            p = i + 1
            if exhaustive:
                if p < lo or xs_seg[p] <= xs_seg[i]:
                    continue
            else:
                if p != positions[j]:
                    continue
                j += 1
            if w_left <= 0.0 or w_node - w_left <= 0.0:
                continue
            proxy = squared_error_proxy(s_left, w_left, s_total, w_node)
            n_eval += 1
            if proxy > best:
                best = proxy
                best_pos = p
    return best, best_pos, n_eval


@njit
def _scan_categorical(
    xs_seg,
    ord_seg,
    y_code,
    y_val,
    w,
    is_classif,
    criterion,
    total,
    w_node,
    min_samples_leaf,
    n_cat,
    cat_stats,
    cat_n,
    cat_w,
    keys,
    left,
    mask_out,
):
    """Best subset split of a categorical feature (codes ``0..n_cat-1`` in ``xs_seg``).

    Categories are sorted by a key and every prefix of that order is a candidate left set:
    the class-1 proportion (binary), the mean target (regression) or, for multiclass, the
    proportion of each class present in turn (one-vs-rest orderings, a heuristic).
    Returns ``(best_proxy, n_eval)`` and writes the best left set to ``mask_out[:n_cat]``
    (1 = left).
    """
    n = xs_seg.shape[0]
    S = total.shape[0]
    for c in range(n_cat):
        cat_n[c] = 0
        cat_w[c] = 0.0
        for s in range(S):
            cat_stats[c, s] = 0.0
    for i in range(n):
        c = np.int64(xs_seg[i])
        idx = ord_seg[i]
        wi = w[idx]
        cat_n[c] += 1
        cat_w[c] += wi
        if is_classif:
            cat_stats[c, y_code[idx]] += wi
        else:
            cat_stats[c, 1] += wi * y_val[idx]
    present = np.empty(n_cat, dtype=np.int64)
    perm = np.empty(n_cat, dtype=np.int64)
    n_present = 0
    for c in range(n_cat):
        if cat_n[c] > 0:
            present[n_present] = c
            n_present += 1
    best = -np.inf
    n_eval = 0
    if n_present < 2:
        return best, n_eval
    lo = max(min_samples_leaf, 1)
    n_orders = 1
    if is_classif and S > 2:
        n_orders = S
    for o in range(n_orders):
        if is_classif:
            cls = 1 if S == 2 else o
            if S > 2 and total[cls] <= 0.0:
                continue
            for j in range(n_present):
                c = present[j]
                keys[j] = cat_stats[c, cls] / cat_w[c] if cat_w[c] > 0.0 else 0.0
        else:
            for j in range(n_present):
                c = present[j]
                keys[j] = cat_stats[c, 1] / cat_w[c] if cat_w[c] > 0.0 else 0.0
        insertion_argsort(keys, n_present, perm)
        left[:] = 0.0
        w_left = 0.0
        s_left = 0.0
        n_left = 0
        for j in range(n_present - 1):
            c = present[perm[j]]
            n_left += cat_n[c]
            w_left += cat_w[c]
            if is_classif:
                for s in range(S):
                    left[s] += cat_stats[c, s]
            else:
                s_left += cat_stats[c, 1]
            if n_left < lo or n - n_left < lo or w_left <= 0.0 or w_node - w_left <= 0.0:
                continue
            if is_classif:
                proxy = class_children_proxy(left, w_left, total, w_node, criterion)
            else:
                proxy = squared_error_proxy(s_left, w_left, total[1], w_node)
            n_eval += 1
            if proxy > best:
                best = proxy
                mask_out[:n_cat] = 0
                for jj in range(j + 1):
                    mask_out[present[perm[jj]]] = 1
    return best, n_eval


@njit
def _dics_feature_values(f, dict_offsets, dict_values, dict_alive, dict_mark, stamp, out):
    """Alive dictionary entries of feature ``f`` (and, when ``stamp >= 0``, only those
    sampled at this node: ``dict_mark == stamp``) into ``out``; returns their number."""
    m = 0
    for e in range(dict_offsets[f], dict_offsets[f + 1]):
        if dict_alive[e] and (stamp < 0 or dict_mark[e] == stamp):
            out[m] = dict_values[e]
            m += 1
    return m


@njit
def _search_features(
    order,
    xs,
    y_code,
    y_val,
    w,
    is_classif,
    criterion,
    is_cat,
    n_cats,
    s,
    e,
    total,
    w_node,
    strategy,
    k,
    min_samples_leaf,
    variance_adjusted,
    fallback,
    max_features,
    dict_offsets,
    dict_values,
    dict_alive,
    dict_mark,
    stamp,
    rng,
    feat_order,
    pos_buf,
    raw_buf,
    ys_buf,
    dvals,
    left,
    cat_stats,
    cat_n,
    cat_w,
    keys,
    cat_mask,
    best_mask,
):
    """Best split of the node ``[s, e)`` over the features (see :func:`_grow`).

    Returns ``(found, feature, pos, n_eval)``; a categorical winner's left set is in
    ``best_mask``.
    """
    p = order.shape[0]
    n = e - s
    if max_features < p:
        for f in range(p):
            feat_order[f] = f
        for f in range(p - 1):
            r = f + rng_below(rng, p - f)
            t = feat_order[f]
            feat_order[f] = feat_order[r]
            feat_order[r] = t
    best = -np.inf
    best_f = -1
    best_pos = -1
    n_eval = 0
    visited = 0
    for fi in range(p):
        f = feat_order[fi] if max_features < p else fi
        if visited >= max_features and best_f >= 0:
            break
        xs_seg = xs[f, s:e]
        if xs_seg[0] == xs_seg[n - 1]:
            continue  # constant at this node
        visited += 1
        ord_seg = order[f, s:e]
        if is_cat[f]:
            proxy, ne = _scan_categorical(
                xs_seg,
                ord_seg,
                y_code,
                y_val,
                w,
                is_classif,
                criterion,
                total,
                w_node,
                min_samples_leaf,
                n_cats[f],
                cat_stats,
                cat_n,
                cat_w,
                keys,
                left,
                cat_mask,
            )
            n_eval += ne
            if ne > 0 and proxy > best:
                best = proxy
                best_f = f
                best_pos = -1
                _copy_row(best_mask, cat_mask)
            continue
        exhaustive = strategy == EXHAUSTIVE
        n_pos = 0
        if not exhaustive:
            n_dict = 0
            if strategy == DICS_PAPER:
                n_dict = _dics_feature_values(
                    f, dict_offsets, dict_values, dict_alive, dict_mark, stamp, dvals
                )
            if strategy == CLASS_CENTROID:  # the only strategy reading the labels
                for i in range(n):
                    ys_buf[i] = y_code[ord_seg[i]]
            n_pos = node_positions(
                strategy,
                xs_seg,
                ys_buf[:n],
                total.shape[0],
                k,
                min_samples_leaf,
                variance_adjusted,
                fallback and strategy != DICS_PAPER,
                dvals,
                n_dict,
                rng,
                raw_buf,
                pos_buf,
            )
        proxy, pos, ne = _scan_numeric(
            xs_seg,
            ord_seg,
            y_code,
            y_val,
            w,
            is_classif,
            criterion,
            total,
            w_node,
            min_samples_leaf,
            pos_buf,
            n_pos,
            exhaustive,
            left,
        )
        n_eval += ne
        if pos >= 0 and proxy > best:
            best = proxy
            best_f = f
            best_pos = pos
    return best_f >= 0, best_f, best_pos, n_eval


@njit
def _mark_left(order, xs, f, is_cat_f, s, e, pos, mask, goes_left):
    """``goes_left[row]`` (1/0) for the rows of node ``[s, e)`` under the split on ``f``;
    returns the number of rows going left."""
    n_left = 0
    if is_cat_f:
        for i in range(s, e):
            g = mask[np.int64(xs[f, i])]
            goes_left[order[f, i]] = g
            n_left += g
    else:
        for i in range(s, e):
            goes_left[order[f, i]] = 1 if i < s + pos else 0
        n_left = pos
    return n_left


@njit
def _children_stats(order, s, e, goes_left, y_code, y_val, w, is_classif, left, right):
    """Statistics of both children from ``goes_left`` (summed in feature-0 order)."""
    left[:] = 0.0
    right[:] = 0.0
    for i in range(s, e):
        idx = order[0, i]
        wi = w[idx]
        tgt = left if goes_left[idx] else right
        if is_classif:
            tgt[y_code[idx]] += wi
        else:
            yi = y_val[idx]
            tgt[0] += wi
            tgt[1] += wi * yi
            tgt[2] += wi * yi * yi


@njit
def _partition(order, xs, s, e, goes_left, tmp_i, tmp_x):
    """Stable partition of every feature's segment ``[s, e)``: left rows first."""
    p = order.shape[0]
    for f in range(p):
        j = s
        t = 0
        for i in range(s, e):
            idx = order[f, i]
            if goes_left[idx]:
                order[f, j] = idx
                xs[f, j] = xs[f, i]
                j += 1
            else:
                tmp_i[t] = idx
                tmp_x[t] = xs[f, i]
                t += 1
        for i in range(t):
            order[f, j + i] = tmp_i[i]
            xs[f, j + i] = tmp_x[i]


@njit
def _heap_push(heap_val, heap_id, size, val, node):
    i = size
    heap_val[i] = val
    heap_id[i] = node
    while i > 0:
        parent = (i - 1) // 2
        if heap_val[parent] >= heap_val[i]:
            break
        heap_val[parent], heap_val[i] = heap_val[i], heap_val[parent]
        heap_id[parent], heap_id[i] = heap_id[i], heap_id[parent]
        i = parent
    return size + 1


@njit
def _heap_pop(heap_val, heap_id, size):
    top = heap_id[0]
    size -= 1
    heap_val[0] = heap_val[size]
    heap_id[0] = heap_id[size]
    i = 0
    while True:
        lft = 2 * i + 1
        rgt = lft + 1
        big = i
        if lft < size and heap_val[lft] > heap_val[big]:
            big = lft
        if rgt < size and heap_val[rgt] > heap_val[big]:
            big = rgt
        if big == i:
            break
        heap_val[big], heap_val[i] = heap_val[i], heap_val[big]
        heap_id[big], heap_id[i] = heap_id[i], heap_id[big]
        i = big
    return top, size


@njit
def _dics_remove(f, xs, s, e, n_left, dict_offsets, dict_values, dict_alive):
    """Remove the dictionary entries of feature ``f`` that fall in the chosen gap."""
    seg = xs[f, s:e]
    for d in range(dict_offsets[f], dict_offsets[f + 1]):
        if dict_alive[d] and np.searchsorted(seg, dict_values[d], side="right") == n_left:
            dict_alive[d] = 0


@njit
def grow_tree(
    order,
    xs,
    y_code,
    y_val,
    w,
    is_classif,
    n_classes,
    criterion,
    is_cat,
    n_cats,
    strategy,
    k,
    variance_adjusted,
    fallback,
    dict_offsets,
    dict_values,
    dict_sample,
    dict_remove,
    max_depth,
    min_samples_split,
    min_samples_leaf,
    max_features,
    max_leaf_nodes,
    min_impurity_decrease,
    rng,
):
    """Grow a CART tree; one numba call, no Python per node.

    Parameters (all numpy arrays or scalars)
    ----------------------------------------
    order, xs : int64 / float64 C ``(p, n)``
        :func:`presort` output; **modified in place** (partitioned).
    y_code : int64 ``(n,)`` class codes (classification; else any int64 array)
    y_val : float64 ``(n,)`` targets (regression; else any float64 array)
    w : float64 ``(n,)`` sample weights
    is_classif : bool;  n_classes : int (``K``; ignored for regression)
    criterion : 0 Gini, 1 entropy, 2 squared error (:mod:`engine.criteria`)
    is_cat : uint8 ``(p,)`` categorical mask;  n_cats : int64 ``(p,)`` codes per feature
    strategy : code from :data:`engine.candidates.STRATEGIES`;  k : the strategy's ``k``
    variance_adjusted, fallback : bool
    dict_offsets (int64 ``(p+1,)``), dict_values (float64) : DICS dictionary (CSR)
    dict_sample : DICS entries sampled per node (0 = all);  dict_remove : bool
    max_depth, min_samples_split, min_samples_leaf, max_features : int
    max_leaf_nodes : int (<= 0: depth-first growth, else best-first)
    min_impurity_decrease : float;  rng : uint64 ``(1,)`` splitmix64 state

    Returns
    -------
    ``(children_left, children_right, feature, threshold, impurity, n_node_samples,
    weighted_n_node_samples, stats, node_candidates, cat_mask, improvement)`` trimmed to
    the node count; ``stats`` float64 ``(n_nodes, S)`` holds weighted class counts
    (``S = K``) or ``(W, S, Q)`` (regression); ``cat_mask`` uint8 ``(n_nodes, L)`` the left
    category set of categorical splits; ``improvement`` the weighted impurity decrease of
    each split (0 at leaves).
    """
    p, n = order.shape
    S = n_classes if is_classif else 3
    L = 1
    for f in range(p):
        if is_cat[f] and n_cats[f] > L:
            L = n_cats[f]
    # node capacity: every leaf holds >= min_samples_leaf rows; depth and leaf limits
    cap = 2 * max(n // max(min_samples_leaf, 1), 1) - 1
    if max_depth < 62:
        cap = min(cap, 2 ** (max_depth + 1) - 1)
    if max_leaf_nodes > 0:
        cap = min(cap, 2 * max_leaf_nodes - 1)
    cap = max(cap, 1)
    c_left = np.full(cap, TREE_LEAF, dtype=np.int64)
    c_right = np.full(cap, TREE_LEAF, dtype=np.int64)
    feat = np.full(cap, TREE_UNDEFINED, dtype=np.int64)
    thr = np.full(cap, np.float64(TREE_UNDEFINED), dtype=np.float64)
    imp = np.zeros(cap, dtype=np.float64)
    nsamp = np.zeros(cap, dtype=np.int64)
    wsamp = np.zeros(cap, dtype=np.float64)
    stats = np.zeros((cap, S), dtype=np.float64)
    ncand = np.zeros(cap, dtype=np.int64)
    cmask = np.zeros((cap, L), dtype=np.uint8)
    impr = np.zeros(cap, dtype=np.float64)
    nstart = np.zeros(cap, dtype=np.int64)
    ndepth = np.zeros(cap, dtype=np.int64)
    sp_f = np.full(cap, -1, dtype=np.int64)
    sp_pos = np.zeros(cap, dtype=np.int64)
    # scratch
    feat_order = np.arange(p).astype(np.int64)
    pos_buf = np.empty(max(n, 1), dtype=np.int64)
    ys_buf = np.zeros(max(n, 1), dtype=np.int64)
    D = dict_values.shape[0]
    dmax = 1
    for f in range(p):
        dmax = max(dmax, dict_offsets[f + 1] - dict_offsets[f])
    raw_buf = np.empty(max(k, S, dmax, KDE_GRID, FALLBACK_Q) + 1, dtype=np.float64)
    dvals = np.empty(dmax, dtype=np.float64)
    dict_alive = np.ones(D, dtype=np.uint8)
    dict_mark = np.full(D, -1, dtype=np.int64)
    dict_pool = np.empty(D, dtype=np.int64)
    left = np.zeros(S, dtype=np.float64)
    lstats = np.zeros(S, dtype=np.float64)
    rstats = np.zeros(S, dtype=np.float64)
    cat_stats = np.zeros((L, S), dtype=np.float64)
    cat_n = np.zeros(L, dtype=np.int64)
    cat_w = np.zeros(L, dtype=np.float64)
    keys = np.zeros(L, dtype=np.float64)
    cat_mask = np.zeros(L, dtype=np.uint8)
    goes_left = np.zeros(n, dtype=np.uint8)
    tmp_i = np.empty(max(n, 1), dtype=np.int64)
    tmp_x = np.empty(max(n, 1), dtype=np.float64)
    best_first = max_leaf_nodes > 0
    fallback_strategy = strategy * 0 + QUANTILE  # a variable, not a literal (one compile)
    fallback_k = k * 0 + FALLBACK_Q
    heap_val = np.empty(cap if best_first else 1, dtype=np.float64)
    heap_id = np.empty(cap if best_first else 1, dtype=np.int64)
    heap_size = 0
    # depth-first stack: (start, end, depth, parent, is_left) + the node's stats
    stack_cap = (min(max_depth, n) + 2) if not best_first else 1
    stack = np.empty((stack_cap, 5), dtype=np.int64)
    stack_stats = np.empty((stack_cap, S), dtype=np.float64)
    sp = 0

    root_stats = np.zeros(S, dtype=np.float64)
    _node_stats(order[0], y_code, y_val, w, is_classif, root_stats)
    w_root = _stats_weight(root_stats, is_classif)

    node_count = 0
    max_split_nodes = max_leaf_nodes - 1
    # best-first: records of the children of the last expanded node (the root first)
    bf_queue = np.empty((2, 5), dtype=np.int64)
    bf_stats = np.empty((2, S), dtype=np.float64)
    pending = 0
    qi = 0
    rec = bf_queue if best_first else stack
    rec_stats = bf_stats if best_first else stack_stats
    rec[0, 0] = 0
    rec[0, 1] = n
    rec[0, 2] = 0
    rec[0, 3] = -1
    rec[0, 4] = 0
    _copy_row(rec_stats[0], root_stats)
    if best_first:
        pending = 1
    else:
        sp = 1
    while True:
        # ---- next node record
        if best_first:
            if pending == 0:
                if heap_size == 0 or max_split_nodes <= 0:
                    break
                parent, heap_size = _heap_pop(heap_val, heap_id, heap_size)
                ps = nstart[parent]
                pe = ps + nsamp[parent]
                pf = sp_f[parent]
                n_left = _mark_left(
                    order, xs, pf, is_cat[pf], ps, pe, sp_pos[parent], cmask[parent], goes_left
                )
                _children_stats(
                    order, ps, pe, goes_left, y_code, y_val, w, is_classif, lstats, rstats
                )
                if dict_remove and strategy == DICS_PAPER and not is_cat[pf]:
                    _dics_remove(pf, xs, ps, pe, n_left, dict_offsets, dict_values, dict_alive)
                _partition(order, xs, ps, pe, goes_left, tmp_i, tmp_x)
                feat[parent] = pf  # threshold was stored when the split was found
                max_split_nodes -= 1
                for q in range(2):
                    bf_queue[q, 2] = ndepth[parent] + 1
                    bf_queue[q, 3] = parent
                bf_queue[0, 0] = ps
                bf_queue[0, 1] = ps + n_left
                bf_queue[0, 4] = 1
                _copy_row(bf_stats[0], lstats)
                bf_queue[1, 0] = ps + n_left
                bf_queue[1, 1] = pe
                bf_queue[1, 4] = 0
                _copy_row(bf_stats[1], rstats)
                pending = 2
                qi = 0
            s = bf_queue[qi, 0]
            e = bf_queue[qi, 1]
            depth = bf_queue[qi, 2]
            parent = bf_queue[qi, 3]
            is_left = bf_queue[qi, 4]
            nstats = bf_stats[qi]
            qi += 1
            pending -= 1
        else:
            if sp == 0:
                break
            sp -= 1
            s = stack[sp, 0]
            e = stack[sp, 1]
            depth = stack[sp, 2]
            parent = stack[sp, 3]
            is_left = stack[sp, 4]
            nstats = stack_stats[sp]
        # ---- create the node
        node = node_count
        node_count += 1
        if parent >= 0:
            if is_left:
                c_left[parent] = node
            else:
                c_right[parent] = node
        nn = e - s
        w_node = _stats_weight(nstats, is_classif)
        impurity = _stats_impurity(nstats, is_classif, criterion)
        _copy_row(stats[node], nstats)
        imp[node] = impurity
        nsamp[node] = nn
        wsamp[node] = w_node
        nstart[node] = s
        ndepth[node] = depth
        is_leaf = (
            depth >= max_depth
            or nn < min_samples_split
            or nn < 2 * min_samples_leaf
            or impurity <= EPSILON
        )
        if is_leaf:
            continue
        # ---- split search (DICS per-node sampling first)
        stamp = -1
        if strategy == DICS_PAPER and dict_sample > 0:
            n_alive = 0
            for d in range(D):
                if dict_alive[d]:
                    dict_pool[n_alive] = d
                    n_alive += 1
            take = min(dict_sample, n_alive)
            for j in range(take):
                r = j + rng_below(rng, n_alive - j)
                t = dict_pool[j]
                dict_pool[j] = dict_pool[r]
                dict_pool[r] = t
                dict_mark[dict_pool[j]] = node
            stamp = node
        # one pass with the strategy; DICS falls back to quantile per node (see module doc)
        n_eval = 0
        found = False
        bf = -1
        bpos = -1
        cur_strategy = strategy
        cur_k = k
        for attempt in range(2):
            found, bf, bpos, ne = _search_features(
                order,
                xs,
                y_code,
                y_val,
                w,
                is_classif,
                criterion,
                is_cat,
                n_cats,
                s,
                e,
                nstats,
                w_node,
                cur_strategy,
                cur_k,
                min_samples_leaf,
                variance_adjusted,
                fallback,
                max_features,
                dict_offsets,
                dict_values,
                dict_alive,
                dict_mark,
                stamp,
                rng,
                feat_order,
                pos_buf,
                raw_buf,
                ys_buf,
                dvals,
                left,
                cat_stats,
                cat_n,
                cat_w,
                keys,
                cat_mask,
                cmask[node],
            )
            n_eval += ne
            if found or ne > 0 or not (strategy == DICS_PAPER and fallback) or attempt == 1:
                break
            cur_strategy = fallback_strategy
            cur_k = fallback_k
        ncand[node] = n_eval
        if not found:
            continue
        # ---- children statistics and the improvement
        n_left = _mark_left(order, xs, bf, is_cat[bf], s, e, bpos, cmask[node], goes_left)
        _children_stats(order, s, e, goes_left, y_code, y_val, w, is_classif, lstats, rstats)
        wl = _stats_weight(lstats, is_classif)
        wr = w_node - wl
        imp_l = _stats_impurity(lstats, is_classif, criterion)
        imp_r = _stats_impurity(rstats, is_classif, criterion)
        improvement = (w_node / w_root) * (impurity - (wr / w_node) * imp_r - (wl / w_node) * imp_l)
        if improvement + EPSILON < min_impurity_decrease:
            continue
        impr[node] = improvement
        sp_f[node] = bf
        sp_pos[node] = bpos
        if is_cat[bf]:
            thr_node = np.nan
        else:
            thr_node = midpoint(xs[bf, s + bpos - 1], xs[bf, s + bpos])
        if best_first:
            # store the split; expanded when popped
            thr[node] = thr_node
            heap_size = _heap_push(heap_val, heap_id, heap_size, improvement, node)
            continue
        feat[node] = bf
        thr[node] = thr_node
        if dict_remove and strategy == DICS_PAPER and not is_cat[bf]:
            _dics_remove(bf, xs, s, e, n_left, dict_offsets, dict_values, dict_alive)
        # children that will be leaves anyway need no sorted segments
        n_right = nn - n_left
        child_leaf_l = (
            depth + 1 >= max_depth or n_left < min_samples_split or n_left < 2 * min_samples_leaf
        )
        child_leaf_r = (
            depth + 1 >= max_depth or n_right < min_samples_split or n_right < 2 * min_samples_leaf
        )
        if not (child_leaf_l and child_leaf_r):
            _partition(order, xs, s, e, goes_left, tmp_i, tmp_x)
        # push right then left (left is created next: pre-order numbering)
        stack[sp, 0] = s + n_left
        stack[sp, 1] = e
        stack[sp, 2] = depth + 1
        stack[sp, 3] = node
        stack[sp, 4] = 0
        _copy_row(stack_stats[sp], rstats)
        sp += 1
        stack[sp, 0] = s
        stack[sp, 1] = s + n_left
        stack[sp, 2] = depth + 1
        stack[sp, 3] = node
        stack[sp, 4] = 1
        _copy_row(stack_stats[sp], lstats)
        sp += 1
    # best-first: frontier nodes never expanded stay leaves
    if best_first:
        for i in range(node_count):
            if c_left[i] == TREE_LEAF:
                feat[i] = TREE_UNDEFINED
                thr[i] = np.float64(TREE_UNDEFINED)
                impr[i] = 0.0
                cmask[i] = 0
    else:
        for i in range(node_count):
            if c_left[i] == TREE_LEAF:
                cmask[i] = 0
    m = node_count
    return (
        c_left[:m].copy(),
        c_right[:m].copy(),
        feat[:m].copy(),
        thr[:m].copy(),
        imp[:m].copy(),
        nsamp[:m].copy(),
        wsamp[:m].copy(),
        stats[:m].copy(),
        ncand[:m].copy(),
        cmask[:m].copy(),
        impr[:m].copy(),
    )


# ---------------------------------------------------------------------------------------
# Python entry points (no scikit-learn input validation)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GrownTree:
    """The raw result of :func:`build_tree` (node arrays in scikit-learn's layout).

    ``value`` is float64 ``(n_nodes, n_classes)`` class fractions (classification) or
    ``(n_nodes, 1)`` node means (regression); ``improvement`` the weighted impurity
    decrease of each split (scikit-learn's ``impurity_improvement``, 0 at leaves);
    ``node_candidates`` the (feature, threshold) candidates evaluated at each node;
    ``cat_offsets``/``cat_values`` the left category sets (CSR, or None); ``dictionary``
    the DICS dictionary (or None).
    """

    task: str
    n_features: int
    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    value: np.ndarray
    improvement: np.ndarray
    node_candidates: np.ndarray
    cat_offsets: np.ndarray | None
    cat_values: np.ndarray | None
    dictionary: DICSDictionary | None

    @property
    def is_leaf(self) -> np.ndarray:
        """bool per node."""
        return self.children_left == TREE_LEAF

    def tree_arrays(self, classes=None, feature_names=None) -> TreeArrays:
        """The common :class:`engine.tree.TreeArrays` (``classes``: the labels of codes
        ``0..K-1``, default the codes themselves)."""
        if self.task == "classification" and classes is None:
            classes = np.arange(self.value.shape[1])
        return TreeArrays(
            self.children_left,
            self.children_right,
            self.feature,
            self.threshold,
            self.impurity,
            self.n_node_samples,
            self.weighted_n_node_samples,
            self.value[:, None, :],
            task=self.task,
            n_features=self.n_features,
            classes_=classes if self.task == "classification" else None,
            feature_names=feature_names,
            cat_offsets=self.cat_offsets,
            cat_values=self.cat_values,
        )

    def feature_importances(self) -> np.ndarray:
        """Total weighted impurity decrease per feature, normalised to sum 1 (all zeros for
        a single leaf) - scikit-learn's ``feature_importances_``."""
        out = np.zeros(self.n_features, dtype=np.float64)
        split = ~self.is_leaf
        np.add.at(out, self.feature[split], self.improvement[split])
        total = out.sum()
        return out / total if total > 0 else out

    def thresholds(self) -> np.ndarray:
        """Sorted unique thresholds of the numeric splits (e.g. Literati's candidate
        breakpoints from a one-feature CART)."""
        split = ~self.is_leaf
        if self.cat_offsets is not None:
            split &= np.diff(self.cat_offsets) == 0
        return np.unique(self.threshold[split])

    def misclassified(self) -> float:
        """Weighted training rows not in their leaf's majority class (classification)."""
        if self.task != "classification":
            raise ValueError("misclassified() needs a classification tree")
        leaf = self.is_leaf
        return float(
            np.sum(self.weighted_n_node_samples[leaf] * (1.0 - self.value[leaf].max(axis=1)))
        )


def build_tree(
    X,
    y,
    *,
    n_classes: int = 0,
    criterion: str | None = None,
    splitter: str = "exhaustive",
    max_depth: int | None = None,
    min_samples_split: int = 2,
    min_samples_leaf: int = 1,
    max_features: int | None = None,
    max_leaf_nodes: int | None = None,
    min_impurity_decrease: float = 0.0,
    sample_weight=None,
    is_categorical=None,
    n_categories=None,
    n_candidates: int | None = None,
    variance_adjusted: bool | None = None,
    fallback: bool = True,
    dics_pairs: int | None = None,
    dics_clusters: int | None = None,
    dics_remove_used: bool = False,
    random_state=None,
) -> GrownTree:
    """Grow a CART tree from arrays, without the estimators' input validation.

    For engine code that fits many small trees (Literati's candidate breakpoints and
    lookahead, forests): ``X`` float64 ``(n, p)`` finite; ``y`` int64 class codes
    ``0..n_classes-1`` (classification, ``n_classes >= 1``) or float64 targets
    (regression, ``n_classes = 0``).  Parameters as :class:`CARTClassifier` but already
    resolved: ``max_features`` a count (None = all), ``min_samples_*`` counts,
    ``is_categorical`` a bool mask with ``n_categories`` (codes per feature; computed when
    omitted).  Zero sample weights remove their rows.  Raises ``ValueError`` for an unknown
    splitter or criterion.
    """
    task = "classification" if n_classes >= 1 else "regression"
    if criterion is None:
        criterion = "gini" if task == "classification" else "squared_error"
    crit = criterion_code(criterion, task)
    strat = strategy_code(splitter, task)
    X = np.asarray(X, dtype=np.float64)
    if not (X.flags.c_contiguous and X.flags.writeable):
        X = np.array(X, dtype=np.float64, order="C")
    n, p = X.shape
    if task == "classification":
        y_code = np.array(y, dtype=np.int64, order="C").reshape(-1)
        y_val = np.empty(0, dtype=np.float64)
    else:
        y_val = np.array(y, dtype=np.float64, order="C").reshape(-1)
        y_code = np.empty(0, dtype=np.int64)
    if is_categorical is None:
        is_cat = np.zeros(p, dtype=bool)
    else:
        is_cat = np.asarray(is_categorical, dtype=bool)
    if n_categories is None:
        n_cats = np.zeros(p, dtype=np.int64)
        for j in np.flatnonzero(is_cat):
            n_cats[j] = int(X[:, j].max()) + 1 if n else 1
    else:
        n_cats = np.asarray(n_categories, dtype=np.int64)
    if sample_weight is None:
        w = np.ones(n, dtype=np.float64)
    else:
        w = np.array(sample_weight, dtype=np.float64, order="C")  # fresh and writable
        if np.any(w == 0):  # a zero weight removes the row (thresholds and counts too)
            keep = w > 0
            X = np.ascontiguousarray(X[keep])
            w = w[keep]
            y_code = y_code[keep] if task == "classification" else y_code
            y_val = y_val[keep] if task == "regression" else y_val
            n = X.shape[0]
    from sklearn.utils import check_random_state

    rs = check_random_state(random_state)
    tree_seed = rs.randint(0, 2**31 - 1)
    km_seed = rs.randint(0, 2**31 - 1)
    rng = np.array([tree_seed], dtype=np.uint64)
    k = default_k(splitter, n_classes) if n_candidates is None else int(n_candidates)
    va = (splitter != "kmeans1d") if variance_adjusted is None else bool(variance_adjusted)
    dictionary = None
    if splitter == "dics_paper":
        K = dics_clusters or (n_classes if n_classes >= 2 else 8)
        dictionary = dics_dictionary(
            X, K, m_pairs=dics_pairs, variance_adjusted=va, random_state=km_seed, features=~is_cat
        )
        d_off, d_val = dictionary.offsets, dictionary.values
    else:
        d_off, d_val = np.zeros(p + 1, dtype=np.int64), np.empty(0, dtype=np.float64)
    msl = int(min_samples_leaf)
    order, xs = presort(X)
    (cl, cr, feat, thr, imp, nsamp, wsamp, stats, ncand, cmask, impr) = grow_tree(
        order,
        xs,
        y_code,
        y_val,
        w,
        task == "classification",
        max(n_classes, 1),
        crit,
        is_cat.astype(np.uint8),
        n_cats,
        strat,
        k,
        va,
        bool(fallback),
        d_off,
        d_val,
        k if splitter == "dics_paper" and n_candidates is not None else 0,
        bool(dics_remove_used),
        _INT_MAX if max_depth is None else int(max_depth),
        max(int(min_samples_split), 2 * msl),
        msl,
        p if max_features is None else int(max_features),
        0 if max_leaf_nodes is None else int(max_leaf_nodes),
        float(min_impurity_decrease),
        rng,
    )
    if task == "classification":
        tot = stats.sum(axis=1, keepdims=True)
        value = np.divide(stats, tot, out=np.zeros_like(stats), where=tot > 0)
    else:
        value = np.divide(
            stats[:, 1:2], stats[:, 0:1], out=np.zeros((stats.shape[0], 1)), where=stats[:, 0:1] > 0
        )
    cat_offsets = cat_values = None
    if is_cat.any():
        split_cat = (cl != TREE_LEAF) & is_cat[np.where(feat >= 0, feat, 0)]
        sets = [
            np.flatnonzero(cmask[i]) if split_cat[i] else np.empty(0, np.int64)
            for i in range(cl.shape[0])
        ]
        cat_offsets = np.zeros(cl.shape[0] + 1, dtype=np.int64)
        cat_offsets[1:] = np.cumsum([a.size for a in sets])
        cat_values = np.concatenate(sets).astype(np.int64)
    return GrownTree(
        task=task,
        n_features=p,
        children_left=cl,
        children_right=cr,
        feature=feat,
        threshold=thr,
        impurity=imp,
        n_node_samples=nsamp,
        weighted_n_node_samples=wsamp,
        value=value,
        improvement=impr,
        node_candidates=ncand,
        cat_offsets=cat_offsets,
        cat_values=cat_values,
        dictionary=dictionary,
    )


def feature_breakpoints(
    x,
    y,
    max_leaf_nodes: int | None,
    *,
    n_classes: int | None = None,
    criterion: str = "gini",
    min_samples_leaf: int = 1,
    sample_weight=None,
) -> np.ndarray:
    """Thresholds of a best-first CART with at most ``max_leaf_nodes`` leaves fitted on one
    feature ``x`` (all midpoints of the float64 unique values are candidates): sorted unique
    float64.  ``y``: int64 class codes; ``None`` leaves = grow until pure.  This is
    Literati's candidate-breakpoint rule (SPEC section 1)."""
    y = np.asarray(y, dtype=np.int64)
    K = int(y.max()) + 1 if n_classes is None and y.size else int(n_classes or 1)
    grown = build_tree(
        np.asarray(x, dtype=np.float64).reshape(-1, 1),
        y,
        n_classes=K,
        criterion=criterion,
        max_leaf_nodes=max_leaf_nodes,
        min_samples_leaf=min_samples_leaf,
        sample_weight=sample_weight,
    )
    return grown.thresholds()


# ---------------------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------------------


def _check_int(name, value, low, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        extra = " or None" if allow_none else ""
        raise ValueError(f"{name} must be an int >= {low}{extra}, got {value!r}")
    return int(value)


def _check_bool(name, value):
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


class _BaseCART(BaseEstimator):
    """Shared fit logic of :class:`CARTClassifier` and :class:`CARTRegressor`."""

    _task = "classification"

    def __init__(
        self,
        *,
        splitter="exhaustive",
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        max_features=None,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        random_state=None,
        categorical_features=None,
        n_candidates=None,
        variance_adjusted=None,
        fallback=True,
        dics_pairs=None,
        dics_clusters=None,
        dics_remove_used=False,
    ):
        self.splitter = splitter
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.random_state = random_state
        self.categorical_features = categorical_features
        self.n_candidates = n_candidates
        self.variance_adjusted = variance_adjusted
        self.fallback = fallback
        self.dics_pairs = dics_pairs
        self.dics_clusters = dics_clusters
        self.dics_remove_used = dics_remove_used

    # -- validation ------------------------------------------------------------------

    def _validated_params(self, n_features: int, n_classes: int) -> dict:
        task = self._task
        out = {
            "strategy": strategy_code(self.splitter, task)
            if isinstance(self.splitter, str)
            else strategy_code(repr(self.splitter), task),
            "criterion": criterion_code(self.criterion, task)
            if isinstance(self.criterion, str)
            else criterion_code(repr(self.criterion), task),
        }
        md = _check_int("max_depth", self.max_depth, 1, allow_none=True)
        out["max_depth"] = _INT_MAX if md is None else md
        mss = self.min_samples_split
        if isinstance(mss, numbers.Integral) and not isinstance(mss, bool):
            mss = _check_int("min_samples_split", mss, 2)
        elif isinstance(mss, numbers.Real) and not isinstance(mss, bool) and 0.0 < mss <= 1.0:
            mss = None  # resolved below with n_samples
        else:
            raise ValueError(
                f"min_samples_split must be an int >= 2 or a float in (0, 1], got {mss!r}"
            )
        out["min_samples_split"] = mss
        msl = self.min_samples_leaf
        if isinstance(msl, numbers.Integral) and not isinstance(msl, bool):
            msl = _check_int("min_samples_leaf", msl, 1)
        elif isinstance(msl, numbers.Real) and not isinstance(msl, bool) and 0.0 < msl < 1.0:
            msl = None
        else:
            raise ValueError(
                f"min_samples_leaf must be an int >= 1 or a float in (0, 1), got {msl!r}"
            )
        out["min_samples_leaf"] = msl
        mf = self.max_features
        if mf is None:
            mfv = n_features
        elif isinstance(mf, str) and mf in ("sqrt", "log2"):
            f = np.sqrt if mf == "sqrt" else np.log2
            mfv = max(1, int(f(n_features)))
        elif isinstance(mf, numbers.Integral) and not isinstance(mf, bool) and mf >= 1:
            mfv = min(int(mf), n_features)
        elif isinstance(mf, numbers.Real) and not isinstance(mf, bool) and 0.0 < mf <= 1.0:
            mfv = max(1, int(mf * n_features))
        else:
            raise ValueError(
                "max_features must be None, 'sqrt', 'log2', an int >= 1 or a float in (0, 1], "
                f"got {mf!r}"
            )
        out["max_features"] = mfv
        mln = _check_int("max_leaf_nodes", self.max_leaf_nodes, 2, allow_none=True)
        out["max_leaf_nodes"] = 0 if mln is None else mln
        mid = self.min_impurity_decrease
        if isinstance(mid, bool) or not isinstance(mid, numbers.Real) or not mid >= 0.0:
            raise ValueError(f"min_impurity_decrease must be a float >= 0, got {mid!r}")
        out["min_impurity_decrease"] = float(mid)
        k = _check_int("n_candidates", self.n_candidates, 1, allow_none=True)
        out["k"] = default_k(self.splitter, n_classes) if k is None else k
        va = self.variance_adjusted
        if va is None:
            va = self.splitter != "kmeans1d"
        out["variance_adjusted"] = _check_bool("variance_adjusted", va)
        out["fallback"] = _check_bool("fallback", self.fallback)
        out["dics_pairs"] = _check_int("dics_pairs", self.dics_pairs, 1, allow_none=True)
        out["dics_clusters"] = _check_int("dics_clusters", self.dics_clusters, 2, allow_none=True)
        out["dics_remove_used"] = _check_bool("dics_remove_used", self.dics_remove_used)
        return out

    def _categorical_mask(self, X) -> tuple[np.ndarray, np.ndarray]:
        p = X.shape[1]
        cf = self.categorical_features
        mask = np.zeros(p, dtype=bool)
        if cf is not None:
            a = np.asarray(cf)
            if a.dtype == bool:
                if a.shape != (p,):
                    raise ValueError(
                        f"categorical_features as a mask must have {p} booleans, got shape "
                        f"{a.shape}"
                    )
                mask = a.copy()
            elif a.size and a.dtype.kind in "iu":
                idx = a.reshape(-1).astype(np.int64)
                if idx.min() < -p or idx.max() >= p:
                    raise ValueError(
                        f"categorical_features holds an index outside [0, {p}): {idx.tolist()}"
                    )
                mask[idx] = True
            elif a.size:
                raise ValueError(
                    "categorical_features must be None, a boolean mask or integer column "
                    f"indices, got {cf!r}"
                )
        n_cats = np.zeros(p, dtype=np.int64)
        for j in np.flatnonzero(mask):
            col = X[:, j]
            if np.any(col < 0) or np.any(col != np.round(col)):
                raise ValueError(
                    f"categorical feature {j} must hold integer codes 0, 1, 2, ... (got "
                    f"{col[(col < 0) | (col != np.round(col))][:3].tolist()})"
                )
            n_cats[j] = int(col.max()) + 1 if col.size else 1
        return mask, n_cats

    # -- fit -------------------------------------------------------------------------

    def _fit(self, X, y_code, y_val, n_classes, sample_weight):
        n, p = X.shape
        prm = self._validated_params(p, n_classes)
        if prm["min_samples_split"] is None:
            prm["min_samples_split"] = max(2, int(np.ceil(self.min_samples_split * n)))
        if prm["min_samples_leaf"] is None:
            prm["min_samples_leaf"] = max(1, int(np.ceil(self.min_samples_leaf * n)))
        is_cat, n_cats = self._categorical_mask(X)
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.ndim != 1 or w.shape[0] != n:
                raise ValueError(
                    f"sample_weight must have shape ({n},) like y, got {np.shape(sample_weight)}"
                )
            if not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ValueError("sample_weight must be finite and non-negative")
            if not w.sum() > 0:
                raise ValueError("sample_weight must not be all zero: no row would count")
            sample_weight = w
        y = y_code if self._task == "classification" else y_val
        grown = build_tree(
            X,
            y,
            n_classes=n_classes,
            criterion=self.criterion,
            splitter=self.splitter,
            max_depth=self.max_depth,
            min_samples_split=prm["min_samples_split"],
            min_samples_leaf=prm["min_samples_leaf"],
            max_features=prm["max_features"],
            max_leaf_nodes=self.max_leaf_nodes,
            min_impurity_decrease=prm["min_impurity_decrease"],
            sample_weight=sample_weight,
            is_categorical=is_cat,
            n_categories=n_cats,
            n_candidates=self.n_candidates,
            variance_adjusted=prm["variance_adjusted"],
            fallback=prm["fallback"],
            dics_pairs=prm["dics_pairs"],
            dics_clusters=prm["dics_clusters"],
            dics_remove_used=prm["dics_remove_used"],
            random_state=self.random_state,
        )
        names = getattr(self, "feature_names_in_", None)
        self.tree_ = grown.tree_arrays(
            classes=self.classes_ if self._task == "classification" else None,
            feature_names=None if names is None else [str(s) for s in names],
        )
        self.dics_dictionary_ = grown.dictionary
        self.node_candidates_ = grown.node_candidates
        self.n_candidates_evaluated_ = int(grown.node_candidates.sum())
        self.feature_importances_ = grown.feature_importances()
        self.max_features_ = prm["max_features"]
        self.is_categorical_ = is_cat
        self.n_outputs_ = 1
        return self

    # -- prediction ------------------------------------------------------------------

    def _check_X_predict(self, X):
        check_is_fitted(self, "tree_")
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        if not X.flags.writeable:
            X = X.copy()
        return X

    def apply(self, X):
        """Leaf id (int64) reached by each row of ``X``."""
        return self.tree_._route(self._check_X_predict(X))

    def get_depth(self) -> int:
        """Depth of the fitted tree."""
        check_is_fitted(self, "tree_")
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        """Number of leaves of the fitted tree."""
        check_is_fitted(self, "tree_")
        return self.tree_.n_leaves

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        return tags


def _prepare_X(est, X, y):
    """Validated float64 C-contiguous writable ``X`` (numba compiles a separate
    specialisation for readonly arrays, e.g. memory maps) and ``y``."""
    X, y = validate_data(
        est, X, y, dtype=np.float64, order="C", y_numeric=est._task == "regression"
    )
    if not X.flags.writeable or not X.flags.c_contiguous:
        X = np.array(X, dtype=np.float64, order="C")
    return X, y


class CARTClassifier(ClassifierMixin, _BaseCART):
    """CART classification tree with a choice of candidate-threshold strategies.

    Parameters
    ----------
    splitter : str, default 'exhaustive'
        Candidate strategy, one of :data:`engine.candidates.STRATEGIES`: 'exhaustive',
        'quantile', 'histogram', 'random', 'dics_paper', 'kmeans1d', 'class_centroid',
        'kde_valley' (definitions in :mod:`engine.candidates`).
    criterion : {'gini', 'entropy', 'log_loss'}, default 'gini'
    max_depth : int >= 1 or None (grow until pure)
    min_samples_split : int >= 2 or float in (0, 1] (fraction of rows)
    min_samples_leaf : int >= 1 or float in (0, 1)
    max_features : None, 'sqrt', 'log2', int or float - features drawn per node (without
        replacement, seeded); the search continues past them until a valid split is found.
    max_leaf_nodes : int >= 2 or None - best-first growth when set.
    min_impurity_decrease : float >= 0 - weighted decrease a split must reach.
    random_state : None, int or RandomState - seeds max_features, 'random', the DICS
        k-means and per-node sampling.
    categorical_features : None, bool mask or int indices - columns holding integer codes
        ``0..L-1`` split by best subset (see the module docstring).
    n_candidates : int or None - the strategy's ``k``: quantiles (16), histogram bins (16),
        random draws (16), kmeans1d clusters (number of classes), dics_paper dictionary
        entries sampled per node (None = all); unused by the other strategies.
    variance_adjusted : bool or None - variance-adjusted boundaries (default True for
        dics_paper and class_centroid, False for kmeans1d).
    fallback : bool, default True - quantile (k=16) candidates when a strategy yields none.
    dics_pairs : int or None - DICS centroid pairs ``m`` (default K(K-1)/2 if K <= 5 else 25).
    dics_clusters : int or None - DICS k-means clusters (default: number of classes).
    dics_remove_used : bool - remove a used dictionary entry from the dictionary (CGCT).

    Fitted attributes
    -----------------
    ``classes_``, ``n_classes_``, ``n_features_in_``, ``feature_names_in_`` (DataFrame
    input), ``tree_`` (:class:`engine.tree.TreeArrays`), ``feature_importances_``
    (normalised total weighted impurity decrease, as scikit-learn), ``node_candidates_``
    (int64 per node: (feature, threshold) candidates whose impurity was evaluated there),
    ``n_candidates_evaluated_`` (their total), ``dics_dictionary_``
    (:class:`engine.candidates.DICSDictionary` or None), ``max_features_``,
    ``is_categorical_``.
    """

    _task = "classification"

    def fit(self, X, y, sample_weight=None):
        """Grow the tree on ``X`` (n, p) and labels ``y`` (n,); returns ``self``."""
        X, y = _prepare_X(self, X, y)
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        self.classes_ = classes
        self.n_classes_ = int(classes.shape[0])
        y_code = np.ascontiguousarray(codes.reshape(-1), dtype=np.int64)
        return self._fit(X, y_code, np.empty(0, dtype=np.float64), self.n_classes_, sample_weight)

    def predict_proba(self, X):
        """Class fractions of the reached leaf, float64 ``(n, n_classes)``."""
        X = self._check_X_predict(X)
        return self.tree_.value[self.tree_._route(X), 0, :]

    def predict(self, X):
        """Majority class of the reached leaf (ties to the first class)."""
        proba = self.predict_proba(X)
        return self.classes_.take(np.argmax(proba, axis=1), axis=0)

    def predict_log_proba(self, X):
        """Natural log of :meth:`predict_proba` (``-inf`` for zero fractions)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


class CARTRegressor(RegressorMixin, _BaseCART):
    """CART regression tree (squared error) with a choice of candidate strategies.

    Same parameters and fitted attributes as :class:`CARTClassifier` except: ``criterion``
    is 'squared_error'; ``splitter`` cannot be the label-aware 'class_centroid'; the
    default ``k`` of 'kmeans1d' and the DICS clusters is 8.
    """

    _task = "regression"

    def __init__(
        self,
        *,
        splitter="exhaustive",
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        max_features=None,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        random_state=None,
        categorical_features=None,
        n_candidates=None,
        variance_adjusted=None,
        fallback=True,
        dics_pairs=None,
        dics_clusters=None,
        dics_remove_used=False,
    ):
        super().__init__(
            splitter=splitter,
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            random_state=random_state,
            categorical_features=categorical_features,
            n_candidates=n_candidates,
            variance_adjusted=variance_adjusted,
            fallback=fallback,
            dics_pairs=dics_pairs,
            dics_clusters=dics_clusters,
            dics_remove_used=dics_remove_used,
        )

    def fit(self, X, y, sample_weight=None):
        """Grow the tree on ``X`` (n, p) and targets ``y`` (n,); returns ``self``."""
        X, y = _prepare_X(self, X, y)
        y_val = np.array(y, dtype=np.float64, order="C").reshape(-1)  # fresh: writable
        return self._fit(X, np.empty(0, dtype=np.int64), y_val, 0, sample_weight)

    def predict(self, X):
        """Mean target of the reached leaf, float64 ``(n,)``."""
        X = self._check_X_predict(X)
        return self.tree_.value[self.tree_._route(X), 0, 0]


# ---------------------------------------------------------------------------------------
# Compare page registration and warm-up
# ---------------------------------------------------------------------------------------


def _build_cart(task, random_state, splitter, max_depth, min_samples_leaf, criterion, n_candidates):
    if task == "regression":
        if splitter in LABEL_AWARE:
            raise ValueError(
                f"splitter {splitter!r} needs class labels; for regression use one of "
                f"{list(strategies_for('regression'))}"
            )
        return CARTRegressor(
            splitter=splitter,
            max_depth=max_depth,
            min_samples_leaf=min_samples_leaf,
            n_candidates=n_candidates,
            random_state=random_state,
        )
    crit = criterion if criterion in ("gini", "entropy") else "gini"
    return CARTClassifier(
        splitter=splitter,
        max_depth=max_depth,
        min_samples_leaf=min_samples_leaf,
        criterion=crit,
        n_candidates=n_candidates,
        random_state=random_state,
    )


register_model(
    ModelSpec(
        key="treelab_cart",
        label="CART (TreeLab, split strategies)",
        build=_build_cart,
        params=(
            ParamSpec(
                "splitter",
                "exhaustive",
                "choice",
                choices=STRATEGIES,
                help="Candidate thresholds tried per feature and node: exhaustive (all "
                "midpoints, as scikit-learn), quantile, histogram, random, or a DICS "
                "variant (dics_paper, kmeans1d, class_centroid, kde_valley).",
            ),
            ParamSpec(
                "max_depth",
                5,
                "int_or_none",
                0,
                50,
                help="Maximum depth of the tree; 0 means unlimited.",
            ),
            ParamSpec(
                "min_samples_leaf",
                1,
                "int",
                1,
                1000,
                help="Minimum number of training rows in a leaf.",
            ),
            ParamSpec(
                "criterion",
                "gini",
                "choice",
                choices=("gini", "entropy"),
                help="Impurity for classification (regression uses squared error).",
            ),
            ParamSpec(
                "n_candidates",
                0,
                "int_or_none",
                0,
                1000,
                help="The strategy's k (quantiles, bins, random draws, k-means clusters, "
                "DICS entries per node); 0 means the strategy's default.",
            ),
        ),
        description="Greedy CART in numba whose candidate thresholds come from a chosen "
        "strategy (DICS: Mazumder & Yu, arXiv 2608.20258).",
        family="TreeLab",
    )
)


@register_warmup("cart")
def _warmup() -> None:
    """Fit tiny trees with every code path (both tasks, categorical, best-first, DICS)."""
    X = np.array(
        [
            [0.0, 1.0, 0.0],
            [1.0, 0.0, 1.0],
            [2.0, 1.0, 2.0],
            [3.0, 0.0, 0.0],
            [4.0, 1.0, 1.0],
            [5.0, 0.0, 2.0],
        ]
    )
    yc = np.array([0, 0, 1, 1, 0, 1])
    yr = np.array([0.0, 0.5, 1.0, 2.0, 1.5, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in STRATEGIES:
            CARTClassifier(splitter=s, random_state=0, categorical_features=[2]).fit(X, yc)
        CARTClassifier(max_leaf_nodes=3, max_features=2, random_state=0).fit(X, yc).predict(X)
        CARTRegressor(categorical_features=[2], random_state=0).fit(X, yr).predict(X)
        CARTRegressor(splitter="kmeans1d", max_leaf_nodes=3).fit(X, yr)
