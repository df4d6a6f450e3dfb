"""scikit-learn compatible :class:`CARTClassifier` and :class:`CARTRegressor` over the
numba builder (:func:`engine.cart.builder.build_tree`)."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    RealNotInt,
    StrOptions,
)
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from engine._numba import register_warmup
from engine.cart.builder import build_tree
from engine.cart.candidates import LABEL_AWARE, STRATEGIES, strategies_for

#: Constraints shared by both estimators (scikit-learn's ``_parameter_constraints`` format);
#: each class adds ``splitter`` and ``criterion``.
_COMMON_CONSTRAINTS: dict = {
    "max_depth": [Interval(Integral, 1, None, closed="left"), None],
    "min_samples_split": [
        Interval(Integral, 2, None, closed="left"),
        Interval(RealNotInt, 0.0, 1.0, closed="right"),
    ],
    "min_samples_leaf": [
        Interval(Integral, 1, None, closed="left"),
        Interval(RealNotInt, 0.0, 1.0, closed="neither"),
    ],
    "max_features": [
        Interval(Integral, 1, None, closed="left"),
        Interval(RealNotInt, 0.0, 1.0, closed="right"),
        StrOptions({"sqrt", "log2"}),
        None,
    ],
    "max_leaf_nodes": [Interval(Integral, 2, None, closed="left"), None],
    "min_impurity_decrease": [Interval(Real, 0.0, None, closed="left")],
    "random_state": ["random_state"],
    "categorical_features": ["array-like", None],
    "n_candidates": [Interval(Integral, 1, None, closed="left"), None],
    "variance_adjusted": ["boolean", None],
    "fallback": ["boolean"],
    "dics_pairs": [Interval(Integral, 1, None, closed="left"), None],
    "dics_clusters": [Interval(Integral, 2, None, closed="left"), None],
    "dics_remove_used": ["boolean"],
}


class _BaseCART(BaseEstimator):
    """Shared fit logic of :class:`CARTClassifier` and :class:`CARTRegressor`."""

    _task = "classification"

    def __init__(
        self,
        *,
        splitter="exhaustive",
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        max_features=None,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        random_state=None,
        categorical_features=None,
        n_candidates=None,
        variance_adjusted=None,
        fallback=True,
        dics_pairs=None,
        dics_clusters=None,
        dics_remove_used=False,
    ):
        self.splitter = splitter
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.random_state = random_state
        self.categorical_features = categorical_features
        self.n_candidates = n_candidates
        self.variance_adjusted = variance_adjusted
        self.fallback = fallback
        self.dics_pairs = dics_pairs
        self.dics_clusters = dics_clusters
        self.dics_remove_used = dics_remove_used

    # -- validation ------------------------------------------------------------------

    def _validate_params(self):
        """The constraint table (scikit-learn's check, run by ``fit``), after the one rule it
        cannot say as well: a label-aware strategy asked of a regressor."""
        if self._task == "regression" and isinstance(self.splitter, str):
            if self.splitter in LABEL_AWARE:
                raise InvalidParameterError(
                    f"The 'splitter' parameter of {type(self).__name__} must be one of "
                    f"{list(strategies_for('regression'))}: {self.splitter!r} needs class "
                    "labels (use CARTClassifier)."
                )
        super()._validate_params()

    def _resolved_params(self, n_samples: int, n_features: int) -> dict:
        """The validated parameters as the builder takes them: counts for the fractions of
        ``min_samples_*`` and ``max_features``, the strategy's ``k`` and the default of
        ``variance_adjusted``."""
        mss = self.min_samples_split
        msl = self.min_samples_leaf
        mf = self.max_features
        if mf is None:
            n_drawn = n_features
        elif isinstance(mf, str):
            n_drawn = max(1, int((np.sqrt if mf == "sqrt" else np.log2)(n_features)))
        elif isinstance(mf, Integral):
            n_drawn = min(int(mf), n_features)
        else:
            n_drawn = max(1, int(mf * n_features))
        va = self.variance_adjusted
        return {
            "min_samples_split": int(mss)
            if isinstance(mss, Integral)
            else max(2, int(np.ceil(mss * n_samples))),
            "min_samples_leaf": int(msl)
            if isinstance(msl, Integral)
            else max(1, int(np.ceil(msl * n_samples))),
            "max_features": n_drawn,
            "min_impurity_decrease": float(self.min_impurity_decrease),
            "variance_adjusted": (self.splitter != "kmeans1d") if va is None else bool(va),
        }

    def _categorical_mask(self, X) -> tuple[np.ndarray, np.ndarray]:
        p = X.shape[1]
        cf = self.categorical_features
        mask = np.zeros(p, dtype=bool)
        if cf is not None:
            a = np.asarray(cf)
            if a.dtype == bool:
                if a.shape != (p,):
                    raise ValueError(
                        f"categorical_features as a mask must have {p} booleans, got shape "
                        f"{a.shape}"
                    )
                mask = a.copy()
            elif a.size and a.dtype.kind in "iu":
                idx = a.reshape(-1).astype(np.int64)
                if idx.min() < -p or idx.max() >= p:
                    raise ValueError(
                        f"categorical_features holds an index outside [0, {p}): {idx.tolist()}"
                    )
                mask[idx] = True
            elif a.size:
                raise ValueError(
                    "categorical_features must be None, a boolean mask or integer column "
                    f"indices, got {cf!r}"
                )
        n_cats = np.zeros(p, dtype=np.int64)
        for j in np.flatnonzero(mask):
            col = X[:, j]
            col = col[~np.isnan(col)]  # missing codes are routed, not a category
            if np.any(col < 0) or np.any(col != np.round(col)):
                raise ValueError(
                    f"categorical feature {j} must hold integer codes 0, 1, 2, ... (got "
                    f"{col[(col < 0) | (col != np.round(col))][:3].tolist()})"
                )
            n_cats[j] = int(col.max()) + 1 if col.size else 1
        return mask, n_cats

    # -- fit -------------------------------------------------------------------------

    def _fit(self, X, y_code, y_val, n_classes, sample_weight):
        n, p = X.shape
        prm = self._resolved_params(n, p)
        is_cat, n_cats = self._categorical_mask(X)
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.ndim != 1 or w.shape[0] != n:
                raise ValueError(
                    f"sample_weight must have shape ({n},) like y, got {np.shape(sample_weight)}"
                )
            if not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ValueError("sample_weight must be finite and non-negative")
            if not w.sum() > 0:
                raise ValueError("sample_weight must not be all zero: no row would count")
            sample_weight = w
        y = y_code if self._task == "classification" else y_val
        grown = build_tree(
            X,
            y,
            n_classes=n_classes,
            criterion=self.criterion,
            splitter=self.splitter,
            max_depth=self.max_depth,
            min_samples_split=prm["min_samples_split"],
            min_samples_leaf=prm["min_samples_leaf"],
            max_features=prm["max_features"],
            max_leaf_nodes=self.max_leaf_nodes,
            min_impurity_decrease=prm["min_impurity_decrease"],
            sample_weight=sample_weight,
            is_categorical=is_cat,
            n_categories=n_cats,
            n_candidates=self.n_candidates,
            variance_adjusted=prm["variance_adjusted"],
            fallback=bool(self.fallback),
            dics_pairs=self.dics_pairs,
            dics_clusters=self.dics_clusters,
            dics_remove_used=bool(self.dics_remove_used),
            random_state=self.random_state,
        )
        names = getattr(self, "feature_names_in_", None)
        self.tree_ = grown.tree_arrays(
            classes=self.classes_ if self._task == "classification" else None,
            feature_names=None if names is None else [str(s) for s in names],
        )
        self.dics_dictionary_ = grown.dictionary
        self.node_candidates_ = grown.node_candidates
        self.n_candidates_evaluated_ = int(grown.node_candidates.sum())
        self.feature_importances_ = grown.feature_importances()
        self.max_features_ = prm["max_features"]
        self.is_categorical_ = is_cat
        self.n_outputs_ = 1
        return self

    # -- prediction ------------------------------------------------------------------

    def _check_X_predict(self, X):
        check_is_fitted(self, "tree_")
        X = validate_data(
            self, X, reset=False, dtype=np.float64, order="C", ensure_all_finite="allow-nan"
        )
        if not X.flags.writeable:
            X = X.copy()
        return X

    def apply(self, X):
        """Leaf id (int64) reached by each row of ``X``."""
        return self.tree_._route(self._check_X_predict(X))

    def get_depth(self) -> int:
        """Depth of the fitted tree."""
        check_is_fitted(self, "tree_")
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        """Number of leaves of the fitted tree."""
        check_is_fitted(self, "tree_")
        return self.tree_.n_leaves

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = False
        return tags


#: How CART treats missing values, in one sentence (the pages draw it).
MISSING_VALUES_NOTE = (
    "Missing values: each split learns where the rows with a missing value go (both sides "
    "are tried at every threshold, as scikit-learn does); a split whose feature had no "
    "missing value in training sends them to its larger child. Candidate thresholds come "
    "from the observed values."
)


def _prepare_X(est, X, y):
    """Validated float64 C-contiguous writable ``X`` (numba compiles a separate
    specialisation for readonly arrays, e.g. memory maps) and ``y``."""
    X, y = validate_data(
        est,
        X,
        y,
        dtype=np.float64,
        order="C",
        y_numeric=est._task == "regression",
        ensure_all_finite="allow-nan",
    )
    if not X.flags.writeable or not X.flags.c_contiguous:
        X = np.array(X, dtype=np.float64, order="C")
    return X, y


#: The numpydoc shared by :class:`CARTClassifier` and :class:`CARTRegressor`: the
#: parameters after ``criterion`` (``clusters``: the default number of k-means clusters)...
_PARAMETERS_DOC = """    max_depth : int >= 1 or None, default=None
        Maximum depth; None grows until the leaves are pure or too small.
    min_samples_split : int >= 2 or float in (0, 1], default=2
        Fewest rows a node needs to be split (a float is a fraction of the rows, rounded
        up).
    min_samples_leaf : int >= 1 or float in (0, 1), default=1
        Fewest rows in each child of a split (a float is a fraction of the rows).
    max_features : int >= 1, float in (0, 1], {{'sqrt', 'log2'}} or None, default=None
        Features drawn per node (without replacement, seeded); the search continues past
        them until a valid split is found.  None: every feature.
    max_leaf_nodes : int >= 2 or None, default=None
        Grow best-first (largest weighted impurity decrease first) up to this many leaves;
        None grows depth-first.
    min_impurity_decrease : float >= 0, default=0.0
        Weighted impurity decrease a split must reach (scikit-learn's definition).
    random_state : int, RandomState instance or None, default=None
        Seeds ``max_features``, the 'random' strategy, the DICS k-means and its per-node
        sampling.
    categorical_features : array-like of bool (n_features,) or of int, or None, default=None
        Columns holding integer codes ``0..L-1``, split by their best subset of categories
        (see :mod:`engine.cart`).
    n_candidates : int >= 1 or None, default=None
        The strategy's ``k``: quantiles, histogram bins or random draws (16), kmeans1d
        clusters ({clusters}), dics_paper entries sampled per node (None: all);
        unused by the other strategies.
    variance_adjusted : bool or None, default=None
        Variance-adjusted cluster boundaries; None: True for dics_paper and
        class_centroid, False for kmeans1d.
    fallback : bool, default=True
        Quantile candidates (k = 16) where a strategy yields none.
    dics_pairs : int >= 1 or None, default=None
        DICS centroid pairs ``m`` (None: K(K-1)/2 for K <= 5 clusters, else 25).
    dics_clusters : int >= 2 or None, default=None
        DICS k-means clusters (None: {clusters}).
    dics_remove_used : bool, default=False
        Remove a dictionary entry once a split used it (CGCT).
"""
#: ... and the attributes after the classes, the Raises and the Notes.
_ATTRIBUTES_DOC = """    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
    tree_ : engine.tree.TreeArrays
        The fitted tree in scikit-learn's layout (categorical splits as category sets).
    feature_importances_ : ndarray of float64 (n_features_in_,)
        Total weighted impurity decrease per feature, normalised to sum 1 (as
        scikit-learn's).
    node_candidates_ : ndarray of int64 (n_nodes,)
        (feature, threshold) candidates whose impurity was evaluated at each node.
    n_candidates_evaluated_ : int
        Their total.
    dics_dictionary_ : engine.cart.dics.DICSDictionary or None
        The DICS dictionary ('dics_paper'), else None.
    max_features_ : int
        Features drawn per node, resolved from ``max_features``.
    is_categorical_ : ndarray of bool (n_features_in_,)
        The categorical mask used.

    Raises
    ------
    sklearn.utils._param_validation.InvalidParameterError
        From ``fit``, for a parameter outside ``_parameter_constraints`` (a ValueError
        naming the parameter and its allowed values).
    ValueError
        From ``fit``: categorical columns that are not integer codes, bad sample weights,
        or input scikit-learn's ``validate_data`` rejects (NaN, wrong shape).

    Notes
    -----
    CART: Breiman, Friedman, Olshen and Stone (1984), *Classification and Regression
    Trees*; the candidate strategies follow DICS (Mazumder and Yu, arXiv 2608.20258) and
    docs/spec.md section 5.
"""


class CARTClassifier(ClassifierMixin, _BaseCART):
    __doc__ = (
        """CART classification tree with a choice of candidate-threshold strategies.

    Parameters
    ----------
    splitter : str, default='exhaustive'
        Candidate-threshold strategy (definitions in :mod:`engine.cart.candidates`):
        'exhaustive' (every midpoint, as scikit-learn), 'quantile', 'histogram', 'random',
        'dics_paper', 'kmeans1d', 'class_centroid' or 'kde_valley'.
    criterion : {'gini', 'entropy', 'log_loss'}, default='gini'
        Impurity of a node ('log_loss' is 'entropy', base 2 as scikit-learn).
"""
        + _PARAMETERS_DOC.format(clusters="number of classes")
        + """
    Attributes
    ----------
    classes_ : ndarray (n_classes,)
        Class labels, in the order of ``predict_proba``'s columns.
    n_classes_ : int
        Number of classes.
"""
        + _ATTRIBUTES_DOC
        + """
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from engine.cart import CARTClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = CARTClassifier(splitter="dics_paper", max_depth=3, random_state=0).fit(X, y)
    >>> clf.get_depth(), clf.tree_.node_count
    (3, 9)
    >>> clf.predict(X[[0, 50, 100]])
    array([0, 1, 2])
    """
    )

    _parameter_constraints: dict = {
        "splitter": [StrOptions(set(STRATEGIES))],
        "criterion": [StrOptions({"gini", "entropy", "log_loss"})],
        **_COMMON_CONSTRAINTS,
    }

    _task = "classification"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Grow the tree on ``X`` (n, p) and labels ``y`` (n,); returns ``self``."""
        X, y = _prepare_X(self, X, y)
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        self.classes_ = classes
        self.n_classes_ = int(classes.shape[0])
        y_code = np.ascontiguousarray(codes.reshape(-1), dtype=np.int64)
        return self._fit(X, y_code, np.empty(0, dtype=np.float64), self.n_classes_, sample_weight)

    def predict_proba(self, X):
        """Class fractions of the reached leaf, float64 ``(n, n_classes)``."""
        X = self._check_X_predict(X)
        return self.tree_.value[self.tree_._route(X), 0, :]

    def predict(self, X):
        """Majority class of the reached leaf (ties to the first class)."""
        proba = self.predict_proba(X)
        return self.classes_.take(np.argmax(proba, axis=1), axis=0)

    def predict_log_proba(self, X):
        """Natural log of :meth:`predict_proba` (``-inf`` for zero fractions)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


class CARTRegressor(RegressorMixin, _BaseCART):
    __doc__ = (
        """CART regression tree (squared error) with a choice of candidate-threshold strategies.

    Parameters
    ----------
    splitter : str, default='exhaustive'
        Candidate-threshold strategy (definitions in :mod:`engine.cart.candidates`):
        'exhaustive' (every midpoint, as scikit-learn), 'quantile', 'histogram', 'random',
        'dics_paper', 'kmeans1d' or 'kde_valley' ('class_centroid' needs class labels).
    criterion : {'squared_error'}, default='squared_error'
        Impurity of a node.
"""
        + _PARAMETERS_DOC.format(clusters="8")
        + """
    Attributes
    ----------
"""
        + _ATTRIBUTES_DOC
        + """
    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from engine.cart import CARTRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = CARTRegressor(splitter="quantile", n_candidates=8, max_depth=2).fit(X, y)
    >>> reg.tree_.n_leaves
    4
    >>> reg.predict(X[:2]).shape
    (2,)
    """
    )

    _parameter_constraints: dict = {
        "splitter": [StrOptions(set(strategies_for("regression")))],
        "criterion": [StrOptions({"squared_error"})],
        **_COMMON_CONSTRAINTS,
    }

    _task = "regression"

    def __init__(
        self,
        *,
        splitter="exhaustive",
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        max_features=None,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        random_state=None,
        categorical_features=None,
        n_candidates=None,
        variance_adjusted=None,
        fallback=True,
        dics_pairs=None,
        dics_clusters=None,
        dics_remove_used=False,
    ):
        super().__init__(
            splitter=splitter,
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            random_state=random_state,
            categorical_features=categorical_features,
            n_candidates=n_candidates,
            variance_adjusted=variance_adjusted,
            fallback=fallback,
            dics_pairs=dics_pairs,
            dics_clusters=dics_clusters,
            dics_remove_used=dics_remove_used,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Grow the tree on ``X`` (n, p) and targets ``y`` (n,); returns ``self``."""
        X, y = _prepare_X(self, X, y)
        y_val = np.array(y, dtype=np.float64, order="C").reshape(-1)  # fresh: writable
        return self._fit(X, np.empty(0, dtype=np.int64), y_val, 0, sample_weight)

    def predict(self, X):
        """Mean target of the reached leaf, float64 ``(n,)``."""
        X = self._check_X_predict(X)
        return self.tree_.value[self.tree_._route(X), 0, 0]


@register_warmup("cart")
def _warmup() -> None:
    """Fit tiny trees with every code path (both tasks, categorical, best-first, DICS)."""
    X = np.array(
        [
            [0.0, 1.0, 0.0],
            [1.0, 0.0, 1.0],
            [2.0, 1.0, 2.0],
            [3.0, 0.0, 0.0],
            [4.0, 1.0, 1.0],
            [5.0, 0.0, 2.0],
        ]
    )
    yc = np.array([0, 0, 1, 1, 0, 1])
    yr = np.array([0.0, 0.5, 1.0, 2.0, 1.5, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in STRATEGIES:
            CARTClassifier(splitter=s, random_state=0, categorical_features=[2]).fit(X, yc)
        CARTClassifier(max_leaf_nodes=3, max_features=2, random_state=0).fit(X, yc).predict(X)
        CARTRegressor(categorical_features=[2], random_state=0).fit(X, yr).predict(X)
        CARTRegressor(splitter="kmeans1d", max_leaf_nodes=3).fit(X, yr)
