"""XGBoost models as :class:`~engine.tree.TreeEnsemble` (:func:`from_xgboost`), read from the
model's JSON (or UBJSON) dump, never from a pickle.

Semantics reproduced exactly (XGBoost >= 1.0, ``gbtree`` booster, ``src/tree/`` and
``src/predictor/cpu_predictor.cc``):

* XGBoost casts every feature value to float32 and sends it to the ``yes`` (left) child when
  ``float32(x) < split_condition`` (strict).  The converted node keeps ``x <= threshold``
  with ``threshold`` the next float32 below ``split_condition`` and ``float32_inputs=True``
  (see :func:`~engine.tree.float32_routing_threshold`): for every float64 ``x``,
  ``float32(x) <= nextafter32(c, -inf)`` iff ``float32(x) < c``, so routing is bit-exact.
* A missing value (NaN) goes to the ``missing`` child: ``missing_go_to_left`` is XGBoost's
  ``default_left``.
* The raw margin is ``base_margin + sum of the leaf values`` of the trees of each output
  (``tree_info`` gives the class of each tree; multiclass models grow one tree per class per
  round, random-forest style models several per class).  ``base_margin`` is ``base_score``
  mapped to the margin the way the objective does (``logit`` for ``binary:logistic``,
  computed in float32 as XGBoost does; the identity otherwise).  XGBoost adds the terms in
  float32; :meth:`TreeEnsemble.predict_raw` adds the same float32 values in float64, so it
  differs from ``predict(output_margin=True)`` only by XGBoost's own float32 rounding
  (about 1e-7 relative), while the leaves reached are the same.
"""

from __future__ import annotations

import re
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
    number_array,
    parse_json,
    reachable_order,
    read_bounded,
)
from engine.tree.arrays import TREE_LEAF, TREE_UNDEFINED, TreeArrays
from engine.tree.ensemble import TreeEnsemble

# objective -> (task, link of TreeEnsemble, how base_score becomes the base margin)
_OBJECTIVES = {
    "reg:squarederror": ("regression", "identity", "identity"),
    "reg:linear": ("regression", "identity", "identity"),
    "reg:squaredlogerror": ("regression", "identity", "identity"),
    "reg:absoluteerror": ("regression", "identity", "identity"),
    "reg:pseudohubererror": ("regression", "identity", "identity"),
    "reg:quantileerror": ("regression", "identity", "identity"),
    "rank:pairwise": ("regression", "identity", "identity"),
    "rank:ndcg": ("regression", "identity", "identity"),
    "rank:map": ("regression", "identity", "identity"),
    "binary:logistic": ("classification", "logit", "logit"),
    "binary:logitraw": ("classification", "logit", "identity"),
    "multi:softprob": ("classification", "softmax", "identity"),
    "multi:softmax": ("classification", "softmax", "identity"),
}
_SUPPORTED = ", ".join(sorted(_OBJECTIVES))
_LIB = "XGBoost"


def _objective(name: Any) -> tuple[str, str, str]:
    if name not in _OBJECTIVES:
        raise ValueError(
            f"XGBoost objective {name!r} is not supported: its predictions are not the "
            f"margin, its logistic or its softmax (supported: {_SUPPORTED})"
        )
    return _OBJECTIVES[name]


def _base_margin(base_score: Any, transform: str, n_outputs: int) -> np.ndarray:
    """float64 ``(n_outputs,)``: the margin XGBoost starts every row from."""
    if isinstance(base_score, str):
        text = base_score.strip()
        try:
            values = [float(v) for v in text.strip("[]").split(",")] if text else []
        except ValueError:
            raise ValueError(f"XGBoost base_score {base_score!r} is not a number") from None
    else:
        values = np.atleast_1d(np.asarray(base_score, dtype=np.float64)).tolist()
    if len(values) == 1:
        values = values * n_outputs
    if len(values) != n_outputs:
        raise ValueError(
            f"XGBoost base_score has {len(values)} values for a model with {n_outputs} outputs"
        )
    b = np.asarray(values, dtype=np.float32)
    if not np.all(np.isfinite(b)):
        raise ValueError(f"XGBoost base_score {values} is not finite")
    if transform == "logit":
        if np.any((b <= 0) | (b >= 1)):
            raise ValueError(
                f"XGBoost base_score {values} of a logistic objective must be in (0, 1)"
            )
        one = np.float32(1.0)
        with np.errstate(all="ignore"):
            b = (-np.log(one / b - one)).astype(np.float32)  # ProbToMargin, in float32
    return b.astype(np.float64)


def _prev_float32(c: np.ndarray) -> np.ndarray:
    """The largest float32 strictly below each float32 ``c`` (as float64)."""
    c32 = np.asarray(c, dtype=np.float32)
    return np.nextafter(c32, np.float32(-np.inf)).astype(np.float64)


def _tree_arrays(
    left,
    right,
    feature,
    condition,
    default_left,
    cover,
    n_features: int,
    feature_names: list[str] | None,
    where: str,
) -> TreeArrays:
    """One XGBoost tree (node arrays in XGBoost's numbering, -1 at leaves) as TreeArrays."""
    n = left.shape[0]
    order = reachable_order(left, right, where)
    if order.size != n:  # deleted nodes (pruned by a refresh/prune updater): renumber
        keep = np.sort(order)
        new = np.full(n, -1, dtype=np.int64)
        new[keep] = np.arange(keep.size)
        left = np.where(left[keep] >= 0, new[np.maximum(left[keep], 0)], -1)
        right = np.where(right[keep] >= 0, new[np.maximum(right[keep], 0)], -1)
        feature, condition = feature[keep], condition[keep]
        default_left, cover = default_left[keep], cover[keep]
    leaf = left < 0
    internal = ~leaf
    if np.any(right[leaf] >= 0) or np.any(right[internal] < 0):
        raise ValueError(f"{where}: a node has only one child")
    f = feature[internal]
    bad = f[(f < 0) | (f >= n_features)]
    if bad.size:
        raise ValueError(
            f"{where}: a split reads feature {int(bad[0])}, outside the model's "
            f"{n_features} features"
        )
    cond = np.asarray(condition, dtype=np.float32)
    if not np.all(np.isfinite(cond[leaf])):
        raise ValueError(f"{where}: a leaf value is not finite")
    if np.any(np.isnan(cond[internal])):
        raise ValueError(f"{where}: a split condition is NaN")
    cover = np.asarray(cover, dtype=np.float64)
    if not np.all(np.isfinite(cover)) or np.any(cover < 0):
        raise ValueError(f"{where}: a cover (sum of hessians) is negative or not finite")
    leaf_value = np.where(leaf, cond.astype(np.float64), 0.0)
    value = cover_weighted_means(left, right, cover, leaf_value)
    return TreeArrays(
        np.where(leaf, TREE_LEAF, left),
        np.where(leaf, TREE_LEAF, right),
        np.where(leaf, TREE_UNDEFINED, feature),
        np.where(leaf, float(TREE_UNDEFINED), _prev_float32(cond)),
        np.full(left.shape[0], np.nan),  # XGBoost keeps gains, not node impurities
        np.zeros(left.shape[0], dtype=np.int64),  # no row counts in XGBoost models
        cover,
        value.reshape(-1, 1, 1),
        task="regression",
        n_features=n_features,
        feature_names=feature_names,
        float32_inputs=True,
        missing_go_to_left=np.where(leaf, 0, default_left != 0).astype(np.uint8),
    )


def _check_names(names: Any, n_features: int, where: str) -> list[str] | None:
    if names is None:
        return None
    names = [str(s) for s in names]
    if not names:
        return None
    if len(names) != n_features:
        raise ValueError(f"{where} has {len(names)} feature names for {n_features} features")
    return names


def _read_model_json(
    d: Any, limits: DumpLimits, feature_names: list[str] | None, classes: Any
) -> TreeEnsemble:
    """An XGBoost model JSON (``save_model('m.json')`` / ``save_raw('json')``, decoded)."""
    learner = field(d, "learner", "the XGBoost model")
    booster = field(learner, "gradient_booster", "learner")
    name = field(booster, "name", "gradient_booster")
    if name != "gbtree":
        raise ValueError(
            f"XGBoost booster {name!r} is not supported: only 'gbtree' models are trees "
            "added up (dart scales trees by dropout weights, gblinear has no trees)"
        )
    params = field(learner, "learner_model_param", "learner")
    objective = field(field(learner, "objective", "learner"), "name", "learner objective")
    task, link, transform = _objective(objective)
    n_features = check_n_features(field(params, "num_feature", "learner_model_param"), limits, _LIB)
    n_targets = int(params.get("num_target", 1) or 1)
    if n_targets != 1:
        raise ValueError(
            f"the XGBoost model has {n_targets} targets: multi-output models are not supported"
        )
    num_class = int(params.get("num_class", 0) or 0)
    n_outputs = num_class if task == "classification" and num_class > 1 else 1
    if (link == "softmax") != (n_outputs > 1):
        raise ValueError(
            f"XGBoost objective {objective!r} does not agree with num_class = {num_class}"
        )
    base = _base_margin(field(params, "base_score", "learner_model_param"), transform, n_outputs)
    model = field(booster, "model", "gradient_booster")
    trees_json = field(model, "trees", "the gbtree model")
    if not isinstance(trees_json, list):
        raise ValueError("the gbtree model's 'trees' must be a list")
    tree_info = number_array(
        field(model, "tree_info", "the gbtree model"), np.int64, "tree_info", len(trees_json)
    )
    if tree_info.size and (tree_info.min() < 0 or tree_info.max() >= n_outputs):
        raise ValueError(f"tree_info names an output outside [0, {n_outputs})")
    names = feature_names if feature_names is not None else learner.get("feature_names")
    names = _check_names(names, n_features, "the XGBoost model")
    sizes = []
    for t, tree in enumerate(trees_json):
        tp = field(tree, "tree_param", f"XGBoost tree {t}")
        num_nodes = field(tp, "num_nodes", f"tree_param of XGBoost tree {t}")
        try:
            sizes.append(int(num_nodes))
        except (TypeError, ValueError):
            raise ValueError(f"XGBoost tree {t}: num_nodes is not an integer") from None
    check_counts(len(trees_json), sum(sizes), limits, _LIB)
    trees = []
    for t, (tree, n) in enumerate(zip(trees_json, sizes, strict=True)):
        where = f"XGBoost tree {t}"
        leaf_vector = int(tree["tree_param"].get("size_leaf_vector", 1) or 1)
        if leaf_vector > 1:
            raise ValueError(f"{where} has vector leaves (multi-output trees): not supported")
        left = number_array(field(tree, "left_children", where), np.int64, "left_children", n)
        right = number_array(field(tree, "right_children", where), np.int64, "right_children", n)
        split_type = tree.get("split_type")
        if split_type is not None:
            st = number_array(split_type, np.int64, "split_type", n)
            bad = np.flatnonzero((st != 0) & (left >= 0))
            if bad.size:
                raise ValueError(
                    f"{where} node {int(bad[0])} is a categorical split: not supported; "
                    "one-hot encode the feature or train without enable_categorical"
                )
        trees.append(
            _tree_arrays(
                left,
                right,
                number_array(field(tree, "split_indices", where), np.int64, "split_indices", n),
                number_array(
                    field(tree, "split_conditions", where), np.float32, "split_conditions", n
                ),
                number_array(field(tree, "default_left", where), np.int64, "default_left", n),
                number_array(field(tree, "sum_hessian", where), np.float32, "sum_hessian", n),
                n_features,
                names,
                where,
            )
        )
    return _ensemble(trees, tree_info, base, task, link, n_outputs, names, classes)


def _ensemble(trees, tree_info, base, task, link, n_outputs, names, classes) -> TreeEnsemble:
    classes = booster_classes(task, n_outputs, classes)
    return TreeEnsemble(
        trees=trees,
        tree_output=tree_info,
        scale=1.0,
        base=base,
        kind="boosting",
        task=task,
        classes_=classes,
        feature_names=names,
        link=link,
    )


def _from_model_json(d, limits, feature_names, classes) -> TreeEnsemble:
    """:func:`_read_model_json` with odd structures reported as ``ValueError``."""
    with malformed(_LIB):
        return _read_model_json(d, limits, feature_names, classes)


def _from_get_dump(dump, limits, feature_names, classes, *params) -> TreeEnsemble:
    """:func:`_read_get_dump` with odd structures reported as ``ValueError``."""
    with malformed(_LIB):
        return _read_get_dump(dump, limits, feature_names, classes, *params)


_FEATURE_RE = re.compile(r"f(\d+)")


def _read_get_dump(
    dump: list,
    limits: DumpLimits,
    feature_names: list[str] | None,
    classes: Any,
    base_score: Any,
    objective: str | None,
    num_class: int | None,
    n_features: int | None,
) -> TreeEnsemble:
    """The list of ``Booster.get_dump(dump_format='json', with_stats=True)`` (one JSON text
    or dict per tree).  The list has no objective or base score: both must be given."""
    if base_score is None or objective is None:
        raise ValueError(
            "a get_dump() tree list carries no objective or base_score: pass objective= and "
            "base_score= (as in the training parameters), or use the model JSON from "
            "save_model('model.json') / save_raw('json'), which has both"
        )
    task, link, transform = _objective(objective)
    k = int(num_class or 0)
    n_outputs = k if link == "softmax" else 1
    if link == "softmax" and k < 2:
        raise ValueError(f"objective {objective!r} needs num_class >= 2")
    check_counts(len(dump), 0, limits, _LIB)
    parsed = []
    for t, tree in enumerate(dump):
        if isinstance(tree, (str, bytes)):
            tree = parse_json(tree, f"XGBoost tree {t} of the dump")
        parsed.append(tree)
    names = None if feature_names is None else [str(s) for s in feature_names]
    index = {s: j for j, s in enumerate(names)} if names else {}
    raw_trees = []
    total = 0
    max_feature = -1
    for t, root in enumerate(parsed):
        where = f"XGBoost tree {t} of the dump"
        nodes: dict[int, dict] = {}
        stack = [root]
        while stack:
            node = stack.pop()
            nid = field(node, "nodeid", where)
            if not isinstance(nid, int) or nid < 0 or nid in nodes:
                raise ValueError(f"{where}: nodeid {nid!r} is invalid or repeated")
            nodes[nid] = node
            total += 1
            if total > limits.max_nodes:
                check_counts(len(parsed), total, limits, _LIB)
            kids = node.get("children")
            if kids is not None:
                if not isinstance(kids, list) or len(kids) != 2:
                    raise ValueError(f"{where}: node {nid} must have two children")
                stack.extend(kids)
        n = max(nodes) + 1
        if len(nodes) != n or 0 not in nodes:
            raise ValueError(f"{where}: node ids are not 0..{len(nodes) - 1}")
        left = np.full(n, -1, dtype=np.int64)
        right = np.full(n, -1, dtype=np.int64)
        feat = np.zeros(n, dtype=np.int64)
        cond = np.zeros(n, dtype=np.float64)
        dleft = np.zeros(n, dtype=np.int64)
        cover = np.zeros(n, dtype=np.float32)  # XGBoost stores float32 covers
        for nid, node in nodes.items():
            if "cover" not in node:
                raise ValueError(
                    f"{where}: node {nid} has no cover: dump with "
                    "get_dump(dump_format='json', with_stats=True)"
                )
            cover[nid] = node["cover"]
            if "children" not in node:
                cond[nid] = field(node, "leaf", f"{where} node {nid}")
                continue
            if "split_condition" not in node:
                raise ValueError(
                    f"{where}: node {nid} has no split_condition (a categorical split?): "
                    "not supported"
                )
            yes, no = field(node, "yes", where), field(node, "no", where)
            missing = node.get("missing", yes)
            kid_ids = {c.get("nodeid") for c in node["children"]}
            if {yes, no} != kid_ids or missing not in (yes, no):
                raise ValueError(f"{where}: node {nid}'s yes/no/missing are not its children")
            left[nid], right[nid] = yes, no
            dleft[nid] = int(missing == yes)
            cond[nid] = node["split_condition"]
            split = str(field(node, "split", where))
            if split in index:
                feat[nid] = index[split]
            elif _FEATURE_RE.fullmatch(split):
                feat[nid] = int(split[1:])
            else:
                raise ValueError(
                    f"{where}: node {nid} splits on {split!r}, which is not a feature name: "
                    "pass feature_names= with the model's names"
                )
            max_feature = max(max_feature, int(feat[nid]))
        raw_trees.append((left, right, feat, cond, dleft, cover))
    if n_features is None:
        n_features = len(names) if names else max_feature + 1
    n_features = check_n_features(n_features, limits, _LIB)
    names = _check_names(names, n_features, "feature_names")
    trees = [
        _tree_arrays(*arrays, n_features, names, f"XGBoost tree {t} of the dump")
        for t, arrays in enumerate(raw_trees)
    ]
    tree_info = np.arange(len(trees), dtype=np.int64) % n_outputs
    base = _base_margin(base_score, transform, n_outputs)
    return _ensemble(trees, tree_info, base, task, link, n_outputs, names, classes)


def _is_xgboost_object(model: Any) -> bool:
    return type(model).__module__.split(".")[0] == "xgboost"


def from_xgboost(
    model: Any,
    *,
    feature_names: list[str] | None = None,
    base_score: Any = None,
    objective: str | None = None,
    num_class: int | None = None,
    n_features: int | None = None,
    limits: DumpLimits = DEFAULT_LIMITS,
) -> TreeEnsemble:
    """Convert an XGBoost model into a boosting :class:`~engine.tree.TreeEnsemble`.

    Parameters
    ----------
    model : XGBClassifier, XGBRegressor, XGBRF*, Booster, bytes, str, dict, list or Path
        A fitted scikit-learn-style model or ``Booster`` (converted through
        ``save_raw('json')``; a model fitted with early stopping keeps the rounds up to its
        ``best_iteration``, as its ``predict`` does); the model JSON of
        ``save_model('model.json')``/``save_raw('json')`` as text, bytes or the decoded
        dict; the UBJSON of ``save_model('model.ubj')``/``save_raw('ubj')`` as bytes; the
        list of ``get_dump(dump_format='json', with_stats=True)`` (then ``objective`` and
        ``base_score`` are required, ``num_class`` for multiclass); or a ``Path`` to a
        ``.json``/``.ubj`` file.  Never a pickle.
    feature_names : list of str, optional
        Names of the model's features (default: the names saved in the model, if any).
    base_score, objective, num_class, n_features
        Only for a ``get_dump`` list: the training parameters (``base_score`` in the
        objective's output scale, e.g. a probability for ``binary:logistic``), and the
        number of columns of ``X`` (default: the largest feature index used + 1).
    limits : DumpLimits
        Bounds on the size, trees, nodes and features of the model.

    Returns
    -------
    TreeEnsemble
        ``kind='boosting'``, ``scale=1``, ``base`` = the base margin (float64 of XGBoost's
        float32 value), one regression tree per XGBoost tree with ``tree_output`` = its
        class (``tree_info``).  ``task`` and ``link``: ``binary:logistic``/``logitraw`` ->
        classification, 'logit' (``classes_`` 0 and 1, or the model's); ``multi:softprob``/
        ``softmax`` -> classification, 'softmax'; ``reg:*`` and ``rank:*`` -> regression.
        Each tree has ``float32_inputs=True``, ``threshold`` = the float32 just below
        ``split_condition`` (XGBoost's strict ``x < split_condition`` as ``x <=
        threshold``), ``missing_go_to_left`` = ``default_left``,
        ``weighted_n_node_samples`` = the cover (sum of hessians, which TreeSHAP and
        TreeGrad weigh paths by), ``n_node_samples`` = 0 (XGBoost keeps no row counts),
        ``impurity`` = NaN, ``value`` = leaf values at leaves and cover-weighted means of
        them at internal nodes.  ``predict_raw`` is ``predict(output_margin=True)``.

    Raises
    ------
    ValueError
        The dump is larger than the limits, is not valid JSON/UBJSON or not an XGBoost
        model (the message names the missing or malformed field), or the model is
        unsupported: booster other than gbtree (dart, gblinear), an objective whose
        prediction is not the margin, its logistic or softmax (e.g. ``count:poisson``),
        categorical splits, multi-output trees or several targets.
    TypeError
        ``model`` is none of the accepted types.
    """
    classes = None
    if _is_xgboost_object(model):
        if hasattr(model, "get_booster"):  # scikit-learn API
            try:
                booster = model.get_booster()
            except Exception as exc:
                raise ValueError(f"{type(model).__name__} is not fitted: {exc}") from None
            try:
                best = model.best_iteration
            except AttributeError:
                best = None
            if best is not None:
                booster = booster[: int(best) + 1]
            classes = getattr(model, "classes_", None)
            if feature_names is None and getattr(model, "feature_names_in_", None) is not None:
                feature_names = [str(s) for s in model.feature_names_in_]
        elif hasattr(model, "save_raw"):
            booster = model
        else:
            raise TypeError(f"from_xgboost does not support {type(model).__name__}")
        return _from_model_json(
            parse_json(bytes(booster.save_raw("json")), "XGBoost model"),
            limits,
            feature_names,
            classes,
        )
    if isinstance(model, Path):
        model = read_bounded(model, limits)
    if isinstance(model, (bytes, bytearray, memoryview, str)):
        data = bytes(model) if not isinstance(model, str) else model
        check_size(data, limits, "XGBoost model")
        model = decode_xgboost_bytes(data)
    if isinstance(model, dict):
        return _from_model_json(model, limits, feature_names, classes)
    if isinstance(model, list):
        return _from_get_dump(
            model, limits, feature_names, classes, base_score, objective, num_class, n_features
        )
    raise TypeError(
        f"from_xgboost does not support {type(model).__name__}: pass a fitted XGBoost model, "
        "a Booster, or its JSON/UBJSON dump (bytes, str, dict, a get_dump list or a Path)"
    )


def decode_xgboost_bytes(data: bytes | str) -> Any:
    """JSON text, or else UBJSON bytes, decoded (``ValueError`` when it is neither)."""
    if isinstance(data, str):
        return parse_json(data, "XGBoost model")
    head = data.lstrip()[:1]
    if head in (b"{", b"[") and _looks_like_json(data):
        return parse_json(data, "XGBoost model")
    if data[:1] == b"{":
        from engine.tree._ubjson import decode_ubjson

        return decode_ubjson(data)
    raise ValueError("the file is neither an XGBoost JSON model nor an XGBoost UBJSON (.ubj) model")


def _looks_like_json(data: bytes) -> bool:
    """JSON text starts with ``{`` or ``[`` then whitespace, a quote or a bracket; UBJSON
    puts a length marker (``i``, ``U``, ``l``, ``L``...) or ``$``/``#`` after ``{``."""
    s = data.lstrip()
    return len(s) < 2 or s[1:2] in b' \t\r\n"{[]}'
