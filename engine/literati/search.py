"""AO* search over Literati's AND/OR graph (docs/spec.md section 1), in resumable steps.

The graph lives in Python objects (:mod:`engine.literati.states`); the per-state work
(candidate breakpoints, class counts, lookahead CART, the exact depth-1 and depth-2
solvers, routing) runs in the numba kernels of :mod:`engine.literati._kernels`, called by
the state expansion (:mod:`engine.literati.expansion`, which :class:`AOStarSearch`
extends).  This module is the AO* loop: selection, backup, pruning, the cache, extraction.

States
------
* **Data state** ``(D_s, d)`` (OR node, :class:`DataState`), keyed by ``(d, |D_s|, digest of
  the sorted sample ids)`` so different paths reaching the same samples share one entry
  of the LRU cache.  Actions: Leaf (``Err(D_s)``) and, for ``d >= 1``, ``Split(j, u)`` of
  cost ``lambda + alpha`` to the shape state ``(D_s, d, j, {u})``.
  A state with ``d == 0`` or ``Err <= lambda + alpha`` is a solved leaf and is never
  stored (a "virtual" child).  A state with ``d == 1`` is solved on creation by the exact
  depth-1 kernel (the subgraph below it has only leaf children, so this is its complete
  expansion done in one call).  A state with ``d == 2`` (other than the root) is solved by
  the depth-2 kernel, which scans every shape of the state with the depth-1 solver on its
  children, skipping shapes by the same bounds (``Q >= min(V_bar, budget)``; the budget is
  the value above which the state cannot improve any incumbent on the selection path); its
  scan runs in chunks of bounded work, resumed on later visits.
* **Shape state** ``(D_s, d, j, k)`` (OR node, :class:`ShapeState`), owned by its data
  state.  Actions: Commit (cost 0; AND node over the children ``(D_L, d-1)`` and
  ``(D_R, d-1)``, left iff the number of breakpoints strictly below ``x_j`` is even) and
  ``Refine(u)`` (cost ``alpha``) with ``u > max(k)`` while ``|k| < K_max``.

Bounds
------
* Lower bounds (admissible): SPEC's ``V(D_s, d) = min(Err, lambda + alpha)``, tightened
  by the class-count bound (:meth:`AOStarSearch._class_lb`: ``L <= min(2^d, c)`` leaves
  predict at most ``L`` of the ``c`` classes present and need ``L - 1`` splits; equal to
  SPEC's bound with two classes);
  ``V(shape) = min(alpha [if a refinement exists], sum_side V(D_side, d - 1))``
  (a child with ``d - 1 == 0`` or ``Err_side <= lambda + alpha`` counts exactly
  ``Err_side``).  Backed up as ``V(s) = max(V_old, min(Err, V_bar(s), min_a Q(s, a)))``
  over the actions not pruned.  Every value is non-decreasing in time.
* Upper bounds ``V_bar`` (incumbents): the leaf error or, for a data state searched as a
  graph node (kind 'open' at creation, including the root), its **greedy completion**
  (:mod:`engine.literati.greedy`: a greedy shape tree grown from the state with the
  search's own candidates, so a tree of the search space; ``greedy_seed=True``), or the
  best action's ``cost + V_bar(child)``: ``V_bar = min(Err, greedy, min_a Q_bar)``.  The
  greedy tree (features, breakpoints, children; no sample ids) is kept on the state, and
  :meth:`AOStarSearch.extract` re-routes the state's samples through it when it is the
  state's incumbent.  An unexpanded shape state's incumbent is its commit with two leaves.
* Action ``a`` at ``s`` is pruned (and its subgraph freed) when ``Q(s, a) >= V_bar(s)``
  and it is not the incumbent action; a state is solved when ``V(s) >= V_bar(s)``.
* Ordering only: ``V~`` = regularised loss of a lookahead CART (SPEC), used as
  ``Q~ = cost + max(V~, V)`` to pick the action to descend; AND children alternate
  round-robin, skipping solved ones.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from engine.literati import _kernels as kernels
from engine.literati.expansion import StateExpansion
from engine.literati.interrupt import KernelStop
from engine.literati.states import EPS, DataState, ShapeState


class AOStarSearch(StateExpansion):
    """The search engine (no estimator logic); see :class:`engine.literati.LiteratiSearch`.

    Parameters: ``X`` float64 C-contiguous ``(n, p)``, ``y`` int64 codes ``(n,)`` in
    ``[0, C)``, ``max_depth`` D >= 1, ``max_breakpoints`` K_max >= 1, ``lam``/``alpha``
    (misclassification units, >= 0), ``leaves_per_depth`` list of B_d (0 = all midpoints)
    indexed by depth from the root, ``cache_size`` (max stored data states),
    ``greedy_seed`` (seed the upper bound of every searched data state with its greedy
    shape tree), ``deadline`` (``time.perf_counter()`` value; the caller may move it later).
    """

    def __init__(
        self,
        X,
        y,
        n_classes,
        max_depth,
        max_breakpoints,
        lam,
        alpha,
        leaves_per_depth,
        cache_size,
        greedy_seed=True,
        deadline=float("inf"),
        candidate_scope="state",
    ):
        self.X = X
        self.candidate_scope = str(candidate_scope)
        self.XT = np.ascontiguousarray(X.T)
        self.y = y
        self.C = int(n_classes)
        self.D = int(max_depth)
        self.Kmax = int(max_breakpoints)
        self.lam = float(lam)
        self.alpha = float(alpha)
        self.lr = self.lam + self.alpha
        self.B = list(leaves_per_depth)
        self.cache_size = int(cache_size)
        self.greedy_seed = bool(greedy_seed)
        self.greedy_calls = 0
        self.greedy_seconds = 0.0
        n = X.shape[0]
        self._mark = np.zeros(n, dtype=np.bool_)
        self._side = np.zeros(n, dtype=np.bool_)
        self._cache: OrderedDict = OrderedDict()
        self._orders: OrderedDict = OrderedDict()
        # similarity bounds (every midpoint a candidate): per (state key, feature) the bin
        # sizes, their prefix sums and the children of the shapes expanded there
        self._allmid = all(b <= 0 for b in self.B)
        self._sim: dict = {}
        # subset bounds (candidate_scope='root'): per (state key, feature) the children
        # created there, as (bit set of the feature's root bins in the child, child key)
        self._subsets: dict = {}
        self._superset_table: dict = {}  # (bit set, width) -> the bit sets containing it
        self.iterations = 0
        self.expanded = 0
        self.solved_count = 0
        self.pruned = 0
        self.evictions = 0
        self.deadline = float(deadline)  # set-up (the root's greedy seed) respects it too
        # steering: the incumbent-tree path ('', 'L', 'LR', ...) whose subtree goes first
        self.priority: str | None = None
        self.priority_ended: str | None = None  # why the last priority ended
        self.priority_iterations = 0
        self.timed_out = False
        # the long kernels' stop flag: raised at the deadline or by stop() during a call
        self.kernel_stop = KernelStop()
        idx = np.arange(n, dtype=np.int64)
        if self.candidate_scope == "root":
            self._root_candidates(idx)
        # a two-level root small enough for the depth-2 kernel is scanned by it in chunks
        # (one numba call per iteration instead of a Python shape object per action)
        self.root = self._new_state(idx, self.D, hint=0.0, vt=None)
        self._touch(self.root)

    # -- backup -----------------------------------------------------------------------

    def _backup_shape(self, h: ShapeState) -> None:
        if not h.expanded:
            return
        if h.commit_pruned:
            cub = float("inf")
            clb = float("inf")
        else:
            lbL, ubL, _, _ = self._child(h, 0)
            lbR, ubR, _, _ = self._child(h, 1)
            cub = ubL + ubR
            clb = lbL + lbR
        ub = cub
        best = None
        lbm = clb
        for r in h.refines:
            q = self.alpha + r.ub
            if q < ub - EPS:
                ub = q
                best = r
            lbm = min(lbm, self.alpha + r.lb)
        h.ub = ub
        h.best = best
        h.lb = max(h.lb, min(lbm, ub))
        keep = []
        for r in h.refines:
            if r is not best and self.alpha + r.lb >= ub - EPS:
                r.dead = True
                self.pruned += 1
            else:
                keep.append(r)
        h.refines = keep
        if best is not None and not h.commit_pruned and clb >= ub - EPS:
            h.commit_pruned = True
            h.keys = None
            h.child_idx = None
            self.pruned += 1
        if not h.solved and h.lb >= h.ub - EPS:
            h.lb = h.ub
            h.solved = True
            self.solved_count += 1
        self._sync(h)

    def _backup_data(self, st: DataState) -> None:
        if st.kind != "expanded" or st.solved:
            return
        ub = st.base_ub
        best = None
        bi = -1
        lbm = st.base_ub
        if st.a_ub.shape[0]:
            q_ub = self.lr + st.a_ub
            i = int(np.argmin(q_ub))
            if q_ub[i] < ub - EPS:
                ub = float(q_ub[i])
                best = st.shapes[i]
                bi = i
            lbm = min(lbm, float(np.min(self.lr + st.a_lb)))
        st.ub = ub
        st.best = best
        st.lb = max(st.lb, min(lbm, ub))
        if st.a_ub.shape[0]:
            cond = st.a_alive & (self.lr + st.a_lb >= ub - EPS)
            if bi >= 0:
                cond[bi] = False
            for i in np.flatnonzero(cond):
                h = st.shapes[i]
                h.dead = True
                st.shapes[i] = None
                st.a_alive[i] = False
                st.a_sel[i] = False
                st.a_lb[i] = st.a_ub[i] = np.inf
                self.pruned += 1
        if st.lb >= st.ub - EPS:
            st.lb = st.ub
            st.solved = True
            self.solved_count += 1
            # free everything but the incumbent chain
            st.shapes = [best] if best is not None else []
            self._table(st)
            st.pending = None
            h = best
            while h is not None:
                if h.refines is not None:
                    h.refines = [h.best] if h.best is not None else []
                h = h.best

    # -- one AO* iteration --------------------------------------------------------------

    def iterate(self) -> bool:
        """One select / expand / back-propagate cycle.  Returns False when nothing is left
        to do (root solved) or the time limit was hit inside an expansion."""
        root = self.root
        if root.solved:
            return False
        node, path = root, []
        if self.priority is not None:
            chain = self._priority_chain()
            if chain is None:
                self._end_priority("proven")
            else:  # descend from the prioritised state; back up its ancestors too
                node, path = chain[-1], chain[:-1]
                self.priority_iterations += 1
        start_state = node
        mark = (node.lb, node.ub, node.solved, node.kind, self.expanded, node.vt_done)
        is_data = True
        budget = node.ub  # a subtree is useful only while its value stays below this
        while True:
            if is_data:
                st = node
                path.append(st)
                self._touch(st)
                if st.solved:
                    break
                if st.kind == "open":
                    self._expand_data(st)
                    break
                if st.kind in ("d2", "d3"):  # scan unfinished, or stopped at a budget: go on
                    fresh = st.scan is None or st.scan[6] or budget <= st.lb + EPS
                    lb = st.lb
                    self._solve_d2(st, np.inf if fresh else budget)
                    if st.lb > lb + EPS and len(path) >= 2 and isinstance(path[-2], ShapeState):
                        # its bound rose: so did the subset bounds of its parent's shapes
                        self._refresh_subset_bounds(path[-2].state, path[-2].j)
                    break
                budget = min(budget, st.ub)
                if st.pending is not None:
                    self._more_vt(st)
                h = self._select_shape(st, budget)
                while h is None and st.pending is not None and not self.timed_out:
                    self._more_vt(st)
                    h = self._select_shape(st, budget)
                if h is None:
                    break
                node = h
                is_data = False
                budget -= self.lr
            else:
                h = node
                path.append(h)
                budget = min(budget, h.ub)
                if not h.expanded:
                    self._expand_shape(h, budget)
                    break
                choice = self._select_action(h, budget)
                if choice is None:
                    break
                if isinstance(choice, ShapeState):
                    node = choice
                    budget -= self.alpha
                    continue
                budget -= self._child(h, 1 - choice)[0]
                child = self._get_child(h, choice)
                node = child
                is_data = True
        self._path = path
        for obj in reversed(path):
            if isinstance(obj, DataState):
                self._backup_data(obj)
            else:
                self._backup_shape(obj)
        if self.evictions:
            self._repair(root)
        if self.priority is not None and start_state is not root:
            now = (start_state.lb, start_state.ub, start_state.solved, start_state.kind)
            if start_state.solved:
                self._end_priority("proven")
            elif now + (self.expanded, start_state.vt_done) == mark:
                self._end_priority("stalled")  # nothing left to do there: back to the root
        self.iterations += 1
        if len(self._cache) > self.cache_size:
            self._evict(path)
        return True

    # -- steering (issue 18 point 2) ---------------------------------------------------------

    def set_priority(self, path: str | None) -> None:
        """Give the subtree at ``path`` of the incumbent tree (``""`` the root, then one
        ``"L"`` / ``"R"`` per level) priority: every iteration descends from its deepest
        unsolved data state on that path (an ancestor when the node itself has no state
        yet, e.g. inside a greedy completion) until that state is solved, then the search
        goes on from the root.  Only the order of the work changes, never the bounds'
        rules, so the optimum is the same.  ``None`` clears it.  Raises ``ValueError`` for
        a path with other letters than L and R or longer than the depth."""
        if path is not None:
            path = str(path)
            if set(path) - {"L", "R"} or len(path) >= self.D + 1:
                raise ValueError(
                    f"A node path is a string of L and R of at most {self.D} letters "
                    f"(the depth); got {path!r}."
                )
        self.priority = path
        self.priority_ended = None

    def _end_priority(self, why: str) -> None:
        self.priority = None
        self.priority_ended = why

    def _priority_chain(self):
        """The states and shapes from the root down the incumbent tree along
        :attr:`priority` to its deepest cached data state (that state last), or None when
        that state is solved (the prioritised subtree is proven)."""
        st = self.root
        chain = [st]
        for side in self.priority:
            if st.kind != "expanded" or st.best is None:
                break
            shapes = [st.best]
            while shapes[-1].best is not None:
                shapes.append(shapes[-1].best)
            hf = shapes[-1]
            s = 0 if side == "L" else 1
            if hf.keys is None:
                break
            if hf.keys[s] is None:
                return None  # a leaf no split can pay for: solved
            child = self._cache.get(hf.keys[s])
            if child is None:
                break
            chain += shapes
            chain.append(child)
            st = child
        return None if st.solved else chain

    def _repair(self, st: DataState) -> None:
        """Make the incumbent of ``st`` one that :meth:`extract` can rebuild.

        A shape's upper bound is the sum of its children's incumbents, kept when those
        children are evicted (they were off the incumbent tree then); if the shape later
        becomes part of the incumbent tree, the upper bound counts a tree the cache no
        longer holds.  The bound is still a valid upper bound of the optimum (so nothing
        pruned or proved with it is wrong), but the tree is lost.  Here every shape of the
        incumbent tree with an evicted child (or a child whose own incumbent was repaired)
        is backed up again (the evicted child counts as a leaf, as in :meth:`_child`) and
        un-solved when its bound rose above its lower bound, and its data state likewise,
        until the incumbent tree is held in full.  Lower bounds are unchanged."""
        while st.kind == "expanded" and st.best is not None:
            chain = [st.best]
            while chain[-1].best is not None:
                chain.append(chain[-1].best)
            hf = chain[-1]
            real = 0.0  # value of the tree extract() rebuilds under hf's commit
            for s in (0, 1):
                child = None
                if hf.keys is not None and hf.keys[s] is not None:
                    child = self._cache.get(hf.keys[s])
                if child is None:
                    real += hf.err[s]  # trivial or evicted: a leaf
                else:
                    self._repair(child)
                    real += child.ub
            broken = hf.ub < real - EPS
            if not broken:
                return
            for h in reversed(chain):
                h.solved = False
                self._backup_shape(h)
            st.solved = False
            self._backup_data(st)

    def _select_shape(self, st: DataState, budget: float = np.inf):
        """The open split action with the least ``max(V~, V)`` among those whose lower
        bound ``lambda + alpha + V`` is below ``budget`` (the value above which nothing under
        this state can improve the root's incumbent on this path); when there is none (the
        bounds above are stale), the least over all open actions.  None if none is open."""
        if not st.a_sel.any():
            return None
        q = np.where(st.a_sel, np.maximum(st.a_vt, st.a_lb), np.inf)
        useful = st.a_sel & (self.lr + st.a_lb < budget - EPS)
        if useful.any():
            q = np.where(useful, q, np.inf)
        return st.shapes[int(np.argmin(q))]

    def _select_action(self, h: ShapeState, budget: float = np.inf):
        """The refined shape or the commit side (0/1) to descend into, or None.

        Candidates are ordered by ``V~`` (the commit: ``max(V~, V)`` of its children
        summed; a refinement: ``alpha + max(V~, V)``).  Only those whose lower bound is
        below ``budget`` (the shape's share of the root's incumbent on this path) are
        considered: descending into a commit whose children's bounds already reach the
        budget would only spend an exact solve on a subtree that cannot improve the root
        (measured: a third of breast_cancer D = 3's proof time).  When no candidate is
        below the budget (stale bounds), all of them are considered."""
        for use_budget in (True, False):
            best = None
            bq = float("inf")
            if not h.commit_pruned:
                lbL, _, solL, _ = self._child(h, 0)
                lbR, _, solR, _ = self._child(h, 1)
                if not (solL and solR) and (not use_budget or lbL + lbR < budget - EPS):
                    bq = max(h.vts[0], lbL) + max(h.vts[1], lbR)
                    sides = [s for s in (h.rr, 1 - h.rr) if not (solL if s == 0 else solR)]
                    best = sides[0]
            for r in h.refines:
                if r.solved or r.vts is None:
                    continue
                if use_budget and self.alpha + r.lb >= budget - EPS:
                    continue
                q = self.alpha + max(r.vt, r.lb)
                if q < bq:
                    bq = q
                    best = r
            if best is not None:
                break
        if isinstance(best, int):
            h.rr = 1 - best
        return best

    # -- incumbent and cache --------------------------------------------------------------

    def incumbent_keys(self) -> set:
        """Keys of the data states on the incumbent tree."""
        keys = set()
        stack = [self.root]
        while stack:
            st = stack.pop()
            keys.add(st.key)
            if st.kind != "expanded" or st.best is None:
                continue
            h = st.best
            while h.best is not None:
                h = h.best
            if h.keys is None:
                continue
            for key in h.keys:
                if key is not None:
                    child = self._cache.get(key)
                    if child is not None:
                        stack.append(child)
        return keys

    def _evict(self, path) -> None:
        protected = self.incumbent_keys()
        protected.update(o.key for o in path if isinstance(o, DataState))
        excess = len(self._cache) - self.cache_size
        victims = []
        for key in self._cache:
            if excess <= 0:
                break
            if key in protected:
                continue
            victims.append(key)
            excess -= 1
        for key in victims:
            st = self._cache.pop(key)
            st.shapes = None
            st.pending = None
            self._orders.pop(key, None)
            self.evictions += 1

    def extract(self):
        """The incumbent tree as node lists: returns ``(nodes, objective)`` with nodes
        dicts (idx, feature, bps, children, lb, ub, exact) in depth-first order (root 0);
        ``exact``: the node's subtree is the exact optimum for its rows and remaining depth
        (a child solved by the depth-1 / depth-2 kernel)."""
        nodes = []

        def leaf(idx, lb=None, ub=None, exact=False):
            nodes.append(
                {
                    "idx": idx,
                    "feature": -2,
                    "bps": None,
                    "children": None,
                    "lb": lb,
                    "ub": ub,
                    "exact": exact,
                }
            )
            return len(nodes) - 1

        def internal(idx, j, bps, lb, ub, exact=False):
            nodes.append(
                {
                    "idx": idx,
                    "feature": int(j),
                    "bps": np.asarray(bps, float),
                    "children": None,
                    "lb": lb,
                    "ub": ub,
                    "exact": exact,
                }
            )
            return len(nodes) - 1

        def split(idx, j, bps):
            left = kernels.shape_route_kernel(
                np.ascontiguousarray(self.X[idx, j]), np.ascontiguousarray(bps, dtype=np.float64)
            )
            return idx[left], idx[~left]

        def walk(st: DataState | None, idx):
            if st is None:
                return leaf(idx)
            if st.kind == "d1":
                if st.sol_j < 0:
                    return leaf(idx, st.lb, st.ub)
                me = internal(idx, st.sol_j, st.sol_bps, st.lb, st.ub)
                a, b = split(idx, st.sol_j, st.sol_bps)
                nodes[me]["children"] = (leaf(a, exact=True), leaf(b, exact=True))
                return me
            if st.kind == "d2":
                if st.sol is None:
                    return leaf(idx, st.lb, st.ub)
                feats, ks, bps = st.sol
                if feats[0] < 0:
                    return leaf(idx, st.lb, st.ub)
                u = bps[0, : ks[0]]
                me = internal(idx, feats[0], u, st.lb, st.ub)
                kids = []
                for s, cidx in zip((1, 2), split(idx, feats[0], u), strict=True):
                    # the kernel solved each child exactly (the depth-1 optimum)
                    if feats[s] < 0:
                        kids.append(leaf(cidx, exact=True))
                    else:
                        us = bps[s, : ks[s]]
                        c = internal(cidx, feats[s], us, None, None, exact=True)
                        a, b = split(cidx, feats[s], us)
                        nodes[c]["children"] = (leaf(a, exact=True), leaf(b, exact=True))
                        kids.append(c)
                nodes[me]["children"] = tuple(kids)
                return me
            if st.kind != "expanded" or st.best is None:
                if st.greedy is not None and st.gub < st.err - EPS:
                    # the incumbent is the greedy completion seeded at creation
                    me = len(nodes)
                    st.greedy.nodes(self.X, idx, out=nodes)
                    nodes[me]["lb"], nodes[me]["ub"] = st.lb, st.ub
                    return me
                return leaf(idx, st.lb, st.ub)
            h = st.best
            while h.best is not None:
                h = h.best
            me = internal(idx, h.j, h.bpv, st.lb, st.ub)
            a, b = split(idx, h.j, h.bpv)
            kids = []
            for s, cidx in ((0, a), (1, b)):
                child = None
                if h.keys is not None and h.keys[s] is not None:
                    child = self._cache.get(h.keys[s])
                kids.append(walk(child, cidx))
            nodes[me]["children"] = tuple(kids)
            return me

        walk(self.root, self.root.idx)
        err = 0.0
        cost = 0.0
        for nd in nodes:
            if nd["children"] is None:
                cnt = np.bincount(self.y[nd["idx"]], minlength=self.C)
                err += nd["idx"].shape[0] - cnt.max()
            else:
                cost += self.lam + self.alpha * len(nd["bps"])
        return nodes, float(err + cost)
