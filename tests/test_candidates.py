"""engine.cart.candidates: snapping, counts and each strategy's definition.

Oracles: numpy's ``quantile``/``linspace`` for quantile/histogram, scikit-learn ``KMeans``
for 1-D k-means, ``scipy.stats.gaussian_kde`` for the KDE valleys, the DICS formulas written
in numpy from the true clusters of well-separated synthetic data, and hand-computed
examples for snapping and class centroids.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import gaussian_kde
from sklearn.cluster import KMeans

from engine.cart import _candidate_kernels as candidate_kernels
from engine.cart import candidates, dics
from engine.data import load_bundled, make_dataset

CLASSIF = ("iris", "wine", "breast_cancer")


@pytest.fixture(scope="module")
def datasets():
    out = {}
    for name in CLASSIF:
        df, _, entry = load_bundled(name)
        out[name] = make_dataset(df, entry["target"], missing="drop")
    return out


def _mids(x):
    u = np.unique(x)
    return (u[:-1] + u[1:]) / 2


def _snap(x, raw):
    """Oracle snapping: the midpoint of the unique-value gap holding each raw value."""
    u = np.unique(x)
    i = np.searchsorted(u, np.asarray(raw, dtype=float), side="right") - 1
    ok = (i >= 0) & (i < len(u) - 1)
    return np.unique(((u[:-1] + u[1:]) / 2)[i[ok]])


def test_snapping_by_hand():
    xs = np.array([1.0, 1.0, 2.0, 4.0, 4.0, 7.0])
    raw = np.array([0.5, 1.0, 1.9, 3.0, 4.0, 6.99, 7.0, 8.0, np.nan])
    out = np.empty(6, dtype=np.int64)
    n = candidate_kernels.snap_positions(xs, raw.copy(), raw.size, 1, out)
    # 0.5 below, 7.0/8.0 at or above the max, NaN dropped; 1.0 and 1.9 share a gap
    np.testing.assert_array_equal(out[:n], [2, 3, 5])
    np.testing.assert_allclose(candidate_kernels.thresholds_of(xs, out, n), [1.5, 3.0, 5.5])
    n = candidate_kernels.snap_positions(xs, raw.copy(), raw.size, 3, out)  # both sides >= 3 rows
    np.testing.assert_array_equal(out[:n], [3])


@pytest.mark.slow
@pytest.mark.parametrize("strategy", candidates.STRATEGIES)
def test_every_strategy_gives_snapped_sorted_unique_midpoints(datasets, strategy):
    for ds in datasets.values():
        for j in range(ds.n_features):
            x = ds.X[:, j]
            t = candidates.candidate_thresholds(x, ds.y, strategy, random_state=0)
            assert t.dtype == np.float64
            assert np.all(np.diff(t) > 0)
            assert len(t) <= len(np.unique(x)) - 1
            assert np.isin(t, _mids(x)).all()


def test_exhaustive_is_every_midpoint(datasets):
    x = datasets["iris"].X[:, 2]
    np.testing.assert_array_equal(candidates.candidate_thresholds(x, None, "exhaustive"), _mids(x))


def test_min_samples_leaf_filters_thresholds(datasets):
    x = datasets["wine"].X[:, 0]
    for s in candidates.STRATEGIES:
        t = candidates.candidate_thresholds(
            x, datasets["wine"].y, s, random_state=0, min_samples_leaf=20
        )
        left = (x[:, None] <= t[None, :]).sum(axis=0)
        assert np.all(left >= 20) and np.all(len(x) - left >= 20)


@pytest.mark.parametrize("strategy", candidates.STRATEGIES)
def test_constant_feature_and_tiny_inputs_give_nothing(strategy):
    for x, y in [
        (np.full(10, 3.0), np.arange(10) % 2),
        (np.array([1.0]), np.array([0])),
        (np.array([2.0, 2.0]), np.array([0, 1])),
        (np.empty(0), np.empty(0, dtype=np.int64)),
    ]:
        t = candidates.candidate_thresholds(x, y, strategy, random_state=0)
        assert t.shape == (0,)


def test_quantile_matches_numpy_and_uses_all_midpoints_when_few_values():
    x = np.random.default_rng(0).normal(size=300)
    expect = _snap(x, np.quantile(x, np.arange(1, 17) / 17))
    np.testing.assert_array_equal(candidates.candidate_thresholds(x, None, "quantile"), expect)
    np.testing.assert_array_equal(
        candidates.candidate_thresholds(x, None, "quantile", k=5),
        _snap(x, np.quantile(x, np.arange(1, 6) / 6)),
    )
    xi = np.repeat(np.arange(17.0), 5)  # 17 unique <= q + 1
    np.testing.assert_array_equal(candidates.candidate_thresholds(xi, None, "quantile"), _mids(xi))


def test_histogram_uses_inner_equal_width_edges():
    x = np.random.default_rng(1).uniform(0, 10, size=500)
    expect = _snap(x, np.linspace(x.min(), x.max(), 17)[1:-1])
    np.testing.assert_array_equal(candidates.candidate_thresholds(x, None, "histogram"), expect)


def test_random_is_reproducible_for_a_seed_and_draws_k():
    x = np.random.default_rng(2).normal(size=400)
    a = candidates.candidate_thresholds(x, None, "random", k=16, random_state=7)
    b = candidates.candidate_thresholds(x, None, "random", k=16, random_state=7)
    c = candidates.candidate_thresholds(x, None, "random", k=16, random_state=8)
    np.testing.assert_array_equal(a, b)
    assert len(a) == 16 and not np.array_equal(a, c)
    assert len(candidates.candidate_thresholds(x[:10], None, "random", k=16, random_state=0)) == 9


@pytest.mark.slow
def test_random_draws_are_uniform_over_midpoints():
    """Each of 20 midpoints is drawn with probability k/20 = 0.25 (2000 seeds)."""
    x = np.arange(21.0)
    hits = np.zeros(20)
    for seed in range(2000):
        t = candidates.candidate_thresholds(x, None, "random", k=5, random_state=seed)
        hits[(t - 0.5).astype(int)] += 1
    freq = hits / 2000
    assert np.all(np.abs(freq - 0.25) < 0.05)  # ~5 standard errors


@pytest.mark.slow
def test_kmeans1d_matches_scikit_learn_on_separated_clusters():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(m, 0.3, size=80) for m in (0.0, 4.0, 9.0, 15.0)])
    km = KMeans(n_clusters=4, n_init=10, random_state=0).fit(x[:, None])
    c = np.sort(km.cluster_centers_[:, 0])
    expect = _snap(x, (c[:-1] + c[1:]) / 2)
    got = candidates.candidate_thresholds(x, None, "kmeans1d", k=4)
    np.testing.assert_array_equal(got, expect)


def test_kmeans1d_clamps_k_to_unique_values():
    x = np.repeat([1.0, 2.0, 5.0], 10)
    np.testing.assert_array_equal(
        candidates.candidate_thresholds(x, None, "kmeans1d", k=8), [1.5, 3.5]
    )


def test_class_centroid_variance_adjusted_boundaries_by_hand():
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(0, 1, 60), rng.normal(6, 3, 60), rng.normal(20, 0.5, 60)])
    y = np.repeat([2, 0, 1], 60)  # class codes not in mean order
    mu = [x[y == c].mean() for c in (2, 0, 1)]
    sd = [x[y == c].std() for c in (2, 0, 1)]
    raw = [(sd[i] * mu[i + 1] + sd[i + 1] * mu[i]) / (sd[i] + sd[i + 1]) for i in range(2)]
    got = candidates.candidate_thresholds(x, y, "class_centroid")
    np.testing.assert_array_equal(got, _snap(x, raw))
    plain = candidates.candidate_thresholds(x, y, "class_centroid", variance_adjusted=False)
    np.testing.assert_array_equal(plain, _snap(x, [(mu[0] + mu[1]) / 2, (mu[1] + mu[2]) / 2]))
    assert len(got) <= 2  # K - 1


def _scipy_valleys(x, grid_size=256):
    grid = np.linspace(x.min(), x.max(), grid_size)
    d = gaussian_kde(x, bw_method="scott")(grid)
    inner = (d[1:-1] < d[:-2]) & (d[1:-1] < d[2:])
    return grid[1:-1][inner], grid


def test_kde_valley_exact_mode_matches_scipy():
    """<= 16 unique values: exact KDE; the valleys equal scipy's (Scott bandwidth)."""
    rng = np.random.default_rng(5)
    x = np.clip(np.round(np.concatenate([rng.normal(3, 1, 300), rng.normal(11, 1.5, 200)])), 0, 15)
    assert len(np.unique(x)) <= candidate_kernels.KDE_EXACT_MAX_UNIQUE
    valleys, _ = _scipy_valleys(x)
    assert len(valleys) >= 1
    _, dens = candidate_kernels.kde_density(np.sort(x), 256)
    ref = gaussian_kde(x)(np.linspace(x.min(), x.max(), 256))
    np.testing.assert_allclose(dens / dens.max(), ref / ref.max(), rtol=1e-9, atol=1e-12)
    got = candidates.candidate_thresholds(x, None, "kde_valley", fallback=False)
    np.testing.assert_array_equal(got, _snap(x, valleys))


def test_kde_valley_binned_mode_is_within_a_grid_step_of_scipy():
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.normal(0, 1, 3000), rng.normal(7, 1.5, 2000)])
    valleys, grid = _scipy_valleys(x)
    _, dens = candidate_kernels.kde_density(np.sort(x), 256)
    ref = gaussian_kde(x)(grid)
    np.testing.assert_allclose(dens / dens.max(), ref / ref.max(), atol=2e-3)
    raw = np.empty(256)
    n = candidate_kernels.kde_valley_raw(np.sort(x), 256, raw)
    assert n == len(valleys) == 1
    assert abs(raw[0] - valleys[0]) <= grid[1] - grid[0] + 1e-12


def test_fallback_to_quantile_when_a_strategy_finds_nothing():
    x = np.random.default_rng(7).normal(size=500)  # unimodal: no KDE valley
    assert len(candidates.candidate_thresholds(x, None, "kde_valley", fallback=False)) == 0
    np.testing.assert_array_equal(
        candidates.candidate_thresholds(x, None, "kde_valley"),
        candidates.candidate_thresholds(x, None, "quantile", k=16),
    )


def test_dics_dictionary_follows_the_paper_formulas():
    """Three separated 2-D blobs: k-means recovers them, so the dictionary equals the
    variance-adjusted boundaries computed from the true clusters (m = 3 pairs)."""
    rng = np.random.default_rng(8)
    means = np.array([[0.0, 0.0], [10.0, 50.0], [20.0, -40.0]])
    scales = np.array([[1.0, 5.0], [2.0, 3.0], [0.5, 8.0]])
    X = np.vstack([rng.normal(means[c], scales[c], size=(200, 2)) for c in range(3)])
    labels = np.repeat(np.arange(3), 200)
    d = dics.dics_dictionary(X, 3, random_state=0)
    assert d.m_pairs == 3 and d.pairs.shape == (3, 2)
    mean, scale = X.mean(axis=0), X.std(axis=0)
    for j in range(2):
        # exact: the formula on the fitted (mini-batch) centroids, back in raw units
        mu_z, s_z = d.centers[:, j], d.stds[:, j] + 1e-9
        zeta = [(s_z[a] * mu_z[b] + s_z[b] * mu_z[a]) / (s_z[a] + s_z[b]) for a, b in d.pairs]
        np.testing.assert_allclose(d.feature(j), np.sort(np.array(zeta) * scale[j] + mean[j]))
        # close to the same formula on the true clusters (mini-batch centroids are estimates)
        mu = np.array([X[labels == c, j].mean() for c in range(3)])
        sd = np.array([X[labels == c, j].std() for c in range(3)])
        expect = sorted(
            (sd[a] * mu[b] + sd[b] * mu[a]) / (sd[a] + sd[b]) for a, b in [(0, 1), (0, 2), (1, 2)]
        )
        np.testing.assert_allclose(d.feature(j), expect, atol=0.01 * scale[j])
        assert len(d.feature(j)) <= d.m_pairs


def test_dics_pairs_default_and_farthest_first():
    assert [dics.default_m_pairs(k) for k in (2, 3, 5, 6, 10)] == [1, 3, 10, 15, 25]
    X = np.random.default_rng(9).normal(size=(400, 3))
    d = dics.dics_dictionary(X, 10, random_state=0)
    assert d.pairs.shape[0] == 25
    dist = np.linalg.norm(d.centers[d.pairs[:, 0]] - d.centers[d.pairs[:, 1]], axis=1)
    assert np.all(np.diff(dist) <= 1e-12)
    all_d = np.sort(
        np.linalg.norm(d.centers[:, None] - d.centers[None], axis=2)[np.triu_indices(10, 1)]
    )[::-1]
    np.testing.assert_allclose(dist, all_d[:25])
    for j in range(3):
        assert len(d.feature(j)) <= 25


def test_dics_with_a_given_dictionary_snaps_it(datasets):
    ds = datasets["iris"]
    d = dics.dics_dictionary(ds.X, 3, random_state=0)
    for j in range(4):
        t = candidates.candidate_thresholds(ds.X[:, j], ds.y, "dics_paper", dictionary=d.feature(j))
        np.testing.assert_array_equal(t, _snap(ds.X[:, j], d.feature(j)))
        assert len(t) <= 3


def test_regression_targets_and_errors():
    x = np.random.default_rng(10).normal(size=100)
    yr = x**2
    assert len(candidates.candidate_thresholds(x, yr, "kmeans1d")) == 7  # k = 8 for regression
    with pytest.raises(ValueError, match="needs class labels"):
        candidates.candidate_thresholds(x, yr, "class_centroid")
    with pytest.raises(ValueError, match=r"splitter must be one of \['exhaustive'"):
        candidates.candidate_thresholds(x, None, "best")
    with pytest.raises(ValueError, match="n_candidates"):
        candidates.candidate_thresholds(x, None, "quantile", k=0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        candidates.candidate_thresholds(np.array([1.0, np.nan]), None, "exhaustive")
    assert candidates.strategies_for("regression") == tuple(
        s for s in candidates.STRATEGIES if s != "class_centroid"
    )
