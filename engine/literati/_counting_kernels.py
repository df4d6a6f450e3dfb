"""numba kernels of Literati's depth-2 counting solver (``candidate_scope='root'``).

With the root's candidate breakpoints shared by every data state, a feature's candidates
cut its values into the same bins everywhere, so a depth-2 problem is a problem on class
counts: for a root shape on feature ``j``, the class counts of its children per bin of
every feature ``f`` are sums, over the bins of ``j`` on each side, of the pair histogram
``H_j[a, f, b, c]`` (rows with ``j`` in bin ``a``, ``f`` in bin ``b`` and class ``c``).
One pass over the rows per feature ``j`` builds ``H_j`` (``O(n p)``), after which every
root shape and every child's depth-1 optimum (the alternating-interval dynamic programme
of :mod:`engine.literati._kernels` over bins) costs only ``O(p B C)`` or so, independent of
``n``: the depth-2 optimum in ``O(n p^2)`` time and ``O(p B^2 C)`` memory per thread, the
idea of MurTree's depth-two solver (Demirovic et al., JMLR 2022) on shape functions.

The candidate space differs from the paper's (``candidate_scope='state'``: every data
state fits its own univariate CART), so the optimum is exact within this space only.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from engine._numba import njit
from engine.literati._kernels import (
    _best_k1,
    _dp_backtrack,
    best_alternating,
    next_combination,
)

_TIE = 1e-12


@njit(parallel=True)
def bin_rows(XT, off, vals):
    """Bin of every (row, feature): int32 ``(n, p)``, the number of the feature's
    candidates ``vals[off[f]:off[f + 1]]`` (sorted) strictly below the value
    (``searchsorted(..., side='left')``), in parallel over the features.  With the root's
    candidates shared by every state, these bins serve every state of the search."""
    p, n = XT.shape
    bins = np.empty((n, p), dtype=np.int32)
    for f in prange(p):
        cands = vals[off[f] : off[f + 1]]
        for g in range(n):
            bins[g, f] = np.searchsorted(cands, XT[f, g], side="left")
    return bins


@njit
def _child_depth1(H, lo_hi, n_seg, off, C, K_max, lam, alpha, cnt, L, T, fw, gw, lbw, out_bp):
    """Depth-1 optimum of one child of a root shape, from the pair histogram ``H`` (int32
    ``(B + 1, p, B, C)``, cumulative over the root feature's bins: ``H[a]`` counts the rows
    in its bins ``< a``) and the child's ``n_seg`` segments of root bins ``lo_hi``
    (``[lo, hi)`` pairs).  Returns ``(value, feature, K)``: ``feature = -1`` for the leaf;
    the breakpoints' candidate indices go to ``out_bp``.

    Two passes: every feature's single-breakpoint optimum (a prefix scan) and its
    *bin-wise bound* (every bin predicting its majority class: no shape on the feature,
    whatever its K, misclassifies fewer rows), then the alternating DP (K >= 2) only on
    the features whose bound ``lambda + alpha + bin-wise errors`` is below the best so far
    (``lbw`` float64 ``(p,)`` work array)."""
    p = H.shape[1]
    # the child's class totals: feature 0's bins summed (every row is in one bin of it)
    for c in range(C):
        T[c] = 0
    nb0 = off[1] - off[0] + 1
    for s in range(n_seg):
        lo = lo_hi[s, 0]
        hi = lo_hi[s, 1]
        for b in range(nb0):
            for c in range(C):
                T[c] += H[hi, 0, b, c] - H[lo, 0, b, c]
    n = 0
    mx = 0
    for c in range(C):
        n += T[c]
        if T[c] > mx:
            mx = T[c]
    leaf = float(n - mx)
    best = leaf
    best_f = -1
    best_k = 0
    best_cl = -1
    best_cr = -1
    best_dp = False  # the winner came from the class-pair DP (its breakpoints: at the end)
    if leaf <= lam + alpha or n < 2:
        return best, best_f, best_k
    any_dp = False
    for f in range(p):
        lbw[f] = np.inf
        nc = off[f + 1] - off[f]
        if nc == 0:
            continue
        nb = nc + 1
        wise = 0
        for b in range(nb):
            tb = 0
            mb = 0
            for c in range(C):
                total = 0
                for s in range(n_seg):
                    total += H[lo_hi[s, 1], f, b, c] - H[lo_hi[s, 0], f, b, c]
                cnt[b, c] = total
                tb += total
                if total > mb:
                    mb = total
            wise += tb - mb
        e, pos = _best_k1(cnt[:nb], C, L, T)
        value = lam + alpha + e
        if value < best - _TIE:
            best = value
            best_f = f
            best_k = 1
            best_dp = False
            out_bp[0] = pos
        if min(K_max, nc) >= 2:
            lbw[f] = lam + alpha + wise
            any_dp = True
    if any_dp:
        for f in range(p):
            if not lbw[f] < best - _TIE:
                continue
            nc = off[f + 1] - off[f]
            nb = nc + 1
            for b in range(nb):
                for c in range(C):
                    total = 0
                    for s in range(n_seg):
                        total += H[lo_hi[s, 1], f, b, c] - H[lo_hi[s, 0], f, b, c]
                    cnt[b, c] = total
            fbest, fcl, fcr, fk = best_alternating(cnt[:nb], C, min(K_max, nc), lam, alpha, fw, gw)
            if fbest < best - _TIE:
                best = fbest
                best_f = f
                best_k = fk
                best_cl = fcl
                best_cr = fcr
                best_dp = True
    if best_dp and best_f >= 0:
        # the breakpoints of the winner only (backtracking allocates: once per child)
        nb = off[best_f + 1] - off[best_f] + 1
        for b in range(nb):
            for c in range(C):
                total = 0
                for s in range(n_seg):
                    total += H[lo_hi[s, 1], best_f, b, c] - H[lo_hi[s, 0], best_f, b, c]
                cnt[b, c] = total
        positions = _dp_backtrack(cnt[:nb], C, best_k, best_cl, best_cr)
        for i in range(best_k):
            out_bp[i] = positions[i]
    return best, best_f, best_k


@njit
def _cell_bound(W, tb, segs, n_seg, C, lr):
    """Lower bound of the depth-1 value of the child made of the bin segments ``segs``
    of the shape's feature: ``min(Err, lr + min_g sum_a W[a, g])`` (see
    :func:`_scan_shapes`)."""
    n = 0
    mx = 0
    for c in range(C):
        total = 0
        for t in range(n_seg):
            for a in range(segs[t, 0], segs[t, 1]):
                total += tb[a, c]
        n += total
        if total > mx:
            mx = total
    leaf = n - mx
    if leaf <= lr:
        return float(leaf)
    best = leaf
    for g in range(W.shape[1]):
        s = 0
        for t in range(n_seg):
            for a in range(segs[t, 0], segs[t, 1]):
                s += W[a, g]
        if s < best:
            best = s
    return float(min(leaf, lr + best))


@njit
def _scan_shapes(H, j, off, C, K_max, lam, alpha, best, result, res_bp, ws_i, ws_f, cnt):
    """Every shape on feature ``j`` (``K <= K_max`` of its candidates) with exact depth-1
    children, from ``H``, the pair histogram of ``j`` (int32 ``(B + 1, p, B, C)``,
    cumulative over ``j``'s bins).  A shape is kept when its value is below ``best``
    (strictly, by more than the tie tolerance): then ``result`` float64 ``(6,)`` receives
    ``(value, K, left feature, left K, right feature, right K)`` and ``res_bp`` int64
    ``(3, K_max)`` the candidate indices of the shape's and the children's breakpoints.
    The right child is solved only when the shape's cost plus the left child's value is
    below ``best``.  Returns the new ``best``.  ``ws_i`` int64 ``(8 + 7 K_max + 2 C)`` and
    ``ws_f`` float64 ``(2 K_max + 2 + p)`` are work arrays; ``cnt`` int64 ``(B, C)``.

    A shape is skipped when its cost plus its children's *cell bounds* reaches ``best``:
    a child's depth-1 value is at least ``min(Err, lambda + alpha + min_g sum_a W[a, g])``
    over the bins ``a`` of ``j`` in the child, ``W[a, g]`` being the errors of the rows in
    bin ``a`` when every (bin of ``j``, bin of ``g``) cell predicts its own majority (no
    split on ``g`` does better on those rows)."""
    p = H.shape[1]
    nc_j = off[j + 1] - off[j]
    if nc_j == 0:
        return best
    na = nc_j + 1
    # work arrays carved from two flat buffers (no allocation per call)
    comb = ws_i[0:K_max]
    bp_left = ws_i[K_max : 2 * K_max]
    bp_right = ws_i[2 * K_max : 3 * K_max]
    seg_left = ws_i[3 * K_max : 5 * K_max + 2].reshape((K_max + 1, 2))
    seg_right = ws_i[5 * K_max + 2 : 7 * K_max + 4].reshape((K_max + 1, 2))
    L = ws_i[7 * K_max + 4 : 7 * K_max + 4 + C]
    T = ws_i[7 * K_max + 4 + C : 7 * K_max + 4 + 2 * C]
    fw = ws_f[0 : K_max + 1]
    gw = ws_f[K_max + 1 : 2 * K_max + 2]
    lbw = ws_f[2 * K_max + 2 : 2 * K_max + 2 + p]
    lr = lam + alpha
    # cell bound: W[a, g] = rows of j's bin a misclassified when every (bin of j, bin of g)
    # cell predicts its majority; a child's depth-1 value is at least
    # min(leaf error, lambda + alpha + min_g sum over its bins of j of W[a, g]) (a split on
    # g errs on each bin a of j at least W[a, g]); class totals per bin of j in ``tb``
    W = np.zeros((na, p), dtype=np.int64)
    tb = np.zeros((na, C), dtype=np.int64)
    for a in range(na):
        for c in range(C):
            total = 0
            for b in range(off[1] - off[0] + 1):
                total += H[a + 1, 0, b, c] - H[a, 0, b, c]
            tb[a, c] = total
        for g in range(p):
            wg = 0
            for b in range(off[g + 1] - off[g] + 1):
                tcell = 0
                mcell = 0
                for c in range(C):
                    v = H[a + 1, g, b, c] - H[a, g, b, c]
                    tcell += v
                    if v > mcell:
                        mcell = v
                wg += tcell - mcell
            W[a, g] = wg
    for kk in range(1, min(K_max, nc_j) + 1):
        cost = lam + alpha * kk
        if not cost < best - _TIE:
            break
        for i in range(kk):
            comb[i] = i
        while True:
            # segments of j's bins: left, right, left, ... (breakpoint i after bin comb[i])
            n_left = 0
            n_right = 0
            lo = 0
            for t in range(kk + 1):
                hi = comb[t] + 1 if t < kk else na
                if t % 2 == 0:
                    seg_left[n_left, 0] = lo
                    seg_left[n_left, 1] = hi
                    n_left += 1
                else:
                    seg_right[n_right, 0] = lo
                    seg_right[n_right, 1] = hi
                    n_right += 1
                lo = hi
            lb_left = _cell_bound(W, tb, seg_left, n_left, C, lr)
            lb_right = _cell_bound(W, tb, seg_right, n_right, C, lr)
            if cost + lb_left + lb_right < best - _TIE:
                v_left, f_left, k_left = _child_depth1(
                    H, seg_left, n_left, off, C, K_max, lam, alpha, cnt, L, T, fw, gw, lbw, bp_left
                )
                if cost + v_left + lb_right < best - _TIE:
                    v_right, f_right, k_right = _child_depth1(
                        H,
                        seg_right,
                        n_right,
                        off,
                        C,
                        K_max,
                        lam,
                        alpha,
                        cnt,
                        L,
                        T,
                        fw,
                        gw,
                        lbw,
                        bp_right,
                    )
                    value = cost + v_left + v_right
                    if value < best - _TIE:
                        best = value
                        result[0] = value
                        result[1] = kk
                        result[2] = f_left
                        result[3] = k_left
                        result[4] = f_right
                        result[5] = k_right
                        for i in range(K_max):
                            res_bp[0, i] = comb[i] if i < kk else 0
                            res_bp[1, i] = bp_left[i] if i < k_left else 0
                            res_bp[2, i] = bp_right[i] if i < k_right else 0
            if not next_combination(comb, kk, nc_j):
                break
    return best


@njit
def _work_arrays(p, n_bins, C, K_max):
    """The work arrays of :func:`_scan_shapes`: ``(ws_i, ws_f, cnt)``."""
    ws_i = np.zeros(7 * K_max + 4 + 2 * C, dtype=np.int64)
    ws_f = np.zeros(2 * K_max + 2 + p, dtype=np.float64)
    cnt = np.zeros((n_bins, C), dtype=np.int64)
    return ws_i, ws_f, cnt


@njit
def _max_bins(off):
    n_bins = 1
    for f in range(off.shape[0] - 1):
        if off[f + 1] - off[f] + 1 > n_bins:
            n_bins = off[f + 1] - off[f] + 1
    return n_bins


@njit
def _best_on_feature(j, y, idx, bins, off, C, K_max, lam, alpha, start_best, result, res_bp, stop):
    """Best root shape on feature ``j`` with exact depth-1 children; ``result`` float64
    ``(6,)`` receives ``(value, K, left feature, left K, right feature, right K)`` when a
    shape beats ``start_best`` (``result[0]`` stays ``inf`` otherwise) and ``res_bp`` int64
    ``(3, K_max)`` the candidate indices of the root's and the children's breakpoints.
    Returns early, with ``result[0] = inf``, once ``stop[0]`` is non-zero (checked every
    4,096 rows of the histogram and before the shape scan)."""
    p = bins.shape[1]
    m = idx.shape[0]
    nc_j = off[j + 1] - off[j]
    result[0] = np.inf
    if nc_j == 0 or stop[0] != 0:
        return
    n_bins = _max_bins(off)
    na = nc_j + 1
    # pair histogram of feature j, then cumulative over j's bins
    H = np.zeros((na + 1, p, n_bins, C), dtype=np.int32)
    for r in range(m):
        if r % 4096 == 4095 and stop[0] != 0:
            return
        g = idx[r]
        a = bins[g, j] + 1
        c = y[g]
        for f in range(p):
            H[a, f, bins[g, f], c] += 1
    for a in range(1, na + 1):
        for f in range(p):
            for b in range(n_bins):
                for c in range(C):
                    H[a, f, b, c] += H[a - 1, f, b, c]
    if stop[0] != 0:
        return
    ws_i, ws_f, cnt = _work_arrays(p, n_bins, C, K_max)
    _scan_shapes(H, j, off, C, K_max, lam, alpha, start_best, result, res_bp, ws_i, ws_f, cnt)


@njit(parallel=True)
def _best_per_feature(y, idx, bins, off, C, K_max, lam, alpha, leaf, results, res_bps, stop):
    p = bins.shape[1]
    for j in prange(p):
        _best_on_feature(
            j, y, idx, bins, off, C, K_max, lam, alpha, leaf, results[j], res_bps[j], stop
        )


@njit
def solve_depth2_counting(
    bins, y, idx, off, vals, C, K_max, lam, alpha, best, feats, ks, bps, stop
):
    """Optimum of a data state with two levels left when every state uses the root's
    candidates (``candidate_scope='root'``): exact over every feature ``j``, every subset of
    ``K <= K_max`` of its candidates, and exact depth-1 children over the same candidates.

    ``bins`` int32 ``(n, p)`` (:func:`bin_rows` of the candidates ``off``, ``vals``: the
    root's, from :func:`state_candidates`), ``y`` int64 class codes ``(n,)``, ``idx`` int64
    the state's rows.  ``best`` is the incumbent's value (the leaf error at first); when a
    tree beats it, the incumbent ``feats`` int64 ``(3,)`` (feature of the node, of its left
    and right child, -1 = leaf), ``ks`` int64 ``(3,)`` and ``bps`` float64 ``(3, K_max)`` are
    overwritten in place.  Returns ``(best, n_shapes)``: the optimum (``best`` itself when
    nothing beats it) and the number of root shapes.  Cost ``O(m p^2)`` for the pair
    histograms, then ``O(p^2 B^2 C^2 K_max)`` for the shapes, independent of ``m``.
    ``stop`` int64 ``(1,)``: the interrupt flag (:func:`solve_depth3_counting`); when it
    was raised during the call, the returned value is that of a complete tree (the best
    over the features finished) but not necessarily the optimum."""
    p = bins.shape[1]
    m = idx.shape[0]
    total = np.zeros(C, dtype=np.int64)
    for r in range(m):
        total[y[idx[r]]] += 1
    leaf = float(m - total.max())
    if leaf <= lam + alpha or m < 2:
        return min(best, leaf), 0
    n_shapes = 0
    for j in range(p):
        nc = off[j + 1] - off[j]
        c = 1.0
        for kk in range(1, min(K_max, nc) + 1):
            c = c * (nc - kk + 1) / kk
            n_shapes += int(c + 0.5)
    results = np.full((p, 6), np.inf)
    res_bps = np.zeros((p, 3, K_max), dtype=np.int64)
    start = min(best, leaf)
    _best_per_feature(y, idx, bins, off, C, K_max, lam, alpha, start, results, res_bps, stop)
    for j in range(p):  # lowest feature first on ties: independent of the threads
        value = results[j, 0]
        if value < best - _TIE:
            best = value
            kk = int(results[j, 1])
            feats[0] = j
            ks[0] = kk
            for i in range(K_max):
                bps[0, i] = vals[off[j] + res_bps[j, 0, i]] if i < kk else 0.0
            for side in range(2):
                f = int(results[j, 2 + 2 * side])
                k = int(results[j, 3 + 2 * side])
                feats[1 + side] = f
                ks[1 + side] = k if f >= 0 else 0
                for i in range(K_max):
                    if f >= 0 and i < k:
                        bps[1 + side, i] = vals[off[f] + res_bps[j, 1 + side, i]]
                    else:
                        bps[1 + side, i] = 0.0
    return best, n_shapes


# ---------------------------------------------------------------------------------------
# depth 3: a triple histogram per root feature, then depth-2 children from class counts
# ---------------------------------------------------------------------------------------

#: Values of the depth-3 result row (:func:`solve_depth3_counting`): the value, then
#: ``(feature, K)`` of the 7 nodes of a depth-3 tree in heap order (node ``i``'s children
#: are ``2 i + 1`` (left) and ``2 i + 2``; feature -1 = a leaf or no node).
D3_RESULT = 15


@njit
def class_bound(tot, C, d, lr):
    """Class-count lower bound of a state with class counts ``tot`` (int64 ``(C,)``) and
    ``d`` levels left, ``lr = lambda + alpha``: a tree of ``L <= min(2^d, c)`` leaves
    predicts at most ``L`` of the ``c`` classes present, misclassifying at least the
    ``c - L`` smallest, and has ``L - 1`` splits of cost >= ``lr`` (the bound
    :meth:`engine.literati.expansion.StateExpansion._class_lb` computes in Python)."""
    vals = np.sort(tot[tot > 0])
    c = vals.shape[0]
    if c <= 1:
        return 0.0
    top = min(c, 1 << min(d, 30))
    best = np.inf
    for leaves in range(1, top + 1):
        s = 0
        for i in range(c - leaves):
            s += vals[i]
        v = (leaves - 1) * lr + s
        if v < best:
            best = v
    return best


@njit
def _child_pairs(T, segs, n_seg, off, C, f, Pf):
    """Pair histogram of feature ``f`` in one child of a root shape on feature ``j`` (the
    child: the rows in ``j``'s bin segments ``segs[:n_seg]``, ``[lo, hi)`` pairs), from
    ``j``'s triple histogram ``T`` (int32 ``(B_j + 2, p, B, p, B, C)``, cumulative over
    ``j``'s bins; only the entries with ``g >= f`` are filled, the others are read
    transposed): ``Pf[a, g, b, c]`` (int32 ``(B + 1, p, B, C)``) counts the child's rows of
    class ``c`` with ``f`` in a bin ``< a`` and ``g`` in bin ``b``, i.e.
    :func:`_scan_shapes`'s ``H`` for ``f``."""
    p = T.shape[1]
    nbf = off[f + 1] - off[f] + 1
    for bf in range(nbf):
        for g in range(p):
            nbg = off[g + 1] - off[g] + 1
            for bg in range(nbg):
                for c in range(C):
                    s = 0
                    if g >= f:
                        for t in range(n_seg):
                            s += T[segs[t, 1], f, bf, g, bg, c] - T[segs[t, 0], f, bf, g, bg, c]
                    else:  # only g >= f is stored: the (g, f) entry
                        for t in range(n_seg):
                            s += T[segs[t, 1], g, bg, f, bf, c] - T[segs[t, 0], g, bg, f, bf, c]
                    Pf[bf + 1, g, bg, c] = Pf[bf, g, bg, c] + s


@njit
def _binwise_errors(T, segs, n_seg, off, C, f):
    """Rows of one child (as in :func:`_child_pairs`) misclassified when every bin of
    ``f`` predicts its own majority class: no shape on ``f`` whose children are leaves
    errs less."""
    wise = 0
    for bf in range(off[f + 1] - off[f] + 1):
        total = 0
        top = 0
        for c in range(C):
            v = 0
            for t in range(n_seg):
                v += T[segs[t, 1], f, bf, f, bf, c] - T[segs[t, 0], f, bf, f, bf, c]
            total += v
            if v > top:
                top = v
        wise += total - top
    return wise


@njit
def _child_totals(T, segs, n_seg, off, C, f, tb):
    """Class totals per bin of ``f`` of one child (as in :func:`_child_pairs`), read from
    the triple histogram's diagonal: ``tb[a, c]`` (int64 ``(B, C)``) the child's rows of
    class ``c`` with ``f`` in bin ``a``."""
    for bf in range(off[f + 1] - off[f] + 1):
        for c in range(C):
            v = 0
            for t in range(n_seg):
                v += T[segs[t, 1], f, bf, f, bf, c] - T[segs[t, 0], f, bf, f, bf, c]
            tb[bf, c] = v


@njit
def _child_cells(T, segs, n_seg, off, C, f, tb, Wp):
    """The cell errors of :func:`_scan_shapes` for one child (as in :func:`_child_pairs`),
    read from the triple histogram without building the child's pair histogram (``tb``:
    its class totals per bin of ``f``, :func:`_child_totals`; a bin of one class has no
    cell errors and is not read): ``Wp[a, g]`` (int64 ``(B + 1, p)``) the prefix sums
    over ``f``'s bins ``< a`` of ``W[a, g]``, the rows of bin ``a`` misclassified when
    every (bin of ``f``, bin of ``g``) cell predicts its own majority (``W`` equals
    :func:`_scan_shapes`'s entry by entry)."""
    p = T.shape[1]
    nbf = off[f + 1] - off[f] + 1
    for g in range(p):
        Wp[0, g] = 0
    for bf in range(nbf):
        total = 0
        top = 0
        for c in range(C):
            total += tb[bf, c]
            if tb[bf, c] > top:
                top = tb[bf, c]
        if total == top:  # one class in the bin (or none): none of its cells errs
            for g in range(p):
                Wp[bf + 1, g] = Wp[bf, g]
            continue
        for g in range(p):
            nbg = off[g + 1] - off[g] + 1
            wg = 0
            for bg in range(nbg):
                tcell = 0
                mcell = 0
                for c in range(C):
                    v = 0
                    if g >= f:
                        for t in range(n_seg):
                            v += T[segs[t, 1], f, bf, g, bg, c] - T[segs[t, 0], f, bf, g, bg, c]
                    else:  # only g >= f is stored: the (g, f) entry
                        for t in range(n_seg):
                            v += T[segs[t, 1], g, bg, f, bf, c] - T[segs[t, 0], g, bg, f, bf, c]
                    tcell += v
                    if v > mcell:
                        mcell = v
                wg += tcell - mcell
            Wp[bf + 1, g] = Wp[bf, g] + wg


@njit
def _side_bound(tb, Wp, lo_hi, n_seg, C, lr, cells):
    """Lower bound of the depth-1 value of the child made of the bin segments ``lo_hi``
    (``[lo, hi)`` pairs) of a shape's feature: ``min(Err, lr)`` when ``cells`` is False,
    else :func:`_cell_bound`'s ``min(Err, lr + min_g sum_a W[a, g])`` from the prefix sums
    ``Wp`` (:func:`_child_cells`)."""
    n = 0
    mx = 0
    for c in range(C):
        total = 0
        for t in range(n_seg):
            for a in range(lo_hi[t, 0], lo_hi[t, 1]):
                total += tb[a, c]
        n += total
        if total > mx:
            mx = total
    leaf = n - mx
    if leaf <= lr or not cells:
        return min(float(leaf), lr)
    best = leaf
    for g in range(Wp.shape[1]):
        s = 0
        for t in range(n_seg):
            s += Wp[lo_hi[t, 1], g] - Wp[lo_hi[t, 0], g]
        if s < best:
            best = s
    return float(min(leaf, lr + best))


@njit
def _shapes_pruned(tb, Wp, nc, C, K_max, lam, alpha, best, cells, comb, seg_left, seg_right):
    """True when every shape on a feature with ``nc`` candidates that :func:`_scan_shapes`
    would consider is skipped by its bound: its cost plus its children's bounds
    (:func:`_side_bound`; with ``cells`` False the weaker ``min(Err, lr)``) reaches
    ``best`` (up to the tie tolerance).  Then the scan would find nothing, and its pair
    histogram need not be built."""
    lr = lam + alpha
    na = nc + 1
    for kk in range(1, min(K_max, nc) + 1):
        cost = lam + alpha * kk
        if not cost < best - _TIE:
            break
        for i in range(kk):
            comb[i] = i
        while True:
            n_left = 0
            n_right = 0
            lo = 0
            for t in range(kk + 1):
                hi = comb[t] + 1 if t < kk else na
                if t % 2 == 0:
                    seg_left[n_left, 0] = lo
                    seg_left[n_left, 1] = hi
                    n_left += 1
                else:
                    seg_right[n_right, 0] = lo
                    seg_right[n_right, 1] = hi
                    n_right += 1
                lo = hi
            lb_left = _side_bound(tb, Wp, seg_left, n_left, C, lr, cells)
            if cost + lb_left < best - _TIE:
                lb_right = _side_bound(tb, Wp, seg_right, n_right, C, lr, cells)
                if cost + lb_left + lb_right < best - _TIE:
                    return False
            if not next_combination(comb, kk, nc):
                break
    return True


@njit
def _depth2_child(
    T, cls, segs, n_seg, off, C, K_max, lam, alpha, budget, floor, P, tot, r6, rbp, out, out_bp, ws
):
    """Depth-2 optimum of one child of a root shape (rows in the root feature's bin
    segments ``segs[:n_seg]``) from the root feature's triple histogram ``T`` and class
    counts per bin ``cls`` (int64 ``(B_j + 2, C)``, cumulative).  Returns the optimum when it
    is below ``budget`` or is the leaf (then ``out`` float64 ``(7,)`` = ``(value, feature,
    K, left feature, left K, right feature, right K)``, feature -1 = a leaf, holds its tree
    and ``out_bp`` int64 ``(3, K_max)`` the candidate indices of its three nodes), else
    ``inf``: the optimum is not below ``budget`` and ``out`` holds no tree of it.

    ``inf``, not ``budget``: the caller adds the children's values to the shape's cost and
    compares the sum with its incumbent; a child's budget is that incumbent minus the
    rest, so a budget returned as a value could round to a sum below the incumbent and
    record a tree whose children are not the ones solved (the bug that had the kernel
    switched off).

    ``floor``: a value the child's optimum is known not to be below (no tree of it is below
    ``floor`` by more than the tie tolerance; from a subset of its rows, see
    :func:`_raise_floor`; ``-inf`` when unknown).  When ``floor`` reaches
    ``min(leaf, budget)`` the solve could find nothing, so its answer (the leaf or
    ``inf``) is returned without solving.

    A feature's pair histogram is built (and its shapes scanned) only when one of its
    shapes passes :func:`_scan_shapes`'s own bounds, checked first from the class counts
    per bin (:func:`_child_totals`) and then with the cell errors (:func:`_child_cells`),
    both read from ``T`` (:func:`_shapes_pruned`): the same shapes are skipped, so the
    answer is the same; on breast_cancer at depth 4 about 98 % of the scans skipped every
    shape."""
    ws_i, ws_f, cnt = ws
    n = 0
    mx = 0
    for c in range(C):
        total = 0
        for t in range(n_seg):
            total += cls[segs[t, 1], c] - cls[segs[t, 0], c]
        tot[c] = total
        n += total
        if total > mx:
            mx = total
    leaf = float(n - mx)
    out[0] = leaf
    out[1] = -1.0
    if leaf <= lam + alpha or n < 2:
        return leaf
    best = min(leaf, budget)
    lr = lam + alpha
    if lr < best - _TIE and floor < best:
        p = P.shape[0]
        n_bins = P.shape[3]
        tb_f = np.zeros((n_bins, C), dtype=np.int64)
        Wp = np.zeros((n_bins + 1, p), dtype=np.int64)
        comb = np.zeros(K_max, dtype=np.int64)
        sl = np.zeros((K_max + 1, 2), dtype=np.int64)
        sr = np.zeros((K_max + 1, 2), dtype=np.int64)
        for f in range(p):
            if off[f + 1] == off[f]:
                continue
            # a shape on f costs lambda + alpha or more, and its two children err at least
            # the bin-wise errors of f between them (or are split, at lambda + alpha more);
            # 1e-9 of slack: the bound may round above a value the scan would compute
            wise = float(_binwise_errors(T, segs, n_seg, off, C, f))
            if not lr + min(wise, lr) - 1e-9 < best - _TIE:
                continue
            # the scan's shape bounds before its pair histogram: first from the class
            # counts per bin of f alone, then with the cell errors (most scans end here)
            _child_totals(T, segs, n_seg, off, C, f, tb_f)
            nc_f = off[f + 1] - off[f]
            if _shapes_pruned(tb_f, Wp, nc_f, C, K_max, lam, alpha, best, False, comb, sl, sr):
                continue
            _child_cells(T, segs, n_seg, off, C, f, tb_f, Wp)
            if _shapes_pruned(tb_f, Wp, nc_f, C, K_max, lam, alpha, best, True, comb, sl, sr):
                continue
            _child_pairs(T, segs, n_seg, off, C, f, P[f])
            r6[0] = np.inf
            value = _scan_shapes(P[f], f, off, C, K_max, lam, alpha, best, r6, rbp, ws_i, ws_f, cnt)
            if r6[0] < np.inf:
                best = value
                out[0] = value
                out[1] = f
                for i in range(1, 6):
                    out[1 + i] = r6[i]
                for s in range(3):
                    for i in range(K_max):
                        out_bp[s, i] = rbp[s, i]
    if out[1] < 0 and not leaf <= budget:
        return np.inf  # nothing below the budget (the leaf is not below it either)
    return out[0]


#: Largest number of bins of the root feature for which :func:`_depth3_on_feature` keeps
#: the floors of its children (an array of ``2 ** bins`` values per thread).
_FLOOR_BINS = 12


def floor_width(off) -> int:
    """Columns of the ``floors`` array of :func:`solve_depth3_counting` for the candidates
    ``off``: ``2 ** W`` with ``W`` the largest number of bins of a feature, or 1 (floors
    not kept) when ``W`` exceeds :data:`_FLOOR_BINS`."""
    widest = int(np.max(np.diff(np.asarray(off)))) + 1 if len(off) > 1 else 1
    return 1 << widest if widest <= _FLOOR_BINS else 1


@njit
def _seg_mask(segs, n_seg):
    """The bins of the root feature in the segments ``segs[:n_seg]`` as a bit mask."""
    mask = 0
    for t in range(n_seg):
        for a in range(segs[t, 0], segs[t, 1]):
            mask |= 1 << a
    return mask


@njit
def _raise_floor(floor, mask, full, value):
    """Record that no tree of the child made of the root feature's bins ``mask`` (and so
    of any child whose bins contain them: it has these rows and more, and a tree's errors
    can only grow with its rows) is below ``value``: ``floor[M] = max(floor[M], value)``
    for every ``M`` with ``mask <= M <= full`` (bit sets; ``floor`` float64
    ``(2 ** bins,)``), the *subset bound* (monotonicity of the optimum)."""
    comp = full ^ mask
    sub = comp
    while True:
        m = mask | sub
        if floor[m] < value:
            floor[m] = value
        if sub == 0:
            break
        sub = (sub - 1) & comp


@njit
def _store_child(out, out_bp, node, result, res_bp, K_max):
    """Copy a child's depth-2 tree (``out``, ``out_bp`` of :func:`_depth2_child`) to the
    heap-ordered nodes ``node``, ``2 node + 1``, ``2 node + 2`` of ``result``/``res_bp``."""
    f = int(out[1])
    nodes = (node, 2 * node + 1, 2 * node + 2)
    for s in range(3):
        i = nodes[s]
        feat = f if s == 0 else (int(out[1 + 2 * s]) if f >= 0 else -1)
        k = int(out[2 + 2 * s]) if feat >= 0 else 0
        result[1 + 2 * i] = feat
        result[2 + 2 * i] = k
        for t in range(K_max):
            res_bp[i, t] = out_bp[s, t] if t < k else 0


@njit
def _triple_histogram(y, order, first, bins, na, n_bins, C, stop):
    """The triple histogram of a root feature ``j`` (int32 ``(na + 1, p, B, p, B, C)``):
    ``T[a, f, b_f, g, b_g, c]`` counts the rows of class ``c`` with ``j`` in a bin ``< a``,
    ``f`` in bin ``b_f`` and ``g`` in bin ``b_g``, filled for ``g >= f`` only.  ``order``:
    the rows sorted by ``j``'s bin, ``first[a]`` the first of bin ``a``.  One slab per bin
    of ``j``, each starting as a copy of the one before.  Returns early (an incomplete
    histogram, which the caller discards) once ``stop[0]`` is non-zero (checked per bin)."""
    p = bins.shape[1]
    T = np.zeros((na + 1, p, n_bins, p, n_bins, C), dtype=np.int32)
    flat = T.reshape((na + 1, p * n_bins * p * n_bins * C))
    row = np.empty(p, dtype=np.int64)
    for a in range(na):
        if stop[0] != 0:
            return T
        flat[a + 1, :] = flat[a, :]
        for r in range(first[a], first[a + 1]):
            g0 = order[r]
            c = y[g0]
            for f in range(p):
                row[f] = bins[g0, f]
            for f in range(p):
                bf = row[f]
                for g in range(f, p):  # symmetric: the pairs g >= f only
                    T[a + 1, f, bf, g, row[g], c] += 1
    return T


@njit
def _depth3_on_feature(
    j, y, idx, bins, off, C, K_max, lam, alpha, start_best, shared, result, res_bp, floor, stop
):
    """Best depth-3 tree whose root shape is on feature ``j``, over the root's candidates:
    ``result`` float64 ``(D3_RESULT,)`` and ``res_bp`` int64 ``(7, K_max)`` (candidate
    indices per heap node) receive it when its value is below ``start_best`` and below
    ``shared[0]`` (the best value any thread found so far; read and lowered without a lock:
    a stale read only prunes less) plus the tie tolerance; ``result[0]`` stays ``inf``
    otherwise.

    One pass over the rows (sorted by ``j``'s bin) builds ``j``'s triple histogram
    ``T[a, f, b_f, g, b_g, c]`` for ``g >= f`` (:func:`_triple_histogram`, ``O(m p^2 / 2)``
    time, ``O(B^3 p^2 C)`` memory; only once a shape's bounds are below the incumbent);
    each root shape's two children are then solved from class counts
    (:func:`_depth2_child`), independent of ``m``.  Upper bounds passed down: a
    shape is skipped when its cost plus its children's class-count bounds reaches the
    incumbent, the left child is solved with the budget ``incumbent - cost - bound of the
    right child`` and the right child with ``incumbent - cost - left child``.

    ``floor`` float64 ``(2 ** W,)`` with ``W >= j``'s bins (in and out; shorter, or more
    than :data:`_FLOOR_BINS` bins: not used): ``floor[M]`` is a value no tree of the
    state's rows with ``j`` in the bins ``M`` (bit set) is below by more than the tie
    tolerance, kept a maximum over subsets (:func:`_raise_floor`).  The caller may fill it
    from earlier calls (``-inf`` when nothing is known); the kernel raises it with every
    child it solves and uses it as the children's lower bounds (the subset bound).

    ``stop`` int64 ``(1,)``: when it is non-zero (set by another thread, e.g. at the time
    limit) the scan returns before its next root shape (or its histogram's next bin).  What
    it reported until then stays valid: ``result`` holds a complete tree of its value or
    ``inf``, and every floor was raised by a child solved to the end; but ``inf`` no longer
    means that nothing is below ``start_best`` (the caller must not conclude a bound)."""
    p = bins.shape[1]
    m = idx.shape[0]
    nc_j = off[j + 1] - off[j]
    result[0] = np.inf
    if nc_j == 0:
        return
    n_bins = _max_bins(off)
    na = nc_j + 1
    lr = lam + alpha
    # the rows by j's bin (counting sort)
    first = np.zeros(na + 1, dtype=np.int64)
    for r in range(m):
        first[bins[idx[r], j] + 1] += 1
    for a in range(na):
        first[a + 1] += first[a]
    fill = first[:na].copy()
    order = np.empty(m, dtype=np.int64)
    for r in range(m):
        a = bins[idx[r], j]
        order[fill[a]] = idx[r]
        fill[a] += 1
    # class counts per bin of j (cumulative); the triple histogram is built when the first
    # shape's bounds do not reach the incumbent (a tight budget often prunes every shape)
    cls = np.zeros((na + 1, C), dtype=np.int64)
    for a in range(na):
        for c in range(C):
            cls[a + 1, c] = cls[a, c]
        for r in range(first[a], first[a + 1]):
            cls[a + 1, y[order[r]]] += 1
    T = np.zeros((1, 1, 1, 1, 1, 1), dtype=np.int32)
    P = np.zeros((1, 1, 1, 1, 1), dtype=np.int32)
    built = False
    tot = np.zeros(C, dtype=np.int64)
    r6 = np.zeros(6, dtype=np.float64)
    rbp = np.zeros((3, K_max), dtype=np.int64)
    out_l = np.zeros(7, dtype=np.float64)
    out_r = np.zeros(7, dtype=np.float64)
    bp_l = np.zeros((3, K_max), dtype=np.int64)
    bp_r = np.zeros((3, K_max), dtype=np.int64)
    ws = _work_arrays(p, n_bins, C, K_max)
    seg_left = np.zeros((K_max + 1, 2), dtype=np.int64)
    seg_right = np.zeros((K_max + 1, 2), dtype=np.int64)
    comb = np.empty(K_max, dtype=np.int64)
    # subset bounds: floor[M] = a value no tree of the child made of j's bins M is below
    use_floor = na <= _FLOOR_BINS and floor.shape[0] >= 1 << na
    full = (1 << na) - 1 if use_floor else 0
    best = start_best
    for kk in range(1, min(K_max, nc_j) + 1):
        cost = lam + alpha * kk
        for i in range(kk):
            comb[i] = i
        while True:
            if stop[0] != 0:
                return  # interrupted: result and floor hold only what was finished
            bound = min(best - _TIE, shared[0] + _TIE)
            if not cost < bound:
                break
            n_left = 0
            n_right = 0
            lo = 0
            for t in range(kk + 1):
                hi = comb[t] + 1 if t < kk else na
                if t % 2 == 0:
                    seg_left[n_left, 0] = lo
                    seg_left[n_left, 1] = hi
                    n_left += 1
                else:
                    seg_right[n_right, 0] = lo
                    seg_right[n_right, 1] = hi
                    n_right += 1
                lo = hi
            for c in range(C):
                total = 0
                for t in range(n_right):
                    total += cls[seg_right[t, 1], c] - cls[seg_right[t, 0], c]
                tot[c] = total
            lb_right = class_bound(tot, C, 2, lr)
            for c in range(C):
                total = 0
                for t in range(n_left):
                    total += cls[seg_left[t, 1], c] - cls[seg_left[t, 0], c]
                tot[c] = total
            lb_left = class_bound(tot, C, 2, lr)
            floor_left = -np.inf
            floor_right = -np.inf
            if use_floor:
                mask_left = _seg_mask(seg_left, n_left)
                floor_left = floor[mask_left]
                floor_right = floor[full ^ mask_left]
                lb_left = max(lb_left, floor_left)
                lb_right = max(lb_right, floor_right)
            if cost + lb_left + lb_right < bound:
                if not built:
                    T = _triple_histogram(y, order, first, bins, na, n_bins, C, stop)
                    if stop[0] != 0:
                        return
                    P = np.zeros((p, n_bins + 1, p, n_bins, C), dtype=np.int32)
                    built = True
                budget_left = bound - cost - lb_right
                v_left = _depth2_child(
                    T,
                    cls,
                    seg_left,
                    n_left,
                    off,
                    C,
                    K_max,
                    lam,
                    alpha,
                    budget_left,
                    floor_left,
                    P,
                    tot,
                    r6,
                    rbp,
                    out_l,
                    bp_l,
                    ws,
                )
                if use_floor:  # the optimum, or nothing below the budget
                    _raise_floor(floor, mask_left, full, min(v_left, budget_left))
                if cost + v_left + lb_right < bound:
                    budget_right = bound - cost - v_left
                    v_right = _depth2_child(
                        T,
                        cls,
                        seg_right,
                        n_right,
                        off,
                        C,
                        K_max,
                        lam,
                        alpha,
                        budget_right,
                        floor_right,
                        P,
                        tot,
                        r6,
                        rbp,
                        out_r,
                        bp_r,
                        ws,
                    )
                    if use_floor:
                        _raise_floor(floor, full ^ mask_left, full, min(v_right, budget_right))
                    value = cost + v_left + v_right
                    if value < bound:
                        best = value
                        if value < shared[0]:
                            shared[0] = value
                        result[0] = value
                        result[1] = j
                        result[2] = kk
                        for t in range(K_max):
                            res_bp[0, t] = comb[t] if t < kk else 0
                        _store_child(out_l, bp_l, 1, result, res_bp, K_max)
                        _store_child(out_r, bp_r, 2, result, res_bp, K_max)
            if not next_combination(comb, kk, nc_j):
                break


@njit(parallel=True)
def solve_depth3_counting(
    bins, y, idx, off, C, K_max, lam, alpha, best, features, results, res_bps, floors, stop
):
    """Depth-3 optimum of a data state over the root's candidates
    (``candidate_scope='root'``), for the root shapes on ``features`` (int64 ``(q,)``; one
    thread per feature): row ``t`` of ``results`` float64 ``(q, D3_RESULT)`` and
    ``res_bps`` int64 ``(q, 7, K_max)`` receives the best tree with its root on
    ``features[t]`` when it beats ``best`` (``results[t, 0] = inf`` otherwise; see
    :func:`_depth3_on_feature`: only a tree within the tie tolerance of the best over all of
    ``features`` is guaranteed to be reported).  ``bins`` int32 ``(n, p)`` are
    :func:`bin_rows` of the candidates ``off``; ``idx`` int64 the state's rows.
    ``floors`` float64 ``(q, 2 ** W)`` (``W`` the largest number of bins of a feature; one
    column when it exceeds :data:`_FLOOR_BINS`): row ``t`` is the ``floor`` of
    :func:`_depth3_on_feature` for ``features[t]``, read and raised in place (``-inf``:
    nothing known; see :func:`floor_width`).  ``stop`` int64 ``(1,)``: the interrupt flag
    (``0``: run to the end; another thread may set it during the call, then every thread
    returns within one root shape and the call is *interrupted*: the rows of ``results``
    hold complete trees of their values or ``inf`` without meaning "nothing below
    ``best``", and ``floors`` stay valid; see :class:`engine.literati.interrupt.KernelStop`).
    Time ``O(q m p^2)`` for the histograms plus a
    part independent of ``m``; memory per thread ``O(B^3 p^2 C)`` int32 counts."""
    shared = np.full(1, best)
    for t in prange(features.shape[0]):
        _depth3_on_feature(
            features[t],
            y,
            idx,
            bins,
            off,
            C,
            K_max,
            lam,
            alpha,
            best,
            shared,
            results[t],
            res_bps[t],
            floors[t],
            stop,
        )
