"""Partition Tree split scans against brute-force gain computations."""

import itertools

import numpy as np
import pytest

from engine.partition.scans import (
    category_counts,
    scan_categorical,
    scan_continuous,
    sorted_with_flags,
)


def _loss(nxy, nx, mu, n):
    return 0.0 if nxy == 0 else -(nxy / n) * np.log(nxy / (nx * mu))


def test_continuous_x_scan_matches_brute_force():
    rng = np.random.RandomState(0)
    n = 40
    x = np.round(rng.rand(n) * 10).astype(np.float64)  # ties
    rows_x = np.arange(n, dtype=np.int64)
    in_xy = (rng.rand(n) < 0.6).astype(np.float64)
    nxy, nx = in_xy.sum(), float(n)
    vs, fs = sorted_with_flags(x, rows_x, in_xy)
    out = np.empty(n)
    best, thr, _ = scan_continuous(vs, fs, nxy, nx, 0.0, 2.0, False, 100.0, 1.0, 1.0, 1.0, 0.0, out)
    brute = {}
    u = np.unique(x)
    for t in (u[:-1] + u[1:]) / 2:
        left = x <= t
        lxy, lx = in_xy[left].sum(), left.sum()
        if lxy < 1 or nxy - lxy < 1:
            continue
        g = (
            _loss(nxy, nx, 2.0, 100)
            - _loss(lxy, lx, 2.0, 100)
            - _loss(nxy - lxy, nx - lx, 2.0, 100)
        )
        brute[t] = g
        assert g >= -1e-12
    got = {0.5 * (vs[i] + vs[i + 1]): out[i] for i in range(n - 1) if np.isfinite(out[i])}
    assert set(got) == set(brute)
    for t, g in brute.items():
        assert abs(got[t] - max(g, 0.0)) < 1e-12
    assert abs(best - max(brute.values())) < 1e-12
    assert brute[thr] == max(brute.values())


def test_continuous_y_scan_matches_brute_force():
    rng = np.random.RandomState(1)
    n = 30
    y = rng.randn(n)
    in_xy = (rng.rand(n) < 0.5).astype(np.float64)
    nxy, nx = in_xy.sum(), 17.0
    lo, hi = y.min() - 0.3, y.max() + 0.3
    vs, fs = sorted_with_flags(y, np.arange(n, dtype=np.int64), in_xy)
    out = np.empty(n)
    best, thr, _ = scan_continuous(vs, fs, nxy, nx, lo, hi, True, 50.0, 0.0, 1.0, 1.0, 0.0, out)
    gains = []
    for i in range(n - 1):
        t = 0.5 * (vs[i] + vs[i + 1])
        lxy = in_xy[y <= t].sum()
        g = (
            _loss(nxy, nx, hi - lo, 50)
            - _loss(lxy, nx, t - lo, 50)
            - _loss(nxy - lxy, nx, hi - t, 50)
        )
        assert g >= -1e-12
        assert abs(out[i] - max(g, 0.0)) < 1e-12
        gains.append(g)
    assert abs(best - max(gains)) < 1e-12
    assert np.all(out[: n - 1] >= 0)


def test_root_x_gains_are_exactly_zero():
    rng = np.random.RandomState(2)
    x = rng.rand(50)
    in_xy = np.ones(50)
    vs, fs = sorted_with_flags(x, np.arange(50, dtype=np.int64), in_xy)
    out = np.empty(50)
    best, _, _ = scan_continuous(vs, fs, 50.0, 50.0, 0.0, 1.0, False, 50.0, 1.0, 1.0, 1.0, 0.0, out)
    assert best == 0.0
    assert np.all(out[:49] == 0.0)


def _brute_subsets(a, b, is_y, nxy, nx, mu, n):
    cats = [c for c in range(len(a)) if b[c] > 0 or is_y]
    best = -1.0
    parent = _loss(nxy, nx, mu, n)
    for r in range(1, len(cats)):
        for sub in itertools.combinations(cats, r):
            la, lb = a[list(sub)].sum(), b[list(sub)].sum()
            if la < 1 or nxy - la < 1:
                continue
            if is_y:
                g = parent - _loss(la, nx, lb, n) - _loss(nxy - la, nx, mu - lb, n)
            else:
                g = parent - _loss(la, lb, mu, n) - _loss(nxy - la, nx - lb, mu, n)
            best = max(best, g)
    return best


@pytest.mark.slow
def test_categorical_prefix_scan_equals_exhaustive_enumeration():
    rng = np.random.RandomState(3)
    for trial in range(60):
        k = 2 + trial % 7  # 2..8 categories
        n = 60
        codes = rng.randint(0, k, n).astype(np.float64)
        in_xy = rng.rand(n) < rng.rand()
        rows_x = np.arange(n, dtype=np.int64)
        rows_xy = rows_x[in_xy]
        a, b = category_counts(codes, rows_xy, rows_x, k)
        order = np.empty(k, dtype=np.int64)
        nxy, nx = float(len(rows_xy)), float(n)
        # X split
        present = b > 0
        g, _ = scan_categorical(a, b, present, False, nxy, nx, 1.0, 100.0, 1.0, 1.0, order, b, 0.0)
        ref = _brute_subsets(a, b, False, nxy, nx, 1.0, 100.0)
        assert abs(max(g, -1.0) - ref) < 1e-12, (trial, g, ref)
        # Y split (categorical target): b = 1, measure = number of categories
        ones = np.ones(k)
        g, nl = scan_categorical(
            a,
            ones,
            np.ones(k, dtype=np.bool_),
            True,
            nxy,
            nx,
            float(k),
            100.0,
            1.0,
            1.0,
            order,
            ones,
            0.0,
        )
        ref = _brute_subsets(a, ones, True, nxy, nx, float(k), 100.0)
        assert abs(max(g, -1.0) - ref) < 1e-12, (trial, g, ref)


def test_fused_x_scan_equals_per_feature_scans():
    """best_x_continuous (one call per node) = the best of scan_continuous per feature, with
    the first feature winning exact ties (a duplicated column)."""
    from engine.partition.scans import best_x_continuous, best_x_presorted, presort_rows

    rng = np.random.RandomState(3)
    n = 60
    X = np.round(rng.rand(n, 4) * 6)
    X[:, 3] = X[:, 1]  # exact tie between features 1 and 3
    X = np.ascontiguousarray(X)
    for trial in range(20):
        rows_x = np.sort(rng.choice(n, 40, replace=False)).astype(np.int64)
        in_xy = np.zeros(n)
        in_xy[rows_x[rng.rand(40) < 0.5]] = 1.0
        nxy, nx = in_xy[rows_x].sum(), float(len(rows_x))
        feats = np.array([0, 1, 2, 3], dtype=np.int64)
        min_xy = float(trial % 3)
        g, f, t, _ = best_x_continuous(X, rows_x, in_xy, feats, nxy, nx, 100.0, min_xy, 2.0)
        ref = (-1.0, -1, np.nan)
        for j in feats:
            vs, fs = sorted_with_flags(X[:, j].copy(), rows_x, in_xy)
            gj, tj, _ = scan_continuous(
                vs, fs, nxy, nx, 0.0, 1.0, False, 100.0, min_xy, 2.0, 1.0, 0.0, np.empty(len(vs))
            )
            if gj > 0 and gj > ref[0]:
                ref = (gj, j, tj)
        assert (g, f) == (ref[0], ref[1]) and (np.isnan(t) and np.isnan(ref[2]) or t == ref[2])
        assert f != 3  # the duplicate of feature 1 never wins
        # presorted rows (what the growth keeps per node) give the same answer
        order = presort_rows(X, rows_x, feats)
        sub = np.array([3, 0, 2], dtype=np.int64)  # a feature subset, as a forest searches
        gp, fp, tp, side_p = best_x_presorted(
            X, order, sub, sub, in_xy, nxy, nx, 100.0, min_xy, 2.0
        )
        gs, fs_, ts, side_s = best_x_continuous(X, rows_x, in_xy, sub, nxy, nx, 100.0, min_xy, 2.0)
        assert (gp, fp, side_p) == (gs, fs_, side_s) and (np.isnan(tp) and np.isnan(ts) or tp == ts)
        assert np.all(np.diff(X[order, np.arange(4)[:, None]], axis=1) >= 0)
