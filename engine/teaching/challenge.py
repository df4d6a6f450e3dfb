"""Build your own tree: a student grows a classification tree by hand (pick a leaf, a feature,
a threshold), sees the class counts and the impurity decrease of the split before making
it, and is graded on the training rows and on held-out rows against CART with the same
number of splits and against Literati's proven optimum of the same depth.

The student's thresholds are midpoints between neighbouring values of the leaf's training
rows (any other threshold between the same two values splits the training rows the same
way), so the student's tree lies in the candidate space of ``LiteratiClassifier`` with
``candidate_leaves=None`` (every midpoint) and ``max_breakpoints=1`` (one threshold per
node): its training errors can never beat the optimum Literati proves there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.criteria import exhaustive_gains, threshold_gains
from engine.tree import TreeArrays

#: Deepest tree the challenge grades (Literati's exact search stays quick up to here).
MAX_DEPTH = 4


@dataclass(frozen=True)
class UserTree:
    """A student's tree, immutable (each split returns a new tree, so undo is a list).

    Nodes are numbered in the order they were made, the root 0.  ``feature`` int (-1 at a
    leaf), ``threshold`` float (NaN at a leaf; rows with ``x <= threshold`` go left),
    ``left``/``right`` child ids (-1 at a leaf), ``depth`` of each node.
    """

    feature: tuple[int, ...] = (-1,)
    threshold: tuple[float, ...] = (float("nan"),)
    left: tuple[int, ...] = (-1,)
    right: tuple[int, ...] = (-1,)
    depth: tuple[int, ...] = (0,)

    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    @property
    def n_splits(self) -> int:
        return sum(f >= 0 for f in self.feature)

    @property
    def max_depth(self) -> int:
        """Depth of the deepest leaf (0 for a single leaf)."""
        return max(self.depth)

    def leaves(self) -> list[int]:
        """Leaf ids, in node order."""
        return [i for i, f in enumerate(self.feature) if f < 0]

    def split(self, leaf: int, feature: int, threshold: float) -> UserTree:
        """A new tree with ``leaf`` split on ``feature <= threshold``.

        Raises ``ValueError`` when ``leaf`` is not a leaf, ``feature`` is negative or the
        threshold is not finite.
        """
        if not 0 <= leaf < self.n_nodes or self.feature[leaf] >= 0:
            raise ValueError(f"node {leaf} is not a leaf of this tree; leaves: {self.leaves()}")
        if feature < 0 or not np.isfinite(threshold):
            raise ValueError(
                f"a split needs a feature >= 0 and a finite threshold, got {feature}, {threshold}"
            )
        n = self.n_nodes
        d = self.depth[leaf] + 1

        def put(values, at, value, extra):
            out = list(values)
            out[at] = value
            return tuple(out + extra)

        return UserTree(
            feature=put(self.feature, leaf, int(feature), [-1, -1]),
            threshold=put(self.threshold, leaf, float(threshold), [float("nan")] * 2),
            left=put(self.left, leaf, n, [-1, -1]),
            right=put(self.right, leaf, n + 1, [-1, -1]),
            depth=tuple(list(self.depth) + [d, d]),
        )

    def apply(self, X) -> np.ndarray:
        """Leaf id of every row of ``X`` (float (n, p)); int64 (n,)."""
        X = np.asarray(X, dtype=np.float64)
        node = np.zeros(X.shape[0], dtype=np.int64)
        for _ in range(self.max_depth):
            f = np.asarray(self.feature)[node]
            inner = f >= 0
            if not inner.any():
                break
            idx = np.flatnonzero(inner)
            goes_left = X[idx, f[inner]] <= np.asarray(self.threshold)[node[idx]]
            node[idx] = np.where(
                goes_left, np.asarray(self.left)[node[idx]], np.asarray(self.right)[node[idx]]
            )
        return node


def leaf_counts(tree: UserTree, X, y, n_classes: int) -> np.ndarray:
    """Class counts of the rows reaching each node's leaf: int64 (n_nodes, n_classes); rows
    of internal nodes hold the sum of their leaves."""
    counts = np.zeros((tree.n_nodes, n_classes), dtype=np.int64)
    leaf = tree.apply(X)
    np.add.at(counts, (leaf, np.asarray(y, dtype=np.int64)), 1)
    for i in sorted(range(tree.n_nodes), key=lambda i: -tree.depth[i]):  # children first
        if tree.feature[i] >= 0:
            counts[i] = counts[tree.left[i]] + counts[tree.right[i]]
    return counts


def predict(tree: UserTree, X_train, y_train, X, n_classes: int) -> np.ndarray:
    """Predictions for ``X``: each leaf predicts its majority class among the training rows
    (ties: the lowest class code; an empty leaf takes its parent's majority)."""
    counts = leaf_counts(tree, X_train, y_train, n_classes)
    label = np.argmax(counts, axis=1)
    parent = {c: i for i in range(tree.n_nodes) for c in (tree.left[i], tree.right[i]) if c >= 0}
    for i in range(tree.n_nodes):  # parents are made before their children
        if counts[i].sum() == 0 and i in parent:
            label[i] = label[parent[i]]
    return label[tree.apply(X)]


def errors(tree: UserTree, X_train, y_train, X, y, n_classes: int) -> int:
    """Misclassified rows of ``(X, y)`` by the tree labelled on the training rows."""
    return int(np.sum(predict(tree, X_train, y_train, X, n_classes) != np.asarray(y)))


def midpoints(x) -> np.ndarray:
    """Midpoints between neighbouring distinct values of ``x`` (the thresholds a student
    can choose), float64 ascending; empty when ``x`` has fewer than two distinct values."""
    u = np.unique(np.asarray(x, dtype=np.float64))
    return (u[1:] + u[:-1]) / 2


def snap(x, threshold: float) -> float:
    """The midpoint of ``x`` nearest to ``threshold`` (the same split of the rows as any
    threshold between those two values).  Raises ``ValueError`` without a midpoint."""
    m = midpoints(x)
    if m.size == 0:
        raise ValueError("this feature has a single value in the leaf: it cannot be split")
    return float(m[int(np.argmin(np.abs(m - float(threshold))))])


@dataclass(frozen=True)
class SplitPreview:
    """What splitting a leaf would do, before the student commits.

    ``counts_left``/``counts_right`` int64 (K,) class counts of the training rows on each
    side; ``impurity_parent``, ``impurity_left``, ``impurity_right`` Gini impurities;
    ``decrease`` the impurity decrease of the split weighted by the node's share of all
    training rows (scikit-learn's ``N_t / N * (i(t) - N_L / N_t i(L) - N_R / N_t i(R))``);
    ``node_decrease`` the same without the share; ``errors_before`` / ``errors_after``
    training errors of the leaf's rows with its majority label and with the two children's;
    ``best_threshold`` / ``best_decrease`` the largest node decrease on this feature;
    ``curve_thresholds`` / ``curve_gains`` the node decrease at every midpoint;
    ``histogram_edges`` float64 (B + 1,) and ``histogram_counts`` int64 (K, B): the leaf's
    rows of the feature in B equal-width bins, per class (for the preview figure).
    """

    counts_left: np.ndarray
    counts_right: np.ndarray
    impurity_parent: float
    impurity_left: float
    impurity_right: float
    node_decrease: float
    decrease: float
    errors_before: int
    errors_after: int
    best_threshold: float
    best_decrease: float
    curve_thresholds: np.ndarray = field(repr=False)
    curve_gains: np.ndarray = field(repr=False)
    histogram_edges: np.ndarray = field(repr=False)
    histogram_counts: np.ndarray = field(repr=False)


def _gini(counts: np.ndarray) -> float:
    n = counts.sum()
    return float(1.0 - np.sum((counts / n) ** 2)) if n else 0.0


def preview(
    tree: UserTree,
    X,
    y,
    leaf: int,
    feature: int,
    threshold: float,
    n_classes: int,
    *,
    n_bins: int = 30,
) -> SplitPreview:
    """The :class:`SplitPreview` of splitting ``leaf`` on ``feature <= threshold`` over the
    training rows ``X`` float (n, p), ``y`` int class codes (n,).

    Raises ``ValueError`` when ``leaf`` is not a leaf or no training row reaches it.
    """
    if not 0 <= leaf < tree.n_nodes or tree.feature[leaf] >= 0:
        raise ValueError(f"node {leaf} is not a leaf of this tree; leaves: {tree.leaves()}")
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    rows = tree.apply(X) == leaf
    if not rows.any():
        raise ValueError(f"no training row reaches leaf {leaf}")
    x, yl = np.ascontiguousarray(X[rows, feature]), y[rows]
    left = x <= threshold
    cl = np.bincount(yl[left], minlength=n_classes)
    cr = np.bincount(yl[~left], minlength=n_classes)
    parent = cl + cr
    n_t, n_l, n_r = parent.sum(), cl.sum(), cr.sum()
    node_decrease = _gini(parent) - (n_l * _gini(cl) + n_r * _gini(cr)) / n_t
    share = n_t / len(y)
    t_all, g_all = exhaustive_gains(x, yl, "gini", n_classes=n_classes)
    ok = np.isfinite(g_all)
    if ok.any():
        b = int(np.flatnonzero(ok)[np.argmax(g_all[ok])])
        best_t, best_g = float(t_all[b]), float(g_all[b])
    else:
        best_t, best_g = float("nan"), 0.0
    lo, hi = float(x.min()), float(x.max())
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, int(n_bins) + 1)
    hist = np.array([np.histogram(x[yl == k], bins=edges)[0] for k in range(n_classes)])
    return SplitPreview(
        counts_left=cl,
        counts_right=cr,
        impurity_parent=_gini(parent),
        impurity_left=_gini(cl),
        impurity_right=_gini(cr),
        node_decrease=float(node_decrease),
        decrease=float(share * node_decrease),
        errors_before=int(n_t - parent.max()),
        errors_after=int((n_l - cl.max() if n_l else 0) + (n_r - cr.max() if n_r else 0)),
        best_threshold=best_t,
        best_decrease=best_g,
        curve_thresholds=t_all,
        curve_gains=g_all,
        histogram_edges=edges,
        histogram_counts=hist.astype(np.int64),
    )


def gains_at(x, y, thresholds, n_classes: int) -> np.ndarray:
    """Gini decrease of the rows ``(x, y)`` at each threshold (the engine's kernel; the
    tests compare it with :func:`preview`)."""
    g, _ = threshold_gains(
        np.ascontiguousarray(x, dtype=np.float64),
        np.asarray(y, dtype=np.int64),
        np.asarray(thresholds, dtype=np.float64),
        "gini",
        n_classes=n_classes,
    )
    return g


def to_tree_arrays(
    tree: UserTree, X, y, n_classes: int, *, feature_names=None, class_names=None
) -> TreeArrays:
    """The student's tree as :class:`~engine.tree.TreeArrays` for
    :func:`engine.figures.tree.tree_figure`: class fractions, Gini impurity and row counts
    of the training rows ``(X, y)`` per node.  Its nodes are in preorder: node ``i`` of the
    arrays is node ``preorder(tree)[i]`` of the user tree (a click on the drawn tree gives
    the former).  An empty leaf gets uniform class fractions."""
    order = preorder(tree)
    pos = {node: i for i, node in enumerate(order)}
    counts = leaf_counts(tree, X, y, n_classes)[order]
    n = counts.sum(axis=1)
    value = np.where(n[:, None] > 0, counts / np.maximum(n, 1)[:, None], 1.0 / n_classes)
    imp = np.array([_gini(c) for c in counts])
    left = np.array([pos[tree.left[v]] if tree.left[v] >= 0 else -1 for v in order])
    right = np.array([pos[tree.right[v]] if tree.right[v] >= 0 else -1 for v in order])
    p = np.asarray(X).shape[1]
    return TreeArrays(
        children_left=left.astype(np.int64),
        children_right=right.astype(np.int64),
        feature=np.array([tree.feature[v] if tree.feature[v] >= 0 else -2 for v in order]),
        threshold=np.array(
            [tree.threshold[v] if tree.feature[v] >= 0 else -2.0 for v in order], dtype=float
        ),
        impurity=imp,
        n_node_samples=n.astype(np.int64),
        weighted_n_node_samples=n.astype(np.float64),
        value=value[:, None, :].astype(np.float64),
        task="classification",
        n_features=p,
        classes_=(
            np.arange(n_classes)
            if class_names is None
            else np.asarray(list(class_names), dtype=object)
        ),
        feature_names=None if feature_names is None else list(feature_names),
    )


def preorder(tree: UserTree) -> list[int]:
    """User-tree node ids in preorder (node, its left subtree, its right subtree)."""
    out, stack = [], [0]
    while stack:
        v = stack.pop()
        out.append(v)
        if tree.feature[v] >= 0:
            stack.extend((tree.right[v], tree.left[v]))
    return out


@dataclass(frozen=True)
class Grade:
    """The student's tree against the references on the same rows.

    Errors are misclassified rows (int).  ``cart_*``: CART (best-first, Gini) with the
    student's number of splits (``max_leaf_nodes = n_splits + 1``); ``optimal_*``:
    ``LiteratiClassifier`` of the student's depth on the same candidate thresholds
    (every midpoint, one threshold per node), its training errors the best any tree of
    that depth can do when ``proven``; ``optimal_lower_bound`` the errors no tree of that
    depth can beat (equal to ``optimal_train_errors`` when proven).
    """

    n_splits: int
    depth: int
    n_train: int
    n_test: int
    train_errors: int
    test_errors: int
    cart_train_errors: int
    cart_test_errors: int
    optimal_train_errors: int
    optimal_test_errors: int
    optimal_lower_bound: int
    proven: bool
    seconds: float

    def sentence(self) -> str:
        """The verdict in one sentence."""
        best = (
            f"the best possible tree of depth {self.depth} misclassifies "
            f"{self.optimal_train_errors}, proven"
            if self.proven
            else f"the best tree of depth {self.depth} found in {self.seconds:.0f} s "
            f"misclassifies {self.optimal_train_errors} (not proven: none can do better "
            f"than {self.optimal_lower_bound})"
        )
        return (
            f"Your tree misclassifies {self.train_errors} of {self.n_train} training rows; "
            f"{best}; CART with {self.n_splits} split{'s' if self.n_splits != 1 else ''} "
            f"misclassifies {self.cart_train_errors}."
        )


def optimal_tree(X, y, depth: int, *, time_limit: float = 10.0):
    """``LiteratiClassifier`` on the challenge's candidate space: depth ``depth``, one
    threshold per node, every midpoint a candidate, and a split penalty below
    ``1 / 2**depth`` so that the objective ranks trees by training errors first (all the
    penalties of a tree of that depth add up to less than one error).  Returns the fitted
    estimator (``objective_breakdown_['errors']``, ``proven_optimal_``)."""
    from engine.literati.estimator import LiteratiClassifier

    return LiteratiClassifier(
        max_depth=int(depth),
        max_breakpoints=1,
        split_penalty=0.5 / 2 ** int(depth),
        breakpoint_penalty=0.0,
        candidate_leaves=None,
        time_limit=float(time_limit),
        random_state=0,
    ).fit(X, y)


def grade(
    tree: UserTree, X_train, y_train, X_test, y_test, n_classes: int, *, time_limit: float = 10.0
) -> Grade:
    """Score ``tree`` on the training and held-out rows and fit the references.

    Raises ``ValueError`` for a tree without a split or deeper than :data:`MAX_DEPTH`.
    """
    import time

    from engine.cart.estimator import CARTClassifier

    if tree.n_splits == 0:
        raise ValueError("split the root first: a single leaf has nothing to compare")
    if tree.max_depth > MAX_DEPTH:
        raise ValueError(f"the challenge grades trees up to depth {MAX_DEPTH}")
    t0 = time.perf_counter()
    depth = tree.max_depth
    cart = CARTClassifier(max_leaf_nodes=tree.n_splits + 1, random_state=0)
    cart.fit(X_train, y_train)
    opt = optimal_tree(X_train, y_train, depth, time_limit=time_limit)
    # the penalties of any tree of this depth add up to less than 0.5: errors >= LB - 0.5
    lb_errors = int(np.ceil(opt.lower_bound_ - 0.5 - 1e-9))
    return Grade(
        n_splits=tree.n_splits,
        depth=depth,
        n_train=len(y_train),
        n_test=len(y_test),
        train_errors=errors(tree, X_train, y_train, X_train, y_train, n_classes),
        test_errors=errors(tree, X_train, y_train, X_test, y_test, n_classes),
        cart_train_errors=int(np.sum(cart.predict(X_train) != y_train)),
        cart_test_errors=int(np.sum(cart.predict(X_test) != y_test)),
        optimal_train_errors=int(opt.objective_breakdown_["errors"]),
        optimal_test_errors=int(np.sum(opt.predict(X_test) != y_test)),
        optimal_lower_bound=max(lb_errors, 0),
        proven=bool(opt.proven_optimal_),
        seconds=time.perf_counter() - t0,
    )


@dataclass(frozen=True)
class ScoreRow:
    """One graded attempt of the session's score table."""

    player: str
    dataset: str
    grade: Grade


def score_table(rows: list[ScoreRow]):
    """The session's attempts as a DataFrame, best first (fewest held-out errors, then
    fewest training errors, then fewest splits)."""
    import pandas as pd

    df = pd.DataFrame(
        [
            {
                "player": r.player,
                "dataset": r.dataset,
                "splits": r.grade.n_splits,
                "depth": r.grade.depth,
                "train errors": r.grade.train_errors,
                "held-out errors": r.grade.test_errors,
                "CART train errors": r.grade.cart_train_errors,
                "best train errors": r.grade.optimal_train_errors,
                "proven": r.grade.proven,
                "gap": r.grade.train_errors - r.grade.optimal_train_errors,
            }
            for r in rows
        ]
    )
    if df.empty:
        return df
    return df.sort_values(["held-out errors", "train errors", "splits"], kind="stable").reset_index(
        drop=True
    )


__all__ = [
    "MAX_DEPTH",
    "Grade",
    "ScoreRow",
    "SplitPreview",
    "UserTree",
    "errors",
    "gains_at",
    "grade",
    "leaf_counts",
    "midpoints",
    "optimal_tree",
    "predict",
    "preorder",
    "preview",
    "score_table",
    "snap",
    "to_tree_arrays",
]
