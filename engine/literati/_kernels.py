"""numba kernels of the Literati search (docs/spec.md section 1): the per-state work.

Every kernel is ``@njit(cache=True, nogil=True)``.  Features are passed **transposed**:
``XT`` float64 C-contiguous ``(p, n)`` (one feature's values are contiguous, so the scans
below read memory in order); class codes ``y`` int64 ``(n,)`` in ``[0, C)``; sample ids
int64.  A data state's samples are kept as its **orders**: int64 ``(p, m)``, row ``j`` = the
state's sample ids sorted by feature ``j`` (stable, ties by id).  Children orders are
obtained by filtering the parent's rows (no re-sorting), so the lookahead CART and the
depth-1 solver cost O(p * m) per level.

* :func:`state_candidates` / :func:`uni_thresholds`: candidate breakpoints of a state
  (univariate best-first CART with at most B_d leaves per feature, float64 midpoints).
* :func:`solve_depth1`: exact optimum of a state with one level left (a DP over the
  candidate intervals with alternating sides, for every pair of leaf classes).
* :func:`solve_depth2`: resumable exact scan of a state with two levels left (in
  ``_depth2_kernels``).
* :func:`cart_value` / :func:`lookahead_shapes`: the lookahead-CART heuristic V~ (in
  ``_lookahead_kernels``).
* :func:`apply_shape_tree`, :func:`shape_route_kernel`, :func:`route_left`: routing.

Numba cannot read the clock, so no kernel checks the time limit itself; instead every
kernel call does a bounded amount of work (one state's candidates, a chunk of lookahead
CARTs or of depth-2 shapes sized from measured costs) and the search checks the clock
between calls.

Shape routing (docs/spec.md section 1): a node with feature ``j`` and sorted breakpoints
``u_1 < ... < u_K`` sends ``x`` left iff ``#{u_i < x_j}`` is even.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from engine._numba import njit

_INF = 1e300


# ---------------------------------------------------------------------------------------
# orders
# ---------------------------------------------------------------------------------------


@njit
def sort_orders(XT, idx):
    """Orders int64 ``(p, m)`` of the samples ``idx`` (int64, ascending) per feature.
    ``XT``: the transposed features, float64 C-contiguous ``(p, n)``."""
    p = XT.shape[0]
    m = idx.shape[0]
    out = np.empty((p, m), dtype=np.int64)
    vals = np.empty(m, dtype=np.float64)
    for j in range(p):
        for r in range(m):
            vals[r] = XT[j, idx[r]]
        o = np.argsort(vals, kind="mergesort")
        for r in range(m):
            out[j, r] = idx[o[r]]
    return out


@njit(parallel=True)
def sort_orders_parallel(XT, idx):
    """:func:`sort_orders` in parallel over the features (``prange``; call it through
    :func:`engine._numba.call_parallel`), for large states: the same orders."""
    p = XT.shape[0]
    m = idx.shape[0]
    out = np.empty((p, m), dtype=np.int64)
    for j in prange(p):
        vals = np.empty(m, dtype=np.float64)
        for r in range(m):
            vals[r] = XT[j, idx[r]]
        o = np.argsort(vals, kind="mergesort")
        for r in range(m):
            out[j, r] = idx[o[r]]
    return out


@njit
def split_orders(orders, go_left, n_left):
    """Split orders ``(p, m)`` into the left ``(p, n_left)`` and right ``(p, m - n_left)``
    orders; ``go_left`` is a bool array over **all** samples (indexed by sample id)."""
    p, m = orders.shape
    left = np.empty((p, n_left), dtype=np.int64)
    right = np.empty((p, m - n_left), dtype=np.int64)
    for j in range(p):
        a = 0
        b = 0
        for r in range(m):
            g = orders[j, r]
            if go_left[g]:
                left[j, a] = g
                a += 1
            else:
                right[j, b] = g
                b += 1
    return left, right


@njit
def n_below(u, v):
    """Number of breakpoints ``u`` (sorted float64) strictly below ``v``."""
    c = 0
    for i in range(u.shape[0]):
        if u[i] < v:
            c += 1
        else:
            break
    return c


@njit
def route_left(XT, idx, j, u, out):
    """``out[g] = True`` iff sample ``g`` of ``idx`` goes left under the shape ``(j, u)``;
    returns the number of left samples.  ``out``: bool ``(n,)`` (entries outside ``idx``
    are not touched)."""
    nl = 0
    for r in range(idx.shape[0]):
        g = idx[r]
        left = n_below(u, XT[j, g]) % 2 == 0
        out[g] = left
        if left:
            nl += 1
    return nl


@njit
def shape_route_kernel(x, u):
    """bool ``(n,)``: True where ``x`` goes left under breakpoints ``u`` (sorted)."""
    n = x.shape[0]
    out = np.empty(n, dtype=np.bool_)
    for i in range(n):
        out[i] = np.searchsorted(u, x[i]) % 2 == 0
    return out


# ---------------------------------------------------------------------------------------
# class counts
# ---------------------------------------------------------------------------------------


@njit
def class_counts(y, idx, C):
    """int64 ``(C,)`` class counts of the samples ``idx``."""
    out = np.zeros(C, dtype=np.int64)
    for r in range(idx.shape[0]):
        out[y[idx[r]]] += 1
    return out


# ---------------------------------------------------------------------------------------
# univariate CART (candidate breakpoints)
# ---------------------------------------------------------------------------------------


_EPSILON = np.finfo(np.float64).eps  # scikit-learn's tolerance on a split's gain


@njit
def _midpoint(a, b):
    """scikit-learn's threshold between consecutive values ``a < b``: ``a/2 + b/2``,
    or ``a`` when rounding reaches ``b`` (so ``a <= t < b``)."""
    t = a / 2.0 + b / 2.0
    if t >= b or not np.isfinite(t):
        t = a
    return t


@njit
def _best_segment_split(xs, ys, s, e, C, L, T, n_total):
    """Best gini split of the sorted segment ``[s, e)``: returns ``(pos, gain)`` with the
    split between positions ``pos`` and ``pos + 1`` (``pos = -1``: pure or constant).

    ``gain`` is scikit-learn's weighted impurity decrease ``n / n_total * (gini - nR / n *
    giniR - nL / n * giniL)``, and the position maximises scikit-learn's proxy ``-nR *
    giniR - nL * giniL``; both in scikit-learn's float64 operation order, the scan
    left to right keeping the first strict maximum.  Splits of equal impurity decrease
    (exact ties) then resolve as scikit-learn's do: the rounding of that expression picks
    the same position (docs/spec.md section 1)."""
    n = e - s
    for c in range(C):
        T[c] = 0
        L[c] = 0
    for r in range(s, e):
        T[ys[r]] += 1
    sqT = 0.0
    mx = 0
    for c in range(C):
        sqT += float(T[c]) * float(T[c])
        if T[c] > mx:
            mx = T[c]
    if mx == n or n < 2:
        return -1, 0.0
    # the class-count square sums are integers below 2**53: exact in float64, so only
    # the expressions below carry scikit-learn's rounding
    sqL = 0.0
    sqR = sqT
    best = -np.inf
    bpos = -1
    bL = 0.0
    bR = 0.0
    for r in range(s, e - 1):
        c = ys[r]
        sqL += 2.0 * L[c] + 1.0
        rc = T[c] - L[c]
        sqR -= 2.0 * rc - 1.0
        L[c] += 1
        if xs[r] < xs[r + 1]:
            nl = float(r - s + 1)
            nr = float(n) - nl
            gini_left = 1.0 - sqL / (nl * nl)
            gini_right = 1.0 - sqR / (nr * nr)
            proxy = -nr * gini_right - nl * gini_left
            if proxy > best:
                best = proxy
                bpos = r
                bL = gini_left
                bR = gini_right
    if bpos < 0:
        return -1, 0.0
    nn = float(n)
    nl = float(bpos - s + 1)
    nr = nn - nl
    gini = 1.0 - sqT / (nn * nn)
    gain = (nn / n_total) * (gini - nr / nn * bR - nl / nn * bL)
    if gain + _EPSILON < 0.0:
        return -1, 0.0
    return bpos, gain


@njit
def _uni_into(xs, ys, m, C, max_leaves, out, L, T, seg_s, seg_e, seg_pos, seg_gain, cut):
    """Candidate breakpoints of ``xs[:m]`` written to ``out`` (sorted); returns their
    number.  Work arrays: ``L``, ``T`` int64 ``(C,)``; ``seg_*``, ``cut`` of length
    ``>= max_leaves``.  See :func:`uni_thresholds`."""
    if max_leaves <= 0:
        k = 0
        for r in range(m - 1):
            if xs[r] < xs[r + 1]:
                out[k] = _midpoint(xs[r], xs[r + 1])
                k += 1
        return k
    # best-first growth as scikit-learn's: a max-heap of segments keyed by gain, with
    # scikit-learn's tie order between equal gains (C++ std::push_heap / std::pop_heap,
    # see _heap_push / _heap_pop); ``cut`` holds the heap (segment indices), pure or
    # unsplittable segments included (gain 0), as scikit-learn keeps its leaves there
    n_seg = 1
    seg_s[0] = 0
    seg_e[0] = m
    pos, gain = _best_segment_split(xs, ys, 0, m, C, L, T, float(m))
    seg_pos[0] = pos
    seg_gain[0] = gain if pos >= 0 else 0.0
    n_heap = _heap_push(cut, 0, 0, seg_gain)
    n_cut = 0
    while n_heap > 0 and n_cut < max_leaves - 1:
        n_heap = _heap_pop(cut, n_heap, seg_gain)
        k = cut[n_heap]
        if seg_pos[k] < 0:
            continue
        s = seg_s[k]
        e = seg_e[k]
        pos = seg_pos[k]
        n_cut += 1
        seg_e[k] = pos + 1
        p1, g1 = _best_segment_split(xs, ys, s, pos + 1, C, L, T, float(m))
        seg_pos[k] = p1
        seg_gain[k] = g1 if p1 >= 0 else 0.0
        n_heap = _heap_push(cut, n_heap, k, seg_gain)
        seg_s[n_seg] = pos + 1
        seg_e[n_seg] = e
        p2, g2 = _best_segment_split(xs, ys, pos + 1, e, C, L, T, float(m))
        seg_pos[n_seg] = p2
        seg_gain[n_seg] = g2 if p2 >= 0 else 0.0
        n_heap = _heap_push(cut, n_heap, n_seg, seg_gain)
        n_seg += 1
    # the cuts are the segments' right ends, but the last segment's
    k = 0
    for i in range(n_seg):
        if seg_e[i] < m:
            cut[k] = seg_e[i] - 1
            k += 1
    cs = np.sort(cut[:n_cut])
    for i in range(n_cut):
        out[i] = _midpoint(xs[cs[i]], xs[cs[i] + 1])
    return n_cut


@njit
def _heap_sift_up(heap, hole, top, item, key):
    """Move ``item`` up from ``hole`` while its parent's key is smaller (the sift of C++
    ``std::push_heap``, whose order between equal keys scikit-learn's best-first builder
    inherits)."""
    parent = (hole - 1) // 2
    while hole > top and key[heap[parent]] < key[item]:
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = item


@njit
def _heap_push(heap, n, item, key):
    """Push segment ``item`` onto the max-heap ``heap[:n]`` keyed by ``key``; returns n + 1."""
    _heap_sift_up(heap, n, 0, item, key)
    return n + 1


@njit
def _heap_pop(heap, n, key):
    """Move the max of ``heap[:n]`` to ``heap[n - 1]`` and restore the heap on ``heap[:n - 1]``
    the way C++ ``std::pop_heap`` does (hole to a leaf along the larger children, the
    right child kept on equal keys, then a sift up); returns n - 1."""
    last = n - 1
    if last <= 0:
        return last
    item = heap[last]
    heap[last] = heap[0]
    length = last
    hole = 0
    child = 0
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if key[heap[child]] < key[heap[child - 1]]:
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    _heap_sift_up(heap, hole, 0, item, key)
    return last


@njit
def uni_thresholds(xs, ys, C, max_leaves):
    """Candidate breakpoints (sorted float64) of one feature over one sample set.

    ``xs`` float64 sorted values, ``ys`` int64 codes in the same order.  With
    ``max_leaves >= 2``: the thresholds of a best-first univariate CART (gini) with at most
    ``max_leaves`` leaves (splits with zero gain allowed, as scikit-learn); ties are
    broken as scikit-learn's ``DecisionTreeClassifier(max_leaf_nodes=max_leaves)`` breaks
    them: within a segment by its float64 proxy and first-best scan, between segments by
    its heap order (docs/spec.md section 1).  ``max_leaves <= 0``: every midpoint between
    consecutive distinct values.  Thresholds are float64 midpoints of the sample's own
    values."""
    m = xs.shape[0]
    w = max(max_leaves, 1)
    out = np.empty(max(m, 1), dtype=np.float64)
    k = _uni_into(
        xs,
        ys,
        m,
        C,
        max_leaves,
        out,
        np.zeros(C, dtype=np.int64),
        np.zeros(C, dtype=np.int64),
        np.empty(w, dtype=np.int64),
        np.empty(w, dtype=np.int64),
        np.empty(w, dtype=np.int64),
        np.empty(w, dtype=np.float64),
        np.empty(w, dtype=np.int64),
    )
    return out[:k].copy()


@njit
def state_candidates(XT, y, orders, C, max_leaves):
    """Candidate breakpoints of every feature over one data state.

    Returns ``(offsets int64 (p + 1,), values float64)``: feature ``j``'s sorted
    candidates are ``values[offsets[j]:offsets[j + 1]]``, and ``counts`` int64
    ``(n_bins_total, C)``: class counts of the bins (intervals between consecutive
    candidates, ``len + 1`` bins per feature, stacked feature by feature; bin ``b`` of
    feature ``j`` is row ``offsets[j] + j + b``)."""
    p, m = orders.shape
    xs = np.empty(m, dtype=np.float64)
    ys = np.empty(m, dtype=np.int64)
    parts = []
    total = 0
    for j in range(p):
        for r in range(m):
            g = orders[j, r]
            xs[r] = XT[j, g]
            ys[r] = y[g]
        t = uni_thresholds(xs, ys, C, max_leaves)
        parts.append(t)
        total += t.shape[0]
    off = np.zeros(p + 1, dtype=np.int64)
    vals = np.empty(total, dtype=np.float64)
    counts = np.zeros((total + p, C), dtype=np.int64)
    for j in range(p):
        t = parts[j]
        off[j + 1] = off[j] + t.shape[0]
        for i in range(t.shape[0]):
            vals[off[j] + i] = t[i]
        base = off[j] + j
        b = 0
        for r in range(m):
            g = orders[j, r]
            v = XT[j, g]
            while b < t.shape[0] and t[b] < v:
                b += 1
            counts[base + b, y[g]] += 1
    return off, vals, counts


# ---------------------------------------------------------------------------------------
# depth-1 solver (exact over a state's candidates): alternating-interval DP
# ---------------------------------------------------------------------------------------


@njit
def _dp_errors(counts, C, K_max, cL, cR, f, g):
    """Errors of the best alternating assignment with exactly k switches (k = 0..K_max)
    when left intervals predict ``cL`` and right ones ``cR``; writes ``f`` (K_max + 1)."""
    nb = counts.shape[0]
    for k in range(K_max + 1):
        f[k] = _INF
    tot = 0
    for c in range(C):
        tot += counts[0, c]
    f[0] = tot - counts[0, cL]
    for b in range(1, nb):
        tot = 0
        for c in range(C):
            tot += counts[b, c]
        eL = tot - counts[b, cL]
        eR = tot - counts[b, cR]
        for k in range(K_max + 1):
            v = f[k]
            if k >= 1 and f[k - 1] < v:
                v = f[k - 1]
            g[k] = v + (eL if k % 2 == 0 else eR)
        for k in range(K_max + 1):
            f[k] = g[k]


@njit
def next_combination(comb, k, n) -> bool:
    """Advance ``comb[:k]`` (increasing indices in ``[0, n)``) to the next ``k``-subset in
    lexicographic order, in place; False when it was the last one."""
    i = k - 1
    while i >= 0 and comb[i] == n - k + i:
        i -= 1
    if i < 0:
        return False
    comb[i] += 1
    for t in range(i + 1, k):
        comb[t] = comb[t - 1] + 1
    return True


@njit
def best_alternating(counts, C, kk, lam, alpha, f, g):
    """Least ``lam + alpha k + errors`` of an alternating assignment of the bins of
    ``counts`` (``(nb, C)``) with ``k`` in ``1..kk`` switches, over every pair of distinct
    leaf classes (:func:`_dp_errors`; ``f``, ``g`` float64 ``(kk + 1,)`` work arrays).
    Returns ``(value, left class, right class, k)`` (``inf, -1, -1, 0`` with one class)."""
    best = np.inf
    best_cl = -1
    best_cr = -1
    best_k = 0
    for cl in range(C):
        for cr in range(C):
            if cl == cr:
                continue
            _dp_errors(counts, C, kk, cl, cr, f, g)
            for k in range(1, kk + 1):
                value = lam + alpha * k + f[k]
                if value < best - 1e-12:
                    best = value
                    best_cl = cl
                    best_cr = cr
                    best_k = k
    return best, best_cl, best_cr, best_k


@njit
def _best_k1(counts, C, L, T):
    """Least errors of a single breakpoint over class counts per bin ``counts`` (nb, C)
    (left = bins ``0..b``), each side predicting its majority class: returns
    ``(errors, b)``, ``b = -1`` when ``nb < 2``.  A prefix scan, ``O(nb C)``, in place of
    the alternating DP's ``C (C - 1)`` class pairs.  (Both sides may share a majority
    class here, which the DP excludes; such a split costs at least the leaf's errors plus
    its price, so it never beats the leaf and the optimum of the state is the same.)
    ``L``, ``T`` int64 ``(C,)`` work arrays."""
    nb = counts.shape[0]
    n = 0
    for c in range(C):
        T[c] = 0
        L[c] = 0
    for b in range(nb):
        for c in range(C):
            T[c] += counts[b, c]
            n += counts[b, c]
    best = _INF
    bpos = -1
    nl = 0
    for b in range(nb - 1):
        mxl = 0
        mxr = 0
        for c in range(C):
            L[c] += counts[b, c]
            nl += counts[b, c]
            if L[c] > mxl:
                mxl = L[c]
            if T[c] - L[c] > mxr:
                mxr = T[c] - L[c]
        e = float(nl - mxl + (n - nl) - mxr)
        if e < best:
            best = e
            bpos = b
    return best, bpos


@njit
def _dp_backtrack(counts, C, K, cL, cR):
    """Bin boundaries (indices of candidates) of the optimum with exactly ``K`` switches."""
    nb = counts.shape[0]
    f = np.full((nb, K + 1), _INF)
    came = np.zeros((nb, K + 1), dtype=np.bool_)
    tot = 0
    for c in range(C):
        tot += counts[0, c]
    f[0, 0] = tot - counts[0, cL]
    for b in range(1, nb):
        tot = 0
        for c in range(C):
            tot += counts[b, c]
        eL = tot - counts[b, cL]
        eR = tot - counts[b, cR]
        for k in range(K + 1):
            v = f[b - 1, k]
            sw = False
            if k >= 1 and f[b - 1, k - 1] < v:
                v = f[b - 1, k - 1]
                sw = True
            f[b, k] = v + (eL if k % 2 == 0 else eR)
            came[b, k] = sw
    out = np.empty(K, dtype=np.int64)
    k = K
    b = nb - 1
    while b > 0:
        if came[b, k]:
            out[k - 1] = b - 1
            k -= 1
        b -= 1
    return out


@njit
def _d1_workspace(m, C, max_leaves, K_max, p):
    w = max(max_leaves, 1)
    nb = (m + 1) if max_leaves <= 0 else (max_leaves + 1)
    return (
        np.empty(m, dtype=np.float64),
        np.empty(m, dtype=np.int64),
        np.empty(max(m, 1), dtype=np.float64),
        np.zeros((max(nb, 2), C), dtype=np.int64),
        np.zeros(C, dtype=np.int64),
        np.zeros(C, dtype=np.int64),
        np.empty(w, dtype=np.int64),
        np.empty(w, dtype=np.int64),
        np.empty(w, dtype=np.int64),
        np.empty(w, dtype=np.float64),
        np.empty(w, dtype=np.int64),
        np.empty(K_max + 1, dtype=np.float64),
        np.empty(K_max + 1, dtype=np.float64),
        np.empty(p, dtype=np.float64),
        np.zeros((m + 1, C), dtype=np.int64),
    )


@njit
def _feature_bound(xs, ys, m, C, K_max, lam, alpha, ucnt, f, g, L, T):
    """Least ``lam + alpha K + Err`` of a depth-1 split on one feature with **any**
    breakpoints (every midpoint a candidate): a lower bound for the same feature with a
    state's candidates (a subset).  ``inf`` for a constant feature."""
    nb = 0
    for r in range(m):
        if r == 0 or xs[r] != xs[r - 1]:
            for c in range(C):
                ucnt[nb, c] = 0
            nb += 1
        ucnt[nb - 1, ys[r]] += 1
    if nb < 2:
        return np.inf
    kk = min(K_max, nb - 1)
    if kk == 1:
        e, _ = _best_k1(ucnt[:nb], C, L, T)
        return lam + alpha + e
    return best_alternating(ucnt[:nb], C, kk, lam, alpha, f, g)[0]


@njit
def _d1_core(XT, y, orders, C, max_leaves, K_max, lam, alpha, ws, bps_out, cap):
    """:func:`solve_depth1` with preallocated work arrays ``ws`` (from
    :func:`_d1_workspace` for at least ``orders.shape[1]`` samples); writes the
    breakpoints to ``bps_out`` and returns ``(value, j, K, exact)``.

    With ``K_max = 1`` and every midpoint a candidate, each feature is one prefix scan
    over its sorted rows.  With finite candidates and at most 3 classes, every feature
    first gets the bound of
    :func:`_feature_bound`; features are then solved in increasing bound order until the
    bound reaches the best value found (the rest cannot improve it).

    ``cap`` (the caller's upper bound passed down, MurTree's: a value at or above it
    cannot help the caller): the solve also stops when the next feature's bound reaches
    ``cap`` below the best value found; it then returns that bound, a lower bound of the
    optimum that is at least ``cap``, with ``exact`` False (``j``, ``K``: the best split
    found so far, not the optimum).  Without a cap (``inf``) the value is always exact."""
    xs, ys, thr, cnt, L, T, seg_s, seg_e, seg_pos, seg_gain, cut, f, g, bnd, ucnt = ws
    p, m = orders.shape
    for c in range(C):
        T[c] = 0
    for r in range(m):
        T[y[orders[0, r]]] += 1
    mx = 0
    for c in range(C):
        if T[c] > mx:
            mx = T[c]
    leaf = float(m - mx)
    best = leaf
    best_j = -1
    best_k = 0
    if leaf <= lam + alpha or m < 2:
        return best, best_j, best_k, True
    if max_leaves <= 0 and K_max == 1:
        # plain thresholds at every midpoint: one prefix scan per feature over its sorted
        # rows (the candidate list, the bins and the DP collapse into it)
        for j in range(p):
            for c in range(C):
                L[c] = 0
            xr = XT[j, orders[j, 0]]
            for r in range(m - 1):
                L[y[orders[j, r]]] += 1
                xn = XT[j, orders[j, r + 1]]
                if xr < xn:
                    mxl = 0
                    mxr = 0
                    for c in range(C):
                        if L[c] > mxl:
                            mxl = L[c]
                        if T[c] - L[c] > mxr:
                            mxr = T[c] - L[c]
                    v = lam + alpha + float(m - mxl - mxr)
                    if v < best - 1e-12:
                        best = v
                        best_j = j
                        best_k = 1
                        bps_out[0] = _midpoint(xr, xn)
                xr = xn
        return best, best_j, best_k, True
    use_bound = max_leaves > 0 and C <= 3
    if use_bound:
        for j in range(p):
            for r in range(m):
                gg = orders[j, r]
                xs[r] = XT[j, gg]
                ys[r] = y[gg]
            bnd[j] = _feature_bound(xs, ys, m, C, K_max, lam, alpha, ucnt, f, g, L, T)
        fo = np.argsort(bnd[:p], kind="mergesort")
    else:
        fo = np.arange(p)
    for jj in range(p):
        j = fo[jj]
        if use_bound and bnd[j] >= best - 1e-12:
            break
        if use_bound and bnd[j] >= cap:
            # every feature left is bounded by bnd[j] >= cap, and so is the optimum
            # (the best found so far is above bnd[j]): the caller cannot use it
            return bnd[j], best_j, best_k, False
        for r in range(m):
            gg = orders[j, r]
            xs[r] = XT[j, gg]
            ys[r] = y[gg]
        nc = _uni_into(xs, ys, m, C, max_leaves, thr, L, T, seg_s, seg_e, seg_pos, seg_gain, cut)
        if nc == 0:
            continue
        nb = nc + 1
        for b in range(nb):
            for c in range(C):
                cnt[b, c] = 0
        b = 0
        for r in range(m):
            while b < nc and thr[b] < xs[r]:
                b += 1
            cnt[b, ys[r]] += 1
        cv = cnt[:nb]
        kk = min(K_max, nc)
        if kk == 1:
            e, pos1 = _best_k1(cv, C, L, T)
            bj = lam + alpha + e
            if bj < best - 1e-12:
                bps_out[0] = thr[pos1]
                best = bj
                best_j = j
                best_k = 1
            continue
        bj, bcl, bcr, bk = best_alternating(cv, C, kk, lam, alpha, f, g)
        if bj < best - 1e-12:
            pos = _dp_backtrack(cv, C, bk, bcl, bcr)
            for i in range(bk):
                bps_out[i] = thr[pos[i]]
            best = bj
            best_j = j
            best_k = bk
    return best, best_j, best_k, True


@njit
def solve_depth1(XT, y, orders, C, max_leaves, K_max, lam, alpha):
    """Exact optimum of a data state with one level left, within its candidates.

    Minimises ``Err`` (leaf) or ``lam + alpha*K + Err_L + Err_R`` over every feature ``j``
    and every subset of ``K <= K_max`` of the state's candidates on ``j`` (alternating
    routing; majority leaves), by a dynamic programme over the candidate intervals for
    every pair of leaf classes.  Returns ``(value, j, bps)``: ``j = -1`` for the leaf,
    ``bps`` the float64 breakpoints."""
    p, m = orders.shape
    ws = _d1_workspace(m, C, max_leaves, K_max, p)
    bps = np.empty(K_max, dtype=np.float64)
    v, j, k, _ = _d1_core(XT, y, orders, C, max_leaves, K_max, lam, alpha, ws, bps, np.inf)
    return v, j, bps[:k].copy()


# ---------------------------------------------------------------------------------------
# tree objective (verification of the incumbent)
# ---------------------------------------------------------------------------------------


@njit
def apply_shape_tree(children_left, children_right, feature, bp_off, bp_val, X):
    """Leaf id (int64 ``(n,)``) of every row under shape routing: internal node ``i`` with
    breakpoints ``bp_val[bp_off[i]:bp_off[i+1]]`` sends ``x`` left iff the number of
    breakpoints strictly below ``x[feature[i]]`` is even."""
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        node = 0
        while children_left[node] >= 0:
            v = X[i, feature[node]]
            c = 0
            for t in range(bp_off[node], bp_off[node + 1]):
                if bp_val[t] < v:
                    c += 1
                else:
                    break
            if c % 2 == 0:
                node = children_left[node]
            else:
                node = children_right[node]
        out[i] = node
    return out


# The depth-2 solver lives in engine/literati/_depth2_kernels.py and the lookahead CART in
# engine/literati/_lookahead_kernels.py; they are re-exported here for the search, which
# reaches them as ``_kernels.solve_depth2`` / ``_kernels.lookahead_shapes`` (imported last:
# they build on the above).
from engine.literati._depth2_kernels import solve_depth2  # noqa: E402, F401
from engine.literati._lookahead_kernels import cart_value, lookahead_shapes  # noqa: E402, F401
