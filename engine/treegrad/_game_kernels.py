"""numba kernels of TreeGrad's games: the path-dependent game ``f_x(S)`` of many coalitions
(:func:`game_batch`) and TreeProb semivalues from path polynomials (:func:`treeprob_one`).

They work on the packed model described in :mod:`engine.treegrad._kernels`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from engine._numba import njit


@njit
def _game_one(offs, left, right, feat, cover, rv, goleft, mask, stack, wstack):
    """f_x(S) of the path-dependent game for one subset (``mask`` uint8 per feature)."""
    val = 0.0
    for t in range(offs.shape[0] - 1):
        top = 0
        stack[0] = offs[t]
        wstack[0] = 1.0
        top = 1
        while top > 0:
            top -= 1
            u = stack[top]
            w = wstack[top]
            if left[u] < 0:
                val += w * rv[u]
                continue
            if mask[feat[u]] != 0:
                stack[top] = left[u] if goleft[u] == 1 else right[u]
                wstack[top] = w
                top += 1
            else:
                c = cover[u]
                stack[top] = left[u]
                wstack[top] = w * cover[left[u]] / c if c > 0 else 0.0
                top += 1
                stack[top] = right[u]
                wstack[top] = w * cover[right[u]] / c if c > 0 else 0.0
                top += 1
    return val


@njit
def _game_batch_chunk(c, nch, offs, left, right, feat, cover, rv, GL, masks, out):
    """One chunk (samples c, c + nch, ...) of :func:`game_batch`."""
    m = GL.shape[0]
    nn = left.shape[0]
    K = masks.shape[1]
    mm = masks.shape[0]
    stack = np.empty(nn + 2, dtype=np.int64)
    wstack = np.empty(nn + 2)
    for r in range(c, m, nch):
        mr = r if mm > 1 else 0
        for k in range(K):
            out[r, k] = _game_one(
                offs, left, right, feat, cover, rv, GL[r], masks[mr, k], stack, wstack
            )


@njit(parallel=True)
def game_batch(offs, left, right, feat, cover, rv, GL, masks, out, nchunks):
    """``out[r, k] = f_{x_r}(S_k)``; ``masks`` uint8 ``(mm, K, n_features)``, ``mm`` in
    ``{1, m}`` (shared or per-sample subsets)."""
    m = GL.shape[0]
    nch = min(m, nchunks)
    for c in prange(nch):
        _game_batch_chunk(c, nch, offs, left, right, feat, cover, rv, GL, masks, out)


@njit
def game_batch_serial(offs, left, right, feat, cover, rv, GL, masks, out):
    """:func:`game_batch` in the calling thread (no parallel launch; for one sample)."""
    if GL.shape[0] > 0:
        _game_batch_chunk(0, 1, offs, left, right, feat, cover, rv, GL, masks, out)


@njit
def treeprob_one(offs, left, right, feat, parent, ratio, lv, goleft, nodes, coef, nf, out):
    """TreeProb: semivalue via path polynomials evaluated at ``nodes`` (complex ``(D,)``).

    For each leaf ``v`` with distinct path features ``F`` (|F| = d <= D) and merged gammas,
    feature ``i`` in ``F`` gets ``lv (gamma_i - 1) Re(sum_q coef_q P_i(y_q))`` with
    ``P_i(y) = prod_{j in F, j != i} (1 + gamma_j y) * (1 + y)^(D - d)``; ``coef`` maps
    values at the nodes to the weighted coefficient sum (``conj(V)^T w / D`` for roots of
    unity, ``V^-T w`` for Chebyshev nodes).  Prefix/suffix products, no division: O(L D^2).
    """
    D = nodes.shape[0]
    nn = left.shape[0]
    acc = np.full(nf, -1.0)
    fl = np.empty(nf, dtype=np.int64)
    pre = np.empty((nf + 1, D), dtype=np.complex128)
    suf = np.empty((nf + 1, D), dtype=np.complex128)
    lift = np.empty(D, dtype=np.complex128)
    for v in range(nn):
        if left[v] >= 0 or lv[v] == 0.0:
            continue
        d = 0
        u = v
        while parent[u] >= 0:
            p = parent[u]
            i = feat[p]
            goes = goleft[p] == 1
            act = goes if u == left[p] else not goes
            g = ratio[u] if act else 0.0
            if acc[i] < 0.0:
                acc[i] = g
                fl[d] = i
                d += 1
            else:
                acc[i] *= g
            u = p
        for q in range(D):
            pre[0, q] = 1.0
            suf[d, q] = 1.0
            lift[q] = (1.0 + nodes[q]) ** (D - d)
        for k in range(d):
            gk = acc[fl[k]]
            for q in range(D):
                pre[k + 1, q] = pre[k, q] * (1.0 + gk * nodes[q])
        for k in range(d - 1, -1, -1):
            gk = acc[fl[k]]
            for q in range(D):
                suf[k, q] = suf[k + 1, q] * (1.0 + gk * nodes[q])
        for k in range(d):
            i = fl[k]
            tot = 0.0
            for q in range(D):
                tot += (coef[q] * pre[k, q] * suf[k + 1, q] * lift[q]).real
            out[i] += lv[v] * (acc[i] - 1.0) * tot
        for k in range(d):
            acc[fl[k]] = -1.0
    _ = offs
