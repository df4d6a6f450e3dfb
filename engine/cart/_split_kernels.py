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
def n_observed(xs_seg):
    """Number of observed (non-NaN) values of a sorted segment (NaN sort last): its
    length when the last value is a number, else a binary search for the first NaN."""
    n = xs_seg.shape[0]
    if n == 0 or xs_seg[n - 1] == xs_seg[n - 1]:
        return n
    lo = 0
    hi = n - 1  # xs_seg[hi] is NaN
    while lo < hi:
        mid = (lo + hi) // 2
        if xs_seg[mid] == xs_seg[mid]:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit
def _missing_stats(ord_seg, n_obs, y_code, y_val, w, is_classif, miss):
    """Statistics of the rows ``ord_seg[n_obs:]`` (the NaN rows of a segment) into
    ``miss`` (class weights, or ``(W, S)`` for regression); returns their weight."""
    miss[:] = 0.0
    w_m = 0.0
    for i in range(n_obs, ord_seg.shape[0]):
        idx = ord_seg[i]
        wi = w[idx]
        w_m += wi
        if is_classif:
            miss[y_code[idx]] += wi
        else:
            miss[1] += wi * y_val[idx]
    if not is_classif:
        miss[0] = w_m
    return w_m


@njit
def _scan_numeric_missing(
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
    n_obs,
    left,
    left_m,
    miss,
):
    """:func:`_scan_numeric` for a segment whose last ``n - n_obs >= 1`` values are NaN,
    with scikit-learn's (>= 1.3) rule for the missing rows.

    First pass, the NaN rows go right: every candidate position ``p`` among the observed
    values, then ``p = n_obs`` (all observed rows left, the NaN rows alone on the right;
    threshold +inf).  Second pass, the NaN rows go left: every candidate position.  A
    later candidate replaces the best only when strictly better, in that order, as
    scikit-learn's ``BestSplitter``.  ``min_samples_leaf`` and the zero-weight test count
    the NaN rows on their side.  Candidates: between distinct observed values
    (``exhaustive``) or ``positions[:n_pos]`` (sorted, in ``[1, n_obs)``).  Returns
    ``(best_proxy, best_pos, n_eval, missing_left)`` (``best_pos = -1`` when nothing was
    evaluated; ``missing_left`` 1 when the best sends the NaN rows left).
    """
    n = xs_seg.shape[0]
    n_m = n - n_obs
    w_m = _missing_stats(ord_seg, n_obs, y_code, y_val, w, is_classif, miss)
    S = total.shape[0]
    lo = max(min_samples_leaf, 1)
    best_r = -np.inf
    pos_r = -1
    best_l = -np.inf
    pos_l = -1
    n_eval = 0
    w_left = 0.0
    s_left = 0.0
    j = 0
    if is_classif:
        left[:] = 0.0
    for i in range(n_obs):
        idx = ord_seg[i]
        wi = w[idx]
        w_left += wi
        if is_classif:
            left[y_code[idx]] += wi
        else:
            s_left += wi * y_val[idx]
        p = i + 1
        if p < n_obs:
            if exhaustive:
                if xs_seg[p] <= xs_seg[i]:
                    continue
            else:
                if j >= n_pos or p != positions[j]:
                    continue
                j += 1
        # the NaN rows right (p == n_obs: the observed rows alone on the left)
        if p >= lo and n - p >= lo and w_left > 0.0 and w_node - w_left > 0.0:
            if is_classif:
                proxy = class_children_proxy(left, w_left, total, w_node, criterion)
            else:
                proxy = squared_error_proxy(s_left, w_left, total[1], w_node)
            n_eval += 1
            if proxy > best_r:
                best_r = proxy
                pos_r = p
        # the NaN rows left
        if p == n_obs:
            continue
        wl = w_left + w_m
        if p + n_m >= lo and n_obs - p >= lo and wl > 0.0 and w_node - wl > 0.0:
            if is_classif:
                for c in range(S):
                    left_m[c] = left[c] + miss[c]
                proxy = class_children_proxy(left_m, wl, total, w_node, criterion)
            else:
                proxy = squared_error_proxy(s_left + miss[1], wl, total[1], w_node)
            n_eval += 1
            if proxy > best_l:
                best_l = proxy
                pos_l = p
    if pos_l >= 0 and best_l > best_r:
        return best_l, pos_l, n_eval, 1
    return best_r, pos_r, n_eval, 0


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
    n_obs,
    left_m,
    miss,
):
    """Best subset split of a categorical feature (codes ``0..n_cat-1`` in
    ``xs_seg[:n_obs]``; the ``n - n_obs`` values after them are NaN).

    Categories are sorted by a key and every prefix of that order is a candidate left set:
    the class-1 proportion (binary), the mean target (regression) or, for multiclass, the
    proportion of each class present in turn (one-vs-rest orderings, a heuristic).  With
    NaN rows each prefix is evaluated with them right, then left, and the set of every
    observed category with the NaN rows alone on the right is a candidate too (the rule of
    :func:`_scan_numeric_missing`).  Returns ``(best_proxy, n_eval, missing_left)`` and
    writes the best left set to ``mask_out[:n_cat]`` (1 = left).
    """
    n = xs_seg.shape[0]
    n_m = n - n_obs
    S = total.shape[0]
    for c in range(n_cat):
        cat_n[c] = 0
        cat_w[c] = 0.0
        for s in range(S):
            cat_stats[c, s] = 0.0
    for i in range(n_obs):
        c = np.int64(xs_seg[i])
        idx = ord_seg[i]
        wi = w[idx]
        cat_n[c] += 1
        cat_w[c] += wi
        if is_classif:
            cat_stats[c, y_code[idx]] += wi
        else:
            cat_stats[c, 1] += wi * y_val[idx]
    w_m = 0.0
    if n_m > 0:
        w_m = _missing_stats(ord_seg, n_obs, y_code, y_val, w, is_classif, miss)
    present = np.empty(n_cat, dtype=np.int64)
    perm = np.empty(n_cat, dtype=np.int64)
    n_present = 0
    for c in range(n_cat):
        if cat_n[c] > 0:
            present[n_present] = c
            n_present += 1
    best = -np.inf
    best_side = 0
    n_eval = 0
    if n_present == 0 or (n_present < 2 and n_m == 0):
        return best, n_eval, best_side
    lo = max(min_samples_leaf, 1)
    n_orders = 1
    if is_classif and S > 2:
        n_orders = S
    # prefixes of every order; the last (all observed categories) only with NaN rows
    n_prefix = n_present if n_m > 0 else n_present - 1
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
        for j in range(n_prefix):
            c = present[perm[j]]
            n_left += cat_n[c]
            w_left += cat_w[c]
            if is_classif:
                for s in range(S):
                    left[s] += cat_stats[c, s]
            else:
                s_left += cat_stats[c, 1]
            last = j == n_present - 1
            for side in range(2 if n_m > 0 and not last else 1):
                nl = n_left + side * n_m
                wl = w_left + side * w_m
                if nl < lo or n - nl < lo or wl <= 0.0 or w_node - wl <= 0.0:
                    continue
                if last and o > 0:
                    continue  # the same split in every order
                if is_classif:
                    if side == 1:
                        for s in range(S):
                            left_m[s] = left[s] + miss[s]
                        proxy = class_children_proxy(left_m, wl, total, w_node, criterion)
                    else:
                        proxy = class_children_proxy(left, wl, total, w_node, criterion)
                else:
                    s_l = s_left + miss[1] if side == 1 else s_left
                    proxy = squared_error_proxy(s_l, wl, total[1], w_node)
                n_eval += 1
                if proxy > best:
                    best = proxy
                    best_side = side
                    mask_out[:n_cat] = 0
                    for jj in range(j + 1):
                        mask_out[present[perm[jj]]] = 1
    return best, n_eval, best_side


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
    ``max_features`` non-constant ones once a split is found.  A feature is skipped when
    all its values at the node are NaN, or when it has no NaN and one observed value (as
    scikit-learn); a feature with NaN rows is scanned by the missing-value rule of
    :func:`_scan_numeric_missing` on candidates computed from its observed values.
    Returns ``(found, feature, pos, n_eval, missing_left)``: ``pos`` counts the observed
    rows going left, ``missing_left`` is 1/0 for a winner with NaN rows and -1 for one
    without (the caller sends NaN to the larger child); a categorical winner's left set is
    in ``best_mask``.
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
    left_m, miss = scratch[11], scratch[12]
    p = order.shape[0]
    n = e - s
    if max_features < p:
        _shuffle_features(feat_order, p, rng)
    best = -np.inf
    best_f = -1
    best_pos = -1
    best_side = -1
    n_eval = 0
    visited = 0
    for fi in range(p):
        f = feat_order[fi] if max_features < p else fi
        if visited >= max_features and best_f >= 0:
            break
        xs_seg = xs[f, s:e]
        n_obs = n
        if xs_seg[n - 1] != xs_seg[n - 1]:  # NaN rows (sorted last)
            n_obs = n_observed(xs_seg)
            if n_obs == 0:
                continue  # every value missing at this node
        elif xs_seg[0] == xs_seg[n - 1]:
            continue  # constant at this node
        visited += 1
        ord_seg = order[f, s:e]
        if is_cat[f]:
            proxy, ne, side = _scan_categorical(
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
                n_obs,
                left_m,
                miss,
            )
            n_eval += ne
            if ne > 0 and proxy > best:
                best = proxy
                best_f = f
                best_pos = -1
                best_side = side if n_obs < n else -1
                _copy_row(best_mask, cat_mask)
            continue
        if n_obs == n:
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
            side = -1
        else:
            # candidates from the observed values (any position: the NaN rows count
            # towards min_samples_leaf on their side, checked by the scan)
            n_pos = _numeric_positions(
                strategy,
                f,
                xs_seg[:n_obs],
                ord_seg[:n_obs],
                y_code,
                total.shape[0],
                k,
                1,
                variance_adjusted,
                fallback,
                dictionary,
                stamp,
                rng,
                scratch,
            )
            proxy, pos, ne, side = _scan_numeric_missing(
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
                n_obs,
                left,
                left_m,
                miss,
            )
        n_eval += ne
        if pos >= 0 and proxy > best:
            best = proxy
            best_f = f
            best_pos = pos
            best_side = side
    return best_f >= 0, best_f, best_pos, n_eval, best_side
