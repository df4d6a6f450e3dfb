"""Asymptotic conditional inference tests and ctree's split points (engine.cit.asymptotic).

Oracles: the exact conditional moments of the linear statistic from enumerating every
permutation of a small node (Strasser & Weber's expectation and covariance must equal
them), numpy's Moore-Penrose inverse and scipy's chi-square on those moments, the identities
c = (n - 1) eta^2 and (n - 1) r^2, Monte Carlo samples of the multivariate normal maximum,
brute force over every cut point and every split of the categories; R partykit itself in
test_cit_partykit.py.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from engine.cit import PAPER_SETTINGS
from engine.cit.asymptotic import (
    MAXIMUM,
    QUADRATIC,
    categorical_pvalue,
    correlation_factor,
    level_sums,
    max_abs_normal_tail,
    maxstat_ordered,
    maxstat_unordered,
    n_influence_columns,
    node_influence,
    numeric_pvalues,
    numeric_tests,
    pinv_sym,
)
from engine.cit.statistics import abs_pearson, correlation_ratio
from engine.cit.tree import (
    ConditionalInferenceTreeClassifier,
    ConditionalInferenceTreeRegressor,
    _ctree_order,
)


def influence(y, classif, n_classes):
    """h(y) as partykit's .y2infl: class dummies (K > 2), the second class's indicator
    (K = 2), or y."""
    if not classif:
        return np.asarray(y, dtype=np.float64)[:, None]
    dummies = np.eye(n_classes)[y]
    return dummies if n_classes > 2 else dummies[:, 1:]


def permutation_moments(g, h):
    """Mean and covariance of T = vec(g^T h_perm) (column-major) over *every* permutation
    of the rows of h: the exact conditional moments."""
    n = h.shape[0]
    ts = np.array(
        [(g.T @ h[list(perm)]).reshape(-1, order="F") for perm in itertools.permutations(range(n))]
    )
    return ts.mean(axis=0), np.atleast_2d(np.cov(ts, rowvar=False, bias=True))


def quadratic_from_moments(t, mean, cov):
    """(c, df, p) of the quadratic form with the Moore-Penrose inverse (numpy)."""
    d = t - mean
    val = np.linalg.eigvalsh(cov)
    rank = int((val > val.max() * 1e-8).sum())
    c = float(d @ np.linalg.pinv(cov, rcond=1e-8, hermitian=True) @ d)
    return c, rank, stats.chi2.sf(c, rank)


@pytest.mark.parametrize("task", ["three classes", "two classes", "regression"])
def test_numeric_test_is_the_exact_permutation_moments(task):
    rng = np.random.default_rng(0)
    n = 7
    X = np.ascontiguousarray(rng.normal(size=(n, 2)))
    classif = task != "regression"
    n_classes = 3 if task == "three classes" else 2
    yc = rng.integers(0, n_classes, size=n).astype(np.int64)
    yc[:n_classes] = np.arange(n_classes)  # every class present
    yv = rng.normal(size=n)
    n_q = n_influence_columns(classif, n_classes)
    h = influence(yc if classif else yv, classif, n_classes)
    assert h.shape[1] == n_q
    mean_h, cov_h = node_influence(yc, yv, classif, n_q)
    rows = np.arange(n, dtype=np.int64)
    D, vx = numeric_tests(X, rows, np.array([0, 1], dtype=np.int64), yc, yv, classif, n_q, mean_h)
    stat, p, lower, df = numeric_pvalues(D, vx, cov_h, QUADRATIC)
    for j in range(2):
        g = X[:, [j]]
        t = (g.T @ h).reshape(-1, order="F")
        mean, cov = permutation_moments(g, h)
        # Strasser & Weber's moments: E = sum(g) mean_h, Cov = vx S_h
        np.testing.assert_allclose(t - mean, D[j], atol=1e-12)
        np.testing.assert_allclose(cov, vx[j] * cov_h, atol=1e-12)
        c, rank, p_ref = quadratic_from_moments(t, mean, cov)
        assert stat[j] == pytest.approx(c, rel=1e-9) and df[j] == rank
        assert p[j] == pytest.approx(p_ref, rel=1e-9)
        assert lower[j] == pytest.approx(math.log1p(-p_ref), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("classif", [True, False])
def test_categorical_test_is_the_exact_permutation_moments(classif):
    rng = np.random.default_rng(1)
    n = 7
    codes = np.array([0, 1, 2, 0, 1, 2, 2], dtype=np.int64)
    yc = np.array([0, 1, 2, 1, 0, 2, 1], dtype=np.int64)
    yv = rng.normal(size=n)
    n_classes = 3
    n_q = n_influence_columns(classif, n_classes)
    h = influence(yc if classif else yv, classif, n_classes)
    mean_h, cov_h = node_influence(yc, yv, classif, n_q)
    g = np.eye(3)[codes]  # level dummies
    t = (g.T @ h).reshape(-1, order="F")
    mean, cov = permutation_moments(g, h)
    c, rank, p_ref = quadratic_from_moments(t, mean, cov)
    counts, sums = level_sums(codes, 3, yc, yv, classif, n_q)
    stat, p, lower, df = categorical_pvalue(counts, sums, mean_h, cov_h, QUADRATIC)
    assert stat == pytest.approx(c, rel=1e-9) and df == rank == (4 if classif else 2)
    assert p == pytest.approx(p_ref, rel=1e-9)
    # the maximum form: the largest standardised entry of T - E
    z, _, _, _ = categorical_pvalue(counts, sums, mean_h, cov_h, MAXIMUM)
    sd = np.sqrt(np.diag(cov))
    keep = sd > 1e-12
    assert z == pytest.approx(np.max(np.abs(t - mean)[keep] / sd[keep]), rel=1e-9)


def test_quadratic_statistic_is_n_minus_1_eta_squared_and_r_squared():
    rng = np.random.default_rng(2)
    n = 150
    x = rng.normal(size=n)
    yc = rng.integers(0, 4, size=n).astype(np.int64)
    yv = x + rng.normal(size=n)
    X = np.ascontiguousarray(x[:, None])
    rows = np.arange(n, dtype=np.int64)
    one = np.array([0], dtype=np.int64)
    mean_h, cov_h = node_influence(yc, yv, True, 4)
    D, vx = numeric_tests(X, rows, one, yc, yv, True, 4, mean_h)
    stat, p, _, df = numeric_pvalues(D, vx, cov_h, QUADRATIC)
    eta = correlation_ratio(x, yc, 4)
    assert stat[0] == pytest.approx((n - 1) * eta**2, rel=1e-10) and df[0] == 3
    assert p[0] == pytest.approx(stats.chi2.sf((n - 1) * eta**2, 3), rel=1e-10)
    mean_h, cov_h = node_influence(yc, yv, False, 1)
    D, vx = numeric_tests(X, rows, one, yc, yv, False, 1, mean_h)
    stat, p, _, df = numeric_pvalues(D, vx, cov_h, QUADRATIC)
    r = abs_pearson(x, yv)
    assert stat[0] == pytest.approx((n - 1) * r**2, rel=1e-10) and df[0] == 1
    # one dimension: the maximum form is the two-sided normal test of the same statistic
    z, pz, _, _ = numeric_pvalues(D, vx, cov_h, MAXIMUM)
    assert z[0] == pytest.approx(math.sqrt((n - 1) * r**2), rel=1e-10)
    assert pz[0] == pytest.approx(p[0], rel=1e-9)


def test_small_p_values_keep_their_relative_accuracy():
    """A strong split: p ~ 1e-60, where a Monte Carlo test reports 1/(B+1) and 1 - CDF
    loses every digit; log(1 - p) must be -p to full precision (partykit's criterion)."""
    rng = np.random.default_rng(3)
    n = 300
    x = rng.normal(size=n)
    yc = (x + 0.3 * rng.normal(size=n) > 0).astype(np.int64)
    X = np.ascontiguousarray(x[:, None])
    mean_h, cov_h = node_influence(yc, np.zeros(n), True, 1)
    D, vx = numeric_tests(
        X, np.arange(n, dtype=np.int64), np.array([0]), yc, np.zeros(n), True, 1, mean_h
    )
    stat, p, lower, _ = numeric_pvalues(D, vx, cov_h, QUADRATIC)
    assert 1e-300 < p[0] < 1e-30
    assert p[0] == pytest.approx(stats.chi2.sf(stat[0], 1), rel=1e-12)
    assert lower[0] == pytest.approx(-p[0], rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("n_classes", [3, 4])
def test_maximum_p_value_is_the_multivariate_normal_tail(n_classes):
    """P(max_k |Z_k| > z) for the (singular) correlation of K class dummies: against
    4,000,000 draws of Z (within 4 standard errors); the exact normal tail in one
    dimension."""
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(n_classes))
    cov = np.diag(p) - np.outer(p, p)
    factor, keep = correlation_factor(cov)
    assert keep.all() and factor.shape == (n_classes, n_classes - 1)
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_allclose(factor @ factor.T, cov / np.outer(sd, sd), atol=1e-12)
    draws = factor @ rng.standard_normal((n_classes - 1, 4_000_000))
    top = np.abs(draws).max(axis=0)
    for z in (1.5, 2.5, 3.5):
        ref = (top > z).mean()
        se = math.sqrt(ref * (1 - ref) / top.size)
        assert abs(max_abs_normal_tail(z, factor) - ref) <= 4 * se + 1e-4 * ref
    one = np.array([[1.0]])
    assert max_abs_normal_tail(2.0, one) == pytest.approx(2 * stats.norm.sf(2.0), rel=1e-12)


def brute_force_cut(x, h, min_leaf, form):
    """(statistic per admissible cut, index of the first largest) from the definitions:
    g = 1{x <= c}, T = g^T h, E = n_L mean_h, Cov = S_h n_L (n - n_L) / (n - 1)."""
    n = x.size
    mean_h = h.mean(axis=0)
    cov_h = np.cov(h, rowvar=False, bias=True).reshape(h.shape[1], h.shape[1])
    out = []
    for c in np.unique(x)[:-1]:
        left = x <= c
        n_left = left.sum()
        if n_left < min_leaf or n - n_left < min_leaf:
            continue
        d = h[left].sum(axis=0) - n_left * mean_h
        cov = cov_h * n_left * (n - n_left) / (n - 1)
        if form == "quadratic":
            out.append(float(d @ np.linalg.pinv(cov, rcond=1e-8, hermitian=True) @ d))
        else:
            var = np.diag(cov)
            out.append(float(np.max(np.abs(d[var > 0]) / np.sqrt(var[var > 0]))))
    out = np.array(out)
    return out, int(np.argmax(out))


@pytest.mark.parametrize("task", ["three classes", "two classes", "regression"])
@pytest.mark.parametrize("form", ["quadratic", "maximum"])
def test_maxstat_split_is_the_brute_force_best_cut(task, form):
    rng = np.random.default_rng(5)
    n = 80
    x = np.round(rng.normal(size=n), 1)  # ties: cut points between distinct values only
    classif = task != "regression"
    n_classes = 3 if task == "three classes" else 2
    yc = (
        np.digitize(x + 0.8 * rng.normal(size=n), [-0.5, 0.5]) % n_classes
        if classif
        else np.zeros(n)
    ).astype(np.int64)
    yv = x**2 + rng.normal(size=n)
    n_q = n_influence_columns(classif, n_classes)
    h = influence(yc if classif else yv, classif, n_classes)
    mean_h, cov_h = node_influence(yc, yv, classif, n_q)
    A, _ = pinv_sym(cov_h)
    order = np.argsort(x, kind="stable")
    n_left, got, best = maxstat_ordered(
        x[order],
        yc[order],
        yv[order],
        classif,
        n_q,
        mean_h,
        A,
        np.diag(cov_h).copy(),
        QUADRATIC if form == "quadratic" else MAXIMUM,
        7.0,
    )
    ref, ref_best = brute_force_cut(x, h, 7, form)
    np.testing.assert_allclose(got, ref, rtol=1e-9)
    assert best == ref_best
    assert np.all(n_left >= 7) and np.all(n - n_left >= 7)


@pytest.mark.parametrize("form", [QUADRATIC, MAXIMUM])
def test_categorical_split_is_the_brute_force_best_grouping(form):
    """Every split of 5 categories into two groups (libcoin's enumeration, level 0 always
    in group 0): the statistic from the definitions, the first largest wins."""
    rng = np.random.default_rng(6)
    n = 120
    codes = rng.integers(0, 5, size=n).astype(np.int64)
    yc = ((codes % 3) + (rng.random(n) < 0.3)).astype(np.int64) % 3
    h = influence(yc, True, 3)
    mean_h, cov_h = node_influence(yc, np.zeros(n), True, 3)
    A, _ = pinv_sym(cov_h)
    counts, sums = level_sums(codes, 5, yc, np.zeros(n), True, 3)
    group, best = maxstat_unordered(counts, sums, mean_h, A, np.diag(cov_h).copy(), form, 7.0)
    ref_best, ref_group = 0.0, None
    for j in range(1, 2**4):
        grp = np.array([0] + [(j >> (lev - 1)) & 1 for lev in range(1, 5)])
        left = grp[codes] == 1
        n_left = left.sum()
        if n_left < 7 or n - n_left < 7:
            continue
        d = h[left].sum(axis=0) - n_left * mean_h
        cov = cov_h * n_left * (n - n_left) / (n - 1)
        if form == QUADRATIC:
            s = float(d @ np.linalg.pinv(cov, rcond=1e-8, hermitian=True) @ d)
        else:
            s = float(np.max(np.abs(d) / np.sqrt(np.diag(cov))))
        if s > ref_best * (1 + 1e-12):
            ref_best, ref_group = s, grp
    assert best == pytest.approx(ref_best, rel=1e-9)
    np.testing.assert_array_equal(group, ref_group)


def test_tree_uses_the_best_cut_and_partykits_adjustment():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 6))
    y = (X[:, 2] + 0.5 * rng.normal(size=300) > 0.3).astype(int)
    est = ConditionalInferenceTreeClassifier(max_depth=1).fit(X, y)
    rec = est.node_records_[0]
    m = len(rec["features"])
    p = np.asarray(rec["p_values"])
    # 1 - (1 - p)^m, computed as partykit does (m log(1 - p)) so that small p keep digits
    np.testing.assert_allclose(rec["p_values_adjusted"], 1 - (1 - p) ** m, atol=1e-15)
    np.testing.assert_allclose(rec["p_values_adjusted"], -np.expm1(m * np.log1p(-p)), rtol=1e-12)
    assert est.tree_.feature[0] == 2 == rec["features"][int(np.argmin(p))]
    assert est.p_value_selector_[0] == pytest.approx(min(rec["p_values_adjusted"]))
    ref, ref_best = brute_force_cut(X[:, 2], influence(y, True, 2), 7, "quadratic")
    np.testing.assert_allclose(rec["candidate_threshold_statistics"], ref, rtol=1e-9)
    assert est.tree_.threshold[0] == rec["candidate_thresholds"][ref_best]
    left = X[:, 2] <= est.tree_.threshold[0]
    xs = np.sort(np.unique(X[:, 2]))
    # the threshold is the midpoint between the last value on the left and the next one
    last = X[left, 2].max()
    assert est.tree_.threshold[0] == pytest.approx((last + xs[np.searchsorted(xs, last) + 1]) / 2)
    # without the adjustment (ctree's "Univariate") the raw p-values are compared
    raw = ConditionalInferenceTreeClassifier(max_depth=1, adjust_alpha_selector=False).fit(X, y)
    assert raw.p_value_selector_[0] == pytest.approx(p.min())


def test_ctree_order_breaks_ties_as_partykit():
    """Tied criteria (within sqrt(DBL_MIN)) are ranked by the statistic; exactly equal
    ones put the later column first (R's rev(order(crit)))."""
    crit = np.array([-0.0, -0.0, -1e-3, -0.0])
    stat = np.array([50.0, 80.0, 70.0, 80.0])
    order, ranked = _ctree_order(crit, stat, np.array([0, 1, 2, 3]))
    assert list(order) == [3, 1, 0, 2]
    # ranks 1, 2.5, 2.5 over columns 2 + 3 + 5 (1-based, the response first) / 1000
    assert ranked[0] == pytest.approx(1 / 10_000) and ranked[1] == pytest.approx(2.5 / 10_000)
    assert ranked[2] == -1e-3


@pytest.mark.parametrize("settings", [{}, PAPER_SETTINGS["classification"]], ids=["ctree", "paper"])
def test_a_feature_on_a_tiny_scale_is_tested(settings):
    """x = 5 + k 1e-7 separates the classes perfectly: it must get its statistic and split
    the root (the old absolute variance tolerance gave it statistic 0 and p = 1, and the
    tree stayed a root); only constant columns are skipped."""
    k = np.arange(100.0)
    X = np.column_stack(
        [5 + k * 1e-7, np.full(100, 3.0), np.random.default_rng(8).normal(size=100)]
    )
    y = (k >= 50).astype(int)
    est = ConditionalInferenceTreeClassifier(random_state=0, **settings).fit(X, y)
    assert est.tree_.feature[0] == 0 and est.score(X, y) == 1.0
    rec = est.node_records_[0]
    assert 1 not in rec["candidates"]  # the constant column is not tested
    assert rec["statistics"][rec["features"].index(0)] > 0
    assert 5 + 49e-7 < est.tree_.threshold[0] < 5 + 50e-7
    # the regressor too (its permutation selector, |Pearson r|, already was relative)
    reg = ConditionalInferenceTreeRegressor(random_state=0).fit(X, y * 1.0)
    assert reg.tree_.feature[0] == 0


@pytest.mark.parametrize("target", ["y = x0", "noisy"])
def test_wide_regression_splits_on_the_signal(target):
    """50 rows x 2,000 features (issue 14's case: the paper's permutation tests at
    alpha' = 2.5e-5 took 58-91 s here; the timing is in bench_cit_scale.py): the default
    tree tests every feature at every node and splits on x0."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(50, 2000))
    y = X[:, 0] if target == "y = x0" else X[:, 0] + 0.3 * rng.normal(size=50)
    est = ConditionalInferenceTreeRegressor(random_state=0).fit(X, y)
    rec = est.node_records_[0]
    assert len(rec["features"]) == 2000
    assert est.tree_.feature[0] == 0 and int(np.argmin(rec["p_values"])) == 0
    assert np.argmax(est.feature_importances_) == 0
