"""The CART entry of the Compare page's model registry (:mod:`engine.compare`)."""

from __future__ import annotations

from engine.cart.candidates import LABEL_AWARE, STRATEGIES, strategies_for
from engine.cart.estimator import CARTClassifier, CARTRegressor
from engine.compare import ModelSpec, ParamSpec, register_model


def _build_cart(task, random_state, splitter, max_depth, min_samples_leaf, criterion, n_candidates):
    if task == "regression":
        if splitter in LABEL_AWARE:
            raise ValueError(
                f"splitter {splitter!r} needs class labels; for regression use one of "
                f"{list(strategies_for('regression'))}"
            )
        return CARTRegressor(
            splitter=splitter,
            max_depth=max_depth,
            min_samples_leaf=min_samples_leaf,
            n_candidates=n_candidates,
            random_state=random_state,
        )
    crit = criterion if criterion in ("gini", "entropy") else "gini"
    return CARTClassifier(
        splitter=splitter,
        max_depth=max_depth,
        min_samples_leaf=min_samples_leaf,
        criterion=crit,
        n_candidates=n_candidates,
        random_state=random_state,
    )


register_model(
    ModelSpec(
        key="treelab_cart",
        label="CART (TreeLab, split strategies)",
        build=_build_cart,
        tree_figure=True,
        params=(
            ParamSpec(
                "splitter",
                "exhaustive",
                "choice",
                choices=STRATEGIES,
                help="Candidate thresholds tried per feature and node: exhaustive (all "
                "midpoints, as scikit-learn), quantile, histogram, random, or a DICS "
                "variant (dics_paper, kmeans1d, class_centroid, kde_valley).",
            ),
            ParamSpec(
                "max_depth",
                5,
                "int_or_none",
                0,
                50,
                help="Maximum depth of the tree; 0 means unlimited.",
            ),
            ParamSpec(
                "min_samples_leaf",
                1,
                "int",
                1,
                1000,
                help="Minimum number of training rows in a leaf.",
            ),
            ParamSpec(
                "criterion",
                "gini",
                "choice",
                choices=("gini", "entropy"),
                help="Impurity for classification (regression uses squared error).",
            ),
            ParamSpec(
                "n_candidates",
                0,
                "int_or_none",
                0,
                1000,
                help="The strategy's k (quantiles, bins, random draws, k-means clusters, "
                "DICS entries per node); 0 means the strategy's default.",
            ),
        ),
        description="Greedy CART in numba whose candidate thresholds come from a chosen "
        "strategy (DICS: Mazumder & Yu, arXiv 2608.20258).",
        family="TreeLab",
    )
)
