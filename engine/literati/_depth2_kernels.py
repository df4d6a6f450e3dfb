"""numba kernels of Literati's exact depth-2 solver (docs/spec.md section 1): the optimum of a
data state with two levels left, over its candidate shapes, evaluated in resumable blocks
(in parallel over shapes on large states).  The depth-1 solver, routing and candidates it
builds on are in :mod:`engine.literati._kernels`."""

from __future__ import annotations

import numpy as np
from numba import prange

from engine._numba import njit
from engine.literati._kernels import (
    _d1_core,
    _d1_workspace,
    next_combination,
    route_left,
    state_candidates,
)

# ---------------------------------------------------------------------------------------
# depth-2 solver (exact over the candidates, with an optional budget)
# ---------------------------------------------------------------------------------------


@njit
def _gini_proxy(cnt_l, cnt_r, C):
    nl = 0.0
    nr = 0.0
    sl = 0.0
    sr = 0.0
    for c in range(C):
        nl += cnt_l[c]
        nr += cnt_r[c]
        sl += cnt_l[c] * cnt_l[c]
        sr += cnt_r[c] * cnt_r[c]
    g = 0.0
    if nl > 0:
        g += nl - sl / nl
    if nr > 0:
        g += nr - sr / nr
    return g


#: Shapes of a two-level state evaluated at once by :func:`_d2_block` (in parallel over
#: the threads; the incumbent used for skipping is the one from before the block).
_D2_BLOCK = 16

#: States with fewer than this many (feature, row) pairs are evaluated on one thread
#: (:func:`_d2_block_seq`): a block's work there is below the cost of a parallel region.
#: Measured on 2 cores (recorded calls of breast_cancer and digits D = 4 replayed both
#: ways, docs/benchmarks.md): below 16,000 pairs the two threads took more than twice the
#: one thread's CPU time, so the parallel block could not be faster even on an idle machine.
_D2_PAR_MIN = 16000


@njit
def _d2_work(XT, m, C, leaves1, K_max, p):
    """Work arrays of :func:`_d2_shape` for a state of ``m`` rows and ``p`` features."""
    return (
        np.empty(K_max, dtype=np.float64),
        np.zeros(XT.shape[1], dtype=np.bool_),
        np.empty(p * m, dtype=np.int64),
        np.empty(p * m, dtype=np.int64),
        _d1_workspace(m, C, leaves1, K_max, p),
        np.zeros(K_max, dtype=np.float64),
        np.zeros(K_max, dtype=np.float64),
    )


@njit
def _d2_shape(
    XT,
    y,
    orders,
    C,
    leaves1,
    K_max,
    lam,
    alpha,
    thr,
    q,
    t,
    sh_j,
    sh_k,
    sh_c,
    sh_el,
    sh_er,
    off,
    vals,
    blb,
    brb,
    res_v,
    res_full,
    res_n,
    res_first,
    res_j,
    res_k,
    res_b,
    res_c,
    work,
):
    """Evaluate shape ``q`` of a two-level state against the threshold ``thr`` and write
    its results at index ``t`` of the ``res_*`` arrays (see :func:`_d2_block`), with the
    work arrays ``work`` (from :func:`_d2_work`): concurrent calls need their own.
    ``blb[t]``, ``brb[t]``: admissible lower bounds of the left and right child."""
    p, m = orders.shape
    u, side, olb, orb, ws, b1, b2 = work
    j = sh_j[q]
    kk = sh_k[q]
    cost = lam + alpha * kk
    bl = blb[t]
    br = brb[t]
    res_full[t] = False
    res_n[t] = 0
    if cost + bl + br >= thr:
        res_v[t] = cost + bl + br
        return
    u = u[:kk]
    for i in range(kk):
        u[i] = vals[off[j] + sh_c[q, i]]
    nleft = route_left(XT, orders[0], j, u, side)
    ol = olb[: p * nleft].reshape((p, nleft))
    orr = orb[: p * (m - nleft)].reshape((p, m - nleft))
    for fj in range(p):
        a = 0
        b = 0
        for r in range(m):
            g = orders[fj, r]
            if side[g]:
                ol[fj, a] = g
                a += 1
            else:
                orr[fj, b] = g
                b += 1
    # the child with the larger leaf error first: it is the likelier to exceed
    first_left = sh_el[q] >= sh_er[q]
    res_first[t] = first_left
    res_n[t] = 1
    # each child's solve gets the value at which the shape reaches ``thr`` as its cap
    # (the upper bound passed down): it may stop there with a lower bound, not exact
    rest = br if first_left else bl
    cap = thr - cost - rest
    if first_left:
        v1, j1, k1, exact1 = _d1_core(XT, y, ol, C, leaves1, K_max, lam, alpha, ws, b1, cap)
    else:
        v1, j1, k1, exact1 = _d1_core(XT, y, orr, C, leaves1, K_max, lam, alpha, ws, b1, cap)
    res_c[t, 0] = v1
    if not exact1 or cost + v1 + rest >= thr:
        res_v[t] = cost + v1 + rest
        return
    res_n[t] = 2
    cap = thr - cost - v1
    if first_left:
        v2, j2, k2, exact2 = _d1_core(XT, y, orr, C, leaves1, K_max, lam, alpha, ws, b2, cap)
    else:
        v2, j2, k2, exact2 = _d1_core(XT, y, ol, C, leaves1, K_max, lam, alpha, ws, b2, cap)
    res_c[t, 1] = v2
    res_v[t] = cost + v1 + v2
    if not exact2:  # a lower bound of the shape's value, at least thr: skipped
        return
    res_full[t] = True
    res_j[t, 0] = j1
    res_k[t, 0] = k1
    res_j[t, 1] = j2
    res_k[t, 1] = k2
    for i in range(K_max):
        res_b[t, 0, i] = b1[i]
        res_b[t, 1, i] = b2[i]


@njit(parallel=True)
def _d2_block(
    XT,
    y,
    orders,
    C,
    leaves1,
    K_max,
    lam,
    alpha,
    thr,
    qs,
    sh_j,
    sh_k,
    sh_c,
    sh_el,
    sh_er,
    off,
    vals,
    blb,
    brb,
    res_v,
    res_full,
    res_n,
    res_first,
    res_j,
    res_k,
    res_b,
    res_c,
):
    """Evaluate shapes ``qs`` of a two-level state in parallel (``prange``) against the
    threshold ``thr`` (``min(best, budget)`` before the block): for shape ``t`` writes
    ``res_v[t]`` (its exact value when ``res_full[t]``, else a lower bound >= ``thr`` (up to
    rounding: a child solve stopped at its cap) that
    made it skip), ``res_n[t]`` depth-1 solves done, ``res_first[t]`` (the left child was
    solved first), the children's features ``res_j[t]``, breakpoint counts ``res_k[t]`` and
    breakpoints ``res_b[t]`` and values ``res_c[t]`` (first-solved child at index 0), from
    the children's lower bounds ``blb``, ``brb`` (per block position).  Each iteration has
    its own work arrays, so the results do not depend on the threads."""
    p, m = orders.shape
    for t in prange(qs.shape[0]):
        work = _d2_work(XT, m, C, leaves1, K_max, p)
        _d2_shape(
            XT,
            y,
            orders,
            C,
            leaves1,
            K_max,
            lam,
            alpha,
            thr,
            qs[t],
            t,
            sh_j,
            sh_k,
            sh_c,
            sh_el,
            sh_er,
            off,
            vals,
            blb,
            brb,
            res_v,
            res_full,
            res_n,
            res_first,
            res_j,
            res_k,
            res_b,
            res_c,
            work,
        )


@njit
def _d2_block_seq(
    XT,
    y,
    orders,
    C,
    leaves1,
    K_max,
    lam,
    alpha,
    thr,
    qs,
    sh_j,
    sh_k,
    sh_c,
    sh_el,
    sh_er,
    off,
    vals,
    blb,
    brb,
    res_v,
    res_full,
    res_n,
    res_first,
    res_j,
    res_k,
    res_b,
    res_c,
):
    """:func:`_d2_block` on one thread, for small states: there the start-up of a
    parallel region costs more than the block's work (and, when another process holds a
    core, it waits for that core: iris D = 3 with every midpoint took 6.5 s instead of
    0.1 s on a loaded two-core machine)."""
    p, m = orders.shape
    work = _d2_work(XT, m, C, leaves1, K_max, p)  # one set for the whole block
    for t in range(qs.shape[0]):
        _d2_shape(
            XT,
            y,
            orders,
            C,
            leaves1,
            K_max,
            lam,
            alpha,
            thr,
            qs[t],
            t,
            sh_j,
            sh_k,
            sh_c,
            sh_el,
            sh_er,
            off,
            vals,
            blb,
            brb,
            res_v,
            res_full,
            res_n,
            res_first,
            res_j,
            res_k,
            res_b,
            res_c,
            work,
        )


@njit
def _enumerate_shapes(p, off, counts, C, K_max):
    """Every shape of a state (feature ``j``, ``K <= K_max`` of its candidates, from the
    candidates' bin class ``counts``): ``(sh_j, sh_k, sh_c, sh_el, sh_er, sh_g)`` -- the
    feature, the number of breakpoints, the candidate indices ``(n_shapes, K_max)``, the
    left and right children's leaf errors and the weighted Gini proxy that orders them."""
    # enumerate the shapes: feature, subset (flat), children's leaf errors, proxy
    n_shapes = 0
    for j in range(p):
        nc = off[j + 1] - off[j]
        c = 1.0
        for kk in range(1, min(K_max, nc) + 1):
            c = c * (nc - kk + 1) / kk
            n_shapes += int(c + 0.5)
    sh_j = np.empty(n_shapes, dtype=np.int64)
    sh_k = np.empty(n_shapes, dtype=np.int64)
    sh_c = np.empty((n_shapes, K_max), dtype=np.int64)
    sh_el = np.empty(n_shapes, dtype=np.float64)
    sh_er = np.empty(n_shapes, dtype=np.float64)
    sh_g = np.empty(n_shapes, dtype=np.float64)
    comb = np.empty(K_max, dtype=np.int64)
    cl = np.zeros(C, dtype=np.int64)
    cr = np.zeros(C, dtype=np.int64)
    # per-feature prefix sums of the bin class counts: a shape's children are sums over
    # its alternating segments, O(K C) each instead of a pass over every bin
    pre = np.zeros((off[p] + 2 * p, C), dtype=np.int64)
    q = 0
    for j in range(p):
        nc = off[j + 1] - off[j]
        base = off[j] + j
        pb = off[j] + 2 * j  # pre[pb + b] = class counts of bins 0..b-1 of feature j
        for b in range(nc + 1):
            for c in range(C):
                pre[pb + b + 1, c] = pre[pb + b, c] + counts[base + b, c]
        for kk in range(1, min(K_max, nc) + 1):
            for i in range(kk):
                comb[i] = i
            while True:
                for c in range(C):
                    cl[c] = 0
                    cr[c] = 0
                lo = 0  # first bin of the current segment
                for t in range(kk + 1):
                    hi = comb[t] + 1 if t < kk else nc + 1  # one past its last bin
                    if t % 2 == 0:
                        for c in range(C):
                            cl[c] += pre[pb + hi, c] - pre[pb + lo, c]
                    else:
                        for c in range(C):
                            cr[c] += pre[pb + hi, c] - pre[pb + lo, c]
                    lo = hi
                sh_j[q] = j
                sh_k[q] = kk
                for i in range(kk):
                    sh_c[q, i] = comb[i]
                sh_el[q] = cl.sum() - cl.max()
                sh_er[q] = cr.sum() - cr.max()
                sh_g[q] = _gini_proxy(cl, cr, C)
                q += 1
                if not next_combination(comb, kk, nc):
                    break
    return sh_j, sh_k, sh_c, sh_el, sh_er, sh_g


@njit
def _rows_before_bins(counts, n_bins, C):
    """Rows in bins ``[0, b)`` over all features (``n_bins + 1`` prefix sums of the bins'
    class ``counts``)."""
    gpre = np.zeros(n_bins + 1, dtype=np.int64)
    for b in range(n_bins):
        tb = 0
        for c in range(C):
            tb += counts[b, c]
        gpre[b + 1] = gpre[b] + tb
    return gpre


@njit
def _children_bounds(
    block, sh_j, sh_k, sh_c, sh_el, sh_er, lr, sim, off, gpre, kv_l, kv_r, blb, brb
):
    """Lower bounds ``blb`` / ``brb`` on the left and right children's values of the shapes
    ``block``: their leaf errors capped at ``lam + alpha`` (``lr``), raised for a
    single-breakpoint shape (``sim``) by the similarity bound from the children of the same
    feature solved earlier (``kv_l`` / ``kv_r``, -1 = not yet) less the rows between the two
    breakpoints (``gpre``)."""
    for t in range(block.shape[0]):
        q = block[t]
        bl = sh_el[q] if sh_el[q] <= lr else lr
        br = sh_er[q] if sh_er[q] <= lr else lr
        if sim and sh_k[q] == 1:
            j = sh_j[q]
            i = sh_c[q, 0]
            base = off[j] + j
            for i2 in range(off[j + 1] - off[j]):
                vl = kv_l[off[j] + i2]
                if vl >= 0.0:
                    dl = gpre[base + i2 + 1] - gpre[base + i + 1] if i2 > i else 0
                    if vl - dl > bl:
                        bl = vl - dl
                vr = kv_r[off[j] + i2]
                if vr >= 0.0:
                    dr = gpre[base + i + 1] - gpre[base + i2 + 1] if i2 < i else 0
                    if vr - dr > br:
                        br = vr - dr
        blb[t] = bl
        brb[t] = br


@njit
def _rest_bound(rest, sh_k, sh_el, sh_er, lam, alpha):
    """Least base bound ``lam + alpha K + min(Err_L, lam + alpha) + min(Err_R, lam + alpha)``
    of the shapes ``rest`` not scanned yet (``inf`` for none)."""
    lr = lam + alpha
    lb_rest = np.inf
    for q in rest:
        bl = sh_el[q] if sh_el[q] <= lr else lr
        br = sh_er[q] if sh_er[q] <= lr else lr
        v = lam + alpha * sh_k[q] + bl + br
        if v < lb_rest:
            lb_rest = v
    return lb_rest


@njit
def _new_block_results(blk, K_max):
    """What a block of ``blk`` shapes returns (:func:`_d2_block`): per shape its value,
    whether it was solved in full, the children solved, which side was solved first, the
    children's features, breakpoint counts, breakpoints and values."""
    return (
        np.empty(blk, dtype=np.float64),
        np.zeros(blk, dtype=np.bool_),
        np.zeros(blk, dtype=np.int64),
        np.zeros(blk, dtype=np.bool_),
        np.empty((blk, 2), dtype=np.int64),
        np.empty((blk, 2), dtype=np.int64),
        np.zeros((blk, 2, K_max), dtype=np.float64),
        np.zeros((blk, 2), dtype=np.float64),
    )


@njit
def _eval_block(
    par,
    XT,
    y,
    orders,
    C,
    leaves1,
    K_max,
    lam,
    alpha,
    thr,
    block,
    sh_j,
    sh_k,
    sh_c,
    sh_el,
    sh_er,
    off,
    vals,
    blb,
    brb,
    res,
):
    """Evaluate the shapes ``block`` into the ``res_*`` arrays: in parallel
    (:func:`_d2_block`) when ``par``, else on one thread (:func:`_d2_block_seq`), with the
    same results."""
    res_v, res_full, res_n, res_first, res_j, res_k, res_b, res_c = res
    if par:
        _d2_block(
            XT,
            y,
            orders,
            C,
            leaves1,
            K_max,
            lam,
            alpha,
            thr,
            block,
            sh_j,
            sh_k,
            sh_c,
            sh_el,
            sh_er,
            off,
            vals,
            blb,
            brb,
            res_v,
            res_full,
            res_n,
            res_first,
            res_j,
            res_k,
            res_b,
            res_c,
        )
    else:
        _d2_block_seq(
            XT,
            y,
            orders,
            C,
            leaves1,
            K_max,
            lam,
            alpha,
            thr,
            block,
            sh_j,
            sh_k,
            sh_c,
            sh_el,
            sh_er,
            off,
            vals,
            blb,
            brb,
            res_v,
            res_full,
            res_n,
            res_first,
            res_j,
            res_k,
            res_b,
            res_c,
        )


@njit
def _reduce_block(
    block,
    res,
    sh_j,
    sh_k,
    sh_c,
    off,
    vals,
    sim,
    kv_l,
    kv_r,
    budget,
    best,
    lb_skip,
    K_max,
    feats,
    ks,
    bps,
):
    """Fold the results of the shapes ``block`` into the scan, in scan order (deterministic,
    equal to the sequential scan's optimum): the children solved for the similarity bound
    (``kv_l`` / ``kv_r``), a better incumbent (``feats`` / ``ks`` / ``bps`` updated in
    place) or the least bound of the skipped shapes.  Returns ``(best, lb_skip, n_solves)``."""
    res_v, res_full, res_n, res_first, res_j, res_k, res_b, res_c = res
    n_solves = 0
    for t in range(block.shape[0]):
        q = block[t]
        n_solves += res_n[t]
        if sim and sh_k[q] == 1 and res_n[t] >= 1:
            at = off[sh_j[q]] + sh_c[q, 0]
            for w in range(res_n[t]):
                if res_first[t] == (w == 0):
                    kv_l[at] = res_c[t, w]
                else:
                    kv_r[at] = res_c[t, w]
        v = res_v[t]
        if res_full[t] and v < budget and v < best - 1e-12:
            best = v
            j = sh_j[q]
            kk = sh_k[q]
            feats[0] = j
            ks[0] = kk
            for i in range(kk):
                bps[0, i] = vals[off[j] + sh_c[q, i]]
            sl = 1 if res_first[t] else 2
            sr = 3 - sl
            feats[sl] = res_j[t, 0]
            ks[sl] = res_k[t, 0]
            feats[sr] = res_j[t, 1]
            ks[sr] = res_k[t, 1]
            for i in range(K_max):
                bps[sl, i] = res_b[t, 0, i] if i < res_k[t, 0] else 0.0
                bps[sr, i] = res_b[t, 1, i] if i < res_k[t, 1] else 0.0
        elif v < lb_skip:
            lb_skip = v
    return best, lb_skip, n_solves


@njit
def solve_depth2(
    XT,
    y,
    orders,
    C,
    leaves2,
    leaves1,
    K_max,
    lam,
    alpha,
    budget,
    start,
    max_evals,
    best,
    lb_skip,
    feats,
    ks,
    bps,
    par_min,
):
    """Optimum of a data state with two levels left, within its candidates (resumable).

    Candidates of the state come from :func:`state_candidates` with ``leaves2``; each
    child (one level left) is solved by the depth-1 DP with its own candidates
    (``leaves1``).  Every feature ``j`` and every subset of ``K <= K_max`` candidates is a
    shape; shapes are tried in a fixed order (weighted gini of their children), and a shape
    is skipped as soon as ``lam + alpha K + V(L) + V(R)`` (with ``min(Err, lam + alpha)``
    for a child not solved yet) reaches ``min(best, budget)``.  Shapes are evaluated in
    blocks of :data:`_D2_BLOCK` in parallel (:func:`_d2_block`, skipping against the ``best``
    from before the block) and reduced in scan order, so ``best`` and the incumbent are
    those of a one-by-one scan.  States with ``p * m < par_min`` (features x rows) are
    evaluated on one thread (:func:`_d2_block_seq`; the search passes
    :data:`_D2_PAR_MIN`), with the same results.

    The scan starts at position ``start`` of that order and stops at the end of the first
    block in which the count of depth-1 solves reaches ``max_evals``; ``best`` (value of
    the incumbent, the leaf error at first),
    ``lb_skip`` (least bound of the shapes skipped so far, ``inf`` at first) and the
    incumbent ``feats`` int64 ``(3,)`` (split feature of the node, its left and right child,
    -1 = leaf), ``ks`` int64 ``(3,)`` (numbers of breakpoints) and ``bps`` float64
    ``(3, K_max)`` (breakpoints) carry the state between calls (the arrays are updated in
    place).

    Returns ``(best, lb_skip, next, lb_rest, n_shapes, n_solves)``: the optimum is at
    least ``min(best, lb_skip, lb_rest)`` (``lb_rest``: least base bound of the shapes not
    scanned yet); the scan is complete when ``next == n_shapes``; ``n_solves`` depth-1
    solves were done.
    """
    p, m = orders.shape
    lr = lam + alpha
    tot = np.zeros(C, dtype=np.int64)
    for r in range(m):
        tot[y[orders[0, r]]] += 1
    leaf = float(m - tot.max())
    if leaf <= lr or m < 2:
        return leaf, np.inf, 0, np.inf, 0, 0
    off, vals, counts = state_candidates(XT, y, orders, C, leaves2)
    sh_j, sh_k, sh_c, sh_el, sh_er, sh_g = _enumerate_shapes(p, off, counts, C, K_max)
    n_shapes = sh_j.shape[0]
    order = np.argsort(sh_g, kind="mergesort")
    # ``lb_skip`` carries over from the earlier calls of this scan: resetting it here lost the
    # bounds of the shapes skipped in earlier chunks (an inadmissible bound once resumed)
    evals = 0
    oi = start
    blk = _D2_BLOCK
    par = p * m >= par_min
    res = _new_block_results(blk, K_max)
    blb = np.empty(blk, dtype=np.float64)
    brb = np.empty(blk, dtype=np.float64)
    # similarity bound between single-breakpoint shapes of one feature (children solved
    # over every midpoint only): the depth-1 optimum is monotone in the row set and drops
    # by at most one per removed row, so a child solved earlier bounds the children of
    # the other breakpoints by its value minus the rows between the two breakpoints
    sim = leaves1 <= 0
    gpre = _rows_before_bins(counts, off[p] + p, C)  # rows in bins [0, b), all features
    kv_l = np.full(max(off[p], 1), -1.0)  # known left / right child value of (j, {i})
    kv_r = np.full(max(off[p], 1), -1.0)
    while oi < n_shapes and evals < max_evals:
        nq = min(blk, n_shapes - oi)
        thr = best if best < budget else budget
        _children_bounds(
            order[oi : oi + nq],
            sh_j,
            sh_k,
            sh_c,
            sh_el,
            sh_er,
            lr,
            sim,
            off,
            gpre,
            kv_l,
            kv_r,
            blb,
            brb,
        )
        _eval_block(
            par,
            XT,
            y,
            orders,
            C,
            leaves1,
            K_max,
            lam,
            alpha,
            thr,
            order[oi : oi + nq],
            sh_j,
            sh_k,
            sh_c,
            sh_el,
            sh_er,
            off,
            vals,
            blb,
            brb,
            res,
        )
        best, lb_skip, n_solves = _reduce_block(
            order[oi : oi + nq],
            res,
            sh_j,
            sh_k,
            sh_c,
            off,
            vals,
            sim,
            kv_l,
            kv_r,
            budget,
            best,
            lb_skip,
            K_max,
            feats,
            ks,
            bps,
        )
        evals += n_solves
        oi += nq
    lb_rest = _rest_bound(order[oi:], sh_k, sh_el, sh_er, lam, alpha)
    return best, lb_skip, oi, lb_rest, n_shapes, evals
