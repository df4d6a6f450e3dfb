"""numba kernels of TreeGrad (iterative traversals, no recursion).

Every kernel works on a *packed* model: the trees of an ensemble concatenated, node ids
global (``offs[t]`` is the root of tree ``t``), with

* ``left``, ``right`` - int64 children, ``-1`` at leaves;
* ``feat`` - int64 split feature, ``-1`` at leaves;
* ``parent`` - int64 parent id, ``-1`` at roots;
* ``ratio`` - float64 ``cover(parent) / cover(node)`` (1 at roots);
* ``cover`` - float64 training cover (``weighted_n_node_samples``);
* ``rv`` - float64 leaf value times the tree's weight (forest 1/n, boosting lr, sign);
* ``lv`` - float64 ``rv * cover(leaf) / cover(root)`` (``rho_v c_v / c_r`` of Lemma 1);
* ``goleft`` - uint8 per node and sample: 1 when the sample goes left at that node.

The edge into node ``u`` (parent ``p``, split feature ``i``) has
``gamma_e = ratio[u] * [x takes the edge]``; repeated features on a path are merged into
one factor ``1 - z_i + z_i * prod(gamma_e)`` (research/treegrad.md section 2).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from engine._numba import njit

# the games and TreeGrad-Shap live in their own modules; re-exported here (the callers
# look kernels up by name in this module)
from engine.treegrad._game_kernels import (  # noqa: F401
    game_batch,
    game_batch_serial,
    treeprob_one,
)
from engine.treegrad._shap_kernels import (  # noqa: F401
    BLOCK_ROWS,
    IS_LEAF,
    IS_LEFT,
    W_DEPTH,
    W_FEAT,
    W_FLAGS,
    W_LV,
    W_PARENT,
    W_PREV,
    W_RATIO,
    W_THR,
    shap_rows,
    walk_tables,
)


@njit
def _zero_sum(
    u,
    d0,
    i,
    s0,
    left,
    right,
    feat,
    parent,
    ratio,
    lv,
    goleft,
    z,
    gam,
    sp,
    prevd,
    last,
    zstack,
    zdstack,
):
    """Sum over the leaves below ``u`` (at depth ``d0``) of ``lv * prod_{j != i} factor_j``
    (prefix ``s0``).

    Used when the factor of feature ``i`` on the edge into ``u`` is exactly zero
    (``z_i = 1`` and ``gamma = 0``): every leaf below has ``H_v = 0`` but the derivative in
    ``z_i`` is ``-1 * (product of the other factors)``.  Deeper ``i`` edges keep gamma 0 and
    are skipped; a subtree where another feature's factor is zero contributes 0.  Scratch is
    indexed by depth, below ``d0`` (research/treegrad.md section 3, ``traverse_zero``).
    """
    if left[u] < 0:
        return s0 * lv[u]
    total = 0.0
    sp[d0] = s0
    top = 0
    zstack[top] = right[u]
    zdstack[top] = d0 + 1
    top += 1
    zstack[top] = left[u]
    zdstack[top] = d0 + 1
    top += 1
    while top > 0:
        top -= 1
        e = zstack[top]
        d = zdstack[top]
        if e >= 0:
            w = e
            p = parent[w]
            k = feat[p]
            s = sp[d - 1]
            if k == i:
                sp[d] = s
                if left[w] < 0:
                    total += s * lv[w]
                else:
                    zstack[top] = right[w]
                    zdstack[top] = d + 1
                    top += 1
                    zstack[top] = left[w]
                    zdstack[top] = d + 1
                    top += 1
                continue
            goes = goleft[p] == 1
            act = goes if w == left[p] else not goes
            g = ratio[w] if act else 0.0
            a = last[k]
            if a >= 0:
                ga = gam[a]
                g = ga * g
                s = s / (1.0 - z[k] + z[k] * ga)
            phi = 1.0 - z[k] + z[k] * g
            if phi == 0.0:
                continue
            sp[d] = s * phi
            if left[w] < 0:
                total += sp[d] * lv[w]
                continue
            gam[d] = g
            prevd[d] = a
            last[k] = d
            zstack[top] = -(w + 1)
            zdstack[top] = d
            top += 1
            zstack[top] = right[w]
            zdstack[top] = d + 1
            top += 1
            zstack[top] = left[w]
            zdstack[top] = d + 1
            top += 1
        else:
            w = -e - 1
            last[feat[parent[w]]] = prevd[d]
    return total


@njit
def _tree_grad(
    root,
    left,
    right,
    feat,
    parent,
    ratio,
    lv,
    goleft,
    z,
    grad,
    gam,
    sp,
    sub,
    ss,
    prevd,
    last,
    stack,
    dstack,
    zstack,
    zdstack,
):
    """Add one tree's gradient of fbar at ``z`` to ``grad``; return the tree's fbar(z).

    One down pass (prefix products of the distinct-feature factors, ``sp``) and one up pass
    (subtree sums ``sub``; ``ss[a]`` removes from the edge at depth ``a`` the leaves whose
    deepest edge on the same feature lies deeper), O(nodes).  Scratch (``gam``, ``sp``,
    ``sub``, ``ss``, ``prevd``: ``(max_depth + 2,)``) is indexed by depth: only the current
    root-to-node path is live.  ``last[i]`` (all -1 on entry, restored on exit) is the depth
    of the nearest edge on feature ``i``.
    """
    if left[root] < 0:
        return lv[root]
    sp[0] = 1.0
    sub[0] = 0.0
    top = 0
    stack[top] = right[root]
    dstack[top] = 1
    top += 1
    stack[top] = left[root]
    dstack[top] = 1
    top += 1
    while top > 0:
        top -= 1
        e = stack[top]
        d = dstack[top]
        if e >= 0:
            u = e
            p = parent[u]
            i = feat[p]
            goes = goleft[p] == 1
            act = goes if u == left[p] else not goes
            g = ratio[u] if act else 0.0
            a = last[i]
            s = sp[d - 1]
            if a >= 0:
                ga = gam[a]
                g = ga * g
                s = s / (1.0 - z[i] + z[i] * ga)
            phi = 1.0 - z[i] + z[i] * g
            if phi == 0.0:
                grad[i] -= _zero_sum(
                    u,
                    d,
                    i,
                    s,
                    left,
                    right,
                    feat,
                    parent,
                    ratio,
                    lv,
                    goleft,
                    z,
                    gam,
                    sp,
                    prevd,
                    last,
                    zstack,
                    zdstack,
                )
                continue
            gam[d] = g
            sp[d] = s * phi
            ss[d] = 0.0
            prevd[d] = a
            last[i] = d
            stack[top] = -(u + 1)
            dstack[top] = d
            top += 1
            if left[u] < 0:
                sub[d] = sp[d] * lv[u]
            else:
                sub[d] = 0.0
                stack[top] = right[u]
                dstack[top] = d + 1
                top += 1
                stack[top] = left[u]
                dstack[top] = d + 1
                top += 1
        else:
            u = -e - 1
            i = feat[parent[u]]
            tot = sub[d]
            g = gam[d]
            grad[i] += (g - 1.0) * (tot + ss[d]) / (1.0 - z[i] + z[i] * g)
            a = prevd[d]
            if a >= 0:
                ss[a] -= tot
            sub[d - 1] += tot
            last[i] = a
    return sub[0]


@njit
def _ens_grad(
    offs,
    left,
    right,
    feat,
    parent,
    ratio,
    lv,
    goleft,
    z,
    grad,
    gam,
    sp,
    sub,
    ss,
    prevd,
    last,
    stack,
    dstack,
    zstack,
    zdstack,
):
    """Gradient of the ensemble's fbar at ``z`` (added to zeroed ``grad``); returns fbar."""
    tot = 0.0
    for t in range(offs.shape[0] - 1):
        tot += _tree_grad(
            offs[t],
            left,
            right,
            feat,
            parent,
            ratio,
            lv,
            goleft,
            z,
            grad,
            gam,
            sp,
            sub,
            ss,
            prevd,
            last,
            stack,
            dstack,
            zstack,
            zdstack,
        )
    return tot


@njit
def _grad_batch_chunk(
    c, nch, offs, left, right, feat, parent, ratio, lv, GL, Z, wq, max_depth, out, fb
):
    """One chunk (samples c, c + nch, ...) of :func:`grad_batch`."""
    m = GL.shape[0]
    nf = out.shape[1]
    Q = wq.shape[0]
    mz = Z.shape[0]
    D = max_depth + 2
    gam = np.empty(D)
    sp = np.empty(D)
    sub = np.empty(D)
    ss = np.empty(D)
    prevd = np.empty(D, dtype=np.int64)
    last = np.full(nf, -1, dtype=np.int64)
    stack = np.empty(3 * D + 6, dtype=np.int64)
    dstack = np.empty(3 * D + 6, dtype=np.int64)
    zstack = np.empty(3 * D + 6, dtype=np.int64)
    zdstack = np.empty(3 * D + 6, dtype=np.int64)
    g = np.empty(nf)
    for r in range(c, m, nch):
        zr = r if mz > 1 else 0
        for j in range(nf):
            out[r, j] = 0.0
        for q in range(Q):
            g[:] = 0.0
            fb[r, q] = _ens_grad(
                offs,
                left,
                right,
                feat,
                parent,
                ratio,
                lv,
                GL[r],
                Z[zr, q],
                g,
                gam,
                sp,
                sub,
                ss,
                prevd,
                last,
                stack,
                dstack,
                zstack,
                zdstack,
            )
            for j in range(nf):
                out[r, j] += wq[q] * g[j]


@njit(parallel=True)
def grad_batch(offs, left, right, feat, parent, ratio, lv, GL, Z, wq, max_depth, out, fb, nchunks):
    """Weighted sums of gradients for many samples.

    ``GL`` uint8 ``(m, n_nodes)``; ``Z`` float64 ``(mz, Q, n_features)`` with ``mz`` in
    ``{1, m}`` (shared or per-sample points); ``wq`` float64 ``(Q,)``; ``max_depth`` of the
    deepest tree.  Writes ``out[r] = sum_q wq[q] * grad fbar_r(Z[r or 0, q])`` (``(m,
    n_features)``) and ``fb[r, q] = fbar_r(Z[., q])`` (``(m, Q)``).  Samples are split into
    ``nchunks`` parallel chunks, each with its own scratch arrays.
    """
    m = GL.shape[0]
    nch = min(m, nchunks)
    for c in prange(nch):
        _grad_batch_chunk(
            c, nch, offs, left, right, feat, parent, ratio, lv, GL, Z, wq, max_depth, out, fb
        )


@njit
def grad_batch_serial(offs, left, right, feat, parent, ratio, lv, GL, Z, wq, max_depth, out, fb):
    """:func:`grad_batch` in the calling thread (no parallel launch; for one sample)."""
    if GL.shape[0] > 0:
        _grad_batch_chunk(
            0, 1, offs, left, right, feat, parent, ratio, lv, GL, Z, wq, max_depth, out, fb
        )


@njit
def _rank_batch_chunk(
    c,
    nch,
    offs,
    left,
    right,
    feat,
    parent,
    ratio,
    lv,
    GL,
    steps,
    lr,
    adam,
    beta1,
    beta2,
    eps,
    max_depth,
    scores,
    zhist,
    jhist,
):
    """One chunk (samples c, c + nch, ...) of :func:`rank_batch`."""
    m = GL.shape[0]
    nf = scores.shape[1]
    D = max_depth + 2
    gam = np.empty(D)
    sp = np.empty(D)
    sub = np.empty(D)
    ss = np.empty(D)
    prevd = np.empty(D, dtype=np.int64)
    last = np.full(nf, -1, dtype=np.int64)
    stack = np.empty(3 * D + 6, dtype=np.int64)
    dstack = np.empty(3 * D + 6, dtype=np.int64)
    zstack = np.empty(3 * D + 6, dtype=np.int64)
    zdstack = np.empty(3 * D + 6, dtype=np.int64)
    for r in range(c, m, nch):
        z = np.full(nf, 0.5)
        zc = np.empty(nf)
        g1 = np.empty(nf)
        g2 = np.empty(nf)
        mom = np.zeros(nf)
        vel = np.zeros(nf)
        sc = np.zeros(nf)
        for t in range(steps + 1):
            for j in range(nf):
                zhist[r, t, j] = z[j]
                zc[j] = 1.0 - z[j]
                g1[j] = 0.0
                g2[j] = 0.0
            f1 = _ens_grad(
                offs,
                left,
                right,
                feat,
                parent,
                ratio,
                lv,
                GL[r],
                z,
                g1,
                gam,
                sp,
                sub,
                ss,
                prevd,
                last,
                stack,
                dstack,
                zstack,
                zdstack,
            )
            f2 = _ens_grad(
                offs,
                left,
                right,
                feat,
                parent,
                ratio,
                lv,
                GL[r],
                zc,
                g2,
                gam,
                sp,
                sub,
                ss,
                prevd,
                last,
                stack,
                dstack,
                zstack,
                zdstack,
            )
            jhist[r, t] = 0.5 * (f1 - f2)
            if t == steps:
                break
            b1 = 1.0 - beta1 ** (t + 1)
            b2 = 1.0 - beta2 ** (t + 1)
            for j in range(nf):
                g = 0.5 * g1[j] + 0.5 * g2[j]
                sc[j] = sc[j] * t / (t + 1.0) + g / (t + 1.0)
                if adam:
                    mom[j] = beta1 * mom[j] + (1.0 - beta1) * g
                    vel[j] = beta2 * vel[j] + (1.0 - beta2) * g * g
                    step = lr * (mom[j] / b1) / (np.sqrt(vel[j] / b2) + eps)
                else:
                    step = lr * g
                zj = z[j] + step
                z[j] = 0.0 if zj < 0.0 else (1.0 if zj > 1.0 else zj)
        for j in range(nf):
            scores[r, j] = sc[j]


@njit(parallel=True)
def rank_batch(
    offs,
    left,
    right,
    feat,
    parent,
    ratio,
    lv,
    GL,
    steps,
    lr,
    adam,
    beta1,
    beta2,
    eps,
    max_depth,
    scores,
    zhist,
    jhist,
    nchunks,
):
    """TreeGrad-Ranker for many samples (research/treegrad.md section 6).

    From ``z = 0.5``: ``g = (grad(z) + grad(1 - z)) / 2``; ``score`` = running mean of ``g``;
    GA ``z <- clip(z + lr g, 0, 1)`` or Adam (bias-corrected).  Writes ``scores`` ``(m, n)``,
    ``zhist`` ``(m, steps + 1, n)`` (z_0 .. z_T) and ``jhist`` ``(m, steps + 1)`` with
    ``J(z_t) = (fbar(z_t) - fbar(1 - z_t)) / 2``.
    """
    m = GL.shape[0]
    nch = min(m, nchunks)
    for c in prange(nch):
        _rank_batch_chunk(
            c,
            nch,
            offs,
            left,
            right,
            feat,
            parent,
            ratio,
            lv,
            GL,
            steps,
            lr,
            adam,
            beta1,
            beta2,
            eps,
            max_depth,
            scores,
            zhist,
            jhist,
        )


@njit
def rank_batch_serial(
    offs,
    left,
    right,
    feat,
    parent,
    ratio,
    lv,
    GL,
    steps,
    lr,
    adam,
    beta1,
    beta2,
    eps,
    max_depth,
    scores,
    zhist,
    jhist,
):
    """:func:`rank_batch` in the calling thread (no parallel launch; for one sample)."""
    if GL.shape[0] > 0:
        _rank_batch_chunk(
            0,
            1,
            offs,
            left,
            right,
            feat,
            parent,
            ratio,
            lv,
            GL,
            steps,
            lr,
            adam,
            beta1,
            beta2,
            eps,
            max_depth,
            scores,
            zhist,
            jhist,
        )


@njit
def _tree_diag(
    root,
    left,
    right,
    feat,
    parent,
    ratio,
    lv,
    goleft,
    t,
    wq,
    phi,
    gam,
    sp,
    sub,
    ss,
    prevd,
    last,
    stack,
    dstack,
):
    """Add ``sum_q wq[q] * grad fbar(t[q] * 1)`` of one tree to ``phi`` (TreeGrad-Shap by
    a stack traversal; the API uses :func:`shap_rows`, this stays as an independent
    reference for the tests).

    The TreeGrad traversal vectorised over the quadrature points, with its scratch indexed by
    depth (only the current root-to-node path is live): ``sp``, ``sub``, ``ss`` are
    ``(max_depth + 2, Q)``, ``gam``, ``prevd`` ``(max_depth + 2,)``; ``last[i]`` holds the
    depth of the nearest edge on feature ``i`` (-1: none).  ``t`` lies in (0, 1), so no
    factor is zero.
    """
    Q = t.shape[0]
    if left[root] < 0:
        return
    for q in range(Q):
        sp[0, q] = 1.0
        sub[0, q] = 0.0
    top = 0
    stack[top] = right[root]
    dstack[top] = 1
    top += 1
    stack[top] = left[root]
    dstack[top] = 1
    top += 1
    while top > 0:
        top -= 1
        e = stack[top]
        d = dstack[top]
        if e >= 0:
            u = e
            p = parent[u]
            i = feat[p]
            goes = goleft[p] == 1
            act = goes if u == left[p] else not goes
            g = ratio[u] if act else 0.0
            a = last[i]
            if a >= 0:
                ga = gam[a]
                g = ga * g
                for q in range(Q):
                    sp[d, q] = sp[d - 1, q] / (1.0 - t[q] + t[q] * ga) * (1.0 - t[q] + t[q] * g)
            else:
                for q in range(Q):
                    sp[d, q] = sp[d - 1, q] * (1.0 - t[q] + t[q] * g)
            gam[d] = g
            prevd[d] = a
            last[i] = d
            stack[top] = -(u + 1)
            dstack[top] = d
            top += 1
            if left[u] < 0:
                for q in range(Q):
                    ss[d, q] = 0.0
                    sub[d, q] = sp[d, q] * lv[u]
            else:
                for q in range(Q):
                    ss[d, q] = 0.0
                    sub[d, q] = 0.0
                stack[top] = right[u]
                dstack[top] = d + 1
                top += 1
                stack[top] = left[u]
                dstack[top] = d + 1
                top += 1
        else:
            u = -e - 1
            i = feat[parent[u]]
            g = gam[d]
            a = prevd[d]
            acc = 0.0
            for q in range(Q):
                tot = sub[d, q]
                acc += wq[q] * (tot + ss[d, q]) / (1.0 - t[q] + t[q] * g)
                if a >= 0:
                    ss[a, q] -= tot
                sub[d - 1, q] += tot
            phi[i] += (g - 1.0) * acc
            last[i] = a


@njit
def _diag_batch_chunk(
    c, nch, offs, left, right, feat, parent, ratio, lv, GL, t, wq, max_depth, out
):
    """One chunk (samples c, c + nch, ...) of :func:`diag_batch`."""
    m = GL.shape[0]
    nf = out.shape[1]
    Q = t.shape[0]
    D = max_depth + 2
    gam = np.empty(D)
    prevd = np.empty(D, dtype=np.int64)
    sp = np.empty((D, Q))
    sub = np.empty((D, Q))
    ss = np.empty((D, Q))
    last = np.full(nf, -1, dtype=np.int64)
    stack = np.empty(3 * D + 6, dtype=np.int64)
    dstack = np.empty(3 * D + 6, dtype=np.int64)
    for r in range(c, m, nch):
        for tr in range(offs.shape[0] - 1):
            _tree_diag(
                offs[tr],
                left,
                right,
                feat,
                parent,
                ratio,
                lv,
                GL[r],
                t,
                wq,
                out[r],
                gam,
                sp,
                sub,
                ss,
                prevd,
                last,
                stack,
                dstack,
            )


@njit(parallel=True)
def diag_batch(offs, left, right, feat, parent, ratio, lv, GL, t, wq, max_depth, out, nchunks):
    """``out[r] = sum_q wq[q] grad fbar_r(t[q] 1)`` for every sample (``out`` zeroed
    ``(m, n_features)``); O(nodes * Q) per sample, scratch O(max_depth * Q) per chunk."""
    m = GL.shape[0]
    nch = min(m, nchunks)
    for c in prange(nch):
        _diag_batch_chunk(
            c, nch, offs, left, right, feat, parent, ratio, lv, GL, t, wq, max_depth, out
        )


@njit
def diag_batch_serial(offs, left, right, feat, parent, ratio, lv, GL, t, wq, max_depth, out):
    """:func:`diag_batch` in the calling thread (no parallel launch; for one sample)."""
    if GL.shape[0] > 0:
        _diag_batch_chunk(
            0, 1, offs, left, right, feat, parent, ratio, lv, GL, t, wq, max_depth, out
        )


@njit
def goleft_plain(left, feat, thr, missing_go_to_left, X, out):
    """``out[r, u] = 1`` where row ``r`` goes left at internal node ``u``
    (``x[feat[u]] <= thr[u]``; threshold splits only; a NaN ``x[feat[u]]`` goes left iff
    ``missing_go_to_left[u]``, uint8 per node).  ``out`` uint8 ``(m, n_nodes)``."""
    for r in range(X.shape[0]):
        for u in range(left.shape[0]):
            if left[u] >= 0:
                v = X[r, feat[u]]
                if v != v:
                    out[r, u] = missing_go_to_left[u]
                else:
                    out[r, u] = 1 if v <= thr[u] else 0


@njit
def count_nonfinite(X):
    """Number of NaN / inf entries of float64 ``X`` (2-D)."""
    bad = 0
    for r in range(X.shape[0]):
        for j in range(X.shape[1]):
            if not np.isfinite(X[r, j]):
                bad += 1
    return bad
