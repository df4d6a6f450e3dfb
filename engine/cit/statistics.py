"""Stage-A selector statistics of conditional inference trees (docs/spec.md section 4).

Every kernel is ``@njit(cache=True, nogil=True)`` and reads one feature column ``x``
(float64, C-contiguous) of the node's rows with the node's response:

* ``mc`` (classification): correlation ratio ``eta = sqrt(SSB / SST)`` of ``x`` across the
  classes ``y`` (int64 codes ``0..K-1``); ``SSB = sum_k n_k (mean_k - mean)^2``,
  ``SST = sum_i (x_i - mean)^2`` (0 when ``x`` is constant: its range is at most a few ulps
  of its magnitude, a tolerance relative to the column's own scale);
* ``mi`` (classification): plug-in mutual information in nats
  ``sum_{a,k} p(a,k) log(p(a,k) / (p(a) p(k)))`` between the *bin codes* ``a`` of ``x``
  (equal-frequency bins, see :func:`bin_codes`; the category codes of a categorical
  feature) and the classes.  Unlike citrees (scikit-learn's k-NN estimator) it is
  discrete, so it is cheap under permutation;
* ``pc`` (regression): ``|Pearson r|`` of ``x`` and ``y`` (float64);
* ``eta_reg`` (regression, categorical feature): correlation ratio of ``y`` across the
  categories of ``x``.

Each statistic is computed from a *prepared* form of the inputs (centred values, codes) so
that the permutation kernels (:mod:`engine.cit.permutation`) only redo the label-dependent
sums.  Codes: :data:`MC`, :data:`MI`, :data:`PC`, :data:`ETA_REG`.
"""

from __future__ import annotations

import math

import numpy as np

from engine._numba import njit, register_warmup

MC = 0
MI = 1
PC = 2
ETA_REG = 3

#: selector name -> code, per task.
CLASSIFICATION_SELECTORS = {"mc": MC, "mi": MI}
REGRESSION_SELECTORS = {"pc": PC}


#: Values are constant when their range is at most this many ulps of their magnitude.
CONSTANT_ULPS = 4.0


@njit
def _constant(low, high):
    """Whether ``[low, high]`` is a single value up to rounding (relative to its own scale:
    at most :data:`CONSTANT_ULPS` ulps of ``max(|low|, |high|)``)."""
    scale = max(abs(low), abs(high))
    return high - low <= CONSTANT_ULPS * 2.220446049250313e-16 * scale


@njit
def correlation_ratio(values, groups, n_groups):
    """``sqrt(SSB / SST)`` of float64 ``values`` across int64 ``groups``; 0 when the values
    are constant (up to rounding, relative to their own scale: a feature that varies by
    1e-7 around 5 has its real statistic)."""
    n = values.shape[0]
    if n == 0:
        return 0.0
    sums = np.zeros(n_groups, dtype=np.float64)
    counts = np.zeros(n_groups, dtype=np.float64)
    total = 0.0
    low = values[0]
    high = values[0]
    for i in range(n):
        sums[groups[i]] += values[i]
        counts[groups[i]] += 1.0
        total += values[i]
        low = min(low, values[i])
        high = max(high, values[i])
    if _constant(low, high):
        return 0.0
    mean = total / n
    sst = 0.0
    for i in range(n):
        d = values[i] - mean
        sst += d * d
    if sst <= 0.0:
        return 0.0
    ssb = 0.0
    for k in range(n_groups):
        if counts[k] > 0.0:
            d = sums[k] / counts[k] - mean
            ssb += counts[k] * d * d
    r = ssb / sst
    if r > 1.0:
        r = 1.0
    return math.sqrt(r)


@njit
def abs_pearson(x, y):
    """``|Pearson r|`` of two float64 vectors (0 when either is constant up to rounding,
    relative to its own scale)."""
    n = x.shape[0]
    if n < 2:
        return 0.0
    mx = 0.0
    my = 0.0
    x_low = x[0]
    x_high = x[0]
    y_low = y[0]
    y_high = y[0]
    for i in range(n):
        mx += x[i]
        my += y[i]
        x_low = min(x_low, x[i])
        x_high = max(x_high, x[i])
        y_low = min(y_low, y[i])
        y_high = max(y_high, y[i])
    if _constant(x_low, x_high) or _constant(y_low, y_high):
        return 0.0
    mx /= n
    my /= n
    sxy = 0.0
    sxx = 0.0
    syy = 0.0
    for i in range(n):
        dx = x[i] - mx
        dy = y[i] - my
        sxy += dx * dy
        sxx += dx * dx
        syy += dy * dy
    if sxx <= 0.0 or syy <= 0.0:
        return 0.0
    r = abs(sxy) / math.sqrt(sxx * syy)
    return min(r, 1.0)


@njit
def mutual_information(a, n_a, y, n_classes):
    """Plug-in mutual information (nats) of int64 codes ``a`` (``0..n_a-1``) and ``y``."""
    n = a.shape[0]
    if n == 0:
        return 0.0
    joint = np.zeros((n_a, n_classes), dtype=np.float64)
    for i in range(n):
        joint[a[i], y[i]] += 1.0
    return _mi_from_joint(joint, n)


@njit
def _mi_from_joint(joint, n):
    n_a = joint.shape[0]
    n_k = joint.shape[1]
    pa = np.zeros(n_a, dtype=np.float64)
    pk = np.zeros(n_k, dtype=np.float64)
    for i in range(n_a):
        for k in range(n_k):
            pa[i] += joint[i, k]
            pk[k] += joint[i, k]
    mi = 0.0
    for i in range(n_a):
        for k in range(n_k):
            c = joint[i, k]
            if c > 0.0:
                mi += (c / n) * math.log(c * n / (pa[i] * pk[k]))
    return max(mi, 0.0)


def bin_codes(x, n_bins=None, categorical=False):
    """Int64 codes of ``x`` for the ``mi`` statistic and the number of codes.

    A categorical feature keeps its (re-indexed) codes.  A numeric feature with at most
    ``n_bins`` distinct values gets one code per value; otherwise equal-frequency bins on
    the ranks (``n_bins`` default ``max(2, min(10, round(n ** (1/3))))``).
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    uniq, inv = np.unique(x, return_inverse=True)
    if n_bins is None:
        n_bins = max(2, min(10, int(round(n ** (1.0 / 3.0)))))
    if categorical or uniq.shape[0] <= n_bins:
        return np.ascontiguousarray(inv, dtype=np.int64), int(uniq.shape[0])
    # equal-frequency bins on the ordered unique values (ties share a bin)
    cum = np.cumsum(np.bincount(inv)) - 0.5 * np.bincount(inv)
    codes_u = np.minimum((cum * n_bins / n).astype(np.int64), n_bins - 1)
    _, codes_u = np.unique(codes_u, return_inverse=True)
    codes = codes_u[inv]
    return np.ascontiguousarray(codes, dtype=np.int64), int(codes.max()) + 1


@njit
def statistic(code, x, a, n_a, y_code, y_val, n_classes):
    """The selector statistic ``code`` of one feature (see the module docstring).

    ``x``: float64 values; ``a``: int64 codes of ``x`` (bins or categories; used by ``mi``
    and ``eta_reg``); ``y_code``/``y_val``: class codes / targets (the unused one may be a
    dummy array).
    """
    if code == MC:
        return correlation_ratio(x, y_code, n_classes)
    if code == MI:
        return mutual_information(a, n_a, y_code, n_classes)
    if code == PC:
        return abs_pearson(x, y_val)
    return correlation_ratio(y_val, a, n_a)


@register_warmup("cit.statistics")
def _warmup() -> None:
    x = np.array([0.0, 1.0, 2.0, 3.0])
    a = np.array([0, 0, 1, 1], dtype=np.int64)
    yc = np.array([0, 1, 0, 1], dtype=np.int64)
    yv = np.array([0.0, 1.0, 0.5, 2.0])
    for code in (MC, MI, PC, ETA_REG):
        statistic(code, x, a, 2, yc, yv, 2)
