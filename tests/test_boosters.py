"""XGBoost and LightGBM models as TreeEnsembles (engine.tree.from_xgboost / from_lightgbm /
load_model_dump), checked against the libraries themselves: the leaves they reach
(``pred_leaf``), their raw margins (``predict(output_margin=True)`` / ``raw_score=True``),
rows on and next to every threshold, NaN and LightGBM's zero band, and TreeGrad's Shapley
values against shap's TreeExplainer."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest

from engine.tree import (
    DumpLimits,
    TreeEnsemble,
    detect_model_dump,
    from_lightgbm,
    from_xgboost,
    load_model_dump,
)
from engine.tree._ubjson import decode_ubjson
from engine.tree.lightgbm_import import ZERO_THRESHOLD
from engine.treegrad import shapley

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
shap = pytest.importorskip("shap")

N_FEATURES = 5


def _data(seed: int = 0, n: int = 800, nan: bool = True):
    """Features with NaN (15 %), exact zeros and ties; binary, 3-class and real targets."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    X[:, 3] = np.round(X[:, 3])  # ties
    X[:, 4] = np.where(rng.random(n) < 0.4, 0.0, X[:, 4])  # exact zeros
    clean = X.copy()
    if nan:
        X[rng.random(X.shape) < 0.15] = np.nan
    z = np.nan_to_num(clean[:, 0]) + clean[:, 1] * clean[:, 2] + 0.5 * clean[:, 3]
    y2 = (z > 0).astype(np.int64)
    y3 = y2 + (clean[:, 4] > 0.2)
    yr = z + 0.3 * rng.normal(size=n)
    return X, clean, y2, y3, yr


def _as_float32_values(X):
    """Rows whose values are float32 numbers (so float64 and float32 readers agree)."""
    return X.astype(np.float32).astype(np.float64)


# ---------------------------------------------------------------------------------------
# XGBoost
# ---------------------------------------------------------------------------------------

_XGB_CASES = {
    "binary": (lambda: xgb.XGBClassifier(n_estimators=25, max_depth=4, n_jobs=1), 2),
    "multiclass": (lambda: xgb.XGBClassifier(n_estimators=12, max_depth=3, n_jobs=1), 3),
    "regression": (lambda: xgb.XGBRegressor(n_estimators=25, max_depth=5, n_jobs=1), 0),
}


def _fit_xgb(case: str, seed: int = 0):
    X, _clean, y2, y3, yr = _data(seed)
    make, k = _XGB_CASES[case]
    y = {2: y2, 3: y3, 0: yr}[k]
    return make().fit(X, y), X


def _xgb_probes(ens: TreeEnsemble, X: np.ndarray) -> np.ndarray:
    """Rows on, just below and just above every split condition (in float32 and float64),
    plus NaN: a ``<`` read as ``<=`` (or a float64 comparison) sends some of them astray."""
    rows = [X]
    rng = np.random.default_rng(1)
    for tree in ens.trees[:6]:
        for node in np.flatnonzero(tree.children_left >= 0):
            c = np.nextafter(
                np.float32(tree.threshold[node]), np.float32(np.inf)
            )  # split_condition
            j = int(tree.feature[node])
            vals = [
                float(c),
                float(np.nextafter(c, np.float32(-np.inf))),
                float(np.nextafter(c, np.float32(np.inf))),
                np.nextafter(float(c), -np.inf),
                np.nextafter(float(c), np.inf),
                float(c) - 2.0**-40 * max(abs(float(c)), 1.0),
            ]
            block = np.repeat(X[rng.integers(0, X.shape[0], size=len(vals))][None], 1, 0)[0]
            block[:, j] = vals
            rows.append(block)
    return np.concatenate(rows)


@pytest.mark.parametrize("case", list(_XGB_CASES))
def test_xgboost_routing_and_margin_are_exact(case):
    """Leaves equal XGBoost's pred_leaf on rows with NaN and on every threshold; the
    float32 sum of the converted leaf values from the converted base equals
    ``predict(output_margin=True)`` bit for bit; ``predict_raw`` (float64) differs only by
    XGBoost's float32 rounding."""
    model, X = _fit_xgb(case)
    ens = from_xgboost(model)
    probes = _xgb_probes(ens, X)
    booster = model.get_booster()
    dm = xgb.DMatrix(probes)
    leaves = booster.predict(dm, pred_leaf=True).reshape(probes.shape[0], -1)
    margin = booster.predict(dm, output_margin=True).reshape(probes.shape[0], -1)
    assert np.isnan(probes).any()
    ours = ens.apply(probes)
    assert np.array_equal(ours, leaves)
    acc = np.tile(ens.base.astype(np.float32), (probes.shape[0], 1))
    for t, (tree, k) in enumerate(zip(ens.trees, ens.tree_output, strict=True)):
        acc[:, k] += tree.value[ours[:, t], 0, 0].astype(np.float32)
    assert np.array_equal(acc, margin)
    raw = ens.predict_raw(probes).reshape(probes.shape[0], -1)
    assert np.max(np.abs(raw - margin)) < 1e-5
    if case != "regression":
        assert np.allclose(ens.predict_proba(probes), model.predict_proba(probes), atol=1e-6)
        assert ens.link == ("logit" if case == "binary" else "softmax")
        assert np.mean(ens.predict(probes) == model.predict(probes)) > 0.999
    else:
        assert np.max(np.abs(ens.predict(probes) - model.predict(probes))) < 1e-5


def test_xgboost_sources_agree():
    """The fitted model, its Booster, the model JSON (text, bytes, dict, file), the UBJSON
    and the get_dump list give the same ensemble."""
    model, X = _fit_xgb("binary")
    booster = model.get_booster()
    raw_json = bytes(booster.save_raw("json"))
    base_score = json.loads(json.loads(raw_json)["learner"]["learner_model_param"]["base_score"])
    expected = from_xgboost(model).predict_raw(X)
    sources = [
        booster,
        raw_json,
        raw_json.decode(),
        json.loads(raw_json),
        bytes(booster.save_raw("ubj")),
    ]
    for src in sources:
        ens = from_xgboost(src)
        assert np.array_equal(ens.predict_raw(X), expected), type(src)
    dump = booster.get_dump(dump_format="json", with_stats=True)
    ens = from_xgboost(dump, objective="binary:logistic", base_score=base_score, n_features=5)
    assert np.array_equal(ens.predict_raw(X), expected)
    assert np.array_equal(
        ens.trees[3].weighted_n_node_samples, from_xgboost(model).trees[3].weighted_n_node_samples
    )
    with pytest.raises(ValueError, match="objective= and base_score="):
        from_xgboost(dump)


def test_xgboost_file_and_detection(tmp_path):
    model, X = _fit_xgb("multiclass")
    expected = from_xgboost(model).predict_raw(X)
    for suffix, fmt in ((".json", "xgboost-json"), (".ubj", "xgboost-ubj")):
        path = tmp_path / f"model{suffix}"
        model.save_model(path)
        data = path.read_bytes()
        assert detect_model_dump(data, path.name)[0] == fmt
        assert np.array_equal(load_model_dump(data, path.name).predict_raw(X), expected)
        assert np.array_equal(from_xgboost(path).predict_raw(X), expected)


def test_xgboost_feature_names_classes_and_early_stopping():
    pd = pytest.importorskip("pandas")
    X, _clean, y2, _y3, _yr = _data(2)
    frame = pd.DataFrame(X, columns=[f"col {j}" for j in range(N_FEATURES)])
    labels = y2  # XGBoost needs 0..k-1 labels
    model = xgb.XGBClassifier(n_estimators=200, max_depth=3, early_stopping_rounds=3, n_jobs=1)
    model.fit(frame[:600], labels[:600], eval_set=[(frame[600:], labels[600:])], verbose=False)
    assert model.best_iteration < 199
    ens = from_xgboost(model)
    assert ens.feature_names == list(frame.columns)
    assert ens.n_trees == model.best_iteration + 1
    assert np.allclose(ens.predict_raw(X), model.predict(frame, output_margin=True), atol=1e-5)
    assert list(ens.classes_) == [0, 1]


def test_xgboost_random_forest_and_logitraw():
    X, _clean, y2, y3, yr = _data(3)
    rf = xgb.XGBRFClassifier(n_estimators=6, max_depth=4, n_jobs=1).fit(X, y3)
    ens = from_xgboost(rf)
    assert ens.n_trees == 18
    margin = rf.predict(X, output_margin=True)
    assert np.max(np.abs(ens.predict_raw(X) - margin)) < 1e-5
    raw = xgb.train(
        {"objective": "binary:logitraw", "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, label=y2), 5
    )
    ens = from_xgboost(raw)
    margin = raw.predict(xgb.DMatrix(X), output_margin=True)
    assert np.max(np.abs(ens.predict_raw(X) - margin)) < 1e-5
    assert ens.task == "classification"


# ---------------------------------------------------------------------------------------
# LightGBM
# ---------------------------------------------------------------------------------------

_LGB_CASES = {
    "binary": (lambda **kw: lgb.LGBMClassifier(n_estimators=25, verbose=-1, n_jobs=1, **kw), 2),
    "multiclass": (lambda **kw: lgb.LGBMClassifier(n_estimators=12, verbose=-1, n_jobs=1, **kw), 3),
    "regression": (lambda **kw: lgb.LGBMRegressor(n_estimators=25, verbose=-1, n_jobs=1, **kw), 0),
}


def _fit_lgb(case: str, nan: bool = True, seed: int = 0, **kw):
    X, clean, y2, y3, yr = _data(seed)
    make, k = _LGB_CASES[case]
    y = {2: y2, 3: y3, 0: yr}[k]
    Xfit = X if nan else clean
    return make(**kw).fit(Xfit, y), X


def _zero_band_values():
    z = ZERO_THRESHOLD
    return [0.0, -0.0, 1e-36, -1e-36, z, -z, np.nextafter(z, 1.0), np.nextafter(-z, -1.0)]


def _lgb_probes(ens: TreeEnsemble, X: np.ndarray) -> np.ndarray:
    """Rows on and next to every threshold, in LightGBM's zero band, and NaN."""
    rows = [X]
    rng = np.random.default_rng(2)
    for tree in ens.trees[:8]:
        for node in np.flatnonzero(tree.children_left >= 0):
            t = float(tree.threshold[node])
            vals = [t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf), *_zero_band_values()]
            block = X[rng.integers(0, X.shape[0], size=len(vals))].copy()
            block[:, int(tree.feature[node])] = vals
            rows.append(block)
    return np.concatenate(rows)


@pytest.mark.parametrize("case", list(_LGB_CASES))
@pytest.mark.parametrize("training", ["nan", "no_nan", "use_missing_false"])
def test_lightgbm_raw_score_is_bit_exact(case, training):
    """missing_type NaN (trained on NaN), None (no NaN in training, or use_missing=False):
    ``predict_raw`` equals ``predict(raw_score=True)`` bit for bit on rows with NaN, on
    every threshold and in the zero band; each tree's leaf value equals LightGBM's leaf."""
    kw = {"use_missing": False} if training == "use_missing_false" else {}
    model, X = _fit_lgb(case, nan=training != "no_nan", **kw)
    ens = from_lightgbm(model)
    probes = _lgb_probes(ens, X)
    raw = model.predict(probes, raw_score=True)
    assert np.array_equal(ens.predict_raw(probes), raw)
    leaves = model.predict(probes, pred_leaf=True)
    dump = model.booster_.dump_model()
    ours = ens.apply(probes)
    for t in range(0, ens.n_trees, 7):
        leaf_values = _lgb_leaf_values(dump["tree_info"][t]["tree_structure"])
        assert np.array_equal(ens.trees[t].value[ours[:, t], 0, 0], leaf_values[leaves[:, t]])
    if case != "regression":
        assert np.allclose(ens.predict_proba(probes), model.predict_proba(probes), atol=1e-12)
        assert np.array_equal(ens.predict(probes), model.predict(probes))


def _lgb_leaf_values(root) -> np.ndarray:
    out = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if "left_child" in node:
            stack += [node["left_child"], node["right_child"]]
        else:
            out[node.get("leaf_index", 0)] = node["leaf_value"]
    return np.array([out[i] for i in range(len(out))])


def _stump_model_string(threshold: float, default_left: bool, missing: str) -> str:
    """A LightGBM model text with one split on feature 0, edited from a trained stump:
    ``decision_type`` bit 1 = default left, bits 2-3 = missing type (0 None, 1 Zero,
    2 NaN); LightGBM then predicts with it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    model = lgb.LGBMRegressor(
        n_estimators=1, num_leaves=2, verbose=-1, min_child_samples=5, n_jobs=1
    )
    text = model.fit(X, X[:, 0]).booster_.model_to_string()
    code = ({"None": 0, "Zero": 1, "NaN": 2}[missing] << 2) | (int(default_left) << 1)
    lines = []
    for line in text.splitlines():
        if line.startswith("threshold="):
            line = f"threshold={threshold!r}"
        elif line.startswith("decision_type="):
            line = f"decision_type={code}"
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("missing", ["None", "NaN", "Zero"])
@pytest.mark.parametrize("default_left", [True, False])
@pytest.mark.parametrize(
    "threshold", [-1.0, -ZERO_THRESHOLD, -1e-36, 0.0, 1e-36, ZERO_THRESHOLD, 0.5]
)
def test_lightgbm_missing_types_and_zero_band(missing, default_left, threshold):
    """Every missing type, default side and threshold position around LightGBM's zero band
    on a hand-edited stump, predicted by LightGBM itself: equal bit for bit, or (zeros sent
    against the threshold under missing_type Zero) refused with a message."""
    booster = lgb.Booster(model_str=_stump_model_string(threshold, default_left, missing))
    values = [np.nan, -2.0, -0.5, 0.25, 1.5, threshold, *_zero_band_values()]
    values += [np.nextafter(threshold, -np.inf), np.nextafter(threshold, np.inf)]
    X = np.column_stack([values, np.zeros(len(values))])
    z = ZERO_THRESHOLD
    routable = (
        missing != "Zero"
        or (default_left and threshold >= -z)
        or (not default_left and threshold < z)
    )
    if not routable:
        with pytest.raises(ValueError, match="zero_as_missing"):
            from_lightgbm(booster)
        return
    ens = from_lightgbm(booster)
    assert np.array_equal(ens.predict_raw(X), booster.predict(X, raw_score=True))


def test_lightgbm_random_forest_mode_averages():
    X, _clean, y2, _y3, yr = _data(4)
    common = {"boosting_type": "rf", "bagging_freq": 1, "bagging_fraction": 0.6, "verbose": -1}
    common["n_jobs"] = 1
    reg = lgb.LGBMRegressor(n_estimators=8, **common).fit(X, yr)
    ens = from_lightgbm(reg)
    assert ens.scale == 1 / 8
    # LightGBM's raw_score is the sum; predict (and the link) use the average
    assert np.max(np.abs(ens.predict_raw(X) * 8 - reg.predict(X, raw_score=True))) < 1e-12
    assert np.max(np.abs(ens.predict(X) - reg.predict(X))) < 1e-12
    clf = lgb.LGBMClassifier(n_estimators=8, **common).fit(X, y2)
    assert np.max(np.abs(from_lightgbm(clf).predict_proba(X) - clf.predict_proba(X))) < 1e-12


@pytest.mark.slow
def test_lightgbm_sources_and_labels(tmp_path):
    pd = pytest.importorskip("pandas")
    X, _clean, _y2, y3, _yr = _data(5)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(N_FEATURES)])
    labels = np.array(["setosa", "versicolor", "virginica"])[y3]
    model = lgb.LGBMClassifier(n_estimators=10, verbose=-1, n_jobs=1).fit(frame, labels)
    ens = from_lightgbm(model)
    assert list(ens.classes_) == list(model.classes_)
    assert ens.feature_names == list(frame.columns)
    assert np.array_equal(ens.predict(X), model.predict(frame))
    dump = model.booster_.dump_model()
    text = json.dumps(dump)
    path = tmp_path / "dump.json"
    path.write_text(text)
    expected = ens.predict_raw(X)
    for src in (model.booster_, dump, text, text.encode(), path):
        assert np.array_equal(from_lightgbm(src).predict_raw(X), expected), type(src)
    assert detect_model_dump(text.encode())[0] == "lightgbm-json"
    assert np.array_equal(load_model_dump(text.encode(), "dump.json").predict_raw(X), expected)


@pytest.mark.slow
def test_converted_ensembles_round_trip_as_json():
    for ens, X in (
        (from_xgboost(_fit_xgb("binary")[0]), _data()[0]),
        (from_lightgbm(_fit_lgb("multiclass")[0]), _data()[0]),
    ):
        back = TreeEnsemble.from_json(ens.to_json())
        assert np.array_equal(back.predict_raw(X), ens.predict_raw(X))
        assert np.array_equal(back.trees[0].missing_go_to_left, ens.trees[0].missing_go_to_left)


# ---------------------------------------------------------------------------------------
# TreeGrad's Shapley values against shap's TreeExplainer (raw margin)
# ---------------------------------------------------------------------------------------


def _shap_values(explainer_values, n_outputs: int, k: int) -> np.ndarray:
    sv = np.asarray(explainer_values)
    if n_outputs == 1:
        return sv if sv.ndim == 2 else sv[..., -1]
    return sv[:, :, k]


@pytest.mark.parametrize("case", list(_LGB_CASES))
def test_treegrad_shapley_equals_shap_on_lightgbm(case):
    """shap's TreeExplainer on LightGBM is LightGBM's own float64 TreeSHAP (pred_contrib):
    TreeGrad-Shap on the converted ensemble equals it to 1e-10 for every class.  The models
    are trained on NaN; the explained rows here have none (NaN rows: the test below)."""
    model, X = _fit_lgb(case)
    rows = _data()[1][:60]
    ens = from_lightgbm(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sv = shap.TreeExplainer(model).shap_values(rows)
    k_out = ens.base.shape[0]
    for k in range(k_out):
        ours = shapley(ens, rows, class_index=k if k_out > 1 else None)
        ref = _shap_values(sv, k_out, k)
        assert np.max(np.abs(ours - ref)) < 1e-10
        assert np.max(np.abs(ref)) > 0.05  # a real explanation, not zeros


@pytest.mark.parametrize("case", list(_XGB_CASES))
def test_treegrad_shapley_equals_shap_on_xgboost(case):
    """For XGBoost, ``TreeExplainer(model).shap_values`` returns XGBoost's own TreeSHAP
    (``pred_contribs``), computed in float32: TreeGrad agrees with it to float32 rounding.
    shap's float64 TreeSHAP on shap's own reading of the model (its XGBTreeModelLoader trees,
    one output at a time) is the 1e-10 oracle."""
    model, X = _fit_xgb(case)
    rows = _as_float32_values(_data()[1][:60])
    ens = from_xgboost(model)
    explainer = shap.TreeExplainer(model)
    sv = explainer.shap_values(rows)
    k_out = ens.base.shape[0]
    for k in range(k_out):
        ours = shapley(ens, rows, class_index=k if k_out > 1 else None)
        assert np.max(np.abs(ours - _shap_values(sv, k_out, k))) < 1e-5
        shap_trees = explainer.model.trees[k::k_out]
        ref = shap.TreeExplainer(shap_trees).shap_values(rows, check_additivity=False)
        assert np.max(np.abs(ours - ref)) < 1e-10
        assert np.max(np.abs(ref)) > 0.05


@pytest.mark.parametrize("case", ["binary", "regression"])
def test_treegrad_follows_the_missing_value_side_on_nan_rows(case):
    """NaN rows take each split's learned side (default_left), as shap's TreeExplainer does."""
    import shap

    model, X = _fit_lgb(case)
    rows = X[:40]
    assert np.isnan(rows).any()
    ens = from_lightgbm(model)
    ours = np.asarray(shapley(ens, rows))
    ref = np.asarray(shap.TreeExplainer(model).shap_values(rows))
    if ref.ndim == 3:  # shap's list per class for a binary LightGBM: the positive class
        ref = ref[-1]
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------------------
# bad and unsupported dumps
# ---------------------------------------------------------------------------------------


def _assert_clean(exc: pytest.ExceptionInfo) -> None:
    text = str(exc.value)
    assert "Traceback" not in text and len(text) < 400, text


def test_refused_formats():
    model, _X = _fit_lgb("binary")
    cases = {
        pickle.dumps({"not": "a model"}): "pickled models are never loaded",
        model.booster_.model_to_string().encode(): "text model format",
        b"": "empty",
        b"\x00\x01garbage": "not a supported model dump",
        b'{"a": 1}': "neither an XGBoost model",
        b'{"learner": ': "not valid JSON",
        json.dumps([{"nodeid": 0, "leaf": 0.5}]).encode(): "get_dump",
        b"{i\x03abc": "UBJSON",
    }
    for data, message in cases.items():
        with pytest.raises(ValueError, match=message) as exc:
            load_model_dump(data, "upload.json")
        _assert_clean(exc)
        # every refusal names the format it expects (the empty file and bad JSON did not)
        assert "save_model(" in str(exc.value) or "dump_model()" in str(exc.value), exc.value
    with pytest.raises(ValueError, match="pickled"):
        load_model_dump(b'{"learner": {}}', "model.pkl")


def test_limits_are_enforced():
    model, _X = _fit_xgb("binary")
    data = bytes(model.get_booster().save_raw("json"))
    for limits, message in (
        (DumpLimits(max_bytes=1000), "more than the limit"),
        (DumpLimits(max_trees=10), "25 trees, more than the limit of 10"),
        (DumpLimits(max_nodes=100), "nodes, more than the limit of 100"),
        (DumpLimits(max_features=3), "reads 5 features"),
    ):
        with pytest.raises(ValueError, match=message) as exc:
            load_model_dump(data, "m.json", limits=limits)
        _assert_clean(exc)
    lgb_dump = json.dumps(_fit_lgb("binary")[0].booster_.dump_model()).encode()
    with pytest.raises(ValueError, match="nodes, more than the limit of 50"):
        load_model_dump(lgb_dump, limits=DumpLimits(max_nodes=50))


@pytest.mark.slow
def test_malformed_dumps_name_the_field():
    model, _X = _fit_xgb("binary")
    good = json.loads(bytes(model.get_booster().save_raw("json")))

    def broken(edit):
        d = json.loads(json.dumps(good))
        edit(d)
        return json.dumps(d).encode()

    trees = lambda d: d["learner"]["gradient_booster"]["model"]["trees"]  # noqa: E731
    cases = [
        (lambda d: d["learner"].pop("learner_model_param"), "learner_model_param"),
        (lambda d: trees(d)[2].pop("split_conditions"), "tree 2 has no 'split_conditions'"),
        (lambda d: trees(d)[1]["left_children"].append(3), "left_children has"),
        (lambda d: trees(d)[0]["split_indices"].__setitem__(0, 99), "feature 99"),
        (lambda d: trees(d)[0]["left_children"].__setitem__(1, 0), "reached twice"),
        (lambda d: trees(d)[0]["split_conditions"].__setitem__(0, "x"), "list of numbers"),
        (lambda d: d["learner"]["objective"].__setitem__("name", "count:poisson"), "poisson"),
        (lambda d: d["learner"]["gradient_booster"].__setitem__("name", "dart"), "'dart'"),
        (lambda d: d["learner"].__setitem__("gradient_booster", 3), "gradient_booster"),
        (lambda d: trees(d)[0].__setitem__("tree_param", []), "tree_param"),
    ]
    for edit, message in cases:
        with pytest.raises(ValueError, match=message) as exc:
            load_model_dump(broken(edit))
        _assert_clean(exc)
    lgb_good = _fit_lgb("binary")[0].booster_.dump_model()
    for edit, message in (
        (lambda d: d.pop("tree_info"), "neither an XGBoost model"),
        (lambda d: d.__setitem__("objective", "poisson"), "poisson"),
        (lambda d: d.__setitem__("objective", "multiclassova num_class:3"), "multiclassova"),
        (lambda d: d["tree_info"][0]["tree_structure"].pop("left_child"), "tree 0"),
        (
            lambda d: d["tree_info"][1]["tree_structure"].__setitem__("split_feature", 9),
            "split_feature 9",
        ),
        (lambda d: d["tree_info"].__setitem__(0, "x"), "malformed|object"),
    ):
        d = json.loads(json.dumps(lgb_good))
        edit(d)
        with pytest.raises(ValueError, match=message) as exc:
            load_model_dump(json.dumps(d).encode())
        _assert_clean(exc)


def test_unsupported_models_are_refused():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"c": pd.Categorical(rng.integers(0, 5, 300)), "x": rng.normal(size=300)})
    y = (frame["c"].cat.codes.to_numpy() % 2 == 0).astype(int)
    xc = xgb.XGBClassifier(n_estimators=3, enable_categorical=True, tree_method="hist", n_jobs=1)
    with pytest.raises(ValueError, match="categorical"):
        from_xgboost(xc.fit(frame, y))
    lc = lgb.LGBMClassifier(n_estimators=3, verbose=-1, min_child_samples=5, n_jobs=1).fit(frame, y)
    with pytest.raises(ValueError, match="categorical"):
        from_lightgbm(lc)
    X = rng.normal(size=(300, 3))
    linear = lgb.LGBMRegressor(n_estimators=3, linear_tree=True, verbose=-1, n_jobs=1).fit(
        X, X[:, 0]
    )
    with pytest.raises(ValueError, match="linear"):
        from_lightgbm(linear)
    multi = xgb.XGBRegressor(n_estimators=2, multi_strategy="multi_output_tree", n_jobs=1)
    with pytest.raises(ValueError, match="multi-output|targets"):
        from_xgboost(multi.fit(X, X[:, :2]))
    with pytest.raises(ValueError, match="zero_as_missing"):
        Xz = np.where(rng.random(X.shape) < 0.5, 0.0, X)
        from_lightgbm(
            lgb.LGBMRegressor(n_estimators=5, zero_as_missing=True, verbose=-1, n_jobs=1).fit(
                Xz, Xz[:, 0] + Xz[:, 1]
            )
        )
    with pytest.raises(TypeError, match="from_xgboost does not support"):
        from_xgboost(3.0)
    with pytest.raises(ValueError, match="not fitted"):
        from_lightgbm(lgb.LGBMClassifier())


def test_ubjson_decoder_is_bounded():
    assert decode_ubjson(b"[$d#i\x02" + np.array([1.5, -2.0], ">f4").tobytes()).tolist() == [
        1.5,
        -2.0,
    ]
    assert decode_ubjson(b"{i\x01aSi\x02hi}") == {"a": "hi"}
    for data, message in (
        (b"[$d#L" + (2**40).to_bytes(8, "big"), "more bytes"),  # huge count, no allocation
        (b"[" * 100 + b"]" * 100, "nested deeper"),
        (b"{i\x01aSi\x05hi}", "more bytes"),
        (b"[i\x01]x", "after the end"),
        (b"[#i\x09i\x01]", "count 9 is larger"),
        (b"Q", "unknown marker"),
    ):
        with pytest.raises(ValueError, match=message):
            decode_ubjson(data)


@pytest.mark.slow
def test_tree_view_draws_converted_trees():
    from engine.figures import tree_figure, tree_text

    ens = from_xgboost(_fit_xgb("binary")[0])
    tree = ens.trees[0]
    fig = tree_figure(tree, highlight_path=tree.decision_path(_data()[1][0]))
    assert fig.layout.title.text
    assert f"{tree.node_count} nodes" in fig.layout.title.text
    text = tree_text(tree)
    assert "<=" in text
    lgb_tree = from_lightgbm(_fit_lgb("regression")[0]).trees[1]
    frame = lgb_tree.to_frame()
    assert frame["n_samples"].iloc[0] == 800  # LightGBM's row counts
    assert lgb_tree.routes_missing


# ---------------------------------------------------------------------------------------
# Compare's registry and TreeGrad's model conversion
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_compare_cross_validates_xgboost_and_lightgbm():
    """The Compare registry's XGBoost and LightGBM entries: fold accuracies equal
    scikit-learn's cross_validate of the same estimators on the same folds; leaves and
    depth are read from the converted trees."""
    from types import SimpleNamespace

    from sklearn.datasets import load_iris
    from sklearn.model_selection import StratifiedKFold, cross_validate

    from engine.compare import REGISTRY, cross_validate_steps, plan_comparison
    from engine.jobs import Job

    X, y = load_iris(return_X_y=True)
    ds = SimpleNamespace(X=np.ascontiguousarray(X), y=y.astype(np.int64), task="classification")
    ds.n_classes = 3
    params = {"xgboost": {"n_estimators": 10}, "lightgbm": {"n_estimators": 10}}
    job = Job(cross_validate_steps, plan_comparison(ds, params, n_splits=3, random_state=4))
    job.start()
    assert job.join(120) and job.status == "done", job.error
    res = job.result
    folds = StratifiedKFold(3, shuffle=True, random_state=4)
    for key in params:
        est = REGISTRY[key].make("classification", 4, **params[key])
        ref = cross_validate(est, X, y, cv=folds, scoring="accuracy")["test_score"]
        rows = res.folds[res.folds["key"] == key]
        np.testing.assert_allclose(rows["accuracy"].to_numpy(), ref)
        ens = (from_xgboost if key == "xgboost" else from_lightgbm)(res.models[key])
        assert (rows["n_leaves"] > 0).all()
        assert ens.predict(X).shape == (150,)


def test_treegrad_explains_library_objects_directly():
    model, _X = _fit_lgb("regression")
    rows = _data()[1][:3]
    assert np.array_equal(shapley(model, rows), shapley(from_lightgbm(model), rows))
    xmodel, _X = _fit_xgb("binary")
    assert np.array_equal(shapley(xmodel, rows), shapley(from_xgboost(xmodel), rows))


# ---------------------------------------------------------------------------------------
# the Feature ranking page trains them
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["xgboost", "lightgbm"])
def test_feature_ranking_page_trains_and_explains_boosters(app, kind):
    """The page trains an XGBoost / LightGBM model and explains it (attributions drawn, no
    error); the caption counts the converted trees (3 classes x 10 rounds for wine)."""
    import json as _json

    app.selectbox(key="ds").set_value("wine").run()
    app.switch_page("pages/feature_ranking.py").run()
    app.selectbox(key="tg_kind").set_value(kind).run()
    app.number_input(key="tg_trees").set_value(10).run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    charts = [_json.loads(c.proto.spec) for c in app.get("plotly_chart")]
    bars = [f for f in charts if "Attributions" in f["layout"]["title"]["text"]]
    assert bars, [f["layout"]["title"]["text"] for f in charts]
    caption = " ".join(c.value for c in app.caption)
    assert "30 tree(s)" in caption, caption


@pytest.mark.slow
def test_feature_ranking_page_explains_an_uploaded_dump(app):
    """An XGBoost model JSON uploaded on the page is explained (the caption counts its
    trees and names the file); a dump for other columns and a pickle get messages."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    model = xgb.XGBClassifier(n_estimators=4, max_depth=2, n_jobs=1).fit(X, y)
    good = bytes(model.get_booster().save_raw("json"))
    narrow = bytes(
        xgb.XGBClassifier(n_estimators=2, n_jobs=1).fit(X[:, :2], y).get_booster().save_raw("json")
    )
    app.selectbox(key="ds").set_value("iris").run()
    app.switch_page("pages/feature_ranking.py").run()
    app.radio(key="tg_source").set_value("upload").run()
    assert not app.exception, app.exception
    assert any("save_model" in i.value for i in app.info)
    uploader = app.file_uploader(key="model_dump_upload")
    uploader.set_value(("iris_xgb.json", good, "application/json")).run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    caption = " ".join(c.value for c in app.caption)
    assert "12 tree(s)" in caption and "iris_xgb.json" in caption, caption
    app.file_uploader(key="model_dump_upload").set_value(
        ("narrow.json", narrow, "application/json")
    ).run()
    assert any("expects 2 features but the dataset has 4" in e.value for e in app.error)
    app.file_uploader(key="model_dump_upload").set_value(
        ("model.json", pickle.dumps({"a": 1}), "application/json")
    ).run()
    assert not app.exception, app.exception
    assert any("pickled models are never loaded" in e.value for e in app.error)
