"""numba kernels of CART's growth: one call grows the whole tree (:func:`grow_tree`),
depth-first or best-first, partitioning the presorted rows of every feature at each split."""

from __future__ import annotations

import numpy as np

from engine._numba import njit
from engine.cart._candidate_kernels import DICS_PAPER
from engine.cart._node_kernels import (
    _children_stats,
    _dics_remove,
    _heap_pop,
    _heap_push,
    _link,
    _mark_left,
    _new_nodes,
    _new_search_scratch,
    _node_capacity,
    _partition,
    _split_node,
)
from engine.cart._split_kernels import _copy_row, _node_stats, _stats_weight
from engine.tree import TREE_LEAF, TREE_UNDEFINED


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
    L = _max_categories(is_cat, n_cats)
    cap = _node_capacity(n, min_samples_leaf, max_depth, max_leaf_nodes)
    nodes = _new_nodes(cap, S, L)
    scratch = _new_search_scratch(n, p, k, S, L, dict_offsets)
    dictionary = _new_dictionary(dict_offsets, dict_values)
    children = _new_children(n, S)
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
    return _trimmed(nodes, m)


@njit
def _max_categories(is_cat, n_cats):
    """The most category codes of a categorical feature (1 without any): the width of a
    node's left category set."""
    L = 1
    for f in range(is_cat.shape[0]):
        if is_cat[f] and n_cats[f] > L:
            L = n_cats[f]
    return L


@njit
def _new_dictionary(dict_offsets, dict_values):
    """The DICS dictionary's arrays for one growth: offsets and values (CSR), then whether
    each entry is alive, the node that sampled it (stamp) and the sampling pool."""
    D = dict_values.shape[0]
    return (
        dict_offsets,
        dict_values,
        np.ones(D, dtype=np.uint8),  # alive
        np.full(D, -1, dtype=np.int64),  # sampled at this node (stamp)
        np.empty(D, dtype=np.int64),  # sampling pool
    )


@njit
def _new_children(n, S):
    """Scratch of a split for ``n`` rows and ``S`` statistics: the rows going left, both
    children's statistics and the partition's scratch (rows, values)."""
    return (
        np.zeros(n, dtype=np.uint8),  # goes left
        np.zeros(S, dtype=np.float64),  # left statistics
        np.zeros(S, dtype=np.float64),  # right statistics
        np.empty(max(n, 1), dtype=np.int64),  # partition scratch (rows)
        np.empty(max(n, 1), dtype=np.float64),  # partition scratch (values)
    )


@njit
def _trimmed(nodes, m):
    """:func:`grow_tree`'s result: the node arrays it returns, cut to the ``m`` nodes."""
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
