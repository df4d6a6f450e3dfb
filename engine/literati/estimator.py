"""Literati estimators (docs/spec.md section 1; issue 4); the stepwise search API is in
:mod:`engine.literati.anytime` (re-exported here).

:class:`LiteratiClassifier` is a scikit-learn classifier whose ``fit`` runs the anytime AO*
search of :mod:`engine.literati.search` for at most ``time_limit`` seconds and keeps the
incumbent.  :meth:`LiteratiClassifier.start` returns a :class:`LiteratiSearch` the live page
drives step by step (``step`` / ``snapshot`` / ``trace`` / ``incumbent`` / ``finish``).

Objective (minimised, misclassification-count units)::

    Err(T) + sum over internal nodes v of (lambda + alpha * K_v),  K_v <= K_max, depth <= D

Shape routing: internal node ``v`` with feature ``j`` and sorted breakpoints ``u`` sends
``x`` left iff ``searchsorted(u, x_j, side='left') % 2 == 0`` (:func:`shape_route`).

Missing values (NaN in ``X``) are part of the shapes (:func:`encode_missing`): a node's
shape on a feature with missing values lives on the feature's line extended by one point,
"missing", placed below **or** above every observed value (the shape's choice); its
breakpoints, including one that separates "missing" from the observed values, cost
``alpha`` each and count towards ``K_max`` like any other.  So the missing rows join the
side of the lowest or of the highest observed interval at no cost (either side of a plain
threshold), and a side that only middle intervals have (``K`` even) for one breakpoint more.
The search runs unchanged on the extended columns, so the optimum over this space stays
exact; the fitted tree records the side in ``tree_.missing_go_to_left``.  A feature
without missing values in the training rows sends a missing value at prediction to the
child with more training rows (ties: left).
"""

from __future__ import annotations

import math
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from engine._numba import call_parallel, register_warmup
from engine.data import DataError
from engine.literati import _counting_kernels as counting_kernels
from engine.literati import _kernels as kernels
from engine.literati.anytime import (
    TRACE_COLUMNS,
    LiteratiSearch,
    encode_missing,
    nodes_to_tree,
)
from engine.literati.greedy import greedy_shape_tree

__all__ = [
    "MISSING_VALUES_CAPTION",
    "TRACE_COLUMNS",
    "GreedyShapeTreeClassifier",
    "LiteratiClassifier",
    "LiteratiSearch",
    "encode_missing",
    "shape_route",
]

#: One sentence the pages show on how the method treats missing values.
MISSING_VALUES_CAPTION = (
    "Missing values: the side of a feature's missing values is part of each node's shape "
    "(missing sits below or above every observed value, and a breakpoint that separates "
    "it costs like any other), so the tree stays optimal with them; a feature without "
    "missing values in training sends them to the larger child."
)


def shape_route(x_values, breakpoints) -> np.ndarray:
    """Side of each value under a shape function: bool ``(n,)``, True = left.

    ``x_values``: float array ``(n,)``; ``breakpoints``: sorted float array ``(K,)``,
    ``K >= 1``.  Left iff the number of breakpoints strictly below ``x`` is even, i.e.
    ``np.searchsorted(breakpoints, x, side='left') % 2 == 0`` (K = 1: ``x <= u``).

    Raises ``ValueError`` when the breakpoints are not strictly increasing or NaN.
    """
    u = np.ascontiguousarray(np.asarray(breakpoints, dtype=np.float64).reshape(-1))
    if np.any(np.isnan(u)) or np.any(np.diff(u) <= 0):
        raise ValueError("breakpoints must be strictly increasing numbers")
    x = np.ascontiguousarray(np.asarray(x_values, dtype=np.float64).reshape(-1))
    return kernels.shape_route_kernel(x, u)


class LiteratiClassifier(ClassifierMixin, BaseEstimator):
    """Anytime optimal shape generalized tree by AO* (Literati, arXiv 2609.09299).

    ``fit`` runs the anytime AO* search of :mod:`engine.literati.search` over trees whose
    internal nodes are shape functions (feature ``j``, ``K <= K_max`` sorted breakpoints,
    alternating intervals starting left) and minimises, in misclassified-sample units::

        Err(T) + sum over internal nodes v of (lambda + alpha * K_v),  depth <= D

    for at most ``time_limit`` seconds, then keeps the incumbent (the best tree found; the
    optimum when ``proven_optimal_``).  :meth:`start` gives the same search step by step.

    Parameters
    ----------
    max_depth : int in [1, 8], default=3
        Depth budget D (depth 1 = one split).
    max_breakpoints : int in [1, 4], default=2
        K_max, breakpoints per shape function (1 = ordinary threshold splits).
    split_penalty : float in [0, inf) or None, default=None
        lambda, cost of every internal node in misclassified samples; None = 0.005 * n
        (n = number of training rows).
    breakpoint_penalty : float in [0, inf) or None, default=None
        alpha, cost of every breakpoint; None = 0.005 * n.  A plain threshold split costs
        lambda + alpha.
    candidate_leaves : int >= 2, tuple or list of them, or None, default=(8, 4)
        B_d: candidate breakpoints of a data state at depth d (root = 0) on feature j are
        the thresholds of a univariate CART with at most B_d leaves fitted on its samples;
        a tuple gives the top depths first and its last value repeats below; None (or
        None inside the tuple) = every midpoint (exact search).  A B_d above the number of
        training rows n acts as n (a CART on n samples has at most n leaves).
    time_limit : float in (0, inf), default=20.0
        Seconds of search; the incumbent is returned when it runs out.
    cache_size : int >= 1, default=10_000
        Data states kept in the LRU cache (states on the incumbent tree or the current
        selection path are never evicted).
    random_state : None, int or numpy.random.RandomState, default=None
        Accepted for scikit-learn compatibility; the search is deterministic.
    greedy_seed : bool, default=True
        Seed the incumbent of every data state the search explores as a graph node (the
        root included) with its greedy shape tree (:mod:`engine.literati.greedy`), so the
        anytime tree is a full-depth tree from the start; False = leaf errors only.
    candidate_scope : {'state', 'root'}, default='state'
        'state' (the paper's space): every data state fits its own univariate CARTs for
        its candidates.  'root': every state uses the root's candidates (B_0 on all
        training rows), so a depth-2 problem is solved exactly from class counts in time
        linear in n (:mod:`engine.literati._counting_kernels`, MurTree's depth-two idea),
        and a depth-3 problem from one triple histogram per root feature (one pass over
        the rows, then every root shape's depth-2 children from class counts); a
        different candidate space, so its optimum may differ from 'state's.  Deeper
        trees (``max_depth >= 4``) search the states with four levels or more as graph
        nodes over the root's candidates, every three-level state below them solved by
        the depth-3 counting kernel with its budget and cached by its row set (children of
        a state on the same feature pass lower bounds to those that contain their rows:
        the subset bounds of :mod:`engine.literati._counting_kernels`).  Needs a
        finite top ``candidate_leaves``; ``greedy_seed`` does not apply (the greedy tree
        picks each state's own candidates).

    Attributes
    ----------
    tree_ : engine.tree.TreeArrays
        The fitted tree, with ``bp_offsets`` / ``bp_values`` (breakpoints of each internal
        node) and per-node ``lower_bound`` / ``upper_bound``.
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.
    n_classes_ : int
        Number of classes.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
    objective_ : float
        Objective of the returned tree (misclassified-sample units).
    upper_bound_, lower_bound_ : float
        Bounds on the optimal objective when the search stopped (equal when proven).
    proven_optimal_ : bool
        Whether the search proved the returned tree optimal before the time limit.
    objective_breakdown_ : dict
        ``errors``, ``n_splits``, ``n_breakpoints``, ``split_cost``, ``breakpoint_cost``,
        ``objective``.
    trace_ : pandas.DataFrame
        The search's progress, one row per step, columns :data:`TRACE_COLUMNS`.
    node_bounds_ : engine.literati.node_bounds.NodeBounds
        Each node of ``tree_`` with its lower and upper bound (objective units) and its
        share of the remaining gap (all 0 when proven optimal); docs/methods.md.
    incumbents_ : list of dict
        Each improving tree: ``time`` (s), ``ub``, ``lb``, ``tree``.
    split_penalty_, breakpoint_penalty_ : float
        lambda and alpha used (resolved from None).
    candidate_leaves_ : list of int
        B_d used per depth, each capped at the number of training rows (0 = all midpoints).
    n_iterations_ : int
        AO* iterations done.
    search_time_ : float
        Seconds of search (set-up included).
    greedy_calls_ : int
        Greedy completions computed to seed upper bounds.
    greedy_seconds_ : float
        Their time (s).

    See Also
    --------
    GreedyShapeTreeClassifier : the greedy shape tree in the same candidate space.

    Notes
    -----
    Missing values (NaN in ``X``) are part of each node's shape (module docstring,
    :func:`encode_missing`), their side in ``tree_.missing_go_to_left``; sparse input is
    refused (dense data is required).  Raises
    :class:`sklearn.utils._param_validation.InvalidParameterError` (a ``ValueError``)
    naming a bad parameter and its allowed values, and :class:`engine.data.DataError` (a
    ``ValueError``) for bad data, with scikit-learn's messages.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from engine.literati import LiteratiClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LiteratiClassifier(max_depth=2, time_limit=10.0).fit(X, y)
    >>> clf.proven_optimal_
    True
    >>> clf.predict(X[[0, 50, 100]])
    array([0, 1, 2])
    """

    _parameter_constraints: dict = {
        "max_depth": [Interval(Integral, 1, 8, closed="both")],
        "max_breakpoints": [Interval(Integral, 1, 4, closed="both")],
        "split_penalty": [Interval(Real, 0, math.inf, closed="left"), None],
        "breakpoint_penalty": [Interval(Real, 0, math.inf, closed="left"), None],
        "candidate_leaves": [Interval(Integral, 2, None, closed="left"), tuple, list, None],
        "time_limit": [Interval(Real, 0, math.inf, closed="neither")],
        "cache_size": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "greedy_seed": ["boolean"],
        "candidate_scope": [StrOptions({"state", "root"})],
    }

    def __init__(
        self,
        max_depth=3,
        max_breakpoints=2,
        split_penalty=None,
        breakpoint_penalty=None,
        candidate_leaves=(8, 4),
        time_limit=20.0,
        cache_size=10_000,
        random_state=None,
        greedy_seed=True,
        candidate_scope="state",
    ):
        self.max_depth = max_depth
        self.max_breakpoints = max_breakpoints
        self.split_penalty = split_penalty
        self.breakpoint_penalty = breakpoint_penalty
        self.candidate_leaves = candidate_leaves
        self.time_limit = time_limit
        self.cache_size = cache_size
        self.random_state = random_state
        self.greedy_seed = greedy_seed
        self.candidate_scope = candidate_scope

    # -- validation ----------------------------------------------------------------------

    def _validate_params(self):
        """The constraint table, then what it cannot express: the items of a
        ``candidate_leaves`` sequence.  Raises ``InvalidParameterError`` (a ValueError)."""
        super()._validate_params()
        leaves = self.candidate_leaves
        if isinstance(leaves, (tuple, list)) and (
            not leaves
            or not all(
                v is None or (isinstance(v, Integral) and not isinstance(v, bool) and v >= 2)
                for v in leaves
            )
        ):
            raise InvalidParameterError(
                f"The 'candidate_leaves' parameter of {type(self).__name__} must be an int "
                "in the range [2, inf), a non-empty tuple or list of such ints (None "
                f"items = all midpoints) or None. Got {leaves!r} instead."
            )
        if getattr(self, "candidate_scope", "state") == "root":
            top = leaves[0] if isinstance(leaves, (tuple, list)) else leaves
            if top is None:
                raise InvalidParameterError(
                    "candidate_scope='root' needs a finite number of candidate leaves at "
                    "the root (candidate_leaves=8, say), not every midpoint."
                )

    def _resolve_tree_params(self, n: int) -> dict:
        """The validated tree parameters (shared with :class:`GreedyShapeTreeClassifier`)
        resolved for ``n`` training rows: penalties in misclassified samples (None =
        0.005 * n), ``candidate_leaves`` as a list of B_d (0 = all midpoints, each at most
        ``max(n, 2)``: a larger B_d gives the same candidates)."""
        out = {"max_depth": int(self.max_depth), "max_breakpoints": int(self.max_breakpoints)}
        for name in ("split_penalty", "breakpoint_penalty"):
            value = getattr(self, name)
            out[name] = 0.005 * n if value is None else float(value)
        leaves = self.candidate_leaves
        seq = list(leaves) if isinstance(leaves, (tuple, list)) else [leaves]
        # a one-feature CART on at most n rows has at most n leaves: B_d >= n gives the
        # candidates of B_d = n.  Clamped so that the kernels' workspaces, which grow with
        # B_d, stay bounded (B_d = 2**31 was a MemoryError, 10**21 an OverflowError).  The
        # search also sizes states by B_d (which go to the exact depth-2 kernel), so under
        # a time limit the path, not the optimum, can differ from an unclamped B_d > n
        out["candidate_leaves"] = [0 if v is None else min(int(v), max(int(n), 2)) for v in seq]
        return out

    def _resolve_params(self, n: int) -> dict:
        """:meth:`_resolve_tree_params` plus the search's ``time_limit``, ``cache_size``
        and ``greedy_seed``."""
        out = self._resolve_tree_params(n)
        out["time_limit"] = float(self.time_limit)
        out["cache_size"] = int(self.cache_size)
        out["greedy_seed"] = bool(self.greedy_seed)
        out["candidate_scope"] = str(self.candidate_scope)
        return out

    def _prepare(self, X, y):
        """``X`` as C-contiguous writable float64 ``(n, p)``, the sorted classes and the
        int64 class codes of ``y``; scikit-learn's checks and messages (no NaN / inf,
        dense, 2-D, class labels), raised as :class:`engine.data.DataError`."""
        try:
            X, y = validate_data(
                self, X, y, dtype=np.float64, order="C", ensure_all_finite="allow-nan"
            )
            check_classification_targets(y)
        except ValueError as exc:
            raise DataError(str(exc)) from exc
        if not X.flags.writeable:
            X = np.array(X, dtype=np.float64, order="C")
        classes, codes = np.unique(y, return_inverse=True)
        return X, classes, np.ascontiguousarray(codes.reshape(-1), dtype=np.int64)

    # -- fitting ---------------------------------------------------------------------------

    def start(self, X, y) -> LiteratiSearch:
        """Validate the parameters and the input; return a :class:`LiteratiSearch` (no
        search work yet).

        Raises ``InvalidParameterError`` (a ``ValueError``) for bad parameters and
        :class:`engine.data.DataError` (a ``ValueError``) for bad data: NaN/inf in ``X``,
        a continuous (regression) target, mismatched lengths; ``TypeError`` for sparse
        ``X``."""
        self._validate_params()
        return self._start(X, y)

    def _start(self, X, y) -> LiteratiSearch:
        X, classes, codes = self._prepare(X, y)
        prm = self._resolve_params(X.shape[0])
        self.classes_ = classes
        self.n_classes_ = int(classes.shape[0])
        return LiteratiSearch(self, X, codes, prm)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Run the search for at most ``time_limit`` seconds and keep the incumbent.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (converted to float64; NaN allowed, no inf).
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : LiteratiClassifier
            The fitted estimator.
        """
        search = self._start(X, y)
        while not search.step(max_seconds=0.5):
            pass
        return search.finish()

    # -- prediction --------------------------------------------------------------------------

    def _X(self, X):
        check_is_fitted(self, "tree_")
        try:
            X = validate_data(
                self, X, reset=False, dtype=np.float64, order="C", ensure_all_finite="allow-nan"
            )
        except ValueError as exc:
            raise DataError(str(exc)) from exc
        if not X.flags.writeable:
            X = X.copy()
        return X

    def apply(self, X):
        """Leaf id (int64 ``(n,)``) reached by each row of ``X`` ``(n, n_features_in_)``,
        routed by the shape functions."""
        X = self._X(X)
        t = self.tree_
        if np.isnan(X).any():
            return t.apply(X)  # NaN by missing_go_to_left
        return kernels.apply_shape_tree(
            t.children_left, t.children_right, t.feature, t.bp_offsets, t.bp_values, X
        )

    def predict_proba(self, X):
        """Class fractions of the reached leaf: float64 ``(n, n_classes)``."""
        leaves = self.apply(X)
        return self.tree_.value[leaves, 0, :]

    def predict(self, X):
        """Majority class of the reached leaf (ties to the first class): ``(n,)``."""
        proba = self.predict_proba(X)
        return self.classes_.take(np.argmax(proba, axis=1), axis=0)

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
        # NaN is part of the shapes (encode_missing); sparse X is refused (the kernels
        # read dense rows)
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags


class GreedyShapeTreeClassifier(LiteratiClassifier):
    """Greedy shape tree (the baseline of Literati, arXiv 2609.09299, docs/spec.md section 1;
    ShapeCART-like) in Literati's candidate space.

    Grown top-down from the root: each node's candidate breakpoints are those Literati's
    search uses for the same data state (univariate CART with at most ``B_d`` leaves per
    feature, ``d`` = the node's depth), its split is the shape function (feature ``j``,
    ``K <= K_max`` sorted candidate breakpoints, alternating intervals starting left) of
    least weighted gini impurity of its two children (ties: lowest ``j``, fewest
    breakpoints, lexicographic); growth stops at ``max_depth``, a pure node or one sample;
    then subtrees are replaced bottom-up by leaves when that does not increase the
    objective ``Err + sum over internal nodes (lambda + alpha K_v)``.  See
    :func:`engine.literati.greedy.greedy_shape_tree` (a node with more than
    :data:`engine.literati.greedy.MAX_SHAPES` shapes uses fewer breakpoints).

    Parameters
    ----------
    max_depth : int in [1, 8], default=3
        Depth budget D (depth 1 = one split).
    max_breakpoints : int in [1, 4], default=2
        K_max, breakpoints per shape function (1 = ordinary threshold splits).
    split_penalty : float in [0, inf) or None, default=None
        lambda, cost of every internal node in misclassified samples; None = 0.005 * n.
    breakpoint_penalty : float in [0, inf) or None, default=None
        alpha, cost of every breakpoint; None = 0.005 * n.
    candidate_leaves : int >= 2, tuple or list of them, or None, default=(8, 4)
        B_d per depth, as :class:`LiteratiClassifier` (None = every midpoint).
    random_state : None, int or numpy.random.RandomState, default=None
        Accepted for scikit-learn compatibility; the tree is deterministic.

    Attributes
    ----------
    tree_ : engine.tree.TreeArrays
        The fitted tree, with ``bp_offsets`` / ``bp_values``.
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.
    n_classes_ : int
        Number of classes.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
    objective_ : float
        Objective of the tree (misclassified-sample units).
    objective_breakdown_ : dict
        ``errors``, ``n_splits``, ``n_breakpoints``, ``split_cost``, ``breakpoint_cost``,
        ``objective``.
    split_penalty_, breakpoint_penalty_ : float
        lambda and alpha used (resolved from None).
    candidate_leaves_ : list of int
        B_d used per depth (0 = all midpoints).
    fit_time_ : float
        Seconds of ``fit``.

    See Also
    --------
    LiteratiClassifier : the optimal tree in the same space, seeded with this one.

    Notes
    -----
    Raises ``InvalidParameterError`` (a ``ValueError``) for bad parameters and
    :class:`engine.data.DataError` for bad data (NaN/inf, a continuous target), as
    :class:`LiteratiClassifier`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from engine.literati import GreedyShapeTreeClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = GreedyShapeTreeClassifier(max_depth=2).fit(X, y)
    >>> clf.predict(X[[0, 50, 100]])
    array([0, 1, 2])
    """

    _parameter_constraints: dict = {
        name: LiteratiClassifier._parameter_constraints[name]
        for name in (
            "max_depth",
            "max_breakpoints",
            "split_penalty",
            "breakpoint_penalty",
            "candidate_leaves",
            "random_state",
        )
    }

    def __init__(
        self,
        max_depth=3,
        max_breakpoints=2,
        split_penalty=None,
        breakpoint_penalty=None,
        candidate_leaves=(8, 4),
        random_state=None,
    ):
        self.max_depth = max_depth
        self.max_breakpoints = max_breakpoints
        self.split_penalty = split_penalty
        self.breakpoint_penalty = breakpoint_penalty
        self.candidate_leaves = candidate_leaves
        self.random_state = random_state

    def start(self, X, y):
        """Not available: the greedy tree has no search (use :meth:`fit`)."""
        raise NotImplementedError("GreedyShapeTreeClassifier has no stepwise search; call fit")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Grow and prune the greedy shape tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (converted to float64; NaN allowed, no inf).
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : GreedyShapeTreeClassifier
            The fitted estimator.
        """
        t0 = time.perf_counter()
        X, classes, codes = self._prepare(X, y)
        prm = self._resolve_tree_params(X.shape[0])
        self.classes_ = classes
        self.n_classes_ = int(classes.shape[0])
        lam, alpha = prm["split_penalty"], prm["breakpoint_penalty"]
        idx = np.arange(X.shape[0], dtype=np.int64)
        X_search, source, end = encode_missing(X)
        g = greedy_shape_tree(
            np.ascontiguousarray(X_search.T),
            codes,
            self.n_classes_,
            idx,
            prm["max_depth"],
            0,
            prm["candidate_leaves"],
            prm["max_breakpoints"],
            lam,
            alpha,
        )
        nodes = g.nodes(X_search, idx)
        self.tree_, self.objective_breakdown_ = nodes_to_tree(
            self, codes, X.shape[1], lam, alpha, nodes, source, end
        )
        self.objective_ = float(g.objective)
        self.split_penalty_ = lam
        self.breakpoint_penalty_ = alpha
        self.candidate_leaves_ = list(prm["candidate_leaves"])
        self.fit_time_ = time.perf_counter() - t0
        return self


@register_warmup("literati")
def _warmup() -> None:
    """Compile (or load) every Literati kernel: tiny depth-1, depth-2 and depth-3 searches."""
    rng = np.random.RandomState(0)
    X = np.ascontiguousarray(rng.normal(size=(40, 3)))
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 1)
    for depth in (1, 2, 3):  # depth 1: the root-only solver
        est = LiteratiClassifier(
            max_depth=depth,
            max_breakpoints=2,
            split_penalty=0.5,
            breakpoint_penalty=0.5,
            time_limit=5.0,
        )
        est.fit(X, y)
        est.predict_proba(X)
        est.tree_.apply(X)
    shape_route(X[:, 0], [0.0, 1.0])
    # one feature's candidates called from Python (engine/literati/certify.py)
    kernels.uni_thresholds(np.ascontiguousarray(np.sort(X[:, 0])), y, 3, 4)
    # the parallel depth-2 block: the searches above are below _D2_PAR_MIN and use the
    # one-thread block, so compile the parallel one here (par_min = 0), not in a user's run
    XT = np.ascontiguousarray(X.T)
    o = kernels.sort_orders(XT, np.arange(X.shape[0], dtype=np.int64))
    kernels.solve_depth2(
        XT,
        y,
        o,
        3,
        4,
        3,
        2,
        0.5,
        0.5,
        np.inf,
        0,
        10**9,
        40.0,
        np.inf,
        np.full(3, -1, np.int64),
        np.zeros(3, np.int64),
        np.zeros((3, 2)),
        0,
    )
    # candidate_scope='root': the depth-2 and depth-3 counting solvers and the parallel
    # sort of large states
    for depth in (2, 3):
        LiteratiClassifier(
            max_depth=depth,
            max_breakpoints=2,
            split_penalty=0.5,
            breakpoint_penalty=0.5,
            candidate_scope="root",
        ).fit(X, y)
    # the depth-3 kernel itself (the fit above may be settled by its depth-2 seed)
    off, vals, _ = kernels.state_candidates(XT, y, o, 3, 4)
    bins = call_parallel(counting_kernels.bin_rows, XT, off, vals)
    call_parallel(
        counting_kernels.solve_depth3_counting,
        bins,
        y,
        np.arange(X.shape[0], dtype=np.int64),
        off,
        3,
        2,
        0.5,
        0.5,
        np.inf,
        np.arange(X.shape[1], dtype=np.int64),
        np.full((X.shape[1], counting_kernels.D3_RESULT), np.inf),
        np.zeros((X.shape[1], 7, 2), dtype=np.int64),
        np.full((X.shape[1], counting_kernels.floor_width(off)), -np.inf),
        np.zeros(1, dtype=np.int64),
    )
    call_parallel(kernels.sort_orders_parallel, XT, np.arange(X.shape[0], dtype=np.int64))
