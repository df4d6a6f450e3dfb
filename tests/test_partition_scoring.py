"""PIT, CRPS, quantiles and pinball losses of the Partition regressors' densities
(engine/partition/scoring.py) against scoringrules, scikit-learn, brute-force integration on a
fine grid and exact identities."""

import numpy as np
import pytest
import scoringrules
from scipy import stats
from sklearn.metrics import mean_pinball_loss

from engine.partition import PartitionForestRegressor, PartitionTreeRegressor
from engine.partition.scoring import (
    DEFAULT_LEVELS,
    PiecewiseDensities,
    conditional_densities,
    crps,
    distribution_scores,
    from_slices,
    gaussian_scores,
    pinball_loss,
    pit,
    pit_uniformity,
    quantiles,
)


def _hetero(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-2, 2, n)
    y = np.sin(x) + (0.1 + 0.5 * np.abs(x)) * rng.randn(n)
    return np.column_stack([x, rng.rand(n)]), y


def _random_density(rng, m):
    """One piecewise-constant density with ``m`` pieces, some of them empty."""
    e = np.sort(rng.uniform(-3, 5, m + 1))
    h = rng.exponential(1.0, m) * (rng.rand(m) > 0.25)
    if not h.any():
        h[0] = 1.0
    h = h / np.sum(h * np.diff(e))
    return {"edges": e, "heights": h}


@pytest.fixture(scope="module")
def densities():
    rng = np.random.RandomState(0)
    slices = [_random_density(rng, m) for m in (1, 2, 5, 9, 3, 12)]
    y = np.array([-4.0, 0.3, 1.7, 2.2, 6.0, -0.5])  # two rows outside their support
    return from_slices(slices), slices, y


def _grid_cdf(s, z):
    """F at the points ``z`` by brute force: a midpoint Riemann sum of the density."""
    e, h = s["edges"], s["heights"]
    mid = 0.5 * (z[1:] + z[:-1])
    k = np.clip(np.searchsorted(e, mid, side="right") - 1, 0, len(h) - 1)
    dens = np.where((mid >= e[0]) & (mid < e[-1]), h[k], 0.0)
    return np.concatenate([[0.0], np.cumsum(dens * np.diff(z))])


def test_single_uniform_crps_equals_scoringrules_uniform():
    y = np.array([-1.0, 0.0, 0.4, 0.99, 1.0, 2.5])
    lo, hi = -0.3, 1.2
    dens = from_slices([{"edges": [lo, hi], "heights": [1.0 / (hi - lo)]}] * len(y))
    ours = crps(dens, y)
    ref = scoringrules.crps_uniform(y, lo, hi)
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-14)


def test_crps_equals_brute_force_integration(densities):
    dens, slices, y = densities
    ours = crps(dens, y)
    for i, s in enumerate(slices):
        # a fine grid holding every edge and y: F is exact at its points, and the
        # trapezoid rule on each cell (indicator taken at the cell's middle) is O(dz^2)
        z = np.unique(np.concatenate([np.linspace(-8, 10, 200_001), s["edges"], [y[i]]]))
        f = _grid_cdf(s, z)
        ind = (0.5 * (z[1:] + z[:-1]) >= y[i]).astype(float)
        sq = 0.5 * ((f[:-1] - ind) ** 2 + (f[1:] - ind) ** 2)
        brute = np.sum(sq * np.diff(z))
        assert abs(ours[i] - brute) < 1e-7, (i, ours[i], brute)


def test_crps_equals_large_ensemble_crps(densities):
    """The CRPS of an ensemble at the quantiles (j + 1/2) / M tends to ours as M grows."""
    dens, _, y = densities
    m = 20_000
    q = quantiles(dens, (np.arange(m) + 0.5) / m)
    ens = scoringrules.crps_ensemble(y, q, estimator="qd", sorted_ensemble=True)
    np.testing.assert_allclose(crps(dens, y), ens, atol=5e-4)


def test_crps_is_twice_the_integrated_pinball_loss(densities):
    dens, _, y = densities
    tau = (np.arange(20_000) + 0.5) / 20_000
    integral = 2.0 * pinball_loss(y, quantiles(dens, tau), tau).mean(axis=1)
    np.testing.assert_allclose(crps(dens, y), integral, atol=1e-4)


def test_pit_and_quantiles_against_brute_force(densities):
    dens, slices, y = densities
    u = pit(dens, y)
    z = np.linspace(-8, 10, 400_001)
    levels = np.array([0.01, 0.1, 0.25, 0.5, 0.9, 0.99])
    q = quantiles(dens, levels)
    for i, s in enumerate(slices):
        f = _grid_cdf(s, z)
        assert abs(u[i] - np.interp(y[i], z, f)) < 1e-4
        brute_q = z[np.searchsorted(f, levels)]  # smallest grid z with F(z) >= tau
        np.testing.assert_allclose(q[i], brute_q, atol=1e-3)
    assert u[0] == 0.0 and u[4] == 1.0  # below / above the support
    # F(F^-1(tau)) = tau and the quantiles lie on pieces with positive density
    np.testing.assert_allclose(pit(dens, q[:, 2]), 0.25, atol=1e-12)


def test_quantile_of_a_gap_is_its_left_end():
    """F is flat over an empty piece: F^-1(tau) is the smallest z with F(z) >= tau."""
    dens = from_slices([{"edges": [0.0, 1.0, 3.0, 4.0], "heights": [0.5, 0.0, 0.5]}])
    np.testing.assert_allclose(quantiles(dens, [0.25, 0.5, 0.75])[0], [0.5, 1.0, 3.5])
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        quantiles(dens, [0.0, 0.5])


def test_pinball_loss_equals_scikit_learn_and_scoringrules():
    rng = np.random.RandomState(3)
    y = rng.randn(50)
    levels = np.array([0.1, 0.5, 0.8])
    q = rng.randn(50, 3)
    ours = pinball_loss(y, q, levels)
    for j, tau in enumerate(levels):
        assert abs(ours[:, j].mean() - mean_pinball_loss(y, q[:, j], alpha=tau)) < 1e-12
        np.testing.assert_allclose(
            ours[:, j], scoringrules.quantile_score(y, q[:, j], tau), atol=1e-12
        )


def test_gaussian_scores_equal_scoringrules_and_scipy():
    rng = np.random.RandomState(4)
    y, mean, sd = rng.randn(40), rng.randn(40), rng.uniform(0.2, 2.0, 40)
    out = gaussian_scores(y, mean, sd, levels=[0.1, 0.9])
    np.testing.assert_allclose(out["crps"], scoringrules.crps_normal(y, mean, sd), rtol=1e-10)
    np.testing.assert_allclose(out["pit"], stats.norm.cdf(y, mean, sd))
    np.testing.assert_allclose(out["quantiles"][:, 1], stats.norm.ppf(0.9, mean, sd))


@pytest.mark.parametrize(
    "model",
    [
        PartitionTreeRegressor(max_leaves=24),
        PartitionForestRegressor(n_estimators=6, random_state=0),
        PartitionForestRegressor(n_estimators=4, aggregation="normalised", random_state=1),
    ],
    ids=["tree", "forest", "forest-normalised"],
)
def test_conditional_densities_equal_slice_row_by_row(model):
    X, y = _hetero(400, 0)
    model.fit(X, y)
    Xt, _ = _hetero(40, 1)
    dens = conditional_densities(model, Xt)
    for i in range(len(Xt)):
        s = model.slice(Xt[i])
        m = len(s["heights"])
        np.testing.assert_allclose(dens.edges[i, : m + 1], s["edges"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(dens.heights[i, :m], s["heights"], rtol=1e-12)
        assert np.all(dens.heights[i, m:] == 0)
    # the PIT's derivative is the model's density: F(y + d) - F(y) = p(y | x) d inside a piece
    yt = np.array([float(np.mean(model.y_box_))] * len(Xt))
    d = 1e-7
    slope = (pit(dens, yt + d) - pit(dens, yt)) / d
    np.testing.assert_allclose(slope, model.density(Xt, yt), rtol=1e-5)


def test_pit_of_draws_from_the_fitted_density_is_uniform():
    X, y = _hetero(600, 0)
    model = PartitionForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    rng = np.random.RandomState(7)
    Xs = X[rng.randint(0, len(X), 2000)]
    dens = conditional_densities(model, Xs)
    top = float(dens.heights.max()) * 1.01
    lo, hi = model.y_box_
    ys = np.empty(len(Xs))
    todo = np.arange(len(Xs))
    while todo.size:  # rejection sampling with the estimator's own density()
        cand = rng.uniform(lo, hi, todo.size)
        accept = rng.uniform(0, top, todo.size) < model.density(Xs[todo], cand)
        ys[todo[accept]] = cand[accept]
        todo = todo[~accept]
    ks, p = pit_uniformity(pit(dens, ys))
    assert p > 0.01, (ks, p)
    # the check can fail: y drawn from the model and shifted by a tenth of the box is not
    # calibrated, and neither is y drawn for other rows' x
    assert pit_uniformity(pit(dens, ys + 0.1 * (hi - lo)))[1] < 1e-6
    assert pit_uniformity(pit(dens, ys[np.argsort(Xs[:, 0])]))[1] < 1e-6


@pytest.mark.slow  # fits a classifier too (~5 s with a cold numba cache)
def test_distribution_scores_summary():
    X, y = _hetero(500, 0)
    Xt, yt = _hetero(200, 1)
    model = PartitionTreeRegressor(max_leaves=16).fit(X, y)
    summary, u = distribution_scores(model, Xt, yt)
    dens = conditional_densities(model, Xt)
    assert summary["nll"] == pytest.approx(model.nll(Xt, yt)[0])
    assert summary["crps"] == pytest.approx(float(np.mean(crps(dens, yt))))
    q = quantiles(dens, DEFAULT_LEVELS)
    expected = np.mean(
        [mean_pinball_loss(yt, q[:, j], alpha=t) for j, t in enumerate(DEFAULT_LEVELS)]
    )
    assert summary["pinball"] == pytest.approx(expected, rel=1e-12)
    assert summary["pit_ks"] == pytest.approx(stats.kstest(u, "uniform").statistic)
    # a fitted density beats the uniform density on the Y box in CRPS
    lo, hi = model.y_box_
    flat = PiecewiseDensities(np.tile([lo, hi], (len(yt), 1)), np.full((len(yt), 1), 1 / (hi - lo)))
    assert summary["crps"] < float(np.mean(crps(flat, yt)))
    with pytest.raises(ValueError, match="regressors only"):
        from engine.partition import PartitionTreeClassifier

        conditional_densities(PartitionTreeClassifier().fit(X, (y > 0).astype(int)), Xt)
