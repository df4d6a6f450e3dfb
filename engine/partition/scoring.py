"""Scores of the Partition Tree / Forest regressors' conditional densities beside the NLL.

A fitted regressor's p(y | x) is piecewise constant in y (``model.slice(x)``): edges
e_0 < ... < e_m over the Y box and heights h_k with sum h_k (e_{k+1} - e_k) = 1, i.e. a
mixture of uniform distributions. Its CDF F is piecewise linear with F(e_0) = 0 and
F(e_m) = 1. Everything here is a closed form of (edges, heights):

* :func:`pit` -- the probability integral transform u = F(y) (Dawid 1984; Gneiting,
  Balabdaoui & Raftery 2007, JRSS B 69(2)). For a calibrated model u ~ U(0, 1); its
  histogram (:func:`engine.figures.partition.pit_figure`) shows over- / under-dispersion.
* :func:`crps` -- the continuous ranked probability score
  CRPS(F, y) = integral of (F(z) - 1{y <= z})^2 dz (Matheson & Winkler 1976; Gneiting &
  Raftery 2007, JASA 102(477), eq. 20), in units of y, lower is better. On a segment
  [a, b] where F is linear, the integral of g^2 for a linear g is exactly
  (b - a) (g(a)^2 + g(a) g(b) + g(b)^2) / 3, so the CRPS is that sum over the segments
  (each cut at y) plus e_0 - y when y < e_0 and y - e_m when y > e_m.
* :func:`quantiles` -- q_tau = F^-1(tau) = inf{z : F(z) >= tau}, found on the segment
  where F crosses tau: q = e_k + (tau - F(e_k)) / h_k.
* :func:`pinball_loss` -- the quantile (pinball) loss rho_tau(y - q) = (y - q)(tau -
  1{y < q}) (Koenker & Bassett 1978). Twice its integral over tau in (0, 1) is the CRPS
  (Laio & Tamea 2007, HESS 11; Gneiting & Ranjan 2011, eq. 5), an identity the tests use.
* :func:`gaussian_scores` -- the same scores for a Normal N(mean, sd^2) (the page's
  Gaussian baselines and NGBoost): CRPS = sd [z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi)],
  z = (y - mean) / sd (Gneiting, Raftery, Westveld & Goldman 2005, MWR 133, eq. 5).
* :func:`pit_uniformity` -- the Kolmogorov-Smirnov distance of the PIT values from U(0, 1)
  and its p-value (scipy.stats.kstest).

:func:`conditional_densities` computes the slices of many rows at once (equal to
``model.slice`` row by row); :func:`distribution_scores` gathers the means.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from engine.partition.growth import slice_leaves

#: Quantile levels of the mean pinball loss by default: 0.05, 0.10, ..., 0.95.
DEFAULT_LEVELS = tuple(np.round(np.arange(1, 20) * 0.05, 2).tolist())


class PiecewiseDensities(NamedTuple):
    """Piecewise-constant densities of ``n`` rows, padded to a common number of pieces.

    ``edges`` float64 ``(n, m + 1)``, non-decreasing per row (a row with fewer pieces repeats
    its last edge); ``heights`` float64 ``(n, m)`` (0 on padded, zero-width pieces). Each
    row integrates to 1.
    """

    edges: np.ndarray
    heights: np.ndarray


def from_slices(slices) -> PiecewiseDensities:
    """Pad ``[{'edges': (m_i + 1,), 'heights': (m_i,)}, ...]`` (``model.slice`` outputs)
    into one :class:`PiecewiseDensities`."""
    m = max((len(s["heights"]) for s in slices), default=0)
    n = len(slices)
    edges = np.zeros((n, m + 1))
    heights = np.zeros((n, m))
    for i, s in enumerate(slices):
        e = np.asarray(s["edges"], dtype=np.float64)
        h = np.asarray(s["heights"], dtype=np.float64)
        edges[i, : e.shape[0]] = e
        edges[i, e.shape[0] :] = e[-1]
        heights[i, : h.shape[0]] = h
    return PiecewiseDensities(edges, heights)


def conditional_densities(model, X) -> PiecewiseDensities:
    """p(y | x) of each row of ``X`` for a fitted Partition regressor (tree or forest).

    The same slices as ``model.slice(X[i])`` (edges: the Y box and every matched leaf's
    A_Y bounds; heights: the trees' masses n_XY / n_X per unit of y, added over trees,
    per-tree normalised first when ``aggregation='normalised'``, then normalised), read
    off each tree once for all rows. Raises ValueError for a classifier.
    """
    if getattr(model, "_discrete", True):
        raise ValueError("conditional densities are defined for the Partition regressors only")
    X = model._check_X(X)
    n = X.shape[0]
    normalised = model._normalised_mode()
    rows_all, lo_all, hi_all, dens_all = [], [], [], []
    for t in model.trees_:
        mass = model._mass(t)
        pieces = list(slice_leaves(t, X))
        z = np.zeros(n)
        for leaf, rows in pieces:
            z[rows] += mass[leaf]
        for leaf, rows in pieces:
            d = np.full(rows.shape[0], mass[leaf] / (t.yhi[leaf] - t.ylo[leaf]))
            if normalised:
                zr = z[rows]
                d = np.where(zr > 0, d / np.where(zr > 0, zr, 1.0), d)
            rows_all.append(rows)
            lo_all.append(np.full(rows.shape[0], t.ylo[leaf]))
            hi_all.append(np.full(rows.shape[0], t.yhi[leaf]))
            dens_all.append(d)
    box_lo, box_hi = (float(v) for v in model.y_box_)
    if not rows_all:
        edges = np.tile([box_lo, box_hi], (n, 1))
        return PiecewiseDensities(edges, np.full((n, 1), 1.0 / (box_hi - box_lo)))
    row = np.concatenate(rows_all)
    order = np.argsort(row, kind="stable")
    row, lo, hi, dens = (
        row[order],
        np.concatenate(lo_all)[order],
        np.concatenate(hi_all)[order],
        np.concatenate(dens_all)[order],
    )
    starts = np.searchsorted(row, np.arange(n + 1))
    slices = []
    for i in range(n):
        a, b = starts[i], starts[i + 1]
        e = np.unique(np.concatenate(([box_lo, box_hi], lo[a:b], hi[a:b])))
        mids = 0.5 * (e[:-1] + e[1:])
        inside = (mids[None, :] > lo[a:b, None]) & (mids[None, :] < hi[a:b, None])
        h = (dens[a:b, None] * inside).sum(axis=0)
        s = float(np.sum(h * np.diff(e)))
        h = h / s if s > 0 else np.full(mids.shape[0], 1.0 / (e[-1] - e[0]))
        slices.append({"edges": e, "heights": h})
    return from_slices(slices)


def _cdf_at_edges(dens: PiecewiseDensities) -> np.ndarray:
    """F(e_k) for every edge: ``(n, m + 1)``, 0 at the first edge."""
    mass = dens.heights * np.diff(dens.edges, axis=1)
    return np.concatenate([np.zeros((mass.shape[0], 1)), np.cumsum(mass, axis=1)], axis=1)


def pit(dens: PiecewiseDensities, y) -> np.ndarray:
    """PIT values F(y_i): float64 ``(n,)`` in [0, 1] (0 below the Y box, 1 above it)."""
    y = np.asarray(y, dtype=np.float64)
    e, h = dens.edges, dens.heights
    s = np.clip(y[:, None], e[:, :-1], e[:, 1:])
    return np.clip(np.sum(h * (s - e[:, :-1]), axis=1), 0.0, 1.0)


def crps(dens: PiecewiseDensities, y) -> np.ndarray:
    """CRPS(F_i, y_i) in units of y: float64 ``(n,)`` (closed form, see the module doc)."""
    y = np.asarray(y, dtype=np.float64)
    e, h = dens.edges, dens.heights
    c = _cdf_at_edges(dens)
    a, b = e[:, :-1], e[:, 1:]
    fa, fb = c[:, :-1], c[:, 1:]
    s = np.clip(y[:, None], a, b)
    fs = fa + h * (s - a)
    below = (s - a) * (fa * fa + fa * fs + fs * fs) / 3.0  # z < y: (F - 0)^2
    ga, gb = fs - 1.0, fb - 1.0
    above = (b - s) * (ga * ga + ga * gb + gb * gb) / 3.0  # z >= y: (F - 1)^2
    outside = np.maximum(e[:, 0] - y, 0.0) + np.maximum(y - e[:, -1], 0.0)
    return np.sum(below + above, axis=1) + outside


def quantiles(dens: PiecewiseDensities, levels) -> np.ndarray:
    """q_tau = inf{z : F_i(z) >= tau} for each row and level: float64 ``(n, L)``.

    ``levels`` in (0, 1); raises ValueError otherwise.
    """
    levels = np.atleast_1d(np.asarray(levels, dtype=np.float64))
    if np.any((levels <= 0) | (levels >= 1)):
        raise ValueError("quantile levels must lie strictly between 0 and 1")
    e, h = dens.edges, dens.heights
    c = _cdf_at_edges(dens)
    m = h.shape[1]
    rows = np.arange(e.shape[0])[:, None]
    # the segment k where F(e_k) < tau <= F(e_{k+1})
    k = np.sum(c[:, None, :] < levels[None, :, None], axis=2) - 1
    k = np.clip(k, 0, m - 1)
    hk = h[rows, k]
    ek, ek1 = e[rows, k], e[rows, k + 1]
    q = np.where(hk > 0, ek + (levels[None, :] - c[rows, k]) / np.where(hk > 0, hk, 1.0), ek1)
    return np.clip(q, ek, ek1)


def pinball_loss(y, q, levels) -> np.ndarray:
    """rho_tau(y - q) = (y - q)(tau - 1{y < q}) per row and level: ``(n, L)``, units of y.

    ``y`` ``(n,)``, ``q`` ``(n, L)`` predicted quantiles at ``levels`` ``(L,)``.
    """
    y = np.asarray(y, dtype=np.float64)[:, None]
    q = np.asarray(q, dtype=np.float64)
    tau = np.asarray(levels, dtype=np.float64)[None, :]
    diff = y - q
    return diff * (tau - (diff < 0))


class PitHistogram(NamedTuple):
    """PIT values binned on [0, 1]: ``edges`` float64 ``(bins + 1,)``, ``counts`` int64
    ``(bins,)``, ``density`` float64 ``(bins,)`` (counts / n * bins: 1 everywhere when the
    PIT is uniform, i.e. the model is calibrated)."""

    edges: np.ndarray
    counts: np.ndarray
    density: np.ndarray


def pit_histogram(u, bins: int = 10) -> PitHistogram:
    """Histogram of PIT values ``u`` (clipped to [0, 1]) with ``bins`` equal bins, as a
    density on [0, 1] (what :func:`engine.figures.partition.pit_figure` draws)."""
    u = np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0)
    edges = np.linspace(0.0, 1.0, int(bins) + 1)
    counts, _ = np.histogram(u, bins=edges)
    return PitHistogram(edges, counts.astype(np.int64), counts / max(len(u), 1) * int(bins))


def pit_uniformity(u) -> tuple[float, float]:
    """(Kolmogorov-Smirnov distance sup |F_n(u) - u|, p-value) of PIT values against U(0, 1)."""
    res = stats.kstest(np.asarray(u, dtype=np.float64), "uniform")
    return float(res.statistic), float(res.pvalue)


def gaussian_scores(y, mean, sd, levels=DEFAULT_LEVELS) -> dict:
    """Per-row scores of N(mean, sd^2): ``{'pit', 'crps', 'quantiles', 'pinball'}``.

    ``crps`` is the closed form of Gneiting et al. (2005), ``quantiles`` ``(n, L)`` are
    mean + sd Phi^-1(tau) and ``pinball`` ``(n, L)`` their losses.
    """
    y = np.asarray(y, dtype=np.float64)
    mean = np.broadcast_to(np.asarray(mean, dtype=np.float64), y.shape)
    sd = np.broadcast_to(np.asarray(sd, dtype=np.float64), y.shape)
    z = (y - mean) / sd
    c = sd * (z * (2.0 * stats.norm.cdf(z) - 1.0) + 2.0 * stats.norm.pdf(z) - 1.0 / np.sqrt(np.pi))
    levels = np.asarray(levels, dtype=np.float64)
    q = mean[:, None] + sd[:, None] * stats.norm.ppf(levels)[None, :]
    return {
        "pit": stats.norm.cdf(z),
        "crps": c,
        "quantiles": q,
        "pinball": pinball_loss(y, q, levels),
    }


def summarise(*, pit_values, crps_values, pinball, nll=np.nan) -> dict:
    """Means of per-row scores: ``{'nll', 'crps', 'pinball', 'pit_ks', 'pit_p'}`` (floats)."""
    ks, p = pit_uniformity(pit_values)
    return {
        "nll": float(nll),
        "crps": float(np.mean(crps_values)),
        "pinball": float(np.mean(pinball)),
        "pit_ks": ks,
        "pit_p": p,
    }


def distribution_scores(model, X, y, *, levels=DEFAULT_LEVELS, floor: float | None = None):
    """Scores of a fitted Partition regressor on ``(X, y)``.

    Returns ``(summary, pit_values)``: ``summary`` as :func:`summarise` (``nll`` floored at
    ``floor``, the estimator's default when None; ``pinball`` the mean over rows and
    ``levels``) and the PIT values ``(n,)`` for the histogram.
    """
    y = np.asarray(y, dtype=np.float64)
    dens = conditional_densities(model, X)
    u = pit(dens, y)
    kw = {} if floor is None else {"floor": floor}
    nll, _ = model.nll(X, y, **kw)
    loss = pinball_loss(y, quantiles(dens, levels), levels)
    return summarise(pit_values=u, crps_values=crps(dens, y), pinball=loss, nll=nll), u
