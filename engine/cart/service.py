"""What the Split strategies page computes (CART split strategies and DICS, docs/spec.md
section 5): the page's one entry point to the method.

The strategies (:mod:`engine.cart.candidates`), the DICS dictionary (:mod:`engine.cart.dics`)
and the split profile of one node (:mod:`engine.cart.profile`) are re-exported here; this
module adds what the page computed itself: the exhaustive CART it picks nodes from
(:func:`node_picker_tree`), the dictionary of all rows (:func:`global_dictionary`), the
candidates as one long table (:func:`candidates_table`) and the whole-tree comparison plan
(:func:`strategy_plan`).  Every function works without Streamlit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.cart.candidates import strategies_for
from engine.cart.dics import dics_dictionary
from engine.cart.estimator import CARTClassifier, CARTRegressor
from engine.cart.profile import node_mask, split_profile, strategy_models

__all__ = [
    "candidates_table",
    "dics_dictionary",
    "global_dictionary",
    "node_mask",
    "node_picker_tree",
    "split_profile",
    "strategies_for",
    "strategy_models",
    "strategy_plan",
]


def node_picker_tree(ds, depth: int, criterion: str, min_samples_leaf: int):
    """The exhaustive CART of ``depth`` on all rows of ``ds`` (TreeArrays): the tree the
    page picks a node from (``criterion`` is ignored for regression)."""
    cats = ds.is_categorical if ds.is_categorical.any() else None
    est = (
        CARTClassifier(
            max_depth=depth,
            criterion=criterion,
            min_samples_leaf=min_samples_leaf,
            categorical_features=cats,
        )
        if ds.task == "classification"
        else CARTRegressor(
            max_depth=depth, min_samples_leaf=min_samples_leaf, categorical_features=cats
        )
    )
    est.fit(ds.X, ds.y)
    return est.tree_


def global_dictionary(ds, random_state: int):
    """The DICS dictionary of all rows: K = number of classes (8 for regression, as the CART
    builder), continuous features only."""
    continuous = np.array([not c for c in ds.is_categorical])
    n_clusters = max(ds.n_classes, 2) if ds.task == "classification" else 8
    return dics_dictionary(ds.X, n_clusters, random_state=random_state, features=continuous)


def candidates_table(profile) -> pd.DataFrame:
    """Every strategy's candidate thresholds of a :func:`split_profile` with their impurity
    decrease, one row each (strategy, threshold, impurity_decrease)."""
    return pd.DataFrame(
        [
            (s, t, g)
            for s, r in profile.results.items()
            for t, g in zip(r.thresholds, r.gains, strict=True)
        ],
        columns=["strategy", "threshold", "impurity_decrease"],
    )


def strategy_plan(
    ds,
    strategies,
    *,
    max_depth: int,
    min_samples_leaf: int,
    n_candidates: int,
    criterion: str,
    n_splits: int,
    random_state: int,
):
    """The cross-validation plan (:func:`engine.compare.plan_comparison`) growing one CART
    per strategy with the same depth, leaf size, k and (classification) criterion."""
    from engine.compare import plan_comparison

    params = {
        "max_depth": max_depth,
        "min_samples_leaf": min_samples_leaf,
        "n_candidates": n_candidates,
    }
    if ds.task == "classification":
        params["criterion"] = criterion
    return plan_comparison(
        ds, strategy_models(strategies, **params), n_splits=n_splits, random_state=random_state
    )
