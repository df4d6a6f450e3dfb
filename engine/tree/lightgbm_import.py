"""LightGBM models as :class:`~engine.tree.TreeEnsemble` (:func:`from_lightgbm`), read from
``Booster.dump_model()``'s JSON, never from a pickle.

Semantics reproduced exactly (LightGBM 3/4, ``include/LightGBM/tree.h``
``NumericalDecision`` and the row readers of ``src/c_api.cpp``):

* Feature values are doubles.  A value with ``|x| <= kZeroThreshold`` (the float32 1e-35)
  is read as 0 - the readers keep only values above it, or NaN, the rest are zeros.  A
  split with ``decision_type '<='`` sends ``x`` left when ``x <= threshold`` (double).
  Because the zero band is an interval around 0, one adjusted double threshold gives the
  same half-line, so no row changes side.
* ``missing_type 'NaN'``: NaN goes to the ``default_left`` side.  ``'None'``: NaN is read as
  0, so it goes where 0 goes.  ``'Zero'`` (``zero_as_missing=True``): NaN and the zero band
  go to the ``default_left`` side; when that side is the one 0 takes anyway (or the
  threshold sits inside the band) a threshold reproduces it, otherwise the split cannot be
  routed by a threshold and the model is refused.
* The raw score is the sum of the leaf values of the trees of each class in tree order
  (tree ``t`` adds to class ``t % num_tree_per_iteration``); the initial score and the
  learning rate are already in the leaf values, so ``base = 0`` and ``scale = 1`` and
  :meth:`TreeEnsemble.predict_raw` adds the same doubles in the same order as
  ``predict(raw_score=True)``: equal bit for bit.  ``average_output`` models (random-forest
  mode) divide by the number of rounds (``scale = 1 / rounds``, equal to rounding).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from engine.tree._dump_checks import (
    DEFAULT_LIMITS,
    DumpLimits,
    booster_classes,
    check_counts,
    check_n_features,
    check_size,
    cover_weighted_means,
    field,
    malformed,
    parse_json,
    read_bounded,
)
from engine.tree.arrays import TREE_LEAF, TREE_UNDEFINED, TreeArrays
from engine.tree.ensemble import TreeEnsemble

#: LightGBM's ``kZeroThreshold`` (``1e-35f``) as the double its readers compare with.
ZERO_THRESHOLD = float(np.float32(1e-35))
_BELOW_ZERO_BAND = float(np.nextafter(-ZERO_THRESHOLD, -np.inf))
_LIB = "LightGBM"

_REGRESSION = {
    "regression",
    "regression_l2",
    "l2",
    "mean_squared_error",
    "mse",
    "l2_root",
    "root_mean_squared_error",
    "rmse",
    "regression_l1",
    "l1",
    "mean_absolute_error",
    "mae",
    "huber",
    "fair",
    "quantile",
    "mape",
    "mean_absolute_percentage_error",
    "lambdarank",
    "rank_xendcg",
}


def _objective(text: Any, num_class: int) -> tuple[str, str, int]:
    """``(task, link, n_outputs)`` from a dump's ``objective`` string such as
    ``'binary sigmoid:1'`` or ``'multiclass num_class:3'``."""
    parts = str(text).split()
    name = parts[0] if parts else ""
    params = dict(p.split(":", 1) for p in parts[1:] if ":" in p)
    if name in _REGRESSION:
        return "regression", "identity", 1
    if name == "binary":
        sigmoid = float(params.get("sigmoid", 1))
        if sigmoid not in (1.0, 2.0):
            raise ValueError(
                f"LightGBM binary objective with sigmoid:{params['sigmoid']} is not "
                "supported (TreeLab's links are expit(raw) and expit(2 raw)): train with "
                "sigmoid=1"
            )
        return "classification", "logit" if sigmoid == 1.0 else "half_logit", 1
    if name in ("multiclass", "softmax"):
        if num_class < 2:
            raise ValueError(f"LightGBM multiclass objective with num_class = {num_class}")
        return "classification", "softmax", num_class
    raise ValueError(
        f"LightGBM objective {name!r} is not supported: its predictions are not the raw "
        "score, its sigmoid or its softmax (supported: regression objectives, lambdarank, "
        "binary, multiclass)"
    )


def _routing(threshold: float, default_left: bool, missing_type: str, where: str):
    """``(threshold, missing_go_to_left)`` reproducing LightGBM's ``NumericalDecision``
    for float64 rows (see the module docstring)."""
    z = ZERO_THRESHOLD
    if missing_type == "Zero":
        # zeros (|x| <= z) and NaN go to the default side
        if default_left and threshold >= -z:
            return max(threshold, z), True
        if not default_left and threshold < z:
            return min(threshold, _BELOW_ZERO_BAND), False
        raise ValueError(
            f"{where} uses missing_type 'Zero' (zero_as_missing=True) and sends zeros to the "
            "other side of the threshold than 0 would go: a threshold split cannot route "
            "that; train with zero_as_missing=False"
        )
    if missing_type not in ("None", "NaN"):
        raise ValueError(f"{where} has an unknown missing_type {missing_type!r}")
    # the zero band is read as 0: move a threshold inside it to the band's edge
    if -z <= threshold < 0.0:
        threshold = _BELOW_ZERO_BAND
    elif 0.0 <= threshold < z:
        threshold = z
    if missing_type == "NaN":
        return threshold, bool(default_left)
    return threshold, 0.0 <= threshold  # NaN is read as 0


def _tree(info: Any, t: int, n_features: int, names, limits: DumpLimits, seen: list[int]):
    """One ``tree_info`` entry as TreeArrays (nodes numbered depth-first, left first)."""
    where = f"LightGBM tree {t}"
    if int(info.get("num_cat", 0) or 0) > 0:
        raise ValueError(
            f"{where} has categorical splits: not supported; encode the categories as "
            "numbers (or one-hot) and retrain without categorical_feature"
        )
    root = field(info, "tree_structure", where)
    left, right, feat, thr, mgl, count, value = [], [], [], [], [], [], []
    stack = [(root, -1, False)]
    while stack:
        node, parent, is_right = stack.pop()
        i = len(left)
        seen[0] += 1
        if seen[0] > limits.max_nodes:
            check_counts(1, seen[0], limits, _LIB)
        if not isinstance(node, dict):
            raise ValueError(f"{where}: a node is {type(node).__name__}, not an object")
        if parent >= 0:
            (right if is_right else left)[parent] = i
        left.append(-1)
        right.append(-1)
        if "split_index" in node or "left_child" in node:
            here = f"{where} node {node.get('split_index', i)}"
            decision = node.get("decision_type", "<=")
            if decision != "<=":
                raise ValueError(f"{here} is a {decision!r} (categorical) split: not supported")
            th = field(node, "threshold", here)
            if isinstance(th, bool) or not isinstance(th, (int, float)):
                raise ValueError(f"{here}: threshold {th!r} is not a number")
            j = field(node, "split_feature", here)
            if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < n_features:
                raise ValueError(f"{here}: split_feature {j!r} is not a feature index")
            th, go_left = _routing(
                float(th),
                bool(node.get("default_left", True)),
                str(node.get("missing_type", "None")),
                here,
            )
            feat.append(j)
            thr.append(th)
            mgl.append(int(go_left))
            count.append(node.get("internal_count", 0))
            value.append(0.0)
            stack.append((field(node, "right_child", here), i, True))
            stack.append((field(node, "left_child", here), i, False))
        else:
            here = f"{where} leaf {node.get('leaf_index', i)}"
            if node.get("leaf_features"):
                raise ValueError(
                    f"{here} is a linear leaf (linear_tree=True): not supported; train "
                    "with linear_tree=False"
                )
            v = node["leaf_const"] if "leaf_const" in node else field(node, "leaf_value", here)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise ValueError(f"{here}: leaf_value {v!r} is not a finite number")
            feat.append(TREE_UNDEFINED)
            thr.append(float(TREE_UNDEFINED))
            mgl.append(0)
            count.append(node.get("leaf_count", 0))
            value.append(float(v))
    left_a = np.asarray(left, dtype=np.int64)
    right_a = np.asarray(right, dtype=np.int64)
    try:
        counts = np.asarray(count, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: internal_count/leaf_count must be numbers") from None
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise ValueError(f"{where}: a row count is negative or not finite")
    value_a = cover_weighted_means(left_a, right_a, counts, np.asarray(value))
    leaf = left_a < 0
    return TreeArrays(
        np.where(leaf, TREE_LEAF, left_a),
        np.where(leaf, TREE_LEAF, right_a),
        np.asarray(feat, dtype=np.int64),
        np.asarray(thr, dtype=np.float64),
        np.full(left_a.shape[0], np.nan),  # LightGBM keeps gains, not node impurities
        np.round(counts).astype(np.int64),
        counts,
        value_a.reshape(-1, 1, 1),
        task="regression",
        n_features=n_features,
        feature_names=names,
        missing_go_to_left=np.asarray(mgl, dtype=np.uint8),
    )


def _from_dump(d: Any, limits: DumpLimits, feature_names, classes) -> TreeEnsemble:
    """:func:`_read_dump` with odd structures reported as ``ValueError``."""
    with malformed(_LIB):
        return _read_dump(d, limits, feature_names, classes)


def _read_dump(d: Any, limits: DumpLimits, feature_names, classes) -> TreeEnsemble:
    """A decoded ``dump_model()`` dict."""
    where = "the LightGBM dump"
    name = field(d, "name", where)
    if name != "tree":
        raise ValueError(f"the LightGBM dump is a {name!r} model; only 'tree' models are")
    n_features = check_n_features(int(field(d, "max_feature_idx", where)) + 1, limits, _LIB)
    num_class = int(d.get("num_class", 1) or 1)
    per_round = int(d.get("num_tree_per_iteration", 1) or 1)
    task, link, n_outputs = _objective(field(d, "objective", where), num_class)
    if per_round != n_outputs:
        raise ValueError(
            f"the LightGBM dump grows {per_round} trees per round for {n_outputs} outputs"
        )
    infos = field(d, "tree_info", where)
    if not isinstance(infos, list):
        raise ValueError("the LightGBM dump's 'tree_info' must be a list")
    check_counts(len(infos), 0, limits, _LIB)
    if len(infos) % per_round:
        raise ValueError(
            f"the LightGBM dump has {len(infos)} trees, not a multiple of its "
            f"{per_round} trees per round"
        )
    names = feature_names if feature_names is not None else d.get("feature_names")
    if names is not None:
        names = [str(s) for s in names] or None
        if names is not None and len(names) != n_features:
            raise ValueError(f"{len(names)} feature names for {n_features} features")
    seen = [0]
    trees = [_tree(info, t, n_features, names, limits, seen) for t, info in enumerate(infos)]
    check_counts(len(trees), seen[0], limits, _LIB)
    rounds = len(trees) // per_round
    scale = 1.0 / rounds if d.get("average_output") else 1.0
    classes = booster_classes(task, n_outputs, classes)
    return TreeEnsemble(
        trees=trees,
        tree_output=np.arange(len(trees), dtype=np.int64) % per_round,
        scale=scale,
        base=np.zeros(n_outputs),
        kind="boosting",
        task=task,
        classes_=classes,
        feature_names=names,
        link=link,
    )


def from_lightgbm(
    model: Any,
    *,
    feature_names: list[str] | None = None,
    limits: DumpLimits = DEFAULT_LIMITS,
) -> TreeEnsemble:
    """Convert a LightGBM model into a boosting :class:`~engine.tree.TreeEnsemble`.

    Parameters
    ----------
    model : LGBMClassifier, LGBMRegressor, LGBMRanker, Booster, dict, bytes, str or Path
        A fitted scikit-learn-style model or ``Booster`` (converted through its
        ``dump_model()``, which keeps the rounds up to the best iteration of early
        stopping, as ``predict`` does); the dict ``dump_model()`` returns, or that dict as
        JSON text/bytes (``json.dumps(booster.dump_model())``) or a ``Path`` to such a file.
        Never a pickle (and not the ``model.txt`` text format).
    feature_names : list of str, optional
        Names of the features (default: the dump's ``feature_names``).
    limits : DumpLimits
        Bounds on the size, trees, nodes and features of the model.

    Returns
    -------
    TreeEnsemble
        ``kind='boosting'``, ``base = 0``, ``scale = 1`` (``1 / rounds`` for
        ``average_output``), one regression tree per LightGBM tree, ``tree_output`` =
        ``t % num_tree_per_iteration``.  ``binary`` -> classification with link 'logit'
        ('half_logit' for sigmoid:2; ``classes_`` 0 and 1, or the model's); ``multiclass``
        -> 'softmax'; regression objectives and ``lambdarank`` -> regression.  Trees are
        numbered depth-first (left child first) and hold ``threshold`` and
        ``missing_go_to_left`` as in the module docstring (double comparisons,
        ``float32_inputs=False``), ``n_node_samples`` and ``weighted_n_node_samples`` =
        the row counts ``internal_count``/``leaf_count`` (what LightGBM's and shap's
        TreeSHAP weigh paths by; 0 for a single-leaf tree, which has none),
        ``impurity`` = NaN, ``value`` = leaf values and count-weighted means of them at
        internal nodes.  ``predict_raw`` equals ``predict(raw_score=True)`` bit for bit.

    Raises
    ------
    ValueError
        The dump is larger than the limits, not valid JSON or not a LightGBM dump (the
        message names the missing or malformed field), or the model is unsupported:
        categorical splits, linear trees, ``zero_as_missing`` splits a threshold cannot
        route, objectives whose prediction is not the raw score, its sigmoid or softmax
        (``poisson``, ``multiclassova``, ``cross_entropy``...).
    TypeError
        ``model`` is none of the accepted types.
    """
    classes = None
    if type(model).__module__.split(".")[0] == "lightgbm":
        booster = getattr(model, "booster_", None) if not hasattr(model, "dump_model") else model
        if booster is None:
            try:
                booster = model.booster_  # raises LightGBM's "not fitted" error
            except Exception as exc:
                raise ValueError(f"{type(model).__name__} is not fitted: {exc}") from None
        if hasattr(model, "classes_") and not hasattr(model, "dump_model"):
            classes = np.asarray(model.classes_)
        if feature_names is None and getattr(model, "feature_names_in_", None) is not None:
            feature_names = [str(s) for s in model.feature_names_in_]
        return _from_dump(booster.dump_model(), limits, feature_names, classes)
    if isinstance(model, Path):
        model = read_bounded(model, limits)
    if isinstance(model, (bytes, bytearray, memoryview, str)):
        data = bytes(model) if not isinstance(model, str) else model
        check_size(data, limits, "LightGBM dump")
        model = parse_json(data, "LightGBM dump")
    if isinstance(model, dict):
        return _from_dump(model, limits, feature_names, classes)
    raise TypeError(
        f"from_lightgbm does not support {type(model).__name__}: pass a fitted LightGBM "
        "model, a Booster, or its dump_model() dict / JSON"
    )
