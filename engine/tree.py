"""Tree arrays: the one binary-tree layout every TreeLab method writes and every view reads.

The layout is scikit-learn's ``sklearn.tree._tree.Tree`` struct of arrays (see
``sklearn/tree/_tree.pxd``, ``NODE_DTYPE``): node ``i`` has children ``children_left[i]``
and ``children_right[i]`` (``TREE_LEAF = -1`` at leaves), a split ``feature[i]``
(``TREE_UNDEFINED = -2`` at leaves) and ``threshold[i]``; a sample goes **left when
``x[feature] <= threshold``**.  ``value`` has shape ``(n_nodes, n_outputs, n_classes)`` and
holds weighted class **fractions** for classifiers (scikit-learn >= 1.4.1) or the node mean
for regression.  Extras that some methods add (p-values, shape-function breakpoints, search
bounds, categorical set splits) are optional arrays next to the standard ones.

Public API
----------
* :class:`TreeArrays` - one tree; ``apply``/``predict``/``predict_proba``/``decision_path``,
  rules, a node table (``to_frame``) and a lossless JSON form (``to_dict``/``to_json``).
* :class:`TreeEnsemble` - forests (average of trees) and gradient boosting (additive raw
  scores), built by :func:`from_sklearn`.
* :func:`from_sklearn` - convert a fitted scikit-learn tree, forest or gradient boosting model.

Routing is done by numba kernels (single-threaded, ``nogil``, iterative).  Rows are cast to
float64 C-contiguous before every call so that one compiled specialisation serves every call.
Missing values are **not** routed: a NaN in ``X`` raises ``ValueError``.  Shape-function
nodes (``bp_offsets``/``bp_values``, Literati) route by their breakpoints: left iff the
number of breakpoints strictly below ``x[feature]`` is even (see ``has_shape_splits``).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import numpy as np

from engine._numba import njit, register_warmup

#: Version tag written by ``to_dict`` and checked by ``from_dict``.
FORMAT = "treelab.tree/1"
#: Version tag of :meth:`TreeEnsemble.to_dict`.
ENSEMBLE_FORMAT = "treelab.ensemble/1"
#: ``children_left``/``children_right`` at a leaf (scikit-learn's ``TREE_LEAF``).
TREE_LEAF = -1
#: ``feature`` at a leaf (scikit-learn's ``TREE_UNDEFINED``).
TREE_UNDEFINED = -2

_TASKS = ("classification", "regression")
_NAN_MESSAGE = (
    "TreeLab trees do not route missing values: impute or drop those rows before predicting"
)


# ---------------------------------------------------------------------------------------
# numba kernels (iterative, single-threaded, nogil)
# ---------------------------------------------------------------------------------------


# Routing arrays.  The kernels take the node arrays in a routing form derived once per tree
# (see ``TreeArrays.routing_arrays``): child ids and features as uint64 with 0 at leaves (the
# root is never a child, so 0 is a free sentinel), which spares numba's negative-index
# wrap-around on every load, and the threshold actually compared (float64).  Measured on
# 200k rows (bench/bench_predict.py) this form beats scikit-learn's own Cython loop.


@njit
def _apply_kernel(children_left, children_right, feature, threshold, X):
    """Leaf id (int64 ``(n_samples,)``) reached by every row of ``X``.

    ``children_left``/``children_right``/``feature``: uint64 ``(n_nodes,)``, 0 at leaves;
    ``threshold``: float64 ``(n_nodes,)``, a row goes left when ``x[feature] <= threshold``;
    ``X``: float64 C-contiguous ``(n_samples, n_features)``.
    """
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        node = np.uint64(0)
        while True:
            left = children_left[node]
            if left == 0:
                break
            if X[i, feature[node]] <= threshold[node]:
                node = left
            else:
                node = children_right[node]
        out[i] = node
    return out


@njit
def _apply_cat_kernel(
    children_left, children_right, feature, threshold, cat_offsets, cat_values, X
):
    """Like :func:`_apply_kernel`, with categorical set splits.

    A node with a non-empty category set (``cat_offsets[i] < cat_offsets[i + 1]``, int64)
    sends a row left when its code ``x[feature]`` is one of ``cat_values[cat_offsets[i]:
    cat_offsets[i + 1]]`` (int64 codes); other nodes use ``x[feature] <= threshold``.
    """
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        node = np.uint64(0)
        while True:
            left = children_left[node]
            if left == 0:
                break
            v = X[i, feature[node]]
            start = cat_offsets[node]
            stop = cat_offsets[node + np.uint64(1)]
            if stop > start:
                go_left = False
                for j in range(start, stop):
                    if v == np.float64(cat_values[j]):
                        go_left = True
                        break
            else:
                go_left = v <= threshold[node]
            if go_left:
                node = left
            else:
                node = children_right[node]
        out[i] = node
    return out


@njit
def _apply_shape_kernel(
    children_left, children_right, feature, threshold, bp_offsets, bp_values, X
):
    """Like :func:`_apply_kernel`, with shape-function nodes (Literati, SPEC section 1).

    A node with breakpoints ``u = bp_values[bp_offsets[i]:bp_offsets[i + 1]]`` (sorted
    float64, int64 offsets) sends a row left iff the number of breakpoints strictly below
    ``x[feature]`` is even (``searchsorted(u, x, 'left') % 2 == 0``); nodes without
    breakpoints use ``x[feature] <= threshold``.
    """
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        node = np.uint64(0)
        while True:
            left = children_left[node]
            if left == 0:
                break
            v = X[i, feature[node]]
            start = bp_offsets[node]
            stop = bp_offsets[node + np.uint64(1)]
            if stop > start:
                c = 0
                for j in range(start, stop):
                    if bp_values[j] < v:
                        c += 1
                    else:
                        break
                go_left = c % 2 == 0
            else:
                go_left = v <= threshold[node]
            if go_left:
                node = left
            else:
                node = children_right[node]
        out[i] = node
    return out


@njit
def _ensemble_apply_kernel(node_offsets, children_left, children_right, feature, threshold, X):
    """Leaf ids int64 ``(n_samples, n_trees)`` (local to each tree) of concatenated trees.

    Tree ``t`` owns global nodes ``node_offsets[t]:node_offsets[t + 1]`` (uint64); child ids
    in the routing arrays are local to the tree, 0 at leaves.
    """
    n = X.shape[0]
    n_trees = node_offsets.shape[0] - 1
    out = np.empty((n, n_trees), dtype=np.int64)
    for t in range(n_trees):
        off = node_offsets[t]
        for i in range(n):
            node = np.uint64(0)
            while True:
                left = children_left[off + node]
                if left == 0:
                    break
                if X[i, feature[off + node]] <= threshold[off + node]:
                    node = left
                else:
                    node = children_right[off + node]
            out[i, t] = node
    return out


@njit
def _ensemble_sum_kernel(
    node_offsets,
    children_left,
    children_right,
    feature,
    threshold,
    values,
    tree_output,
    weight,
    X,
    out,
):
    """Accumulate leaf values of concatenated trees into ``out`` (n_samples, n_columns).

    For tree ``t`` and the leaf ``g`` (global id) a row reaches: if ``tree_output[t] == -1``
    add the whole row ``values[g, :]`` (forests), else add ``weight * values[g, 0]`` to column
    ``tree_output[t]`` (boosting).  Trees are added in order, so every element of ``out`` sees
    the same sequence of floating-point additions as scikit-learn's own loops.
    """
    n = X.shape[0]
    n_trees = node_offsets.shape[0] - 1
    n_cols = values.shape[1]
    for t in range(n_trees):
        off = node_offsets[t]
        k = tree_output[t]
        for i in range(n):
            node = np.uint64(0)
            while True:
                left = children_left[off + node]
                if left == 0:
                    break
                if X[i, feature[off + node]] <= threshold[off + node]:
                    node = left
                else:
                    node = children_right[off + node]
            g = off + node
            if k < 0:
                for c in range(n_cols):
                    out[i, c] += values[g, c]
            else:
                out[i, k] += weight * values[g, 0]
    return out


def float32_routing_threshold(threshold: np.ndarray) -> np.ndarray:
    """Thresholds ``t'`` with ``x <= t'`` iff ``float32(x) <= t`` for every float64 ``x``.

    scikit-learn casts ``X`` to float32 before comparing with its float64 thresholds.
    Rounding to float32 is monotone, so the rows going left form a half-line and one
    float64 bound ``t'`` reproduces the test exactly without rounding each value: with
    ``a`` the largest float32 ``<= t`` and ``b`` the next float32, values below the
    midpoint ``m = (a + b) / 2`` (exact in float64) round to ``a`` or less; ``m`` itself
    rounds to ``a`` only when round-half-to-even says so.  Infinite ``a``/``b`` use
    ``+-2**128`` (the float32 overflow boundary).  NaN thresholds stay NaN.
    """
    t = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        a = t.astype(np.float32)
        a = np.where(a.astype(np.float64) > t, np.nextafter(a, np.float32(-np.inf)), a)
        b = np.nextafter(a, np.float32(np.inf))
        a64 = np.where(np.isneginf(a), -(2.0**128), a.astype(np.float64))
        b64 = np.where(np.isposinf(b), 2.0**128, b.astype(np.float64))
        m = 0.5 * (a64 + b64)
        out = np.where(m.astype(np.float32) == a, m, np.nextafter(m, -np.inf))
    out = np.where(np.isposinf(t), np.inf, out)
    return np.where(np.isnan(t), np.nan, out).astype(np.float64)


# ---------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------


def _as_1d(name: str, a: Any, dtype, length: int | None = None) -> np.ndarray:
    """Cast ``a`` to a fresh, writable, C-contiguous 1-D array of ``dtype``."""
    try:
        raw = np.asarray(a)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise ValueError(f"{name}: cannot convert to an array ({exc})") from exc
    if raw.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {raw.shape}")
    if np.dtype(dtype).kind == "i":
        if raw.dtype.kind == "f":
            if not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
                raise ValueError(f"{name} must hold integers, got non-integral floats")
        elif raw.dtype.kind not in "iub" and raw.size:
            raise ValueError(f"{name} must hold integers, got dtype {raw.dtype}")
    elif raw.dtype.kind not in "fiub" and raw.size:
        raise ValueError(f"{name} must be numeric, got dtype {raw.dtype}")
    out = np.array(raw, dtype=dtype, order="C", copy=True)
    if length is not None and out.shape[0] != length:
        raise ValueError(f"{name} has length {out.shape[0]}, expected {length}")
    return out


def _check_csr(name: str, offsets: Any, values: Any, n_nodes: int, dtype):
    """Validate a CSR pair (``offsets`` int64 of length n_nodes + 1, ``values``)."""
    if (offsets is None) != (values is None):
        raise ValueError(f"{name}_offsets and {name}_values must be given together")
    if offsets is None:
        return None, None
    off = _as_1d(f"{name}_offsets", offsets, np.int64, n_nodes + 1)
    val = _as_1d(f"{name}_values", values, dtype)
    if off[0] != 0 or np.any(np.diff(off) < 0) or off[-1] != val.shape[0]:
        raise ValueError(
            f"{name}_offsets must start at 0, never decrease and end at len({name}_values)"
            f" = {val.shape[0]}"
        )
    return off, val


def _fmt_number(x: float, decimals: int | None = None) -> str:
    """Threshold text: ``decimals`` fixed digits, or up to 6 significant digits."""
    if decimals is not None:
        return f"{x:.{decimals}f}"
    return f"{x:.6g}"


def _float_list(a: np.ndarray) -> list:
    """JSON-safe list of floats: NaN -> None, +-inf -> "inf"/"-inf" (strict JSON)."""
    out = a.astype(np.float64).tolist()

    def enc(v):
        if isinstance(v, list):
            return [enc(u) for u in v]
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v

    return enc(out)


def _float_array(v: Any) -> np.ndarray:
    """Inverse of :func:`_float_list`."""

    def dec(u):
        if isinstance(u, list):
            return [dec(w) for w in u]
        if u is None:
            return math.nan
        if isinstance(u, str):
            return float(u)
        return u

    return np.asarray(dec(v), dtype=np.float64)


def _classes_list(classes: np.ndarray | None) -> list | None:
    """Class labels as plain Python values (numpy scalars unwrapped) for JSON."""
    if classes is None:
        return None
    return [c.item() if isinstance(c, np.generic) else c for c in classes.tolist()]


# ---------------------------------------------------------------------------------------
# TreeArrays
# ---------------------------------------------------------------------------------------


@dataclass(eq=False)
class TreeArrays:
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
    _depth: np.ndarray = field(init=False, repr=False)
    _parent: np.ndarray = field(init=False, repr=False)
    _routing: tuple | None = field(default=None, init=False, repr=False)
    _majority: np.ndarray | None = field(default=None, init=False, repr=False)

    # -- validation ---------------------------------------------------------------------

    def __post_init__(self) -> None:
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

        # structure
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

        # extras
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
            ``n_features``, or with NaN (trees here do not route missing values).
        """
        return _check_X(X, self.n_features, self.feature_names)

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
        cats = self._category_set(node)
        if cats is not None:
            return bool(np.any(cats.astype(np.float64) == v))
        if self.has_shape_splits:
            u = self.breakpoints(node)
            if u is not None:
                return bool(np.searchsorted(u, v, side="left") % 2 == 0)
        return bool(v <= self.routing_arrays()[3][node])

    def _category_set(self, node: int) -> np.ndarray | None:
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
        cats = self._category_set(node)
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

    # -- text ---------------------------------------------------------------------------

    def _names(self, feature_names: list[str] | None) -> list[str]:
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
        (Literati) lists the intervals of that side, e.g. ``'x <= 3.5 or x > 7.5'``.

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
        name = self._names(feature_names)[j]
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

    # -- serialisation ------------------------------------------------------------------

    def to_dict(self) -> dict:
        """JSON-serialisable dict (lists, ``None`` for absent extras, ``format`` key).

        Non-finite floats are written as ``None`` (NaN) or ``"inf"``/``"-inf"`` so the
        result is strict JSON; :meth:`from_dict` restores them.  Lossless: every array
        round-trips bit for bit.
        """
        classes = _classes_list(self.classes_)

        def ints(a):
            return None if a is None else a.tolist()

        def floats(a):
            return None if a is None else _float_list(a)

        return {
            "format": FORMAT,
            "task": self.task,
            "n_features": self.n_features,
            "feature_names": None if self.feature_names is None else list(self.feature_names),
            "classes": classes,
            "categories": None
            if self.categories is None
            else [None if c is None else list(c) for c in self.categories],
            "float32_inputs": self.float32_inputs,
            "children_left": ints(self.children_left),
            "children_right": ints(self.children_right),
            "feature": ints(self.feature),
            "threshold": floats(self.threshold),
            "impurity": floats(self.impurity),
            "n_node_samples": ints(self.n_node_samples),
            "weighted_n_node_samples": floats(self.weighted_n_node_samples),
            "value": floats(self.value),
            "p_value": floats(self.p_value),
            "bp_offsets": ints(self.bp_offsets),
            "bp_values": floats(self.bp_values),
            "lower_bound": floats(self.lower_bound),
            "upper_bound": floats(self.upper_bound),
            "cat_offsets": ints(self.cat_offsets),
            "cat_values": ints(self.cat_values),
        }

    @classmethod
    def from_dict(cls, d: dict) -> TreeArrays:
        """Inverse of :meth:`to_dict`.  Raises ``ValueError`` on a missing or unknown
        ``format`` key or missing arrays."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            got = d.get("format") if isinstance(d, dict) else type(d).__name__
            raise ValueError(f"not a TreeLab tree: expected format {FORMAT!r}, got {got!r}")
        required = (
            "children_left",
            "children_right",
            "feature",
            "threshold",
            "impurity",
            "n_node_samples",
            "weighted_n_node_samples",
            "value",
            "task",
            "n_features",
        )
        missing = [k for k in required if d.get(k) is None]
        if missing:
            raise ValueError(f"tree dict is missing {missing}")

        def floats(key):
            return None if d.get(key) is None else _float_array(d[key])

        def ints(key):
            return None if d.get(key) is None else np.asarray(d[key], dtype=np.int64)

        classes = d.get("classes")
        return cls(
            ints("children_left"),
            ints("children_right"),
            ints("feature"),
            floats("threshold"),
            floats("impurity"),
            ints("n_node_samples"),
            floats("weighted_n_node_samples"),
            floats("value"),
            task=d["task"],
            n_features=d["n_features"],
            classes_=None if classes is None else np.asarray(classes),
            feature_names=d.get("feature_names"),
            categories=d.get("categories"),
            float32_inputs=bool(d.get("float32_inputs", False)),
            p_value=floats("p_value"),
            bp_offsets=ints("bp_offsets"),
            bp_values=floats("bp_values"),
            lower_bound=floats("lower_bound"),
            upper_bound=floats("upper_bound"),
            cat_offsets=ints("cat_offsets"),
            cat_values=ints("cat_values"),
        )

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_dict` as a strict JSON string."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, s: str | bytes) -> TreeArrays:
        """Inverse of :meth:`to_json`.  Raises ``ValueError`` on invalid JSON."""
        try:
            d = json.loads(s)
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid tree JSON: {exc}") from exc
        return cls.from_dict(d)

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

        names = self._names(feature_names)
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


def _check_X(X: Any, n_features: int, feature_names: list[str] | None = None) -> np.ndarray:
    """Shared row validation; see :meth:`TreeArrays.check_X`."""
    if hasattr(X, "to_numpy") and hasattr(X, "columns"):
        X = X.to_numpy()
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X must be numeric (float64-convertible): {exc}") from exc
    if arr.ndim != 2:
        hint = " (use x.reshape(1, -1) for one sample)" if arr.ndim == 1 else ""
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {arr.shape}{hint}")
    if arr.shape[1] != n_features:
        raise ValueError(
            f"X has {arr.shape[1]} columns but the tree expects n_features = {n_features}"
        )
    nan = np.isnan(arr)
    if nan.any():
        rows, cols = np.nonzero(nan)
        col = int(cols[0])
        name = feature_names[col] if feature_names is not None else f"feature_{col}"
        raise ValueError(
            f"X contains NaN in {len(np.unique(rows))} rows (first at row {int(rows[0])}, "
            f"column {name!r}); {_NAN_MESSAGE}"
        )
    arr = np.ascontiguousarray(arr)
    if not arr.flags.writeable:
        arr = arr.copy()
    return arr


# ---------------------------------------------------------------------------------------
# TreeEnsemble
# ---------------------------------------------------------------------------------------

_LINKS = ("identity", "logit", "half_logit", "softmax")


def _expit(z: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(z)


@dataclass(eq=False)
class TreeEnsemble:
    """Forest or gradient-boosting model made of :class:`TreeArrays`.

    Fields:

    * ``trees`` - list of ``n_trees`` :class:`TreeArrays` (same ``n_features``).
    * ``tree_output`` - int64 ``(n_trees,)``: the raw-score column each tree adds to
      (the class index for multiclass boosting, 0 for binary/regression boosting), or -1
      when the tree adds its whole value vector (forests).
    * ``scale`` - float: ``1 / n_trees`` for forests (raw = mean of the trees' leaf values),
      the learning rate for boosting (raw = base + scale * sum of leaf values).
    * ``base`` - float64 ``(n_columns,)``: zeros for forests; for boosting the raw
      prediction of the initial estimator (scikit-learn's ``_raw_predict_init``).
    * ``kind`` - 'forest' | 'boosting'; ``task`` - 'classification' | 'regression'.
    * ``classes_``, ``feature_names``.
    * ``link`` - how boosting raw scores become probabilities: 'logit' (binary log-loss,
      p1 = expit(raw)), 'half_logit' (exponential loss, p1 = expit(2 raw)), 'softmax'
      (multiclass), 'identity' (forests and regression).

    Binary boosting models one raw score, for class ``classes_[1]``; the class-0 score is
    its negative (scikit-learn's convention), and ``predict`` picks class 1 when raw >= 0.
    """

    trees: list[TreeArrays]
    tree_output: np.ndarray
    scale: float
    base: np.ndarray
    kind: str
    task: str
    classes_: np.ndarray | None = None
    feature_names: list[str] | None = None
    link: str = "identity"
    _packed: tuple | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.trees:
            raise ValueError("trees is empty: an ensemble needs at least one tree")
        if not all(isinstance(t, TreeArrays) for t in self.trees):
            raise ValueError("trees must be a list of TreeArrays")
        self.trees = list(self.trees)
        if self.kind not in ("forest", "boosting"):
            raise ValueError(f"kind must be 'forest' or 'boosting', got {self.kind!r}")
        if self.task not in _TASKS:
            raise ValueError(f"task must be one of {_TASKS}, got {self.task!r}")
        if self.link not in _LINKS:
            raise ValueError(f"link must be one of {_LINKS}, got {self.link!r}")
        self.tree_output = _as_1d("tree_output", self.tree_output, np.int64, len(self.trees))
        self.base = _as_1d("base", self.base, np.float64)
        self.scale = float(self.scale)
        nf = {t.n_features for t in self.trees}
        if len(nf) != 1:
            raise ValueError(f"trees disagree on n_features: {sorted(nf)}")
        if self.classes_ is not None:
            self.classes_ = np.array(self.classes_, copy=True)
        if self.feature_names is not None:
            self.feature_names = [str(s) for s in self.feature_names]
            if len(self.feature_names) != self.n_features:
                raise ValueError(
                    f"feature_names has {len(self.feature_names)} names, expected {self.n_features}"
                )
        if self.kind == "forest":
            widths = {t.n_classes for t in self.trees}
            if len(widths) != 1 or np.any(self.tree_output != -1):
                raise ValueError("a forest needs trees of one value width and tree_output -1")
            if {t.task for t in self.trees} != {self.task}:
                raise ValueError(f"every tree of a {self.task} forest must be {self.task}")
            if self.base.shape[0] != widths.pop():
                raise ValueError("base must have one entry per value column of the trees")
        else:
            if any(t.task != "regression" for t in self.trees):
                raise ValueError("boosting trees must be regression trees (one value column)")
            if np.any(self.tree_output < 0) or self.tree_output.max() >= self.base.shape[0]:
                raise ValueError("tree_output must index a column of base for boosting")
        if self.task == "classification" and self.classes_ is None:
            raise ValueError("classes_ is required for a classification ensemble")

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return len(self.trees)

    @property
    def n_features(self) -> int:
        """Columns of ``X``."""
        return self.trees[0].n_features

    def _pack(self):
        """Concatenate the trees' routing arrays (cached) for the ensemble kernels."""
        if self._packed is None:
            offs = np.zeros(self.n_trees + 1, dtype=np.uint64)
            offs[1:] = np.cumsum([t.node_count for t in self.trees])
            routing = [t.routing_arrays() for t in self.trees]
            left, right, feat, thr = (
                np.ascontiguousarray(np.concatenate(parts)) for parts in zip(*routing, strict=True)
            )
            values = np.ascontiguousarray(
                np.concatenate([t.value[:, 0, :] for t in self.trees]), dtype=np.float64
            )
            plain = not any(t.has_categorical_splits or t.has_shape_splits for t in self.trees)
            self._packed = (offs, left, right, feat, thr, values, plain)
        return self._packed

    def check_X(self, X: Any) -> np.ndarray:
        """Validate rows as :meth:`TreeArrays.check_X`."""
        return _check_X(X, self.n_features, self.feature_names)

    def apply(self, X: Any) -> np.ndarray:
        """Leaf ids int64 ``(n_samples, n_trees)`` (ids local to each tree)."""
        X = self.check_X(X)
        offs, cl, cr, feat, thr, _values, plain = self._pack()
        if not plain:
            return np.column_stack([t._route(X) for t in self.trees])
        return _ensemble_apply_kernel(offs, cl, cr, feat, thr, X)

    def predict_raw(self, X: Any) -> np.ndarray:
        """Raw ensemble output, float64.

        * forest: the mean over trees of the leaf values = scikit-learn ``predict_proba``
          ``(n_samples, n_classes)`` for classifiers, ``predict`` ``(n_samples,)`` for
          regressors;
        * boosting: ``base + scale * sum of leaf values`` = scikit-learn
          ``decision_function`` for classifiers (``(n_samples,)`` for binary: the class-1
          score, class 0 has its negative; ``(n_samples, n_classes)`` for multiclass) and
          ``predict`` ``(n_samples,)`` for regressors.
        """
        X = self.check_X(X)
        offs, cl, cr, feat, thr, values, plain = self._pack()
        n_cols = self.base.shape[0]
        out = np.empty((X.shape[0], n_cols), dtype=np.float64)
        out[:] = self.base
        weight = 1.0 if self.kind == "forest" else self.scale
        if plain:
            _ensemble_sum_kernel(
                offs, cl, cr, feat, thr, values, self.tree_output, float(weight), X, out
            )
        else:
            for t, k, tree in zip(range(self.n_trees), self.tree_output, self.trees, strict=True):
                v = values[int(offs[t]) + tree._route(X)]
                if k < 0:
                    out += v
                else:
                    out[:, k] += weight * v[:, 0]
        if self.kind == "forest":
            out /= self.n_trees
            return out if self.task == "classification" else out[:, 0].copy()
        return out[:, 0].copy() if out.shape[1] == 1 else out

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities float64 ``(n_samples, n_classes)``: forest mean of leaf
        fractions; boosting sigmoid (binary) or softmax (multiclass) of the raw score.
        Raises ``ValueError`` for regression."""
        if self.task != "classification":
            raise ValueError("predict_proba needs a classification ensemble; this is regression")
        raw = self.predict_raw(X)
        if self.kind == "forest":
            return raw
        if self.link in ("logit", "half_logit"):
            p1 = _expit(raw if self.link == "logit" else 2.0 * raw)
            proba = np.empty((raw.shape[0], 2), dtype=np.float64)
            proba[:, 1] = p1
            proba[:, 0] = 1.0 - p1
            return proba
        z = raw - raw.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        """Class labels or regression values ``(n_samples,)``, as scikit-learn's
        ``predict`` (binary boosting: class 1 when raw >= 0)."""
        raw = self.predict_raw(X)
        if self.task == "regression":
            return raw
        if raw.ndim == 1:
            return self.classes_.take((raw >= 0).astype(np.int64), axis=0)
        return self.classes_.take(np.argmax(raw, axis=1), axis=0)

    def to_dict(self) -> dict:
        """JSON-serialisable dict with a ``format`` key; trees via :meth:`TreeArrays.to_dict`."""
        return {
            "format": ENSEMBLE_FORMAT,
            "kind": self.kind,
            "task": self.task,
            "link": self.link,
            "scale": self.scale,
            "base": _float_list(self.base),
            "tree_output": self.tree_output.tolist(),
            "classes": _classes_list(self.classes_),
            "feature_names": self.feature_names,
            "trees": [t.to_dict() for t in self.trees],
        }

    @classmethod
    def from_dict(cls, d: dict) -> TreeEnsemble:
        """Inverse of :meth:`to_dict`; raises ``ValueError`` on a wrong ``format``."""
        if not isinstance(d, dict) or d.get("format") != ENSEMBLE_FORMAT:
            got = d.get("format") if isinstance(d, dict) else type(d).__name__
            raise ValueError(
                f"not a TreeLab ensemble: expected format {ENSEMBLE_FORMAT!r}, got {got!r}"
            )
        return cls(
            trees=[TreeArrays.from_dict(t) for t in d["trees"]],
            tree_output=np.asarray(d["tree_output"], dtype=np.int64),
            scale=float(d["scale"]),
            base=_float_array(d["base"]),
            kind=d["kind"],
            task=d["task"],
            classes_=None if d.get("classes") is None else np.asarray(d["classes"]),
            feature_names=d.get("feature_names"),
            link=d.get("link", "identity"),
        )

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_dict` as strict JSON."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, s: str | bytes) -> TreeEnsemble:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(s))


# ---------------------------------------------------------------------------------------
# scikit-learn converter
# ---------------------------------------------------------------------------------------

_SUPPORTED = (
    "DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeClassifier, ExtraTreeRegressor, "
    "RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, "
    "ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor"
)


def _names_of(estimator, feature_names):
    if feature_names is not None:
        return [str(s) for s in feature_names]
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(s) for s in names]


def _tree_from_sk_tree(sk_tree, *, task, classes, n_features, feature_names) -> TreeArrays:
    """Copy one ``sklearn.tree._tree.Tree`` into :class:`TreeArrays`."""
    if sk_tree.n_outputs != 1:
        raise ValueError(
            f"multi-output trees (n_outputs={sk_tree.n_outputs}) are not supported; fit one "
            "model per target"
        )
    return TreeArrays(
        sk_tree.children_left,
        sk_tree.children_right,
        sk_tree.feature,
        sk_tree.threshold,
        sk_tree.impurity,
        sk_tree.n_node_samples,
        sk_tree.weighted_n_node_samples,
        np.array(sk_tree.value, dtype=np.float64, copy=True),
        task=task,
        n_features=n_features,
        classes_=None if classes is None else np.array(classes, copy=True),
        feature_names=feature_names,
        float32_inputs=True,
    )


def from_sklearn(estimator, feature_names: list[str] | None = None):
    """Convert a fitted scikit-learn tree model.

    * ``DecisionTreeClassifier``/``DecisionTreeRegressor`` (and ``ExtraTree*``) ->
      :class:`TreeArrays` (``classes_`` and a copy of ``tree_.value``; ``feature_names``
      from the argument, else ``feature_names_in_`` when the model was fitted on a
      DataFrame).
    * ``RandomForest*``, ``ExtraTrees*`` -> :class:`TreeEnsemble` ``kind='forest'``,
      ``scale = 1 / n_trees``, ``base = 0``.
    * ``GradientBoostingClassifier``/``Regressor`` -> :class:`TreeEnsemble`
      ``kind='boosting'``, ``scale = learning_rate``, ``base`` = the init estimator's raw
      prediction (constant for the default prior/mean init and for ``init='zero'``).

    Converted trees set ``float32_inputs=True``: scikit-learn compares float32-cast inputs,
    and routing reproduces that, so ``apply``/``predict`` equal scikit-learn's exactly.

    Raises
    ------
    TypeError
        Not one of the supported classes (listed in the message).
    ValueError
        The estimator is not fitted, is multi-output, or (boosting) uses a custom ``init``
        estimator whose prediction depends on ``X``.
    """
    from sklearn.base import is_classifier
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import BaseDecisionTree

    name = type(estimator).__name__
    forests = (
        RandomForestClassifier,
        RandomForestRegressor,
        ExtraTreesClassifier,
        ExtraTreesRegressor,
    )
    boosting = (GradientBoostingClassifier, GradientBoostingRegressor)
    if not isinstance(estimator, (BaseDecisionTree, *forests, *boosting)):
        raise TypeError(f"from_sklearn does not support {name}; supported: {_SUPPORTED}")
    fitted_attr = "tree_" if isinstance(estimator, BaseDecisionTree) else "estimators_"
    if not hasattr(estimator, fitted_attr):
        raise ValueError(f"{name} is not fitted: call fit(X, y) before from_sklearn")
    n_outputs = getattr(estimator, "n_outputs_", 1)
    if n_outputs != 1:
        raise ValueError(
            f"{name} has n_outputs_={n_outputs}: multi-output models are not supported"
        )
    task = "classification" if is_classifier(estimator) else "regression"
    classes = np.array(estimator.classes_, copy=True) if task == "classification" else None
    names = _names_of(estimator, feature_names)
    n_features = int(estimator.n_features_in_)
    if names is not None and len(names) != n_features:
        raise ValueError(f"feature_names has {len(names)} names, expected {n_features}")

    if isinstance(estimator, BaseDecisionTree):
        return _tree_from_sk_tree(
            estimator.tree_, task=task, classes=classes, n_features=n_features, feature_names=names
        )

    if isinstance(estimator, forests):
        trees = [
            _tree_from_sk_tree(
                e.tree_, task=task, classes=classes, n_features=n_features, feature_names=names
            )
            for e in estimator.estimators_
        ]
        width = trees[0].n_classes
        return TreeEnsemble(
            trees=trees,
            tree_output=np.full(len(trees), -1, dtype=np.int64),
            scale=1.0 / len(trees),
            base=np.zeros(width),
            kind="forest",
            task=task,
            classes_=classes,
            feature_names=names,
            link="identity",
        )

    # gradient boosting
    from sklearn.dummy import DummyClassifier, DummyRegressor

    init = estimator.init_
    if not (isinstance(init, str) and init == "zero") and not isinstance(
        init, (DummyClassifier, DummyRegressor)
    ):
        raise ValueError(
            f"{name} uses a custom init estimator ({type(init).__name__}) whose prediction "
            "depends on X; only the default init and init='zero' are supported"
        )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = np.asarray(
            estimator._raw_predict_init(np.zeros((1, n_features), dtype=np.float32)),
            dtype=np.float64,
        )[0]
    stages = estimator.estimators_[: estimator.n_estimators_]
    K = stages.shape[1]
    trees, outputs = [], []
    for i in range(stages.shape[0]):
        for k in range(K):
            trees.append(
                _tree_from_sk_tree(
                    stages[i, k].tree_,
                    task="regression",
                    classes=None,
                    n_features=n_features,
                    feature_names=names,
                )
            )
            outputs.append(k)
    if task == "regression":
        link = "identity"
    elif K > 1:
        link = "softmax"
    else:
        link = "half_logit" if estimator.loss == "exponential" else "logit"
    return TreeEnsemble(
        trees=trees,
        tree_output=np.asarray(outputs, dtype=np.int64),
        scale=float(estimator.learning_rate),
        base=base,
        kind="boosting",
        task=task,
        classes_=classes,
        feature_names=names,
        link=link,
    )


# ---------------------------------------------------------------------------------------
# warm-up
# ---------------------------------------------------------------------------------------


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


@register_warmup("tree.apply")
def _warmup() -> None:
    """Compile (or load from cache) every routing kernel with the dtypes of real calls."""
    tree = _tiny_tree()
    X = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float64)
    tree.apply(X)
    left, right, feat, thr = tree.routing_arrays()
    _apply_cat_kernel(
        left,
        right,
        feat,
        thr,
        np.array([0, 1, 1, 1], dtype=np.int64),
        np.array([0], dtype=np.int64),
        X,
    )
    _apply_shape_kernel(
        left,
        right,
        feat,
        thr,
        np.array([0, 2, 2, 2], dtype=np.int64),
        np.array([0.25, 0.75], dtype=np.float64),
        X,
    )
    forest = TreeEnsemble(
        trees=[tree, tree],
        tree_output=np.array([-1, -1]),
        scale=0.5,
        base=np.zeros(2),
        kind="forest",
        task="classification",
        classes_=np.array([0, 1]),
    )
    forest.apply(X)
    forest.predict_raw(X)
