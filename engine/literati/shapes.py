"""Shape functions of Literati's trees: breakpoints, routing, intervals (docs/spec.md section 1).

A node with sorted breakpoints ``u_1 < ... < u_K`` sends a value ``x_j`` **left when the
number of breakpoints strictly below** ``x_j`` **is even**
(``searchsorted(u, x_j, side='left') % 2 == 0``), so ``x_j <= u_1`` goes left,
``u_1 < x_j <= u_2`` right, and so on; ``K = 1`` is the plain threshold split.  These
functions compute what the page and the figures show (routed rows, intervals); the figures
in :mod:`engine.figures.literati` only draw them.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from engine.tree import TREE_LEAF, TreeArrays

#: Features with at most this many distinct values at a node get one histogram bar per value.
DISCRETE_MAX = 24


def node_breakpoints(tree: TreeArrays, node: int) -> np.ndarray:
    """Sorted float64 breakpoints of internal ``node`` (``[threshold]`` when the tree has
    no breakpoints for it); an empty array at a leaf.

    Raises ``ValueError`` for a node id out of range.
    """
    node = int(node)
    if not 0 <= node < tree.node_count:
        raise ValueError(f"node {node} is out of range [0, {tree.node_count})")
    if tree.children_left[node] == TREE_LEAF:
        return np.empty(0, dtype=np.float64)
    if tree.bp_offsets is not None:
        a, b = int(tree.bp_offsets[node]), int(tree.bp_offsets[node + 1])
        if b > a:
            return np.sort(np.asarray(tree.bp_values[a:b], dtype=np.float64))
    return np.array([float(tree.threshold[node])])


def shape_goes_left(x: Any, breakpoints: Any) -> np.ndarray:
    """bool ``(n,)``: True where a value goes left, i.e. an even number of the (sorted)
    ``breakpoints`` lies strictly below it (``x <= u_1`` -> left, ``u_1 < x <= u_2`` ->
    right, ...)."""
    u = np.sort(np.asarray(breakpoints, dtype=np.float64).ravel())
    xs = np.asarray(x, dtype=np.float64)
    return np.searchsorted(u, xs, side="left") % 2 == 0


def shape_apply(tree: TreeArrays, X: Any) -> np.ndarray:
    """Leaf id (int64 ``(n_samples,)``) each row of ``X`` reaches when every internal node
    routes by its shape function (see the module docstring).  Category-set splits of
    plain trees are honoured.  Raises ``ValueError`` for a bad ``X`` (as
    :meth:`TreeArrays.check_X`)."""
    Xc = tree.check_X(X)
    node = np.zeros(Xc.shape[0], dtype=np.int64)
    active = np.flatnonzero(tree.children_left[node] != TREE_LEAF)
    while active.size:
        at = node[active]
        nxt = np.empty_like(at)
        for v in np.unique(at):
            sel = at == v
            left = goes_left(tree, int(v), Xc[active[sel], tree.feature[v]])
            nxt[sel] = np.where(left, tree.children_left[v], tree.children_right[v])
        node[active] = nxt
        active = active[tree.children_left[nxt] != TREE_LEAF]
    return node


def goes_left(tree: TreeArrays, node: int, col: np.ndarray) -> np.ndarray:
    """bool ``(n,)``: which of the values ``col`` of node ``node``'s feature go left
    (a category-set split by membership, else by the node's shape function; a missing
    value (NaN) by the node's ``missing_go_to_left`` when the tree has one)."""
    cats = tree.category_set(node)
    if cats is not None:
        left = np.isin(col, cats.astype(np.float64))
    else:
        left = shape_goes_left(col, node_breakpoints(tree, node))
    if tree.missing_go_to_left is not None:  # NaN: the node's side for missing values
        left = np.where(np.isnan(col), bool(tree.missing_go_to_left[node]), left)
    return left


def node_rows(tree: TreeArrays, X: Any, node: int) -> np.ndarray:
    """bool ``(n_samples,)``: the rows of ``X`` that pass through ``node`` (shape routing
    along the path from the root)."""
    node = int(node)
    if not 0 <= node < tree.node_count:
        raise ValueError(f"node {node} is out of range [0, {tree.node_count})")
    Xc = tree.check_X(X)
    parent = tree.parent
    path = [node]
    while parent[path[-1]] >= 0:
        path.append(int(parent[path[-1]]))
    path.reverse()
    mask = np.ones(Xc.shape[0], dtype=bool)
    for a, b in zip(path[:-1], path[1:], strict=True):
        idx = np.flatnonzero(mask)
        left = goes_left(tree, a, Xc[idx, tree.feature[a]])
        keep = left if b == tree.children_left[a] else ~left
        mask[idx[~keep]] = False
    return mask


def rows_by_node(tree: TreeArrays, X: Any, nodes=None) -> dict[int, np.ndarray]:
    """node id -> :func:`node_rows` mask for each of ``nodes`` (default: every internal
    node, :func:`internal_nodes`)."""
    Xc = tree.check_X(X)
    return {
        int(v): node_rows(tree, Xc, v) for v in (internal_nodes(tree) if nodes is None else nodes)
    }


def shape_intervals(
    breakpoints: Any, lo: float = -math.inf, hi: float = math.inf
) -> list[tuple[float, float, str]]:
    """The ``K + 1`` intervals of a shape function as ``(start, end, side)``, side
    'left' / 'right' alternating from 'left'; the outer ends are ``lo`` and ``hi``.
    Interval ``i`` is ``(start, end]`` (the first one includes everything up to ``u_1``)."""
    u = np.sort(np.asarray(breakpoints, dtype=np.float64).ravel())
    edges = [float(lo)] + [float(v) for v in u] + [float(hi)]
    return [
        (edges[i], edges[i + 1], "left" if i % 2 == 0 else "right") for i in range(len(edges) - 1)
    ]


def internal_nodes(tree: TreeArrays) -> list[int]:
    """Internal node ids in pre-order (root first, left subtree before right)."""
    out, stack = [], [0]
    while stack:
        v = stack.pop()
        if tree.children_left[v] == TREE_LEAF:
            continue
        out.append(v)
        stack.append(int(tree.children_right[v]))
        stack.append(int(tree.children_left[v]))
    return out


class ShapeSides(NamedTuple):
    """Where a shape function sends values: ``interval`` int64 ``(n,)`` the interval
    ``0..K`` of each value (``(-inf, u_1]`` is 0), ``goes_left`` bool ``(n,)`` (even
    intervals go left)."""

    interval: np.ndarray
    goes_left: np.ndarray


def shape_sides(x: Any, breakpoints: Any) -> ShapeSides:
    """:class:`ShapeSides` of the values ``x`` under the (sorted here) ``breakpoints``."""
    u = np.sort(np.asarray(breakpoints, dtype=np.float64).ravel())
    interval = np.searchsorted(u, np.asarray(x, dtype=np.float64).ravel(), side="left")
    return ShapeSides(interval.astype(np.int64), interval % 2 == 0)


def code_intervals(n_codes: int, breakpoints: Any) -> np.ndarray:
    """int64 ``(n_codes,)``: the interval of each category code ``0..n_codes-1``."""
    return shape_sides(np.arange(int(n_codes), dtype=np.float64), breakpoints).interval


class ShapeHistogram(NamedTuple):
    """Rows per bin of a node's feature: bin ``i`` is ``(edges[i], edges[i + 1]]`` (the
    first also holds its left edge), drawn at ``centres[i]`` with ``widths[i]``;
    ``counts`` int64 ``(groups, bins)``: per class code ``0..n_classes-1``, or one group
    of all rows when there are no classes."""

    edges: np.ndarray
    centres: np.ndarray
    widths: np.ndarray
    counts: np.ndarray


def histogram_bins(x: np.ndarray, u: np.ndarray, n_bins: int, discrete: bool):
    """Bin edges for the class histogram that never straddle a breakpoint.

    Discrete features (codes, few distinct values): one bar per value.  Otherwise
    ``n_bins`` equal-width bins over the data, split at every breakpoint inside.
    Returns ``(edges, centres, widths)``; bin ``i`` is ``(edges[i], edges[i + 1]]`` (the
    first also holds its left edge), the same side of ``<=`` as the routing.
    """
    lo, hi = float(x.min()), float(x.max())
    if discrete:
        vals = np.unique(x)
        step = float(np.min(np.diff(vals))) if vals.size > 1 else 1.0
        edges = np.concatenate(
            [[vals[0] - step / 2], (vals[:-1] + vals[1:]) / 2, [vals[-1] + step / 2]]
        )
        return edges, vals, np.full(vals.size, 0.8 * step)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    inner = u[(u > lo) & (u < hi)]
    edges = np.unique(np.concatenate([np.linspace(lo, hi, n_bins + 1), inner]))
    return edges, 0.5 * (edges[:-1] + edges[1:]), np.diff(edges)


def shape_histogram(
    x: Any,
    breakpoints: Any,
    y: Any = None,
    *,
    n_classes: int = 0,
    n_bins: int = 30,
    discrete: bool | None = None,
) -> ShapeHistogram:
    """:class:`ShapeHistogram` of the values ``x`` (float64 ``(n,)``, ``n >= 1``) with the
    bins of :func:`histogram_bins`; ``y``: class codes ``0..n_classes-1`` or None.
    ``discrete`` None: one bar per value when ``x`` has at most :data:`DISCRETE_MAX`
    distinct values."""
    xs = np.asarray(x, dtype=np.float64).ravel()
    u = np.sort(np.asarray(breakpoints, dtype=np.float64).ravel())
    if discrete is None:
        discrete = np.unique(xs).size <= DISCRETE_MAX
    edges, centres, widths = histogram_bins(xs, u, n_bins, discrete)
    index = np.clip(np.searchsorted(edges, xs, side="left") - 1, 0, edges.size - 2)
    if y is None:
        counts = np.bincount(index, minlength=centres.size)[None, :]
    else:
        yc = np.asarray(y).ravel().astype(np.int64)
        counts = np.array(
            [np.bincount(index[yc == k], minlength=centres.size) for k in range(int(n_classes))]
        ).reshape(int(n_classes), centres.size)
    return ShapeHistogram(edges, centres, widths, counts.astype(np.int64))
