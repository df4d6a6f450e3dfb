"""Asymptotic conditional inference tests and maximally selected split statistics, as R
partykit's ``ctree`` computes them through libcoin (Strasser & Weber 1999; Hothorn, Hornik,
van de Wiel & Zeileis 2006; Hothorn, Hornik & Zeileis 2006, section 3).

At a node with ``n`` rows the response enters through its influence function ``h(y)``:
a class target with ``K = 2`` classes has ``h = 1{y = second class}`` (``Q = 1``), with
``K > 2`` classes the ``K`` class dummies (``Q = K``); a numeric target ``h = y``
(``Q = 1``) -- partykit's ``.y2infl`` for factors and numeric responses.  A feature enters
through ``g(x)``: the value itself for a numeric feature (``P = 1``), the level dummies for a
categorical one (``P`` = its levels).  The linear statistic

    T = vec(sum_i g(x_i) h(y_i)^T)                                   (P x Q, vec column-major)

has, under the permutations of ``h`` within the node (Strasser & Weber 1999, Theorem 1),

    mu    = E(T)   = vec((sum_i g(x_i)) mean_h^T)
    Sigma = Cov(T) = n / (n - 1) S_h (x) (sum_i g g^T) - 1 / (n - 1) S_h (x) (sum g)(sum g)^T

with ``S_h = (1 / n) sum_i (h_i - mean_h)(h_i - mean_h)^T`` and ``(x)`` the Kronecker product
(libcoin's ``ExpectationLinearStatistic`` / ``CovarianceLinearStatistic``).  The two
standardised forms (libcoin's ``doTest``):

* ``quadratic``: ``c = (T - mu)^T Sigma^+ (T - mu)`` with the Moore-Penrose inverse (eigenvalues
  below ``sqrt(eps)`` times the largest dropped, as ``C_MPinv_sym``), ``p = P(chi2_df > c)``,
  ``df = rank(Sigma)``.  For a numeric feature this is ``(n - 1) eta^2`` (classes; eta the
  correlation ratio) or ``(n - 1) r^2`` (numeric target; r Pearson's correlation);
* ``maximum``: ``z = max_k |T_k - mu_k| / sqrt(Sigma_kk)`` over the entries of positive
  variance, ``p = P(max_k |Z_k| > z)`` with ``Z ~ N(0, corr(Sigma))``: with one dimension
  ``2 Phi(-z)`` (libcoin's ``C_norm_pvalue``); with more, libcoin calls mvtnorm's Genz
  algorithm (``pmvnorm``, absolute error 1e-3 by default).  Here the probability is computed
  by the spherical-radial decomposition (Deak 1980; Genz & Monahan 1998): with
  ``corr = L L^T`` (``L`` of rank ``r``), ``Z = L W``, ``W ~ N(0, I_r)``, and along each
  direction ``u`` of the unit sphere ``P(|W| > z / max_k |(L u)_k|)`` is a chi(r) tail, so
  ``p = E_u[chi2_r.sf((z / max_k |(L u)_k|)^2)]``: one exact 1-D quadrature for ``r = 2``
  (three classes), randomised quasi-Monte Carlo over the sphere (2^16 scrambled Sobol
  points, fixed seed; relative error about 1e-4) for ``r >= 3``.  Unlike ``1 - Genz CDF`` it keeps its relative accuracy for
  small p.

Multiplicity (ctree's ``testtype = "Bonferroni"``): partykit multiplies ``log(1 - p)`` by the
number ``m`` of features tested at the node, i.e. the adjusted p-value is
``1 - (1 - p)^m``; the node splits when it is below alpha.

Split point (ctree's ``splitstat``): for the chosen feature, the maximally selected
statistic over the cut points (libcoin's ``C_ordered_Xfactor`` for a numeric feature: the
rows with ``x`` at or below a distinct value against the rest, both sides holding at least
``minbucket`` rows; ``C_unordered_Xfactor`` for a categorical one: every split of its
levels into two groups), each cut's two-sample statistic in the quadratic or maximum form;
the first cut with the largest statistic wins.

The kernels read C-contiguous float64 ``X`` and int64 class codes.  Unlike libcoin, a
feature is skipped only when it is constant at the node up to rounding (its range is at
most a few ulps of its magnitude): libcoin skips every test whose variances are all below
``sqrt(eps) = 1.5e-8`` in absolute terms, so a feature on a tiny scale (values 5 + k 1e-7)
is never tested there.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special, stats

from engine._numba import njit, register_warmup

QUADRATIC = 0
MAXIMUM = 1
TESTSTATS = {"quadratic": QUADRATIC, "maximum": MAXIMUM}
#: libcoin's tolerance ``sqrt(.Machine$double.eps)`` (relative, for the Moore-Penrose rank).
TOL = math.sqrt(np.finfo(np.float64).eps)
#: Categorical features with more present levels than this get an ordered search (levels
#: sorted by their mean influence) instead of the exhaustive one (ctree refuses >= 31).
MAX_EXHAUSTIVE_LEVELS = 20
#: Quasi-Monte Carlo directions of the maximum-type p-value for rank >= 3, and how many of
#: them (those of the largest max_k |(L u)_k|, which make the tail) enter exactly.
SPHERE_POINTS = 2**16
SPHERE_EXACT = 4096


def n_influence_columns(classif: bool, n_classes: int) -> int:
    """``Q``: 1 for a numeric target or two classes, ``K`` for ``K > 2`` classes."""
    return n_classes if classif and n_classes > 2 else 1


@njit
def _h_column(code, n_q):
    """The influence column of class ``code`` (``-1``: none, the first of two classes)."""
    if n_q > 1:
        return code
    return 0 if code == 1 else -1


@njit
def node_influence(y_code, y_val, classif, n_q):
    """``(mean_h (Q,), S_h (Q, Q))`` of the node's influence function (population
    covariance, divided by n); classes as ``y_code`` (int64), targets as ``y_val``."""
    n = y_code.shape[0] if classif else y_val.shape[0]
    mean = np.zeros(n_q)
    cov = np.zeros((n_q, n_q))
    if classif:
        for i in range(n):
            c = _h_column(y_code[i], n_q)
            if c >= 0:
                mean[c] += 1.0
        for q in range(n_q):
            mean[q] /= n
        for i in range(n):
            c = _h_column(y_code[i], n_q)
            for q in range(n_q):
                dq = (1.0 if q == c else 0.0) - mean[q]
                for r in range(q + 1):
                    dr = (1.0 if r == c else 0.0) - mean[r]
                    cov[q, r] += dq * dr
    else:
        for i in range(n):
            mean[0] += y_val[i]
        mean[0] /= n
        for i in range(n):
            d = y_val[i] - mean[0]
            cov[0, 0] += d * d
    for q in range(n_q):
        for r in range(q + 1):
            cov[q, r] /= n
            cov[r, q] = cov[q, r]
    return mean, cov


def pinv_sym(cov):
    """Moore-Penrose inverse and rank of a symmetric matrix as libcoin's ``C_MPinv_sym``:
    eigenvalues below ``TOL`` times the largest are dropped (a 1 x 1 matrix: inverted when
    positive).  Returns ``(float64 (Q, Q), int)``."""
    cov = np.asarray(cov, dtype=np.float64)
    if cov.shape[0] == 1:
        v = float(cov[0, 0])
        return (np.array([[1.0 / v]]), 1) if v > 0.0 else (np.zeros((1, 1)), 0)
    val, vec = np.linalg.eigh(cov)
    if val[-1] <= 0.0:
        return np.zeros_like(cov), 0
    keep = val >= val[-1] * TOL
    v = vec[:, keep]
    return (v / val[keep]) @ v.T, int(keep.sum())


@njit
def numeric_tests(X, rows, features, y_code, y_val, classif, n_q, mean_h):
    """Centred linear statistics of the numeric ``features`` (int64) over ``rows`` (int64
    indices into ``X``; ``y_code`` / ``y_val`` are the node's, aligned with ``rows``).

    Returns ``(D, vx)``: ``D`` float64 (f, Q), ``D[j] = T_j - mu_j = sum_i (x_ij - mean_j)
    (h_i - mean_h)`` (two passes, centred for accuracy); ``vx`` float64 (f,),
    ``n / (n - 1) sum_i (x_ij - mean_j)^2``, so that ``Sigma_j = vx_j S_h``.
    """
    n = rows.shape[0]
    nf = features.shape[0]
    mean = np.zeros(nf)
    for i in range(n):
        r = rows[i]
        for j in range(nf):
            mean[j] += X[r, features[j]]
    for j in range(nf):
        mean[j] /= n
    D = np.zeros((nf, n_q))
    ss = np.zeros(nf)
    for i in range(n):
        r = rows[i]
        if classif:
            # sum_i (x_i - mean) (h_iq - mean_hq) = sum_{h_iq = 1} (x_i - mean), since the
            # centred x sum to zero
            c = _h_column(y_code[i], n_q)
            for j in range(nf):
                d = X[r, features[j]] - mean[j]
                ss[j] += d * d
                if c >= 0:
                    D[j, c] += d
        else:
            hy = y_val[i] - mean_h[0]
            for j in range(nf):
                d = X[r, features[j]] - mean[j]
                ss[j] += d * d
                D[j, 0] += d * hy
    vx = np.empty(nf)
    for j in range(nf):
        vx[j] = n * ss[j] / (n - 1.0)
    return D, vx


def quadratic_p(stat, df):
    """``(p, log(1 - p))`` of chi-square statistics ``stat`` with ``df`` degrees of freedom
    (arrays), both tails accurate: ``log(1 - p)`` is ``log1p(-p)`` while ``p < 1/2`` and the
    log of the lower regularised gamma function beyond, as R's ``pchisq(..., log.p = TRUE)``."""
    stat = np.asarray(stat, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    half = df / 2.0
    x = np.maximum(stat, 0.0) / 2.0
    p = special.gammaincc(half, x)
    with np.errstate(divide="ignore"):
        lower = np.where(p < 0.5, np.log1p(-p), np.log(special.gammainc(half, x)))
    return p, lower


def normal_p(z):
    """``(p, log(1 - p))`` of the two-sided normal test of ``|z|`` (arrays), as libcoin's
    ``C_norm_pvalue``: ``p = 2 Phi(-|z|)``."""
    tail = stats.norm.cdf(-np.abs(np.asarray(z, dtype=np.float64)))
    p = 2.0 * tail
    with np.errstate(divide="ignore"):
        return np.minimum(p, 1.0), np.log1p(-np.minimum(p, 1.0))


def correlation_factor(cov):
    """``(L, keep)`` with ``corr(cov[keep][:, keep]) = L L^T``: ``keep`` the entries of
    positive variance, ``L`` float64 (d, r) from the eigenvalues above ``TOL`` times the
    largest (``r`` = rank)."""
    cov = np.asarray(cov, dtype=np.float64)
    diag = np.diag(cov)
    keep = diag > 0.0
    sub = cov[np.ix_(keep, keep)]
    sd = np.sqrt(np.diag(sub))
    corr = sub / np.outer(sd, sd)
    val, vec = np.linalg.eigh(corr)
    big = val > val[-1] * TOL
    return vec[:, big] * np.sqrt(val[big]), keep


def _sphere_directions(rank: int) -> np.ndarray:
    """Scrambled Sobol points mapped to the unit sphere S^(rank - 1) (fixed seed)."""
    sobol = stats.qmc.Sobol(d=rank, scramble=True, seed=20060501)
    u = sobol.random(SPHERE_POINTS)
    w = stats.norm.ppf(np.clip(u, 1e-16, 1 - 1e-16))
    return w / np.linalg.norm(w, axis=1, keepdims=True)


_DIRECTIONS: dict[int, np.ndarray] = {}


def max_abs_normal_tail(z, factor):
    """``P(max_k |Z_k| > z)`` for ``Z = L W``, ``W ~ N(0, I_r)`` (``factor`` = ``L``, d x r)
    by the spherical-radial decomposition (module docstring): exact for r = 1, a 1-D
    quadrature for r = 2, quasi-Monte Carlo over the sphere for r >= 3.  ``z`` a float or
    an array of them (the directions are shared); returns floats in [0, 1] of its shape."""
    L = np.asarray(factor, dtype=np.float64)
    r = L.shape[1]
    zs = np.abs(np.atleast_1d(np.asarray(z, dtype=np.float64)))
    if r == 0:
        out = np.zeros_like(zs)
    elif r == 1:
        out = np.minimum(1.0, 2.0 * stats.norm.sf(zs / np.max(np.abs(L[:, 0]))))
    elif r == 2:
        # the maximum switches between |(L u)_j| and |(L u)_k| where they are equal: the
        # kinks of the integrand, given to the quadrature
        kinks = set()
        for j in range(L.shape[0]):
            for k in range(j):
                for sign in (1.0, -1.0):
                    a = L[j, 0] - sign * L[k, 0]
                    b = L[j, 1] - sign * L[k, 1]
                    if a != 0.0 or b != 0.0:
                        kinks.add(math.atan2(-a, b) % math.pi)
        points = sorted(t for t in kinks if 0.0 < t < math.pi) or None

        def tail(zz):
            def along(t):
                g = np.max(np.abs(L[:, 0] * math.cos(t) + L[:, 1] * math.sin(t)))
                return math.exp(-0.5 * (zz / g) ** 2)

            val, _ = integrate.quad(along, 0.0, math.pi, points=points, limit=400)
            return min(1.0, max(0.0, val / math.pi))

        out = np.array([tail(float(zz)) for zz in zs])
    else:
        if r not in _DIRECTIONS:
            _DIRECTIONS[r] = _sphere_directions(r)
        g = np.sort(np.max(np.abs(_DIRECTIONS[r] @ L.T), axis=1))
        # the tail comes from the largest g: those directions exactly, the rest through
        # 512 equal-probability quantiles (relative error below 1e-4 of the full sum)
        low, high = g[: g.size - SPHERE_EXACT], g[g.size - SPHERE_EXACT :]
        low = np.quantile(low, (np.arange(512) + 0.5) / 512)
        inv_high, inv_low = 1.0 / high**2, 1.0 / low**2
        w_low = (g.size - SPHERE_EXACT) / (512 * g.size)
        out = np.array(
            [
                float(
                    special.gammaincc(r / 2.0, 0.5 * zz * zz * inv_high).sum() / g.size
                    + w_low * special.gammaincc(r / 2.0, 0.5 * zz * zz * inv_low).sum()
                )
                for zz in zs
            ]
        )
    return float(out[0]) if np.ndim(z) == 0 else out


def maximum_p(z, factor):
    """``(p, log(1 - p))`` of the maximum-type statistic ``z`` with the correlation factor
    ``factor`` (:func:`correlation_factor`); one dimension: :func:`normal_p`."""
    if factor.shape[0] == 1:
        p, lower = normal_p(z)
        return float(p), float(lower)
    p = max_abs_normal_tail(z, factor)
    return p, float(np.log1p(-p)) if p < 1.0 else -np.inf


def numeric_pvalues(D, vx, cov_h, teststat: int):
    """Statistics, p-values, ``log(1 - p)`` and degrees of freedom of numeric features from
    :func:`numeric_tests`' ``D`` (f, Q) and ``vx`` (f,) at a node with influence covariance
    ``cov_h`` (Q, Q).  Returns four float64 arrays (f,) (``df`` nan for the maximum form)."""
    n_f = D.shape[0]
    if teststat == QUADRATIC:
        A, rank = pinv_sym(cov_h)
        stat = np.einsum("jq,qr,jr->j", D, A, D) / vx
        df = np.full(n_f, float(rank))
        p, lower = quadratic_p(stat, df)
        return stat, p, lower, df
    var_h = np.diag(cov_h)
    pos = var_h > 0.0
    z = np.max(np.abs(D[:, pos]) / np.sqrt(np.outer(vx, var_h[pos])), axis=1)
    if pos.sum() <= 1:
        p, lower = normal_p(z)
        return z, p, lower, np.full(n_f, np.nan)
    factor, _ = correlation_factor(cov_h)
    p = max_abs_normal_tail(z, factor)
    with np.errstate(divide="ignore"):
        lower = np.log1p(-p)
    return z, p, lower, np.full(n_f, np.nan)


@njit
def level_sums(codes, n_levels, y_code, y_val, classif, n_q):
    """Per level of a categorical feature: rows ``n_l`` (float64 (L,)) and influence sums
    ``S_l = sum_{x_i = l} h_i`` (float64 (L, Q))."""
    counts = np.zeros(n_levels)
    sums = np.zeros((n_levels, n_q))
    for i in range(codes.shape[0]):
        a = codes[i]
        counts[a] += 1.0
        if classif:
            c = _h_column(y_code[i], n_q)
            if c >= 0:
                sums[a, c] += 1.0
        else:
            sums[a, 0] += y_val[i]
    return counts, sums


def categorical_pvalue(counts, sums, mean_h, cov_h, teststat: int):
    """Test of one categorical feature (its present levels' ``counts`` (L,) and influence
    sums (L, Q)): ``(statistic, p, log(1 - p), df)`` (``df`` nan for the maximum form).

    ``T - mu = S - n_l mean_h^T``; ``Sigma = S_h (x) B`` with ``B = (n diag(n_l) -
    n_l n_l^T) / (n - 1)``.  The quadratic form uses the Moore-Penrose inverse of the full
    ``Sigma`` (as libcoin) when ``L Q <= 256``, else ``S_h^+ (x) B^+`` (the same inverse in exact
    arithmetic); ``df = rank``.  Returns p = 1, statistic 0 when ``Sigma`` is 0."""
    counts = np.asarray(counts, dtype=np.float64)
    present = counts > 0
    counts = counts[present]
    D = np.asarray(sums, dtype=np.float64)[present] - np.outer(counts, mean_h)
    n = counts.sum()
    B = (n * np.diag(counts) - np.outer(counts, counts)) / (n - 1.0)
    P, Q = D.shape
    vecD = D.reshape(-1, order="F")  # index q * P + p, as libcoin
    sigma = None
    if teststat == QUADRATIC:
        if P * Q <= 256:
            sigma = np.kron(cov_h, B)
            A, rank = pinv_sym(sigma)
            stat = float(vecD @ A @ vecD)
        else:
            Ah, rh = pinv_sym(cov_h)
            Ab, rb = pinv_sym(B)
            stat = float(np.sum(D * (Ab @ D @ Ah)))
            rank = rh * rb
        if rank == 0:
            return 0.0, 1.0, -np.inf, 0.0
        p, lower = quadratic_p(stat, float(rank))
        return stat, float(p), float(lower), float(rank)
    sigma = np.kron(cov_h, B)
    var = np.diag(sigma)
    pos = var > 0.0
    if not pos.any():
        return 0.0, 1.0, -np.inf, np.nan
    z = float(np.max(np.abs(vecD[pos]) / np.sqrt(var[pos])))
    factor, _ = correlation_factor(sigma)
    p, lower = maximum_p(z, factor)
    return z, p, lower, np.nan


# ---------------------------------------------------------------------------------------
# maximally selected statistics (split points)
# ---------------------------------------------------------------------------------------


@njit
def _two_sample(d, n_left, n, A, var_h, teststat):
    """Quadratic or maximum statistic of the left group's centred influence sum ``d`` (Q,)
    with ``n_left`` of ``n`` rows (libcoin: ``Sigma = S_h (n_left (n - n_left) / (n - 1))``)."""
    n_q = d.shape[0]
    f1 = n / (n - 1.0)
    f2 = 1.0 / (n - 1.0)
    if teststat == 0:
        if n_q == 1:
            var = f1 * var_h[0] * n_left - f2 * var_h[0] * n_left * n_left
            if var <= 0.0:
                return 0.0
            return (d[0] * (1.0 / var)) * d[0]
        c = f1 * n_left - f2 * n_left * n_left
        s = 0.0
        for q in range(n_q):
            t = 0.0
            for r in range(n_q):
                t += d[r] * A[r, q]
            s += t * d[q]
        return s / c
    best = 0.0
    for q in range(n_q):
        var = f1 * var_h[q] * n_left - f2 * var_h[q] * n_left * n_left
        if var > 0.0:
            t = abs(d[q]) / math.sqrt(var)
            if t > best:
                best = t
    return best


@njit
def maxstat_ordered(
    x_sorted, y_code_sorted, y_val_sorted, classif, n_q, mean_h, A, var_h, teststat, min_leaf
):
    """Maximally selected two-sample statistic over the cut points of a numeric feature
    (libcoin's ``C_ordered_Xfactor``).

    Rows sorted by ``x`` (stable); a cut after position ``i`` (``x[i] < x[i + 1]``) sends
    the ``i + 1`` first rows left.  Cuts leaving fewer than ``min_leaf`` rows on a side are
    not candidates.  Returns ``(n_left int64 (c,), statistic float64 (c,), best)`` over the
    candidate cuts in increasing ``x``; ``best`` indexes the first largest statistic
    above 0 (``-1``: none)."""
    n = x_sorted.shape[0]
    lin = np.zeros(n_q)
    expect = np.zeros(n_q)
    d = np.zeros(n_q)
    n_left_out = np.empty(n, dtype=np.int64)
    stat_out = np.empty(n)
    n_cand = 0
    best = -1
    best_stat = 0.0
    i = 0
    n_left = 0.0
    while i < n - 1:
        # one block of equal values (a level of the feature), summed in row order
        j = i
        block = 0.0
        while True:
            if classif:
                c = _h_column(y_code_sorted[j], n_q)
                if c >= 0:
                    lin[c] += 1.0
            else:
                lin[0] += y_val_sorted[j]
            block += 1.0
            if j + 1 >= n or x_sorted[j + 1] != x_sorted[j]:
                break
            j += 1
        n_left += block
        for q in range(n_q):
            expect[q] += block * mean_h[q]
        i = j + 1
        if i >= n:
            break
        if n_left >= min_leaf and n - n_left >= min_leaf:
            for q in range(n_q):
                d[q] = lin[q] - expect[q]
            s = _two_sample(d, n_left, float(n), A, var_h, teststat)
            n_left_out[n_cand] = i
            stat_out[n_cand] = s
            if s > best_stat:
                best_stat = s
                best = n_cand
            n_cand += 1
    return n_left_out[:n_cand], stat_out[:n_cand], best


@njit
def maxstat_unordered(counts, sums, mean_h, A, var_h, teststat, min_leaf):
    """Maximally selected two-sample statistic over the splits of the present levels of a
    categorical feature into two groups (libcoin's ``C_unordered_Xfactor``, in its order:
    split ``j = 1 .. 2^(L - 1) - 1`` puts level ``lev >= 1`` in group 1 when bit ``lev - 1`` of
    ``j`` is set; level 0 is always in group 0).  ``counts`` (L,) and ``sums`` (L, Q) of the
    present levels.  Returns ``(group int64 (L,) of the best split, statistic)``; group
    all zeros and 0.0 when no split leaves ``min_leaf`` rows on both sides."""
    n_lev = counts.shape[0]
    n_q = sums.shape[1]
    n = 0.0
    for lev in range(n_lev):
        n += counts[lev]
    best_stat = 0.0
    best_group = np.zeros(n_lev, dtype=np.int64)
    group = np.zeros(n_lev, dtype=np.int64)
    d = np.zeros(n_q)
    lin = np.zeros(n_q)
    expect = np.zeros(n_q)
    n_splits = 1
    for _ in range(n_lev - 1):
        n_splits *= 2
    for j in range(1, n_splits):
        jj = j
        for lev in range(1, n_lev):
            group[lev] = jj % 2
            jj //= 2
        n_left = 0.0
        for q in range(n_q):
            lin[q] = 0.0
            expect[q] = 0.0
        for lev in range(n_lev):
            if group[lev] == 1:
                n_left += counts[lev]
                for q in range(n_q):
                    lin[q] += sums[lev, q]
                    expect[q] += counts[lev] * mean_h[q]
        if n_left >= min_leaf and n - n_left >= min_leaf:
            for q in range(n_q):
                d[q] = lin[q] - expect[q]
            s = _two_sample(d, n_left, n, A, var_h, teststat)
            if s > best_stat:
                best_stat = s
                for lev in range(n_lev):
                    best_group[lev] = group[lev]
    return best_group, best_stat


@register_warmup("cit.asymptotic")
def _warmup() -> None:
    """Compile the asymptotic tests with the dtypes of the tree's calls (min_leaf a float)."""
    X = np.column_stack([np.arange(8.0), np.array([0.0, 1, 0, 1, 0, 1, 0, 1])])
    rows = np.arange(8, dtype=np.int64)
    feats = np.array([0, 1], dtype=np.int64)
    yc = np.array([0, 0, 1, 1, 2, 2, 0, 1], dtype=np.int64)
    yv = np.arange(8.0)
    for classif, n_q in ((True, 3), (True, 1), (False, 1)):
        mean_h, cov_h = node_influence(yc, yv, classif, n_q)
        numeric_tests(X, rows, feats, yc, yv, classif, n_q, mean_h)
        A = np.eye(n_q)
        for ts in (QUADRATIC, MAXIMUM):
            maxstat_ordered(X[:, 0].copy(), yc, yv, classif, n_q, mean_h, A, np.ones(n_q), ts, 1.0)
        counts, sums = level_sums(np.array([0, 1, 2, 0, 1, 2, 0, 1]), 3, yc, yv, classif, n_q)
        for ts in (QUADRATIC, MAXIMUM):
            maxstat_unordered(counts, sums, mean_h, A, np.ones(n_q), ts, 1.0)
