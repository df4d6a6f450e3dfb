"""What a step-through growth (:mod:`engine.teaching.growth`) is made of: the rows it runs on
(:class:`GrowthData`, :func:`prepare`), one feature's scan at a node (:class:`FeatureScan`),
one step (:class:`GrowthStep`), the whole growth (:class:`Growth`) and the tree as it stands
after a step (:func:`partial_tree`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.criteria import ENTROPY, GINI
from engine.tree import TREE_LEAF, TREE_UNDEFINED, TreeArrays

#: Rows a growth is computed on (a seeded subsample above): every step stays instant.
MAX_ROWS = 2000


#: The methods, by the names the page shows.
METHODS = ("CART", "Conditional inference tree", "Partition Tree")


#: Partition Tree node kinds (engine.partition.growth), as words.
PARTITION_KINDS = {1: "X split", 2: "X split (categories)", 3: "Y split", 4: "Y split (classes)"}


#: CART's classification criteria the growth replays, by name (regression: squared error).
CART_CRITERIA = {"gini": GINI, "entropy": ENTROPY}


@dataclass(frozen=True, eq=False)
class GrowthData:
    """The rows a growth runs on.

    ``X`` float64 (n, p) C-contiguous (categorical features as their codes 0..c-1, kept
    only with ``keep_categorical``), ``y`` int64 class codes or float64 values,
    ``feature_names`` the p names, ``columns`` their indices in the original table,
    ``notes`` what :func:`prepare` changed (sentences for the page), ``is_categorical``
    bool (p,) (``None``: every feature is continuous), ``categories`` the labels of each
    kept feature's codes (``None`` for a numeric one; ``None`` overall when unknown).
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    task: str
    n_classes: int
    columns: tuple[int, ...]
    notes: tuple[str, ...] = ()
    is_categorical: np.ndarray | None = None
    categories: tuple | None = None


def prepare(
    X,
    y,
    *,
    task: str,
    feature_names,
    is_categorical=None,
    n_classes: int = 0,
    max_rows: int = MAX_ROWS,
    seed: int = 0,
    keep_categorical: bool = False,
    categories=None,
) -> GrowthData:
    """The rows and features a step-through growth uses.

    Keeps the continuous columns, and the categorical ones (codes 0..c-1) only with
    ``keep_categorical`` (CART splits them into two sets of categories; the other
    growths would threshold the codes as numbers) and, above ``max_rows`` rows, a
    subsample drawn without replacement by ``numpy.random.RandomState(seed)`` (kept in
    the table's row order).  Every change is stated in ``notes``.  ``categories``: the
    labels of a categorical column's codes, by column index (a dict, as
    :attr:`engine.data.Dataset.categories`, or a list with ``None`` for numeric columns).

    Raises
    ------
    ValueError
        No feature left, fewer than 2 rows, or missing values in ``X``.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    names = [str(n) for n in feature_names]
    cat = np.zeros(X.shape[1], bool) if is_categorical is None else np.asarray(is_categorical)
    cat = cat.astype(bool)
    keep = np.arange(X.shape[1]) if keep_categorical else np.flatnonzero(~cat)
    notes = []
    if keep.size == 0:
        raise ValueError("every feature is categorical: the step-through growth splits numbers")
    if keep.size < X.shape[1]:
        notes.append(
            f"{X.shape[1] - keep.size} categorical feature(s) left out (a threshold on "
            "category codes would mean nothing)."
        )
    if np.isnan(X[:, keep]).any():
        raise ValueError("the features hold missing values: drop or impute them in the sidebar")
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"a tree needs at least 2 rows, got {n}")
    rows = np.arange(n)
    if n > max_rows:
        rows = np.sort(np.random.RandomState(seed).choice(n, max_rows, replace=False))
        notes.append(
            f"Grown on a random subsample of {max_rows:,} of the {n:,} rows (seed {seed}), "
            "so that every step is instant."
        )
    labels = None
    if categories is not None:
        get = categories.get if isinstance(categories, dict) else dict(enumerate(categories)).get
        labels = [None if get(j) is None else [str(c) for c in get(j)] for j in range(X.shape[1])]
    Xs = np.ascontiguousarray(X[np.ix_(rows, keep)])
    ys = y[rows].astype(np.int64 if task == "classification" else np.float64)
    return GrowthData(
        X=Xs,
        y=ys,
        feature_names=tuple(names[j] for j in keep),
        task=task,
        n_classes=int(n_classes) if task == "classification" else 0,
        columns=tuple(int(j) for j in keep),
        notes=tuple(notes),
        is_categorical=cat[keep].copy() if cat[keep].any() else None,
        categories=None if labels is None else tuple(labels[int(j)] for j in keep),
    )


@dataclass(frozen=True, eq=False)
class FeatureScan:
    """Every candidate split of one feature at one CART node.

    ``thresholds`` float64 (m,) ascending midpoints (a categorical feature: NaN, its
    candidates are ``left_sets``, the category codes going left, in scan order);
    ``decreases`` the impurity decrease ``i(t) - W_L/W i(L) - W_R/W i(R)`` at each (not
    weighted by the node's share); ``best`` the index of the feature's best candidate
    (-1 when none: a constant feature).
    """

    feature: int
    thresholds: np.ndarray
    decreases: np.ndarray
    best: int
    left_sets: tuple[tuple[int, ...], ...] | None = None

    @property
    def categorical(self) -> bool:
        return self.left_sets is not None

    @property
    def best_left_set(self) -> tuple[int, ...] | None:
        """The category codes the best candidate sends left (None: numeric or no split)."""
        return self.left_sets[self.best] if self.left_sets is not None and self.best >= 0 else None

    @property
    def best_threshold(self) -> float:
        return float(self.thresholds[self.best]) if self.best >= 0 else float("nan")

    @property
    def best_decrease(self) -> float:
        return float(self.decreases[self.best]) if self.best >= 0 else float("nan")


@dataclass(eq=False)
class GrowthStep:
    """One step of a growth.

    ``node`` the examined node's id in the final tree, ``tree_node`` its id in ``tree``
    (the tree after this step); ``phase`` one of ``'split'``, ``'leaf'``, ``'tests'``
    (CIT stage A, the split follows in the next step); ``feature`` / ``threshold`` the
    split made (``-1`` / nan otherwise); ``reason`` one sentence; ``details`` the method's
    numbers (CART: ``scans`` list of :class:`FeatureScan`, ``decrease``; CIT: the node
    record's stage A and stage B fields; Partition: ``gain``, ``kind``, ``others``).
    """

    index: int
    method: str
    node: int
    tree_node: int
    depth: int
    n_samples: int
    phase: str
    feature: int
    threshold: float
    reason: str
    tree: TreeArrays
    details: dict = field(default_factory=dict)

    @property
    def path(self) -> list[int]:
        """Node ids of ``tree`` from the root to the examined node."""
        path = [self.tree_node]
        parent = self.tree.parent
        while parent[path[-1]] >= 0:
            path.append(int(parent[path[-1]]))
        return path[::-1]


@dataclass(eq=False)
class Growth:
    """The steps of one growth and the final tree (``final``, node ids as the estimator's;
    ``feature_names`` of its columns)."""

    method: str
    steps: list[GrowthStep]
    final: TreeArrays
    feature_names: tuple[str, ...]
    task: str
    params: dict

    def __len__(self) -> int:
        return len(self.steps)


def partial_tree(tree: TreeArrays, split_nodes) -> tuple[TreeArrays, dict[int, int]]:
    """``tree`` with only the splits in ``split_nodes`` made: every other split node is a
    leaf (its subtree dropped).  Node ids are renumbered in pre-order (left child first);
    returns the tree and the map old id -> new id of the nodes kept.  Node statistics,
    p-values, category sets and missing-value sides are kept."""
    done = {int(v) for v in split_nodes}
    keep: list[int] = []
    stack = [0]
    while stack:
        v = stack.pop()
        keep.append(v)
        if v in done and tree.children_left[v] != TREE_LEAF:
            stack.append(int(tree.children_right[v]))
            stack.append(int(tree.children_left[v]))
    new = {old: i for i, old in enumerate(keep)}
    idx = np.array(keep, dtype=np.int64)
    split = np.array([v in done and tree.children_left[v] != TREE_LEAF for v in keep])
    cl = np.where(split, [new.get(int(tree.children_left[v]), -1) for v in keep], TREE_LEAF)
    cr = np.where(split, [new.get(int(tree.children_right[v]), -1) for v in keep], TREE_LEAF)
    cat_offsets = cat_values = None
    if tree.cat_offsets is not None:
        sets = [
            tree.cat_values[tree.cat_offsets[v] : tree.cat_offsets[v + 1]]
            if s
            else np.empty(0, np.int64)
            for v, s in zip(keep, split, strict=True)
        ]
        cat_offsets = np.r_[0, np.cumsum([a.size for a in sets])].astype(np.int64)
        cat_values = np.concatenate(sets).astype(np.int64)
    part = TreeArrays(
        cl.astype(np.int64),
        cr.astype(np.int64),
        np.where(split, tree.feature[idx], TREE_UNDEFINED).astype(np.int64),
        np.where(split, tree.threshold[idx], float(TREE_UNDEFINED)),
        tree.impurity[idx],
        tree.n_node_samples[idx],
        tree.weighted_n_node_samples[idx],
        tree.value[idx],
        task=tree.task,
        n_features=tree.n_features,
        classes_=tree.classes_,
        feature_names=tree.feature_names,
        p_value=None if tree.p_value is None else np.where(split, tree.p_value[idx], np.nan),
        cat_offsets=cat_offsets,
        cat_values=cat_values,
        missing_go_to_left=None
        if tree.missing_go_to_left is None
        else np.where(split, tree.missing_go_to_left[idx], 0).astype(np.uint8),
        categories=tree.categories,
    )
    return part, new
