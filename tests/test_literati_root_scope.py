"""Literati with ``candidate_scope='root'`` (every data state uses the root's candidate
breakpoints; the depth-2 and depth-3 counting solvers of
``engine/literati/_counting_kernels.py``):
exact against a brute force over the same candidates and against pystreed on the same
binarisation (K_max = 1), with the tree it returns scoring its objective."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from engine.literati import LiteratiClassifier
from engine.literati import _kernels as kernels
from engine.literati.estimator import encode_missing
from tests.test_literati import _route, _sk_candidates, tree_objective


def brute_force_root(X, y, depth, k_max, lam, alpha, leaves, cands=None):
    """Exact optimum over every tree of depth <= ``depth`` whose nodes use the root's
    candidates (scikit-learn's univariate CART with ``leaves`` leaves on all rows, snapped
    to midpoints, unless ``cands``, a list of per-feature arrays, is given): recursion on
    (row set, depth) over every feature, K <= k_max and K-subset of those candidates."""
    C = int(y.max()) + 1
    if cands is None:
        cands = [_sk_candidates(X[:, j], y, leaves) for j in range(X.shape[1])]

    @functools.cache
    def f(idx, d):
        ids = np.array(idx, dtype=np.int64)
        cnt = np.bincount(y[ids], minlength=C)
        best = float(len(ids) - cnt.max())
        if d == 0 or best == 0:
            return best
        for j in range(X.shape[1]):
            xs = X[ids, j]
            for k in range(1, min(k_max, len(cands[j])) + 1):
                cost = lam + alpha * k
                if cost >= best:
                    break
                for u in itertools.combinations(cands[j], k):
                    left = _route(xs, u)
                    a = cost + f(tuple(ids[left]), d - 1)
                    if a >= best:
                        continue
                    best = min(best, a + f(tuple(ids[~left]), d - 1))
        return best

    return f(tuple(range(len(y))), depth)


def _engine_candidates(X, y, leaves):
    """The root's candidates as the search computes them (``state_candidates`` on all
    rows).  With three classes its univariate CART can break impurity ties differently
    from scikit-learn's (``_sk_candidates``), so the depth-3 tests below give the brute
    force these, which makes them a test of the solver, not of the candidates."""
    XT = np.ascontiguousarray(X.T)
    codes = np.ascontiguousarray(y, dtype=np.int64)
    orders = kernels.sort_orders(XT, np.arange(X.shape[0], dtype=np.int64))
    off, vals, _ = kernels.state_candidates(XT, codes, orders, int(codes.max()) + 1, leaves)
    return [vals[off[j] : off[j + 1]] for j in range(X.shape[1])]


def _data(seed, n, p, C):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, p)), 2)
    signal = (X[:, 0] > 0.2) ^ (X[:, 1 % p] < -0.1)
    y = (signal.astype(int) + (rng.random(n) < 0.25)) % C
    return np.ascontiguousarray(X), y


def _root(**kw):
    return LiteratiClassifier(candidate_scope="root", time_limit=60, **kw)


@pytest.mark.parametrize(
    "seed,n,p,C,D,k,lam,alpha,leaves",
    [
        (0, 12, 2, 2, 1, 1, 0.5, 0.5, 4),
        (1, 14, 2, 2, 2, 1, 0.5, 0.5, 4),
        (2, 14, 3, 2, 2, 2, 0.3, 0.2, 4),
        (3, 13, 2, 3, 2, 2, 0.25, 0.25, 5),
        (4, 14, 3, 3, 2, 2, 0.1, 0.4, 3),
        (5, 12, 3, 2, 2, 2, 1.0, 0.0, 6),
        (6, 14, 2, 2, 2, 2, 0.05, 0.05, 8),
        (7, 14, 2, 2, 3, 1, 0.2, 0.2, 4),
        (8, 13, 3, 2, 3, 2, 0.1, 0.1, 4),
        (9, 14, 2, 3, 3, 2, 0.05, 0.15, 5),
    ],
)
def test_root_scope_equals_brute_force(seed, n, p, C, D, k, lam, alpha, leaves):
    X, y = _data(seed, n, p, C)
    est = _root(
        max_depth=D,
        max_breakpoints=k,
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=leaves,
    ).fit(X, y)
    expected = brute_force_root(X, y, D, k, lam, alpha, leaves)
    assert est.proven_optimal_
    assert est.objective_ == pytest.approx(expected)
    assert est.lower_bound_ == pytest.approx(expected)
    recomputed, _ = tree_objective(est, X, y)
    assert recomputed == pytest.approx(expected)


@pytest.mark.parametrize(
    "seed,n,p,C,k,lam,alpha,leaves,nan_rows",
    [
        (50, 24, 3, 2, 1, 0.5, 0.5, 5, 0),
        (51, 24, 3, 2, 2, 0.25, 0.5, 5, 0),
        (52, 22, 3, 3, 1, 0.3, 0.2, 4, 0),
        (53, 22, 2, 3, 2, 0.1, 0.3, 5, 0),
        (54, 22, 3, 2, 2, 0.2, 0.2, 4, 4),
        (55, 20, 2, 3, 1, 0.5, 0.0, 5, 3),
        (56, 20, 2, 2, 2, 1.5, 0.5, 6, 0),
    ],
)
def test_root_scope_depth_three_equals_brute_force(seed, n, p, C, k, lam, alpha, leaves, nan_rows):
    """Depth 3: the counting kernel (a triple histogram per root feature, every root
    shape's depth-2 children from class counts, bounds passed down), with NaN rows searched
    on the extended columns of ``encode_missing``."""
    X, y = _data(seed, n, p, C)
    if nan_rows:
        X[np.arange(nan_rows) * 3 + 1, 0] = np.nan
    est = _root(
        max_depth=3,
        max_breakpoints=k,
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=leaves,
    ).fit(X, y)
    X_search, _, _ = encode_missing(X)
    cands = _engine_candidates(X_search, y, leaves)
    expected = brute_force_root(X_search, y, 3, k, lam, alpha, leaves, cands)
    assert est.proven_optimal_
    assert est.objective_ == pytest.approx(expected)
    assert est.lower_bound_ == pytest.approx(expected)
    assert est.objective_breakdown_["errors"] == int(np.sum(est.predict(X) != y))
    if not nan_rows:
        assert tree_objective(est, X, y)[0] == pytest.approx(expected)


@pytest.mark.slow
@pytest.mark.parametrize("k,C", [(1, 2), (2, 3)])
def test_root_scope_depth_three_kernel_equals_the_graph_search(monkeypatch, k, C):
    """On 1,500 rows: the depth-3 counting kernel against the AO* search over the root's
    shapes with every depth-2 child counted (the path taken when the triple histogram
    does not fit, forced here), which the brute force checks on small sets."""
    from engine.literati import expansion

    X, y = _data(60 + k, 1500, 5, C)
    kw = dict(max_depth=3, max_breakpoints=k, split_penalty=3.0, breakpoint_penalty=2.0)
    kernel = _root(candidate_leaves=6, **kw).fit(X, y)
    monkeypatch.setattr(expansion, "_D3_BYTES", 0)
    graph = _root(candidate_leaves=6, **kw).fit(X, y)
    assert kernel.proven_optimal_ and graph.proven_optimal_
    assert kernel.objective_ == pytest.approx(graph.objective_)
    assert tree_objective(kernel, X, y)[0] == pytest.approx(kernel.objective_)


def test_root_scope_depth_three_at_its_time_limit_keeps_a_tree_of_the_space():
    """A time limit that ends the search before the depth-3 scan: the incumbent is the
    state's depth-2 optimum (the scan's seed), a valid tree with the objective reported,
    above the proven optimum, and the lower bound stays below it."""
    X, y = _data(80, 3000, 6, 3)
    kw = dict(max_depth=3, max_breakpoints=2, split_penalty=2.0, breakpoint_penalty=1.0)
    cut = _root(**kw).set_params(time_limit=1e-4).fit(X, y)
    full = _root(**kw).fit(X, y)
    depth2 = _root(**{**kw, "max_depth": 2}).fit(X, y)
    assert not cut.proven_optimal_ and full.proven_optimal_
    assert cut.objective_ == pytest.approx(depth2.objective_)
    assert tree_objective(cut, X, y)[0] == pytest.approx(cut.objective_)
    assert cut.lower_bound_ <= full.objective_ + 1e-9 <= cut.objective_ + 2e-9


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed,n,p,C,D,k,lam,alpha,leaves",
    [
        (90, 14, 2, 2, 4, 1, 0.2, 0.2, 5),
        (91, 14, 2, 3, 4, 2, 0.1, 0.3, 5),
        (92, 13, 3, 2, 4, 2, 0.25, 0.25, 4),
        (93, 12, 2, 3, 5, 2, 0.05, 0.15, 4),
    ],
)
@pytest.mark.parametrize("d3_kernel", [True, False])
def test_root_scope_depth_four_and_five_equal_brute_force(
    monkeypatch, seed, n, p, C, D, k, lam, alpha, leaves, d3_kernel
):
    """Deeper than 3: the states with four levels or more are graph nodes over the root's
    candidates, the three-level states below them solved by the depth-3 counting kernel
    with their budgets (or, with the kernel's histogram limit forced to 0, graph nodes over
    the root's candidates with depth-2 children counted)."""
    from engine.literati import expansion

    if not d3_kernel:
        monkeypatch.setattr(expansion, "_D3_BYTES", 0)
    X, y = _data(seed, n, p, C)
    # ties: a third of the values rounded to one decimal
    X[::3] = np.round(X[::3], 1)
    est = _root(
        max_depth=D,
        max_breakpoints=k,
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=leaves,
    ).fit(X, y)
    cands = _engine_candidates(X, y, leaves)
    expected = brute_force_root(X, y, D, k, lam, alpha, leaves, cands)
    assert est.proven_optimal_
    assert est.objective_ == pytest.approx(expected)
    assert est.lower_bound_ == pytest.approx(expected)
    assert tree_objective(est, X, y)[0] == pytest.approx(expected)


@pytest.mark.slow
def test_root_scope_depth_four_routes_three_level_states_to_the_kernel(monkeypatch):
    """At D = 4 every three-level state is solved by the depth-3 kernel (never expanded as
    a graph node), created with the finite budget its parent shape passes down, and solved
    once per row set (the state cache): the kernel's calls and seeds are counted, and the
    result still equals the brute force."""
    from engine.literati import expansion

    made, seeded, budgets, expanded = [], [], [], []
    solve, seed, expand = (
        expansion.StateExpansion._solve_d3,
        expansion.StateExpansion._d3_seed,
        expansion.StateExpansion._expand_data,
    )

    def spy_solve(self, st, budget):
        budgets.append(budget)
        if st.sol is None:
            made.append(budget)  # the call at creation
        return solve(self, st, budget)

    def spy_seed(self, st):
        seeded.append(st.key)
        return seed(self, st)

    def spy_expand(self, st):
        expanded.append(st.d)
        return expand(self, st)

    monkeypatch.setattr(expansion.StateExpansion, "_solve_d3", spy_solve)
    monkeypatch.setattr(expansion.StateExpansion, "_d3_seed", spy_seed)
    monkeypatch.setattr(expansion.StateExpansion, "_expand_data", spy_expand)
    X, y = _data(95, 40, 3, 3)
    X[::3] = np.round(X[::3], 1)
    kw = dict(max_breakpoints=2, split_penalty=0.5, breakpoint_penalty=0.5, candidate_leaves=5)
    est = _root(max_depth=4, **kw).fit(X, y)
    assert est.proven_optimal_
    assert len(made) >= 10 and all(np.isfinite(b) for b in made)
    assert len(seeded) == len(set(seeded)) == len(made)  # one solve per row set
    assert set(expanded) == {4}  # only the root is a graph node
    cands = _engine_candidates(X, y, 5)
    assert est.objective_ == pytest.approx(brute_force_root(X, y, 4, 2, 0.5, 0.5, 5, cands))


@pytest.mark.slow
def test_root_scope_depth_four_kmax1_equals_pystreed_on_the_same_binarisation():
    X, y = _data(75, 400, 4, 2)
    leaves, cost = 6, 4.0
    thresholds = [_sk_candidates(X[:, j], y, leaves) for j in range(X.shape[1])]
    est = _root(
        max_depth=4,
        max_breakpoints=1,
        split_penalty=cost / 2,
        breakpoint_penalty=cost / 2,
        candidate_leaves=leaves,
    ).fit(X, y)
    assert est.proven_optimal_
    assert est.objective_ == pytest.approx(_pystreed_on(X, y, thresholds, 4, cost))
    assert tree_objective(est, X, y)[0] == pytest.approx(est.objective_)


@pytest.mark.slow
def test_root_scope_depth_three_equals_brute_force_on_sixty_rows():
    """Depth 3 on sixty rows (the row sets of the brute force's recursion are many)."""
    X, y = _data(31, 60, 3, 2)
    kw = dict(max_depth=3, max_breakpoints=2, split_penalty=0.5, breakpoint_penalty=0.5)
    est = _root(candidate_leaves=4, **kw).fit(X, y)
    expected = brute_force_root(X, y, 3, 2, 0.5, 0.5, 4)
    assert est.proven_optimal_ and est.objective_ == pytest.approx(expected)
    assert tree_objective(est, X, y)[0] == pytest.approx(expected)


@pytest.mark.slow
def test_root_scope_equals_brute_force_on_two_thousand_rows():
    """Large enough that the counting (pair histograms) does the work, not the leaf test."""
    X, y = _data(11, 2000, 4, 3)
    kw = dict(max_depth=2, max_breakpoints=2, split_penalty=4.0, breakpoint_penalty=3.0)
    est = _root(candidate_leaves=6, **kw).fit(X, y)
    expected = brute_force_root(X, y, 2, 2, 4.0, 3.0, 6)
    assert est.objective_ == pytest.approx(expected)
    assert tree_objective(est, X, y)[0] == pytest.approx(expected)


def test_root_scope_with_missing_values_equals_brute_force_on_the_extended_columns():
    """NaN goes below or above every observed value (the two extended columns of
    ``encode_missing``): the optimum over those columns with the root's candidates."""
    X, y = _data(21, 14, 2, 2)
    X[[1, 5, 9], 0] = np.nan
    est = _root(
        max_depth=2,
        max_breakpoints=2,
        split_penalty=0.3,
        breakpoint_penalty=0.2,
        candidate_leaves=4,
    ).fit(X, y)
    X_search, _, _ = encode_missing(X)
    assert est.objective_ == pytest.approx(brute_force_root(X_search, y, 2, 2, 0.3, 0.2, 4))
    # the fitted tree routes the original X (NaN included) to that objective: its leaves
    # predict their majority class, so the training errors are predict's mistakes
    breakdown = est.objective_breakdown_
    assert breakdown["errors"] == int(np.sum(est.predict(X) != y))
    assert breakdown["objective"] == pytest.approx(est.objective_)


def _pystreed_on(X, y, thresholds, D, cost):
    pystreed = pytest.importorskip("pystreed")
    cols = [(X[:, j] <= t).astype(np.int64) for j in range(X.shape[1]) for t in thresholds[j]]
    Xb = np.column_stack(cols)
    model = pystreed.STreeDClassifier(
        optimization_task="cost-complex-accuracy",
        max_depth=D,
        cost_complexity=cost / len(y),
        time_limit=60,
    ).fit(Xb, y)
    return float((model.predict(Xb) != y).sum() + cost * (model.get_n_leaves() - 1))


@pytest.mark.parametrize("seed", range(3))
def test_root_scope_kmax1_equals_pystreed_on_the_same_binarisation(seed):
    X, y = _data(40 + seed, 400, 4, 2 + seed % 2)
    leaves, cost = 8, [4.0, 8.0, 2.0][seed]
    thresholds = [_sk_candidates(X[:, j], y, leaves) for j in range(X.shape[1])]
    est = _root(
        max_depth=2,
        max_breakpoints=1,
        split_penalty=cost / 2,
        breakpoint_penalty=cost / 2,
        candidate_leaves=leaves,
    ).fit(X, y)
    assert est.proven_optimal_
    assert est.objective_ == pytest.approx(_pystreed_on(X, y, thresholds, 2, cost))


@pytest.mark.parametrize("seed", range(2))
def test_root_scope_depth_three_kmax1_equals_pystreed_on_the_same_binarisation(seed):
    X, y = _data(70 + seed, 3000, 5, 2 + seed)
    leaves, cost = 8, [6.0, 10.0][seed]
    thresholds = [_sk_candidates(X[:, j], y, leaves) for j in range(X.shape[1])]
    est = _root(
        max_depth=3,
        max_breakpoints=1,
        split_penalty=cost / 2,
        breakpoint_penalty=cost / 2,
        candidate_leaves=leaves,
    ).fit(X, y)
    assert est.proven_optimal_
    assert est.objective_ == pytest.approx(_pystreed_on(X, y, thresholds, 3, cost))


def test_root_scope_equals_state_scope_at_depth_one():
    """At depth 1 the root is the only state: both scopes search the same space."""
    X, y = _data(7, 300, 5, 3)
    a = LiteratiClassifier(max_depth=1, candidate_scope="state").fit(X, y)
    b = _root(max_depth=1).fit(X, y)
    assert a.objective_ == pytest.approx(b.objective_)


@pytest.mark.parametrize(
    "kw,message",
    [
        ({"max_depth": 2, "candidate_leaves": None}, "finite number of candidate leaves"),
        ({"max_depth": 2, "candidate_leaves": (None, 4)}, "finite number of candidate leaves"),
    ],
)
def test_root_scope_refuses_what_it_cannot_solve(kw, message):
    X, y = _data(0, 30, 2, 2)
    with pytest.raises(InvalidParameterError, match=message):
        LiteratiClassifier(candidate_scope="root", **kw).fit(X, y)


def test_candidate_scope_constraint_names_the_allowed_values():
    X, y = _data(0, 30, 2, 2)
    with pytest.raises(InvalidParameterError, match="candidate_scope"):
        LiteratiClassifier(candidate_scope="global").fit(X, y)


@pytest.mark.slow
def test_root_scope_depth_four_with_subset_bounds_equals_brute_force(monkeypatch):
    """Depth 4 on twelve tied random cases: the search hands subset bounds between the
    three-level children of its root (a child's lower bound from a sibling on the same
    feature with a subset of its bins, and the depth-3 kernel's floors from siblings on
    any feature); the proven objective, the lower bound and the re-scored tree equal the
    brute force, and the hand-over happened."""
    from engine.literati import expansion
    from tests.test_literati_counting_kernels import _tied_case

    handed = []
    sibling_floors = expansion.StateExpansion._sibling_floors

    def spy(self, st, j, mask):
        out = sibling_floors(self, st, j, mask)
        handed.append(out is not None and bool(np.isfinite(out).any()))
        return out

    monkeypatch.setattr(expansion.StateExpansion, "_sibling_floors", spy)
    for seed in range(200, 212):
        X, y, k_max, lam, alpha, leaves = _tied_case(seed)
        est = _root(
            max_depth=4,
            max_breakpoints=k_max,
            split_penalty=lam / 2,
            breakpoint_penalty=alpha / 2,
            candidate_leaves=leaves,
        ).fit(X, y)
        cands = _engine_candidates(X, y, leaves)
        expected = brute_force_root(X, y, 4, k_max, lam / 2, alpha / 2, leaves, cands)
        assert est.proven_optimal_, seed
        assert est.objective_ == pytest.approx(expected), seed
        assert est.lower_bound_ == pytest.approx(expected), seed
        assert tree_objective(est, X, y)[0] == pytest.approx(expected), seed
    assert any(handed)


@pytest.mark.slow
def test_root_scope_depth_four_refreshed_subset_bounds_equal_brute_force(monkeypatch):
    """Depth 4, K_max = 2 on twelve tied random cases: the search raises the bounds of
    unexpanded root shapes and refinements from their children's subset bounds
    (``_refresh_subset_bounds``, before any kernel call for them); the proven objective,
    the lower bound and the re-scored tree equal the brute force, the raise happened, and
    it only spared work (no more root-shape expansions than with it switched off)."""
    from engine.literati import expansion
    from tests.test_literati_counting_kernels import _tied_case

    raised = []
    raise_by_subsets = expansion.StateExpansion._raise_by_subsets

    def spy(self, st, h, nb, full):
        out = raise_by_subsets(self, st, h, nb, full)
        raised.append(out)
        return out

    expanded = {"on": 0, "off": 0}
    expand_shape = expansion.StateExpansion._expand_shape
    mode = ["on"]

    def count(self, h, budget=np.inf):
        if h.state.d == self.D:
            expanded[mode[0]] += 1
        return expand_shape(self, h, budget)

    monkeypatch.setattr(expansion.StateExpansion, "_raise_by_subsets", spy)
    monkeypatch.setattr(expansion.StateExpansion, "_expand_shape", count)
    for seed in range(300, 312):
        X, y, _, lam, alpha, leaves = _tied_case(seed)
        kw = dict(
            max_depth=4,
            max_breakpoints=2,
            split_penalty=lam / 2,
            breakpoint_penalty=alpha / 2,
            candidate_leaves=leaves,
        )
        mode[0] = "on"
        est = _root(**kw).fit(X, y)
        cands = _engine_candidates(X, y, leaves)
        expected = brute_force_root(X, y, 4, 2, lam / 2, alpha / 2, leaves, cands)
        assert est.proven_optimal_, seed
        assert est.objective_ == pytest.approx(expected), seed
        assert est.lower_bound_ == pytest.approx(expected), seed
        assert tree_objective(est, X, y)[0] == pytest.approx(expected), seed
        mode[0] = "off"
        with monkeypatch.context() as m:
            m.setattr(expansion.StateExpansion, "_refresh_subset_bounds", lambda *a: None)
            off = _root(**kw).fit(X, y)
        assert off.objective_ == pytest.approx(expected), seed
    assert any(raised)
    assert expanded["on"] <= expanded["off"], expanded
