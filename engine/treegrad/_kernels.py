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


@njit
def count_nonfinite(X):
    """Number of NaN / inf entries of float64 ``X`` (2-D)."""
    bad = 0
    for r in range(X.shape[0]):
        for j in range(X.shape[1]):
            if not np.isfinite(X[r, j]):
                bad += 1
    return bad
