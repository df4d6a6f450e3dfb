"""What the Feature ranking page computes (TreeGrad, docs/spec.md section 3): the page's one
entry point to the method.

Attributions, curves, rank agreement, gammas and the numerics jobs are in
:mod:`engine.treegrad.explain` and re-exported here; this module adds what the page
computed itself: the seeded train/test split (:func:`split_rows`, the shared
:func:`engine.data.train_test_rows`), the scikit-learn model it explains
(:func:`fit_model`), the model as TreeLab arrays (:func:`as_treelab`, :func:`n_outputs`)
and the path of a sample with the gamma of every edge (:func:`path_table`).  Every
function works without Streamlit (the page caches them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.data import train_test_rows
from engine.treegrad._model import as_treelab, n_outputs
from engine.treegrad.explain import (
    PAPER_BETAS,
    CurveSet,
    MethodParams,
    batch_curves,
    curves_steps,
    edge_gammas,
    error_vs_depth_steps,
    explain,
    kendall_matrix,
    model_summary,
    runtime_vs_leaves_steps,
)

__all__ = [
    "MISSING_VALUES_CAPTION",
    "MODEL_KINDS",
    "PAPER_BETAS",
    "CurveSet",
    "MethodParams",
    "as_treelab",
    "batch_curves",
    "curves_steps",
    "edge_gammas",
    "error_vs_depth_steps",
    "explain",
    "fit_model",
    "kendall_matrix",
    "model_summary",
    "n_outputs",
    "path_table",
    "runtime_vs_leaves_steps",
    "split_rows",
    "teaching_row",
]

#: The scikit-learn models the page trains (key -> label).
MODEL_KINDS = {"tree": "Decision tree", "forest": "Random forest", "boosting": "Gradient boosting"}
#: Models the page trains: scikit-learn's, then XGBoost / LightGBM (explained through their
#: dumps).
TRAINED_KINDS = {**MODEL_KINDS, "xgboost": "XGBoost", "lightgbm": "LightGBM"}
#: One sentence the page shows on how TreeGrad treats missing values.
MISSING_VALUES_CAPTION = (
    "Missing values: a sample's missing value follows the side each split learned for "
    "missing values, in every coalition that holds the feature, as shap's TreeExplainer "
    "does; every model type routes them itself except scikit-learn's gradient boosting, "
    "which is fitted and explained on the rows without a missing value."
)


def split_rows(ds, test_size: float, random_state: int):
    """Seeded train/test rows of ``ds`` (:func:`engine.data.train_test_rows`: stratified by
    class when every class has two rows, else shuffled with a note saying why)."""
    clf = ds.task == "classification"
    return train_test_rows(
        ds.n_samples,
        ds.y if clf else None,
        test_size=test_size,
        random_state=random_state,
        class_names=[str(c) for c in ds.classes_] if clf else None,
    )


def fit_model(
    ds,
    kind: str,
    depth: int,
    leaves: int,
    n_estimators: int,
    learning_rate: float,
    test_size: float,
    random_state: int,
):
    """A model (``kind`` in :data:`TRAINED_KINDS`: scikit-learn's, XGBoost or LightGBM)
    fitted on the seeded train rows of ``ds`` (:func:`split_rows`):
    ``(model, train rows, test rows, test score, note)``.

    ``depth`` / ``leaves`` 0 mean no limit; the score is accuracy or R².  Every model type
    but scikit-learn's gradient boosting routes missing values itself and uses every row;
    gradient boosting, on a dataset with missing values, is fitted and scored on the rows
    without one, and ``note`` says so with the rows left out (``None`` otherwise).  Raises
    ValueError for parameters scikit-learn rejects, or when too few complete rows are left.
    """
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    clf = ds.task == "classification"
    split = split_rows(ds, test_size, random_state)
    tr, te = split.train, split.test
    common = dict(max_depth=depth or None, max_leaf_nodes=leaves or None, random_state=random_state)
    if kind == "tree":
        est = (DecisionTreeClassifier if clf else DecisionTreeRegressor)(**common)
    elif kind == "forest":
        est = (RandomForestClassifier if clf else RandomForestRegressor)(
            n_estimators=n_estimators, n_jobs=1, **common
        )
    elif kind == "boosting":
        est = (GradientBoostingClassifier if clf else GradientBoostingRegressor)(
            n_estimators=n_estimators, learning_rate=learning_rate, **common
        )
    else:
        from engine.compare import booster_estimator

        est = booster_estimator(
            kind,
            ds.task,
            n_estimators=n_estimators,
            max_depth=depth,
            max_leaves=leaves,
            learning_rate=learning_rate,
            random_state=random_state,
        )
    tr, te, note = _complete_rows_for(est, TRAINED_KINDS[kind], ds, tr, te)
    est.fit(ds.X[tr], ds.y[tr])
    score = float(est.score(ds.X[te], ds.y[te]))
    return est, tr, te, score, note


def _complete_rows_for(est, label: str, ds, train, test):
    """``(train, test, note)``: the split unchanged and no note when ``est`` takes missing
    values or ``ds`` has none; else the rows without a missing value and a note naming the
    model and the rows left out.  ValueError when too few rows are left."""
    from engine.compare import handles_missing

    missing = np.isnan(ds.X)
    if handles_missing(est) or not missing.any():
        return train, test, None
    complete = ~missing.any(axis=1)
    kept_train, kept_test = train[complete[train]], test[complete[test]]
    too_few = kept_train.size < 2 or kept_test.size == 0
    if ds.task == "classification" and not too_few:
        too_few = np.unique(ds.y[kept_train]).size < 2
    if too_few:
        raise ValueError(
            f"{label} (scikit-learn) cannot take missing values, and too few rows are "
            f"without one ({int(complete.sum()):,} of {ds.n_samples:,}): choose another "
            "model type, which routes missing values itself."
        )
    return (
        kept_train,
        kept_test,
        f"{label} (scikit-learn) cannot take missing values: it is fitted on the "
        f"{kept_train.size:,} training rows without one ({train.size - kept_train.size:,} "
        f"left out) and explained and scored on the {kept_test.size:,} test rows without "
        f"one ({test.size - kept_test.size:,} left out). The other model types route "
        "missing values themselves and use every row.",
    )


def teaching_row(model, X, rows, *, limit: int = 100, max_trees: int = 20) -> int:
    """The row the page opens on: of the first ``limit`` of ``rows``, the first whose
    decision paths (in the first ``max_trees`` trees of an ensemble) test the most distinct
    features.  A row routed by one split (iris's first test row, a setosa: petal width
    alone) gives every method the same single attribution; a row whose paths test several
    features is where Shapley, Banzhaf and the Ranker can disagree.

    Parameters
    ----------
    model : TreeArrays or TreeEnsemble
        The model the page explains (:func:`as_treelab`).
    X : ndarray of shape (n_samples, n_features), float64
        The dataset's features.
    rows : sequence of int
        The candidate rows (the test rows), in the page's order; not empty.

    Returns
    -------
    int
        One of ``rows``.

    Raises
    ------
    ValueError
        When ``rows`` is empty.
    """
    from engine.tree import TreeEnsemble

    rows = [int(r) for r in rows]
    if not rows:
        raise ValueError("no rows to choose from")
    trees = model.trees[:max_trees] if isinstance(model, TreeEnsemble) else [model]
    best, most = rows[0], -1
    for row in rows[:limit]:
        used = set()
        for tree in trees:
            path = tree.decision_path(X[row])
            used.update(int(tree.feature[node]) for node in path[:-1])
        if len(used) > most:
            best, most = row, len(used)
    return best


def path_table(tree, x, feature_names) -> pd.DataFrame:
    """The root-to-leaf path of sample ``x`` (float64 ``(d,)``) in ``tree``: one row per
    edge with its split, the side taken and the edge's gamma (:func:`edge_gammas`)."""
    path = tree.decision_path(x)
    gammas = edge_gammas(tree, x)
    return pd.DataFrame(
        {
            "from node": path[:-1],
            "to node": path[1:],
            "split": [tree.rule(int(u), feature_names) for u in path[:-1]],
            "sample goes": [
                "left (rule true)" if tree.children_left[u] == v else "right (rule false)"
                for u, v in zip(path[:-1], path[1:], strict=True)
            ],
            "\u03b3 of the edge": np.asarray(gammas)[path[1:]],
        }
    )
