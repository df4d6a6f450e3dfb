"""numba kernels of Literati's lookahead CART (docs/spec.md section 1): the ordering
heuristic V~ of a state (:func:`cart_value`) and of a chunk of shapes
(:func:`lookahead_shapes`).  Conventions as in :mod:`engine.literati._kernels`.
"""

from __future__ import annotations

import numpy as np

from engine._numba import njit
from engine.literati._kernels import route_left


@njit
def cart_value(XT, y, orders, C, depth, cost, mark):
    """Regularised loss of a greedy (gini, every threshold) CART of depth ``depth``.

    ``orders`` (p, m) is modified (partitioned in place); ``mark`` bool ``(n,)`` scratch,
    all False on entry and exit.  Value = min over prunings: leaf error or
    ``cost + value(left) + value(right)`` bottom-up (the SPEC's V~)."""
    p, m = orders.shape
    if m == 0:
        return 0.0
    cap = 1
    for _ in range(depth + 1):
        cap *= 2
    ns = np.empty(cap, dtype=np.int64)
    ne = np.empty(cap, dtype=np.int64)
    nd = np.empty(cap, dtype=np.int64)
    nl = np.full(cap, -1, dtype=np.int64)
    nerr = np.empty(cap, dtype=np.float64)
    tmp = np.empty(m, dtype=np.int64)
    L = np.zeros(C, dtype=np.int64)
    T = np.zeros(C, dtype=np.int64)
    ns[0] = 0
    ne[0] = m
    nd[0] = depth
    count = 1
    i = 0
    while i < count:
        s = ns[i]
        e = ne[i]
        n = e - s
        for c in range(C):
            T[c] = 0
        for r in range(s, e):
            T[y[orders[0, r]]] += 1
        mx = 0
        sqT = 0.0
        for c in range(C):
            sqT += T[c] * T[c]
            if T[c] > mx:
                mx = T[c]
        err = float(n - mx)
        nerr[i] = err
        if nd[i] > 0 and err > cost and err > 0:
            best = -1.0
            bf = -1
            bpos = -1
            for fj in range(p):
                for c in range(C):
                    L[c] = 0
                sqL = 0.0
                sqR = sqT
                for r in range(s, e - 1):
                    g = orders[fj, r]
                    c = y[g]
                    sqL += 2.0 * L[c] + 1.0
                    sqR -= 2.0 * (T[c] - L[c]) - 1.0
                    L[c] += 1
                    if XT[fj, g] < XT[fj, orders[fj, r + 1]]:
                        k = r - s + 1
                        v = sqL / k + sqR / (n - k)
                        if v > best:
                            best = v
                            bf = fj
                            bpos = r
            if bf >= 0:
                for r in range(s, bpos + 1):
                    mark[orders[bf, r]] = True
                nleft = bpos + 1 - s
                for fj in range(p):
                    a = s
                    b = 0
                    for r in range(s, e):
                        g = orders[fj, r]
                        if mark[g]:
                            orders[fj, a] = g
                            a += 1
                        else:
                            tmp[b] = g
                            b += 1
                    for r in range(b):
                        orders[fj, a + r] = tmp[r]
                for r in range(s, s + nleft):
                    mark[orders[0, r]] = False
                nl[i] = count
                ns[count] = s
                ne[count] = s + nleft
                nd[count] = nd[i] - 1
                ns[count + 1] = s + nleft
                ne[count + 1] = e
                nd[count + 1] = nd[i] - 1
                count += 2
        i += 1
    val = np.empty(count, dtype=np.float64)
    for i in range(count - 1, -1, -1):
        if nl[i] < 0:
            val[i] = nerr[i]
        else:
            v = cost + val[nl[i]] + val[nl[i] + 1]
            val[i] = v if v < nerr[i] else nerr[i]
    return val[0]


@njit
def lookahead_shapes(XT, y, orders, C, depth, cost, feats, bp_off, bp_val, mark, side):
    """V~ of the two children of shapes ``q`` of one data state.

    ``orders`` (p, m): the state's orders; shape ``q`` splits on ``feats[q]`` with
    breakpoints ``bp_val[bp_off[q]:bp_off[q + 1]]``; ``depth`` = children's remaining
    depth.  Returns float64 ``(S, 2)``: lookahead-CART loss (``depth >= 1``) or leaf error
    (``depth == 0``) of the left and right child.  ``mark``, ``side``: bool ``(n,)``
    scratch."""
    S = feats.shape[0]
    p, m = orders.shape
    out = np.empty((S, 2), dtype=np.float64)
    flat_l = np.empty(p * m, dtype=np.int64)
    flat_r = np.empty(p * m, dtype=np.int64)
    cnt = np.zeros(C, dtype=np.int64)
    for q in range(S):
        j = feats[q]
        u = bp_val[bp_off[q] : bp_off[q + 1]]
        nleft = route_left(XT, orders[0], j, u, side)
        if depth == 0:
            for h in range(2):
                for c in range(C):
                    cnt[c] = 0
                tot = 0
                for r in range(m):
                    g = orders[0, r]
                    if side[g] == (h == 0):
                        cnt[y[g]] += 1
                        tot += 1
                out[q, h] = tot - cnt.max() if tot > 0 else 0.0
            continue
        ol = flat_l[: p * nleft].reshape((p, nleft))
        orr = flat_r[: p * (m - nleft)].reshape((p, m - nleft))
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
        out[q, 0] = cart_value(XT, y, ol, C, depth, cost, mark)
        out[q, 1] = cart_value(XT, y, orr, C, depth, cost, mark)
    return out
