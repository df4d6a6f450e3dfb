"""numba kernel of the greedy shape tree (docs/spec.md section 1's "greedy shape tree" baseline).

:func:`best_shape` picks the split of one node: the shape function (feature ``j``, ``K``
sorted breakpoints among the node's candidates, alternating sides starting with left)
whose two children have the least weighted gini impurity.  The candidates and the class
counts of their bins come from :func:`engine.literati._kernels.state_candidates`, exactly
as the AO* search computes them for the same data state.
"""

from __future__ import annotations

import numpy as np

from engine._numba import njit
from engine.literati._kernels import next_combination


@njit
def n_shapes(nc, k_max):
    """Number of shapes on one feature with ``nc`` candidates: ``sum_{k=1..k_max} C(nc, k)``
    (float64, so huge counts do not overflow)."""
    total = 0.0
    c = 1.0
    for k in range(1, min(k_max, nc) + 1):
        c = c * (nc - k + 1) / k
        total += c
    return total


@njit
def best_shape(off, counts, C, k_max, max_shapes):
    """Least weighted-gini shape of one node over its candidates.

    ``off`` int64 ``(p + 1,)`` and ``counts`` int64 ``(n_bins_total, C)``: the candidate
    offsets and bin class counts of :func:`state_candidates` (bin ``b`` of feature ``j`` is
    row ``off[j] + j + b``; candidate ``i`` separates bins ``i`` and ``i + 1``).  Every feature
    ``j`` and every subset of ``K <= K'`` of its candidates is scored by
    ``sum_c L_c^2 / n_L + sum_c R_c^2 / n_R`` (maximised; equivalent to the least
    ``n_L gini_L + n_R gini_R``), where bins before the first breakpoint, between the second
    and third, ... go left.  ``K' = k_max`` unless the node has more than ``max_shapes``
    shapes in total: then ``K'`` is the largest value (at least 1) within that count.

    Ties (within a relative 1e-12) go to the lowest ``j``, then the fewest breakpoints,
    then the lexicographically smallest subset.  Returns ``(j, K, comb, score)``: ``comb``
    int64 ``(k_max,)`` candidate indices (first ``K`` used); ``j = -1`` when no feature has
    a candidate.
    """
    p = off.shape[0] - 1
    kk_max = k_max
    while kk_max > 1:
        tot = 0.0
        for j in range(p):
            tot += n_shapes(off[j + 1] - off[j], kk_max)
        if tot <= max_shapes:
            break
        kk_max -= 1
    max_nb = 1
    for j in range(p):
        if off[j + 1] - off[j] + 1 > max_nb:
            max_nb = off[j + 1] - off[j] + 1
    cum = np.zeros((max_nb + 1, C), dtype=np.int64)
    comb = np.zeros(k_max, dtype=np.int64)
    best_comb = np.zeros(k_max, dtype=np.int64)
    bound = np.zeros(k_max + 2, dtype=np.int64)
    left = np.zeros(C, dtype=np.int64)
    best = -1.0
    bj = -1
    bk = 0
    for j in range(p):
        nc = off[j + 1] - off[j]
        if nc == 0:
            continue
        nb = nc + 1
        base = off[j] + j
        for c in range(C):
            cum[0, c] = 0
        for b in range(nb):
            for c in range(C):
                cum[b + 1, c] = cum[b, c] + counts[base + b, c]
        n = 0
        for c in range(C):
            n += cum[nb, c]
        for kk in range(1, min(kk_max, nc) + 1):
            for i in range(kk):
                comb[i] = i
            while True:
                # segment boundaries in bins: 0, comb[0] + 1, ..., comb[kk - 1] + 1, nb
                bound[0] = 0
                for i in range(kk):
                    bound[i + 1] = comb[i] + 1
                bound[kk + 1] = nb
                for c in range(C):
                    left[c] = 0
                for t in range(0, kk + 1, 2):
                    for c in range(C):
                        left[c] += cum[bound[t + 1], c] - cum[bound[t], c]
                nl = 0
                sl = 0.0
                sr = 0.0
                for c in range(C):
                    nl += left[c]
                    r = cum[nb, c] - left[c]
                    sl += float(left[c]) * left[c]
                    sr += float(r) * r
                nr = n - nl
                if nl > 0 and nr > 0:
                    v = sl / nl + sr / nr
                    if bj < 0 or v > best + 1e-12 * best:
                        best = v
                        bj = j
                        bk = kk
                        for i in range(kk):
                            best_comb[i] = comb[i]
                # next subset in lexicographic order
                if not next_combination(comb, kk, nc):
                    break
    return bj, bk, best_comb, best
