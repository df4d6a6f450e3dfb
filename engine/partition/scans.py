"""Numba split scans of the Partition Tree (docs/spec.md section 2, log-loss gain).

A cell A = A_X x A_Y has counts ``nxy`` (rows with x in A_X and y in A_Y), ``nx`` (rows with
x in A_X) and measure ``mu`` of A_Y. Its loss (times N) is ``-nxy * ln(nxy / (nx * mu))``
(0 when nxy is 0). The gain of a split is ``(l(parent) - l(left) - l(right)) / N``.

* :func:`scan_continuous` scans the midpoints between consecutive distinct sorted values with
  prefix counts (X split: values of the node's X set; Y split: values of its Y set).
* :func:`scan_categorical` sorts categories by ``a_c / b_c`` and scans the prefixes.

Gains are clipped at 0 (a Jensen gap: negative values are rounding only).
"""

from __future__ import annotations

import numpy as np

from engine._numba import njit, register_warmup


@njit
def xlogy_ratio(nxy, nx, mu):
    """``nxy * ln(nxy / (nx * mu))``, 0 when ``nxy`` is 0."""
    if nxy <= 0.0:
        return 0.0
    return nxy * np.log(nxy / (nx * mu))


@njit
def scan_continuous(
    vals,
    flags,
    nxy,
    nx,
    lo,
    hi,
    is_y,
    n_total,
    min_xy,
    min_x,
    min_y,
    min_width,
    out_gains,
    y_step=0.0,
    unit_floor=False,
):
    """Best split of one continuous coordinate.

    ``vals`` are the sorted values of the node's X set (``is_y`` False) or Y set (``is_y``
    True); ``flags[i]`` is 1 when that row is also in the node's XY set. ``lo``/``hi`` is
    A_Y (Y split only). ``out_gains[i]`` receives the gain of the threshold between
    ``vals[i]`` and ``vals[i + 1]`` (NaN when not a candidate or refused).
    The threshold is the midpoint, or with ``y_step`` > 0 (Y split of y on the lattice
    ``y_step * i``, the reference package's quantized target) ``vals[i + 1] - y_step / 2``.
    ``unit_floor`` (the reference package's rule) takes the parent's measure as
    ``max(hi - lo, 1)`` in the Y-split gain.
    Returns ``(best_gain, best_threshold, n_left_best)``; gain -1 when no valid split.
    """
    m = vals.shape[0]
    mu = hi - lo
    parent = xlogy_ratio(nxy, nx, max(mu, 1.0) if unit_floor else mu)
    best = -1.0
    best_t = np.nan
    best_n = 0
    c_all = 0.0
    c_xy = 0.0
    for i in range(m - 1):
        c_all += 1.0
        c_xy += flags[i]
        out_gains[i] = np.nan
        if vals[i + 1] <= vals[i]:
            continue
        t = 0.5 * (vals[i] + vals[i + 1])
        if is_y and y_step > 0.0:
            t = (np.round(vals[i + 1] / y_step) - 0.5) * y_step
        lxy = c_xy
        rxy = nxy - c_xy
        if lxy < min_xy or rxy < min_xy:
            continue
        if is_y:
            if c_all < min_y or m - c_all < min_y:
                continue
            wl = t - lo
            wr = hi - t
            if wl < min_width or wr < min_width or wl <= 0.0 or wr <= 0.0:
                continue
            g = xlogy_ratio(lxy, nx, wl) + xlogy_ratio(rxy, nx, wr) - parent
        else:
            lx = c_all
            rx = m - c_all
            if lx < min_x or rx < min_x:
                continue
            g = xlogy_ratio(lxy, lx, 1.0) + xlogy_ratio(rxy, rx, 1.0) - xlogy_ratio(nxy, nx, 1.0)
        g = g / n_total
        if g < 0.0:
            g = 0.0
        out_gains[i] = g
        if g > best:
            best = g
            best_t = t
            best_n = i + 1
    return best, best_t, best_n


@njit
def scan_categorical(
    a, b, present, is_y, nxy, nx, mu, n_total, min_xy, min_x, order_out, ny_c, min_y
):
    """Best subset split of one categorical coordinate by the ratio-sorted prefix scan.

    ``a[c]`` = n_XY of category c, ``b[c]`` = n_X of c (X split) or 1 (Y split, then ``mu``
    is the number of categories of A_Y and each side's measure is its number of categories);
    only categories with ``present[c]`` take part. Y split only: ``ny_c[c]`` is the Y-set
    count of c and each side's Y set needs ``min_y`` rows. ``order_out`` receives the present
    categories sorted by ``a / b``. Returns ``(best_gain, n_left_categories)``; the left set
    is ``order_out[:n_left]``. Gain -1 when no valid split.
    """
    k = a.shape[0]
    m = 0
    for c in range(k):
        if present[c]:
            order_out[m] = c
            m += 1
    ratio = np.empty(m)
    for i in range(m):
        c = order_out[i]
        ratio[i] = a[c] / b[c] if b[c] > 0 else 0.0
    srt = np.argsort(ratio, kind="mergesort")
    tmp = order_out[:m].copy()
    for i in range(m):
        order_out[i] = tmp[srt[i]]
    parent = xlogy_ratio(nxy, nx, mu)
    best = -1.0
    best_n = 0
    ca = 0.0
    cb = 0.0
    cy = 0.0
    ny = 0.0
    for i in range(m):
        ny += ny_c[order_out[i]]
    for i in range(m - 1):
        c = order_out[i]
        ca += a[c]
        cb += b[c]
        cy += ny_c[c]
        if ca < min_xy or nxy - ca < min_xy:
            continue
        if is_y:
            if cy < min_y or ny - cy < min_y:
                continue
            g = xlogy_ratio(ca, nx, cb) + xlogy_ratio(nxy - ca, nx, mu - cb) - parent
        else:
            if cb < min_x or nx - cb < min_x:
                continue
            g = (
                xlogy_ratio(ca, cb, 1.0)
                + xlogy_ratio(nxy - ca, nx - cb, 1.0)
                - xlogy_ratio(nxy, nx, 1.0)
            )
        g = g / n_total
        if g < 0.0:
            g = 0.0
        if g > best:
            best = g
            best_n = i + 1
    return best, best_n


@njit
def sorted_with_flags(values, rows, in_xy):
    """Values of ``rows`` sorted, with the XY-membership flag of each (float64)."""
    v = values[rows]
    o = np.argsort(v, kind="mergesort")
    m = rows.shape[0]
    vs = np.empty(m)
    fs = np.empty(m)
    for i in range(m):
        vs[i] = v[o[i]]
        fs[i] = in_xy[rows[o[i]]]
    return vs, fs


@njit
def _scan_sorted_x(X, srt, f, in_xy, nxy, parent, n_total, min_xy, min_x, vs, fs):
    """Best threshold of column ``f`` given the node's X rows ``srt`` sorted by it."""
    m = srt.shape[0]
    for i in range(m):
        vs[i] = X[srt[i], f]
        fs[i] = in_xy[srt[i]]
    fbest = -1.0
    ft = np.nan
    c_xy = 0.0
    for i in range(m - 1):
        c_xy += fs[i]
        if vs[i + 1] <= vs[i]:
            continue
        lxy = c_xy
        rxy = nxy - c_xy
        if lxy < min_xy or rxy < min_xy:
            continue
        lx = i + 1.0
        rx = m - lx
        if lx < min_x or rx < min_x:
            continue
        g = (xlogy_ratio(lxy, lx, 1.0) + xlogy_ratio(rxy, rx, 1.0) - parent) / n_total
        if g < 0.0:
            g = 0.0
        if g > fbest:
            fbest = g
            ft = 0.5 * (vs[i] + vs[i + 1])
    return fbest, ft


@njit
def best_x_continuous(X, rows_x, in_xy, feats, nxy, nx, n_total, min_xy, min_x):
    """Best continuous X split over the columns ``feats`` (ascending) of one node.

    One call per node instead of :func:`sorted_with_flags` + :func:`scan_continuous` per
    feature (same candidates, gains and tie rule: the first feature and the first threshold
    with the largest gain win). Returns ``(best_gain, feature, threshold)``; gain -1 and
    feature -1 when no feature has a valid split.
    """
    m = rows_x.shape[0]
    v = np.empty(m)
    srt = np.empty(m, dtype=np.int64)
    vs = np.empty(m)
    fs = np.empty(m)
    parent = xlogy_ratio(nxy, nx, 1.0)
    best = -1.0
    best_f = -1
    best_t = np.nan
    for fi in range(feats.shape[0]):
        f = feats[fi]
        for i in range(m):
            v[i] = X[rows_x[i], f]
        o = np.argsort(v, kind="mergesort")
        for i in range(m):
            srt[i] = rows_x[o[i]]
        fbest, ft = _scan_sorted_x(X, srt, f, in_xy, nxy, parent, n_total, min_xy, min_x, vs, fs)
        if fbest > 0.0 and fbest > best:
            best = fbest
            best_f = f
            best_t = ft
    return best, best_f, best_t


@njit
def presort_rows(X, rows, cont):
    """``(len(cont), len(rows))`` int64: ``rows`` stably sorted by each column ``cont[i]``."""
    m = rows.shape[0]
    out = np.empty((cont.shape[0], m), dtype=np.int64)
    v = np.empty(m)
    for i in range(cont.shape[0]):
        f = cont[i]
        for j in range(m):
            v[j] = X[rows[j], f]
        o = np.argsort(v, kind="mergesort")
        for j in range(m):
            out[i, j] = rows[o[j]]
    return out


@njit
def best_x_presorted(X, order, which, feats, in_xy, nxy, nx, n_total, min_xy, min_x):
    """:func:`best_x_continuous` without sorting: ``order[which[i]]`` holds the node's X rows
    sorted by column ``feats[i]`` (see :func:`presort_rows`); same result."""
    m = order.shape[1]
    vs = np.empty(m)
    fs = np.empty(m)
    parent = xlogy_ratio(nxy, nx, 1.0)
    best = -1.0
    best_f = -1
    best_t = np.nan
    for fi in range(feats.shape[0]):
        f = feats[fi]
        fbest, ft = _scan_sorted_x(
            X, order[which[fi]], f, in_xy, nxy, parent, n_total, min_xy, min_x, vs, fs
        )
        if fbest > 0.0 and fbest > best:
            best = fbest
            best_f = f
            best_t = ft
    return best, best_f, best_t


@njit
def category_counts(codes, rows_xy, rows_x, k):
    """``a[c]`` = XY rows with code c, ``b[c]`` = X rows with code c."""
    a = np.zeros(k)
    b = np.zeros(k)
    for r in rows_xy:
        a[int(codes[r])] += 1.0
    for r in rows_x:
        b[int(codes[r])] += 1.0
    return a, b


@register_warmup("partition.scans")
def _warmup() -> None:
    """Call every kernel once with the dtypes of real calls."""
    x = np.ascontiguousarray(np.array([0.0, 1.0, 1.0, 2.0, 3.0]))
    rows = np.arange(5, dtype=np.int64)
    flags = np.ones(5)
    vs, fs = sorted_with_flags(x, rows, flags)
    out = np.empty(5)
    scan_continuous(vs, fs, 5.0, 5.0, -0.5, 3.5, True, 5.0, 1.0, 1.0, 1.0, 0.0, out)
    scan_continuous(vs, fs, 5.0, 5.0, -0.5, 3.5, False, 5.0, 1.0, 1.0, 1.0, 0.0, out)
    scan_continuous(vs, fs, 5.0, 5.0, -0.5, 3.5, True, 5.0, 1.0, 1.0, 1.0, 0.0, out, 1.0, True)
    X2 = np.ascontiguousarray(np.column_stack([x, x[::-1]]))
    cols = np.arange(2, dtype=np.int64)
    best_x_continuous(X2, rows, flags, cols, 5.0, 5.0, 5.0, 1.0, 1.0)
    order = presort_rows(X2, rows, cols)
    best_x_presorted(X2, order, cols, cols, flags, 5.0, 5.0, 5.0, 1.0, 1.0)
    a, b = category_counts(x, rows, rows, 4)
    order = np.empty(4, dtype=np.int64)
    present = np.ones(4, dtype=np.bool_)
    scan_categorical(a, b, present, False, 5.0, 5.0, 1.0, 5.0, 1.0, 1.0, order, b, 0.0)
    scan_categorical(a, np.ones(4), present, True, 5.0, 5.0, 4.0, 5.0, 1.0, 1.0, order, b, 1.0)
