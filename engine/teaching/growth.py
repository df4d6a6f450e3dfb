"""Step-through growth (the Learn page "Watch a tree grow"): how CART, the conditional
inference tree and the Partition Tree build a tree, one node at a time.

Every ``*_steps`` function returns a :class:`Growth`: a list of :class:`GrowthStep` records
computed at once (the page bounds the rows and the depth or leaves, so this is instant) and
the final tree.  Each step says which node is examined, what was scanned or tested there,
what was chosen and why, and carries the tree as it stands after the step
(:class:`engine.tree.TreeArrays`, node ids renumbered in pre-order; ``tree_node`` is the
examined node's id in it).

* :func:`cart_steps` -- depth-first CART (pre-order, left child first), every midpoint of
  every feature scanned with exact numpy code that orders candidates by the same
  floating-point proxy as the numba builder (:mod:`engine.criteria`, the builder's row
  orders from :func:`engine.cart.builder.presort`), so the chosen split equals
  :class:`engine.cart.CARTClassifier` / :class:`~engine.cart.CARTRegressor` with the same
  ``max_depth`` and ``min_samples_leaf`` (exhaustive splitter, Gini / squared error),
  ties included (tests/test_growth.py checks it).
* :func:`cit_steps` -- the fitted :class:`engine.cit.ConditionalInferenceTreeClassifier` /
  ``Regressor``'s own node records, in its growth order: stage A's tests at a node, then
  stage B's cut points on the chosen feature and the split (two steps), or the leaf.
* :func:`partition_steps` -- the Partition Tree's best-first growth
  (:meth:`fit_steps` with its ``frontier``): which leaf splits next, its gain against the
  other leaves' best gains, an X or a Y split.

:func:`prepare` bounds the rows (a seeded subsample of at most :data:`MAX_ROWS`) and keeps
the continuous features, saying what it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.cart.builder import presort
from engine.criteria import (
    ENTROPY,
    EPSILON,
    GINI,
    class_children_proxy,
    class_impurity,
    squared_error,
    squared_error_proxy,
)
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


# ---------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# CART
# ---------------------------------------------------------------------------------------


def _midpoints(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The builder's threshold between ``a < b``: ``a/2 + b/2``, or ``a`` when that rounds
    to ``b`` or an infinity (engine.cart._candidate_kernels.midpoint)."""
    t = a / 2.0 + b / 2.0
    return np.where((t >= b) | np.isinf(t), a, t)


def _node_statistics(y_rows: np.ndarray, classification: bool, n_classes: int) -> np.ndarray:
    """Class counts (float64 K) or ``(W, S, Q)`` summed in the given row order, as the
    builder sums them (unit weights)."""
    if classification:
        return np.bincount(y_rows, minlength=n_classes).astype(np.float64)
    if y_rows.size == 0:
        return np.zeros(3)
    return np.array(
        [float(y_rows.size), np.cumsum(y_rows)[-1], np.cumsum(y_rows * y_rows)[-1]],
        dtype=np.float64,
    )


def _impurity(stats: np.ndarray, classification: bool, criterion: int = GINI) -> float:
    if classification:
        return float(class_impurity(stats, stats.sum(), criterion))
    return float(squared_error(stats[0], stats[1], stats[2]))


def _scan_entropy(xs_f, y_f, stats, n_classes, min_leaf):
    """:func:`_scan` for the entropy criterion: the builder's proxy
    (:func:`engine.criteria.class_children_proxy`) at every admissible position, in its
    floating-point arithmetic."""
    n = xs_f.size
    p = np.arange(1, n)
    ok = (p >= min_leaf) & (p <= n - min_leaf) & (xs_f[1:] > xs_f[:-1])
    pos = p[ok]
    onehot = np.zeros((n, n_classes))
    onehot[np.arange(n), y_f] = 1.0
    lefts = np.cumsum(onehot, axis=0)
    w_node = float(n)
    parent = _impurity(stats, True, ENTROPY)
    proxy = np.empty(pos.size)
    decrease = np.empty(pos.size)
    for i, q in enumerate(pos):
        left = np.ascontiguousarray(lefts[q - 1])
        w_left = float(q)
        proxy[i] = class_children_proxy(left, w_left, stats, w_node, ENTROPY)
        imp_left = class_impurity(left, w_left, ENTROPY)
        imp_right = class_impurity(stats - left, w_node - w_left, ENTROPY)
        decrease[i] = (
            parent - ((w_node - w_left) / w_node) * imp_right - (w_left / w_node) * imp_left
        )
    return pos, _midpoints(xs_f[pos - 1], xs_f[pos]), proxy, decrease


def _scan_categorical(codes, y_f, stats, classification, n_classes, min_leaf, criterion):
    """Every candidate left set of a categorical feature at a node, as the builder scans
    them (engine.cart._split_kernels._scan_categorical without missing values): the
    present categories sorted (stably) by the class-1 share (binary), the mean target
    (regression) or each class's share in turn (multiclass), every proper prefix a
    candidate.  Returns ``(left_sets, proxies, decreases)`` in scan order."""
    n = codes.size
    n_cat = int(codes.max()) + 1
    width = n_classes if classification else 3
    cat_stats = np.zeros((n_cat, width))
    cat_n = np.zeros(n_cat, dtype=np.int64)
    for c, yy in zip(codes.astype(np.int64).tolist(), y_f.tolist(), strict=True):
        cat_n[c] += 1
        if classification:
            cat_stats[c, yy] += 1.0
        else:  # summed in the node's row order of this feature, as the builder sums
            cat_stats[c, 0] += 1.0
            cat_stats[c, 1] += yy
            cat_stats[c, 2] += yy * yy
    present = np.flatnonzero(cat_n > 0)
    w_node = float(n)
    parent = _impurity(stats, classification, criterion)
    lo = max(min_leaf, 1)
    orders = range(n_classes) if classification and n_classes > 2 else [None]
    sets, proxies, decreases = [], [], []
    for o in orders:
        if classification:
            cls = 1 if n_classes == 2 else o
            if n_classes > 2 and stats[cls] <= 0.0:
                continue
            keys = cat_stats[present, cls] / cat_n[present]
        else:
            keys = cat_stats[present, 1] / cat_n[present]
        perm = np.argsort(keys, kind="stable")
        left = np.zeros(width)
        s_left = 0.0
        n_left = 0
        for j in range(present.size - 1):
            c = present[perm[j]]
            n_left += int(cat_n[c])
            if classification:
                left = left + cat_stats[c]
            else:
                s_left += cat_stats[c, 1]
            if n_left < lo or n - n_left < lo:
                continue
            w_left = float(n_left)
            if classification:
                proxy = class_children_proxy(left, w_left, stats, w_node, criterion)
                imp_left = class_impurity(left, w_left, criterion)
                imp_right = class_impurity(stats - left, w_node - w_left, criterion)
            else:
                proxy = squared_error_proxy(s_left, w_left, stats[1], w_node)
                chosen = np.isin(codes, present[perm[: j + 1]])
                imp_left = float(np.var(y_f[chosen]))
                imp_right = float(np.var(y_f[~chosen]))
            sets.append(tuple(sorted(int(k) for k in present[perm[: j + 1]])))
            proxies.append(float(proxy))
            decreases.append(
                parent - ((w_node - w_left) / w_node) * imp_right - (w_left / w_node) * imp_left
            )
    return sets, np.array(proxies, dtype=np.float64), np.array(decreases, dtype=np.float64)


def _scan(xs_f, y_f, stats, classification, n_classes, min_leaf):
    """Positions, thresholds, proxies and decreases of every admissible split of one
    sorted feature segment (the builder's exhaustive scan, Gini or squared error)."""
    n = xs_f.size
    p = np.arange(1, n)
    ok = (p >= min_leaf) & (p <= n - min_leaf) & (xs_f[1:] > xs_f[:-1])
    pos = p[ok]
    w_node = float(n)
    w_left = pos.astype(np.float64)
    w_right = w_node - w_left
    parent = _impurity(stats, classification)
    if classification:
        onehot = np.zeros((n, n_classes))
        onehot[np.arange(n), y_f] = 1.0
        left = np.cumsum(onehot, axis=0)[pos - 1]
        right = stats[None, :] - left
        sq_left = np.zeros(pos.size)
        sq_right = np.zeros(pos.size)
        for k in range(n_classes):
            sq_left = sq_left + left[:, k] * left[:, k]
            sq_right = sq_right + right[:, k] * right[:, k]
        g_left = 1.0 - sq_left / (w_left * w_left)
        g_right = 1.0 - sq_right / (w_right * w_right)
        proxy = -w_right * g_right - w_left * g_left
        imp_left, imp_right = g_left, g_right
    else:
        s_cum = np.cumsum(y_f)[pos - 1]
        q_cum = np.cumsum(y_f * y_f)[pos - 1]
        s_right = stats[1] - s_cum
        proxy = s_cum * s_cum / w_left + s_right * s_right / (w_node - w_left)
        imp_left = q_cum / w_left - (s_cum / w_left) ** 2
        imp_right = (stats[2] - q_cum) / w_right - (s_right / w_right) ** 2
    decrease = parent - (w_right / w_node) * imp_right - (w_left / w_node) * imp_left
    thresholds = _midpoints(xs_f[pos - 1], xs_f[pos])
    return pos, thresholds, proxy, decrease


def cart_steps(
    data: GrowthData,
    *,
    max_depth: int = 3,
    min_samples_leaf: int = 1,
    class_names=None,
    criterion: str = "gini",
) -> Growth:
    """CART's depth-first growth on ``data``, one step per node where a split is searched.

    Each split step's ``details``: ``scans`` (one :class:`FeatureScan` per feature, in
    column order), ``decrease`` (the chosen split's impurity decrease at the node) and
    ``improvement`` (weighted by the node's share of the rows, scikit-learn's
    ``impurity_improvement``), ``counts`` (classification) or ``mean``.  Nodes that are
    leaves before any search (depth ``max_depth``, too few rows, pure) get no step;
    ``reason`` of a leaf step says why no split was made.  Criterion: ``criterion``
    (``'gini'`` or ``'entropy'``, classification) or squared error (regression);
    exhaustive thresholds; a categorical feature (``data.is_categorical``) is split into
    two sets of categories as :class:`engine.cart.CARTClassifier` does.

    Raises
    ------
    ValueError
        For a criterion other than ``'gini'`` or ``'entropy'``.
    """
    if criterion not in CART_CRITERIA:
        raise ValueError(f"criterion must be 'gini' or 'entropy', got {criterion!r}")
    crit = CART_CRITERIA[criterion]
    is_cat = np.zeros(data.X.shape[1], bool) if data.is_categorical is None else data.is_categorical
    classification = data.task == "classification"
    K = max(data.n_classes, 1)
    X, y = data.X, data.y
    n, p = X.shape
    order, _ = presort(X)
    min_leaf = max(int(min_samples_leaf), 1)
    min_split = max(2, 2 * min_leaf)
    nodes: list[dict] = []
    records: list[dict] = []
    w_root = float(n)
    # stack of (row mask, depth, parent id, is_left)
    stack = [(np.ones(n, dtype=bool), 0, -1, False)]
    while stack:
        mask, depth, parent, is_left = stack.pop()
        node_id = len(nodes)
        ord0 = order[0][mask[order[0]]]
        stats = _node_statistics(y[ord0], classification, K)
        impurity = _impurity(stats, classification, crit)
        nn = int(mask.sum())
        nodes.append(
            dict(
                stats=stats,
                impurity=impurity,
                n=nn,
                depth=depth,
                feature=TREE_UNDEFINED,
                threshold=float(TREE_UNDEFINED),
                left=TREE_LEAF,
                right=TREE_LEAF,
                left_set=None,
            )
        )
        if parent >= 0:
            nodes[parent]["left" if is_left else "right"] = node_id
        if depth >= max_depth or nn < min_split or impurity <= EPSILON:
            continue
        scans = []
        # proxy, feature, position, threshold, decrease, left set (categorical)
        best = (-np.inf, -1, -1, np.nan, np.nan, None)
        for f in range(p):
            ord_f = order[f][mask[order[f]]]
            xs_f = X[ord_f, f]
            if xs_f[0] == xs_f[-1]:
                scans.append(
                    FeatureScan(f, np.empty(0), np.empty(0), -1, () if is_cat[f] else None)
                )
                continue
            if is_cat[f]:
                sets, proxy, decrease = _scan_categorical(
                    xs_f, y[ord_f], stats, classification, K, min_leaf, crit
                )
                i = int(np.argmax(proxy)) if proxy.size else -1
                scans.append(FeatureScan(f, np.full(len(sets), np.nan), decrease, i, tuple(sets)))
                if i >= 0 and proxy[i] > best[0]:
                    best = (proxy[i], f, -1, np.nan, float(decrease[i]), sets[i])
                continue
            if classification and crit == ENTROPY:
                pos, thr, proxy, decrease = _scan_entropy(xs_f, y[ord_f], stats, K, min_leaf)
            else:
                pos, thr, proxy, decrease = _scan(
                    xs_f, y[ord_f], stats, classification, K, min_leaf
                )
            i = int(np.argmax(proxy)) if pos.size else -1
            scans.append(FeatureScan(f, thr, decrease, i))
            if i >= 0 and proxy[i] > best[0]:
                best = (proxy[i], f, int(pos[i]), float(thr[i]), float(decrease[i]), None)
        record = dict(node=node_id, depth=depth, n=nn, scans=scans)
        records.append(record)
        _, f, pos, thr, decrease, left_set = best
        if f < 0:
            record.update(phase="leaf", reason="No admissible threshold (min_samples_leaf).")
            continue
        if left_set is not None:
            goes_left = mask & np.isin(X[:, f], np.asarray(left_set, dtype=np.float64))
        else:
            goes_left = mask & (X[:, f] <= thr)
        goes_right = mask & ~goes_left
        left_stats = _node_statistics(y[order[0][goes_left[order[0]]]], classification, K)
        right_stats = _node_statistics(y[order[0][goes_right[order[0]]]], classification, K)
        wl, wr = float(goes_left.sum()), float(goes_right.sum())
        w_node = float(nn)
        imp_l = _impurity(left_stats, classification, crit)
        imp_r = _impurity(right_stats, classification, crit)
        improvement = (w_node / w_root) * (impurity - (wr / w_node) * imp_r - (wl / w_node) * imp_l)
        if improvement + EPSILON < 0.0:
            record.update(phase="leaf", reason="The best split does not lower the impurity.")
            continue
        nodes[node_id].update(feature=f, threshold=thr, left_set=left_set)
        record.update(phase="split", feature=f, threshold=thr, decrease=decrease, left_set=left_set)
        record["improvement"] = improvement
        stack.append((goes_right, depth + 1, node_id, False))
        stack.append((goes_left, depth + 1, node_id, True))
    final = _cart_tree(nodes, data, classification, class_names)
    steps = []
    done: list[int] = []
    names = data.feature_names
    for k, rec in enumerate(records):
        v = rec["node"]
        if rec["phase"] == "split":
            done.append(v)
            s = next(sc for sc in rec["scans"] if sc.feature == rec["feature"])
            if rec["left_set"] is not None:
                labels = None if data.categories is None else data.categories[rec["feature"]]
                rule = f"{names[rec['feature']]} in {{{category_list(rec['left_set'], labels)}}}"
            else:
                rule = f"{names[rec['feature']]} <= {rec['threshold']:.4g}"
            impurity_name = (
                ("Gini impurity" if crit == GINI else "entropy")
                if classification
                else "squared error"
            )
            reason = (
                f"Best of {sum(sc.thresholds.size for sc in rec['scans'])} candidate "
                f"splits on {sum(sc.best >= 0 for sc in rec['scans'])} features: "
                f"{rule} lowers the {impurity_name} by "
                f"{rec['decrease']:.4g} (the best on this feature, of {s.thresholds.size})."
            )
        else:
            reason = rec["reason"]
        tree, new = partial_tree(final, done)
        steps.append(
            GrowthStep(
                index=k,
                method="CART",
                node=v,
                tree_node=new[v],
                depth=rec["depth"],
                n_samples=rec["n"],
                phase=rec["phase"],
                feature=int(rec.get("feature", -1)),
                threshold=float(rec.get("threshold", np.nan)),
                reason=reason,
                tree=tree,
                details={
                    "scans": rec["scans"],
                    "decrease": rec.get("decrease", np.nan),
                    "improvement": rec.get("improvement", np.nan),
                    "impurity": nodes[v]["impurity"],
                    "stats": nodes[v]["stats"],
                },
            )
        )
    return Growth(
        "CART",
        steps,
        final,
        names,
        data.task,
        {"max_depth": int(max_depth), "min_samples_leaf": min_leaf, "criterion": criterion},
    )


def category_list(codes, labels=None) -> str:
    """Category ``codes`` as a comma-separated list of their ``labels`` (default the codes
    themselves), for a rule ``feature in {...}``."""
    return ", ".join(str(labels[int(c)]) if labels is not None else str(int(c)) for c in codes)


def _cart_tree(nodes, data, classification, class_names) -> TreeArrays:
    cat_offsets = cat_values = None
    if data.is_categorical is not None:  # left category sets in CSR (empty: numeric / leaf)
        sets = [np.asarray(nd["left_set"] or (), dtype=np.int64) for nd in nodes]
        cat_offsets = np.r_[0, np.cumsum([a.size for a in sets])].astype(np.int64)
        cat_values = np.concatenate(sets).astype(np.int64)
    stats = np.array([nd["stats"] for nd in nodes])
    if classification:
        value = stats / stats.sum(axis=1, keepdims=True)
        classes = np.asarray(class_names if class_names is not None else np.arange(data.n_classes))
    else:
        value = (stats[:, 1] / stats[:, 0])[:, None]
        classes = None
    return TreeArrays(
        np.array([nd["left"] for nd in nodes], dtype=np.int64),
        np.array([nd["right"] for nd in nodes], dtype=np.int64),
        np.array([nd["feature"] for nd in nodes], dtype=np.int64),
        np.array([nd["threshold"] for nd in nodes], dtype=np.float64),
        np.array([nd["impurity"] for nd in nodes], dtype=np.float64),
        np.array([nd["n"] for nd in nodes], dtype=np.int64),
        np.array([float(nd["n"]) for nd in nodes]),
        value[:, None, :],
        task=data.task,
        n_features=data.X.shape[1],
        classes_=classes,
        feature_names=list(data.feature_names),
        cat_offsets=cat_offsets,
        cat_values=cat_values,
        categories=None
        if data.categories is None or data.is_categorical is None
        else list(data.categories),
    )


# ---------------------------------------------------------------------------------------
# conditional inference tree
# ---------------------------------------------------------------------------------------


def cit_estimator(task: str, *, max_depth: int = 3, alpha: float = 0.05, random_state: int = 0):
    """The conditional inference tree the steps are read from (partykit ctree's procedure,
    the engine's defaults, with ``max_depth`` and ``alpha_selector``)."""
    from engine.cit.tree import (
        ConditionalInferenceTreeClassifier,
        ConditionalInferenceTreeRegressor,
    )

    cls = (
        ConditionalInferenceTreeClassifier
        if task == "classification"
        else ConditionalInferenceTreeRegressor
    )
    return cls(max_depth=int(max_depth), alpha_selector=float(alpha), random_state=random_state)


def cit_steps(
    data: GrowthData, *, max_depth: int = 3, alpha: float = 0.05, class_names=None
) -> Growth:
    """The conditional inference tree's growth, read from the fitted estimator's node
    records in its growth order (pre-order).

    A node where stage A ran gives a ``'tests'`` step (every feature's statistic, p-value
    and adjusted p-value; ``details`` holds the record) followed by a ``'split'`` step
    (stage B's cut points on the chosen feature: ``candidate_thresholds``,
    ``candidate_threshold_statistics``, ``chosen_threshold``), or a single ``'leaf'``
    step when no feature is significant (or no cut point is admissible).  Nodes that are
    leaves before any test (depth, ``min_samples_split`` = 20, ``min_samples_leaf`` = 7,
    pure) get no step.
    """
    est = cit_estimator(data.task, max_depth=max_depth, alpha=alpha)
    est.fit(data.X, data.y if class_names is None else np.asarray(class_names)[data.y])
    final = est.tree_
    final.feature_names = list(data.feature_names)
    names = data.feature_names
    steps: list[GrowthStep] = []
    done: list[int] = []
    depth = final.depth
    for v in range(final.node_count):
        rec = est.node_records_[v]
        if "p_value_method" not in rec:
            continue
        is_split = final.children_left[v] != TREE_LEAF
        p_adj = np.asarray(rec.get("p_values_adjusted", rec["p_values"]), dtype=np.float64)
        feats = rec["features"]
        alpha_level = float(rec["alpha_selector"])
        base = dict(
            method="Conditional inference tree",
            node=v,
            depth=int(depth[v]),
            n_samples=int(final.n_node_samples[v]),
            details={"record": rec, "p_adjusted": p_adj, "alpha": alpha_level},
        )
        finite = np.isfinite(p_adj)
        i_min = int(np.flatnonzero(finite)[np.argmin(p_adj[finite])]) if finite.any() else -1
        smallest = (
            f"the smallest adjusted p-value is {p_adj[i_min]:.3g} ({names[feats[i_min]]})"
            if i_min >= 0
            else "no feature could be tested"
        )
        if not is_split:
            significant = i_min >= 0 and p_adj[i_min] < alpha_level
            reason = (
                f"Leaf: {smallest}, below alpha = {alpha_level:g}, but no cut point leaves "
                "enough rows on both sides."
                if significant
                else f"No significant feature: leaf. {smallest[0].upper()}{smallest[1:]}, "
                f"not below alpha = {alpha_level:g}."
            )
            tree, new = partial_tree(final, done)
            steps.append(
                GrowthStep(
                    index=len(steps),
                    tree_node=new[v],
                    phase="leaf",
                    feature=-1,
                    threshold=float("nan"),
                    reason=reason,
                    tree=tree,
                    **base,
                )
            )
            continue
        f = int(final.feature[v])
        tree, new = partial_tree(final, done)
        steps.append(
            GrowthStep(
                index=len(steps),
                tree_node=new[v],
                phase="tests",
                feature=f,
                threshold=float("nan"),
                reason=(
                    f"Stage A: {len(feats)} independence tests; {smallest}, below alpha = "
                    f"{alpha_level:g}: the node splits on {names[f]}."
                ),
                tree=tree,
                **base,
            )
        )
        done.append(v)
        tree, new = partial_tree(final, done)
        thr = float(final.threshold[v])
        n_cut = len(rec.get("candidate_thresholds", ()))
        steps.append(
            GrowthStep(
                index=len(steps),
                tree_node=new[v],
                phase="split",
                feature=f,
                threshold=thr,
                reason=(
                    f"Stage B: of {n_cut} admissible cut points on {names[f]}, "
                    f"{names[f]} <= {thr:.4g} has the largest two-sample statistic "
                    f"({rec.get('split_statistic_value', float('nan')):.4g}); no test here."
                ),
                tree=tree,
                **base,
            )
        )
    return Growth(
        "Conditional inference tree",
        steps,
        final,
        names,
        data.task,
        {"max_depth": int(max_depth), "alpha_selector": float(alpha)},
    )


# ---------------------------------------------------------------------------------------
# Partition Tree
# ---------------------------------------------------------------------------------------


def partition_estimator(task: str, *, max_leaves: int = 8, random_state: int = 0):
    """The Partition Tree the steps come from (the engine's defaults, ``max_leaves``)."""
    from engine.partition.estimators import PartitionTreeClassifier, PartitionTreeRegressor

    cls = PartitionTreeClassifier if task == "classification" else PartitionTreeRegressor
    return cls(max_leaves=int(max_leaves), random_state=random_state)


def partition_tree_arrays(tree, feature_names, target: str = "y") -> TreeArrays:
    """A Partition Tree (:class:`engine.partition.PartitionTreeArrays`) as a
    :class:`TreeArrays` to draw: a Y split is a split on an extra last column named
    ``target``; a leaf's value is its cell's density ``n_XY / (n_X mu_Y(A_Y))`` (the
    unnormalised conditional density of the cell, 1 / width at the root)."""
    p = len(feature_names)
    kind = tree.kind
    split = kind != 0
    feature = np.where(kind >= 3, p, tree.feature)
    feature = np.where(split, feature, TREE_UNDEFINED).astype(np.int64)
    threshold = np.where(split & ((kind == 1) | (kind == 3)), tree.threshold, 0.0)
    threshold = np.where(split, threshold, float(TREE_UNDEFINED))
    mu = tree.measure()
    with np.errstate(divide="ignore", invalid="ignore"):
        density = np.where(tree.nx > 0, tree.nxy / (tree.nx * mu), 0.0)
    cat_offsets = cat_values = None
    if np.any((kind == 2) | (kind == 4)):
        sets = [
            np.flatnonzero(tree.cat_left[v]).astype(np.int64)
            if kind[v] in (2, 4)
            else np.empty(0, np.int64)
            for v in range(kind.size)
        ]
        cat_offsets = np.r_[0, np.cumsum([a.size for a in sets])].astype(np.int64)
        cat_values = np.concatenate(sets).astype(np.int64)
    return TreeArrays(
        tree.left.astype(np.int64),
        tree.right.astype(np.int64),
        feature,
        threshold.astype(np.float64),
        np.zeros(kind.size),
        tree.nxy.astype(np.int64),
        tree.nxy.astype(np.float64),
        density[:, None, None],
        task="regression",
        n_features=p + 1,
        feature_names=[*feature_names, target],
        cat_offsets=cat_offsets,
        cat_values=cat_values,
    )


def partition_steps(data: GrowthData, *, max_leaves: int = 8, target: str = "y") -> Growth:
    """The Partition Tree's best-first growth, one step per split (the estimator's
    :meth:`fit_steps`): ``details`` holds ``gain`` (the log-loss decrease of the split),
    ``kind`` (``'X split'`` / ``'Y split'``), ``others`` (the other waiting leaves:
    ``(node id in the final tree, best gain, kind word, feature name or target,
    threshold)``, largest gain first) and ``train_nll`` before and after."""
    est = partition_estimator(data.task, max_leaves=max_leaves)
    frontier: list[dict] = []
    trace = [step["train_nll"] for step in est.fit_steps(data.X, data.y, frontier=frontier)]
    pt = est.partition_tree_
    names = list(data.feature_names)
    final = partition_tree_arrays(pt, names, target)
    steps = []
    done: list[int] = []

    def feature_word(kind: int, f: int) -> str:
        return target if kind >= 3 else names[f]

    for k, fr in enumerate(frontier):
        v = int(fr["node"])
        done.append(v)
        tree, new = partial_tree(final, done)
        others = [
            (new[o[0]], o[1], PARTITION_KINDS[o[2]], feature_word(o[2], o[3]), o[4])
            for o in fr["others"]
        ]
        word = PARTITION_KINDS[fr["kind"]]
        rule = f"{feature_word(fr['kind'], fr['feature'])}"
        if fr["kind"] in (1, 3):
            rule += f" <= {fr['threshold']:.4g}"
        if others:
            why = (
                f"its best gain {fr['gain']:.4g} is the largest of the {len(others) + 1} "
                f"leaves waiting (next: {others[0][1]:.4g})"
            )
        else:
            why = f"it is the only leaf with an admissible split (gain {fr['gain']:.4g})"
        steps.append(
            GrowthStep(
                index=k,
                method="Partition Tree",
                node=v,
                tree_node=new[v],
                depth=int(pt.depth[v]),
                n_samples=int(pt.nxy[v]),
                phase="split",
                feature=int(fr["feature"]) if fr["kind"] in (1, 2) else -1,
                threshold=float(fr["threshold"]),
                reason=f"This leaf splits next ({word}: {rule}) because {why}.",
                tree=tree,
                details={
                    "gain": fr["gain"],
                    "kind": word,
                    "rule": rule,
                    "others": others,
                    "train_nll": (trace[k], trace[k + 1]),
                },
            )
        )
    return Growth(
        "Partition Tree", steps, final, data.feature_names, data.task, {"max_leaves": max_leaves}
    )


def grow(
    method: str,
    data: GrowthData,
    *,
    cap: int,
    class_names=None,
    target: str = "y",
    criterion: str = "gini",
):
    """The steps of ``method`` (one of :data:`METHODS`) with its size cap (depth for CART
    and the conditional inference tree, leaves for the Partition Tree); ``criterion``
    is CART's (``'gini'`` or ``'entropy'``, classification).

    Raises
    ------
    ValueError
        For an unknown method.
    """
    if method == "CART":
        return cart_steps(data, max_depth=cap, class_names=class_names, criterion=criterion)
    if method == "Conditional inference tree":
        return cit_steps(data, max_depth=cap, class_names=class_names)
    if method == "Partition Tree":
        return partition_steps(data, max_leaves=cap, target=target)
    raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
