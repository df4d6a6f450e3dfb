"""numba kernels of one CART node: the node arrays, the split search at a node and the
children it makes (rows marked and partitioned, their statistics), the DICS dictionary's
sampling and removal, and the best-first queue (a heap).  :mod:`engine.cart._grow_kernels`
grows the whole tree with them."""

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
    _search_features,
    _stats_impurity,
    _stats_weight,
    n_observed,
)
from engine.criteria import EPSILON
from engine.tree import TREE_LEAF, TREE_UNDEFINED


@njit
def _mark_left(order, xs, f, is_cat_f, s, e, pos, mask, goes_left, n_obs, missing_left):
    """``goes_left[row]`` (1/0) for the rows of node ``[s, e)`` under the split on ``f``:
    the observed rows ``[s, s + n_obs)`` by the test (the first ``pos`` of them, or the
    category set ``mask``), the NaN rows after them left iff ``missing_left``; returns the
    number of rows going left."""
    n_left = 0
    end_obs = s + n_obs
    if is_cat_f:
        for i in range(s, end_obs):
            g = mask[np.int64(xs[f, i])]
            goes_left[order[f, i]] = g
            n_left += g
    else:
        for i in range(s, end_obs):
            goes_left[order[f, i]] = 1 if i < s + pos else 0
        n_left = pos
    g = 1 if missing_left == 1 else 0
    for i in range(end_obs, e):
        goes_left[order[f, i]] = g
    n_left += g * (e - end_obs)
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
def _heap_sift_up(heap_val, heap_id, hole, val, node):
    """Move ``(val, node)`` up from ``hole`` while its parent's value is smaller: the sift
    of C++ ``std::push_heap``, whose order between equal values scikit-learn's best-first
    builder inherits."""
    parent = (hole - 1) // 2
    while hole > 0 and heap_val[parent] < val:
        heap_val[hole] = heap_val[parent]
        heap_id[hole] = heap_id[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap_val[hole] = val
    heap_id[hole] = node


@njit
def _heap_push(heap_val, heap_id, size, val, node):
    """Push ``node`` with key ``val`` on the max-heap of ``size`` entries; returns size + 1."""
    _heap_sift_up(heap_val, heap_id, size, val, node)
    return size + 1


@njit
def _heap_pop(heap_val, heap_id, size):
    """Pop the max of the heap as C++ ``std::pop_heap`` does (the hole goes down to a leaf
    along the larger children, the right one on equal values, then the last entry sifts
    up), so equal improvements leave in scikit-learn's order; returns (node, size - 1)."""
    top = heap_id[0]
    last = size - 1
    val = heap_val[last]
    node = heap_id[last]
    hole = 0
    child = 0
    while child < (last - 1) // 2:
        child = 2 * (child + 1)
        if heap_val[child] < heap_val[child - 1]:
            child -= 1
        heap_val[hole] = heap_val[child]
        heap_id[hole] = heap_id[child]
        hole = child
    if (last & 1) == 0 and child == (last - 2) // 2:
        child = 2 * (child + 1)
        heap_val[hole] = heap_val[child - 1]
        heap_id[hole] = heap_id[child - 1]
        hole = child - 1
    if last > 0:
        _heap_sift_up(heap_val, heap_id, hole, val, node)
    return top, last


@njit
def _dics_remove(f, xs, s, e, pos, dict_offsets, dict_values, dict_alive):
    """Remove the dictionary entries of feature ``f`` that fall in the chosen gap (after
    the first ``pos`` observed values of the node)."""
    seg = xs[f, s:e]
    seg = seg[: n_observed(seg)]
    for d in range(dict_offsets[f], dict_offsets[f + 1]):
        if dict_alive[d] and np.searchsorted(seg, dict_values[d], side="right") == pos:
            dict_alive[d] = 0


@njit
def _node_capacity(n, min_samples_leaf, max_depth, max_leaf_nodes):
    """Upper bound on the node count: every leaf holds >= min_samples_leaf rows, and the
    depth and leaf limits."""
    cap = 2 * max(n // max(min_samples_leaf, 1), 1) - 1
    if max_depth < 62:
        cap = min(cap, 2 ** (max_depth + 1) - 1)
    if max_leaf_nodes > 0:
        cap = min(cap, 2 * max_leaf_nodes - 1)
    return max(cap, 1)


@njit
def _new_nodes(cap, S, L):
    """Node arrays of a tree of at most ``cap`` nodes (leaves until split): children,
    feature, threshold, impurity, rows, weight, statistics (``S`` per node), candidates
    evaluated, left category set (``L`` codes), improvement, the split being built
    (segment start, depth, feature, position), the side of the missing values (1 = left)
    and the NaN rows the split routed."""
    return (
        np.full(cap, TREE_LEAF, dtype=np.int64),  # children_left
        np.full(cap, TREE_LEAF, dtype=np.int64),  # children_right
        np.full(cap, TREE_UNDEFINED, dtype=np.int64),  # feature
        np.full(cap, np.float64(TREE_UNDEFINED), dtype=np.float64),  # threshold
        np.zeros(cap, dtype=np.float64),  # impurity
        np.zeros(cap, dtype=np.int64),  # n_node_samples
        np.zeros(cap, dtype=np.float64),  # weighted_n_node_samples
        np.zeros((cap, S), dtype=np.float64),  # stats
        np.zeros(cap, dtype=np.int64),  # node_candidates
        np.zeros((cap, L), dtype=np.uint8),  # cat_mask
        np.zeros(cap, dtype=np.float64),  # improvement
        np.zeros(cap, dtype=np.int64),  # segment start
        np.zeros(cap, dtype=np.int64),  # depth
        np.full(cap, -1, dtype=np.int64),  # split feature
        np.zeros(cap, dtype=np.int64),  # split position
        np.zeros(cap, dtype=np.uint8),  # missing_go_to_left
        np.zeros(cap, dtype=np.int64),  # n_missing (NaN rows routed by the split)
    )


@njit
def _new_search_scratch(n, p, k, S, L, dict_offsets):
    """Scratch buffers of :func:`_search_features` (see there)."""
    dmax = 1
    for f in range(p):
        dmax = max(dmax, dict_offsets[f + 1] - dict_offsets[f])
    return (
        np.arange(p).astype(np.int64),  # feature order
        np.empty(max(n, 1), dtype=np.int64),  # positions
        np.empty(max(k, S, dmax, KDE_GRID, FALLBACK_Q) + 1, dtype=np.float64),  # raw candidates
        np.zeros(max(n, 1), dtype=np.int64),  # labels of a segment
        np.empty(dmax, dtype=np.float64),  # dictionary values of a feature
        np.zeros(S, dtype=np.float64),  # left statistics of a scan
        np.zeros((L, S), dtype=np.float64),  # per-category statistics
        np.zeros(L, dtype=np.int64),  # per-category rows
        np.zeros(L, dtype=np.float64),  # per-category weight
        np.zeros(L, dtype=np.float64),  # per-category sort keys
        np.zeros(L, dtype=np.uint8),  # a categorical scan's left set
        np.zeros(S, dtype=np.float64),  # left statistics with the NaN rows
        np.zeros(S, dtype=np.float64),  # statistics of the NaN rows
    )


@njit
def _sample_dictionary(dictionary, dict_sample, node, rng):
    """DICS per-node sampling: mark ``dict_sample`` alive entries (drawn without replacement)
    with ``node``; returns the stamp :func:`_search_features` filters on."""
    dict_alive, dict_mark, dict_pool = dictionary[2], dictionary[3], dictionary[4]
    n_alive = 0
    for d in range(dict_alive.shape[0]):
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
    return node


@njit
def _find_split(
    data,
    is_classif,
    criterion,
    is_cat,
    n_cats,
    s,
    e,
    nstats,
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
    """One search with the strategy; DICS falls back to quantile per node (see
    :mod:`engine.cart.candidates`).  Returns ``(found, feature, pos, n_eval, missing_left)``
    as :func:`engine.cart._split_kernels._search_features`."""
    fallback_strategy = strategy * 0 + QUANTILE  # a variable, not a literal (one compile)
    fallback_k = k * 0 + FALLBACK_Q
    n_eval = 0
    found = False
    bf = -1
    bpos = -1
    side = -1
    cur_strategy = strategy
    cur_k = k
    for attempt in range(2):
        found, bf, bpos, ne, side = _search_features(
            data,
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
            dictionary,
            stamp,
            rng,
            scratch,
            best_mask,
        )
        n_eval += ne
        if found or ne > 0 or not (strategy == DICS_PAPER and fallback) or attempt == 1:
            break
        cur_strategy = fallback_strategy
        cur_k = fallback_k
    return found, bf, bpos, n_eval, side


@njit
def _split_node(
    node,
    s,
    e,
    depth,
    nstats,
    w_root,
    data,
    cfg,
    is_cat,
    n_cats,
    nodes,
    dictionary,
    rng,
    scratch,
    children,
):
    """Record node ``node`` (rows ``[s, e)`` of every feature's segment, statistics
    ``nstats``) and look for its split.  Returns ``(split, n_left)``: ``split`` False for a
    leaf; else the split feature, position, threshold and improvement are recorded (the
    feature itself is set by the caller when the split is made) and ``children`` holds the
    rows going left and both children's statistics."""
    order, xs, y_code, y_val, w = data
    (
        is_classif,
        criterion,
        strategy,
        k,
        variance_adjusted,
        fallback,
        dict_sample,
        max_depth,
        min_samples_split,
        min_samples_leaf,
        max_features,
        min_impurity_decrease,
    ) = cfg
    stats, imp, nsamp, wsamp, ncand, cmask = (
        nodes[7],
        nodes[4],
        nodes[5],
        nodes[6],
        nodes[8],
        nodes[9],
    )
    nstart, ndepth = nodes[11], nodes[12]
    nn = e - s
    w_node = _stats_weight(nstats, is_classif)
    impurity = _stats_impurity(nstats, is_classif, criterion)
    _copy_row(stats[node], nstats)
    imp[node] = impurity
    nsamp[node] = nn
    wsamp[node] = w_node
    nstart[node] = s
    ndepth[node] = depth
    if (
        depth >= max_depth
        or nn < min_samples_split
        or nn < 2 * min_samples_leaf
        or impurity <= EPSILON
    ):
        return False, 0
    stamp = -1
    if strategy == DICS_PAPER and dict_sample > 0:
        stamp = _sample_dictionary(dictionary, dict_sample, node, rng)
    found, bf, bpos, n_eval, side = _find_split(
        data,
        is_classif,
        criterion,
        is_cat,
        n_cats,
        s,
        e,
        nstats,
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
        cmask[node],
    )
    ncand[node] = n_eval
    if not found:
        return False, 0
    return _make_split(
        node,
        s,
        e,
        bf,
        bpos,
        side,
        impurity,
        w_node,
        w_root,
        data,
        is_classif,
        criterion,
        min_impurity_decrease,
        is_cat,
        nodes,
        children,
    )


@njit
def _make_split(
    node,
    s,
    e,
    bf,
    bpos,
    side,
    impurity,
    w_node,
    w_root,
    data,
    is_classif,
    criterion,
    min_impurity_decrease,
    is_cat,
    nodes,
    children,
):
    """The split found at ``node`` (feature ``bf``, position ``bpos``, NaN side ``side``):
    mark the rows going left, the children's statistics and the improvement; record the
    split unless it lowers the impurity by less than ``min_impurity_decrease``.  Returns
    ``(split, n_left)`` as :func:`_split_node`."""
    order, xs, y_code, y_val, w = data
    thr, cmask, impr, sp_f, sp_pos, miss_left, n_miss = (
        nodes[3],
        nodes[9],
        nodes[10],
        nodes[13],
        nodes[14],
        nodes[15],
        nodes[16],
    )
    goes_left, lstats, rstats = children[0], children[1], children[2]
    nn = e - s
    n_obs = nn if side < 0 else n_observed(xs[bf, s:e])
    n_left = _mark_left(order, xs, bf, is_cat[bf], s, e, bpos, cmask[node], goes_left, n_obs, side)
    _children_stats(order, s, e, goes_left, y_code, y_val, w, is_classif, lstats, rstats)
    wl = _stats_weight(lstats, is_classif)
    wr = w_node - wl
    imp_l = _stats_impurity(lstats, is_classif, criterion)
    imp_r = _stats_impurity(rstats, is_classif, criterion)
    improvement = (w_node / w_root) * (impurity - (wr / w_node) * imp_r - (wl / w_node) * imp_l)
    if improvement + EPSILON < min_impurity_decrease:
        return False, 0
    impr[node] = improvement
    sp_f[node] = bf
    sp_pos[node] = bpos
    # NaN rows at the node go where the search sent them; without any, NaN met later
    # goes to the child with more training rows (scikit-learn's rule)
    miss_left[node] = side if side >= 0 else (1 if n_left > nn - n_left else 0)
    n_miss[node] = nn - n_obs
    if is_cat[bf]:
        thr[node] = np.nan
    elif bpos == n_obs:
        thr[node] = np.inf  # every observed value left, the NaN rows right
    else:
        thr[node] = midpoint(xs[bf, s + bpos - 1], xs[bf, s + bpos])
    return True, n_left


@njit
def _link(nodes, node, parent, is_left):
    """Make ``node`` the left or right child of ``parent`` (the root has parent -1)."""
    if parent >= 0:
        if is_left:
            nodes[0][parent] = node
        else:
            nodes[1][parent] = node
