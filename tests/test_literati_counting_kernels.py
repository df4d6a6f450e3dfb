"""Literati's depth-3 counting kernel
(``engine/literati/_counting_kernels.py::solve_depth3_counting``) called directly and
through the search: its value and the tree it returns, re-scored by routing the rows
(independently of the engine), against a brute force over the same candidates, and the
search with the kernel against the search without it (three-level states searched as
graph nodes over depth-2 children)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.literati import _counting_kernels as counting_kernels
from engine.literati import _kernels as kernels
from engine.literati import expansion
from tests.test_literati import _route, tree_objective
from tests.test_literati_root_scope import _data, _engine_candidates, _root, brute_force_root

#: (split penalty lambda, breakpoint penalty alpha) pairs of the randomized cases.
PENALTIES = [(0.1, 0.3), (0.5, 0.5), (0.25, 0.0), (1.0, 0.5), (0.05, 0.15), (0.3, 0.2)]


def _tied_case(seed):
    """A small random case with many ties in the feature values (a few integer levels per
    feature): ``(X, y, K_max, lambda, alpha, candidate leaves)``, 2 or 3 classes."""
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(8, 21))
    p = int(rng.integers(2, 4))
    C = 2 + seed % 2
    levels = int(rng.integers(3, 7))
    X = rng.integers(0, levels, size=(n, p)).astype(np.float64)
    signal = (X[:, 0] > levels / 2).astype(int) + (X[:, 1] < 2).astype(int)
    y = (signal + (rng.random(n) < 0.3)) % C
    y[:C] = np.arange(C)  # every class present
    lam, alpha = PENALTIES[seed % len(PENALTIES)]
    k_max = 1 + (seed // 2) % 2
    leaves = int(rng.integers(3, 7))
    return np.ascontiguousarray(X), y.astype(np.int64), k_max, lam, alpha, leaves


def _kernel(X, y, k_max, lam, alpha, leaves, start):
    """Call the kernel on all rows for every root feature: ``(results, res_bps, off, vals)``
    over the root's candidates (as the search computes them)."""
    XT = np.ascontiguousarray(X.T)
    n, p = X.shape
    C = int(y.max()) + 1
    rows = np.arange(n, dtype=np.int64)
    orders = kernels.sort_orders(XT, rows)
    off, vals, _ = kernels.state_candidates(XT, y, orders, C, leaves)
    bins = counting_kernels.bin_rows(XT, off, vals)
    results = np.full((p, counting_kernels.D3_RESULT), np.inf)
    res_bps = np.zeros((p, 7, k_max), dtype=np.int64)
    counting_kernels.solve_depth3_counting(
        bins,
        y,
        rows,
        off,
        C,
        k_max,
        lam,
        alpha,
        float(start),
        np.arange(p, dtype=np.int64),
        results,
        res_bps,
        np.full((p, counting_kernels.floor_width(off)), -np.inf),
        np.zeros(1, dtype=np.int64),
    )
    return results, res_bps, off, vals


def _heap_tree_objective(row, bp_idx, off, vals, X, y, lam, alpha):
    """Err + sum(lambda + alpha K) of the heap-ordered depth-3 tree of one kernel result
    row (node ``i``: feature ``row[1 + 2 i]``, -1 = leaf; ``K = row[2 + 2 i]``; breakpoint
    candidate indices ``bp_idx[i, :K]``), routing the rows with ``_route``."""

    def score(i, ids):
        f = int(row[1 + 2 * i]) if i < 7 else -1
        if f < 0:
            if ids.size == 0:
                return 0.0
            return float(ids.size - np.bincount(y[ids]).max())
        k = int(row[2 + 2 * i])
        u = vals[off[f] + bp_idx[i, :k]]
        left = _route(X[ids, f], u)
        return lam + alpha * k + score(2 * i + 1, ids[left]) + score(2 * i + 2, ids[~left])

    return score(0, np.arange(len(y)))


def _check_rows(results, res_bps, off, vals, X, y, lam, alpha, optimum, start):
    """Every reported row is a tree scoring its value, below ``start`` and not below the
    optimum; returns the best reported value (``inf`` when none)."""
    for t in range(results.shape[0]):
        value = results[t, 0]
        if not np.isfinite(value):
            continue
        rescored = _heap_tree_objective(results[t], res_bps[t], off, vals, X, y, lam, alpha)
        assert rescored == pytest.approx(value, abs=1e-9), (t, results[t])
        assert value < start
        assert value >= optimum - 1e-9
    return float(results[:, 0].min())


def test_depth3_kernel_seed_53_returns_the_tree_of_its_value():
    """The case that switched the kernel off: a child that found nothing below its budget
    returned the budget, and the budget sums rounded below the incumbent, so a shape with
    two leaf children (objective 8.7) was recorded with value 2.9 (the optimum)."""
    X, y = _data(53, 22, 2, 3)
    y = y.astype(np.int64)
    optimum = brute_force_root(X, y, 3, 2, 0.1, 0.3, 5, _engine_candidates(X, y, 5))
    assert optimum == pytest.approx(2.9)
    results, res_bps, off, vals = _kernel(X, y, 2, 0.1, 0.3, 5, np.inf)
    best = _check_rows(results, res_bps, off, vals, X, y, 0.1, 0.3, optimum, np.inf)
    assert best == pytest.approx(optimum)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_depth3_kernel_equals_brute_force_on_random_tied_cases(block):
    """60 random cases (2-3 classes, tied feature values, K_max 1 and 2, six penalty
    pairs), each with several incoming budgets: no budget, just above the optimum (the
    optimum must be found), just below it and at the leaf (nothing below may be reported),
    and half-way.  Every reported row is a tree that scores its value."""
    for seed in range(15 * block, 15 * block + 15):
        X, y, k_max, lam, alpha, leaves = _tied_case(seed)
        leaf = float(len(y) - np.bincount(y).max())
        cands = _engine_candidates(X, y, leaves)
        optimum = brute_force_root(X, y, 3, k_max, lam, alpha, leaves, cands)
        for start in (np.inf, optimum + 1e-6, optimum - 1e-6, (optimum + leaf) / 2, leaf):
            results, res_bps, off, vals = _kernel(X, y, k_max, lam, alpha, leaves, start)
            best = _check_rows(results, res_bps, off, vals, X, y, lam, alpha, optimum, start)
            # the kernel lists trees whose root splits (the leaf is the caller's incumbent):
            # below the budget, the better of the leaf and its best row is the optimum;
            # otherwise no row may be reported (rows are checked below the budget and not
            # below the optimum above)
            if optimum < start - 1e-6:
                assert min(best, leaf) == pytest.approx(optimum), (seed, start)


def _fit(X, y, k_max, lam, alpha, leaves):
    return _root(
        max_depth=3,
        max_breakpoints=k_max,
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=leaves,
    ).fit(X, y)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(3))
def test_search_with_the_depth3_kernel_equals_brute_force_and_the_graph_search(monkeypatch, block):
    """30 random tied cases through the estimator (``candidate_scope='root'``, depth 3):
    with the kernel on and off (three-level states searched as graph nodes over depth-2
    children) the proven objective equals the brute force, and the returned tree re-scored
    by routing the rows equals it too."""
    assert expansion.D3_COUNTING, "the depth-3 counting kernel is expected to be on"
    for seed in range(100 + 10 * block, 110 + 10 * block):
        X, y, k_max, lam, alpha, leaves = _tied_case(seed)
        cands = _engine_candidates(X, y, leaves)
        optimum = brute_force_root(X, y, 3, k_max, lam, alpha, leaves, cands)
        with monkeypatch.context() as m:
            m.setattr(expansion, "D3_COUNTING", False)
            graph = _fit(X, y, k_max, lam, alpha, leaves)
        kernel = _fit(X, y, k_max, lam, alpha, leaves)
        for est in (kernel, graph):
            assert est.proven_optimal_, seed
            assert est.objective_ == pytest.approx(optimum), seed
            assert est.lower_bound_ == pytest.approx(optimum), seed
            assert tree_objective(est, X, y)[0] == pytest.approx(optimum), seed


def _kernel_with_floors(X, y, rows, k_max, lam, alpha, leaves, start, floors=None):
    """The kernel on the rows ``rows`` (root candidates of all rows) with the subset
    bounds ``floors`` (fresh when None; raised in place): ``(results, res_bps, floors,
    bins, off, vals)``."""
    XT = np.ascontiguousarray(X.T)
    n, p = X.shape
    C = int(y.max()) + 1
    orders = kernels.sort_orders(XT, np.arange(n, dtype=np.int64))
    off, vals, _ = kernels.state_candidates(XT, y, orders, C, leaves)
    bins = counting_kernels.bin_rows(XT, off, vals)
    if floors is None:
        floors = np.full((p, counting_kernels.floor_width(off)), -np.inf)
    results = np.full((p, counting_kernels.D3_RESULT), np.inf)
    res_bps = np.zeros((p, 7, k_max), dtype=np.int64)
    counting_kernels.solve_depth3_counting(
        bins,
        y,
        np.ascontiguousarray(rows, dtype=np.int64),
        off,
        C,
        k_max,
        lam,
        alpha,
        float(start),
        np.arange(p, dtype=np.int64),
        results,
        res_bps,
        floors,
        np.zeros(1, dtype=np.int64),
    )
    return results, res_bps, floors, bins, off, vals


@pytest.mark.slow
@pytest.mark.parametrize("block", range(2))
def test_depth3_kernel_floors_are_lower_bounds_of_the_depth2_children(block):
    """Every subset bound the kernel records (``floors[j, M]``: no depth-2 tree of the rows
    with feature ``j`` in the bins ``M`` is below it) is at most that row set's depth-2
    optimum by a brute force over the same candidates, for calls without a budget and
    with one just below the depth-3 optimum (where children end at their budgets)."""
    recorded = 0
    for seed in range(10 * block, 10 * block + 10):
        X, y, k_max, lam, alpha, leaves = _tied_case(seed)
        cands = _engine_candidates(X, y, leaves)
        optimum = brute_force_root(X, y, 3, k_max, lam, alpha, leaves, cands)
        rows = np.arange(len(y))
        for start in (np.inf, optimum - 1e-6):
            _, _, floors, bins, off, _ = _kernel_with_floors(
                X, y, rows, k_max, lam, alpha, leaves, start
            )
            for j in range(X.shape[1]):
                n_bins = int(off[j + 1] - off[j]) + 1
                for mask in range(1 << n_bins):
                    floor = floors[j, mask]
                    if not np.isfinite(floor):
                        continue
                    inside = ((mask >> bins[:, j].astype(np.int64)) & 1).astype(bool)
                    if not inside.any():
                        assert floor <= 1e-9, (seed, j, mask)
                        continue
                    sub = brute_force_root(
                        X[inside], y[inside], 2, k_max, lam, alpha, leaves, cands
                    )
                    assert sub >= floor - 1e-9, (seed, start, j, mask, sub, floor)
                    recorded += 1
    assert recorded > 50  # the bounds were recorded, not only left at -inf


@pytest.mark.slow
def test_depth3_kernel_with_floors_of_a_subset_equals_brute_force():
    """The floors of a call on a subset of the rows (those with feature 0 in its lower
    bins), handed to a call on all rows as the search hands a sibling's over: that call
    still finds the optimum when it is below the budget, reports only trees scoring their
    value (not below the optimum, below the budget), and a third call with the floors it
    left reports the same best value."""
    for seed in range(20, 35):
        X, y, k_max, lam, alpha, leaves = _tied_case(seed)
        cands = _engine_candidates(X, y, leaves)
        optimum = brute_force_root(X, y, 3, k_max, lam, alpha, leaves, cands)
        leaf = float(len(y) - np.bincount(y).max())
        everything = np.arange(len(y))
        _, _, _, bins, off, _ = _kernel_with_floors(
            X, y, everything, k_max, lam, alpha, leaves, np.inf
        )
        subset = everything[bins[:, 0] <= (off[1] - off[0]) // 2]
        for start in (np.inf, optimum + 1e-6, optimum - 1e-6, (optimum + leaf) / 2):
            floors = _kernel_with_floors(X, y, subset, k_max, lam, alpha, leaves, start)[2]
            results, res_bps, floors, _, off, vals = _kernel_with_floors(
                X, y, everything, k_max, lam, alpha, leaves, start, floors
            )
            best = _check_rows(results, res_bps, off, vals, X, y, lam, alpha, optimum, start)
            if optimum < start - 1e-6:
                assert min(best, leaf) == pytest.approx(optimum), (seed, start)
            again = _kernel_with_floors(X, y, everything, k_max, lam, alpha, leaves, start, floors)
            assert float(again[0][:, 0].min()) == pytest.approx(best), (seed, start)


def _child_inputs(seed):
    """A random case and the triple histogram of its root feature 0 (as the depth-3
    kernel builds it): ``(T, off, C, n_bins, na, cls)``."""
    rng = np.random.default_rng(5000 + seed)
    n = int(rng.integers(30, 80))
    p = int(rng.integers(3, 6))
    C = 2 + seed % 2
    X = rng.integers(0, int(rng.integers(4, 9)), size=(n, p)).astype(np.float64)
    y = ((X[:, 0] > 2).astype(int) + (X[:, 1] < 3) + (rng.random(n) < 0.25)) % C
    y = y.astype(np.int64)
    XT = np.ascontiguousarray(X.T)
    rows = np.arange(n, dtype=np.int64)
    off, vals, _ = kernels.state_candidates(XT, y, kernels.sort_orders(XT, rows), C, 6)
    bins = counting_kernels.bin_rows(XT, off, vals)
    n_bins = counting_kernels._max_bins(off)
    na = int(off[1] - off[0]) + 1
    order = rows[np.argsort(bins[:, 0], kind="stable")]
    first = np.zeros(na + 1, dtype=np.int64)
    first[1:] = np.cumsum(np.bincount(bins[:, 0], minlength=na))
    stop = np.zeros(1, dtype=np.int64)
    T = counting_kernels._triple_histogram(y, order, first, bins, na, n_bins, C, stop)
    return T, off, C, n_bins, na


@pytest.mark.parametrize("seed", range(6))
def test_depth2_child_precheck_never_prunes_a_shape_the_scan_would_keep(seed):
    """The depth-2 children's pre-check (the bounds of :func:`_scan_shapes` computed from
    the triple histogram before a child's pair histogram is built): its cell errors equal
    those of the pair histogram, and whenever it says every shape on a feature reaches a
    budget (with the class-count bounds alone or with the cell errors), the exact scan of
    that feature's shapes (with depth-1 children) finds nothing below that budget.  The
    budgets sweep around each feature's optimum, so both answers occur."""
    T, off, C, n_bins, na = _child_inputs(seed)
    p = T.shape[1]
    checked = pruned = 0
    for k_max in (1, 2):
        for lam, alpha in ((0.5, 0.5), (0.25, 0.0), (1.0, 0.3)):
            # children of root shapes on feature 0: prefixes, suffixes, middles, outers
            children = []
            for a in range(1, na):
                children.append([(0, a)])
                children.append([(a, na)])
                for b in range(a + 1, na):
                    children.append([(a, b)])
                    children.append([(0, a), (b, na)])
            for segments in children:
                segs = np.zeros((k_max + 2, 2), dtype=np.int64)
                segs[: len(segments)] = segments
                n_seg = len(segments)
                P = np.zeros((n_bins + 1, p, n_bins, C), dtype=np.int32)
                for f in range(p):
                    nc = int(off[f + 1] - off[f])
                    if nc == 0:
                        continue
                    counting_kernels._child_pairs(T, segs, n_seg, off, C, f, P)
                    # the cell errors W[a, g] from the pair histogram, as _scan_shapes has them
                    cells = np.diff(P[: nc + 2], axis=0)  # (bins of f, p, B, C)
                    W = (cells.sum(axis=3) - cells.max(axis=3)).sum(axis=2)
                    tb = np.zeros((n_bins, C), dtype=np.int64)
                    Wp = np.zeros((n_bins + 1, p), dtype=np.int64)
                    counting_kernels._child_totals(T, segs, n_seg, off, C, f, tb)
                    counting_kernels._child_cells(T, segs, n_seg, off, C, f, tb, Wp)
                    np.testing.assert_array_equal(np.diff(Wp[: nc + 2], axis=0), W)
                    np.testing.assert_array_equal(tb[: nc + 1], cells[:, f].sum(axis=1))
                    ws = counting_kernels._work_arrays(p, n_bins, C, k_max)
                    r6 = np.full(6, np.inf)
                    rbp = np.zeros((3, k_max), dtype=np.int64)
                    exact = counting_kernels._scan_shapes(
                        P, f, off, C, k_max, lam, alpha, np.inf, r6, rbp, *ws
                    )
                    for budget in (exact - 0.5, exact - 1e-9, exact + 1e-9, exact + 0.5, 1e9):
                        work = (
                            np.zeros(k_max, dtype=np.int64),
                            np.zeros((k_max + 1, 2), dtype=np.int64),
                            np.zeros((k_max + 1, 2), dtype=np.int64),
                        )
                        for use_cells in (False, True):
                            says = counting_kernels._shapes_pruned(
                                tb, Wp, nc, C, k_max, lam, alpha, budget, use_cells, *work
                            )
                            checked += 1
                            if says:
                                pruned += 1
                                assert exact >= budget - counting_kernels._TIE, (
                                    seed,
                                    segments,
                                    f,
                                    budget,
                                    exact,
                                )
    assert pruned > 20 and checked - pruned > 20  # both answers were exercised
