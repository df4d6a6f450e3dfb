"""Stage-A statistics, permutation p-values, presets and adaptive stopping (docs/spec.md section 4).

Oracles: direct numpy/scipy/scikit-learn formulas for the statistics and the Beta CDF;
the permutation-test theory (grid of p-values, null rejection rate) for the tests.
"""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import mutual_info_score

from engine.cit.permutation import (
    adaptive_stop_index,
    beta_cdf_int,
    n_resamples,
    selector_null,
    selector_test,
    splitter_test,
)
from engine.cit.statistics import (
    ETA_REG,
    MC,
    MI,
    PC,
    abs_pearson,
    bin_codes,
    correlation_ratio,
    mutual_information,
    statistic,
)


def _eta_numpy(x, g):
    mean = x.mean()
    sst = ((x - mean) ** 2).sum()
    ssb = sum((g == k).sum() * (x[g == k].mean() - mean) ** 2 for k in np.unique(g))
    return math.sqrt(ssb / sst)


def test_statistics_match_direct_formulas():
    rng = np.random.default_rng(0)
    x = rng.normal(size=150)
    g = rng.integers(0, 3, size=150).astype(np.int64)
    y = x + rng.normal(size=150)
    assert correlation_ratio(x, g, 3) == pytest.approx(_eta_numpy(x, g), rel=1e-12)
    assert abs_pearson(x, y) == pytest.approx(abs(stats.pearsonr(x, y)[0]), rel=1e-12)
    assert abs_pearson(x, -y) == pytest.approx(abs(stats.pearsonr(x, y)[0]), rel=1e-12)
    a, n_a = bin_codes(x, 5)
    assert n_a == 5 and np.bincount(a).min() >= 25
    assert mutual_information(a, n_a, g, 3) == pytest.approx(mutual_info_score(a, g), rel=1e-10)
    dummy_i = np.zeros(150, dtype=np.int64)
    dummy_f = np.zeros(150)
    assert statistic(MC, x, dummy_i, 1, g, dummy_f, 3) == correlation_ratio(x, g, 3)
    assert statistic(MI, x, a, n_a, g, dummy_f, 3) == mutual_information(a, n_a, g, 3)
    assert statistic(PC, x, dummy_i, 1, dummy_i, y, 1) == abs_pearson(x, y)
    assert statistic(ETA_REG, x, g, 3, dummy_i, y, 1) == pytest.approx(_eta_numpy(y, g))
    # constant inputs give 0, not nan
    assert correlation_ratio(np.ones(10), g[:10], 3) == 0.0
    assert abs_pearson(np.ones(10), y[:10]) == 0.0


def test_beta_cdf_matches_scipy():
    for alpha in (0.05, 0.005, 0.3):
        for n in (1, 20, 57, 300):
            for L in sorted({0, 1, min(3, n), n // 2, n}):
                assert beta_cdf_int(alpha, n, L) == pytest.approx(
                    stats.beta.cdf(alpha, 1 + L, 1 + n - L), abs=1e-10
                )


def test_presets():
    assert [n_resamples(s, 0.05) for s in ("minimum", "auto", "maximum")] == [20, 52, 100]
    assert [n_resamples(s, 0.005) for s in ("minimum", "auto", "maximum")] == [200, 1321, 10000]
    assert n_resamples(99, 0.05) == 99
    with pytest.raises(ValueError, match="n_resamples"):
        n_resamples("many", 0.05)


def _test_mc(x, y, B, seed, **kw):
    n = x.shape[0]
    return selector_test(MC, x, np.zeros(n, dtype=np.int64), 1, y, np.zeros(n), 2, B, seed, **kw)


def test_p_values_on_grid_and_null_rate():
    rng = np.random.default_rng(1)
    B = 99
    ps = []
    for rep in range(400):
        x = rng.normal(size=60)
        y = rng.integers(0, 2, size=60).astype(np.int64)
        r = _test_mc(x, y, B, rep)
        assert r.n_permutations == B
        ps.append(r.p_value)
    ps = np.array(ps)
    k = ps * (B + 1)
    assert np.allclose(k, np.round(k)) and k.min() >= 1 and k.max() <= B + 1
    rate = np.mean(ps <= 0.05)
    se = math.sqrt(0.05 * 0.95 / 400)
    assert abs(rate - 0.05) <= 3 * se, rate


def test_null_values_independent_of_blocks_and_reproducible():
    rng = np.random.default_rng(2)
    x = rng.normal(size=40)
    y = rng.integers(0, 3, size=40).astype(np.int64)
    a = np.zeros(40, dtype=np.int64)
    f = np.zeros(40)
    full = selector_null(MC, x, a, 1, y, f, 3, 0, 30, 7)
    part = selector_null(MC, x, a, 1, y, f, 3, 10, 20, 7)
    np.testing.assert_array_equal(full[10:], part)
    np.testing.assert_array_equal(full, selector_null(MC, x, a, 1, y, f, 3, 0, 30, 7))
    assert not np.array_equal(full, selector_null(MC, x, a, 1, y, f, 3, 0, 30, 8))
    r1 = _test_mc(x, y, 200, 3, adaptive=True, keep_null=True)
    r2 = _test_mc(x, y, 200, 3, adaptive=True, keep_null=True)
    assert (r1.p_value, r1.n_permutations) == (r2.p_value, r2.n_permutations)
    np.testing.assert_array_equal(r1.null, r2.null)
    assert r1.null.shape == (r1.n_permutations,)


def test_adaptive_stopping_same_decisions_fewer_permutations():
    rng = np.random.default_rng(3)
    alpha = 0.05
    B = 999
    for signal in (True, False):
        for rep in range(5):
            x = rng.normal(size=100)
            noise = rng.normal(size=100)
            y = ((x + 0.3 * noise > 0) if signal else (noise > 0)).astype(np.int64)
            if not signal:
                x = np.abs(rng.normal(size=100))  # independent of y
            fixed = _test_mc(x, y, B, rep)
            ada = _test_mc(x, y, B, rep, adaptive=True, alpha=alpha)
            if fixed.p_value < 0.01 or fixed.p_value > 0.2:  # clear cases only
                assert (fixed.p_value < alpha) == (ada.p_value < alpha)
                assert ada.n_permutations < B
                assert ada.p_value == (ada.n_exceed + 1) / (ada.n_permutations + 1)
            if signal:
                assert fixed.p_value < 0.01 and ada.n_permutations == 58


def test_adaptive_stop_index_rule():
    # no exceedance: stops once P(Bin(n+1, a) >= 1) >= 0.95, i.e. n + 1 >= 59 at a = 0.05
    used, L = adaptive_stop_index(np.zeros(100, dtype=np.int64), 0, 0, 0.05, 0.95, 20)
    assert (used, L) == (58, 0)
    # all exceedances: stops at the first n >= n_min
    used, L = adaptive_stop_index(np.ones(100, dtype=np.int64), 0, 0, 0.05, 0.95, 20)
    assert (used, L) == (20, 20)
    used, _ = adaptive_stop_index(np.zeros(5, dtype=np.int64), 0, 0, 0.05, 0.95, 20)
    assert used == -1


def test_adaptive_stop_index_curtailment():
    """With ``n_max = B`` the test stops once ``(L + 1) / (B + 1) >= alpha`` (it can no
    longer end significant), long before ``n_min``; at the boundary exactly."""
    # alpha = 0.05, B = 99: (L + 1) / 100 >= 0.05 first at L = 4
    used, L = adaptive_stop_index(np.ones(100, dtype=np.int64), 0, 0, 0.05, 0.95, 20, 99)
    assert (used, L) == (4, 4)
    flags = np.zeros(100, dtype=np.int64)
    flags[[2, 7, 11, 30]] = 1  # the fourth exceedance at flag 31 (n_min out of reach)
    used, L = adaptive_stop_index(flags, 0, 0, 0.05, 0.95, 1000, 99)
    assert (used, L) == (31, 4)
    # no curtailment without n_max; carried-over counts take part
    assert adaptive_stop_index(np.ones(3, dtype=np.int64), 10, 3, 0.05, 0.95, 20, 99) == (1, 4)
    assert adaptive_stop_index(np.ones(3, dtype=np.int64), 10, 3, 0.05, 0.95, 20) == (-1, 6)


def test_curtailed_splitter_tests_keep_the_full_runs_decisions():
    """Label noise, 60 thresholds at the Bonferroni level: a curtailed threshold (stopped
    before ``n_min``) has a full non-adaptive run (same seed, same B, so the same
    permutations) with ``p >= alpha``, every decision equals the uncurtailed procedure's,
    and the clearly null thresholds stop after a few dozen permutations (before the fix
    every one ran ``n_min = ceil(1 / alpha)``)."""
    from engine.cit.permutation import splitter_tests

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, size=300).astype(np.int64)
    f = np.zeros(300)
    pos = np.sort(rng.choice(np.arange(5, 295), size=60, replace=False))
    alpha = 0.05 / pos.size
    B = n_resamples("auto", alpha)
    n_min = math.ceil(1 / alpha)
    ada = splitter_tests(True, y, f, pos, 0, 2, B, 11, alpha=alpha, adaptive=True)
    full = splitter_tests(True, y, f, pos, 0, 2, B, 11, alpha=alpha)
    used = np.array([r.n_permutations for r in ada])
    curtailed = used < n_min
    assert curtailed.sum() >= 50
    assert all(full[j].p_value >= alpha for j in np.flatnonzero(curtailed))
    assert [r.p_value < alpha for r in ada] == [r.p_value < alpha for r in full]
    assert np.median(used) < 200 < n_min
    for r in ada:
        assert r.p_value == (r.n_exceed + 1) / (r.n_permutations + 1)
    # the one-position test stops at the same place
    j = int(np.argmin(used))
    one = splitter_test(True, y, f, int(pos[j]), 0, 2, B, 11, alpha=alpha, adaptive=True)
    assert (one.p_value, one.n_permutations) == (ada[j].p_value, ada[j].n_permutations)


def test_stage_b_perfect_separation_gets_minimal_p():
    y = np.array([0] * 30 + [1] * 30, dtype=np.int64)
    f = np.zeros(60)
    for crit in (0, 1):
        r = splitter_test(True, y, f, 30, crit, 2, 99, 0)
        assert r.statistic == pytest.approx(0.0, abs=1e-12)
        assert r.p_value == pytest.approx(1 / 100)
    yr = np.r_[np.zeros(30), np.ones(30) * 5.0]
    r = splitter_test(False, np.zeros(60, dtype=np.int64), yr, 30, 2, 1, 99, 0)
    assert r.p_value == pytest.approx(1 / 100)
    # a useless split gets a large p-value
    rng = np.random.default_rng(0)
    yn = rng.integers(0, 2, size=60).astype(np.int64)
    assert splitter_test(True, yn, f, 1, 0, 2, 99, 0).p_value > 0.05


def test_shared_splitter_tests_equal_one_by_one():
    from engine.cit.permutation import splitter_tests

    rng = np.random.default_rng(0)
    y = (np.arange(200) > 90).astype(np.int64)
    y[rng.integers(0, 200, 60)] ^= 1
    f = np.zeros(200)
    pos = np.array([30, 60, 90, 120, 150])
    for adaptive in (False, True):
        shared = splitter_tests(
            True, y, f, pos, 0, 2, 199, 7, alpha=0.01, adaptive=adaptive, keep_null=True
        )
        for q, r in zip(pos, shared, strict=True):
            one = splitter_test(
                True, y, f, int(q), 0, 2, 199, 7, alpha=0.01, adaptive=adaptive, keep_null=True
            )
            assert (r.p_value, r.n_permutations) == (one.p_value, one.n_permutations)
            np.testing.assert_allclose(r.null, one.null, rtol=1e-12)
    yr = rng.normal(size=50)
    shared = splitter_tests(
        False, np.zeros(50, dtype=np.int64), yr, np.array([10, 25]), 2, 1, 49, 3
    )
    assert (
        shared[1].p_value
        == splitter_test(False, np.zeros(50, dtype=np.int64), yr, 25, 2, 1, 49, 3).p_value
    )


@pytest.mark.parametrize("adaptive", [False, True])
def test_splitter_tests_stop_at_first_significant(adaptive):
    """Threshold scanning: ``stop_at_first`` returns the tests up to and including the first
    significant position (in the order given), each equal to the one-by-one test; positions
    before it are not significant.  Over random label noise the cut falls at every place,
    including 'none significant' (everything returned)."""
    from engine.cit.permutation import splitter_tests

    rng = np.random.default_rng(1)
    cuts = set()
    for rep in range(40):
        n = int(rng.integers(30, 120))
        y = (np.arange(n) > rng.integers(5, n - 5)).astype(np.int64)
        y[rng.integers(0, n, int(rng.integers(0, n // 2)))] ^= 1
        f = np.zeros(n)
        pos = rng.permutation(np.arange(3, n - 3))[: int(rng.integers(2, 12))]
        alpha = float(rng.choice([0.005, 0.02, 0.05]))
        got = splitter_tests(
            True, y, f, pos, 0, 2, 299, rep, alpha=alpha, adaptive=adaptive, stop_at_first=True
        )
        one = [
            splitter_test(True, y, f, int(q), 0, 2, 299, rep, alpha=alpha, adaptive=adaptive)
            for q in pos
        ]
        sig = [i for i, r in enumerate(one) if r.p_value < alpha]
        want = sig[0] + 1 if sig else len(pos)
        assert len(got) == want
        for r, o in zip(got, one, strict=False):
            assert (r.p_value, r.n_permutations) == (o.p_value, o.n_permutations)
        cuts.add("none" if not sig else ("first" if want == 1 else "later"))
    assert cuts == {"none", "first", "later"}


def test_one_thread_kernels_equal_parallel_ones():
    """Small blocks run in the ``*_serial`` twins: the same permutations, the same values."""
    from engine.cit import permutation

    rng = np.random.default_rng(5)
    n = 60
    x = rng.normal(size=n)
    a = rng.integers(0, 3, n).astype(np.int64)
    yc = rng.integers(0, 2, n).astype(np.int64)
    yv = rng.normal(size=n)
    w = np.ones(n)
    pos = np.array([5, 30, 55], dtype=np.int64)
    for code in (0, 1, 2, 3):
        np.testing.assert_array_equal(
            permutation.selector_null(code, x, a, 3, yc, yv, 2, 7, 40, 11),
            permutation.selector_null_serial(code, x, a, 3, yc, yv, 2, 7, 40, 11),
        )
    for clf, crit, k in ((True, 0, 2), (True, 1, 2), (False, 2, 1)):
        np.testing.assert_array_equal(
            permutation.splitter_null(clf, yc, yv, w, 30, crit, k, 3, 40, 11),
            permutation.splitter_null_serial(clf, yc, yv, w, 30, crit, k, 3, 40, 11),
        )
        np.testing.assert_array_equal(
            permutation.splitter_null_all(clf, yc, yv, w, pos, crit, k, 3, 40, 11),
            permutation.splitter_null_all_serial(clf, yc, yv, w, pos, crit, k, 3, 40, 11),
        )
    # the dispatcher switches on the work, never on the values
    big = permutation._null(
        permutation.selector_null,
        permutation.selector_null_serial,
        permutation.PARALLEL_MIN_WORK,
        0,
        x,
        a,
        3,
        yc,
        yv,
        2,
        0,
        50,
        1,
    )
    small = permutation._null(
        permutation.selector_null,
        permutation.selector_null_serial,
        0,
        0,
        x,
        a,
        3,
        yc,
        yv,
        2,
        0,
        50,
        1,
    )
    np.testing.assert_array_equal(big, small)
