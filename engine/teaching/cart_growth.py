"""CART's step-through growth (:func:`cart_steps`, re-exported by
:mod:`engine.teaching.growth`): depth-first, every midpoint of every feature scanned with
exact numpy code that orders candidates by the same floating-point proxy as the numba
builder, so the chosen split equals :class:`engine.cart.CARTClassifier` /
:class:`~engine.cart.CARTRegressor` (tests/test_learn_growth.py checks it)."""

from __future__ import annotations

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
from engine.teaching.growth_records import (
    CART_CRITERIA,
    FeatureScan,
    Growth,
    GrowthData,
    GrowthStep,
    partial_tree,
)
from engine.tree import TREE_LEAF, TREE_UNDEFINED, TreeArrays


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


def _best_split(X, y, order, mask, is_cat, stats, classification, n_classes, min_leaf, crit):
    """Scan every feature at the node of rows ``mask``: its :class:`FeatureScan` list (in
    column order) and the best split ``(proxy, feature, position, threshold, decrease, left
    set)`` (feature -1 when no threshold is admissible)."""
    scans = []
    # proxy, feature, position, threshold, decrease, left set (categorical)
    best = (-np.inf, -1, -1, np.nan, np.nan, None)
    for f in range(X.shape[1]):
        ord_f = order[f][mask[order[f]]]
        xs_f = X[ord_f, f]
        if xs_f[0] == xs_f[-1]:
            scans.append(FeatureScan(f, np.empty(0), np.empty(0), -1, () if is_cat[f] else None))
            continue
        if is_cat[f]:
            sets, proxy, decrease = _scan_categorical(
                xs_f, y[ord_f], stats, classification, n_classes, min_leaf, crit
            )
            i = int(np.argmax(proxy)) if proxy.size else -1
            scans.append(FeatureScan(f, np.full(len(sets), np.nan), decrease, i, tuple(sets)))
            if i >= 0 and proxy[i] > best[0]:
                best = (proxy[i], f, -1, np.nan, float(decrease[i]), sets[i])
            continue
        if classification and crit == ENTROPY:
            pos, thr, proxy, decrease = _scan_entropy(xs_f, y[ord_f], stats, n_classes, min_leaf)
        else:
            pos, thr, proxy, decrease = _scan(
                xs_f, y[ord_f], stats, classification, n_classes, min_leaf
            )
        i = int(np.argmax(proxy)) if pos.size else -1
        scans.append(FeatureScan(f, thr, decrease, i))
        if i >= 0 and proxy[i] > best[0]:
            best = (proxy[i], f, int(pos[i]), float(thr[i]), float(decrease[i]), None)
    return scans, best


def _grow_records(data: GrowthData, max_depth: int, min_leaf: int, crit: int):
    """CART's depth-first growth on ``data``: the nodes (dicts: statistics, impurity, rows,
    depth, split, children) and one record per node where a split was searched (its scans,
    then ``phase`` 'split' with the split or 'leaf' with the reason)."""
    is_cat = np.zeros(data.X.shape[1], bool) if data.is_categorical is None else data.is_categorical
    classification = data.task == "classification"
    K = max(data.n_classes, 1)
    X, y = data.X, data.y
    n = X.shape[0]
    order, _ = presort(X)
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
        scans, best = _best_split(
            X, y, order, mask, is_cat, stats, classification, K, min_leaf, crit
        )
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
    return nodes, records


def _split_reason(rec: dict, data: GrowthData, crit: int) -> str:
    """Why the split of record ``rec`` was chosen, in words (its rule, the candidates it beat,
    the impurity decrease)."""
    names = data.feature_names
    s = next(sc for sc in rec["scans"] if sc.feature == rec["feature"])
    if rec["left_set"] is not None:
        labels = None if data.categories is None else data.categories[rec["feature"]]
        rule = f"{names[rec['feature']]} in {{{category_list(rec['left_set'], labels)}}}"
    else:
        rule = f"{names[rec['feature']]} <= {rec['threshold']:.4g}"
    impurity_name = (
        ("Gini impurity" if crit == GINI else "entropy")
        if data.task == "classification"
        else "squared error"
    )
    return (
        f"Best of {sum(sc.thresholds.size for sc in rec['scans'])} candidate "
        f"splits on {sum(sc.best >= 0 for sc in rec['scans'])} features: "
        f"{rule} lowers the {impurity_name} by "
        f"{rec['decrease']:.4g} (the best on this feature, of {s.thresholds.size})."
    )


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
    min_leaf = max(int(min_samples_leaf), 1)
    nodes, records = _grow_records(data, max_depth, min_leaf, crit)
    final = _cart_tree(nodes, data, data.task == "classification", class_names)
    steps = []
    done: list[int] = []
    for k, rec in enumerate(records):
        v = rec["node"]
        if rec["phase"] == "split":
            done.append(v)
            reason = _split_reason(rec, data, crit)
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
        data.feature_names,
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
