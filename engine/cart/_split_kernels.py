"""numba kernels of CART's split search at one node: node statistics, the scan of a
numeric feature's candidate positions, the best subset of a categorical feature, and the
search over features (see :mod:`engine.cart` for the algorithm)."""

from __future__ import annotations

import numpy as np

from engine._numba import njit
from engine._random import rng_below
from engine.cart._candidate_kernels import (
    CLASS_CENTROID,
    DICS_PAPER,
    EXHAUSTIVE,
    insertion_argsort,
    node_positions,
)
from engine.criteria import (
    class_children_proxy,
    class_impurity,
    squared_error,
    squared_error_proxy,
)


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
def _numeric_positions(
    strategy,
    f,
    xs_seg,
    ord_seg,
    y_code,
    n_classes,
    k,
    min_samples_leaf,
    variance_adjusted,
    fallback,
    dictionary,
    stamp,
    rng,
    scratch,
):
    """The strategy's candidate positions of numeric feature ``f`` at the node into the
    positions buffer of ``scratch``; returns their number (0 for ``exhaustive``, which
    :func:`_scan_numeric` scans inline)."""
    if strategy == EXHAUSTIVE:
        return 0
    pos_buf, raw_buf, ys_buf, dvals = scratch[1], scratch[2], scratch[3], scratch[4]
    n = xs_seg.shape[0]
    n_dict = 0
    if strategy == DICS_PAPER:
        n_dict = _dics_feature_values(
            f, dictionary[0], dictionary[1], dictionary[2], dictionary[3], stamp, dvals
        )
    if strategy == CLASS_CENTROID:  # the only strategy reading the labels
        for i in range(n):
            ys_buf[i] = y_code[ord_seg[i]]
    return node_positions(
        strategy,
        xs_seg,
        ys_buf[:n],
        n_classes,
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


@njit
def _shuffle_features(feat_order, p, rng):
    """A uniform random order of the ``p`` features in ``feat_order`` (Fisher-Yates)."""
    for f in range(p):
        feat_order[f] = f
    for f in range(p - 1):
        r = f + rng_below(rng, p - f)
        t = feat_order[f]
        feat_order[f] = feat_order[r]
        feat_order[r] = t


@njit
def _search_features(
    data,
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
    dictionary,
    stamp,
    rng,
    scratch,
    best_mask,
):
    """Best split of the node ``[s, e)`` over the features.

    ``data``: ``(order, xs, y_code, y_val, w)``; ``dictionary``: the DICS dictionary
    ``(offsets, values, alive, mark, ...)``; ``scratch``: the buffers made by
    ``_new_search_scratch`` in :mod:`engine.cart._grow_kernels`.  With ``max_features < p``
    the features are visited in a random order and the search stops after
    ``max_features`` non-constant ones once a split is found.  Returns
    ``(found, feature, pos, n_eval)``; a categorical winner's left set is in ``best_mask``.
    """
    order, xs, y_code, y_val, w = data
    feat_order, pos_buf, left = scratch[0], scratch[1], scratch[5]
    cat_stats, cat_n, cat_w, keys, cat_mask = (
        scratch[6],
        scratch[7],
        scratch[8],
        scratch[9],
        scratch[10],
    )
    p = order.shape[0]
    n = e - s
    if max_features < p:
        _shuffle_features(feat_order, p, rng)
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
        n_pos = _numeric_positions(
            strategy,
            f,
            xs_seg,
            ord_seg,
            y_code,
            total.shape[0],
            k,
            min_samples_leaf,
            variance_adjusted,
            fallback,
            dictionary,
            stamp,
            rng,
            scratch,
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
            strategy == EXHAUSTIVE,
            left,
        )
        n_eval += ne
        if pos >= 0 and proxy > best:
            best = proxy
            best_f = f
            best_pos = pos
    return best_f >= 0, best_f, best_pos, n_eval
