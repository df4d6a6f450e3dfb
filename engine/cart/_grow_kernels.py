"""numba kernels of CART's growth: one call grows the whole tree (:func:`grow_tree`),
depth-first or best-first, partitioning the presorted rows of every feature at each split."""

from __future__ import annotations

import numpy as np

from engine._numba import njit
from engine._random import rng_below
from engine.cart._candidate_kernels import (
    DICS_PAPER,
    FALLBACK_Q,
    KDE_GRID,
    QUANTILE,
    midpoint,
)
from engine.cart._split_kernels import (
    _copy_row,
    _node_stats,
    _search_features,
    _stats_impurity,
    _stats_weight,
)
from engine.criteria import EPSILON
from engine.tree import TREE_LEAF, TREE_UNDEFINED


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
    strategy : code from :data:`engine.cart.candidates.STRATEGIES`;  k : the strategy's ``k``
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
                    order,
                    xs,
                    pf,
                    is_cat[pf],
                    ps,
                    pe,
                    sp_pos[parent],
                    cmask[parent],
                    goes_left,
                )
                _children_stats(
                    order,
                    ps,
                    pe,
                    goes_left,
                    y_code,
                    y_val,
                    w,
                    is_classif,
                    lstats,
                    rstats,
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
