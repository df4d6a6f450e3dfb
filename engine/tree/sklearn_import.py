"""Conversion of fitted scikit-learn tree models into :class:`~engine.tree.TreeArrays` and
:class:`~engine.tree.TreeEnsemble` (:func:`from_sklearn`)."""

from __future__ import annotations

import numpy as np

from engine.tree.arrays import TreeArrays
from engine.tree.ensemble import TreeEnsemble

# ---------------------------------------------------------------------------------------
# scikit-learn converter
# ---------------------------------------------------------------------------------------

_SUPPORTED = (
    "DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeClassifier, ExtraTreeRegressor, "
    "RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, "
    "ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor"
)


def _names_of(estimator, feature_names):
    if feature_names is not None:
        return [str(s) for s in feature_names]
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(s) for s in names]


def _tree_from_sk_tree(sk_tree, *, task, classes, n_features, feature_names) -> TreeArrays:
    """Copy one ``sklearn.tree._tree.Tree`` into :class:`TreeArrays`."""
    if sk_tree.n_outputs != 1:
        raise ValueError(
            f"multi-output trees (n_outputs={sk_tree.n_outputs}) are not supported; fit one "
            "model per target"
        )
    return TreeArrays(
        sk_tree.children_left,
        sk_tree.children_right,
        sk_tree.feature,
        sk_tree.threshold,
        sk_tree.impurity,
        sk_tree.n_node_samples,
        sk_tree.weighted_n_node_samples,
        np.array(sk_tree.value, dtype=np.float64, copy=True),
        task=task,
        n_features=n_features,
        classes_=None if classes is None else np.array(classes, copy=True),
        feature_names=feature_names,
        float32_inputs=True,
        missing_go_to_left=getattr(sk_tree, "missing_go_to_left", None),
    )


def from_sklearn(estimator, feature_names: list[str] | None = None):
    """Convert a fitted scikit-learn tree model.

    * ``DecisionTreeClassifier``/``DecisionTreeRegressor`` (and ``ExtraTree*``) ->
      :class:`TreeArrays` (``classes_`` and a copy of ``tree_.value``; ``feature_names``
      from the argument, else ``feature_names_in_`` when the model was fitted on a
      DataFrame).
    * ``RandomForest*``, ``ExtraTrees*`` -> :class:`TreeEnsemble` ``kind='forest'``,
      ``scale = 1 / n_trees``, ``base = 0``.
    * ``GradientBoostingClassifier``/``Regressor`` -> :class:`TreeEnsemble`
      ``kind='boosting'``, ``scale = learning_rate``, ``base`` = the init estimator's raw
      prediction (constant for the default prior/mean init and for ``init='zero'``).

    Converted trees set ``float32_inputs=True``: scikit-learn compares float32-cast inputs,
    and routing reproduces that, so ``apply``/``predict`` equal scikit-learn's exactly.

    Raises
    ------
    TypeError
        Not one of the supported classes (listed in the message).
    ValueError
        The estimator is not fitted, is multi-output, or (boosting) uses a custom ``init``
        estimator whose prediction depends on ``X``.
    """
    from sklearn.base import is_classifier
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import BaseDecisionTree

    name = type(estimator).__name__
    forests = (
        RandomForestClassifier,
        RandomForestRegressor,
        ExtraTreesClassifier,
        ExtraTreesRegressor,
    )
    boosting = (GradientBoostingClassifier, GradientBoostingRegressor)
    if not isinstance(estimator, (BaseDecisionTree, *forests, *boosting)):
        raise TypeError(f"from_sklearn does not support {name}; supported: {_SUPPORTED}")
    fitted_attr = "tree_" if isinstance(estimator, BaseDecisionTree) else "estimators_"
    if not hasattr(estimator, fitted_attr):
        raise ValueError(f"{name} is not fitted: call fit(X, y) before from_sklearn")
    n_outputs = getattr(estimator, "n_outputs_", 1)
    if n_outputs != 1:
        raise ValueError(
            f"{name} has n_outputs_={n_outputs}: multi-output models are not supported"
        )
    task = "classification" if is_classifier(estimator) else "regression"
    classes = np.array(estimator.classes_, copy=True) if task == "classification" else None
    names = _names_of(estimator, feature_names)
    n_features = int(estimator.n_features_in_)
    if names is not None and len(names) != n_features:
        raise ValueError(f"feature_names has {len(names)} names, expected {n_features}")

    if isinstance(estimator, BaseDecisionTree):
        return _tree_from_sk_tree(
            estimator.tree_, task=task, classes=classes, n_features=n_features, feature_names=names
        )
    if isinstance(estimator, forests):
        return _forest_from_sklearn(estimator, task, classes, n_features, names)
    return _boosting_from_sklearn(estimator, task, classes, n_features, names)


def _forest_from_sklearn(estimator, task, classes, n_features, names) -> TreeEnsemble:
    """A random forest or extra-trees model: the average of its trees."""
    trees = [
        _tree_from_sk_tree(
            e.tree_, task=task, classes=classes, n_features=n_features, feature_names=names
        )
        for e in estimator.estimators_
    ]
    width = trees[0].n_classes
    return TreeEnsemble(
        trees=trees,
        tree_output=np.full(len(trees), -1, dtype=np.int64),
        scale=1.0 / len(trees),
        base=np.zeros(width),
        kind="forest",
        task=task,
        classes_=classes,
        feature_names=names,
        link="identity",
    )


def _boosting_init_score(estimator, n_features: int) -> np.ndarray:
    """The constant raw score of a gradient-boosting model's init estimator (float64
    ``(n_outputs,)``); ``ValueError`` for a custom init whose prediction depends on ``X``."""
    import warnings

    from sklearn.dummy import DummyClassifier, DummyRegressor

    init = estimator.init_
    if not (isinstance(init, str) and init == "zero") and not isinstance(
        init, (DummyClassifier, DummyRegressor)
    ):
        raise ValueError(
            f"{type(estimator).__name__} uses a custom init estimator ({type(init).__name__}) "
            "whose prediction depends on X; only the default init and init='zero' are supported"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(
            estimator._raw_predict_init(np.zeros((1, n_features), dtype=np.float32)),
            dtype=np.float64,
        )[0]


def _boosting_from_sklearn(estimator, task, classes, n_features, names) -> TreeEnsemble:
    """A gradient-boosting model: one regression tree per stage and output, added up."""
    base = _boosting_init_score(estimator, n_features)
    stages = estimator.estimators_[: estimator.n_estimators_]
    n_stage_outputs = stages.shape[1]
    trees, outputs = [], []
    for i in range(stages.shape[0]):
        for k in range(n_stage_outputs):
            trees.append(
                _tree_from_sk_tree(
                    stages[i, k].tree_,
                    task="regression",
                    classes=None,
                    n_features=n_features,
                    feature_names=names,
                )
            )
            outputs.append(k)
    if task == "regression":
        link = "identity"
    elif n_stage_outputs > 1:
        link = "softmax"
    else:
        link = "half_logit" if estimator.loss == "exponential" else "logit"
    return TreeEnsemble(
        trees=trees,
        tree_output=np.asarray(outputs, dtype=np.int64),
        scale=float(estimator.learning_rate),
        base=base,
        kind="boosting",
        task=task,
        classes_=classes,
        feature_names=names,
        link=link,
    )
