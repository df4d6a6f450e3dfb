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
    (
        c_left,
        c_right,
        feat,
        thr,
        imp,
        nsamp,
        wsamp,
        stats,
        ncand,
        cmask,
        impr,
        nstart,
        ndepth,
        sp_f,
        sp_pos,
        miss_left,
        n_miss,
    ) = nodes
    goes_left, lstats, rstats = children[0], children[1], children[2]
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
    # children statistics and the improvement
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


@njit
def _grow_depth_first(
    root_stats,
    w_root,
    data,
    cfg,
    is_cat,
    n_cats,
    nodes,
    dictionary,
    dict_remove,
    rng,
    scratch,
    children,
):
    """Depth-first growth with an explicit stack (pre-order numbering, left child first,
    as scikit-learn's ``DepthFirstTreeBuilder``); returns the node count."""
    order, xs = data[0], data[1]
    max_depth, min_samples_split, min_samples_leaf = cfg[7], cfg[8], cfg[9]
    strategy = cfg[2]
    feat, sp_f = nodes[2], nodes[13]
    goes_left, lstats, rstats, tmp_i, tmp_x = children
    n = order.shape[1]
    S = root_stats.shape[0]
    # stack records: (start, end, depth, parent, is_left) and the node's statistics
    stack_cap = min(max_depth, n) + 2
    stack = np.empty((stack_cap, 5), dtype=np.int64)
    stack_stats = np.empty((stack_cap, S), dtype=np.float64)
    stack[0, 0] = 0
    stack[0, 1] = n
    stack[0, 2] = 0
    stack[0, 3] = -1
    stack[0, 4] = 0
    _copy_row(stack_stats[0], root_stats)
    sp = 1
    node_count = 0
    while sp > 0:
        sp -= 1
        s, e, depth, parent, is_left = (
            stack[sp, 0],
            stack[sp, 1],
            stack[sp, 2],
            stack[sp, 3],
            stack[sp, 4],
        )
        node = node_count
        node_count += 1
        _link(nodes, node, parent, is_left)
        split, n_left = _split_node(
            node,
            s,
            e,
            depth,
            stack_stats[sp],
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
        )
        if not split:
            continue
        bf = sp_f[node]
        feat[node] = bf
        if dict_remove and strategy == DICS_PAPER and not is_cat[bf]:
            _dics_remove(bf, xs, s, e, nodes[14][node], dictionary[0], dictionary[1], dictionary[2])
        # children that will be leaves anyway need no sorted segments
        n_right = (e - s) - n_left
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
    for i in range(node_count):
        if nodes[0][i] == TREE_LEAF:
            nodes[9][i] = 0
            nodes[15][i] = 0
            nodes[16][i] = 0
    return node_count


@njit
def _expand(
    parent, data, cfg, is_cat, nodes, dictionary, dict_remove, children, queue, queue_stats
):
    """Make the split found at ``parent`` (best-first): partition its rows and write its two
    children's records into ``queue`` / ``queue_stats`` (left first)."""
    order, xs, y_code, y_val, w = data
    is_classif, strategy = cfg[0], cfg[2]
    feat, nsamp, cmask, nstart, ndepth, sp_f, sp_pos = (
        nodes[2],
        nodes[5],
        nodes[9],
        nodes[11],
        nodes[12],
        nodes[13],
        nodes[14],
    )
    goes_left, lstats, rstats, tmp_i, tmp_x = children
    ps = nstart[parent]
    pe = ps + nsamp[parent]
    pf = sp_f[parent]
    n_obs = (pe - ps) - nodes[16][parent]
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
        n_obs,
        nodes[15][parent],
    )
    _children_stats(order, ps, pe, goes_left, y_code, y_val, w, is_classif, lstats, rstats)
    if dict_remove and strategy == DICS_PAPER and not is_cat[pf]:
        _dics_remove(pf, xs, ps, pe, sp_pos[parent], dictionary[0], dictionary[1], dictionary[2])
    _partition(order, xs, ps, pe, goes_left, tmp_i, tmp_x)
    feat[parent] = pf  # threshold was stored when the split was found
    for q in range(2):
        queue[q, 2] = ndepth[parent] + 1
        queue[q, 3] = parent
    queue[0, 0] = ps
    queue[0, 1] = ps + n_left
    queue[0, 4] = 1
    _copy_row(queue_stats[0], lstats)
    queue[1, 0] = ps + n_left
    queue[1, 1] = pe
    queue[1, 4] = 0
    _copy_row(queue_stats[1], rstats)


@njit
def _grow_best_first(
    root_stats,
    w_root,
    data,
    cfg,
    is_cat,
    n_cats,
    nodes,
    dictionary,
    dict_remove,
    max_leaf_nodes,
    rng,
    scratch,
    children,
):
    """Best-first growth by weighted impurity decrease (scikit-learn's
    ``BestFirstTreeBuilder``): a node's split is found when it is created and made when it
    is the best on the heap, until ``max_leaf_nodes`` leaves; returns the node count."""
    n = data[0].shape[1]
    S = root_stats.shape[0]
    cap = nodes[0].shape[0]
    heap_val = np.empty(cap, dtype=np.float64)
    heap_id = np.empty(cap, dtype=np.int64)
    heap_size = 0
    splittable = np.zeros(cap, dtype=np.bool_)
    # records of the children of the last expanded node (the root first)
    queue = np.empty((2, 5), dtype=np.int64)
    queue_stats = np.empty((2, S), dtype=np.float64)
    queue[0, 0] = 0
    queue[0, 1] = n
    queue[0, 2] = 0
    queue[0, 3] = -1
    queue[0, 4] = 0
    _copy_row(queue_stats[0], root_stats)
    pending = 1
    qi = 0
    node_count = 0
    max_split_nodes = max_leaf_nodes - 1
    while True:
        if pending == 0:
            if heap_size == 0 or max_split_nodes <= 0:
                break
            parent, heap_size = _heap_pop(heap_val, heap_id, heap_size)
            if not splittable[parent]:  # a leaf's record (scikit-learn keeps them too)
                continue
            _expand(
                parent,
                data,
                cfg,
                is_cat,
                nodes,
                dictionary,
                dict_remove,
                children,
                queue,
                queue_stats,
            )
            max_split_nodes -= 1
            pending = 2
            qi = 0
        s, e, depth, parent, is_left = (
            queue[qi, 0],
            queue[qi, 1],
            queue[qi, 2],
            queue[qi, 3],
            queue[qi, 4],
        )
        nstats = queue_stats[qi]
        qi += 1
        pending -= 1
        node = node_count
        node_count += 1
        _link(nodes, node, parent, is_left)
        split, _ = _split_node(
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
        )
        # every node enters the heap, a leaf with improvement 0, as in scikit-learn, whose
        # heap order between equal improvements depends on them; a split is made when popped
        splittable[node] = split
        heap_size = _heap_push(
            heap_val, heap_id, heap_size, nodes[10][node] if split else 0.0, node
        )
    # frontier nodes never expanded stay leaves
    for i in range(node_count):
        if nodes[0][i] == TREE_LEAF:
            nodes[2][i] = TREE_UNDEFINED
            nodes[3][i] = np.float64(TREE_UNDEFINED)
            nodes[10][i] = 0.0
            nodes[9][i] = 0
            nodes[15][i] = 0
            nodes[16][i] = 0
    return node_count


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
    weighted_n_node_samples, stats, node_candidates, cat_mask, improvement,
    missing_go_to_left, n_missing)`` trimmed to the node count; ``stats`` float64 ``(n_nodes, S)`` holds weighted class counts
    (``S = K``) or ``(W, S, Q)`` (regression); ``cat_mask`` uint8 ``(n_nodes, L)`` the left
    category set of categorical splits; ``improvement`` the weighted impurity decrease of
    each split (0 at leaves); ``missing_go_to_left`` uint8 the side of the missing values
    (scikit-learn's meaning: NaN rows met at the node, in training or later, go left iff
    1; a split whose feature had no NaN at the node sends them to the child with more
    training rows); ``n_missing`` int64 the training rows with NaN the split routed.
    ``xs`` may hold NaN (sorted last by :func:`engine.cart.builder.presort`).
    """
    p, n = order.shape
    S = n_classes if is_classif else 3
    L = 1
    for f in range(p):
        if is_cat[f] and n_cats[f] > L:
            L = n_cats[f]
    cap = _node_capacity(n, min_samples_leaf, max_depth, max_leaf_nodes)
    nodes = _new_nodes(cap, S, L)
    scratch = _new_search_scratch(n, p, k, S, L, dict_offsets)
    D = dict_values.shape[0]
    dictionary = (
        dict_offsets,
        dict_values,
        np.ones(D, dtype=np.uint8),  # alive
        np.full(D, -1, dtype=np.int64),  # sampled at this node (stamp)
        np.empty(D, dtype=np.int64),  # sampling pool
    )
    children = (
        np.zeros(n, dtype=np.uint8),  # goes left
        np.zeros(S, dtype=np.float64),  # left statistics
        np.zeros(S, dtype=np.float64),  # right statistics
        np.empty(max(n, 1), dtype=np.int64),  # partition scratch (rows)
        np.empty(max(n, 1), dtype=np.float64),  # partition scratch (values)
    )
    data = (order, xs, y_code, y_val, w)
    cfg = (
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
    )
    root_stats = np.zeros(S, dtype=np.float64)
    _node_stats(order[0], y_code, y_val, w, is_classif, root_stats)
    w_root = _stats_weight(root_stats, is_classif)
    if max_leaf_nodes > 0:
        m = _grow_best_first(
            root_stats,
            w_root,
            data,
            cfg,
            is_cat,
            n_cats,
            nodes,
            dictionary,
            dict_remove,
            max_leaf_nodes,
            rng,
            scratch,
            children,
        )
    else:
        m = _grow_depth_first(
            root_stats,
            w_root,
            data,
            cfg,
            is_cat,
            n_cats,
            nodes,
            dictionary,
            dict_remove,
            rng,
            scratch,
            children,
        )
    return (
        nodes[0][:m].copy(),
        nodes[1][:m].copy(),
        nodes[2][:m].copy(),
        nodes[3][:m].copy(),
        nodes[4][:m].copy(),
        nodes[5][:m].copy(),
        nodes[6][:m].copy(),
        nodes[7][:m].copy(),
        nodes[8][:m].copy(),
        nodes[9][:m].copy(),
        nodes[10][:m].copy(),
        nodes[15][:m].copy(),
        nodes[16][:m].copy(),
    )
