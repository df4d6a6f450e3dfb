"""Greedy shape tree in Literati's candidate space (docs/spec.md section 1's baseline; ShapeCART-like).

:func:`greedy_shape_tree` grows a tree top-down from one data state (its sample ids, the
levels left ``d`` and its depth from the root): at every node the candidate breakpoints are
those the AO* search computes for the same state (:func:`engine.literati._kernels.
state_candidates` with ``B`` of the node's depth from the root), and the split is the shape
function of least weighted gini impurity of its two children over every feature and every
subset of ``K <= K_max`` candidates (:func:`engine.literati._greedy_kernels.best_shape`;
ties: lowest feature, fewest breakpoints, lexicographic).  Growth stops at depth 0, a pure
node, a single sample, or (pruned trees) a node whose leaf error is at most ``lambda +
alpha`` (no split can beat that leaf).  The tree is then pruned bottom-up by the regularised
objective: a subtree is replaced by a leaf when the leaf is not worse::

    value(v) = min(Err(v), lambda + alpha K_v + value(left) + value(right))

Because every node's shape is built from that node's own candidates, the tree lies in the
search's space, so its objective is an upper bound of the search's optimum (used to seed
the incumbents of :class:`engine.literati.search.AOStarSearch`).

The public estimator is :class:`engine.literati.GreedyShapeTreeClassifier`.
"""

from __future__ import annotations

import time

import numpy as np

from engine.literati import _greedy_kernels as greedy_kernels
from engine.literati import _kernels as kernels

#: A node with more shapes than this (all midpoints, K_max >= 2, many rows) is split with
#: fewer breakpoints (the largest K whose shape count fits; at least 1), so one node never
#: costs more than about this many shape evaluations.
MAX_SHAPES = 1_000_000
_EPS = 1e-9


class GreedyTree:
    """A greedy shape tree in depth-first preorder (node 0 = root).

    Attributes (lists of length ``n_nodes``): ``feature`` (int, -2 for a leaf), ``bps``
    (float64 sorted breakpoints or None), ``children`` ((left, right) ids or None), ``err``
    (misclassified samples of the node as a leaf), ``n`` (samples); ``objective`` (float,
    ``sum of leaf errors + lambda * splits + alpha * breakpoints``), ``complete`` (False when
    the deadline stopped the growth: the unfinished nodes are leaves, the tree is still
    valid).
    """

    __slots__ = ("feature", "bps", "children", "err", "n", "objective", "complete")

    def __init__(self):
        self.feature: list[int] = []
        self.bps: list = []
        self.children: list = []
        self.err: list[float] = []
        self.n: list[int] = []
        self.objective = 0.0
        self.complete = True

    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    def nodes(self, X: np.ndarray, idx: np.ndarray, first: int = 0, out: list | None = None):
        """The tree as node dicts (``idx``, ``feature``, ``bps``, ``children``, ``lb``,
        ``ub``; the format of :meth:`AOStarSearch.extract`) appended to ``out``, samples
        routed from ``idx`` (int64 ids into ``X``, float64 ``(n, p)``) by the shape rule;
        node ids are offset by ``len(out)``.  Returns ``out``."""
        out = [] if out is None else out

        def walk(i, ids):
            me = len(out)
            if self.children[i] is None:
                out.append(
                    {
                        "idx": ids,
                        "feature": -2,
                        "bps": None,
                        "children": None,
                        "lb": None,
                        "ub": None,
                    }
                )
                return me
            j = self.feature[i]
            u = self.bps[i]
            out.append(
                {
                    "idx": ids,
                    "feature": int(j),
                    "bps": np.asarray(u, float),
                    "children": None,
                    "lb": None,
                    "ub": None,
                }
            )
            left = kernels.shape_route_kernel(np.ascontiguousarray(X[ids, j]), u)
            a = walk(self.children[i][0], ids[left])
            b = walk(self.children[i][1], ids[~left])
            out[me]["children"] = (a, b)
            return me

        walk(first, idx)
        return out


def greedy_shape_tree(
    XT,
    y,
    n_classes,
    idx,
    d,
    depth,
    leaves_per_depth,
    max_breakpoints,
    lam,
    alpha,
    prune=True,
    deadline=float("inf"),
    orders=None,
    max_shapes=MAX_SHAPES,
) -> GreedyTree:
    """Greedy shape tree of the data state ``(idx, d)`` at ``depth`` levels below the root.

    Parameters: ``XT`` float64 C-contiguous ``(p, n)`` (transposed features), ``y`` int64
    ``(n,)`` codes in ``[0, n_classes)``, ``idx`` int64 sorted sample ids, ``d >= 0`` levels
    left, ``depth >= 0`` depth from the root (selects ``B = leaves_per_depth[min(depth,
    len - 1)]``, 0 = all midpoints), ``max_breakpoints`` K_max >= 1, ``lam``/``alpha``
    >= 0 (misclassification units), ``prune`` (False: grow until depth 0 / pure / one sample
    and keep every split, like scikit-learn's CART), ``deadline`` (``time.perf_counter()``
    value; checked before every node: once passed, the remaining nodes become leaves),
    ``orders`` optional int64 ``(p, m)`` sorted orders of ``idx`` (as
    :func:`engine.literati._kernels.sort_orders`), ``max_shapes`` see :data:`MAX_SHAPES`.

    Returns a :class:`GreedyTree` whose ``objective`` is computed as
    :meth:`AOStarSearch.extract` recomputes a tree (leaf errors plus, node by node in
    preorder, ``lambda + alpha K``).
    """
    C = int(n_classes)
    lam = float(lam)
    alpha = float(alpha)
    lr = lam + alpha
    leaves = list(leaves_per_depth)
    n_all = XT.shape[1]
    side = np.zeros(n_all, dtype=np.bool_)
    tree = GreedyTree()
    o0 = (
        kernels.sort_orders(XT, np.ascontiguousarray(idx, dtype=np.int64))
        if orders is None
        else orders
    )

    def grow(o, dd, dep):
        m = o.shape[1]
        cnt = kernels.class_counts(y, o[0], C) if m else np.zeros(C, dtype=np.int64)
        err = float(m - cnt.max()) if m else 0.0
        me = len(tree.feature)
        tree.feature.append(-2)
        tree.bps.append(None)
        tree.children.append(None)
        tree.err.append(err)
        tree.n.append(m)
        if dd <= 0 or err <= 0 or m < 2 or (prune and err <= lr + _EPS):
            return err
        if time.perf_counter() >= deadline:
            tree.complete = False
            return err
        B = leaves[min(dep, len(leaves) - 1)]
        off, vals, bc = kernels.state_candidates(XT, y, o, C, B)
        j, kk, comb, _ = greedy_kernels.best_shape(
            off, bc, C, int(max_breakpoints), float(max_shapes)
        )
        if j < 0:
            return err
        u = np.ascontiguousarray(vals[off[j] + comb[:kk]])
        nl = kernels.route_left(XT, o[0], j, u, side)
        ol, orr = kernels.split_orders(o, side, nl)
        del o  # the parent's orders are not needed below
        tree.feature[me] = int(j)
        tree.bps[me] = u
        a = len(tree.feature)
        va = grow(ol, dd - 1, dep + 1)
        del ol
        b = len(tree.feature)
        vb = grow(orr, dd - 1, dep + 1)
        tree.children[me] = (a, b)
        v = lam + alpha * kk + va + vb
        if prune and err <= v + _EPS:
            # the leaf is not worse: drop the subtree (its nodes are the tail in preorder)
            del tree.feature[me + 1 :], tree.bps[me + 1 :], tree.children[me + 1 :]
            del tree.err[me + 1 :], tree.n[me + 1 :]
            tree.feature[me] = -2
            tree.bps[me] = None
            tree.children[me] = None
            return err
        return v

    grow(o0, int(d), int(depth))
    err = 0.0
    cost = 0.0
    for i in range(tree.n_nodes):
        if tree.children[i] is None:
            err += tree.err[i]
        else:
            cost += lam + alpha * len(tree.bps[i])
    tree.objective = float(err + cost)
    return tree
