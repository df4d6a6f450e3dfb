"""The depth-2 solver passes its threshold down to the depth-1 solves of a shape's children
(the child's *cap*, MurTree's upper bound passed down): a child solve may stop at a lower
bound of at least its cap instead of its optimum.  Checked against an independent brute
force (scikit-learn's univariate CART candidates, every shape enumerated in Python):

* a capped depth-1 solve returns its exact optimum or a lower bound between the cap and
  the optimum, and on some cases that bound equals the optimum (so a bound raised by any
  amount fails here);
* the depth-2 scan with a budget, chunked as the search runs it, ends at a lower bound no
  larger than the optimum, finds the optimum when the budget is above it and proves it
  (lower bound equal to the optimum) without a budget.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.data import load_bundled, make_dataset
from engine.literati import _depth2_kernels as depth2_kernels
from engine.literati import _kernels as kernels
from tests.test_literati import brute_force


def _bundled(name):
    df, _, entry = load_bundled(name)
    ds = make_dataset(df, entry["target"])
    X = np.ascontiguousarray(np.asarray(ds.X, dtype=np.float64))
    return X, np.ascontiguousarray(ds.y, dtype=np.int64)


@pytest.mark.parametrize("name", ["breast_cancer", "wine"])
def test_capped_depth1_solve_is_exact_or_a_lower_bound_at_least_the_cap(name):
    X, y = _bundled(name)
    XT = np.ascontiguousarray(X.T)
    C = int(y.max()) + 1
    p = X.shape[1]
    rng = np.random.default_rng(11)
    tight = stopped = 0
    for trial in range(24):
        size = int(rng.integers(25, 90))
        idx = np.sort(rng.choice(len(y), size, replace=False)).astype(np.int64)
        cols = np.sort(rng.choice(p, 5, replace=False))
        Xs = np.ascontiguousarray(X[np.ix_(idx, cols)])
        XsT = np.ascontiguousarray(Xs.T)
        ys = y[idx]
        k_max = 1 + trial % 2
        leaves = 4 if trial % 3 else 3
        lam = alpha = float(rng.uniform(0.3, 1.5))
        exact = brute_force(Xs, ys, 1, k_max, lam, alpha, leaves=[leaves])
        o = kernels.sort_orders(XsT, np.arange(size, dtype=np.int64))
        for cap in (exact - 2.0, exact - 0.5, exact - 1e-3, exact, exact + 1.0, np.inf):
            ws = kernels._d1_workspace(size, C, leaves, k_max, 5)
            bps = np.empty(k_max)
            value, _, _, is_exact = kernels._d1_core(
                XsT, ys, o, C, leaves, k_max, lam, alpha, ws, bps, float(cap)
            )
            if is_exact:
                assert value == pytest.approx(exact, abs=1e-9), (trial, cap)
            else:
                stopped += 1
                assert cap - 1e-9 <= value <= exact + 1e-9, (trial, cap, value, exact)
                tight += abs(value - exact) < 1e-9
        assert XT.shape[0] == p
    assert stopped > 0  # the cap did stop solves
    assert tight > 0  # and some stopped exactly at the optimum: no room to raise the bound


def _scan(XT, y, o, C, leaves, k_max, lam, alpha, budget, chunk, par_min):
    """The search's use of ``solve_depth2`` (AOStarSearch._solve_d2): chunks of ``chunk``
    depth-1 solves, the lower bound ``min(best, lb_skip, lb_rest)`` kept monotone."""
    feats, ks, bps = np.full(3, -1, np.int64), np.zeros(3, np.int64), np.zeros((3, k_max))
    best = float(o.shape[1] - np.bincount(y[o[0]], minlength=C).max())
    lb_skip, start, lb = np.inf, 0, 0.0
    while True:
        best, lb_skip, nxt, lb_rest, n_shapes, _ = depth2_kernels.solve_depth2(
            XT,
            y,
            o,
            C,
            leaves[0],
            leaves[1],
            k_max,
            lam,
            alpha,
            budget,
            start,
            chunk,
            best,
            lb_skip,
            feats,
            ks,
            bps,
            par_min,
        )
        lb = max(lb, min(best, lb_skip, lb_rest))
        if nxt >= n_shapes:
            return best, lb
        start = nxt


@pytest.mark.parametrize("classes", [2, 3])
def test_depth2_scan_with_capped_children_matches_brute_force(classes):
    rng = np.random.default_rng(5 + classes)
    for trial in range(10):
        n, p = int(rng.integers(24, 48)), 4
        X = rng.integers(0, 6, size=(n, p)).astype(np.float64)
        X[:, -1] = np.round(rng.normal(size=n), 2)
        # a target that trees can partly explain, so the children's solves matter
        y = ((X[:, 0] > 2).astype(int) + (X[:, 1] > 3) + rng.integers(0, 2, size=n)) % classes
        y = np.ascontiguousarray(y, dtype=np.int64)
        X = np.ascontiguousarray(X)
        XT = np.ascontiguousarray(X.T)
        k_max = 1 + trial % 2
        leaves = (4, 4) if trial % 2 else (5, 3)
        lam = alpha = float(rng.uniform(0.3, 1.2))
        opt = brute_force(X, y, 2, k_max, lam, alpha, leaves=list(leaves))
        o = kernels.sort_orders(XT, np.arange(n, dtype=np.int64))
        for budget in (opt - 1.0, opt - 1e-3, opt + 1e-3, opt + 2.0, np.inf):
            for chunk, par_min in ((3, 10**12), (10**9, 0)):
                best, lb = _scan(
                    XT, y, o, classes, leaves, k_max, lam, alpha, budget, chunk, par_min
                )
                assert lb <= opt + 1e-9, (trial, budget, lb, opt)
                assert best >= opt - 1e-9, (trial, budget, best, opt)
                if budget > opt:
                    assert best == pytest.approx(opt, abs=1e-9), (trial, budget)
                if budget == np.inf:
                    assert lb == pytest.approx(opt, abs=1e-9), (trial, lb, opt)
