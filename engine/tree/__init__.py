"""Tree arrays: the one binary-tree layout every TreeLab method writes and every view reads.

The layout is scikit-learn's ``sklearn.tree._tree.Tree`` struct of arrays (see
``sklearn/tree/_tree.pxd``, ``NODE_DTYPE``): node ``i`` has children ``children_left[i]``
and ``children_right[i]`` (``TREE_LEAF = -1`` at leaves), a split ``feature[i]``
(``TREE_UNDEFINED = -2`` at leaves) and ``threshold[i]``; a sample goes **left when
``x[feature] <= threshold``**.  ``value`` has shape ``(n_nodes, n_outputs, n_classes)`` and
holds weighted class **fractions** for classifiers (scikit-learn >= 1.4.1) or the node mean
for regression.  Extras that some methods add (p-values, shape-function breakpoints, search
bounds, categorical set splits) are optional arrays next to the standard ones.

Public API
----------
* :class:`TreeArrays` - one tree; ``apply``/``predict``/``predict_proba``/``decision_path``,
  rules, a node table (``to_frame``) and a lossless JSON form (``to_dict``/``to_json``).
* :class:`TreeEnsemble` - forests (average of trees) and gradient boosting (additive raw
  scores), built by :func:`from_sklearn`.
* :func:`from_sklearn` - convert a fitted scikit-learn tree, forest or gradient boosting model.
* :func:`from_xgboost`, :func:`from_lightgbm` - convert XGBoost / LightGBM models (fitted
  objects or their JSON/UBJSON dumps, never pickles) into boosting ensembles with exact
  routing (XGBoost's float32 ``x < split_condition``, LightGBM's double ``x <= threshold``,
  missing values by ``missing_go_to_left``) and the libraries' raw margins.
* :func:`load_model_dump` - an uploaded dump's bytes: detect which library and convert,
  bounded by :class:`DumpLimits`.

Routing is done by numba kernels (single-threaded, ``nogil``, iterative).  Rows are cast to
float64 C-contiguous before every call so that one compiled specialisation serves every call.
Missing values are routed only by trees with the optional per-node
``missing_go_to_left`` (uint8, scikit-learn's meaning: NaN goes left iff 1); for other trees
a NaN in ``X`` raises ``ValueError``.  Shape-function
nodes (``bp_offsets``/``bp_values``, Literati) route by their breakpoints: left iff the
number of breakpoints strictly below ``x[feature]`` is even (see ``has_shape_splits``).

Modules: :mod:`engine.tree._kernels` (numba routing), :mod:`engine.tree.arrays`
(:class:`TreeArrays`), :mod:`engine.tree.ensemble` (:class:`TreeEnsemble`),
:mod:`engine.tree.sklearn_import` (:func:`from_sklearn`), :mod:`engine.tree.xgboost_import`,
:mod:`engine.tree.lightgbm_import`, :mod:`engine.tree.model_dump`; ``_checks`` holds the
array checks and the JSON encoding both classes share, ``_dump_checks`` the limits of model
dumps, ``_ubjson`` a bounded UBJSON decoder.
"""

from __future__ import annotations

import numpy as np

from engine._numba import register_warmup
from engine.tree._dump_checks import DumpLimits
from engine.tree._kernels import _apply_cat_kernel, _apply_shape_kernel, float32_routing_threshold
from engine.tree.arrays import (
    ENSEMBLE_FORMAT,
    FORMAT,
    TREE_LEAF,
    TREE_UNDEFINED,
    TreeArrays,
    _tiny_tree,
)
from engine.tree.ensemble import TreeEnsemble
from engine.tree.lightgbm_import import from_lightgbm
from engine.tree.model_dump import detect_model_dump, load_model_dump
from engine.tree.sklearn_import import from_sklearn
from engine.tree.xgboost_import import from_xgboost

__all__ = [
    "ENSEMBLE_FORMAT",
    "FORMAT",
    "TREE_LEAF",
    "TREE_UNDEFINED",
    "DumpLimits",
    "TreeArrays",
    "TreeEnsemble",
    "detect_model_dump",
    "float32_routing_threshold",
    "from_lightgbm",
    "from_sklearn",
    "from_xgboost",
    "load_model_dump",
]


@register_warmup("tree.apply")
def _warmup() -> None:
    """Compile (or load from cache) every routing kernel with the dtypes of real calls."""
    tree = _tiny_tree()
    X = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float64)
    tree.apply(X)
    left, right, feat, thr = tree.routing_arrays()
    _apply_cat_kernel(
        left,
        right,
        feat,
        thr,
        np.array([0, 1, 1, 1], dtype=np.int64),
        np.array([0], dtype=np.int64),
        X,
    )
    _apply_shape_kernel(
        left,
        right,
        feat,
        thr,
        np.array([0, 2, 2, 2], dtype=np.int64),
        np.array([0.25, 0.75], dtype=np.float64),
        X,
    )
    missing = TreeArrays.from_dict({**tree.to_dict(), "missing_go_to_left": [1, 0, 0]})
    missing.apply(np.array([[np.nan, 1.0], [1.0, np.nan]], dtype=np.float64))
    forest = TreeEnsemble(
        trees=[tree, tree],
        tree_output=np.array([-1, -1]),
        scale=0.5,
        base=np.zeros(2),
        kind="forest",
        task="classification",
        classes_=np.array([0, 1]),
    )
    forest.apply(X)
    forest.predict_raw(X)
