"""The Partition Tree keeps its best validation size by default (engine/partition/pruning.py,
``select_size``): truncation equals the growth's own snapshot, the kept size is the trace's
argmin, and on the Diabetes page split the pruned tree beats a constant Gaussian."""

import dataclasses

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.utils.validation import check_random_state

from engine.data import load_bundled, make_dataset
from engine.partition import PartitionTreeClassifier, PartitionTreeRegressor
from engine.partition.explore import make_model, split_rows
from engine.partition.growth import grow_steps
from engine.partition.pruning import best_validation_size, truncate


def _hetero(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-2, 2, n)
    y = np.sin(x) + (0.1 + 0.5 * np.abs(x)) * rng.randn(n)
    cat = rng.randint(0, 3, n).astype(np.float64)
    return np.column_stack([x, rng.rand(n), cat]), y + 0.3 * cat


def _assert_same_tree(a, b):
    for f in dataclasses.fields(a):
        va, vb = getattr(a, f.name), getattr(b, f.name)
        if f.name == "cat_left":
            assert len(va) == len(vb)
            for ma, mb in zip(va, vb, strict=True):
                assert (ma is None and mb is None) or np.array_equal(ma, mb)
        elif isinstance(va, np.ndarray):
            np.testing.assert_array_equal(va, vb, err_msg=f.name)
        else:
            assert va == vb, f.name


@pytest.mark.parametrize("classifier", [False, True], ids=["regression", "classification"])
def test_truncate_equals_the_growth_snapshot(classifier):
    X, y = _hetero(300, 0)
    if classifier:
        y = np.digitize(y, [-0.5, 0.5, 1.2]).astype(np.float64)
        est = PartitionTreeClassifier(max_leaves=20, categorical_features=[2])
    else:
        est = PartitionTreeRegressor(max_leaves=20, categorical_features=[2])
    Xv, yv = est._prepare(X, y)
    steps = grow_steps(
        Xv,
        yv,
        **est._data_description(),
        params=est._grow_params(False),
        rng=check_random_state(0),
    )
    snapshots = {}
    while True:
        try:
            n, _, build = next(steps)
        except StopIteration as stop:
            final = stop.value
            break
        snapshots[n] = build()
    assert final.n_leaves == 20
    for k in (1, 2, 7, 19, 20):
        _assert_same_tree(truncate(final, k), snapshots[k])
    with pytest.raises(ValueError, match=r"n_leaves must be in \[1, 20\]"):
        truncate(final, 21)


def test_best_validation_size():
    trace = [(1, 2.0, 3.0), (2, 1.5, np.nan), (3, 1.2, 2.5), (4, 1.0, 2.5), (5, 0.9, 2.7)]
    assert best_validation_size(trace) == 3  # ties: fewer leaves; NaN skipped
    assert best_validation_size([(1, 2.0, np.nan)]) is None


def test_fit_with_validation_keeps_the_best_size():
    X, y = _hetero(600, 0)
    Xv, yv = _hetero(300, 1)
    pruned = PartitionTreeRegressor(max_leaves=48).fit(X, y, Xv, yv)
    grown = PartitionTreeRegressor(max_leaves=48, select_size="last").fit(X, y, Xv, yv)
    t = np.asarray(pruned.trace_)
    assert len(t) == grown.partition_tree_.n_leaves == pruned.n_leaves_grown_ == 48
    best = int(t[np.nanargmin(t[:, 2]), 0])
    assert best < 48  # this data overfits before 48 leaves
    assert pruned.partition_tree_.n_leaves == best
    assert pruned.nll(Xv, yv)[0] == pytest.approx(np.nanmin(t[:, 2]), rel=1e-12)
    assert pruned.nll(Xv, yv)[0] < grown.nll(Xv, yv)[0]
    np.testing.assert_array_equal(pruned.trace_, grown.trace_)
    # no validation rows: nothing to select on, the grown tree is kept
    assert PartitionTreeRegressor(max_leaves=48).fit(X, y).partition_tree_.n_leaves == 48


@pytest.mark.slow
def test_diabetes_page_default_beats_a_constant_gaussian():
    """Issue 17: with the page's split the grown 32-leaf tree's test NLL is worse than a
    constant Gaussian's; the tree kept at its best validation size is better."""
    df, _, entry = load_bundled("diabetes")
    ds = make_dataset(df, entry["target"])
    tr, va, te, _ = split_rows(ds.n_samples, ds.y, seed=0)
    test_nll = {}
    for select in ("best_validation", "last"):
        m = make_model("tree", "regression", {"select_size": select}, random_state=0)
        m.fit(ds.X[tr], ds.y[tr], ds.X[va], ds.y[va])
        test_nll[select] = (m.nll(ds.X[te], ds.y[te])[0], m.partition_tree_.n_leaves)
    ytr = ds.y[tr]
    gauss = float(np.mean(-norm.logpdf(ds.y[te], ytr.mean(), ytr.std())))
    assert test_nll["last"][1] == 32 and test_nll["last"][0] > gauss
    assert test_nll["best_validation"][1] < 32 and test_nll["best_validation"][0] < gauss
