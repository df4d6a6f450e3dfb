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
    state_candidates,
)

_TIE = 1e-12


@njit
def _state_bins(XT, orders, off, vals, n_bins_max):
    """Bin of every (row position, feature) of a state: int32 ``(m, p)``, the number of the
    feature's candidates strictly below the value (``searchsorted(..., side='left')``),
    from the sorted ``orders`` (one merge pass per feature).  Row positions follow
    ``orders[0]`` (``position[g]`` gives a row's position)."""
    p, m = orders.shape
    n = XT.shape[1]
    position = np.empty(n, dtype=np.int64)
    for r in range(m):
        position[orders[0, r]] = r
    bins = np.empty((m, p), dtype=np.int32)
    for f in range(p):
        start = off[f]
        nc = off[f + 1] - start
        b = 0
        for r in range(m):
            g = orders[f, r]
            v = XT[f, g]
            while b < nc and vals[start + b] < v:
                b += 1
            bins[position[g], f] = b
    return bins


@njit
def _child_depth1(H, lo_hi, n_seg, off, C, K_max, lam, alpha, cnt, L, T, fw, gw, out_bp):
    """Depth-1 optimum of one child of a root shape, from the pair histogram ``H`` (int64
    ``(B + 1, p, B, C)``, cumulative over the root feature's bins: ``H[a]`` counts the rows
    in its bins ``< a``) and the child's ``n_seg`` segments of root bins ``lo_hi``
    (``[lo, hi)`` pairs).  Returns ``(value, feature, K)``: ``feature = -1`` for the leaf;
    the breakpoints' candidate indices go to ``out_bp``."""
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
    if leaf <= lam + alpha or n < 2:
        return best, best_f, best_k
    for f in range(p):
        nc = off[f + 1] - off[f]
        if nc == 0:
            continue
        nb = nc + 1
        for b in range(nb):
            for c in range(C):
                total = 0
                for s in range(n_seg):
                    total += H[lo_hi[s, 1], f, b, c] - H[lo_hi[s, 0], f, b, c]
                cnt[b, c] = total
        counts = cnt[:nb]
        kk = min(K_max, nc)
        if kk == 1:
            e, pos = _best_k1(counts, C, L, T)
            value = lam + alpha + e
            if value < best - _TIE:
                best = value
                best_f = f
                best_k = 1
                out_bp[0] = pos
            continue
        fbest, fcl, fcr, fk = best_alternating(counts, C, kk, lam, alpha, fw, gw)
        if fbest < best - _TIE:
            positions = _dp_backtrack(counts, C, fk, fcl, fcr)
            for i in range(fk):
                out_bp[i] = positions[i]
            best = fbest
            best_f = f
            best_k = fk
    return best, best_f, best_k


@njit
def _best_on_feature(j, y, orders, bins, off, C, K_max, lam, alpha, start_best, result, res_bp):
    """Best root shape on feature ``j`` with exact depth-1 children; ``result`` float64
    ``(6,)`` receives ``(value, K, left feature, left K, right feature, right K)`` when a
    shape beats ``start_best`` (``result[0]`` stays ``inf`` otherwise) and ``res_bp`` int64
    ``(3, K_max)`` the candidate indices of the root's and the children's breakpoints."""
    p, m = orders.shape
    nc_j = off[j + 1] - off[j]
    result[0] = np.inf
    if nc_j == 0:
        return
    n_bins = 1
    for f in range(p):
        if off[f + 1] - off[f] + 1 > n_bins:
            n_bins = off[f + 1] - off[f] + 1
    na = nc_j + 1
    # pair histogram of feature j, then cumulative over j's bins
    H = np.zeros((na + 1, p, n_bins, C), dtype=np.int32)
    for r in range(m):
        a = bins[r, j] + 1
        c = y[orders[0, r]]
        for f in range(p):
            H[a, f, bins[r, f], c] += 1
    for a in range(1, na + 1):
        for f in range(p):
            for b in range(n_bins):
                for c in range(C):
                    H[a, f, b, c] += H[a - 1, f, b, c]
    cnt = np.zeros((n_bins, C), dtype=np.int64)
    L = np.zeros(C, dtype=np.int64)
    T = np.zeros(C, dtype=np.int64)
    fw = np.empty(K_max + 1, dtype=np.float64)
    gw = np.empty(K_max + 1, dtype=np.float64)
    bp_left = np.zeros(K_max, dtype=np.int64)
    bp_right = np.zeros(K_max, dtype=np.int64)
    seg_left = np.zeros((K_max + 1, 2), dtype=np.int64)
    seg_right = np.zeros((K_max + 1, 2), dtype=np.int64)
    comb = np.empty(K_max, dtype=np.int64)
    best = start_best
    for kk in range(1, min(K_max, nc_j) + 1):
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
            cost = lam + alpha * kk
            if cost < best - _TIE:
                v_left, f_left, k_left = _child_depth1(
                    H, seg_left, n_left, off, C, K_max, lam, alpha, cnt, L, T, fw, gw, bp_left
                )
                if cost + v_left < best - _TIE:
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


@njit(parallel=True)
def _best_per_feature(y, orders, bins, off, C, K_max, lam, alpha, leaf, results, res_bps):
    p = orders.shape[0]
    for j in prange(p):
        _best_on_feature(
            j, y, orders, bins, off, C, K_max, lam, alpha, leaf, results[j], res_bps[j]
        )


@njit
def solve_depth2_counting(XT, y, orders, C, leaves2, K_max, lam, alpha, best, feats, ks, bps):
    """Optimum of a data state with two levels left when every state uses this state's
    candidates (``candidate_scope='root'``): exact over every feature ``j``, every subset of
    ``K <= K_max`` of its candidates, and exact depth-1 children over the same candidates.

    ``XT`` float64 ``(p, n)``, ``y`` int64 class codes, ``orders`` int64 ``(p, m)`` the
    state's rows sorted by each feature, ``leaves2`` the root's B (> 0: the candidates are
    the thresholds of a univariate CART with that many leaves, :func:`state_candidates`).
    ``best`` is the incumbent's value (the leaf error at first); when a tree beats it, the
    incumbent ``feats`` int64 ``(3,)`` (feature of the node, of its left and right child,
    -1 = leaf), ``ks`` int64 ``(3,)`` and ``bps`` float64 ``(3, K_max)`` are overwritten in
    place.  Returns ``(best, n_shapes)``: the optimum (``best`` itself when nothing beats
    it) and the number of root shapes.  Cost ``O(m p^2)`` for the pair histograms, then
    ``O(p^2 B^2 C^2 K_max)`` for the shapes, independent of ``m``."""
    p, m = orders.shape
    total = np.zeros(C, dtype=np.int64)
    for r in range(m):
        total[y[orders[0, r]]] += 1
    leaf = float(m - total.max())
    if leaf <= lam + alpha or m < 2:
        return min(best, leaf), 0
    off, vals, _counts = state_candidates(XT, y, orders, C, leaves2)
    n_shapes = 0
    for j in range(p):
        nc = off[j + 1] - off[j]
        c = 1.0
        for kk in range(1, min(K_max, nc) + 1):
            c = c * (nc - kk + 1) / kk
            n_shapes += int(c + 0.5)
    max_nc = 0
    for j in range(p):
        if off[j + 1] - off[j] > max_nc:
            max_nc = off[j + 1] - off[j]
    bins = _state_bins(XT, orders, off, vals, max_nc + 1)
    results = np.full((p, 6), np.inf)
    res_bps = np.zeros((p, 3, K_max), dtype=np.int64)
    start = min(best, leaf)
    _best_per_feature(y, orders, bins, off, C, K_max, lam, alpha, start, results, res_bps)
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
