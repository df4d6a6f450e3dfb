"""Conditional inference forests (docs/spec.md section 4): bootstrap ensembles of conditional
inference trees with feature sampling at every node (``max_features='sqrt'``).

* ``bootstrap=True`` draws ``max_samples`` rows (default ``n``; an int is capped at ``n``, a
  fraction is rounded up) with replacement per tree; the classifier's
  ``sampling_method='stratified'`` (default) draws each class's share within the class
  (exactly its size with the default ``max_samples``, so every tree sees every class), as
  citrees' ``stratified_bootstrap_sample``.
* ``feature_importances_``: the sum of the trees' normalised importance vectors,
  renormalised (all zeros when no tree split).
* Predictions average the trees' class fractions (classifier) or values (regressor).
* ``n_jobs`` fits trees with joblib threads; results do not depend on ``n_jobs`` (each
  tree's seed is drawn up front from ``random_state``).

Fitted attributes: ``estimators_`` (fitted trees), ``ensemble_``
(:class:`engine.tree.TreeEnsemble`), ``feature_importances_``.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from engine.cit.tree import (
    CLASSIFICATION_CONSTRAINTS,
    COMMON_PARAMETERS_DOC,
    REGRESSION_CONSTRAINTS,
    TREE_CONSTRAINTS,
    ConditionalInferenceTreeClassifier,
    ConditionalInferenceTreeRegressor,
    _selector_splitter_doc,
    tree_param_specs,
)
from engine.compare import ModelSpec, param_spec, register_model
from engine.tree import TreeEnsemble

_TREE_PARAMS = (
    "p_value",
    "teststat",
    "selector",
    "splitter",
    "alpha_selector",
    "alpha_splitter",
    "adjust_alpha_selector",
    "adjust_alpha_splitter",
    "n_resamples_selector",
    "n_resamples_splitter",
    "early_stopping_selector",
    "early_stopping_splitter",
    "feature_muting",
    "feature_scanning",
    "threshold_scanning",
    "threshold_method",
    "max_thresholds",
    "max_features",
    "max_depth",
    "min_samples_split",
    "min_samples_leaf",
    "min_child_fraction",
    "min_impurity_decrease",
    "categorical_features",
    "missing_rule",
)


def _apportion(sizes, total: int) -> np.ndarray:
    """Integer shares (int64) of ``total`` proportional to ``sizes`` by the largest remainder
    (Hamilton) method, as citrees' ``_allocate_samples``: floor of each ideal share, then one
    more to the largest fractional parts (ties to the lower index) until the sum is ``total``.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    ideal = sizes * total / sizes.sum()
    out = np.floor(ideal).astype(np.int64)
    rest = int(total - out.sum())
    if rest > 0:
        out[np.argsort(-(ideal - out), kind="stable")[:rest]] += 1
    return out


class _BaseCIF(BaseEstimator):
    _task = "classification"
    _tree_cls = ConditionalInferenceTreeClassifier

    def __init__(
        self,
        *,
        n_estimators=100,
        bootstrap=True,
        sampling_method="stratified",
        max_samples=None,
        n_jobs=None,
        p_value="asymptotic",
        teststat="quadratic",
        selector=None,
        splitter=None,
        alpha_selector=0.05,
        alpha_splitter=0.05,
        adjust_alpha_selector=True,
        adjust_alpha_splitter=True,
        n_resamples_selector="auto",
        n_resamples_splitter="auto",
        early_stopping_selector="adaptive",
        early_stopping_splitter="adaptive",
        feature_muting=False,
        feature_scanning=True,
        threshold_scanning=True,
        threshold_method="exact",
        max_thresholds=None,
        max_features="sqrt",
        max_depth=None,
        min_samples_split=20,
        min_samples_leaf=7,
        min_child_fraction=0.01,
        min_impurity_decrease=0.0,
        categorical_features=None,
        missing_rule="random",
        random_state=None,
    ):
        self.n_estimators = n_estimators
        self.bootstrap = bootstrap
        self.sampling_method = sampling_method
        self.max_samples = max_samples
        self.n_jobs = n_jobs
        self.p_value = p_value
        self.teststat = teststat
        self.selector = selector
        self.splitter = splitter
        self.alpha_selector = alpha_selector
        self.alpha_splitter = alpha_splitter
        self.adjust_alpha_selector = adjust_alpha_selector
        self.adjust_alpha_splitter = adjust_alpha_splitter
        self.n_resamples_selector = n_resamples_selector
        self.n_resamples_splitter = n_resamples_splitter
        self.early_stopping_selector = early_stopping_selector
        self.early_stopping_splitter = early_stopping_splitter
        self.feature_muting = feature_muting
        self.feature_scanning = feature_scanning
        self.threshold_scanning = threshold_scanning
        self.threshold_method = threshold_method
        self.max_thresholds = max_thresholds
        self.max_features = max_features
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_child_fraction = min_child_fraction
        self.min_impurity_decrease = min_impurity_decrease
        self.categorical_features = categorical_features
        self.missing_rule = missing_rule
        self.random_state = random_state

    def _sample(self, rng, n, y_code, n_classes):
        """Row indices (sorted int64) of one tree's bootstrap sample, as citrees' forest.

        Size ``m``: ``n`` (``max_samples=None``), ``min(max_samples, n)`` (an int) or
        ``ceil(max_samples * n)`` (a fraction), citrees' ``calculate_max_value``.  Stratified
        (classifier, ``sampling_method='stratified'``): class ``k`` gets ``m_k`` rows drawn
        with replacement within the class, ``m_k`` the largest-remainder apportionment of
        ``m`` by the class sizes (``m_k = n_k`` when ``m = n``; the ``m_k`` sum to ``m``; a
        tiny class can get 0 when ``m < n``).  Otherwise ``m`` rows with replacement.
        """
        if not self.bootstrap:
            return np.arange(n)
        ms = self.max_samples  # validated: None, an int >= 1 or a float in (0, 1]
        if ms is None:
            size = n
        elif isinstance(ms, Integral):
            size = min(int(ms), n)
        else:
            size = max(1, int(math.ceil(ms * n)))
        if self._task == "classification" and self.sampling_method == "stratified":
            members = [np.flatnonzero(y_code == k) for k in range(n_classes)]
            takes = _apportion(np.array([idx.size for idx in members]), size)
            parts = [
                idx[rng.randint(0, idx.size, size=take)]
                for idx, take in zip(members, takes, strict=True)
                if take > 0
            ]
            return np.sort(np.concatenate(parts))
        return np.sort(rng.randint(0, n, size=size))

    def _fit_forest(self, X, y_code, y_val, n_classes):
        if self.n_jobs in (None, 1):
            for _ in self._fit_forest_steps(X, y_code, y_val, n_classes):
                pass
            return self
        one = self._plan(X, y_code, n_classes, y_val)
        trees = Parallel(n_jobs=self.n_jobs, prefer="threads")(
            delayed(one)(i) for i in range(self.n_estimators)
        )
        return self._finish(X, trees, n_classes)

    def _fit_forest_steps(self, X, y_code, y_val, n_classes):
        one = self._plan(X, y_code, n_classes, y_val)
        trees = []
        for i in range(self.n_estimators):
            trees.append(one(i))
            if i + 1 < self.n_estimators:
                yield i + 1
        self._finish(X, trees, n_classes)
        yield self.n_estimators

    def fit_steps(self, X, y):
        """Fit tree by tree (sequentially, whatever ``n_jobs``): a generator that yields the
        number of trees fitted so far (1, ..., ``n_estimators``) after each tree; the fitted
        attributes are set just before the last yield.  Exhausting it gives the same forest
        as :meth:`fit` (same seeds, same trees); stop iterating to abandon the fit (for a
        background job's Stop).  Raises ValueError as :meth:`fit` does: on bad ``X`` / ``y``
        at the call, on bad forest parameters at the first ``next``.
        """
        return self._fit_forest_steps(*self._prepare(X, y))

    def _plan(self, X, y_code, n_classes, y_val):
        """Validate, draw every tree's seed and rows up front; return ``one(i)`` that fits
        tree ``i`` (so results do not depend on the order or threads); the parameters are
        validated by then."""
        rng = check_random_state(self.random_state)
        n = X.shape[0]
        seeds = rng.randint(0, 2**31 - 1, size=self.n_estimators)
        samples = [self._sample(np.random.RandomState(s), n, y_code, n_classes) for s in seeds]
        params = {k: getattr(self, k) for k in _TREE_PARAMS}

        def one(i):
            tree = self._tree_cls(random_state=int(seeds[i]), **params)
            rows = samples[i]
            if self._task == "classification":
                tree.classes_ = self.classes_
                tree.n_classes_ = n_classes
            return tree._fit(
                X[rows],
                np.ascontiguousarray(y_code[rows]),
                np.ascontiguousarray(y_val[rows]),
                n_classes,
            )

        return one

    def _finish(self, X, trees, n_classes):
        self.estimators_ = trees
        self.n_features_in_ = X.shape[1]
        imp = np.sum([t.feature_importances_ for t in trees], axis=0)
        total = imp.sum()
        self.feature_importances_ = imp / total if total > 0 else imp
        self.ensemble_ = TreeEnsemble(
            [t.tree_ for t in trees],
            np.full(len(trees), -1, dtype=np.int64),
            1.0 / len(trees),
            np.zeros(n_classes),
            "forest",
            self._task,
            classes_=self.classes_ if self._task == "classification" else None,
        )
        return self

    def _X(self, X):
        check_is_fitted(self, "estimators_")
        X = validate_data(
            self, X, reset=False, dtype=np.float64, order="C", ensure_all_finite="allow-nan"
        )
        return self.estimators_[0].tree_.check_X(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # the trees route NaN (their missing_rule); sparse X is refused (the statistics read
        # dense columns)
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = False
        return tags


#: Constraints of the forest's own parameters.
FOREST_CONSTRAINTS: dict = {
    "n_estimators": [Interval(Integral, 1, None, closed="left")],
    "bootstrap": ["boolean"],
    "sampling_method": [StrOptions({"stratified", "bootstrap"})],
    "max_samples": [
        Interval(Integral, 1, None, closed="left"),
        Interval(RealNotInt, 0, 1, closed="right"),
        None,
    ],
    "n_jobs": [Integral, None],
}

_FOREST_PARAMETERS_DOC = """    n_estimators : int >= 1, default=100
        Number of trees.
    bootstrap : bool, default=True
        Fit each tree on a bootstrap sample (False: every tree on all rows).
    sampling_method : {{'stratified', 'bootstrap'}}, default='stratified'
        {sampling}
    max_samples : int >= 1, float in (0, 1] or None, default=None
        Rows drawn per tree: None = n, an int (capped at n), or a fraction of n rounded up.
    n_jobs : int or None, default=None
        joblib threads fitting the trees (None or 1: in this thread); the forest does not
        depend on it.
"""

_FOREST_ATTRIBUTES_DOC = """    estimators_ : list of {tree}
        The fitted trees.
    ensemble_ : engine.tree.TreeEnsemble
        The trees as one ensemble (mean of the trees' outputs).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Sum of the trees' normalised importances, renormalised (all zeros when no tree
        split).
"""


class ConditionalInferenceForestClassifier(ClassifierMixin, _BaseCIF):
    _task = "classification"
    _tree_cls = ConditionalInferenceTreeClassifier
    __doc__ = (
        """Conditional inference forest classifier (Milletich et al., arXiv 2607.01417).

    Bootstrap ensemble of :class:`ConditionalInferenceTreeClassifier` with feature sampling
    at every node (``max_features='sqrt'``); ``predict_proba`` averages the trees' class
    fractions.

    Parameters
    ----------
"""
        + _FOREST_PARAMETERS_DOC.format(
            sampling="'stratified' draws each class's share of the sample within the class "
            "(largest-remainder apportionment,\n        as citrees), so with the default "
            "``max_samples`` every tree sees every class;\n        'bootstrap' draws rows "
            "regardless of class."
        )
        + _selector_splitter_doc("classification")
        + COMMON_PARAMETERS_DOC.format(max_features="'sqrt'")
        + """    random_state : None, int or numpy.random.RandomState, default=None
        Seeds every tree's rows and permutations (drawn up front).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.
    n_classes_ : int
        Number of classes.
"""
        + _FOREST_ATTRIBUTES_DOC.format(tree="ConditionalInferenceTreeClassifier")
        + """
    Notes
    -----
    Missing values (NaN in ``X``) are handled by each tree (``missing_rule``, see
    :class:`ConditionalInferenceTreeClassifier`); sparse ``X`` is refused.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from engine.cit import ConditionalInferenceForestClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> forest = ConditionalInferenceForestClassifier(n_estimators=10, random_state=0)
    >>> bool(forest.fit(X, y).score(X, y) > 0.9)
    True
"""
    )
    _parameter_constraints: dict = {
        **FOREST_CONSTRAINTS,
        **CLASSIFICATION_CONSTRAINTS,
        **TREE_CONSTRAINTS,
    }

    def _prepare(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", ensure_all_finite="allow-nan")
        check_classification_targets(y)
        self.classes_, y_code = np.unique(y, return_inverse=True)
        self.n_classes_ = self.classes_.size
        return (
            X,
            np.ascontiguousarray(y_code, dtype=np.int64),
            np.zeros(X.shape[0]),
            self.n_classes_,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit ``n_estimators`` trees on ``X`` (n, p) and class labels ``y`` (n,); returns
        ``self``.  Raises ``InvalidParameterError`` for bad parameters, ``ValueError`` with
        scikit-learn's messages for bad data."""
        return self._fit_forest(*self._prepare(X, y))

    def predict_proba(self, X):
        """Mean of the trees' class fractions: float64 ``(n, n_classes)``."""
        X = self._X(X)
        return np.mean([t.tree_.predict_proba(X) for t in self.estimators_], axis=0)

    def predict(self, X):
        """Class of largest mean fraction: ``(n,)``."""
        proba = self.predict_proba(X)
        return self.classes_.take(np.argmax(proba, axis=1), axis=0)


class ConditionalInferenceForestRegressor(RegressorMixin, _BaseCIF):
    _task = "regression"
    _tree_cls = ConditionalInferenceTreeRegressor
    __doc__ = (
        """Conditional inference forest regressor (Milletich et al., arXiv 2607.01417).

    Bootstrap ensemble of :class:`ConditionalInferenceTreeRegressor` with feature sampling
    at every node (``max_features='sqrt'``); ``predict`` averages the trees' values.

    Parameters
    ----------
"""
        + _FOREST_PARAMETERS_DOC.format(
            sampling="Ignored by the regressor (rows are drawn regardless of y)."
        )
        + _selector_splitter_doc("regression")
        + COMMON_PARAMETERS_DOC.format(max_features="'sqrt'")
        + """    random_state : None, int or numpy.random.RandomState, default=None
        Seeds every tree's rows and permutations (drawn up front).

    Attributes
    ----------
"""
        + _FOREST_ATTRIBUTES_DOC.format(tree="ConditionalInferenceTreeRegressor")
        + """
    Notes
    -----
    Missing values (NaN in ``X``) are handled by each tree (``missing_rule``); sparse
    ``X`` is refused.  With feature sampling, a
    tree whose root draw misses every associated feature stops at the root (no test is
    significant), which lowers the training score when few features matter: on
    scikit-learn's check data (one informative feature of ten) the training R^2 is about
    0.48, so the ``poor_score`` tag is set unless ``max_features=None``.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.cit import ConditionalInferenceForestRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(150, 4))
    >>> y = 3 * X[:, 2] + rng.normal(size=150)
    >>> forest = ConditionalInferenceForestRegressor(n_estimators=5, random_state=0)
    >>> int(np.argmax(forest.fit(X, y).feature_importances_))
    2
"""
    )
    _parameter_constraints: dict = {
        **FOREST_CONSTRAINTS,
        **REGRESSION_CONSTRAINTS,
        **TREE_CONSTRAINTS,
    }

    def _prepare(self, X, y):
        X, y = validate_data(
            self, X, y, dtype=np.float64, order="C", y_numeric=True, ensure_all_finite="allow-nan"
        )
        y_val = np.ascontiguousarray(y, dtype=np.float64)
        return X, np.zeros(X.shape[0], dtype=np.int64), y_val, 1

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit ``n_estimators`` trees on ``X`` (n, p) and numeric ``y`` (n,); returns
        ``self``.  Raises ``InvalidParameterError`` for bad parameters, ``ValueError`` with
        scikit-learn's messages for bad data."""
        return self._fit_forest(*self._prepare(X, y))

    def predict(self, X):
        """Mean of the trees' values: float64 ``(n,)``."""
        X = self._X(X)
        return np.mean([t.tree_.predict(X) for t in self.estimators_], axis=0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # see the Notes: per-node feature sampling plus significance-tested splits leave
        # some trees as stumps when few features are associated with y
        tags.regressor_tags.poor_score = self.max_features is not None
        return tags


def _build_cif(task, random_state, **params):
    cls = (
        ConditionalInferenceForestClassifier
        if task == "classification"
        else ConditionalInferenceForestRegressor
    )
    return cls(random_state=random_state, **params)


register_model(
    ModelSpec(
        key="treelab_cif",
        label="Conditional inference forest (TreeLab)",
        build=_build_cif,
        params=(
            param_spec(
                ConditionalInferenceForestClassifier,
                "n_estimators",
                50,
                high=500,
                help="Number of trees.",
            ),
            *tree_param_specs(ConditionalInferenceForestClassifier),
        ),
        description="Bootstrap forest of conditional inference trees with sqrt feature sampling "
        "per node; Milletich et al., arXiv 2607.01417.",
        family="TreeLab",
    )
)
