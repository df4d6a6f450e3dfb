"""numba kernels of the candidate-threshold strategies: one node's sorted values in, split
positions out (see :mod:`engine.cart.candidates` for the definitions).

:func:`node_positions` is what the CART builder calls per feature and node; the
``*_raw`` kernels give a strategy's raw thresholds, :func:`snap_positions` snaps them to
unique-value gaps, :func:`thresholds_of` turns positions into midpoint thresholds.
"""

from __future__ import annotations

import math

import numpy as np

from engine._numba import njit
from engine._random import rng_below

#: strategy codes, in :data:`STRATEGIES` order.
EXHAUSTIVE = 0
QUANTILE = 1
HISTOGRAM = 2
RANDOM = 3
DICS_PAPER = 4
KMEANS1D = 5
CLASS_CENTROID = 6
KDE_VALLEY = 7

#: strategy names in code order.
STRATEGIES = (
    "exhaustive",
    "quantile",
    "histogram",
    "random",
    "dics_paper",
    "kmeans1d",
    "class_centroid",
    "kde_valley",
)
#: strategies that need class labels.
LABEL_AWARE = ("class_centroid",)
#: ``k`` of the quantile fallback.
FALLBACK_Q = 16
#: grid points of ``kde_valley``.
KDE_GRID = 256
#: ``kde_valley`` evaluates the KDE exactly over the unique values up to this many of them,
#: and from linear binning on the grid above it (error O(grid step^2), Wand 1994; the
#: exact sum costs ``n_unique * grid`` exponentials per feature and node).
KDE_EXACT_MAX_UNIQUE = 16
#: ``exp(-z^2 / 2)`` is exactly 0.0 in float64 for ``|z|`` above this (underflow).
_KDE_ZMAX = 38.7
#: Lloyd iterations of ``kmeans1d`` (it stops earlier when the partition no longer changes).
KMEANS1D_MAX_ITER = 100
#: relative ``eps`` added to standard deviations in variance-adjusted boundaries.
STD_EPS = 1e-9

# ---------------------------------------------------------------------------------------
# positions, snapping
# ---------------------------------------------------------------------------------------


@njit
def _before(a, b):
    """Sort order with NaN last: ``a < b``, or ``a`` a number and ``b`` NaN."""
    return a < b or (b != b and a == a)


@njit
def insertion_sort(a, n):
    """Sort ``a[:n]`` ascending in place (NaN last).  For the short arrays of raw
    candidates (numba's quicksort costs about a second of compile time per dtype)."""
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and _before(v, a[j]):
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@njit
def insertion_argsort(keys, n, perm):
    """Stable argsort of ``keys[:n]`` (float64) into ``perm[:n]`` (int64)."""
    for i in range(n):
        perm[i] = i
    for i in range(1, n):
        p = perm[i]
        v = keys[p]
        j = i - 1
        while j >= 0 and _before(v, keys[perm[j]]):
            perm[j + 1] = perm[j]
            j -= 1
        perm[j + 1] = p


@njit
def count_unique(xs):
    """Number of distinct values of sorted ``xs``."""
    n = xs.shape[0]
    if n == 0:
        return 0
    c = 1
    for i in range(1, n):
        if xs[i] != xs[i - 1]:
            c += 1
    return c


@njit
def all_positions(xs, min_samples_leaf, out):
    """Every valid split position of sorted ``xs`` (``xs[p-1] < xs[p]``, both sides holding
    at least ``min_samples_leaf`` rows) into ``out``; returns their number."""
    n = xs.shape[0]
    c = 0
    lo = max(min_samples_leaf, 1)
    hi = n - max(min_samples_leaf, 1)
    for p in range(lo, hi + 1):
        if xs[p - 1] < xs[p]:
            out[c] = p
            c += 1
    return c


@njit
def snap_positions(xs, raw, n_raw, min_samples_leaf, out):
    """Snap ``raw[:n_raw]`` to split positions of sorted ``xs``; sorted, unique, filtered.

    A raw threshold ``tau`` maps to ``p = searchsorted(xs, tau, 'right')`` (rows with
    ``x <= tau`` go left), i.e. to the unique-value gap ``xs[p-1] <= tau < xs[p]``; it is
    dropped when ``p`` is 0 or ``n`` (outside the values), when a side would hold fewer than
    ``min_samples_leaf`` rows, or when it is NaN.  ``raw[:n_raw]`` is sorted in place (it is
    scratch), so positions come out ascending and are deduplicated on the fly: at most
    ``n - 1`` are written to ``out``.  Returns their number.
    """
    n = xs.shape[0]
    lo = max(min_samples_leaf, 1)
    hi = n - max(min_samples_leaf, 1)
    insertion_sort(raw, n_raw)  # NaN last
    c = 0
    for j in range(n_raw):
        t = raw[j]
        if not (t == t):
            break
        p = np.searchsorted(xs, t, side="right")
        if p >= lo and p <= hi and (c == 0 or out[c - 1] != p):
            out[c] = p
            c += 1
    return c


@njit
def midpoint(a, b):
    """Threshold between values ``a < b``: ``a/2 + b/2``, or ``a`` when rounding would give
    ``b`` or an infinity (as scikit-learn), so that ``a <= t < b``."""
    t = a / 2.0 + b / 2.0
    if t >= b or t == np.inf or t == -np.inf:
        t = a
    return t


@njit
def thresholds_of(xs, positions, n_pos):
    """Midpoint thresholds float64 of split positions ``positions[:n_pos]`` of sorted ``xs``."""
    out = np.empty(n_pos, dtype=np.float64)
    for j in range(n_pos):
        p = positions[j]
        out[j] = midpoint(xs[p - 1], xs[p])
    return out


# ---------------------------------------------------------------------------------------
# raw candidates of each strategy (on a node's sorted values)
# ---------------------------------------------------------------------------------------


@njit
def quantile_raw(xs, q, out):
    """``np.quantile(xs, j / (q + 1))`` (linear) for ``j = 1..q`` into ``out``; returns ``q``,
    or -1 when ``n_unique <= q + 1`` (meaning: use every midpoint)."""
    n = xs.shape[0]
    if count_unique(xs) <= q + 1:
        return -1
    for j in range(1, q + 1):
        pos = (n - 1) * (j / (q + 1.0))
        lo = int(math.floor(pos))
        hi = min(lo + 1, n - 1)
        frac = pos - lo
        out[j - 1] = xs[lo] + (xs[hi] - xs[lo]) * frac
    return q


@njit
def histogram_raw(xs, k, out):
    """The ``k - 1`` inner edges of ``k`` equal-width bins over ``[xs[0], xs[-1]]``."""
    n = xs.shape[0]
    lo = xs[0]
    width = xs[n - 1] - lo
    for j in range(1, k):
        out[j - 1] = lo + width * (j / k)
    return max(k - 1, 0)


@njit
def random_positions(xs, k, min_samples_leaf, rng, out):
    """``k`` valid split positions drawn uniformly without replacement (all of them when
    fewer), sorted, into ``out``; returns their number."""
    c = all_positions(xs, min_samples_leaf, out)
    if c <= k:
        return c
    # selection sampling (Knuth, TAOCP vol. 2, Algorithm S): keeps the ascending order
    m = 0
    for i in range(c):
        if rng_below(rng, c - i) < k - m:
            out[m] = out[i]
            m += 1
            if m == k:
                break
    return k


@njit
def _segment_std(xs, a, b, mean):
    """Population std of ``xs[a:b]`` around ``mean``."""
    s = 0.0
    for i in range(a, b):
        d = xs[i] - mean
        s += d * d
    return math.sqrt(s / (b - a)) if b > a else 0.0


@njit
def _boundary(mu_i, s_i, mu_j, s_j, variance_adjusted, eps):
    """Midpoint or variance-adjusted boundary between two means."""
    if not variance_adjusted:
        return 0.5 * (mu_i + mu_j)
    s_i += eps
    s_j += eps
    return (s_i * mu_j + s_j * mu_i) / (s_i + s_j)


@njit
def kmeans1d_raw(xs, k, variance_adjusted, out):
    """1-D k-means on sorted ``xs`` (Lloyd; clusters are contiguous runs, means from prefix
    sums), ``k`` clamped to ``n_unique``; writes the boundaries between adjacent non-empty
    clusters (midpoints of centroids, or variance-adjusted) to ``out``; returns their number.

    Initial centroids: the unique values at ranks ``floor((j + 0.5) n_unique / k)``.
    """
    n = xs.shape[0]
    nu = count_unique(xs)
    k = min(k, nu)
    if k < 2:
        return 0
    u = np.empty(nu, dtype=np.float64)
    u[0] = xs[0]
    c = 1
    for i in range(1, n):
        if xs[i] != xs[i - 1]:
            u[c] = xs[i]
            c += 1
    cs = np.zeros(n + 1, dtype=np.float64)
    for i in range(n):
        cs[i + 1] = cs[i] + xs[i]
    cent = np.empty(k, dtype=np.float64)
    for j in range(k):
        cent[j] = u[int((j + 0.5) * nu / k)]
    ends = np.zeros(k, dtype=np.int64)  # cluster j = [ends[j-1], ends[j])
    prev = np.full(k, -1, dtype=np.int64)
    for _ in range(KMEANS1D_MAX_ITER):
        for j in range(k - 1):
            ends[j] = np.searchsorted(xs, 0.5 * (cent[j] + cent[j + 1]), side="right")
        ends[k - 1] = n
        same = True
        for j in range(k):
            if ends[j] != prev[j]:
                same = False
            prev[j] = ends[j]
        if same:
            break
        a = 0
        for j in range(k):
            b = ends[j]
            if b > a:
                cent[j] = (cs[b] - cs[a]) / (b - a)
            a = b
    eps = STD_EPS * (xs[n - 1] - xs[0])
    m = 0
    a = 0
    last_mu = 0.0
    last_s = 0.0
    have = False
    for j in range(k):
        b = ends[j]
        if b > a:
            mu = (cs[b] - cs[a]) / (b - a)
            s = _segment_std(xs, a, b, mu) if variance_adjusted else 0.0
            if have:
                out[m] = _boundary(last_mu, last_s, mu, s, variance_adjusted, eps)
                m += 1
            last_mu = mu
            last_s = s
            have = True
        a = b
    return m


@njit
def class_centroid_raw(xs, ys, n_classes, variance_adjusted, out):
    """Per-class means and stds of ``xs`` (labels ``ys`` int64 in the same order); classes
    present sorted by mean; the boundary between each adjacent pair into ``out`` (at most
    ``K - 1``); returns their number."""
    n = xs.shape[0]
    cnt = np.zeros(n_classes, dtype=np.float64)
    mean = np.zeros(n_classes, dtype=np.float64)
    for i in range(n):
        cnt[ys[i]] += 1.0
        mean[ys[i]] += xs[i]
    present = 0
    for c in range(n_classes):
        if cnt[c] > 0:
            mean[c] /= cnt[c]
            present += 1
    if present < 2:
        return 0
    var = np.zeros(n_classes, dtype=np.float64)
    if variance_adjusted:
        for i in range(n):
            d = xs[i] - mean[ys[i]]
            var[ys[i]] += d * d
    cls = np.empty(present, dtype=np.int64)
    mu = np.empty(present, dtype=np.float64)
    j = 0
    for c in range(n_classes):
        if cnt[c] > 0:
            cls[j] = c
            mu[j] = mean[c]
            j += 1
    order = np.empty(present, dtype=np.int64)
    insertion_argsort(mu, present, order)
    eps = STD_EPS * (xs[n - 1] - xs[0])
    for j in range(present - 1):
        a = cls[order[j]]
        b = cls[order[j + 1]]
        out[j] = _boundary(
            mean[a],
            math.sqrt(var[a] / cnt[a]),
            mean[b],
            math.sqrt(var[b] / cnt[b]),
            variance_adjusted,
            eps,
        )
    return present - 1


@njit
def kde_density(xs, grid_size):
    """Gaussian KDE (Scott bandwidth ``std(ddof=1) n^(-1/5)``, unnormalised) of sorted ``xs``
    on ``grid_size`` points over ``[xs[0], xs[-1]]``: returns ``(grid, density)``.

    Exact sum over the unique values (with multiplicities) when there are at most
    :data:`KDE_EXACT_MAX_UNIQUE`; otherwise linear binning of the values onto the grid.
    ``density`` is all zeros for fewer than 2 rows or a constant feature.
    """
    n = xs.shape[0]
    grid = np.empty(grid_size, dtype=np.float64)
    dens = np.zeros(grid_size, dtype=np.float64)
    lo = xs[0]
    hi = xs[n - 1]
    step = (hi - lo) / (grid_size - 1)
    for g in range(grid_size):
        grid[g] = lo + step * g
    if n < 2 or hi <= lo:
        return grid, dens
    mean = 0.0
    for i in range(n):
        mean += xs[i]
    mean /= n
    ss = 0.0
    for i in range(n):
        d = xs[i] - mean
        ss += d * d
    h = math.sqrt(ss / (n - 1)) * n ** (-0.2)
    if not h > 0.0:
        return grid, dens
    nu = count_unique(xs)
    if nu <= KDE_EXACT_MAX_UNIQUE:
        i = 0
        while i < n:
            j = i
            while j < n and xs[j] == xs[i]:
                j += 1
            v = xs[i]
            m = j - i
            for g in range(grid_size):
                z = (grid[g] - v) / h
                if z < _KDE_ZMAX and z > -_KDE_ZMAX:  # exp underflows to 0.0 beyond
                    dens[g] += m * math.exp(-0.5 * z * z)
            i = j
        return grid, dens
    binned = np.zeros(grid_size, dtype=np.float64)
    for i in range(n):
        pos = (xs[i] - lo) / step
        b = int(math.floor(pos))
        if b >= grid_size - 1:
            binned[grid_size - 1] += 1.0
            continue
        f = pos - b
        binned[b] += 1.0 - f
        binned[b + 1] += f
    kern = np.empty(grid_size, dtype=np.float64)
    for m in range(grid_size):
        z = m * step / h
        kern[m] = math.exp(-0.5 * z * z)
    reach = min(int(_KDE_ZMAX * h / step) + 1, grid_size - 1)  # kern is 0.0 beyond
    for b in range(grid_size):  # every dens[g] adds its terms in increasing b order
        c = binned[b]
        if c == 0.0:
            continue
        for g in range(max(0, b - reach), min(grid_size, b + reach + 1)):
            dens[g] += c * kern[abs(g - b)]
    return grid, dens


@njit
def kde_valley_raw(xs, grid_size, out):
    """Strict local minima of :func:`kde_density` (``d[g] < d[g-1]`` and ``d[g] < d[g+1]``),
    as grid values, into ``out``; returns their number."""
    grid, dens = kde_density(xs, grid_size)
    m = 0
    for g in range(1, grid_size - 1):
        if dens[g] < dens[g - 1] and dens[g] < dens[g + 1]:
            out[m] = grid[g]
            m += 1
    return m


@njit
def node_positions(
    strategy,
    xs,
    ys,
    n_classes,
    k,
    min_samples_leaf,
    variance_adjusted,
    fallback,
    dict_values,
    n_dict,
    rng,
    raw,
    out,
):
    """Candidate split positions of one feature at one node (sorted, unique, filtered).

    ``xs``: the node's values sorted ascending (float64); ``ys``: their class codes (int64,
    used by ``class_centroid`` only); ``k``: the strategy's ``k``; ``dict_values[:n_dict]``:
    the feature's DICS dictionary entries (``dics_paper``); ``rng``: splitmix64 state;
    ``raw``: float64 scratch of length >= max(k, n_classes, n_dict, KDE_GRID, FALLBACK_Q);
    ``out``: int64 scratch of length ``len(xs)``.  Returns the number of positions written to
    ``out``; a constant feature or fewer than 2 rows gives 0.
    """
    n = xs.shape[0]
    if n < 2 or xs[0] == xs[n - 1]:
        return 0
    if strategy == EXHAUSTIVE:
        return all_positions(xs, min_samples_leaf, out)
    if strategy == RANDOM:
        return random_positions(xs, k, min_samples_leaf, rng, out)
    if strategy == QUANTILE:
        nr = quantile_raw(xs, k, raw)
    elif strategy == HISTOGRAM:
        nr = histogram_raw(xs, k, raw)
    elif strategy == DICS_PAPER:
        for j in range(n_dict):
            raw[j] = dict_values[j]
        nr = n_dict
    elif strategy == KMEANS1D:
        nr = kmeans1d_raw(xs, k, variance_adjusted, raw)
    elif strategy == CLASS_CENTROID:
        nr = class_centroid_raw(xs, ys, n_classes, variance_adjusted, raw)
    else:
        nr = kde_valley_raw(xs, np.int64(KDE_GRID), raw)  # int64, not a literal: one compile
    if nr < 0:
        return all_positions(xs, min_samples_leaf, out)
    c = snap_positions(xs, raw, nr, min_samples_leaf, out)
    if c == 0 and fallback and strategy != QUANTILE:
        nr = quantile_raw(xs, np.int64(FALLBACK_Q), raw)
        if nr < 0:
            return all_positions(xs, min_samples_leaf, out)
        c = snap_positions(xs, raw, nr, min_samples_leaf, out)
    return c
