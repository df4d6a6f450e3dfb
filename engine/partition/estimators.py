"""scikit-learn estimators: Partition Tree / Partition Forest, regression and classification.

All four share :class:`_PartitionBase`: a list of fitted trees (one for a tree). Per tree
and query x the *unnormalised* slice is read off the matched leaves (both children at Y
splits); the forest averages unnormalised densities and then normalises per slice
(``aggregation='unnormalised'``, docs/spec.md section 2), or averages already-normalised slices
(``aggregation='normalised'``, a different estimator offered as a labelled option).

Density floor: :meth:`nll` takes ``-log(max(p, floor))`` so a y outside the support (density
0) gives a finite value; those rows are counted in ``n_out_of_support``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from engine._numba import register_warmup
from engine.compare import ModelSpec, param_spec, register_model
from engine.partition.base import (
    BOX_CONSTRAINTS,
    FOREST_CONSTRAINTS,
    MAX_LEAVES_CLF,
    MAX_LEAVES_REG,
    SIZE_CONSTRAINTS,
    TREE_CONSTRAINTS,
    _ForestMixin,
    _PartitionBase,
    _predict_mean,
    _TreeMixin,
)

_PARAMETERS_DOC = """    max_leaves : int >= 1, default={max_leaves}
        Leaf budget of the best-first growth.
    max_depth : int >= 0 or None, default=None
        Maximum depth (None: unlimited).
    min_samples_xy : int >= 0, default=1
        Fewest rows of a child's XY set (x in A_X and y in A_Y).
    min_samples_x : int >= 1, default=1
        Fewest rows of a child's X set (x in A_X).
    min_samples_y : int >= 1, default=1
        Fewest rows of a child's Y set (y in A_Y).
    min_volume_fraction : float in [0, 1] or None, default=None
        A continuous Y child narrower than this fraction of the root's Y width is refused
        (None: 0.1 for regression, 0 for classification).
    boundary_expansion : float >= 0, default=0.1
        f: the Y box is [min - f (max - min) / 2, max + f (max - min) / 2] (regression).
    categorical_features : array-like of int or of bool, or None, default=None
        Columns holding codes 0..k-1: column indices or a boolean mask of length
        n_features.
"""

_BOX_DOC = """    box : {'spec', 'reference'}, default='spec'
        'spec': the Y box above, Y thresholds at midpoints (docs/spec.md section 2).
        'reference': the ``partition-tree`` package's rule (docs/methods.md, "Partition
        Tree and its reference package"): when y lies on a decimal lattice r * i
        (``y_step_``, e.g. integers), the box's ends move out to the lattice's half steps,
        a Y threshold between two values is the half step below the upper one, and the
        parent's measure in a Y split's gain is floored at 1.
"""

_STEP_DOC = """    y_step_ : float
        The y lattice's resolution used by ``box='reference'`` (0: none, or ``box='spec'``).
"""

_SIZE_DOC = """    select_size : {{'best_validation', 'last'}}, default='best_validation'
        Which size the fitted tree keeps when :meth:`fit` gets validation rows: the number
        of leaves with the lowest validation NLL along the growth (ties: fewer leaves;
        the growth still runs to ``max_leaves`` and ``trace_`` keeps the whole curve), or
        'last', the grown tree. Without validation rows the grown tree is kept.
"""

_FOREST_PARAMETERS_DOC = """    n_estimators : int >= 1, default=50
        Number of trees.
    max_samples : float in (0, 1], default=0.8
        Bootstrap sample of each tree, as a fraction of the rows (rounded, at least 1).
    max_features : float in (0, 1], default=0.8
        Fraction of the X columns searched at each split (redrawn per split; y is always
        searched).
"""

_FOREST_TAIL_DOC = """    aggregation : {'unnormalised', 'normalised'}, default='unnormalised'
        'unnormalised' averages the trees' unnormalised densities, then normalises per
        slice (docs/spec.md section 2); 'normalised' averages the normalised slices (a different
        estimator, offered as a labelled option).
    n_jobs : int or None, default=None
        joblib workers over trees (threads unless a ``joblib.parallel_config`` backend is
        set); the forest does not depend on it.
"""

_RANDOM_STATE_DOC = """    random_state : None, int or numpy.random.RandomState, default=None
        {what}
"""

_ATTRIBUTES_DOC = """    trees_ : list of engine.partition.PartitionTreeArrays
        The fitted trees ({trees}).
    trace_ : list of tuple
        {trace}
    is_categorical_ : ndarray of bool of shape (n_features_in_,)
        Which columns were split by category sets.
    n_categories_ : ndarray of int64 of shape (n_features_in_,)
        Codes per categorical column (0 for continuous ones).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
    y_box_ : tuple of float
        The Y box {box}.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Log-loss gain of the X splits per feature, normalised to sum 1 (all zeros when no
        X split).
    gain_importances_ : ndarray of shape (n_features_in_,)
        The same gains, not normalised (mean over trees).
    y_importance_ : float
        Gain of the Y splits (mean over trees).
"""

_NOTES_DOC = """
    Notes
    -----
    Leaves are product cells A_X x A_Y with density n_XY / (n_X mu_Y(A_Y)), grown
    best-first on the log-loss gain (docs/spec.md section 2; partition_tree, Vieira et al.).
    Missing values are not routed: NaN in ``X`` is refused (``allow_nan`` tag False), as
    is sparse ``X``.  Bad parameters raise
    :class:`sklearn.utils._param_validation.InvalidParameterError` (a ``ValueError``);
    bad data raises :class:`engine.data.DataError` (a ``ValueError``) with scikit-learn's
    messages.
"""

_TREE_TRACE = "(n_leaves, train NLL, validation NLL) after each split (see :meth:`fit`)."
_FOREST_TRACE = "(n_trees, train NLL, validation NLL) rows of :meth:`fit_steps`."


class PartitionTreeRegressor(_TreeMixin, RegressorMixin, _PartitionBase):
    __doc__ = (
        """Partition Tree for the conditional density p(y | x) of a continuous y;
    ``predict`` is the slice mean.

    Parameters
    ----------
"""
        + _PARAMETERS_DOC.format(max_leaves=MAX_LEAVES_REG)
        + _BOX_DOC
        + _SIZE_DOC.format()
        + _RANDOM_STATE_DOC.format(what="Seeds the growth (None = 0).")
        + """
    Attributes
    ----------
"""
        + _ATTRIBUTES_DOC.format(trees="one", trace=_TREE_TRACE, box="(low, high) of y.")
        + _STEP_DOC
        + """    partition_tree_ : engine.partition.PartitionTreeArrays
        The fitted tree (``trees_[0]``).
    n_leaves_grown_ : int
        Leaves of the grown tree (more than ``partition_tree_.n_leaves`` when
        ``select_size`` pruned it to the best validation size).
"""
        + _NOTES_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from engine.partition import PartitionTreeRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-2, 2, size=(500, 1))
    >>> y = np.sin(X[:, 0]) + (0.1 + 0.5 * np.abs(X[:, 0])) * rng.normal(size=500)
    >>> model = PartitionTreeRegressor(max_leaves=16).fit(X, y)
    >>> s = model.slice(X[0])
    >>> round(float(np.sum(s["heights"] * np.diff(s["edges"]))), 9)
    1.0
"""
    )
    _parameter_constraints: dict = {**TREE_CONSTRAINTS, **SIZE_CONSTRAINTS, **BOX_CONSTRAINTS}

    def __init__(
        self,
        max_leaves=MAX_LEAVES_REG,
        max_depth=None,
        min_samples_xy=1,
        min_samples_x=1,
        min_samples_y=1,
        min_volume_fraction=None,
        boundary_expansion=0.1,
        box="spec",
        categorical_features=None,
        select_size="best_validation",
        random_state=None,
    ):
        self.max_leaves = max_leaves
        self.max_depth = max_depth
        self.min_samples_xy = min_samples_xy
        self.min_samples_x = min_samples_x
        self.min_samples_y = min_samples_y
        self.min_volume_fraction = min_volume_fraction
        self.boundary_expansion = boundary_expansion
        self.box = box
        self.categorical_features = categorical_features
        self.select_size = select_size
        self.random_state = random_state

    def predict(self, X):
        """Posterior mean of y given x: float64 ``(n,)``."""
        return _predict_mean(self, X)


class PartitionTreeClassifier(_TreeMixin, ClassifierMixin, _PartitionBase):
    __doc__ = (
        """Partition Tree for P(class | x) (the discrete-y case of the conditional density).

    Parameters
    ----------
"""
        + _PARAMETERS_DOC.format(max_leaves=MAX_LEAVES_CLF)
        + _SIZE_DOC.format()
        + _RANDOM_STATE_DOC.format(what="Seeds the growth (None = 0).")
        + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.
    n_classes_ : int
        Number of classes.
"""
        + _ATTRIBUTES_DOC.format(
            trees="one", trace=_TREE_TRACE, box="(0, n_classes) of the class codes."
        )
        + """    partition_tree_ : engine.partition.PartitionTreeArrays
        The fitted tree (``trees_[0]``).
    n_leaves_grown_ : int
        Leaves of the grown tree (more than ``partition_tree_.n_leaves`` when
        ``select_size`` pruned it to the best validation size).
"""
        + _NOTES_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from engine.partition import PartitionTreeClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> model = PartitionTreeClassifier(max_leaves=8).fit(X, y)
    >>> bool(np.allclose(model.predict_proba(X).sum(axis=1), 1.0))
    True
    >>> bool(model.score(X, y) > 0.9)
    True
"""
    )
    _discrete = True
    _default_min_volume = 0.0
    _parameter_constraints: dict = {**TREE_CONSTRAINTS, **SIZE_CONSTRAINTS}

    def __init__(
        self,
        max_leaves=MAX_LEAVES_CLF,
        max_depth=None,
        min_samples_xy=1,
        min_samples_x=1,
        min_samples_y=1,
        min_volume_fraction=None,
        boundary_expansion=0.1,
        categorical_features=None,
        select_size="best_validation",
        random_state=None,
    ):
        self.max_leaves = max_leaves
        self.max_depth = max_depth
        self.min_samples_xy = min_samples_xy
        self.min_samples_x = min_samples_x
        self.min_samples_y = min_samples_y
        self.min_volume_fraction = min_volume_fraction
        self.boundary_expansion = boundary_expansion
        self.categorical_features = categorical_features
        self.select_size = select_size
        self.random_state = random_state

    def predict_proba(self, X):
        """P(class | x): float64 ``(n, n_classes)``, rows summing to 1."""
        return self._proba(X)

    def predict(self, X):
        """Most probable class: ``(n,)``."""
        proba = self._proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


class PartitionForestRegressor(_ForestMixin, RegressorMixin, _PartitionBase):
    __doc__ = (
        """Partition Forest (bagged Partition Trees) for p(y | x) of a continuous y;
    ``predict`` is the slice mean.

    Parameters
    ----------
"""
        + _FOREST_PARAMETERS_DOC
        + _PARAMETERS_DOC.format(max_leaves=MAX_LEAVES_REG)
        + _BOX_DOC
        + _FOREST_TAIL_DOC
        + _RANDOM_STATE_DOC.format(what="Seeds the bootstrap samples and the trees.")
        + """
    Attributes
    ----------
"""
        + _ATTRIBUTES_DOC.format(trees="n_estimators", trace=_FOREST_TRACE, box="(low, high) of y.")
        + _STEP_DOC
        + _NOTES_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from engine.partition import PartitionForestRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-2, 2, size=(300, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    >>> model = PartitionForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    >>> bool(model.score(X, y) > 0.8)
    True
"""
    )
    _parameter_constraints: dict = {**FOREST_CONSTRAINTS, **TREE_CONSTRAINTS, **BOX_CONSTRAINTS}

    def __init__(
        self,
        n_estimators=50,
        max_samples=0.8,
        max_features=0.8,
        max_leaves=MAX_LEAVES_REG,
        max_depth=None,
        min_samples_xy=1,
        min_samples_x=1,
        min_samples_y=1,
        min_volume_fraction=None,
        boundary_expansion=0.1,
        box="spec",
        categorical_features=None,
        aggregation="unnormalised",
        n_jobs=None,
        random_state=None,
    ):
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.max_features = max_features
        self.max_leaves = max_leaves
        self.max_depth = max_depth
        self.min_samples_xy = min_samples_xy
        self.min_samples_x = min_samples_x
        self.min_samples_y = min_samples_y
        self.min_volume_fraction = min_volume_fraction
        self.boundary_expansion = boundary_expansion
        self.box = box
        self.categorical_features = categorical_features
        self.aggregation = aggregation
        self.n_jobs = n_jobs
        self.random_state = random_state

    def predict(self, X):
        """Posterior mean of y given x: float64 ``(n,)``."""
        return _predict_mean(self, X)


class PartitionForestClassifier(_ForestMixin, ClassifierMixin, _PartitionBase):
    __doc__ = (
        """Partition Forest (bagged Partition Trees) for P(class | x).

    Parameters
    ----------
"""
        + _FOREST_PARAMETERS_DOC
        + _PARAMETERS_DOC.format(max_leaves=MAX_LEAVES_CLF)
        + _FOREST_TAIL_DOC
        + _RANDOM_STATE_DOC.format(what="Seeds the bootstrap samples and the trees.")
        + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.
    n_classes_ : int
        Number of classes.
"""
        + _ATTRIBUTES_DOC.format(
            trees="n_estimators", trace=_FOREST_TRACE, box="(0, n_classes) of the class codes."
        )
        + _NOTES_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from engine.partition import PartitionForestClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> model = PartitionForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    >>> bool(np.allclose(model.predict_proba(X).sum(axis=1), 1.0))
    True
"""
    )
    _discrete = True
    _default_min_volume = 0.0
    _parameter_constraints: dict = {**FOREST_CONSTRAINTS, **TREE_CONSTRAINTS}

    def __init__(
        self,
        n_estimators=50,
        max_samples=0.8,
        max_features=0.8,
        max_leaves=MAX_LEAVES_CLF,
        max_depth=None,
        min_samples_xy=1,
        min_samples_x=1,
        min_samples_y=1,
        min_volume_fraction=None,
        boundary_expansion=0.1,
        categorical_features=None,
        aggregation="unnormalised",
        n_jobs=None,
        random_state=None,
    ):
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.max_features = max_features
        self.max_leaves = max_leaves
        self.max_depth = max_depth
        self.min_samples_xy = min_samples_xy
        self.min_samples_x = min_samples_x
        self.min_samples_y = min_samples_y
        self.min_volume_fraction = min_volume_fraction
        self.boundary_expansion = boundary_expansion
        self.categorical_features = categorical_features
        self.aggregation = aggregation
        self.n_jobs = n_jobs
        self.random_state = random_state

    def predict_proba(self, X):
        """P(class | x): float64 ``(n, n_classes)``, rows summing to 1."""
        return self._proba(X)

    def predict(self, X):
        """Most probable class: ``(n,)``."""
        proba = self._proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


# -- Compare page registration and warm-up ---------------------------------------------------
def _build_tree(task, random_state, **params):
    if params.get("max_leaves") is None:
        params.pop("max_leaves", None)
    cls = PartitionTreeClassifier if task == "classification" else PartitionTreeRegressor
    return cls(random_state=random_state, **params)


def _build_forest(task, random_state, **params):
    if params.get("max_leaves") is None:
        params.pop("max_leaves", None)
    cls = PartitionForestClassifier if task == "classification" else PartitionForestRegressor
    return cls(random_state=random_state, **params)


def _param_specs(estimator) -> tuple:
    """The Compare page's widgets for a Partition ``estimator`` (class), their ranges read
    from its constraint table."""
    return (
        param_spec(
            estimator,
            "max_leaves",
            0,
            kind="int_or_none",  # the build function maps 0 (None) to the task default
            high=4096,
            help="Leaf budget of the best-first growth; 0: the task default "
            f"({MAX_LEAVES_REG} regression, {MAX_LEAVES_CLF} classification).",
        ),
        param_spec(estimator, "max_depth", 0, high=50, help="Maximum depth; 0 means unlimited."),
        param_spec(
            estimator,
            "min_samples_xy",
            1,
            low=1,
            high=1000,
            help="Minimum rows of a child's XY set (x in A_X and y in A_Y).",
        ),
    )


_TREE_PARAMS = _param_specs(PartitionTreeRegressor)

register_model(
    ModelSpec(
        key="treelab_partition_tree",
        label="Partition Tree (TreeLab)",
        build=_build_tree,
        params=_TREE_PARAMS,
        description="Conditional density tree over product cells of X x Y, grown best-first on "
        "the log-loss gain; predict is the slice mean / most probable class.",
        family="TreeLab",
    )
)

register_model(
    ModelSpec(
        key="treelab_partition_forest",
        label="Partition Forest (TreeLab)",
        build=_build_forest,
        params=(
            param_spec(
                PartitionForestRegressor, "n_estimators", 50, high=500, help="Number of trees."
            ),
            *_param_specs(PartitionForestRegressor),
        ),
        description="Bagged Partition Trees; unnormalised densities averaged, then normalised.",
        family="TreeLab",
    )
)


def _warmup() -> None:
    """Fit tiny trees through every code path (both tasks, categorical feature)."""
    rng = np.random.RandomState(0)
    X = np.column_stack([np.arange(30.0), rng.randint(0, 3, 30).astype(np.float64)])
    PartitionTreeRegressor(max_leaves=4, categorical_features=[1]).fit(X, X[:, 0] * 0.5)
    PartitionTreeClassifier(max_leaves=4, categorical_features=[1]).fit(
        X, (X[:, 0] > 14).astype(np.int64)
    )


register_warmup("partition.estimators")(_warmup)
