"""scikit-learn compatible :class:`CARTClassifier` and :class:`CARTRegressor` over the
numba builder (:func:`engine.cart.builder.build_tree`)."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from engine._numba import register_warmup
from engine.cart.builder import _INT_MAX, build_tree
from engine.cart.candidates import STRATEGIES, default_k, strategy_code
from engine.criteria import criterion_code


def _check_int(name, value, low, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        extra = " or None" if allow_none else ""
        raise ValueError(f"{name} must be an int >= {low}{extra}, got {value!r}")
    return int(value)


def _check_bool(name, value):
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


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

    def _validated_params(self, n_features: int, n_classes: int) -> dict:
        task = self._task
        out = {
            "strategy": strategy_code(self.splitter, task)
            if isinstance(self.splitter, str)
            else strategy_code(repr(self.splitter), task),
            "criterion": criterion_code(self.criterion, task)
            if isinstance(self.criterion, str)
            else criterion_code(repr(self.criterion), task),
        }
        md = _check_int("max_depth", self.max_depth, 1, allow_none=True)
        out["max_depth"] = _INT_MAX if md is None else md
        mss = self.min_samples_split
        if isinstance(mss, numbers.Integral) and not isinstance(mss, bool):
            mss = _check_int("min_samples_split", mss, 2)
        elif isinstance(mss, numbers.Real) and not isinstance(mss, bool) and 0.0 < mss <= 1.0:
            mss = None  # resolved below with n_samples
        else:
            raise ValueError(
                f"min_samples_split must be an int >= 2 or a float in (0, 1], got {mss!r}"
            )
        out["min_samples_split"] = mss
        msl = self.min_samples_leaf
        if isinstance(msl, numbers.Integral) and not isinstance(msl, bool):
            msl = _check_int("min_samples_leaf", msl, 1)
        elif isinstance(msl, numbers.Real) and not isinstance(msl, bool) and 0.0 < msl < 1.0:
            msl = None
        else:
            raise ValueError(
                f"min_samples_leaf must be an int >= 1 or a float in (0, 1), got {msl!r}"
            )
        out["min_samples_leaf"] = msl
        mf = self.max_features
        if mf is None:
            mfv = n_features
        elif isinstance(mf, str) and mf in ("sqrt", "log2"):
            f = np.sqrt if mf == "sqrt" else np.log2
            mfv = max(1, int(f(n_features)))
        elif isinstance(mf, numbers.Integral) and not isinstance(mf, bool) and mf >= 1:
            mfv = min(int(mf), n_features)
        elif isinstance(mf, numbers.Real) and not isinstance(mf, bool) and 0.0 < mf <= 1.0:
            mfv = max(1, int(mf * n_features))
        else:
            raise ValueError(
                "max_features must be None, 'sqrt', 'log2', an int >= 1 or a float in (0, 1], "
                f"got {mf!r}"
            )
        out["max_features"] = mfv
        mln = _check_int("max_leaf_nodes", self.max_leaf_nodes, 2, allow_none=True)
        out["max_leaf_nodes"] = 0 if mln is None else mln
        mid = self.min_impurity_decrease
        if isinstance(mid, bool) or not isinstance(mid, numbers.Real) or not mid >= 0.0:
            raise ValueError(f"min_impurity_decrease must be a float >= 0, got {mid!r}")
        out["min_impurity_decrease"] = float(mid)
        k = _check_int("n_candidates", self.n_candidates, 1, allow_none=True)
        out["k"] = default_k(self.splitter, n_classes) if k is None else k
        va = self.variance_adjusted
        if va is None:
            va = self.splitter != "kmeans1d"
        out["variance_adjusted"] = _check_bool("variance_adjusted", va)
        out["fallback"] = _check_bool("fallback", self.fallback)
        out["dics_pairs"] = _check_int("dics_pairs", self.dics_pairs, 1, allow_none=True)
        out["dics_clusters"] = _check_int("dics_clusters", self.dics_clusters, 2, allow_none=True)
        out["dics_remove_used"] = _check_bool("dics_remove_used", self.dics_remove_used)
        return out

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
        prm = self._validated_params(p, n_classes)
        if prm["min_samples_split"] is None:
            prm["min_samples_split"] = max(2, int(np.ceil(self.min_samples_split * n)))
        if prm["min_samples_leaf"] is None:
            prm["min_samples_leaf"] = max(1, int(np.ceil(self.min_samples_leaf * n)))
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
            fallback=prm["fallback"],
            dics_pairs=prm["dics_pairs"],
            dics_clusters=prm["dics_clusters"],
            dics_remove_used=prm["dics_remove_used"],
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
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
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
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        return tags


def _prepare_X(est, X, y):
    """Validated float64 C-contiguous writable ``X`` (numba compiles a separate
    specialisation for readonly arrays, e.g. memory maps) and ``y``."""
    X, y = validate_data(
        est, X, y, dtype=np.float64, order="C", y_numeric=est._task == "regression"
    )
    if not X.flags.writeable or not X.flags.c_contiguous:
        X = np.array(X, dtype=np.float64, order="C")
    return X, y


class CARTClassifier(ClassifierMixin, _BaseCART):
    """CART classification tree with a choice of candidate-threshold strategies.

    Parameters
    ----------
    splitter : str, default 'exhaustive'
        Candidate strategy, one of :data:`engine.cart.candidates.STRATEGIES`: 'exhaustive',
        'quantile', 'histogram', 'random', 'dics_paper', 'kmeans1d', 'class_centroid',
        'kde_valley' (definitions in :mod:`engine.cart.candidates`).
    criterion : {'gini', 'entropy', 'log_loss'}, default 'gini'
    max_depth : int >= 1 or None (grow until pure)
    min_samples_split : int >= 2 or float in (0, 1] (fraction of rows)
    min_samples_leaf : int >= 1 or float in (0, 1)
    max_features : None, 'sqrt', 'log2', int or float - features drawn per node (without
        replacement, seeded); the search continues past them until a valid split is found.
    max_leaf_nodes : int >= 2 or None - best-first growth when set.
    min_impurity_decrease : float >= 0 - weighted decrease a split must reach.
    random_state : None, int or RandomState - seeds max_features, 'random', the DICS
        k-means and per-node sampling.
    categorical_features : None, bool mask or int indices - columns holding integer codes
        ``0..L-1`` split by best subset (see the module docstring).
    n_candidates : int or None - the strategy's ``k``: quantiles (16), histogram bins (16),
        random draws (16), kmeans1d clusters (number of classes), dics_paper dictionary
        entries sampled per node (None = all); unused by the other strategies.
    variance_adjusted : bool or None - variance-adjusted boundaries (default True for
        dics_paper and class_centroid, False for kmeans1d).
    fallback : bool, default True - quantile (k=16) candidates when a strategy yields none.
    dics_pairs : int or None - DICS centroid pairs ``m`` (default K(K-1)/2 if K <= 5 else 25).
    dics_clusters : int or None - DICS k-means clusters (default: number of classes).
    dics_remove_used : bool - remove a used dictionary entry from the dictionary (CGCT).

    Fitted attributes
    -----------------
    ``classes_``, ``n_classes_``, ``n_features_in_``, ``feature_names_in_`` (DataFrame
    input), ``tree_`` (:class:`engine.tree.TreeArrays`), ``feature_importances_``
    (normalised total weighted impurity decrease, as scikit-learn), ``node_candidates_``
    (int64 per node: (feature, threshold) candidates whose impurity was evaluated there),
    ``n_candidates_evaluated_`` (their total), ``dics_dictionary_``
    (:class:`engine.cart.dics.DICSDictionary` or None), ``max_features_``,
    ``is_categorical_``.
    """

    _task = "classification"

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
    """CART regression tree (squared error) with a choice of candidate strategies.

    Same parameters and fitted attributes as :class:`CARTClassifier` except: ``criterion``
    is 'squared_error'; ``splitter`` cannot be the label-aware 'class_centroid'; the
    default ``k`` of 'kmeans1d' and the DICS clusters is 8.
    """

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
