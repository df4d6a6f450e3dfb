"""Where the gap lives: the lower and upper bound of every node of a Literati search's
incumbent tree and its share of the remaining gap (issue 18 point 2; docs/methods.md,
"Per-node bounds and gap shares").

A node ``v`` of the incumbent tree stands for the subproblem "the best subtree for the
training rows reaching ``v`` with the levels left below it" (``d_v = D - depth(v)``).  In
objective units (misclassified rows + lambda x splits + alpha x breakpoints):

* ``UB(v)`` is the objective of the incumbent's own subtree at ``v`` (its leaves' errors
  plus the prices of its splits), so ``UB(v) = lambda + alpha K_v + UB(left) + UB(right)``
  and ``UB(root)`` is the search's upper bound.
* ``LB(v)`` is the best admissible lower bound the search holds for that subproblem: the
  bound of its data state when one is cached, else the class-count bound; the root's is
  the search's proven lower bound.  Then each node's bound is passed down to its
  children (parents first).  The incumbent's split at ``v`` is one of the candidates of
  ``v``'s subproblem (every node of the incumbent, the greedy completion's too, is split on
  the candidates the search gives its rows and depth: its own rows', or the root's with
  ``candidate_scope='root'``) and its
  children's subproblems are their rows with one level fewer, so ``LB(v) <= OPT(v) <=
  lambda + alpha K_v + OPT(child) + OPT(sibling)``; as ``OPT(sibling) <= UB(sibling)``,
  ``LB(child) >= LB(v) - lambda - alpha K_v - UB(sibling)``.  This keeps ``gap(child) <=
  gap(v)`` (no share above 1).  It raises a bound only where a node's bound exceeds its
  children's plus the split's price: after the cache evicted a child's state (the search
  keeps that bound on its shape state, which this does not read); the class-count bound
  is subadditive (``class(v) <= lambda + alpha K_v + class(left) + class(right)``), so the
  nodes of a greedy completion gain nothing from their parent's class-count bound.
  ``LB`` is exact (``LB = UB``) for a leaf that no split can pay for, for a node inside a
  subtree solved exactly by the depth-1 / depth-2 kernels, and for every node below a
  node whose bounds met (the bound passed down then equals ``UB``: an optimal tree's
  subtrees are optimal for their own rows, since the candidates of a subproblem depend
  only on its rows and depth).
* ``gap(v) = UB(v) - LB(v) >= 0``; ``share(v) = gap(v) / gap(root)``: the fraction of the
  remaining gap that lies at or below ``v`` (the root's is 1).
* ``own(v) = gap(v) - gap(left) - gap(right) = lambda + alpha K_v + LB(left) + LB(right)
  - LB(v)`` (a leaf's own gap is its gap): the part of the gap not explained by the
  children, i.e. how much a different split at ``v`` might still save.  The own gaps
  telescope, so ``sum_v own(v) = gap(root)`` and the own shares add up to exactly 1.  An
  own share is negative only where a node's bound is stronger than its children's bounds
  plus its split's price (e.g. once its bound is passed down: then ``own(v) >=
  -min(gap(left), gap(right))``).

All shares are 0 once the root's bounds meet (proven optimal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.literati.states import state_key

#: Bounds within this relative distance are equal (sums of float penalties).
TOLERANCE = 1e-9


@dataclass(frozen=True)
class NodeBounds:
    """Per-node bounds of an incumbent tree (node ids as in its ``TreeArrays``).

    Attributes (float64 ``(m,)`` arrays unless said otherwise; objective units):
    ``lower`` (LB), ``upper`` (UB: the incumbent subtree's objective), ``gap``
    (UB - LB), ``share`` (gap / root gap; 0 when the root gap is 0), ``own_share``
    (own gap / root gap, adds up to 1 over the nodes while the root gap is positive),
    ``exact`` bool ``(m,)`` (LB = UB: the subtree is proven optimal for its rows),
    ``paths`` tuple of str (the node's path from the root: ``""`` the root, then one
    ``L`` / ``R`` per level), ``depth`` int64 ``(m,)``, ``root_gap`` float.
    """

    lower: np.ndarray
    upper: np.ndarray
    gap: np.ndarray
    share: np.ndarray
    own_share: np.ndarray
    exact: np.ndarray
    paths: tuple
    depth: np.ndarray
    root_gap: float

    @property
    def node_count(self) -> int:
        return int(self.lower.shape[0])

    def node_of_path(self, path: str) -> int | None:
        """Node id of ``path`` (``""``, ``"L"``, ``"LR"``...), or None if not in the tree."""
        try:
            return self.paths.index(path)
        except ValueError:
            return None

    def table(self):
        """One row per node: node, path, depth, LB, UB, gap, share, own share, exact
        (a ``pandas.DataFrame``)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "node": np.arange(self.node_count),
                "path": [path_label(p) for p in self.paths],
                "depth": self.depth,
                "LB": self.lower,
                "UB": self.upper,
                "gap": self.gap,
                "share of gap": self.share,
                "own share": self.own_share,
                "proven": self.exact,
            }
        )


def path_label(path: str) -> str:
    """What a page shows for a node path: ``"root"`` or ``"root → L → R"``."""
    return "root" + "".join(f" \u2192 {s}" for s in path)


class NodeBoundTracker:
    """The incumbent tree's per-node data that stays fixed while it is the incumbent (rows,
    cache keys, upper bounds, static lower bounds), so :meth:`bounds` only reads the
    search's cache for the lower bounds that rose since.

    ``engine`` is the :class:`engine.literati.search.AOStarSearch`; ``nodes`` its
    :meth:`~engine.literati.search.AOStarSearch.extract` output (node dicts with ``idx``,
    ``feature``, ``bps``, ``children``, ``lb``, ``ub`` and optionally ``exact``).
    """

    def __init__(self, engine, nodes: list[dict]):
        m = len(nodes)
        lam, alpha = engine.lam, engine.alpha
        self.children = [nd["children"] for nd in nodes]
        depth = np.zeros(m, dtype=np.int64)
        paths = [""] * m
        for v, kids in enumerate(self.children):  # preorder: a parent precedes its children
            if kids is not None:
                for side, c in zip("LR", kids, strict=True):
                    depth[c] = depth[v] + 1
                    paths[c] = paths[v] + side
        self.depth = depth
        self.paths = tuple(paths)
        upper = np.zeros(m)
        price = np.zeros(m)  # lambda + alpha K of a split node
        static = np.zeros(m)
        exact = np.zeros(m, dtype=bool)
        keys: list = [None] * m
        for v in range(m - 1, -1, -1):
            nd = nodes[v]
            idx = nd["idx"]
            counts = np.bincount(engine.y[idx], minlength=engine.C)
            err = float(idx.shape[0] - (counts.max() if idx.shape[0] else 0))
            d = engine.D - int(depth[v])
            kids = self.children[v]
            if kids is None:
                upper[v] = err
                exact[v] = engine._trivial(err, d)
            else:
                price[v] = lam + alpha * len(nd["bps"])
                upper[v] = price[v] + upper[kids[0]] + upper[kids[1]]
            exact[v] |= bool(nd.get("exact", False))
            static[v] = engine._class_lb(counts, d)
            if nd.get("lb") is not None:
                static[v] = max(static[v], float(nd["lb"]))
            if not exact[v] and d >= 1:
                keys[v] = state_key(np.sort(idx), d)
        self.upper = upper
        self.price = price
        self.static = static
        self.exact = exact
        self.keys = keys

    def bounds(self, cache, root_lower: float) -> NodeBounds:
        """The bounds now: ``cache`` the search's state cache (key -> DataState),
        ``root_lower`` the search's proven lower bound of the root (its trace's ``lb``)."""
        upper = self.upper
        m = upper.shape[0]
        lower = self.static.copy()
        for v, key in enumerate(self.keys):
            if key is not None:
                st = cache.get(key)
                if st is not None and st.lb > lower[v]:
                    lower[v] = st.lb
        lower[0] = max(lower[0], float(root_lower))
        tol = TOLERANCE * max(1.0, abs(float(upper[0])))
        lower = np.where(self.exact, upper, np.minimum(lower, upper))
        # pass each bound down (parents come first): LB(child) >= LB(v) - price - UB(sibling)
        for v in range(m):
            kids = self.children[v]
            if kids is not None:
                a, b = kids
                lower[a] = max(lower[a], min(lower[v] - self.price[v] - upper[b], upper[a]))
                lower[b] = max(lower[b], min(lower[v] - self.price[v] - upper[a], upper[b]))
        # a proven subtree's nodes are proven (optimal substructure); parents come first
        exact = self.exact | (lower >= upper - tol)
        for v in range(m):
            kids = self.children[v]
            if exact[v] and kids is not None:
                exact[kids[0]] = exact[kids[1]] = True
        lower = np.where(exact, upper, lower)
        gap = upper - lower
        root_gap = float(gap[0])
        own = gap.copy()
        for v in range(m):
            kids = self.children[v]
            if kids is not None:
                own[v] -= gap[kids[0]] + gap[kids[1]]
        if root_gap > tol:
            share, own_share = gap / root_gap, own / root_gap
        else:
            root_gap = 0.0
            share, own_share = np.zeros(m), np.zeros(m)
        return NodeBounds(
            lower=lower,
            upper=upper.copy(),
            gap=gap,
            share=share,
            own_share=own_share,
            exact=exact,
            paths=self.paths,
            depth=self.depth,
            root_gap=root_gap,
        )
