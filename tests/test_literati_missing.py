"""Literati with missing values (issue 14 point 4): the side of a feature's missing values
is part of each node's shape, so the proven optimum must equal a brute force over every
tree of depth <= 2 whose nodes choose their breakpoints on the observed values **and** the
side of the missing rows, at the objective of engine.literati.estimator's docstring:
``lambda + alpha * (K + extra)`` per split, where ``extra = 1`` only when the missing rows
join a side that neither the lowest nor the highest observed interval has (written here
from that definition, without the engine's encoding)."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from engine.literati import GreedyShapeTreeClassifier, LiteratiClassifier
from engine.literati.estimator import MISSING_VALUES_CAPTION, encode_missing


def _observed_route(x, u):
    """Left iff an even number of breakpoints lies strictly below x (observed x)."""
    return np.searchsorted(np.asarray(u, float), x, side="left") % 2 == 0


def brute_force_missing(X, y, depth, k_max, lam, alpha):
    """Exact optimum over trees of depth <= ``depth``: at each node every feature, every
    ``K``-subset ``u`` of the midpoints of the node's observed values and both sides
    ``s`` of the node's missing rows, priced ``lam + alpha * (K + extra)`` with
    ``1 <= K + extra <= k_max``."""
    C = int(y.max()) + 1

    @functools.cache
    def f(idx, d):
        ids = np.array(idx, dtype=np.int64)
        cnt = np.bincount(y[ids], minlength=C)
        best = float(len(ids) - cnt.max())
        if d == 0 or best == 0:
            return best
        for j in range(X.shape[1]):
            xs = X[ids, j]
            nan = np.isnan(xs)
            v = np.unique(xs[~nan])
            mids = v[:-1] / 2 + v[1:] / 2
            for k in range(0, min(k_max, len(mids)) + 1):
                lowest = True  # the lowest observed interval goes left
                highest = k % 2 == 0
                for u in itertools.combinations(mids, k):
                    left_obs = _observed_route(xs, u)
                    for side in (True, False):
                        extra = 0 if side in (lowest, highest) else 1
                        if not 1 <= k + extra <= k_max:
                            continue
                        cost = lam + alpha * (k + extra)
                        if cost >= best:
                            continue
                        left = np.where(nan, side, left_obs)
                        a = cost + f(tuple(ids[left]), d - 1)
                        if a >= best:
                            continue
                        best = min(best, a + f(tuple(ids[~left]), d - 1))
        return best

    return f(tuple(range(len(y))), depth)


def routed_objective(est, X, y):
    """Err + sum(lambda + alpha K) of the fitted tree, every training row routed by the
    breakpoints and, when missing, by ``missing_go_to_left``."""
    t = est.tree_
    leaf = np.zeros(len(y), dtype=int)
    for i in range(len(y)):
        node = 0
        while t.children_left[node] >= 0:
            v = X[i, t.feature[node]]
            if np.isnan(v):
                go = bool(t.missing_go_to_left[node])
            else:
                go = _observed_route(v, t.bp_values[t.bp_offsets[node] : t.bp_offsets[node + 1]])
            node = t.children_left[node] if go else t.children_right[node]
        leaf[i] = node
    err = 0
    for v in np.unique(leaf):
        cnt = np.bincount(y[leaf == v])
        err += cnt.sum() - cnt.max()
    internal = t.children_left >= 0
    k = np.diff(t.bp_offsets)[internal]
    objective = err + est.split_penalty_ * internal.sum() + est.breakpoint_penalty_ * k.sum()
    return objective, leaf


def _data(seed, n, p, C, fraction=0.25, levels=4):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, levels, size=(n, p)).astype(np.float64)
    y = rng.integers(0, C, size=n)
    # missing values that carry information in one column, at random in the others
    X[(y == 0) & (rng.random(n) < 0.5), 0] = np.nan
    X[rng.random((n, p)) < fraction] = np.nan
    return np.ascontiguousarray(X), y


_CASES = [
    (0, 10, 2, 2, 1, 1, 0.5, 0.5),
    (1, 12, 2, 2, 1, 2, 0.3, 0.3),
    (2, 11, 2, 2, 2, 1, 0.3, 0.3),
    (3, 10, 2, 3, 2, 2, 0.5, 0.25),
    (4, 12, 2, 2, 2, 2, 0.1, 0.4),
    (5, 9, 3, 2, 2, 2, 0.25, 0.25),
    (6, 12, 2, 2, 2, 2, 1.0, 0.0),
    (7, 10, 3, 3, 2, 1, 0.05, 0.05),
]


@pytest.mark.slow  # brute force: 1-10 s each
@pytest.mark.parametrize("seed,n,p,C,D,k,lam,alpha", _CASES)
def test_proven_objective_equals_brute_force_with_missing_values(seed, n, p, C, D, k, lam, alpha):
    X, y = _data(seed, n, p, C)
    assert np.isnan(X).any(axis=0).sum() >= 2
    est = LiteratiClassifier(
        max_depth=D,
        max_breakpoints=k,
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=None,
        time_limit=60,
    ).fit(X, y)
    assert est.proven_optimal_
    assert est.objective_ == pytest.approx(brute_force_missing(X, y, D, k, lam, alpha), abs=1e-9)
    objective, leaf = routed_objective(est, X, y)
    assert objective == pytest.approx(est.objective_, abs=1e-9)
    assert np.array_equal(est.apply(X), leaf)


def test_missing_side_is_chosen_where_it_pays():
    """Missing values that mark the class: the best depth-1 tree splits on them (one
    breakpoint between missing and observed) and sends them to their class's leaf."""
    rng = np.random.default_rng(3)
    n = 40
    y = np.r_[np.zeros(20, int), np.ones(20, int)]
    X = rng.normal(size=(n, 2))
    X[:20, 1] = np.nan  # class 0 = missing x1
    est = LiteratiClassifier(
        max_depth=1,
        max_breakpoints=1,
        candidate_leaves=None,
        split_penalty=0.5,
        breakpoint_penalty=0.5,
        time_limit=30,
    ).fit(X, y)
    assert est.proven_optimal_ and est.tree_.feature[0] == 1
    assert est.objective_breakdown_["errors"] == 0
    assert est.score(X, y) == 1.0
    Xq = np.array([[0.0, np.nan], [0.0, 1.0]])
    assert est.predict(Xq).tolist() == [0, 1]


def test_encoding_and_nan_free_path_unchanged():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    same, source, end = encode_missing(X)
    assert same is X and source.tolist() == [0, 1, 2] and not end.any()
    X[[1, 5], 2] = np.nan
    enc, source, end = encode_missing(X)
    assert enc.shape == (30, 4) and source.tolist() == [0, 1, 2, 2]
    assert end.tolist() == [0, 0, 1, 2]
    observed = X[~np.isnan(X[:, 2]), 2]
    assert (enc[[1, 5], 2] < observed.min()).all() and (enc[[1, 5], 3] > observed.max()).all()
    assert np.array_equal(np.delete(enc[:, 2], [1, 5]), observed)
    # a NaN-free fit does not change: trees equal with and without a NaN-only extra column
    y = (X[:, 0] > 0).astype(int)
    clean = X[:, :2]
    a = LiteratiClassifier(max_depth=2, time_limit=30).fit(clean, y)
    assert a.tree_.routes_missing  # NaN at prediction goes to the larger child
    left, right = a.tree_.children_left[0], a.tree_.children_right[0]
    larger = left if a.tree_.n_node_samples[left] >= a.tree_.n_node_samples[right] else right
    Xq = np.array([[np.nan, 0.0]])
    if a.tree_.feature[0] == 0:
        assert a.apply(Xq)[0] in _subtree(a.tree_, larger)


def _subtree(tree, v):
    out, stack = [], [v]
    while stack:
        u = stack.pop()
        out.append(u)
        if tree.children_left[u] >= 0:
            stack += [tree.children_left[u], tree.children_right[u]]
    return out


@pytest.mark.slow  # compiles the greedy kernels: about 10 s on a cold cache
def test_greedy_tree_routes_missing_values():
    X, y = _data(11, 60, 3, 2)
    est = GreedyShapeTreeClassifier(max_depth=2).fit(X, y)
    objective, leaf = routed_objective(est, X, y)
    assert objective == pytest.approx(est.objective_, abs=1e-9)
    assert np.array_equal(est.apply(X), leaf)


def test_caption_names_the_rule():
    assert "missing" in MISSING_VALUES_CAPTION.lower()
