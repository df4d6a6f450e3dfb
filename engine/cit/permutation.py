"""Monte Carlo permutation tests of conditional inference trees (docs/spec.md section 4).

* p-values follow the Phipson-Smyth +1 rule: right tail (stage A, selector statistics)
  ``p = (1 + #{T_b >= T_obs}) / (B + 1)``, left tail (stage B, weighted child impurity)
  ``p = (1 + #{T_b <= T_obs}) / (B + 1)``; ties count as exceedances.  A relative tolerance
  of 1e-12 makes floating-point ties (the same statistic summed in another order) count.
* Permutation ``b`` of a test draws its own Fisher-Yates shuffle from a splitmix64 stream
  seeded by ``(seed, b)``, so the null values do not depend on the threads or on the block
  sizes: a test is reproducible for a seed.  The null kernels are ``parallel=True`` with
  ``prange`` over permutations only and are called through
  :func:`engine._numba.call_parallel`; blocks of fewer than :data:`PARALLEL_MIN_WORK`
  row-permutations run in their one-thread twins (``*_serial``, the same values).
* Number of permutations ``B``: an integer or a preset at the (adjusted) level ``a``:
  ``minimum = ceil(1/a)``, ``auto = max(ceil(1/a), ceil(z^2 (1 - a) / a))`` with
  ``z = Phi^-1(1 - a)``, ``maximum = ceil(1 / (4 a^2))`` (:func:`n_resamples`).
* Adaptive stopping (:func:`adaptive_stop_index`): ``B`` is raised to at least
  ``n_min = ceil(1/a)``; after ``n >= n_min`` permutations with ``L`` exceedances,
  ``S = BetaCDF(a; 1 + L, 1 + n - L)``; stop as soon as ``S >= gamma`` or ``1 - S >= gamma``
  and return ``(L + 1) / (n + 1)``.  Adaptive tests are also curtailed (Besag & Clifford
  1991): a test stops as soon as ``(L + 1) / (B + 1) >= a``, when it can no longer end
  significant -- the same decision as the full run, after about ``a B`` exceedances (a
  few dozen permutations for a clearly null threshold instead of ``ceil(1/a)``: at the
  Bonferroni level of an exact-threshold search over ``n`` rows ``ceil(1/a)`` grows like
  ``n``, and every one of the ``n`` thresholds ran that many).  For integer parameters
  ``BetaCDF(a; 1 + L, 1 + n - L) = P(Binomial(n + 1, a) >= L + 1)``, which the kernel sums
  in log space.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba  # noqa: E402  (after engine._numba set the cache folder)
import numpy as np

from engine._numba import call_parallel, njit, register_warmup
from engine._random import rng_next
from engine.cit.statistics import statistic
from engine.criteria import (
    class_gains_at,
    class_impurity,
    prefix_class_counts,
    prefix_sums,
    squared_error,
    squared_error_gains_at,
    weighted_class_counts,
)

_TIE = 1e-12


# ---------------------------------------------------------------------------------------
# random permutations
# ---------------------------------------------------------------------------------------


@njit
def _seeded_state(seed, b):
    st = np.empty(1, dtype=np.uint64)
    st[0] = np.uint64(seed) ^ (np.uint64(b + 1) * np.uint64(0xD1B54A32D192ED03))
    rng_next(st)
    return st


@njit
def _shuffle_int(src, dst, st):
    n = src.shape[0]
    for i in range(n):
        dst[i] = src[i]
    for i in range(n - 1, 0, -1):
        u = np.float64(rng_next(st) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        j = np.int64(u * (i + 1))
        if j > i:
            j = i
        t = dst[i]
        dst[i] = dst[j]
        dst[j] = t


@njit
def _shuffle_float(src, dst, st):
    n = src.shape[0]
    for i in range(n):
        dst[i] = src[i]
    for i in range(n - 1, 0, -1):
        u = np.float64(rng_next(st) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        j = np.int64(u * (i + 1))
        if j > i:
            j = i
        t = dst[i]
        dst[i] = dst[j]
        dst[j] = t


# ---------------------------------------------------------------------------------------
# null distributions (parallel over permutations)
# ---------------------------------------------------------------------------------------


@njit
def _selector_perm(code, x, a, n_a, y_code, y_val, n_classes, b, seed):
    """Selector statistic under permutation ``b`` (its own seeded shuffle) of the labels."""
    st = _seeded_state(seed, b)
    n = x.shape[0]
    if code == 0 or code == 1:
        yc = np.empty(n, dtype=np.int64)
        _shuffle_int(y_code, yc, st)
        return statistic(code, x, a, n_a, yc, y_val, n_classes)
    yv = np.empty(n, dtype=np.float64)
    _shuffle_float(y_val, yv, st)
    return statistic(code, x, a, n_a, y_code, yv, n_classes)


@njit(parallel=True)
def selector_null(code, x, a, n_a, y_code, y_val, n_classes, start, count, seed):
    """Selector statistics under permutations ``start .. start + count - 1`` of the labels.

    Arguments as :func:`engine.cit.statistics.statistic`; returns float64 ``(count,)``.
    """
    out = np.empty(count, dtype=np.float64)
    for i in numba.prange(count):
        out[i] = _selector_perm(code, x, a, n_a, y_code, y_val, n_classes, start + i, seed)
    return out


@njit
def selector_null_serial(code, x, a, n_a, y_code, y_val, n_classes, start, count, seed):
    """:func:`selector_null` in one thread (same values; for small blocks)."""
    out = np.empty(count, dtype=np.float64)
    for i in range(count):
        out[i] = _selector_perm(code, x, a, n_a, y_code, y_val, n_classes, start + i, seed)
    return out


@njit
def child_impurity(is_classif, y_code_sorted, y_val_sorted, w, position, criterion, n_classes):
    """Weighted child impurity ``W_L/W i(L) + W_R/W i(R)`` of the split at ``position``
    (rows ``[0, position)`` left) of labels in the feature's sorted order (criteria kernels
    on the two sides' counts or sums; no prefix table)."""
    n = y_code_sorted.shape[0]
    if is_classif:
        left = weighted_class_counts(y_code_sorted[:position], w[:position], n_classes)
        right = weighted_class_counts(y_code_sorted[position:], w[position:], n_classes)
        w_l = left.sum()
        w_r = right.sum()
        w_t = w_l + w_r
        return (w_r / w_t) * class_impurity(right, w_r, criterion) + (w_l / w_t) * class_impurity(
            left, w_l, criterion
        )
    sl = 0.0
    ql = 0.0
    wl = 0.0
    sr = 0.0
    qr = 0.0
    wr = 0.0
    for i in range(n):
        v = y_val_sorted[i]
        if i < position:
            wl += w[i]
            sl += w[i] * v
            ql += w[i] * v * v
        else:
            wr += w[i]
            sr += w[i] * v
            qr += w[i] * v * v
    wt = wl + wr
    return (wr / wt) * squared_error(wr, sr, qr) + (wl / wt) * squared_error(wl, sl, ql)


@njit
def _splitter_perm(
    is_classif, y_code_sorted, y_val_sorted, w, position, criterion, n_classes, b, seed
):
    """Weighted child impurity at ``position`` under permutation ``b`` of the labels."""
    st = _seeded_state(seed, b)
    n = y_code_sorted.shape[0]
    if is_classif:
        yc = np.empty(n, dtype=np.int64)
        _shuffle_int(y_code_sorted, yc, st)
        return child_impurity(True, yc, y_val_sorted, w, position, criterion, n_classes)
    yv = np.empty(n, dtype=np.float64)
    _shuffle_float(y_val_sorted, yv, st)
    return child_impurity(False, y_code_sorted, yv, w, position, criterion, n_classes)


@njit(parallel=True)
def splitter_null(
    is_classif, y_code_sorted, y_val_sorted, w, position, criterion, n_classes, start, count, seed
):
    """Weighted child impurity at ``position`` under permutations ``start ..`` of the labels
    (unit weights ``w``); float64 ``(count,)``."""
    out = np.empty(count, dtype=np.float64)
    for i in numba.prange(count):
        out[i] = _splitter_perm(
            is_classif,
            y_code_sorted,
            y_val_sorted,
            w,
            position,
            criterion,
            n_classes,
            start + i,
            seed,
        )
    return out


@njit
def splitter_null_serial(
    is_classif, y_code_sorted, y_val_sorted, w, position, criterion, n_classes, start, count, seed
):
    """:func:`splitter_null` in one thread (same values; for small blocks)."""
    out = np.empty(count, dtype=np.float64)
    for i in range(count):
        out[i] = _splitter_perm(
            is_classif,
            y_code_sorted,
            y_val_sorted,
            w,
            position,
            criterion,
            n_classes,
            start + i,
            seed,
        )
    return out


@njit
def _splitter_all_perm(
    is_classif, y_code_sorted, y_val_sorted, w, positions, criterion, n_classes, b, seed, out_row
):
    """Weighted child impurity at every position under permutation ``b`` into ``out_row``."""
    st = _seeded_state(seed, b)
    n = y_code_sorted.shape[0]
    if is_classif:
        yc = np.empty(n, dtype=np.int64)
        _shuffle_int(y_code_sorted, yc, st)
        prefix = prefix_class_counts(yc, w, n_classes)
        total = prefix[n]
        parent = class_impurity(total, total.sum(), criterion)
        g = class_gains_at(prefix, positions, criterion)
    else:
        yv = np.empty(n, dtype=np.float64)
        _shuffle_float(y_val_sorted, yv, st)
        prefix = prefix_sums(yv, w)
        parent = squared_error(prefix[n, 0], prefix[n, 1], prefix[n, 2])
        g = squared_error_gains_at(prefix, positions)
    for j in range(positions.shape[0]):
        out_row[j] = parent - g[j]


@njit(parallel=True)
def splitter_null_all(
    is_classif, y_code_sorted, y_val_sorted, w, positions, criterion, n_classes, start, count, seed
):
    """Weighted child impurity at every split position under permutations ``start ..``:
    float64 ``(count, len(positions))``.  One shuffle and one prefix scan per permutation
    serve all positions (permutation ``b`` is the same shuffle as in :func:`splitter_null`)."""
    out = np.empty((count, positions.shape[0]), dtype=np.float64)
    for i in numba.prange(count):
        _splitter_all_perm(
            is_classif,
            y_code_sorted,
            y_val_sorted,
            w,
            positions,
            criterion,
            n_classes,
            start + i,
            seed,
            out[i],
        )
    return out


@njit
def splitter_null_all_serial(
    is_classif, y_code_sorted, y_val_sorted, w, positions, criterion, n_classes, start, count, seed
):
    """:func:`splitter_null_all` in one thread (same values; for small blocks)."""
    out = np.empty((count, positions.shape[0]), dtype=np.float64)
    for i in range(count):
        _splitter_all_perm(
            is_classif,
            y_code_sorted,
            y_val_sorted,
            w,
            positions,
            criterion,
            n_classes,
            start + i,
            seed,
            out[i],
        )
    return out


#: Below this many row-permutations (rows x permutations) a null block runs in one thread:
#: waking the worker threads costs more than it saves on small blocks, and far more when
#: the machine is busy (measured: a CIT on diabetes 10x slower with 2 threads on a loaded
#: 2-core machine).
PARALLEL_MIN_WORK = 1_000_000


#: Adaptive tests draw permutations in doubling blocks of at most this many row-permutations
#: (at least 64 permutations), so a test does not overshoot its stopping point by more than
#: about this much work.
BLOCK_WORK = 1 << 24


def _max_block(n_rows: int) -> int:
    return max(64, BLOCK_WORK // max(int(n_rows), 1))


def _null(parallel_kernel, serial_kernel, work: int, *args):
    if work < PARALLEL_MIN_WORK:
        return serial_kernel(*args)
    return call_parallel(parallel_kernel, *args)


# ---------------------------------------------------------------------------------------
# adaptive stopping
# ---------------------------------------------------------------------------------------


@njit
def beta_cdf_int(alpha, n, L):
    """``BetaCDF(alpha; 1 + L, 1 + n - L) = P(Binomial(n + 1, alpha) >= L + 1)``."""
    m = n + 1
    if alpha <= 0.0:
        return 0.0
    if alpha >= 1.0:
        return 1.0
    la = math.log(alpha)
    lb = math.log1p(-alpha)
    lgm = math.lgamma(m + 1.0)
    below = 0.0
    for k in range(L + 1):
        below += math.exp(
            lgm - math.lgamma(k + 1.0) - math.lgamma(m - k + 1.0) + k * la + (m - k) * lb
        )
    s = 1.0 - below
    if s < 0.0:
        s = 0.0
    return s


@njit
def adaptive_stop_index(exceed, n_before, L_before, alpha, gamma, n_min, n_max=0):
    """Scan exceedance flags (int64 0/1) after ``n_before`` permutations with ``L_before``
    exceedances; return ``(i, L)``: the number of flags consumed when the test stops
    (``-1`` if it does not stop within ``exceed``) and the exceedances counted.

    The test stops by the Beta-CDF rule (from ``n >= n_min`` on) or, when ``n_max > 0``
    (the test's ``B``), by curtailment (Besag & Clifford 1991, "Sequential Monte Carlo
    p-values", Biometrika 78(2)) as soon as ``(L + 1) / (n_max + 1) >= alpha``: then no
    continuation can end with ``p < alpha`` (the p-value at any later stop ``n' <= n_max``
    with ``L' >= L`` exceedances is at least that), so the test's decision is known, the
    same as the full run's, after as few as ``alpha * n_max`` permutations instead of
    ``n_min``."""
    L = L_before
    for i in range(exceed.shape[0]):
        L += exceed[i]
        n = n_before + i + 1
        if n_max > 0 and (L + 1.0) / (n_max + 1.0) >= alpha:
            return i + 1, L
        if n >= n_min:
            s = beta_cdf_int(alpha, n, L)
            if s >= gamma or 1.0 - s >= gamma:
                return i + 1, L
    return -1, L


def n_resamples(spec, alpha: float) -> int:
    """Permutations for ``spec`` (int, 'minimum', 'auto' or 'maximum') at level ``alpha``."""
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if spec < 1:
            raise ValueError(f"n_resamples must be >= 1, got {spec}")
        return int(spec)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    lo = math.ceil(1.0 / alpha - 1e-9)
    if spec == "minimum":
        return lo
    if spec == "auto":
        from scipy.stats import norm

        z = float(norm.ppf(1.0 - alpha))
        return max(lo, math.ceil(z * z * (1.0 - alpha) / alpha - 1e-9))
    if spec == "maximum":
        return math.ceil(1.0 / (4.0 * alpha * alpha) - 1e-9)
    raise ValueError(
        f"n_resamples must be a positive int or one of 'minimum', 'auto', 'maximum', got {spec!r}"
    )


@dataclass
class PermutationResult:
    """Outcome of one permutation test."""

    statistic: float
    p_value: float
    n_permutations: int
    n_exceed: int
    null: np.ndarray | None = None


def run_test(
    null_block,
    t_obs: float,
    B: int,
    *,
    tail: str = "right",
    alpha: float = 0.05,
    adaptive: bool = False,
    gamma: float = 0.95,
    keep_null: bool = False,
    max_block: int | None = None,
) -> PermutationResult:
    """Monte Carlo +1 p-value of ``t_obs`` against ``null_block(start, count)``.

    ``null_block`` returns the statistics of permutations ``start .. start + count - 1``.
    With ``adaptive`` the Beta-CDF rule may stop early (``B`` is raised to ``ceil(1/alpha)``
    first) or curtailment end the test early (:func:`adaptive_stop_index`), permutations
    being drawn in doubling blocks of at most ``max_block``; the result counts only the
    permutations used.
    """
    n_min = math.ceil(1.0 / alpha - 1e-9)
    if adaptive:
        B = max(B, n_min)
    tol = _TIE * max(1.0, abs(t_obs))
    n = 0
    L = 0
    kept = []
    # adaptive: small first blocks (doubling), so a test curtailed after a few dozen
    # permutations does not compute ceil(1/alpha) of them first
    block = min(B, 64) if adaptive else B
    while n < B:
        count = min(block, B - n)
        if adaptive and max_block is not None:
            count = min(count, max_block)
        vals = null_block(n, count)
        if tail == "right":
            flags = (vals >= t_obs - tol).astype(np.int64)
        else:
            flags = (vals <= t_obs + tol).astype(np.int64)
        if adaptive:
            used, L_new = adaptive_stop_index(flags, n, L, alpha, gamma, n_min, B)
            if used >= 0:
                if keep_null:
                    kept.append(vals[:used])
                n += used
                L = L_new
                break
            L = L_new
        else:
            L += int(flags.sum())
        if keep_null:
            kept.append(vals)
        n += count
        block *= 2
    null = np.concatenate(kept) if keep_null and kept else None
    return PermutationResult(float(t_obs), (L + 1.0) / (n + 1.0), n, L, null)


def selector_test(
    code, x, a, n_a, y_code, y_val, n_classes, B, seed, **kwargs
) -> PermutationResult:
    """Right-tailed permutation test of the selector statistic ``code`` of one feature.

    Arrays must be C-contiguous float64 ``x``/``y_val`` and int64 ``a``/``y_code``;
    ``kwargs`` go to :func:`run_test` (``alpha``, ``adaptive``, ``gamma``, ``keep_null``).
    """
    t_obs = statistic(code, x, a, n_a, y_code, y_val, n_classes)

    def block(start, count):
        return _null(
            selector_null,
            selector_null_serial,
            count * x.shape[0],
            code,
            x,
            a,
            n_a,
            y_code,
            y_val,
            n_classes,
            start,
            count,
            seed,
        )

    return run_test(block, t_obs, B, tail="right", max_block=_max_block(x.shape[0]), **kwargs)


def splitter_test(
    is_classif, y_code_sorted, y_val_sorted, position, criterion, n_classes, B, seed, **kwargs
) -> PermutationResult:
    """Left-tailed permutation test of the weighted child impurity of one split position."""
    w = np.ones(y_code_sorted.shape[0])
    t_obs = child_impurity(
        is_classif, y_code_sorted, y_val_sorted, w, position, criterion, n_classes
    )

    def block(start, count):
        return _null(
            splitter_null,
            splitter_null_serial,
            count * w.shape[0],
            is_classif,
            y_code_sorted,
            y_val_sorted,
            w,
            position,
            criterion,
            n_classes,
            start,
            count,
            seed,
        )

    return run_test(block, t_obs, B, tail="left", max_block=_max_block(w.shape[0]), **kwargs)


def splitter_tests(
    is_classif,
    y_code_sorted,
    y_val_sorted,
    positions,
    criterion,
    n_classes,
    B,
    seed,
    *,
    alpha=0.05,
    adaptive=False,
    gamma=0.95,
    keep_null=False,
    stop_at_first=False,
) -> list[PermutationResult]:
    """Left-tailed tests of the weighted child impurity at every split position at once.

    All positions share the permutations (permutation ``b`` of position ``j`` is the one
    :func:`splitter_test` would draw with the same ``seed``), so the result for each
    position equals :func:`splitter_test`'s; the cost is one prefix scan per permutation
    for all positions.  Adaptive stopping applies to each position separately.

    ``stop_at_first`` (threshold scanning: positions in scanning order, the scan stops at
    the first with ``p < alpha``): return only the results up to and including the first
    significant position, and stop drawing permutations as soon as those are decided
    (with adaptive stopping, positions after a decided significant one are dropped and the
    run ends once every position before it is decided).  Each returned result equals
    :func:`splitter_test`'s.  Returns a list of :class:`PermutationResult`, one per
    position (or per position up to the first significant one).
    """
    positions = np.ascontiguousarray(positions, dtype=np.int64)
    m = positions.shape[0]
    w = np.ones(y_code_sorted.shape[0])
    t_obs = np.array(
        [
            child_impurity(is_classif, y_code_sorted, y_val_sorted, w, int(q), criterion, n_classes)
            for q in positions
        ]
    )
    n_min = math.ceil(1.0 / alpha - 1e-9)
    if adaptive:
        B = max(B, n_min)
    tol = _TIE * np.maximum(1.0, np.abs(t_obs))
    n_used = np.zeros(m, dtype=np.int64)
    L = np.zeros(m, dtype=np.int64)
    done = np.zeros(m, dtype=bool)
    kept = [[] for _ in range(m)] if keep_null else None
    n = 0
    # adaptive: small first blocks (doubling), so a test curtailed after a few dozen
    # permutations does not compute ceil(1/alpha) of them first
    block = min(B, 64) if adaptive else B
    limit = m  # positions from ``limit`` on are not needed (after a significant one)
    while n < B and not done[:limit].all():
        live = np.flatnonzero(~done[:limit])
        count = min(block, B - n, max(1, 2_000_000 // max(live.size, 1)))
        if adaptive:
            count = min(count, _max_block(w.shape[0]))
        vals = _null(
            splitter_null_all,
            splitter_null_all_serial,
            count * (w.shape[0] + live.size),
            is_classif,
            y_code_sorted,
            y_val_sorted,
            w,
            positions[live],
            criterion,
            n_classes,
            n,
            count,
            seed,
        )
        for c, j in enumerate(live):
            col = vals[:, c]
            flags = (col <= t_obs[j] + tol[j]).astype(np.int64)
            if adaptive:
                used, L_new = adaptive_stop_index(flags, n, int(L[j]), alpha, gamma, n_min, B)
                L[j] = L_new
                if used >= 0:
                    n_used[j] = n + used
                    done[j] = True
                    if keep_null:
                        kept[j].append(col[:used])
                    continue
            else:
                L[j] += int(flags.sum())
            n_used[j] = n + count
            if keep_null:
                kept[j].append(col)
        n += count
        block *= 2
        if stop_at_first:
            sig = np.flatnonzero(
                done[:limit] & ((L[:limit] + 1.0) / (n_used[:limit] + 1.0) < alpha)
            )
            if sig.size:
                limit = int(sig[0]) + 1
    if stop_at_first and n >= B:  # every position left ran all B permutations
        sig = np.flatnonzero((L[:limit] + 1.0) / (n_used[:limit] + 1.0) < alpha)
        if sig.size:
            limit = int(sig[0]) + 1
    return [
        PermutationResult(
            float(t_obs[j]),
            (L[j] + 1.0) / (n_used[j] + 1.0),
            int(n_used[j]),
            int(L[j]),
            np.concatenate(kept[j]) if keep_null else None,
        )
        for j in range(limit)
    ]


@register_warmup("cit.permutation")
def _warmup() -> None:
    x = np.array([0.0, 1.0, 2.0, 3.0])
    a = np.array([0, 0, 1, 1], dtype=np.int64)
    yc = np.array([0, 1, 0, 1], dtype=np.int64)
    yv = np.array([0.0, 1.0, 0.5, 2.0])
    for code in (0, 1, 2, 3):
        selector_test(code, x, a, 2, yc, yv, 2, 4, 1)
    for crit in (0, 1):
        splitter_test(True, yc, yv, 2, crit, 2, 4, 1)
    splitter_test(False, yc, yv, 2, 2, 1, 4, 1)
    for crit in (0, 1):
        splitter_tests(True, yc, yv, np.array([1, 2]), crit, 2, 4, 1)
    splitter_tests(False, yc, yv, np.array([1, 2]), 2, 1, 4, 1)
    adaptive_stop_index(np.zeros(3, dtype=np.int64), 0, 0, 0.5, 0.95, 2)
    adaptive_stop_index(np.zeros(3, dtype=np.int64), 0, 0, 0.5, 0.95, 2, 4)
    # the tests above use the one-thread kernels (tiny blocks); compile the parallel ones too
    w = np.ones(4)
    pos = np.array([1, 2], dtype=np.int64)
    for kernel in (selector_null, selector_null_serial):
        for code in (0, 1, 2, 3):
            kernel(code, x, a, 2, yc, yv, 2, 0, 2, 1)
    for kernel in (splitter_null, splitter_null_serial):
        for crit in (0, 1):
            kernel(True, yc, yv, w, 2, crit, 2, 0, 2, 1)
        kernel(False, yc, yv, w, 2, 2, 1, 0, 2, 1)
    for kernel in (splitter_null_all, splitter_null_all_serial):
        for crit in (0, 1):
            kernel(True, yc, yv, w, pos, crit, 2, 0, 2, 1)
        kernel(False, yc, yv, w, pos, 2, 1, 0, 2, 1)
