"""engine.store: the on-disk run store (issue 16 point 1).

Every method's real job result is saved, reopened by a *new* store on the same folder (as
after a server restart) and compared value by value; the store holds data only (no pickle
is written, and a pickled entry planted in the store is refused, not executed); the size
limit evicts the least recently used run; runs expire; bad run ids get a clear message.
"""

import dataclasses
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import time
import zipfile
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes, load_iris

from engine import store as store_module
from engine.store import (
    InvalidRunId,
    RunNotFound,
    RunStore,
    RunStoreError,
    check_run_id,
    limits_from_environment,
    new_run_id,
)
from tests.conftest import ROOT, drive

MiB = 2**20


@pytest.fixture
def folder(tmp_path):
    return tmp_path / "runs"


@pytest.fixture
def store(folder):
    with RunStore(folder, size_limit=256 * MiB, expire_seconds=3600) as opened:
        yield opened


def reopen(store: RunStore, run_id: str):
    """Load ``run_id`` through a second store on the same folder (a restarted server)."""
    with RunStore(store.directory, size_limit=store.size_limit, expire_seconds=3600) as again:
        return again.load(run_id)


def assert_same(a, b, where="result"):
    """Deep equality of two result trees: same types, arrays with the same dtype, shape and
    values (NaN equal to NaN), frames equal exactly, objects attribute by attribute."""
    assert type(a) is type(b), f"{where}: {type(a)} != {type(b)}"
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=where)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_exact=True, obj=where)
    elif isinstance(a, pd.Index):
        pd.testing.assert_index_equal(a, b, exact=True, check_exact=True, obj=where)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape}"
        if a.dtype.hasobject:
            for i, (u, v) in enumerate(zip(a.ravel(), b.ravel(), strict=True)):
                assert_same(u, v, f"{where}[{i}]")
        else:
            nan = a.dtype.kind in "fc"
            assert np.array_equal(a, b, equal_nan=nan), where
    elif isinstance(a, float | np.floating):
        assert (np.isnan(a) and np.isnan(b)) or a == b, f"{where}: {a} != {b}"
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            assert_same(u, v, f"{where}[{i}]")
    elif isinstance(a, np.random.RandomState):
        assert_same(a.get_state(legacy=True), b.get_state(legacy=True), where)
    elif type(a).__name__ == "Tree" and type(a).__module__.startswith("sklearn"):
        assert_same(a.__getstate__(), b.__getstate__(), where)
        assert a.n_features == b.n_features and a.n_outputs == b.n_outputs, where
    elif type(a).__module__.startswith(("xgboost", "lightgbm")):
        # stored as the library's own text model (not attribute by attribute): the same
        # parameters and the same model text; predictions are compared by the callers
        assert a.get_params() == b.get_params() or str(a.get_params()) == str(b.get_params())
        if type(a).__module__.startswith("xgboost"):
            assert a.get_booster().save_raw("json") == b.get_booster().save_raw("json"), where
        else:
            assert a.booster_.model_to_string() == b.booster_.model_to_string(), where
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if f.init:
                assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif hasattr(a, "__dict__") and not callable(getattr(a, "item", None)):
        assert sorted(vars(a)) == sorted(vars(b)), where
        for k in vars(a):
            if k == "_loss":  # rebuilt, not stored: compared by type
                assert type(a._loss) is type(b._loss)
            else:
                assert_same(getattr(a, k), getattr(b, k), f"{where}.{k}")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def roundtrip(store: RunStore, kind: str, result, meta=None):
    run_id = store.save(kind, result, meta=meta or {"dataset": "iris", "seed": 0})
    check_run_id(run_id)
    run = reopen(store, run_id)
    assert run.kind == kind and run.run_id == run_id
    assert run.versions["numpy"] == np.__version__ and run.size > 0
    assert run.meta == (meta or {"dataset": "iris", "seed": 0})
    assert_same(result, run.result)
    return run.result


# ---------------------------------------------------------------------------------------
# every method's result objects
# ---------------------------------------------------------------------------------------


def _models(task):
    from engine.compare import available_models, load_methods

    load_methods()
    return available_models(task)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_every_compare_model_and_result_roundtrips(store, task):
    """Compare's CompareResult (fold and summary tables, every registered model refitted):
    values equal after reopening, and the reopened models predict the same."""
    from engine.compare import cross_validate_steps, plan_comparison

    if task == "classification":
        X, y = load_iris(return_X_y=True)
    else:
        X, y = load_diabetes(return_X_y=True)
        X, y = X[:150], y[:150]
    n_classes = 3 if task == "classification" else 0
    ds = SimpleNamespace(X=np.ascontiguousarray(X), y=y, task=task, n_classes=n_classes)
    models = {spec.key: {} for spec in _models(task)}
    if "treelab_literati" in models:
        models["treelab_literati"] = {"time_limit": 1.0}
    plan = plan_comparison(ds, models, n_splits=2, random_state=0)
    _, result = drive(cross_validate_steps(None, plan))
    assert len(result.models) == len(models) >= 7
    back = roundtrip(store, "compare", result)
    for key, est in result.models.items():
        np.testing.assert_array_equal(back.models[key].predict(X), est.predict(X), err_msg=key)
        if task == "classification":
            np.testing.assert_array_equal(
                back.models[key].predict_proba(X), est.predict_proba(X), err_msg=key
            )


@pytest.mark.slow
def test_conditional_inference_results_roundtrip(store):
    from engine.cit.steps import fit_rankings_steps, selection_bias_steps, top_k_steps
    from engine.cit.tree import PAPER_SETTINGS

    X, y = load_iris(return_X_y=True)
    params = {**PAPER_SETTINGS["classification"], "n_resamples_selector": "minimum"}
    _, fitted = drive(fit_rankings_steps(None, X, y, "classification", params, n_estimators=3))
    back = roundtrip(store, "cit.fit", fitted)
    tree = fitted["tree"]
    np.testing.assert_array_equal(back["tree"].predict_proba(X), tree.predict_proba(X))
    assert back["tree"].node_records_[0]["nulls"]  # the page's null histograms survive
    _, curves = drive(
        top_k_steps(None, X, y, "classification", {"fixed": np.arange(4)}, [1, 2], n_folds=2)
    )
    roundtrip(store, "cit.topk", curves)
    _, bias = drive(selection_bias_steps(None, X, y, "classification", params, 2))
    roundtrip(store, "cit.bias", bias)


@pytest.mark.slow
def test_partition_results_roundtrip(store):
    from engine.partition.estimators import PartitionForestRegressor, PartitionTreeRegressor
    from engine.partition.explore import (
        comparison_steps,
        density_grid,
        growth_steps,
        split_rows,
    )

    X, y = load_diabetes(return_X_y=True)
    X, y = X[:240, :4], y[:240]
    parts = split_rows(len(y), seed=1)
    tr, va, te = parts.train, parts.val, parts.test
    back_parts = roundtrip(store, "partition.rows", parts)
    assert type(back_parts).__name__ == "RowParts"
    for model in (PartitionTreeRegressor(max_leaves=12), PartitionForestRegressor(n_estimators=3)):
        _, snap = drive(growth_steps(None, model, X[tr], y[tr], X[va], y[va]))
        back = roundtrip(store, "partition.growth", snap)
        values = np.linspace(X[:, 0].min(), X[:, 0].max(), 7)
        grid = np.linspace(y.min(), y.max(), 9)
        np.testing.assert_array_equal(
            density_grid(back["model"], X[te[0]], 0, values, grid),
            density_grid(model, X[te[0]], 0, values, grid),
        )
    _, table = drive(
        comparison_steps(
            None,
            X[tr],
            y[tr],
            X[te],
            y[te],
            task="regression",
            tree_params={"max_leaves": 8},
            forest_params={"n_estimators": 2},
        )
    )
    roundtrip(store, "partition.compare", table)


@pytest.mark.slow
def test_literati_results_roundtrip(store):
    """What the Optimal shape trees page keeps of a search: the finished estimator (its
    incumbent tree), the gap-curve trace and the last snapshot (the live search object is
    not data and is refused with a message naming where it is)."""
    from engine.literati.estimator import LiteratiClassifier

    X, y = load_iris(return_X_y=True)
    search = LiteratiClassifier(max_depth=2, time_limit=2.0).start(X, y)
    while not search.step(max_seconds=0.2):
        pass
    result = {"snap": search.snapshot(), "trace": search.trace(), "estimator": search.finish()}
    back = roundtrip(store, "literati", result)
    np.testing.assert_array_equal(back["estimator"].predict(X), result["estimator"].predict(X))
    assert not result["trace"].empty
    with pytest.raises(RunStoreError, match=r"result\['searches'\]\['A'\].*LiteratiSearch"):
        store.save("literati", {"searches": {"A": search}})


@pytest.mark.slow
def test_treegrad_results_roundtrip(store):
    from sklearn.ensemble import GradientBoostingClassifier

    from engine.tree import from_sklearn
    from engine.treegrad import explain

    X, y = load_iris(return_X_y=True)
    gb = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    model = from_sklearn(gb)
    one = explain.explain(model, X[3], 2, explain.MethodParams(steps=5))
    back = roundtrip(store, "treegrad.explain", one)
    assert isinstance(back, explain.Explanation)
    snaps = list(
        explain.curves_steps(
            None, model, X[:6], np.array([0, 1, 2, 0, 1, 2]), n_random=2, step_seconds=0.0
        )
    )
    curves = snaps[-1]["result"]
    back = roundtrip(store, "treegrad.curves", curves)
    assert_same(back.auc_table(), curves.auc_table())
    assert_same(back.to_frame(), curves.to_frame())
    roundtrip(store, "treegrad.model", model)  # the TreeEnsemble the page explains
    roundtrip(store, "treegrad.gammas", {"edges": explain.edge_gammas(model.trees[0], X[0])})
    roundtrip(store, "treegrad.leaves", explain.leaf_gammas(model.trees[0], X[0]))


def test_split_profile_roundtrips(store):
    from engine.cart.profile import split_profile

    X, y = load_iris(return_X_y=True)
    profile = split_profile(
        X, y, 2, ["exhaustive", "quantile"], task="classification", n_classes=3, random_state=0
    )
    back = roundtrip(store, "splits", profile)
    assert back.best_gain == profile.best_gain
    assert_same(back.results["quantile"].thresholds, profile.results["quantile"].thresholds)


def test_tree_arrays_with_every_extra_roundtrip(store):
    """A TreeArrays with categorical set splits, p-values, breakpoints and bounds; a
    TreeEnsemble; and the JSON edge cases (NaN, inf, non-string keys, tuples, a dict
    with a '__type__' key, numpy scalars, object arrays, pandas extension dtypes)."""
    from engine.tree import TreeArrays, TreeEnsemble

    tree = TreeArrays(
        children_left=[1, -1, -1],
        children_right=[2, -1, -1],
        feature=[1, -2, -2],
        threshold=[0.5, -2.0, -2.0],
        impurity=[0.5, 0.0, 0.0],
        n_node_samples=[10, 4, 6],
        weighted_n_node_samples=[10.0, 4.0, 6.0],
        value=[[0.4, 0.6], [1.0, 0.0], [0.0, 1.0]],
        task="classification",
        n_features=2,
        classes_=np.array(["no", "yes"], dtype=object),
        feature_names=["age", "colour"],
        categories=[None, ["red", "green", "blue"]],
        p_value=[0.01, np.nan, np.nan],
        bp_offsets=[0, 1, 1, 1],
        bp_values=[0.5],
        lower_bound=[0.0, 0.0, 0.0],
        upper_bound=[1.0, 0.0, 0.0],
        cat_offsets=[0, 2, 2, 2],
        cat_values=[0, 2],
        missing_go_to_left=[1, 0, 0],
    )
    ensemble = TreeEnsemble(
        trees=[tree, tree],
        tree_output=np.full(2, -1, dtype=np.int64),
        scale=0.5,
        base=np.zeros(2),
        kind="forest",
        task="classification",
        classes_=np.array(["no", "yes"], dtype=object),
    )
    frame = pd.DataFrame(
        {
            "name": pd.Series(["a", None, "c"], dtype="str"),
            "count": pd.array([1, None, 3], dtype="Int64"),
            "kind": pd.Categorical(["x", "y", "x"], ordered=True),
            "value": [1.5, np.nan, -np.inf],
            "when": pd.to_datetime(["2026-01-01", "2026-06-30", "2026-12-02"]),
        },
        index=pd.Index([10, 20, 30], name="row"),
    )
    result = {
        "tree": tree,
        "ensemble": ensemble,
        "frame": frame,
        "wide": pd.DataFrame(
            np.eye(3), columns=pd.MultiIndex.from_tuples([("a", 1), ("a", 2), ("b", 1)])
        ),
        "series": frame["value"],
        "floats": [float("nan"), float("inf"), -0.0, 1e-300],
        "int_keys": {0: "zero", (1, 2): "pair"},
        "tricky": {"__type__": "not a type"},
        "tuple": (1, "two", None),
        "scalars": [np.int64(7), np.float32(0.5), np.bool_(True), np.str_("s")],
        "objects": np.array(["a", 1, None], dtype=object),
        "strings": np.array(["short", "longer text"]),
        "structured": np.zeros(2, dtype=[("a", "<i8"), ("b", "<f4")]),
    }
    back = roundtrip(store, "tree", result)
    X = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 2.0], [0.0, np.nan]])
    np.testing.assert_array_equal(back["tree"].predict_proba(X), tree.predict_proba(X))
    assert back["tree"].categories == tree.categories


# ---------------------------------------------------------------------------------------
# data only, never pickles
# ---------------------------------------------------------------------------------------


def _entries(folder):
    """(key, mode, filename, inline value) of every row of diskcache's index."""
    with sqlite3.connect(folder / "cache.db") as db:
        return db.execute("SELECT key, mode, filename, value FROM Cache").fetchall()


def test_a_stored_run_is_a_zip_of_json_and_npy_files_without_pickles(store, folder):
    from diskcache.core import MODE_PICKLE
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    big = np.arange(100_000, dtype=np.float64)  # stored as a file, not inline
    run_ids = [store.save("small", {"model": model}), store.save("big", {"x": big})]
    rows = _entries(folder)
    assert sorted(r[0] for r in rows) == sorted(run_ids)
    assert any(r[2] is not None for r in rows) and any(r[3] is not None for r in rows)
    for _key, mode, filename, value in rows:
        assert mode != MODE_PICKLE
        blob = bytes(value) if value is not None else (folder / filename).read_bytes()
        with zipfile.ZipFile(__import__("io").BytesIO(blob)) as archive:
            names = archive.namelist()
            manifest = json.loads(archive.read("manifest.json"))
            assert manifest["format"] == "treelab.run/1"
            assert names == ["manifest.json"] + [
                f"arrays/{i}.npy" for i in range(manifest["n_arrays"])
            ]
            for name in names[1:]:
                data = archive.read(name)
                assert data.startswith(b"\x93NUMPY")
                header = data[: data.index(b"\n") + 1]
                assert b"'O'" not in header and b"|O" not in header
        # no pickle stream anywhere: a pickle starts with the PROTO opcode 0x80 + protocol
        assert not blob.startswith(b"\x80")
    # diskcache's own Disk would have pickled these; ours refuses anything but bytes
    disk = store._cache.disk
    with pytest.raises(TypeError, match="bytes"):
        disk.store({"a": 1}, False)
    with pytest.raises(TypeError, match="str"):
        disk.put(("tuple", "key"))


class _Planted:
    """Unpickling this would create a file (the test checks that it never does)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_planted_pickle_is_refused_not_executed(store, folder, tmp_path):
    from diskcache import Cache

    marker = tmp_path / "unpickled"
    run_id = new_run_id()
    with Cache(str(folder)) as plain:  # diskcache's default Disk pickles the value
        plain.set(run_id, {"x": _Planted(str(marker))})
        plain.set(new_run_id(), pickle.dumps(1))  # pickled *bytes* are refused as an archive
    with pytest.raises(RunStoreError, match="pickle"):
        store.load(run_id)
    assert not marker.exists()
    with pytest.raises(RunStoreError, match="pickle"):
        reopen(store, run_id)
    assert not marker.exists()


def test_an_archive_with_an_object_array_or_an_unknown_type_is_refused(store):
    import io

    def planted(manifest, array=None):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("manifest.json", json.dumps(manifest))
            if array is not None:
                with archive.open("arrays/0.npy", "w") as handle:
                    np.save(handle, array, allow_pickle=True)
        run_id = new_run_id()
        store._cache.set(run_id, buffer.getvalue())
        return run_id

    base = {"format": "treelab.run/1", "kind": "x", "created": 0.0, "expires": None, "meta": {}}
    objects = planted(
        {
            **base,
            "n_arrays": 1,
            "result": {"__type__": "ndarray", "ref": 0, "offset": 0, "shape": [1]},
        },
        np.array([{"a": 1}], dtype=object),
    )
    with pytest.raises(RunStoreError, match="non-data array"):
        store.load(objects)
    for node in (
        {"__type__": "os:system"},
        {"__type__": "estimator", "class": "subprocess:Popen", "state": {}},
        {"__type__": "ndarray", "ref": 3, "offset": 0, "shape": [1]},
        {"__type__": "ndarray", "ref": 0, "offset": 0, "shape": [1]},  # no buffer 0
        {"__type__": "engine.tree.arrays:TreeArrays", "fields": {"no_such_field": 1}},
    ):
        run_id = planted({**base, "n_arrays": 0, "result": node})
        with pytest.raises(RunStoreError, match="unknown|missing|cannot be rebuilt"):
            store.load(run_id)
    old = planted({**base, "format": "treelab.run/0", "n_arrays": 0, "result": 1})
    with pytest.raises(RunStoreError, match="format"):
        store.load(old)


def test_an_unregistered_type_is_named_where_it_is(store):
    with pytest.raises(RunStoreError, match=r"result\['rows'\]\[1\].*builtins:object"):
        store.save("x", {"rows": [1, object()]})
    assert len(store) == 0


# ---------------------------------------------------------------------------------------
# ids, bounds, expiry, restart
# ---------------------------------------------------------------------------------------


def test_run_ids_are_unguessable_and_checked(store):
    ids = {new_run_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) == 22 for i in ids)
    for bad in (
        "nope",
        "",
        "a" * 23,
        "../../etc/passwd_xxxxxx",
        None,
        42,
        "abc def ghi jkl mno pq",
    ):
        with pytest.raises(InvalidRunId, match="is not a run id"):
            store.load(bad)
        assert bad not in store
    missing = new_run_id()
    with pytest.raises(RunNotFound, match="expired, was evicted"):
        store.load(missing)


def test_the_size_limit_evicts_the_least_recently_used_run(folder):
    chunk = np.random.default_rng(0).random(50_000)  # 400 kB per run
    with RunStore(folder, size_limit=int(1.5 * MiB), expire_seconds=None) as small:
        first, second, third = (small.save("x", {"x": chunk + i}) for i in range(3))
        assert first in small and second in small and third in small
        small.load(first)  # now 'second' is the least recently used
        fourth = small.save("x", {"x": chunk + 3})
        assert small.volume() <= small.size_limit
        assert second not in small
        assert all(r in small for r in (first, third, fourth))
        with pytest.raises(RunNotFound):
            small.load(second)
        assert_same(small.load(first).result["x"], chunk)


def test_a_run_larger_than_the_per_run_limit_is_refused_with_its_size(folder):
    with RunStore(folder, size_limit=8 * MiB, max_run_bytes=MiB) as small:
        with pytest.raises(RunStoreError, match=r"takes 1\.5 MiB.*per run \(1\.0 MiB"):
            small.save("x", np.zeros(200_000))
        assert len(small) == 0
        assert small.limits.max_run_bytes == MiB


def test_runs_expire(folder):
    with RunStore(folder, size_limit=8 * MiB, expire_seconds=0.3) as short:
        run_id = short.save("x", [1, 2, 3])
        assert short.load(run_id).expires == pytest.approx(short.load(run_id).created + 0.3)
        time.sleep(0.5)
        with pytest.raises(RunNotFound):
            short.load(run_id)


def test_limits_come_from_the_environment(monkeypatch, folder):
    monkeypatch.setenv("TREELAB_RUN_STORE", str(folder))
    monkeypatch.setenv("TREELAB_RUN_STORE_SIZE", "64MiB")
    monkeypatch.setenv("TREELAB_RUN_MAX_SIZE", "8MiB")
    monkeypatch.setenv("TREELAB_RUN_EXPIRY_DAYS", "0.5")
    with RunStore() as configured:
        assert configured.directory == folder
        assert (configured.size_limit, configured.max_run_bytes) == (64 * MiB, 8 * MiB)
        assert configured.expire_seconds == 43200.0
        assert configured.limits.describe() == (
            "Runs are kept for 0.5 days; the store holds 64.0 MiB (8.0 MiB per run) and "
            "forgets the least recently opened runs first."
        )
    monkeypatch.setenv("TREELAB_RUN_EXPIRY_DAYS", "soon")
    with pytest.raises(ValueError, match="TREELAB_RUN_EXPIRY_DAYS.*'soon'"):
        limits_from_environment()
    monkeypatch.setenv("TREELAB_RUN_EXPIRY_DAYS", "7")
    monkeypatch.setenv("TREELAB_RUN_STORE_SIZE", "lots")
    with pytest.raises(ValueError, match="TREELAB_RUN_STORE_SIZE"):
        limits_from_environment()


@pytest.mark.slow
def test_a_run_saved_by_another_process_is_read_here(folder):
    """A server restart: the run is written by a separate Python process."""
    code = (
        "import sys, numpy as np\n"
        "from sklearn.datasets import load_iris\n"
        "from sklearn.tree import DecisionTreeClassifier\n"
        "from engine.store import RunStore\n"
        "X, y = load_iris(return_X_y=True)\n"
        "m = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)\n"
        "with RunStore(sys.argv[1], size_limit=2**26) as s:\n"
        "    print(s.save('compare', {'model': m}, meta={'seed': 3}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    run_id = done.stdout.strip().splitlines()[-1]
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_iris(return_X_y=True)
    reference = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    with RunStore(folder, size_limit=2**26) as here:
        run = here.load(run_id)
    assert run.meta == {"seed": 3}
    np.testing.assert_array_equal(run.result["model"].predict_proba(X), reference.predict_proba(X))


def test_the_default_store_reads_the_environment(monkeypatch, folder):
    monkeypatch.setenv("TREELAB_RUN_STORE", str(folder))
    monkeypatch.setattr(store_module, "_default", None)
    first = store_module.default_store()
    assert first is store_module.default_store() and first.directory == folder
    first.close()


def test_bytes_roundtrip_as_data(store):
    """``bytes`` (a page's cache key holds a row's ``tobytes()``) come back equal, stored
    as a uint8 array, not a pickle."""
    row = np.array([5.1, 3.5, np.nan])
    key = ("model", row.tobytes(), b"", 2)
    back = roundtrip(store, "bytes", {"key": key})
    assert back["key"][1] == row.tobytes() and np.array_equal(
        np.frombuffer(back["key"][1]), row, equal_nan=True
    )
    assert back["key"][2] == b""
