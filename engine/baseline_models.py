"""The scikit-learn, XGBoost and LightGBM entries of the Compare page's model registry
(:mod:`engine.model_registry`): the baselines TreeLab's methods are compared with.

XGBoost and LightGBM are registered only when installed; :func:`booster_estimator` builds
the Feature ranking page's boosters (explained through ``engine.tree.from_xgboost`` /
``from_lightgbm``).
"""

from __future__ import annotations

from engine.model_registry import ModelSpec, ParamSpec, register_model


# -- scikit-learn baselines -----------------------------------------------------------------
def _sk_tree(task, random_state, max_depth, min_samples_leaf, criterion):
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    if task == "classification":
        crit = criterion if criterion in ("gini", "entropy") else "gini"
        return DecisionTreeClassifier(
            max_depth=max_depth,
            min_samples_leaf=min_samples_leaf,
            criterion=crit,
            random_state=random_state,
        )
    return DecisionTreeRegressor(
        max_depth=max_depth, min_samples_leaf=min_samples_leaf, random_state=random_state
    )


def _sk_forest(task, random_state, n_estimators, max_depth):
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    cls = RandomForestClassifier if task == "classification" else RandomForestRegressor
    return cls(n_estimators=n_estimators, max_depth=max_depth, random_state=random_state)


def _sk_boosting(task, random_state, n_estimators, max_depth, learning_rate):
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

    cls = GradientBoostingClassifier if task == "classification" else GradientBoostingRegressor
    return cls(
        n_estimators=n_estimators,
        max_depth=max_depth,
        learning_rate=learning_rate,
        random_state=random_state,
    )


_DEPTH_HELP = "Maximum depth of a tree; 0 means unlimited (grow until leaves are pure)."
register_model(
    ModelSpec(
        key="sklearn_tree",
        label="Decision tree (scikit-learn CART)",
        build=_sk_tree,
        params=(
            ParamSpec("max_depth", 5, "int_or_none", 0, 50, help=_DEPTH_HELP),
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
                help="Impurity for classification (regression always uses squared error).",
            ),
        ),
        tree_figure=True,
        description="Greedy CART with exhaustive thresholds (Breiman et al. 1984).",
    )
)
register_model(
    ModelSpec(
        key="sklearn_forest",
        label="Random forest (scikit-learn)",
        build=_sk_forest,
        params=(
            ParamSpec("n_estimators", 100, "int", 1, 1000, help="Number of trees."),
            ParamSpec("max_depth", 0, "int_or_none", 0, 50, help=_DEPTH_HELP),
        ),
        description="Bagged CART trees with random feature subsets (Breiman 2001).",
    )
)
register_model(
    ModelSpec(
        key="sklearn_boosting",
        label="Gradient boosting (scikit-learn)",
        build=_sk_boosting,
        params=(
            ParamSpec("n_estimators", 100, "int", 1, 1000, help="Number of boosting stages."),
            ParamSpec("max_depth", 3, "int", 1, 20, help="Depth of each regression tree."),
            ParamSpec(
                "learning_rate",
                0.1,
                "float",
                1e-4,
                1.0,
                help="Shrinkage applied to each tree's contribution.",
            ),
        ),
        description="Stage-wise additive regression trees (Friedman 2001).",
    )
)


# -- XGBoost and LightGBM (when installed; explained through engine.tree.from_xgboost/lightgbm)
def _xgboost(task, random_state, n_estimators, max_depth, learning_rate):
    import xgboost

    cls = xgboost.XGBClassifier if task == "classification" else xgboost.XGBRegressor
    # one thread: the fits of a comparison already run in parallel (one per worker)
    return cls(
        n_estimators=n_estimators,
        max_depth=max_depth,
        learning_rate=learning_rate,
        random_state=random_state,
        n_jobs=1,
    )


def _lightgbm(task, random_state, n_estimators, num_leaves, learning_rate):
    import lightgbm

    cls = lightgbm.LGBMClassifier if task == "classification" else lightgbm.LGBMRegressor
    return cls(
        n_estimators=n_estimators,
        num_leaves=num_leaves,
        learning_rate=learning_rate,
        random_state=random_state,
        n_jobs=1,
        verbose=-1,
    )


def booster_estimator(
    library: str,
    task: str,
    *,
    n_estimators: int,
    max_depth: int,
    max_leaves: int,
    learning_rate: float,
    random_state: int,
):
    """An unfitted XGBoost or LightGBM model (one thread) with the Feature ranking page's
    knobs: ``max_depth`` / ``max_leaves`` 0 mean no limit (XGBoost then grows loss-guided,
    LightGBM keeps its 31 leaves when both are 0).  ``library``: 'xgboost' | 'lightgbm';
    ``task``: 'classification' | 'regression'.  Raises ``ValueError`` for another library.
    """
    clf = task == "classification"
    if library == "xgboost":
        import xgboost

        cls = xgboost.XGBClassifier if clf else xgboost.XGBRegressor
        return cls(
            n_estimators=n_estimators,
            max_depth=max_depth,
            max_leaves=max_leaves,
            grow_policy="lossguide" if max_depth == 0 else "depthwise",
            learning_rate=learning_rate,
            random_state=random_state,
            n_jobs=1,
        )
    if library == "lightgbm":
        import lightgbm

        cls = lightgbm.LGBMClassifier if clf else lightgbm.LGBMRegressor
        return cls(
            n_estimators=n_estimators,
            max_depth=max_depth or -1,
            num_leaves=max_leaves or (31 if max_depth == 0 else min(2**max_depth, 131072)),
            learning_rate=learning_rate,
            random_state=random_state,
            n_jobs=1,
            verbose=-1,
        )
    raise ValueError(f"library must be 'xgboost' or 'lightgbm', got {library!r}")


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


_BOOST_TREES = ParamSpec("n_estimators", 100, "int", 1, 1000, help="Number of boosting rounds.")
_BOOST_RATE = ParamSpec(
    "learning_rate", 0.1, "float", 1e-3, 1.0, help="Shrinkage of each tree's contribution."
)
if _installed("xgboost"):
    register_model(
        ModelSpec(
            key="xgboost",
            label="XGBoost",
            build=_xgboost,
            params=(
                _BOOST_TREES,
                ParamSpec("max_depth", 6, "int", 1, 20, help="Depth of each tree."),
                _BOOST_RATE,
            ),
            description="Second-order gradient boosting with regularised leaves (Chen & "
            "Guestrin 2016); missing values go to each split's learned default side.",
            family="XGBoost",
        )
    )
if _installed("lightgbm"):
    register_model(
        ModelSpec(
            key="lightgbm",
            label="LightGBM",
            build=_lightgbm,
            params=(
                _BOOST_TREES,
                ParamSpec("num_leaves", 31, "int", 2, 4096, help="Leaves of each tree."),
                _BOOST_RATE,
            ),
            description="Histogram gradient boosting grown leaf-wise (Ke et al. 2017); "
            "missing values go to each split's learned default side.",
            family="LightGBM",
        )
    )
