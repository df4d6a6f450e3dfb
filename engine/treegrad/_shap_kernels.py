"""numba kernels of TreeGrad-Shap on the walk tables: one forward pass over the pre-order
node arrays of the packed model (:mod:`engine.treegrad._kernels` describes it) per row,
:func:`walk_tables` precomputing what the pass needs, :func:`shap_rows` a block of rows.
"""

from __future__ import annotations

import numpy as np

from engine._numba import njit

# ---------------------------------------------------------------------------------------
# TreeGrad-Shap on the walk tables: one forward pass over the pre-order node arrays
# ---------------------------------------------------------------------------------------
#
# The packed nodes are in depth-first pre-order, so a traversal is a loop over the node
# ids: entering node ``u`` at depth ``d`` first closes every open edge at depth >= d (the
# subtrees of earlier siblings), deepest first.  What the stack-based ``_tree_diag``
# recomputes per node from ``parent``/``feat``/``last`` is structural and precomputed once
# per model in two tables (``walk_tables``):
#
# * int64 ``(n_nodes, 5)``: depth, feature of the edge into the node (the parent's split),
#   depth of the nearest ancestor edge on the same feature (``max_depth + 1``, a "dummy"
#   scratch row whose gamma and inverse factor are 1, when there is none), parent, flags
#   (``IS_LEFT``: the node is its parent's left child; ``IS_LEAF``);
# * float64 ``(n_nodes, 3)``: the parent's threshold, ``ratio``, ``lv``.
#
# Leaves are entered and closed in one step: with B the leaf alone, the edge's
# contribution ``(g - 1) H_v / (1 - t + t g)`` is ``(g - 1) lv * prefix(d - 1) / factor(a)``
# (no division).  Internal edges store ``1 / (1 - t + t g)`` when entered and use it when
# closed and when a deeper edge on the same feature replaces their factor.

#: Columns of the int64 walk table.
W_DEPTH = 0
W_FEAT = 1
W_PREV = 2
W_PARENT = 3
W_FLAGS = 4
#: Columns of the float64 walk table.
W_THR = 0
W_RATIO = 1
W_LV = 2
#: Bits of the ``W_FLAGS`` column.
IS_LEFT = 1
IS_LEAF = 2
#: Samples the block kernel explains together (times Q lanes of the innermost loops).
BLOCK_ROWS = 16


@njit
def walk_tables(left, feat, parent, thr, ratio, lv, ints, floats):
    """Fill the walk tables (see above) of pre-order packed nodes.

    ``ints`` int64 ``(n_nodes, 5)``, ``floats`` float64 ``(n_nodes, 3)`` are written.
    Returns ``(max_depth, max_path_features)``: the deepest node's depth and the largest
    number of distinct features on a root-to-leaf path (0 for single-leaf trees).
    """
    n = left.shape[0]
    max_depth = 0
    for u in range(n):
        p = parent[u]
        d = 0 if p < 0 else ints[p, W_DEPTH] + 1
        ints[u, W_DEPTH] = d
        if d > max_depth:
            max_depth = d
    dummy = max_depth + 1
    path_feat = np.empty(max_depth + 2, dtype=np.int64)
    distinct = np.zeros(max_depth + 2, dtype=np.int64)
    max_features = 0
    for u in range(n):
        p = parent[u]
        d = ints[u, W_DEPTH]
        flags = IS_LEAF if left[u] < 0 else 0
        ints[u, W_PARENT] = p
        floats[u, W_RATIO] = ratio[u]
        floats[u, W_LV] = lv[u]
        if p < 0:
            ints[u, W_FEAT] = -1
            ints[u, W_PREV] = dummy
            floats[u, W_THR] = 0.0
            distinct[0] = 0
        else:
            i = feat[p]
            if left[p] == u:
                flags |= IS_LEFT
            a = dummy
            for k in range(d - 1, 0, -1):
                if path_feat[k] == i:
                    a = k
                    break
            path_feat[d] = i
            distinct[d] = distinct[d - 1] + (1 if a == dummy else 0)
            ints[u, W_FEAT] = i
            ints[u, W_PREV] = a
            floats[u, W_THR] = thr[p]
        ints[u, W_FLAGS] = flags
        if left[u] < 0 and distinct[d] > max_features:
            max_features = distinct[d]
    return max_depth, max_features


@njit(error_model="numpy")
def _shap_row(offs, ints, floats, x, gl, plain, t, omt, D, acc, fb, gam, pa, pf, sp, sub, ss, inv):
    """One sample: add ``(g - 1) / (1 - t_q + t_q g) * (leaves' H below)`` per edge to
    ``acc[feature, q]`` ((n_features, Q), unweighted) and every tree's fbar(t_q 1) to
    ``fb[q]``.  Scratch by depth: ``gam``, ``pa``, ``pf`` ``(D + 2,)``, ``sp``, ``sub``,
    ``ss``, ``inv`` ``(D + 2, Q)`` with ``gam[D + 1] = inv[D + 1] = 1``."""
    Q = t.shape[0]
    for tr in range(offs.shape[0] - 1):
        r0 = offs[tr]
        r1 = offs[tr + 1]
        if ints[r0, W_FLAGS] & IS_LEAF:
            fb_leaf = floats[r0, W_LV]
            for q in range(Q):
                fb[q] += fb_leaf
            continue
        for q in range(Q):
            sp[0, q] = 1.0
            sub[0, q] = 0.0
        cur = 0  # deepest open internal edge
        for u in range(r0 + 1, r1 + 1):
            d = ints[u, W_DEPTH] if u < r1 else 1
            while cur >= d:
                i = pf[cur]
                gm1 = gam[cur] - 1.0
                a = pa[cur]
                for q in range(Q):
                    tot = sub[cur, q]
                    acc[i, q] += gm1 * (tot + ss[cur, q]) * inv[cur, q]
                    sub[cur - 1, q] += tot
                    ss[a, q] -= tot
                cur -= 1
            if u == r1:
                break
            i = ints[u, W_FEAT]
            a = ints[u, W_PREV]
            flags = ints[u, W_FLAGS]
            if plain:
                goes = x[i] <= floats[u, W_THR]
            else:
                goes = gl[ints[u, W_PARENT]] == 1
            take = np.float64(goes == ((flags & IS_LEFT) != 0))  # 1.0 or 0.0, no branch
            g = floats[u, W_RATIO] * gam[a] * take
            if flags & IS_LEAF:
                v = floats[u, W_LV]
                gm1 = g - 1.0
                for q in range(Q):
                    base = sp[d - 1, q] * inv[a, q] * v
                    acc[i, q] += gm1 * base
                    tot = base * (omt[q] + t[q] * g)
                    sub[d - 1, q] += tot
                    ss[a, q] -= tot
            else:
                for q in range(Q):
                    f = omt[q] + t[q] * g
                    sp[d, q] = sp[d - 1, q] * f * inv[a, q]
                    inv[d, q] = 1.0 / f
                    ss[d, q] = 0.0
                    sub[d, q] = 0.0
                gam[d] = g
                pa[d] = a
                pf[d] = i
                cur = d
        for q in range(Q):
            fb[q] += sub[0, q]


@njit(error_model="numpy")
def _shap_block(
    offs, ints, floats, X, GL, lo, nr, plain, t, omt, D, acc, fb, gam, pa, pf,
    sp, sub, ss, inv, gm1, tl, ol, g, gl,
):  # fmt: skip
    """:func:`_shap_row` for the ``nr`` samples ``lo .. lo + nr - 1`` at once: lane
    ``k = q * nr + r`` holds quadrature node ``q`` of sample ``r``, so every node's table
    entry is read once for the block and each step is one loop over ``Q * nr`` lanes.
    ``acc`` ``(n_features, lanes)``, ``fb`` ``(lanes,)``, ``gam`` ``(D + 2, nr)``; ``sp``,
    ``sub``, ``ss``, ``inv`` and ``gm1`` (``g - 1`` of the open edges) ``(D + 2, lanes)``;
    ``tl``, ``ol`` (t and 1 - t by lane), ``gl`` (g by lane) ``(lanes,)``, ``g`` ``(nr,)``.
    Arrays may be larger than needed; only the first ``Q * nr`` lanes are used."""
    Q = t.shape[0]
    NL = Q * nr
    for q in range(Q):
        for r in range(nr):
            tl[q * nr + r] = t[q]
            ol[q * nr + r] = omt[q]
    for r in range(nr):
        gam[D + 1, r] = 1.0
    for k in range(NL):
        inv[D + 1, k] = 1.0
    for tr in range(offs.shape[0] - 1):
        r0 = offs[tr]
        r1 = offs[tr + 1]
        if ints[r0, W_FLAGS] & IS_LEAF:
            fb_leaf = floats[r0, W_LV]
            for k in range(NL):
                fb[k] += fb_leaf
            continue
        for k in range(NL):
            sp[0, k] = 1.0
            sub[0, k] = 0.0
        cur = 0
        for u in range(r0 + 1, r1 + 1):
            d = ints[u, W_DEPTH] if u < r1 else 1
            while cur >= d:
                i = pf[cur]
                a = pa[cur]
                for k in range(NL):
                    tot = sub[cur, k]
                    acc[i, k] += gm1[cur, k] * (tot + ss[cur, k]) * inv[cur, k]
                    sub[cur - 1, k] += tot
                    ss[a, k] -= tot
                cur -= 1
            if u == r1:
                break
            i = ints[u, W_FEAT]
            a = ints[u, W_PREV]
            flags = ints[u, W_FLAGS]
            left_child = (flags & IS_LEFT) != 0
            ratio = floats[u, W_RATIO]
            if plain:
                thr = floats[u, W_THR]
                for r in range(nr):
                    take = np.float64((X[lo + r, i] <= thr) == left_child)
                    g[r] = ratio * gam[a, r] * take
            else:
                p = ints[u, W_PARENT]
                for r in range(nr):
                    take = np.float64((GL[lo + r, p] == 1) == left_child)
                    g[r] = ratio * gam[a, r] * take
            for q in range(Q):
                for r in range(nr):
                    gl[q * nr + r] = g[r]
            if flags & IS_LEAF:
                v = floats[u, W_LV]
                for k in range(NL):
                    base = sp[d - 1, k] * inv[a, k] * v
                    acc[i, k] += (gl[k] - 1.0) * base
                    tot = base * (ol[k] + tl[k] * gl[k])
                    sub[d - 1, k] += tot
                    ss[a, k] -= tot
            else:
                for k in range(NL):
                    f = ol[k] + tl[k] * gl[k]
                    sp[d, k] = sp[d - 1, k] * f * inv[a, k]
                    inv[d, k] = 1.0 / f
                    gm1[d, k] = gl[k] - 1.0
                    ss[d, k] = 0.0
                    sub[d, k] = 0.0
                for r in range(nr):
                    gam[d, r] = g[r]
                pa[d] = a
                pf[d] = i
                cur = d
        for k in range(NL):
            fb[k] += sub[0, k]


@njit(error_model="numpy")
def _shap_one(offs, ints, floats, X, GL, row, plain, t, omt, wq, D, out, fb_out):
    """Sample ``row`` alone with :func:`_shap_row` (its own scratch)."""
    nf = out.shape[1]
    Q = t.shape[0]
    E = D + 2
    gam = np.ones(E)
    pa = np.zeros(E, dtype=np.int64)
    pf = np.zeros(E, dtype=np.int64)
    sp = np.ones((E, Q))
    sub = np.zeros((E, Q))
    ss = np.zeros((E, Q))
    inv = np.ones((E, Q))
    acc = np.zeros((nf, Q))
    fb = np.zeros(Q)
    gl = GL[row] if not plain else np.zeros(1, dtype=np.uint8)
    _shap_row(
        offs, ints, floats, X[row], gl, plain, t, omt, D, acc, fb, gam, pa, pf, sp, sub, ss, inv
    )
    for j in range(nf):
        s = 0.0
        for q in range(Q):
            s += wq[q] * acc[j, q]
        out[row, j] = s
    for q in range(Q):
        fb_out[row, q] = fb[q]


@njit(error_model="numpy")
def shap_rows(c0, c1, offs, ints, floats, X, GL, plain, t, omt, wq, D, out, fb_out):
    """TreeGrad-Shap / weighted Banzhaf / gradient at ``t 1`` for the samples of blocks
    ``c0 .. c1 - 1`` (``BLOCK_ROWS`` samples each, the last one shorter; a block of one or
    two samples runs sample by sample): ``out[r, i] = sum_q wq[q] d_i fbar_r(t[q] 1)`` and
    ``fb_out[r, q] = fbar_r(t[q] 1)`` (no offset).

    ``X`` float64 ``(m, n_features)``, finite (see :func:`count_nonfinite`); ``t`` in (0, 1)
    so no factor is zero; ``GL`` uint8 ``(m, n_nodes)`` (goes left) is read only when not
    ``plain`` (set splits), else may be ``(0, 0)``.  O(n_nodes * Q) per sample, scratch
    O(max_depth * Q * BLOCK_ROWS).  Releases the GIL: disjoint block ranges may run in
    parallel threads (the API's thread pool) and write disjoint rows of ``out``.
    """
    m = X.shape[0]
    nf = out.shape[1]
    Q = t.shape[0]
    R = BLOCK_ROWS
    need = (c1 - c0 > 1) or (min(m, c0 * R + R) - c0 * R >= 3)
    E = D + 2 if need else 0
    NL = Q * R if need else 0
    gam = np.ones((E, R))
    pa = np.zeros(E, dtype=np.int64)
    pf = np.zeros(E, dtype=np.int64)
    sp = np.ones((E, NL))
    sub = np.zeros((E, NL))
    ss = np.zeros((E, NL))
    inv = np.ones((E, NL))
    gm1 = np.zeros((E, NL))
    acc = np.zeros((nf if need else 0, NL))
    fb = np.zeros(NL)
    tl = np.empty(NL)
    ol = np.empty(NL)
    gl = np.empty(NL)
    g = np.empty(R)
    for c in range(c0, c1):
        lo = c * R
        nr = min(m, lo + R) - lo
        if nr < 3:
            for row in range(lo, lo + nr):
                _shap_one(offs, ints, floats, X, GL, row, plain, t, omt, wq, D, out, fb_out)
            continue
        acc[:] = 0.0
        fb[:] = 0.0
        _shap_block(
            offs, ints, floats, X, GL, lo, nr, plain, t, omt, D, acc, fb, gam, pa, pf,
            sp, sub, ss, inv, gm1, tl, ol, g, gl,
        )  # fmt: skip
        for r in range(nr):
            for j in range(nf):
                s = 0.0
                for q in range(Q):
                    s += wq[q] * acc[j, q * nr + r]
                out[lo + r, j] = s
            for q in range(Q):
                fb_out[lo + r, q] = fb[q * nr + r]
