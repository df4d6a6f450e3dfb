"""The :class:`TreeArrays` layout: one binary tree in scikit-learn's struct of arrays.

See :mod:`engine.tree` for the layout; this module holds the class and its validation; its
JSON form is :mod:`engine.tree.tree_json` (the helpers here are shared with
:mod:`engine.tree.ensemble`).
"""

from __future__ import annotations

import hashlib
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import numpy as np

from engine.tree._checks import (
    _TASKS,
    _as_1d,
    _check_csr,
    _check_X,
    _fmt_number,
)
from engine.tree._kernels import (
    _apply_cat_kernel,
    _apply_kernel,
    _apply_missing_kernel,
    _apply_shape_kernel,
    float32_routing_threshold,
)
from engine.tree.tree_json import FORMAT, TreeJSON

__all__ = ["ENSEMBLE_FORMAT", "FORMAT", "TREE_LEAF", "TREE_UNDEFINED", "TreeArrays"]

#: Version tag of :meth:`TreeEnsemble.to_dict`.
ENSEMBLE_FORMAT = "treelab.ensemble/1"
#: ``children_left``/``children_right`` at a leaf (scikit-learn's ``TREE_LEAF``).
TREE_LEAF = -1
#: ``feature`` at a leaf (scikit-learn's ``TREE_UNDEFINED``).
TREE_UNDEFINED = -2


# ---------------------------------------------------------------------------------------
# TreeArrays
# ---------------------------------------------------------------------------------------


@dataclass(eq=False)
class TreeArrays(TreeJSON):
    """One fitted binary tree in scikit-learn's ``Tree`` struct-of-arrays layout.

    Node arrays (length ``n_nodes``; node 0 is the root):

    * ``children_left``, ``children_right`` - int64 child ids, ``-1`` at leaves.
    * ``feature`` - int64 split feature (column of ``X``), ``-2`` at leaves.
    * ``threshold`` - float64; a row goes left when ``x[feature] <= threshold``.
    * ``impurity`` - float64 impurity of the node (criterion of the builder).
    * ``n_node_samples`` - int64 training rows in the node.
    * ``weighted_n_node_samples`` - float64 sum of sample weights in the node.
    * ``value`` - float64 ``(n_nodes, 1, n_classes)``: class **fractions** for classifiers
      (as scikit-learn >= 1.4.1; counts = value * weighted_n_node_samples), the node mean
      for regression (``n_classes == 1``).  A 2-D ``(n_nodes, n_classes)`` array is
      accepted and reshaped.  Multi-output trees (``n_outputs > 1``) are not supported.

    Metadata (keyword-only): ``task`` ('classification' | 'regression'), ``n_features``
    (columns of ``X``), ``classes_`` (class labels, required for classification, ``None``
    for regression), ``feature_names`` (list of ``n_features`` str, optional),
    ``categories`` (optional, per feature: the labels of integer codes of a categorical
    feature, or ``None``), ``float32_inputs`` (True for trees converted from scikit-learn,
    which compares float32-cast inputs; routing then compares with
    :func:`float32_routing_threshold` so predictions are bit-identical to scikit-learn's).

    Optional extras (``None`` when absent):

    * ``p_value`` - float64 per node (conditional inference trees).
    * ``bp_offsets`` (int64, n_nodes + 1), ``bp_values`` (float64) - CSR shape-function
      breakpoints of node ``i``: ``bp_values[bp_offsets[i]:bp_offsets[i + 1]]`` (Literati).
    * ``lower_bound``, ``upper_bound`` - float64 per node (search trees).
    * ``cat_offsets`` (int64, n_nodes + 1), ``cat_values`` (int64 category codes) - CSR
      categorical set splits: a node with a non-empty set sends a row **left when
      ``x[feature]`` is in the set**; its ``threshold`` is ignored.
    * ``missing_go_to_left`` - uint8 per node, scikit-learn's name and meaning (>= 1.3): a
      row whose ``x[feature]`` is missing (NaN) goes to the left child iff it is 1 (0 at
      leaves).  A tree with it accepts NaN in :meth:`apply` and :meth:`predict`; a tree
      without it refuses NaN with a message (it has no rule for missing values).
    * ``n_missing`` - int64 per node: the training rows with a missing ``x[feature]`` the
      node's split routed by ``missing_go_to_left`` (0 at leaves; shown in the tree
      figure's hover).

    Arrays are copied and cast in ``__post_init__``; treat the object as immutable
    afterwards (depths and parents are computed once).

    Raises
    ------
    ValueError
        Naming the offending array: wrong length, dtype or shape, leaves without the
        sentinels, child ids out of range, a node with two parents, unreachable nodes,
        a feature index outside ``[0, n_features)``, a bad task or classes.
    """

    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    value: np.ndarray
    _: KW_ONLY
    task: str
    n_features: int
    classes_: np.ndarray | None = None
    feature_names: list[str] | None = None
    categories: list[list[str] | None] | None = None
    float32_inputs: bool = False
    p_value: np.ndarray | None = None
    bp_offsets: np.ndarray | None = None
    bp_values: np.ndarray | None = None
    lower_bound: np.ndarray | None = None
    upper_bound: np.ndarray | None = None
    cat_offsets: np.ndarray | None = None
    cat_values: np.ndarray | None = None
    missing_go_to_left: np.ndarray | None = None
    n_missing: np.ndarray | None = None
    _depth: np.ndarray = field(init=False, repr=False)
    _parent: np.ndarray = field(init=False, repr=False)
    _routing: tuple | None = field(default=None, init=False, repr=False)
    _majority: np.ndarray | None = field(default=None, init=False, repr=False)

    # -- validation ---------------------------------------------------------------------

    def __post_init__(self) -> None:
        n = self._cast_node_arrays()
        self._check_metadata()
        leaf, internal = self._check_structure(n)
        self._check_extras(n, leaf, internal)

    def _cast_node_arrays(self) -> int:
        """Copy and cast the eight node arrays; returns ``n_nodes``."""
        cl = _as_1d("children_left", self.children_left, np.int64)
        n = cl.shape[0]
        if n == 0:
            raise ValueError("children_left is empty: a tree has at least one node (the root)")
        self.children_left = cl
        self.children_right = _as_1d("children_right", self.children_right, np.int64, n)
        self.feature = _as_1d("feature", self.feature, np.int64, n)
        self.threshold = _as_1d("threshold", self.threshold, np.float64, n)
        self.impurity = _as_1d("impurity", self.impurity, np.float64, n)
        self.n_node_samples = _as_1d("n_node_samples", self.n_node_samples, np.int64, n)
        self.weighted_n_node_samples = _as_1d(
            "weighted_n_node_samples", self.weighted_n_node_samples, np.float64, n
        )
        value = np.array(self.value, dtype=np.float64, order="C", copy=True)
        if value.ndim == 2:
            value = value[:, None, :].copy()
        if value.ndim != 3 or value.shape[0] != n:
            raise ValueError(
                f"value must have shape (n_nodes={n}, n_outputs, n_classes), got {value.shape}"
            )
        if value.shape[1] != 1:
            raise ValueError(
                f"value has n_outputs={value.shape[1]}: multi-output trees are not supported"
            )
        self.value = value
        return n

    def _check_metadata(self) -> None:
        """Task, ``n_features``, classes, feature names and category labels."""
        value = self.value
        if self.task not in _TASKS:
            raise ValueError(f"task must be one of {_TASKS}, got {self.task!r}")
        try:
            self.n_features = int(self.n_features)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"n_features must be an int, got {self.n_features!r}") from exc
        if self.n_features < 1:
            raise ValueError(f"n_features must be >= 1, got {self.n_features}")
        if self.task == "classification":
            if self.classes_ is None:
                raise ValueError("classes_ is required for a classification tree")
            self.classes_ = np.array(self.classes_, copy=True)
            if self.classes_.ndim != 1 or self.classes_.shape[0] != value.shape[2]:
                raise ValueError(
                    f"classes_ has {self.classes_.shape} labels but value has "
                    f"{value.shape[2]} class columns"
                )
        else:
            if value.shape[2] != 1:
                raise ValueError(
                    f"value of a regression tree must have 1 column, got {value.shape[2]}"
                )
            if self.classes_ is not None:
                raise ValueError("classes_ must be None for a regression tree")
        if self.feature_names is not None:
            names = [str(s) for s in self.feature_names]
            if len(names) != self.n_features:
                raise ValueError(
                    f"feature_names has {len(names)} names, expected n_features = {self.n_features}"
                )
            self.feature_names = names
        if self.categories is not None:
            cats = list(self.categories)
            if len(cats) != self.n_features:
                raise ValueError(
                    f"categories has {len(cats)} entries, expected n_features = "
                    f"{self.n_features} (None for numeric features)"
                )
            self.categories = [None if c is None else [str(s) for s in c] for c in cats]
        self.float32_inputs = bool(self.float32_inputs)

    def _check_structure(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Sentinels, child ids, one parent per node, every node reachable; sets the depths
        and parents.  Returns the ``(leaf, internal)`` masks."""
        cl = self.children_left
        cr = self.children_right
        leaf = cl == TREE_LEAF
        if np.any(leaf != (cr == TREE_LEAF)):
            bad = int(np.flatnonzero(leaf != (cr == TREE_LEAF))[0])
            raise ValueError(
                f"children_left/children_right disagree at node {bad}: a leaf has -1 in both"
            )
        internal = ~leaf
        for name, ch in (("children_left", cl), ("children_right", cr)):
            c = ch[internal]
            if c.size and (c.min() < 1 or c.max() >= n):
                raise ValueError(f"{name} holds a child id outside [1, {n}) at an internal node")
        if np.any(self.feature[leaf] != TREE_UNDEFINED):
            raise ValueError("feature must be -2 (TREE_UNDEFINED) at every leaf")
        f = self.feature[internal]
        if f.size and (f.min() < 0 or f.max() >= self.n_features):
            raise ValueError(
                f"feature holds an index outside [0, n_features={self.n_features}) at an "
                "internal node"
            )
        children = np.concatenate([cl[internal], cr[internal]])
        if children.size and np.bincount(children, minlength=n).max() > 1:
            raise ValueError("children_left/children_right: a node has more than one parent")
        if children.size and np.any(children == 0):
            raise ValueError("children_left/children_right: the root (node 0) cannot be a child")
        parent = np.full(n, -1, dtype=np.int64)
        ids = np.flatnonzero(internal)
        parent[cl[ids]] = ids
        parent[cr[ids]] = ids
        depth = np.full(n, -1, dtype=np.int64)
        frontier = np.array([0], dtype=np.int64)
        d = 0
        while frontier.size:
            depth[frontier] = d
            inner = frontier[cl[frontier] != TREE_LEAF]
            frontier = np.concatenate([cl[inner], cr[inner]])
            d += 1
        if np.any(depth < 0):
            raise ValueError(
                f"children_left/children_right: {int(np.sum(depth < 0))} nodes are not "
                "reachable from the root"
            )
        self._depth = depth
        self._parent = parent
        return leaf, internal

    def _check_extras(self, n: int, leaf: np.ndarray, internal: np.ndarray) -> None:
        """Optional per-node arrays, the CSR breakpoints and category sets, and thresholds."""
        for name in ("p_value", "lower_bound", "upper_bound"):
            a = getattr(self, name)
            if a is not None:
                setattr(self, name, _as_1d(name, a, np.float64, n))
        self.bp_offsets, self.bp_values = _check_csr(
            "bp", self.bp_offsets, self.bp_values, n, np.float64
        )
        self.cat_offsets, self.cat_values = _check_csr(
            "cat", self.cat_offsets, self.cat_values, n, np.int64
        )
        if self.missing_go_to_left is not None:
            side = _as_1d("missing_go_to_left", self.missing_go_to_left, np.int64, n)
            if np.any((side != 0) & (side != 1)):
                raise ValueError("missing_go_to_left must hold 0 or 1 at every node")
            self.missing_go_to_left = np.where(leaf, 0, side).astype(np.uint8)
        if self.n_missing is not None:
            count = _as_1d("n_missing", self.n_missing, np.int64, n)
            if np.any(count < 0) or np.any(count > self.n_node_samples):
                raise ValueError("n_missing must lie in [0, n_node_samples] at every node")
            self.n_missing = np.where(leaf, 0, count)
        if self.cat_offsets is not None:
            has = np.diff(self.cat_offsets) > 0
            if np.any(has & leaf):
                raise ValueError("cat_offsets gives a category set to a leaf")
        if np.any(
            np.isnan(
                self.threshold[internal]
                if self.cat_offsets is None
                else self.threshold[internal & (np.diff(self.cat_offsets) == 0)]
            )
        ):
            raise ValueError("threshold is NaN at an internal (numeric split) node")

    # -- properties ---------------------------------------------------------------------

    @property
    def node_count(self) -> int:
        """Number of nodes (``n_nodes``)."""
        return int(self.children_left.shape[0])

    @property
    def is_leaf(self) -> np.ndarray:
        """bool ``(n_nodes,)``: True at leaves."""
        return self.children_left == TREE_LEAF

    @property
    def n_leaves(self) -> int:
        """Number of leaves."""
        return int(np.sum(self.is_leaf))

    @property
    def depth(self) -> np.ndarray:
        """int64 ``(n_nodes,)``: depth of each node (root = 0), computed level by level."""
        return self._depth.copy()

    @property
    def parent(self) -> np.ndarray:
        """int64 ``(n_nodes,)``: parent id of each node, -1 at the root."""
        return self._parent.copy()

    @property
    def max_depth(self) -> int:
        """Depth of the deepest leaf (0 for a single-leaf tree), as scikit-learn's."""
        return int(self._depth.max())

    @property
    def n_classes(self) -> int:
        """Columns of ``value`` (number of classes; 1 for regression)."""
        return int(self.value.shape[2])

    @property
    def routes_missing(self) -> bool:
        """True when the tree has a rule for missing values (``missing_go_to_left``)."""
        return self.missing_go_to_left is not None

    @property
    def has_categorical_splits(self) -> bool:
        """True when at least one node splits on a category set."""
        return self.cat_offsets is not None and bool(np.any(np.diff(self.cat_offsets) > 0))

    @property
    def has_shape_splits(self) -> bool:
        """True when an internal node routes by a shape function that is not its plain
        ``x <= threshold`` test: more than one breakpoint, or one breakpoint other than
        ``threshold`` (see :meth:`breakpoints`)."""
        if self.bp_offsets is None or self.has_categorical_splits:
            return False
        counts = np.diff(self.bp_offsets)
        internal = self.children_left != TREE_LEAF
        if np.any(counts[internal] > 1):
            return True
        one = np.flatnonzero(internal & (counts == 1))
        return bool(np.any(self.bp_values[self.bp_offsets[one]] != self.threshold[one]))

    def breakpoints(self, node: int) -> np.ndarray | None:
        """Shape-function breakpoints (float64, sorted) of internal ``node``, or ``None``
        when it has none (a plain threshold split).  The node sends ``x`` left iff the
        number of breakpoints strictly below ``x[feature]`` is even."""
        if self.bp_offsets is None or self.children_left[node] == TREE_LEAF:
            return None
        a, b = int(self.bp_offsets[node]), int(self.bp_offsets[node + 1])
        return self.bp_values[a:b] if b > a else None

    # -- prediction ---------------------------------------------------------------------

    def check_X(self, X: Any) -> np.ndarray:
        """Validate rows and return them as a writable float64 C-contiguous 2-D array.

        Raises
        ------
        ValueError
            ``X`` not numeric, not 2-D, with a number of columns other than
            ``n_features``, or with NaN when the tree has no rule for missing values
            (:attr:`routes_missing`).
        """
        return _check_X(X, self.n_features, self.feature_names, allow_nan=self.routes_missing)

    def routing_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The arrays the kernels route with (cached): ``(left, right, feature, threshold)``.

        ``left``, ``right``, ``feature``: uint64 ``(n_nodes,)`` with 0 at leaves;
        ``threshold``: float64, the value compared with ``x[feature]`` - the tree's own
        threshold, or :func:`float32_routing_threshold` of it when ``float32_inputs``.
        """
        if self._routing is None or self._routing[0] != self.float32_inputs:
            leaf = self.children_left == TREE_LEAF
            left = np.where(leaf, 0, self.children_left).astype(np.uint64)
            right = np.where(leaf, 0, self.children_right).astype(np.uint64)
            feat = np.where(leaf, 0, self.feature).astype(np.uint64)
            thr = (
                float32_routing_threshold(self.threshold)
                if self.float32_inputs
                else self.threshold.copy()
            )
            self._routing = (self.float32_inputs, (left, right, feat, thr))
        return self._routing[1]

    def _route(self, X: np.ndarray) -> np.ndarray:
        left, right, feat, thr = self.routing_arrays()
        if self.missing_go_to_left is not None and np.isnan(X).any():
            empty = np.zeros(self.node_count + 1, dtype=np.int64)
            return _apply_missing_kernel(
                left,
                right,
                feat,
                thr,
                self.missing_go_to_left,
                empty if self.cat_offsets is None else self.cat_offsets,
                np.zeros(0, np.int64) if self.cat_values is None else self.cat_values,
                empty if self.bp_offsets is None else self.bp_offsets,
                np.zeros(0, np.float64) if self.bp_values is None else self.bp_values,
                X,
            )
        if self.has_categorical_splits:
            return _apply_cat_kernel(left, right, feat, thr, self.cat_offsets, self.cat_values, X)
        if self.has_shape_splits:
            return _apply_shape_kernel(left, right, feat, thr, self.bp_offsets, self.bp_values, X)
        return _apply_kernel(left, right, feat, thr, X)

    def apply(self, X: Any) -> np.ndarray:
        """Leaf id reached by each row: int64 ``(n_samples,)``.

        ``X``: array-like ``(n_samples, n_features)``; cast to float64.  Raises
        ``ValueError`` as :meth:`check_X`.
        """
        return self._route(self.check_X(X))

    def missing_counts(self, X: Any) -> np.ndarray:
        """int64 ``(n_nodes,)``: the rows of ``X`` that reach each internal node with a
        missing (NaN) value of its split feature, which the split routes by
        ``missing_go_to_left`` (0 at leaves).  Given the training rows, this is
        ``n_missing`` for a tree that did not record it (one imported from scikit-learn).

        Raises ``ValueError`` as :meth:`check_X` (NaN only in a tree that routes it).
        """
        X = self.check_X(X)
        counts = np.zeros(self.node_count, dtype=np.int64)
        rows = np.arange(X.shape[0])
        nodes = self._parent[self.apply(X)]
        while rows.size:  # every row walks from its leaf's parent up to the root
            live = nodes >= 0
            rows, nodes = rows[live], nodes[live]
            nan = np.isnan(X[rows, self.feature[nodes]])
            np.add.at(counts, nodes[nan], 1)
            nodes = self._parent[nodes]
        return counts

    def predict_value(self, X: Any) -> np.ndarray:
        """``value`` of the reached leaf (output 0): float64 ``(n_samples, n_classes)``.

        Class fractions for classifiers, the leaf mean (one column) for regression.
        """
        return self.value[self.apply(X), 0, :]

    def predict(self, X: Any) -> np.ndarray:
        """Class labels (``classes_[argmax value]``, ties to the first class, as
        scikit-learn) or regression values float64 ``(n_samples,)``."""
        leaves = self.apply(X)
        if self.task == "classification":
            if self._majority is None:
                self._majority = np.argmax(self.value[:, 0, :], axis=1)
            return self.classes_.take(self._majority[leaves], axis=0)
        return self.value[leaves, 0, 0]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class fractions of the reached leaf: float64 ``(n_samples, n_classes)``.

        Raises ``ValueError`` for a regression tree.
        """
        if self.task != "classification":
            raise ValueError("predict_proba needs a classification tree; this is regression")
        return self.predict_value(X)

    def decision_path(self, x: Any) -> np.ndarray:
        """Node ids (int64) from the root to the leaf reached by one sample ``x``.

        ``x``: 1-D ``(n_features,)`` or a 2-D array with one row.
        """
        row = np.asarray(x)
        if row.ndim == 2 and row.shape[0] == 1:
            row = row[0]
        if row.ndim != 1:
            raise ValueError(
                f"decision_path takes one sample (1-D, {self.n_features} values); got shape "
                f"{row.shape}"
            )
        xr = self.check_X(row.reshape(1, -1))[0]
        path = [0]
        node = 0
        while self.children_left[node] != TREE_LEAF:
            node = (
                self.children_left[node]
                if self._goes_left(node, xr[self.feature[node]])
                else self.children_right[node]
            )
            path.append(int(node))
        return np.asarray(path, dtype=np.int64)

    def _goes_left(self, node: int, v: float) -> bool:
        if np.isnan(v) and self.missing_go_to_left is not None:
            return bool(self.missing_go_to_left[node])
        cats = self.category_set(node)
        if cats is not None:
            return bool(np.any(cats.astype(np.float64) == v))
        if self.has_shape_splits:
            u = self.breakpoints(node)
            if u is not None:
                return bool(np.searchsorted(u, v, side="left") % 2 == 0)
        return bool(v <= self.routing_arrays()[3][node])

    def category_set(self, node: int) -> np.ndarray | None:
        """Codes (int64) of the category set that ``node`` sends left, or ``None`` when the
        node has no category-set split (a threshold split, or a leaf)."""
        if self.cat_offsets is None:
            return None
        a, b = self.cat_offsets[node], self.cat_offsets[node + 1]
        return self.cat_values[a:b] if b > a else None

    def left_categories(self, node: int) -> np.ndarray | None:
        """Codes (int64) of the categories internal ``node`` sends left, or ``None``.

        For a category-set split, its set.  For a threshold split on a feature with labels
        in ``categories`` (integer codes ``0..k-1``, as :class:`engine.data.Dataset` stores
        them and a scikit-learn tree fitted on them splits), the codes ``<= threshold``.
        ``None`` for a split on a numeric feature (or a threshold outside the codes).
        """
        cats = self.category_set(node)
        if cats is not None:
            return cats
        if self.categories is None or self.children_left[node] == TREE_LEAF:
            return None
        labels = self.categories[int(self.feature[node])]
        if labels is None:
            return None
        codes = np.arange(len(labels), dtype=np.int64)
        left = codes[codes <= self.routing_arrays()[3][node]]
        return left if 0 < left.size < codes.size else None

    def missing_split_side(self, node: int) -> str | None:
        """``'right'`` or ``'left'`` when internal ``node`` separates the missing values
        from every observed value and sends them that way, else ``None``.

        That is scikit-learn's split "every observed value left, NaN right" (threshold
        +inf, ``missing_go_to_left`` 0), its mirror (threshold -inf, NaN left), and a
        category set holding every category of a feature with labels (NaN the other way).
        """
        node = int(node)
        if self.missing_go_to_left is None or self.children_left[node] == TREE_LEAF:
            return None
        nan_left = bool(self.missing_go_to_left[node])
        cats = self.category_set(node)
        if cats is not None:
            labels = None if self.categories is None else self.categories[int(self.feature[node])]
            every = labels is not None and np.array_equal(
                np.unique(cats), np.arange(len(labels), dtype=cats.dtype)
            )
            return "right" if every and not nan_left else None
        if self.has_shape_splits and self.breakpoints(node) is not None:
            u = self.breakpoints(node)
            if u.shape[0] > 1 or u[0] != self.threshold[node]:
                return None  # a shape function: some observed values go each way
        threshold = float(self.threshold[node])
        if threshold == np.inf and not nan_left:
            return "right"
        if threshold == -np.inf and nan_left:
            return "left"
        return None

    # -- text ---------------------------------------------------------------------------

    def feature_labels(self, feature_names: list[str] | None = None) -> list[str]:
        """Display names of the ``n_features`` features: ``feature_names`` if given (checked
        for length), else the tree's ``feature_names``, else ``feature_0``, ``feature_1``..."""
        if feature_names is not None:
            names = [str(s) for s in feature_names]
            if len(names) != self.n_features:
                raise ValueError(
                    f"feature_names has {len(names)} names, expected {self.n_features}"
                )
            return names
        if self.feature_names is not None:
            return self.feature_names
        return [f"feature_{j}" for j in range(self.n_features)]

    def class_names(self, class_names: list[str] | None = None) -> list[str]:
        """Display names of the classes: ``class_names`` if given, else ``str(classes_)``."""
        if self.task != "classification":
            raise ValueError("class names exist only for a classification tree")
        if class_names is not None:
            names = [str(s) for s in class_names]
            if len(names) != self.n_classes:
                raise ValueError(f"class_names has {len(names)} names, expected {self.n_classes}")
            return names
        return [str(c) for c in self.classes_]

    def rule(
        self,
        node: int,
        feature_names: list[str] | None = None,
        *,
        branch: str = "left",
        decimals: int | None = None,
    ) -> str:
        """The split test of internal ``node`` as text, e.g. ``'petal length (cm) <= 2.45'``.

        ``branch='left'`` gives the condition that is true on the left child (``<=``, or
        ``in {...}`` for a category set); ``'right'`` its negation (``>``, ``not in``).
        ``decimals``: fixed decimals for the threshold; ``None`` gives up to 6 significant
        digits.  Category sets use the labels in ``categories`` when known, and so do
        threshold splits on a feature with labels (``island in {Biscoe, Dream}`` rather
        than ``island <= 1.5``; see :meth:`left_categories`).  A shape-function node
        (Literati) lists the intervals of that side, e.g. ``'x <= 3.5 or x > 7.5'``.  A
        split of the observed values from the missing ones (:meth:`missing_split_side`)
        reads ``'x is not missing'`` on the observed side and ``'x is missing'`` on the
        other, not ``'x <= inf'``.

        Raises ``ValueError`` for a leaf or a node id out of range.
        """
        node = int(node)
        if not 0 <= node < self.node_count:
            raise ValueError(f"node {node} is out of range [0, {self.node_count})")
        if self.children_left[node] == TREE_LEAF:
            raise ValueError(f"node {node} is a leaf: it has no split rule")
        if branch not in ("left", "right"):
            raise ValueError(f"branch must be 'left' or 'right', got {branch!r}")
        j = int(self.feature[node])
        name = self.feature_labels(feature_names)[j]
        nan_side = self.missing_split_side(node)
        if nan_side is not None:  # observed | missing: no threshold to show (it is +-inf)
            return f"{name} is missing" if nan_side == branch else f"{name} is not missing"
        cats = self.left_categories(node)
        if cats is not None:
            labels = self.categories[j] if self.categories is not None else None
            shown = [
                labels[c] if labels is not None and 0 <= c < len(labels) else str(c)
                for c in cats.tolist()
            ]
            op = "in" if branch == "left" else "not in"
            return f"{name} {op} {{{', '.join(shown)}}}"
        u = self.breakpoints(node) if self.has_shape_splits else None
        if u is not None and (u.shape[0] > 1 or u[0] != self.threshold[node]):
            # shape function: the intervals of this side (left = even-numbered intervals)
            parts = []
            for i in range(0 if branch == "left" else 1, u.shape[0] + 1, 2):
                lo = None if i == 0 else _fmt_number(float(u[i - 1]), decimals)
                hi = None if i == u.shape[0] else _fmt_number(float(u[i]), decimals)
                if lo is None:
                    parts.append(f"{name} <= {hi}")
                elif hi is None:
                    parts.append(f"{name} > {lo}")
                else:
                    parts.append(f"{lo} < {name} <= {hi}")
            return " or ".join(parts)
        op = "<=" if branch == "left" else ">"
        return f"{name} {op} {_fmt_number(float(self.threshold[node]), decimals)}"

    # -- serialisation (to_dict / from_dict / to_json / from_json: TreeJSON) ------------

    def structure_digest(self) -> str:
        """Short hex digest of the routing arrays (to key caches and figure ``uirevision``)."""
        h = hashlib.blake2b(digest_size=8)
        for a in (self.children_left, self.children_right, self.feature, self.threshold):
            h.update(a.tobytes())
        return h.hexdigest()

    def to_frame(
        self, feature_names: list[str] | None = None, class_names: list[str] | None = None
    ):
        """Node table as a ``pandas.DataFrame``, one row per node (index = node id).

        Columns: ``node``, ``depth``, ``parent`` (-1 at the root), ``is_leaf``,
        ``feature_index`` (-2 at leaves), ``feature`` (name, '' at leaves), ``threshold``
        (NaN at leaves), ``rule`` (left-branch test, '' at leaves), ``n_samples``,
        ``weighted_n_samples``, ``impurity``; then for classification one ``p(<class>)``
        column per class (fractions) and ``majority_class``; for regression ``value``
        (node mean); then the extras that are present (``p_value``, ``lower_bound``,
        ``upper_bound``).
        """
        import pandas as pd

        names = self.feature_labels(feature_names)
        leaf = self.is_leaf
        cols: dict[str, Any] = {
            "node": np.arange(self.node_count, dtype=np.int64),
            "depth": self._depth.copy(),
            "parent": self._parent.copy(),
            "is_leaf": leaf,
            "feature_index": self.feature.copy(),
            "feature": ["" if leaf[i] else names[self.feature[i]] for i in range(self.node_count)],
            "threshold": np.where(leaf, np.nan, self.threshold),
            "rule": ["" if leaf[i] else self.rule(i, names) for i in range(self.node_count)],
            "n_samples": self.n_node_samples.copy(),
            "weighted_n_samples": self.weighted_n_node_samples.copy(),
            "impurity": self.impurity.copy(),
        }
        if self.task == "classification":
            cn = self.class_names(class_names)
            for k, c in enumerate(cn):
                cols[f"p({c})"] = self.value[:, 0, k].copy()
            cols["majority_class"] = [cn[k] for k in np.argmax(self.value[:, 0, :], axis=1)]
        else:
            cols["value"] = self.value[:, 0, 0].copy()
        for name in ("p_value", "lower_bound", "upper_bound"):
            a = getattr(self, name)
            if a is not None:
                cols[name] = a.copy()
        return pd.DataFrame(cols)


def _tiny_tree() -> TreeArrays:
    """A 3-node classification stump on 2 features (for warm-up and examples)."""
    return TreeArrays(
        [1, -1, -1],
        [2, -1, -1],
        [0, -2, -2],
        [0.5, -2.0, -2.0],
        [0.5, 0.0, 0.0],
        [4, 2, 2],
        [4.0, 2.0, 2.0],
        [[[0.5, 0.5]], [[1.0, 0.0]], [[0.0, 1.0]]],
        task="classification",
        n_features=2,
        classes_=np.array([0, 1]),
    )
