"""Where the gap lives (issue 18 point 2): per-node bounds and gap shares of a Literati
search's incumbent, and steering the search by giving a subtree priority.

Oracles: the brute force of tests/test_literati.py on each node's rows (the optimum of the
node's own subproblem), the exact identities of docs/methods.md (UB telescopes, own shares
add up to 1, every share 0 once proven) and an unsteered run of the same search.
"""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest
from test_literati import _random_data, brute_force

from engine.job_context import JobContext
from engine.jobs import Job
from engine.literati import LiteratiClassifier
from engine.literati.node_bounds import path_label
from engine.literati.service import literati_steps, priority_message
from engine.literati.shapes import node_rows

LAM, ALPHA, LEAVES = 0.3, 0.2, 3


def _estimator(**kw):
    params = dict(
        max_depth=4,
        max_breakpoints=2,
        split_penalty=LAM,
        breakpoint_penalty=ALPHA,
        candidate_leaves=LEAVES,
        time_limit=60,
    )
    return LiteratiClassifier(**(params | kw))


def _data(seed=0):
    return _random_data(seed, 30, 3, C=3)


def _oracle(X, y, depth):
    """Brute-force optimum of a node's subproblem: its rows, ``depth - level`` levels left,
    the same candidates (B_d = 3 at every level), memoised by rows."""

    @functools.cache
    def best(rows: tuple, levels: int) -> float:
        ids = np.array(rows, dtype=np.int64)
        if levels == 0 or ids.size == 0:
            cnt = np.bincount(y[ids], minlength=3)
            return float(ids.size - cnt.max())
        return brute_force(X[ids], y[ids], levels, 2, LAM, ALPHA, leaves=[LEAVES])

    def of(tree, nb, v):
        rows = np.flatnonzero(node_rows(tree, X, v))
        return best(tuple(rows.tolist()), depth - int(nb.depth[v]))

    return of


def _check_identities(search, nb):
    """UB telescopes down the tree, the root's bounds are the trace's, no child's gap
    exceeds its parent's, shares as defined."""
    tree = search.incumbent()
    row = search.snapshot()
    assert nb.node_count == tree.node_count
    assert nb.upper[0] == pytest.approx(row["ub"], abs=1e-9)
    assert nb.lower[0] == pytest.approx(row["lb"], abs=1e-9)
    for v in range(tree.node_count):
        a, b = int(tree.children_left[v]), int(tree.children_right[v])
        assert nb.lower[v] <= nb.upper[v] + 1e-12
        if a >= 0:
            k = tree.bp_offsets[v + 1] - tree.bp_offsets[v]
            assert nb.upper[v] == pytest.approx(LAM + ALPHA * k + nb.upper[a] + nb.upper[b])
            own = nb.gap[v] - nb.gap[a] - nb.gap[b]
            # the parent's bound is passed down: no child holds more of the gap
            assert max(nb.gap[a], nb.gap[b]) <= nb.gap[v] + 1e-9
            if nb.root_gap > 0:
                assert nb.own_share[v] == pytest.approx(own / nb.root_gap)
    if nb.root_gap > 0:
        assert nb.share[0] == 1.0
        assert nb.own_share.sum() == pytest.approx(1.0, abs=1e-9)
        assert nb.share == pytest.approx(nb.gap / nb.root_gap)
    else:
        assert not nb.share.any() and not nb.own_share.any()


def test_node_paths_and_table():
    X, y = _data()
    search = _estimator().start(X, y)
    nb = search.node_bounds()
    tree = search.incumbent()
    for v in range(tree.node_count):  # each path leads from the root to its node
        node = 0
        for side in nb.paths[v]:
            node = int(tree.children_left[node] if side == "L" else tree.children_right[node])
        assert node == v
        assert nb.node_of_path(nb.paths[v]) == v
    assert nb.node_of_path("LLLLL") is None
    table = nb.table()
    assert list(table["path"])[0] == "root" and path_label("LR") == "root \u2192 L \u2192 R"
    assert table["UB"].tolist() == nb.upper.tolist()


@pytest.mark.slow
def test_bounds_bracket_each_node_optimum_mid_search():
    """At several moments of the search every node's LB <= the brute-force optimum of its
    own rows and levels <= its UB, and the shares add up as defined."""
    X, y = _data()
    search = _estimator().start(X, y)
    oracle = _oracle(X, y, 4)
    checked_gap = False
    for iteration in range(1, 200):
        search.engine.iterate()
        search._refresh_incumbent()
        search._log("")
        if iteration not in (1, 3, 10, 30, 80) and not search.engine.root.solved:
            continue
        nb = search.node_bounds()
        _check_identities(search, nb)
        tree = search.incumbent()
        for v in range(tree.node_count):
            optimum = oracle(tree, nb, v)
            assert nb.lower[v] <= optimum + 1e-9, (iteration, v)
            assert optimum <= nb.upper[v] + 1e-9, (iteration, v)
        checked_gap |= bool((nb.share[1:] > 0).any())
        if search.engine.root.solved:
            break
    assert checked_gap  # a gap below the root was seen (not only the trivial root share)


@pytest.mark.slow
def test_proven_optimum_has_zero_shares_and_exact_nodes():
    X, y = _data()
    est = _estimator().fit(X, y)
    assert est.proven_optimal_
    nb = est.node_bounds_
    assert nb.root_gap == 0.0 and nb.exact.all()
    assert np.array_equal(nb.lower, nb.upper)
    assert not nb.share.any() and not nb.own_share.any()
    assert nb.upper[0] == pytest.approx(est.objective_)
    oracle = _oracle(X, y, 4)
    for v in range(est.tree_.node_count):  # an optimal tree's subtrees are optimal
        assert nb.upper[v] == pytest.approx(oracle(est.tree_, nb, v), abs=1e-9)


def _target(search):
    """The path of the non-root node with the largest gap share (an unsolved subtree)."""
    for _ in range(50):
        nb = search.node_bounds()
        order = np.argsort(-nb.share[1:], kind="stable") + 1
        if nb.share[order[0]] > 0:
            return nb.paths[int(order[0])]
        search.step(max_seconds=0.0)
    raise AssertionError("no node below the root kept a gap")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_steering_changes_the_order_not_the_optimum(seed):
    X, y = _data(seed)
    plain = _estimator().fit(X, y)
    search = _estimator().start(X, y)
    path = _target(search)
    search.prioritise(path)
    engine = search.engine
    steered = 0
    while engine.priority is not None and not engine.root.solved:
        chain = engine._priority_chain()  # the path's deepest unsolved state now
        search.step(max_seconds=0.0)  # one iteration
        if chain is not None:
            assert chain[-1] in engine._path  # the iteration went through that subtree
            assert engine._path[: len(chain)] == chain
            steered += 1
    assert steered > 0 and engine.priority_iterations == steered
    if engine.priority_ended == "proven":  # the node at that path is proven now
        engine.priority = path
        assert engine._priority_chain() is None
        engine.priority = None
    else:
        assert engine.priority_ended == "stalled"
    while not search.step(max_seconds=1.0):
        pass
    est = search.finish()
    assert est.proven_optimal_ and plain.proven_optimal_
    assert est.objective_ == pytest.approx(plain.objective_, abs=1e-9)
    assert est.objective_ == pytest.approx(
        brute_force(X, y, 4, 2, LAM, ALPHA, leaves=[LEAVES]), abs=1e-9
    )
    trace = est.trace_
    set_rows = trace[trace["event"] == "priority"]
    assert list(set_rows["priority"]) == [path]
    assert (trace["event"] == "priority_end").any()


def test_priority_paths_are_checked():
    X, y = _data()
    search = _estimator().start(X, y)
    for bad in ("LX", "LLLLL"):
        with pytest.raises(ValueError, match="string of L and R"):
            search.prioritise(bad)
    search.prioritise("")  # the root: the ordinary search
    search.prioritise(None)
    assert list(search.trace()["event"])[-2:] == ["priority", "priority_end"]


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["threads", "dask"])
def test_priority_reaches_the_running_job(runner):
    """The page's channel: Job.send reaches literati_steps on either runner, and the
    trace records the prioritised path."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    est = LiteratiClassifier(max_depth=4, candidate_leaves=(8, 4), time_limit=20)
    job = Job(literati_steps, [("main", est)], X, y, budget=60, runner=runner).start()
    deadline = time.monotonic() + 60
    while job.snapshot().latest is None and not job.finished and time.monotonic() < deadline:
        time.sleep(0.1)
    latest = job.snapshot().latest
    assert latest is not None, job.error
    nb = latest["snap"]["nodes"]
    path = nb.paths[1] if nb.node_count > 1 else ""
    job.send({"type": "other"})
    job.send(priority_message("k1", path))
    job.send(priority_message("main", path))
    seen = False
    while not job.finished and time.monotonic() < deadline:
        latest = job.snapshot().latest
        trace = latest["trace"]
        if (trace["event"] == "priority").any():
            seen = True
            break
        time.sleep(0.1)
    job.cancel()
    job.join(30)
    assert seen, "the priority message never reached the search"
    assert list(trace.loc[trace["event"] == "priority", "priority"]) == [path]
    assert any("not running" in m for m in latest["ignored"])
    assert any("unknown message" in m for m in latest["ignored"])
    with pytest.raises(TypeError, match="dict of str keys"):
        job.send({"path": object()})


def test_tree_figure_rings_nodes_by_gap_share_and_marks_the_priority():
    from engine.figures.literati import shape_tree_figure

    X, y = _data()
    search = _estimator().start(X, y)
    for _ in range(3):
        search.step(max_seconds=0.0)
    nb = search.node_bounds()
    tree = search.incumbent()
    path = nb.paths[-1]
    fig = shape_tree_figure(tree, node_bounds=nb, priority_path=path)
    rings = next(t for t in fig.data if (t.meta or {}).get("role") == "gap")
    ids = rings.customdata[:, 0].astype(int)
    assert sorted(ids.tolist()) == list(range(tree.node_count))
    assert np.allclose(rings.marker.color, 100 * nb.share[ids])
    assert np.allclose(rings.customdata[:, 1], nb.lower[ids])
    assert np.allclose(rings.customdata[:, 2], nb.upper[ids])
    assert (rings.marker.cmin, rings.marker.cmax) == (0.0, 100.0)
    assert "gap (%)" in rings.marker.colorbar.title.text
    star = next(t for t in fig.data if t.name == "has priority in the search")
    at = {}
    for t in fig.data:
        if (t.meta or {}).get("role") == "nodes":
            at |= {int(c): (x, yy) for c, x, yy in zip(t.customdata, t.x, t.y, strict=True)}
    assert (star.x[0], star.y[0]) == at[nb.node_of_path(path)]
    plain = shape_tree_figure(tree)
    assert not any((t.meta or {}).get("role") == "gap" for t in plain.data)


@pytest.mark.parametrize("case", ["missing values", "root candidates"])
def test_identities_hold_with_missing_values_and_the_root_scope(case):
    """The shares add up as defined mid-search, and every node is exact once proven, with
    NaN rows (extra search columns) and with the counting solver's root candidates."""
    X, y = _data(2)
    kw = {}
    if case == "missing values":
        X = X.copy()
        X[::5, 0] = np.nan
    else:
        kw = dict(max_depth=3, candidate_scope="root")
    search = _estimator(**kw).start(X, y)
    while not search.step(max_seconds=0.0):
        _check_identities(search, search.node_bounds())
    est = search.finish()
    assert est.proven_optimal_
    nb = est.node_bounds_
    assert nb.exact.all() and not nb.share.any()
    assert np.array_equal(nb.lower, nb.upper)


def test_lower_bound_frontier_holds_the_root_bound():
    """The frontier lists the root's open splits by lower bound: sorted, the least equal to
    the least over the root's action table, each below its own UB, and the root's LB at
    least the least of them (its bound is the larger of that and its class-count bound)."""
    X, y = _data()
    search = _estimator().start(X, y)
    seen = 0
    while not search.step(max_seconds=0.0):
        frontier = search.lower_bound_frontier(count=4)
        root = search.engine.root
        if not frontier:
            continue
        seen += 1
        bounds = [f["lower"] for f in frontier]
        assert bounds == sorted(bounds) and len(frontier) <= 4
        assert root.lb >= min(bounds[0], root.ub) - 1e-9  # the splits' part of the LB
        alive = search.engine.lr + root.a_lb[root.a_alive]
        assert bounds[0] == pytest.approx(alive.min())
        assert frontier[0]["open"] == alive.size
        assert frontier[0]["tied"] == int(np.sum(alive <= alive.min() + 1e-9))
        for f in frontier:
            assert f["lower"] <= f["upper"] + 1e-9
            assert 0 <= f["feature"] < X.shape[1] and 1 <= len(f["breakpoints"]) <= 2
    assert seen > 0
    assert search.lower_bound_frontier() == []  # proven: nothing holds the bound any more


@pytest.mark.slow
def test_a_snapshot_carries_no_training_rows_and_a_stopped_job_keeps_its_models():
    """literati_steps' snapshots hold the live view's data and each search as a fitted
    estimator (LiteratiSearch.result), not the search with its rows: pickled, a snapshot
    is a small fraction of the training matrix (the Dask pump pickles one every flush).
    The running search's model is what finish() gives when stopped there."""
    import pickle

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 10))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=20_000) > 0).astype(int)
    est = LiteratiClassifier(max_depth=3, candidate_leaves=(8, 4), time_limit=20)
    steps = literati_steps(JobContext(deadline=float("inf")), [("main", est)], X, y)
    latest = next(steps)
    latest = next(steps)
    size = len(pickle.dumps(latest, protocol=pickle.HIGHEST_PROTOCOL))
    assert size < X.nbytes / 20, size
    assert "searches" not in latest and set(latest["models"]) == {"main"}
    model = latest["models"]["main"]
    assert latest["incumbent"] is model.tree_
    assert model.upper_bound_ == pytest.approx(latest["snap"]["ub"])
    assert model.lower_bound_ == pytest.approx(latest["snap"]["lb"])
    assert model.trace_["event"].iloc[-1] == "stopped"
    assert len(model.trace_) == len(latest["trace"]) + 1
    # the search goes on after result(): the next snapshot is a newer state, same search
    after = next(steps)
    assert after["trace"]["time"].iloc[-1] >= latest["trace"]["time"].iloc[-1]
    steps.close()


def _assert_passed_down(tree, nb, price):
    """Each child's LB is at least its parent's LB - price - UB(sibling), and so no child
    has a larger gap than its parent."""
    for v in range(tree.node_count):
        a, b = int(tree.children_left[v]), int(tree.children_right[v])
        if a < 0:
            continue
        for child, sibling in ((a, b), (b, a)):
            bound = nb.lower[v] - price[v] - nb.upper[sibling]
            assert nb.lower[child] >= min(bound, nb.upper[child]) - 1e-9, (v, child)
            assert nb.gap[child] <= nb.gap[v] + 1e-9, (v, child)


@pytest.mark.slow
def test_a_parents_bound_is_passed_down_and_stays_below_each_nodes_optimum():
    """Each incumbent of a search, given the root's optimum as its proven bound (the
    strongest admissible one): the bound passed down, LB(v) - (lambda + alpha K_v) -
    UB(sibling), raises nodes above the class-count or cached bound they hold alone, and
    every node's LB stays at most the brute-force optimum of its own rows and levels.  The
    shares still add up and none exceeds 1."""
    X, y = _data()
    search = _estimator().start(X, y)
    oracle = _oracle(X, y, 4)
    optimum = None
    raised = 0
    for _ in range(200):
        search.engine.iterate()
        search._refresh_incumbent()
        search._log("")
        tree = search.incumbent()
        tracker = search._tracker
        if optimum is None:
            optimum = oracle(tree, search.node_bounds(), 0)
        nb = tracker.bounds(search.engine._cache, optimum)
        if nb.root_gap == 0:
            break
        assert nb.lower[0] == pytest.approx(optimum)
        _assert_passed_down(tree, nb, tracker.price)
        assert nb.own_share.sum() == pytest.approx(1.0, abs=1e-9)
        assert (nb.share <= 1.0 + 1e-9).all()
        for v in range(1, tree.node_count):
            key = tracker.keys[v]
            state = None if key is None else search.engine._cache.get(key)
            held = max(tracker.static[v], -np.inf if state is None else state.lb)
            raised += bool(nb.lower[v] > held + 1e-9)
            best = oracle(tree, nb, v)
            assert nb.lower[v] <= best + 1e-9, v
    assert raised, "no bound came from a parent: pick other data"


@pytest.mark.slow
def test_bounds_passed_down_after_evictions_stay_below_each_nodes_optimum():
    """A cache of 8 states evicts children whose bounds the search keeps on its shapes
    only, so a parent's bound can exceed its children's cached ones plus the price: the
    bound passed down then raises a child (seen on this seed), and stays at most the
    brute-force optimum of the child's rows, with no child's gap above its parent's."""
    X, y = _random_data(2, 30, 3, C=3)
    search = _estimator(cache_size=8).start(X, y)
    oracle = _oracle(X, y, 4)
    raised = False
    for _ in range(400):
        search.engine.iterate()
        search._refresh_incumbent()
        search._log("")
        nb = search.node_bounds()
        tree = search.incumbent()
        tracker = search._tracker
        _assert_passed_down(tree, nb, tracker.price)
        for v in range(1, tree.node_count):
            key = tracker.keys[v]
            state = None if key is None else search.engine._cache.get(key)
            held = max(tracker.static[v], -np.inf if state is None else state.lb)
            if not nb.exact[v] and nb.lower[v] > held + 1e-9:
                raised = True
                assert nb.lower[v] <= oracle(tree, nb, v) + 1e-9, v
    assert search.engine.evictions > 0 and raised
