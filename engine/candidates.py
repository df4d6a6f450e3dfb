"""Candidate thresholds of a continuous feature at a node (SPEC section 5, DICS).

Every strategy returns a sorted array of thresholds **snapped** to the midpoint of the
unique-value gap that contains each raw candidate, deduplicated (so at most
``n_unique - 1``), then filtered by ``min_samples_leaf``; the builder scores them all with
the same impurity kernel (:mod:`engine.criteria`).  Snapping: with ``u`` the sorted unique
values, a raw candidate ``tau`` with ``u[i] <= tau < u[i+1]`` becomes
``(u[i] + u[i+1]) / 2``; candidates below ``u[0]`` or at/above ``u[-1]`` are dropped.

Strategies (``k`` is the ``n_candidates`` parameter of the estimators):

==================  ==========================================================================
``exhaustive``      all midpoints between consecutive distinct values (CART).
``quantile``        ``np.quantile(x, j / (k + 1))``, ``j = 1..k`` (linear interpolation,
                    default ``k = 16``); all midpoints when ``n_unique <= k + 1``.
``histogram``       the ``k - 1`` inner edges of ``k`` equal-width bins over ``[min, max]``
                    (default ``k = 16``).
``random``          ``k`` midpoints drawn uniformly without replacement among those allowed
                    by ``min_samples_leaf`` (default ``k = 16``; seeded).
``dics_paper``      the global DICS dictionary (:func:`dics_dictionary`: mini-batch k-means
                    with K = number of classes on standardised ``X``, the ``m`` farthest
                    centroid pairs, variance-adjusted boundaries in raw units); the builder
                    can sample ``k`` dictionary entries per node and remove used ones.
``kmeans1d``        1-D k-means (Lloyd, initialised at evenly spaced unique values) on the
                    node's values, ``k`` clusters (default: number of classes, 8 for
                    regression); midpoints of adjacent centroids (or variance-adjusted).
``class_centroid``  per-class mean and std of the feature at the node; the variance-adjusted
                    boundary between adjacent class means (at most ``K - 1``; label-aware,
                    classification only).
``kde_valley``      strict local minima of a Gaussian KDE (Scott bandwidth
                    ``std(ddof=1) n^(-1/5)``) on a 256-point grid over ``[min, max]``.
==================  ==========================================================================

When a strategy other than ``exhaustive``/``random``/``quantile`` yields no candidate for a
feature, the ``quantile`` strategy with ``k = 16`` is used instead (``fallback=True``).  For
``dics_paper`` the builder applies the fallback per node (only when no feature has a
candidate), so a node keeps at most ``m`` candidates per feature.  Candidate strategies use
row counts, not sample weights; weights enter through the impurity kernel.

Variance-adjusted boundary of clusters (or classes) ``i < j`` along a feature:
``zeta = (s_i mu_j + s_j mu_i) / (s_i + s_j)`` with ``s`` the within-cluster standard deviation
plus ``eps`` (the point at equal standardised distance from both means).

Public API: :data:`STRATEGIES`, :func:`strategies_for`, :func:`candidate_thresholds`,
:func:`dics_dictionary` (returns :class:`DICSDictionary`).  The numba kernels (``*_raw``,
:func:`snap_positions`, :func:`node_positions`) work on one node's sorted values and are
what :mod:`engine.cart` calls at every node.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from engine._numba import njit, register_warmup

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


def strategy_code(strategy: str, task: str = "classification") -> int:
    """Code of a strategy name; ``ValueError`` naming the allowed values otherwise."""
    allowed = strategies_for(task)
    if strategy not in allowed:
        extra = ""
        if strategy in LABEL_AWARE and task == "regression":
            extra = f" ({strategy!r} needs class labels)"
        raise ValueError(
            f"splitter must be one of {list(allowed)} for {task}, got {strategy!r}{extra}"
        )
    return STRATEGIES.index(strategy)


def strategies_for(task: str) -> tuple[str, ...]:
    """Strategy names usable for ``task`` (regression has no label-aware strategy)."""
    if task == "regression":
        return tuple(s for s in STRATEGIES if s not in LABEL_AWARE)
    return STRATEGIES


def default_k(strategy: str, n_classes: int) -> int:
    """Default ``k`` of a strategy (0 = not used / all): 16 for quantile, histogram and
    random; the number of classes for kmeans1d (8 for regression, ``n_classes == 0``);
    0 (no per-node sampling) for dics_paper."""
    if strategy in ("quantile", "histogram", "random"):
        return 16
    if strategy == "kmeans1d":
        return n_classes if n_classes >= 2 else 8
    return 0


# ---------------------------------------------------------------------------------------
# random numbers (splitmix64; the state is a uint64 array of length 1)
# ---------------------------------------------------------------------------------------


@njit
def rng_next(state):
    """Next 64-bit output of the splitmix64 generator whose state is ``state[0]`` (uint64)."""
    state[0] = state[0] + np.uint64(0x9E3779B97F4A7C15)
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit
def rng_below(state, m):
    """Uniform integer in ``[0, m)`` (m >= 1), from the top 53 bits."""
    u = np.float64(rng_next(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    r = np.int64(u * m)
    return r if r < m else m - 1


def rng_state(random_state) -> np.ndarray:
    """A fresh splitmix64 state from ``random_state`` (None, int or ``np.random.RandomState``)."""
    from sklearn.utils import check_random_state

    seed = check_random_state(random_state).randint(0, 2**31 - 1)
    return np.array([seed], dtype=np.uint64)


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


# ---------------------------------------------------------------------------------------
# DICS dictionary (once per fit)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DICSDictionary:
    """The global DICS candidate dictionary of a training matrix.

    ``offsets`` int64 ``(n_features + 1,)`` and ``values`` float64: feature ``j``'s raw-unit
    thresholds are ``values[offsets[j]:offsets[j + 1]]`` (sorted, unique, at most ``m``;
    empty for categorical or excluded features).  ``pairs`` int64 ``(m, 2)``: the kept
    centroid pairs, farthest first; ``centers`` and ``stds``: float64 ``(K, n_used)`` centroids
    and within-cluster stds in standardised units of the used features ``used`` (int64).
    """

    offsets: np.ndarray
    values: np.ndarray
    pairs: np.ndarray
    centers: np.ndarray
    stds: np.ndarray
    used: np.ndarray
    n_clusters: int
    m_pairs: int
    variance_adjusted: bool

    def feature(self, j: int) -> np.ndarray:
        """Thresholds of feature ``j`` (raw units, sorted)."""
        return self.values[self.offsets[j] : self.offsets[j + 1]]


_CONTROLLER = []


def _openmp_controller():
    """A ``threadpoolctl.ThreadpoolController`` made once, after scikit-learn's OpenMP
    runtime is loaded (``threadpool_limits`` rescans the libraries, ~3 ms per call)."""
    if not _CONTROLLER:
        import sklearn.cluster  # noqa: F401  (loads the OpenMP runtime first)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def default_m_pairs(n_clusters: int) -> int:
    """``K (K - 1) / 2`` for ``K <= 5``, else 25 (the DICS paper)."""
    all_pairs = n_clusters * (n_clusters - 1) // 2
    return all_pairs if n_clusters <= 5 else min(25, all_pairs)


def dics_dictionary(
    X,
    n_clusters: int,
    *,
    m_pairs: int | None = None,
    variance_adjusted: bool = True,
    random_state=None,
    features=None,
    batch_size: int = 512,
) -> DICSDictionary:
    """DICS candidate dictionary (Mazumder & Yu, arXiv 2608.20258, Algorithm 1).

    1. Standardise the used columns of ``X`` (mean 0, std 1; constant columns keep std 1).
    2. scikit-learn ``MiniBatchKMeans(n_clusters, init='k-means++', batch_size)`` once on
       them (``n_clusters`` clamped to the number of rows; run with one OpenMP thread).
    3. Keep the ``m`` centroid pairs farthest apart (Euclidean; ties by pair order);
       ``m`` defaults to :func:`default_m_pairs`.
    4. For every used feature ``f`` and pair ``(i, j)``: the boundary
       ``zeta = (s_i mu_j + s_j mu_i) / (s_i + s_j)`` (``s`` within-cluster std + 1e-9, the
       plain midpoint when ``variance_adjusted`` is False), mapped back to raw units.

    ``features``: indices (or bool mask) of the columns to use (default all).  Fewer than 2
    clusters or rows give an empty dictionary.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    n, p = X.shape
    if features is None:
        used = np.arange(p, dtype=np.int64)
    else:
        f = np.asarray(features)
        used = np.flatnonzero(f).astype(np.int64) if f.dtype == bool else f.astype(np.int64)
    K = int(min(int(n_clusters), n))
    m = default_m_pairs(K) if m_pairs is None else int(m_pairs)
    if m < 0:
        raise ValueError(f"dics_pairs must be a positive int or None, got {m_pairs!r}")
    empty = DICSDictionary(
        offsets=np.zeros(p + 1, dtype=np.int64),
        values=np.empty(0),
        pairs=np.empty((0, 2), dtype=np.int64),
        centers=np.empty((0, used.size)),
        stds=np.empty((0, used.size)),
        used=used,
        n_clusters=K,
        m_pairs=0,
        variance_adjusted=bool(variance_adjusted),
    )
    if K < 2 or used.size == 0 or m == 0:
        return empty
    from sklearn.cluster import MiniBatchKMeans

    Z = X[:, used]
    mean = Z.mean(axis=0)
    sd = Z.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Z = (Z - mean) / sd
    # One OpenMP thread: on a busy 2-core machine scikit-learn's OpenMP barriers made the
    # same fit take 20 ms to 3.4 s (measured, 100k x 20); single-threaded it is ~0.2 s.
    with warnings.catch_warnings(), _openmp_controller().limit(limits=1, user_api="openmp"):
        warnings.simplefilter("ignore")
        km = MiniBatchKMeans(
            n_clusters=K,
            init="k-means++",
            batch_size=batch_size,
            random_state=random_state,
            n_init="auto",
        ).fit(Z)
    centers = km.cluster_centers_
    labels = km.labels_
    stds = np.zeros_like(centers)
    for c in range(K):
        rows = Z[labels == c]
        if rows.shape[0]:
            stds[c] = rows.std(axis=0)
    ii, jj = np.triu_indices(K, 1)
    dist = np.linalg.norm(centers[ii] - centers[jj], axis=1)
    keep = np.argsort(-dist, kind="stable")[:m]
    pairs = np.column_stack([ii[keep], jj[keep]]).astype(np.int64)
    mu_i, mu_j = centers[pairs[:, 0]], centers[pairs[:, 1]]
    if variance_adjusted:
        s_i, s_j = stds[pairs[:, 0]] + 1e-9, stds[pairs[:, 1]] + 1e-9
        zeta = (s_i * mu_j + s_j * mu_i) / (s_i + s_j)
    else:
        zeta = 0.5 * (mu_i + mu_j)
    raw = zeta * sd + mean  # (m, n_used)
    per_feature = [np.empty(0)] * p
    for col, j in enumerate(used):
        per_feature[j] = np.unique(raw[:, col])
    offsets = np.zeros(p + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([a.size for a in per_feature])
    values = np.ascontiguousarray(np.concatenate(per_feature), dtype=np.float64)
    return DICSDictionary(
        offsets=offsets,
        values=values,
        pairs=pairs,
        centers=centers,
        stds=stds,
        used=used,
        n_clusters=K,
        m_pairs=int(pairs.shape[0]),
        variance_adjusted=bool(variance_adjusted),
    )


# ---------------------------------------------------------------------------------------
# public one-feature API
# ---------------------------------------------------------------------------------------


def _class_codes(y, n_classes):
    y = np.asarray(y)
    if y.dtype.kind in "iub" and n_classes is not None:
        codes = y.astype(np.int64)
        if codes.size and (codes.min() < 0 or codes.max() >= n_classes):
            raise ValueError(f"y must hold class codes 0..{n_classes - 1}")
        return codes, int(n_classes)
    classes, codes = np.unique(y, return_inverse=True)
    return codes.astype(np.int64).reshape(-1), max(int(classes.size), 1)


def candidate_thresholds(
    x,
    y=None,
    strategy: str = "exhaustive",
    k: int | None = None,
    random_state=None,
    *,
    task: str | None = None,
    n_classes: int | None = None,
    min_samples_leaf: int = 1,
    variance_adjusted: bool | None = None,
    fallback: bool = True,
    dictionary=None,
    m_pairs: int | None = None,
) -> np.ndarray:
    """Candidate thresholds of one continuous feature: sorted float64, snapped, unique.

    Parameters
    ----------
    x : array (n,) float
        The feature's values at the node (finite).
    y : array (n,), optional
        Class labels (classification) or float targets.  Needed by ``class_centroid``; sets
        the default ``k`` of ``kmeans1d`` and the clusters of ``dics_paper`` (number of
        classes).  Regression when ``task='regression'`` or ``y`` is float.
    strategy : one of :data:`STRATEGIES`
    k : int, optional
        The strategy's ``k`` (see the module docstring); ``None`` = its default.
        For ``dics_paper`` here: ignored (no per-node sampling on one feature).
    random_state : int, RandomState or None
        Seed of ``random`` and of the k-means of ``dics_paper``.
    n_classes : int, optional
        With integer ``y``: the codes are ``0..n_classes-1``.
    min_samples_leaf : int
        Drop thresholds leaving fewer rows on a side.
    variance_adjusted : bool, optional
        Boundaries of ``dics_paper``/``class_centroid`` (default True) and ``kmeans1d``
        (default False).
    fallback : bool
        Use ``quantile`` (k = 16) when the strategy yields nothing.
    dictionary : array of float, optional
        ``dics_paper`` only: this feature's global dictionary thresholds (e.g.
        ``DICSDictionary.feature(j)``).  Without it the dictionary is computed from ``x``
        alone (k-means on the standardised feature).
    m_pairs : int, optional
        ``dics_paper`` without ``dictionary``: centroid pairs kept.

    Returns
    -------
    float64 array of thresholds (midpoints of unique-value gaps), ascending; empty for a
    constant feature or fewer than 2 rows.

    Raises
    ------
    ValueError
        Unknown strategy (the message lists them), ``class_centroid`` without class labels,
        non-finite ``x``, bad ``k``.
    """
    x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(x)):
        raise ValueError("x holds NaN or infinite values")
    if task is None:
        task = (
            "regression" if y is not None and np.asarray(y).dtype.kind == "f" else "classification"
        )
    code = strategy_code(strategy, task)
    if strategy == "class_centroid" and y is None:
        raise ValueError("strategy 'class_centroid' needs the class labels y")
    if task == "classification" and y is not None:
        ys, K = _class_codes(y, n_classes)
        if ys.shape != x.shape:
            raise ValueError(f"y has shape {ys.shape}, expected {x.shape} like x")
    else:
        ys, K = np.zeros(x.shape[0], dtype=np.int64), 0
    if k is None:
        k = default_k(strategy, K)
    k = int(k)
    if strategy in ("quantile", "histogram", "random", "kmeans1d") and k < 1:
        raise ValueError(f"n_candidates (k) must be a positive int for {strategy!r}, got {k}")
    va = strategy != "kmeans1d" if variance_adjusted is None else bool(variance_adjusted)
    order = np.argsort(x, kind="stable")
    xs = np.ascontiguousarray(x[order])
    ysorted = np.ascontiguousarray(ys[order])
    dvals = np.empty(0)
    if strategy == "dics_paper":
        if dictionary is None:
            d = dics_dictionary(
                x.reshape(-1, 1),
                K if K >= 2 else 8,
                m_pairs=m_pairs,
                variance_adjusted=va,
                random_state=random_state,
            )
            dvals = d.feature(0)
        else:
            dvals = np.array(dictionary, dtype=np.float64, order="C").reshape(-1)
    raw = np.empty(max(k, K, dvals.size, KDE_GRID, FALLBACK_Q) + 1, dtype=np.float64)
    out = np.empty(max(xs.shape[0], 1), dtype=np.int64)
    n_pos = node_positions(
        code,
        xs,
        ysorted,
        max(K, 1),
        k,
        int(min_samples_leaf),
        va,
        bool(fallback),
        dvals,
        dvals.size,
        rng_state(random_state),
        raw,
        out,
    )
    return thresholds_of(xs, out, n_pos)


@register_warmup("candidates")
def _warmup() -> None:
    """Compile the per-node kernels with the dtypes of real calls."""
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    y = np.array([0, 0, 1, 1, 0, 1], dtype=np.int64)
    for s in STRATEGIES:
        candidate_thresholds(x, y, s, random_state=0, dictionary=np.array([1.5, 2.5]))
    kde_density(x, KDE_GRID)
