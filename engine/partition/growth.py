"""Best-first growth of one Partition Tree and the routing used for prediction.

Each node keeps three index sets: XY (x in A_X and y in A_Y), X (x in A_X) and Y (y in A_Y).
An X split partitions XY and X (Y inherited); a Y split partitions XY and Y (X inherited by
both children). Leaves are pushed on a max-heap keyed by their best split's gain.

Node kinds: 0 leaf, 1 continuous X split (``x <= threshold`` goes left), 2 categorical X split
(codes in ``cat_left`` go left, unseen codes right), 3 continuous Y split (``y <= threshold``
left), 4 categorical Y split (classes in ``cat_left`` go left).

Missing values (NaN in X) are routed by ``missing_left`` at every X split, learnt as CART
learns it (:mod:`engine.cart`): a continuous split scores the NaN rows on each side
(:func:`engine.partition.scans._scan_sorted_x`), a categorical split treats "missing" as
one more category (its side is part of the best subset); a split whose feature has no NaN
at the node sends NaN met later to the child with more X rows.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from engine.partition.scans import (
    best_x_continuous,
    best_x_presorted,
    category_counts,
    presort_rows,
    scan_categorical,
    scan_continuous,
    sorted_with_flags,
)

#: Largest ``continuous features x rows`` kept presorted per node (int64 entries, 8 bytes
#: each); bigger nodes sort their rows at every search instead.
PRESORT_LIMIT = 20_000_000

LEAF, X_CONT, X_CAT, Y_CONT, Y_CAT = 0, 1, 2, 3, 4


@dataclass
class GrowParams:
    """Stopping rules of the growth (see docs/spec.md section 2, Growth)."""

    max_leaves: int = 32
    max_depth: int | None = None
    min_samples_xy: int = 1
    min_samples_x: int = 1
    min_samples_y: int = 1
    min_volume_fraction: float = 0.0
    max_features: float = 1.0  # fraction of X columns searched per split (redrawn per split)
    # the reference package's rule (box="reference"): Y thresholds on the lattice y_step * i
    # (0: midpoints) and the parent's measure floored at 1 in the Y-split gain
    y_step: float = 0.0
    unit_floor: bool = False


@dataclass
class PartitionTreeArrays:
    """A fitted tree: one entry per node (children ``-1`` at leaves)."""

    kind: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    gain: np.ndarray
    depth: np.ndarray
    nxy: np.ndarray
    nx: np.ndarray
    ylo: np.ndarray  # continuous y: A_Y = [ylo, yhi]
    yhi: np.ndarray
    ymask: np.ndarray | None  # discrete y: (n_nodes, n_classes) bool, A_Y
    missing_left: np.ndarray | None = None  # uint8: NaN goes left at an X split iff 1
    n_missing: np.ndarray | None = None  # int64: NaN X rows an X split routed
    cat_left: list = field(default_factory=list)  # per node: bool mask or None
    discrete_y: bool = False
    n_classes: int = 0
    y_box: tuple[float, float] = (0.0, 1.0)
    n_train: int = 0
    trace: list = field(default_factory=list)  # (n_leaves, train_nll) after each split

    @property
    def n_leaves(self) -> int:
        return int(np.sum(self.kind == LEAF))

    def measure(self) -> np.ndarray:
        """mu_Y(A_Y) per node: width (continuous) or number of classes (discrete)."""
        if self.discrete_y:
            return self.ymask.sum(axis=1).astype(np.float64)
        return self.yhi - self.ylo


class _Node:
    __slots__ = (
        "rows_xy",
        "rows_x",
        "rows_y",
        "ylo",
        "yhi",
        "ymask",
        "depth",
        "id",
        "best",
        "order",
    )

    def __init__(self, rows_xy, rows_x, rows_y, ylo, yhi, ymask, depth, order=None):
        self.rows_xy, self.rows_x, self.rows_y = rows_xy, rows_x, rows_y
        # X rows sorted by every continuous feature (presort_rows), shared by the two
        # children of a Y split (same X set), filtered stably for X-split children
        self.order = order
        self.ylo, self.yhi, self.ymask, self.depth = ylo, yhi, ymask, depth
        self.id = -1
        self.best = None


def _best_split(
    node,
    X,
    y,
    is_cat,
    n_cats,
    discrete_y,
    n_classes,
    in_xy,
    n_total,
    p,
    min_width,
    rng,
    cont_pos=None,
):
    """(gain, kind, feature, threshold, left_mask, missing_left) of the node's best split,
    or None."""
    nxy = float(node.rows_xy.shape[0])
    nx = float(node.rows_x.shape[0])
    if nxy == 0:
        return None
    in_xy[node.rows_xy] = 1.0
    best = None
    n_feat = X.shape[1]
    feats = np.arange(n_feat)
    if p.max_features < 1.0 and n_feat > 0:
        k = max(1, int(round(p.max_features * n_feat)))
        feats = np.sort(rng.choice(n_feat, k, replace=False))
    mx, mxy, my = float(p.min_samples_x), float(p.min_samples_xy), float(p.min_samples_y)
    try:
        cont = feats[~is_cat[feats]]
        if cont.shape[0] and node.order is not None and cont_pos is not None:
            g, f, t, side = best_x_presorted(
                X, node.order, cont_pos[cont], cont, in_xy, nxy, nx, n_total, mxy, mx
            )
            if g > 0:
                best = (g, X_CONT, int(f), float(t), None, int(side))
        elif cont.shape[0]:
            g, f, t, side = best_x_continuous(
                X, node.rows_x, in_xy, cont, nxy, nx, n_total, mxy, mx
            )
            if g > 0:
                best = (g, X_CONT, int(f), float(t), None, int(side))
        for f in feats[is_cat[feats]]:
            col = X[:, f]
            k = int(n_cats[f])
            # "missing" is category k: its side is part of the best subset
            codes = np.where(np.isnan(col), float(k), col) if np.isnan(col).any() else col
            a, b = category_counts(codes, node.rows_xy, node.rows_x, k + 1)
            order = np.empty(k + 1, dtype=np.int64)
            g, nl = scan_categorical(
                a, b, b > 0, False, nxy, nx, 1.0, n_total, mxy, mx, order, b, 0.0
            )
            # ties between features go to the lower index (as a scan in column order)
            if g > 0 and (best is None or g > best[0] or (g == best[0] and f < best[2])):
                mask = np.zeros(k + 1, dtype=bool)
                mask[order[:nl]] = True
                if b[k] > 0:
                    side = int(mask[k])
                else:  # no NaN here: later NaN go to the child with more X rows
                    n_left = b[:k][mask[:k]].sum()
                    side = int(n_left > nx - n_left)
                best = (g, X_CAT, int(f), np.nan, mask[:k], side)
        if discrete_y:
            a, ny_c = category_counts(y, node.rows_xy, node.rows_y, n_classes)
            order = np.empty(n_classes, dtype=np.int64)
            mu = float(node.ymask.sum())
            g, nl = scan_categorical(
                a,
                np.ones(n_classes),
                node.ymask,
                True,
                nxy,
                nx,
                mu,
                n_total,
                mxy,
                mx,
                order,
                ny_c,
                my,
            )
            # A zero-gain Y split is allowed (popped after every positive gain): with
            # balanced classes every root split has gain 0, and only a Y split opens X gains.
            if g >= 0 and (best is None or g > best[0]):
                mask = np.zeros(n_classes, dtype=bool)
                mask[order[:nl]] = True
                best = (g, Y_CAT, -1, np.nan, mask, 0)
        else:
            vs, fs = sorted_with_flags(y, node.rows_y, in_xy)
            out = np.empty(vs.shape[0])
            g, t, _ = scan_continuous(
                vs,
                fs,
                nxy,
                nx,
                node.ylo,
                node.yhi,
                True,
                n_total,
                mxy,
                mx,
                my,
                min_width,
                out,
                float(p.y_step),
                bool(p.unit_floor),
            )
            if g >= 0 and (best is None or g > best[0]):
                best = (g, Y_CONT, -1, float(t), None, 0)
    finally:
        in_xy[node.rows_xy] = 0.0
    return best


def grow_tree(
    X,
    y,
    *,
    is_cat,
    n_cats,
    discrete_y,
    n_classes,
    y_box,
    params: GrowParams,
    rng=None,
    callback=None,
) -> PartitionTreeArrays:
    """Grow one tree best-first on ``X`` (float64, C-contiguous) and ``y``.

    ``y`` holds float64 values (continuous) or class codes ``0..n_classes-1`` as float64
    (discrete). ``y_box`` is the root A_Y for continuous y. ``callback(tree, n_leaves,
    train_nll)`` (optional) is called after each split with the tree so far.
    """
    steps = grow_steps(
        X,
        y,
        is_cat=is_cat,
        n_cats=n_cats,
        discrete_y=discrete_y,
        n_classes=n_classes,
        y_box=y_box,
        params=params,
        rng=rng,
    )
    while True:
        try:
            n_leaves, train_nll, build = next(steps)
        except StopIteration as stop:
            return stop.value
        if callback is not None and n_leaves > 1:
            callback(build(), n_leaves, train_nll)


def grow_steps(
    X,
    y,
    *,
    is_cat,
    n_cats,
    discrete_y,
    n_classes,
    y_box,
    params: GrowParams,
    rng=None,
    frontier: list | None = None,
):
    """:func:`grow_tree` as a generator: one split per step (for live pages).

    Yields ``(n_leaves, train_nll, build)`` once for the root (``n_leaves`` 1) and then
    after each split, where ``build()`` returns the tree as it is at the time of the call
    (a :class:`PartitionTreeArrays`, built only when called); returns the final tree.
    Closing the generator early leaves a valid smaller tree behind the last ``build``.
    ``train_nll`` is the growth objective: the empirical loss of the unnormalised cells.

    ``frontier`` (optional, a list): before each split, one dict is appended saying why
    that leaf splits next (the Learn section's step-through growth): ``node`` (its id),
    ``gain``, ``kind``, ``feature``, ``threshold`` of the split taken, and ``others``: the
    other leaves waiting in the heap, ``(node id, best gain, kind, feature, threshold)``
    each, largest gain first.  Leaves whose search found no admissible split are not in
    the heap.  The growth itself is unchanged.
    """
    rng = rng if rng is not None else np.random.RandomState(0)
    n = X.shape[0]
    n_total = float(n)
    in_xy = np.zeros(n)
    lo, hi = float(y_box[0]), float(y_box[1])
    min_width = params.min_volume_fraction * (hi - lo) if not discrete_y else 0.0
    root, cont_pos = _root_node(X, is_cat, (lo, hi), discrete_y, n_classes)
    goes = np.zeros(n, dtype=bool)
    nodes: list[dict] = []

    def add(node):
        node.id = len(nodes)
        nodes.append(_leaf_record(node))

    def search(node):
        if params.max_depth is not None and node.depth >= params.max_depth:
            return None
        return _best_split(
            node,
            X,
            y,
            is_cat,
            n_cats,
            discrete_y,
            n_classes,
            in_xy,
            n_total,
            params,
            min_width,
            rng,
            cont_pos,
        )

    add(root)
    mu0 = float(n_classes) if discrete_y else hi - lo
    train_nll = float(np.log(mu0))  # root cell: density 1 / mu
    trace = [(1, train_nll)]
    heap = []
    counter = 0
    yield 1, train_nll, lambda: _finish(nodes, discrete_y, n_classes, (lo, hi), n, trace)
    best = search(root)
    if best is not None:
        heapq.heappush(heap, (-best[0], counter, root, best))
    n_leaves = 1
    while heap and n_leaves < params.max_leaves:
        _, _, node, (g, kind, f, t, mask, side) = heapq.heappop(heap)
        if frontier is not None:
            frontier.append(_frontier_entry(node, g, kind, f, t, heap))
        kids, n_miss = _children(node, kind, f, t, mask, side, X, y, goes, (lo, hi))
        rec = nodes[node.id]
        rec.update(
            kind=kind,
            feature=f,
            threshold=t,
            gain=g,
            cat_left=mask,
            missing_left=side,
            n_missing=n_miss,
        )
        for side, kid in zip(("left", "right"), kids, strict=True):
            add(kid)
            rec[side] = kid.id
        node.rows_xy = node.rows_x = node.rows_y = node.order = None  # free memory
        n_leaves += 1
        train_nll -= g
        trace.append((n_leaves, train_nll))
        yield n_leaves, train_nll, lambda: _finish(nodes, discrete_y, n_classes, (lo, hi), n, trace)
        for kid in kids:
            kb = search(kid)
            if kb is not None:
                counter += 1
                heapq.heappush(heap, (-kb[0], counter, kid, kb))
    return _finish(nodes, discrete_y, n_classes, (lo, hi), n, trace)


def _root_node(X, is_cat, y_box, discrete_y, n_classes):
    """The root of :func:`grow_steps` (every row; its continuous features presorted when
    that fits :data:`PRESORT_LIMIT`) and each feature's position among the continuous ones
    (-1 for a categorical feature)."""
    n = X.shape[0]
    rows = np.arange(n, dtype=np.int64)
    cont_all = np.flatnonzero(~np.asarray(is_cat, dtype=bool)).astype(np.int64)
    cont_pos = np.full(X.shape[1], -1, dtype=np.int64)
    cont_pos[cont_all] = np.arange(cont_all.shape[0])
    presort = 0 < cont_all.shape[0] * n <= PRESORT_LIMIT
    root = _Node(
        rows,
        rows,
        rows,
        y_box[0],
        y_box[1],
        np.ones(n_classes, dtype=bool) if discrete_y else None,
        0,
        presort_rows(X, rows, cont_all) if presort else None,
    )
    return root, cont_pos


def _frontier_entry(node, gain, kind, feature, threshold, heap) -> dict:
    """Why ``node`` splits next (:func:`grow_steps`' ``frontier``): the split taken and the
    other leaves waiting in ``heap``, largest gain first."""
    waiting = sorted(heap, key=lambda entry: (entry[0], entry[1]))
    return dict(
        node=node.id,
        gain=float(gain),
        kind=int(kind),
        feature=int(feature),
        threshold=float(threshold),
        others=[
            (e[2].id, float(e[3][0]), int(e[3][1]), int(e[3][2]), float(e[3][3])) for e in waiting
        ],
    )


def _children(node, kind, f, t, mask, side, X, y, goes, y_box) -> tuple[list, int]:
    """The two children of ``node`` split by ``(kind, f, t, mask, side)`` (an X split on
    feature ``f``, or a Y split at ``t`` / by the class ``mask``), and the number of the
    node's X rows missing feature ``f`` (0 for a Y split).  ``goes`` is a scratch bool
    array of length n (all False on entry and on return)."""
    lo, hi = y_box
    n_miss = 0
    if kind == X_CONT or kind == X_CAT:
        go_xy = _x_goes_left(kind, X[node.rows_xy, f], t, mask, side)
        go_x = _x_goes_left(kind, X[node.rows_x, f], t, mask, side)
        n_miss = int(np.isnan(X[node.rows_x, f]).sum())
        orders = (None, None)
        if node.order is not None:  # stable filter of the sorted rows: still sorted
            goes[node.rows_x] = go_x
            left = goes[node.order]
            k = node.order.shape[0]
            orders = (node.order[left].reshape(k, -1), node.order[~left].reshape(k, -1))
            goes[node.rows_x] = False
        kids = [
            _Node(
                node.rows_xy[s_xy],
                node.rows_x[s_x],
                node.rows_y,
                node.ylo,
                node.yhi,
                node.ymask,
                node.depth + 1,
                o,
            )
            for s_xy, s_x, o in ((go_xy, go_x, orders[0]), (~go_xy, ~go_x, orders[1]))
        ]
    else:
        if kind == Y_CONT:
            go_xy, go_y = y[node.rows_xy] <= t, y[node.rows_y] <= t
            bounds = ((node.ylo, t), (t, node.yhi))
            masks = (None, None)
        else:
            go_xy = mask[y[node.rows_xy].astype(np.int64)]
            go_y = mask[y[node.rows_y].astype(np.int64)]
            bounds = ((lo, hi), (lo, hi))
            masks = (node.ymask & mask, node.ymask & ~mask)
        kids = [
            _Node(
                node.rows_xy[s_xy],
                node.rows_x,
                node.rows_y[s_y],
                b[0],
                b[1],
                m,
                node.depth + 1,
                node.order,
            )
            for s_xy, s_y, b, m in (
                (go_xy, go_y, bounds[0], masks[0]),
                (~go_xy, ~go_y, bounds[1], masks[1]),
            )
        ]
    return kids, n_miss


def _leaf_record(node) -> dict:
    """The node table entry of ``node`` as a leaf (a split fills in the rest)."""
    return dict(
        kind=LEAF,
        feature=-1,
        threshold=np.nan,
        left=-1,
        right=-1,
        gain=0.0,
        depth=node.depth,
        nxy=float(node.rows_xy.shape[0]),
        nx=float(node.rows_x.shape[0]),
        ylo=node.ylo,
        yhi=node.yhi,
        ymask=node.ymask,
        cat_left=None,
        missing_left=0,
        n_missing=0,
    )


def _finish(nodes, discrete_y, n_classes, y_box, n, trace) -> PartitionTreeArrays:
    def col(name, dtype):
        return np.array([d[name] for d in nodes], dtype=dtype)

    ymask = np.array([d["ymask"] for d in nodes], dtype=bool) if discrete_y else None
    return PartitionTreeArrays(
        kind=col("kind", np.int64),
        feature=col("feature", np.int64),
        threshold=col("threshold", np.float64),
        left=col("left", np.int64),
        right=col("right", np.int64),
        gain=col("gain", np.float64),
        depth=col("depth", np.int64),
        nxy=col("nxy", np.float64),
        nx=col("nx", np.float64),
        ylo=col("ylo", np.float64),
        yhi=col("yhi", np.float64),
        ymask=ymask,
        missing_left=col("missing_left", np.uint8),
        n_missing=col("n_missing", np.int64),
        cat_left=[d["cat_left"] for d in nodes],
        discrete_y=discrete_y,
        n_classes=n_classes,
        y_box=y_box,
        n_train=n,
        trace=list(trace),
    )


def _x_goes_left(kind, xcol, threshold, mask, missing_left):
    """bool per value of an X split: ``x <= threshold`` (continuous) or the code in
    ``mask`` (categorical; unseen codes right); NaN left iff ``missing_left``."""
    nan = np.isnan(xcol)
    if kind == X_CONT:
        out = xcol <= threshold
    else:
        codes = np.where(nan, -1, xcol).astype(np.int64)
        inside = (codes >= 0) & (codes < mask.shape[0])
        out = np.zeros(xcol.shape[0], dtype=bool)
        out[inside] = mask[codes[inside]]
    if missing_left:
        out |= nan
    return out


def _go_left_x(tree, node, xcol):
    side = 0 if tree.missing_left is None else int(tree.missing_left[node])
    return _x_goes_left(tree.kind[node], xcol, tree.threshold[node], tree.cat_left[node], side)


def slice_leaves(tree: PartitionTreeArrays, X: np.ndarray):
    """Yield ``(leaf, rows)``: the leaves matched by each row of ``X`` (both ways at Y splits)."""
    stack = [(0, np.arange(X.shape[0]))]
    while stack:
        node, rows = stack.pop()
        if rows.shape[0] == 0:
            continue
        k = tree.kind[node]
        if k == LEAF:
            yield node, rows
        elif k in (Y_CONT, Y_CAT):
            stack.append((tree.left[node], rows))
            stack.append((tree.right[node], rows))
        else:
            go = _go_left_x(tree, node, X[rows, tree.feature[node]])
            stack.append((tree.left[node], rows[go]))
            stack.append((tree.right[node], rows[~go]))


def leaf_of(tree: PartitionTreeArrays, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Leaf of each (x, y) row (y must be inside the box; classes as codes)."""
    out = np.full(X.shape[0], -1, dtype=np.int64)
    stack = [(0, np.arange(X.shape[0]))]
    while stack:
        node, rows = stack.pop()
        if rows.shape[0] == 0:
            continue
        k = tree.kind[node]
        if k == LEAF:
            out[rows] = node
            continue
        if k == Y_CONT:
            go = y[rows] <= tree.threshold[node]
        elif k == Y_CAT:
            go = tree.cat_left[node][y[rows].astype(np.int64)]
        else:
            go = _go_left_x(tree, node, X[rows, tree.feature[node]])
        stack.append((tree.left[node], rows[go]))
        stack.append((tree.right[node], rows[~go]))
    return out
