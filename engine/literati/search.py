"""AO* search over Literati's AND/OR graph (docs/spec.md section 1), in resumable steps.

The graph lives in Python objects; the per-state work (candidate breakpoints, class counts,
lookahead CART, the exact depth-1 solver, routing) runs in the numba kernels of
:mod:`engine.literati._kernels`.

States
------
* **Data state** ``(D_s, d)`` (OR node, :class:`_Data`), keyed by ``(d, |D_s|, digest of
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
* **Shape state** ``(D_s, d, j, k)`` (OR node, :class:`_Shape`), owned by its data
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

import hashlib
import time
from collections import OrderedDict

import numpy as np

from engine._numba import call_parallel
from engine.literati import _counting_kernels as counting_kernels
from engine.literati import _depth2_kernels as depth2_kernels
from engine.literati import _kernels as kernels
from engine.literati.greedy import greedy_shape_tree

_EPS = 1e-9
#: Data states with this many levels left or fewer are solved by one kernel call (1: the
#: depth-1 DP; 2: also the depth-2 solver), except the root, which is always searched.
KERNEL_DEPTH = 2
#: States with at least this many (feature, row) pairs sort their orders in parallel.
_PARALLEL_SORT = 1 << 20
#: Work of one depth-2 kernel call, in (feature x sample) units of depth-1 solves: a call
#: does ``max(4, _D2_WORK // (p * m))`` depth-1 solves, rounded up to the end of a block of
#: :data:`engine.literati._kernels._D2_BLOCK` shapes (up to 2 solves each), about 10-50 ms.
#: Fixed units (not measured times) keep the search's sequence of steps reproducible.
_D2_WORK = 4_000_000
#: A two-level state with more shapes than this (all midpoints, K_max >= 2 on many rows) is
#: searched as a graph node instead of by the depth-2 kernel (which lists all its shapes).
_D2_MAX_SHAPES = 50_000

#: Earlier shapes per (state, feature) whose children bound a new shape's children
#: (similarity bound, every midpoint a candidate).
_SIM_ITEMS = 16
#: Work of one lookahead kernel call (V~ of a chunk of shapes) in (feature x sample x
#: level) units: ``max(1, _LA_WORK // (p * m * levels))`` shapes per call.  The clock is
#: checked between calls.
_LA_WORK = 2_000_000


def _key(idx: np.ndarray, d: int) -> tuple:
    """Cache key of a data state: remaining depth, size and a digest of its sample ids."""
    return (d, idx.shape[0], hashlib.blake2b(idx.tobytes(), digest_size=16).digest())


class _Data:
    """Data state (OR node).  ``kind``: 'open' (unexpanded), 'expanded', 'd1' (solved by
    the depth-1 kernel; ``sol_j``/``sol_bps`` hold its split, ``sol_j < 0`` = leaf)."""

    __slots__ = (
        "key",
        "idx",
        "d",
        "depth",
        "counts",
        "err",
        "lb",
        "ub",
        "solved",
        "kind",
        "shapes",
        "best",
        "sol_j",
        "sol_bps",
        "vt",
        "cand_off",
        "cand_val",
        "bin_counts",
        "pending",
        "vt_done",
        "sol",
        "scan",
        "a_lb",
        "a_ub",
        "a_vt",
        "a_sel",
        "a_alive",
        "greedy",
        "gub",
    )

    def __init__(self, key, idx, d, depth, counts, err):
        self.key = key
        self.idx = idx
        self.d = d
        self.depth = depth
        self.counts = counts
        self.err = err
        self.lb = 0.0
        self.ub = err
        self.solved = False
        self.kind = "open"
        self.shapes = None
        self.best = None
        self.sol_j = -1
        self.sol_bps = None
        self.vt = err
        self.pending = None
        self.vt_done = 0
        self.a_lb = None
        self.sol = None
        self.scan = None  # depth-2 kernel scan: [next, best, lb_skip, feats, ks, bps, done]
        self.greedy = None  # GreedyTree seeding the incumbent (open states), or None
        self.gub = np.inf  # its objective

    @property
    def base_ub(self) -> float:
        """Incumbent value without split actions: the leaf or the greedy completion."""
        return self.err if self.err <= self.gub else self.gub


class _Shape:
    """Shape-function state (OR node) of data state ``state``: feature ``j``, breakpoints
    ``k`` (indices into the state's candidates on ``j``) with values ``bpv``."""

    __slots__ = (
        "state",
        "j",
        "k",
        "bpv",
        "err",
        "lb",
        "ub",
        "vt",
        "vts",
        "solved",
        "expanded",
        "refinable",
        "keys",
        "hint",
        "refines",
        "rr",
        "best",
        "commit_pruned",
        "child_idx",
        "dead",
        "pos",
    )

    def __init__(self, state, j, k, bpv, err, refinable):
        self.state = state
        self.j = j
        self.k = k
        self.bpv = bpv
        self.err = err  # (Err_L, Err_R) of the two children as leaves
        self.refinable = refinable
        self.vt = 0.0
        self.vts = None  # V~ of (left, right) once the lookahead ran
        self.solved = False
        self.expanded = False
        self.keys = None
        self.hint = [0.0, 0.0]
        self.refines = None
        self.rr = 0
        self.best = None  # None = commit, or a refined _Shape
        self.commit_pruned = False
        self.child_idx = None
        self.dead = False
        self.pos = -1  # index in the owning data state's action table (-1: a refinement)
        self.ub = err[0] + err[1]
        self.lb = 0.0


class AOStarSearch:
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
        self.iterations = 0
        self.expanded = 0
        self.solved_count = 0
        self.pruned = 0
        self.evictions = 0
        self.deadline = float(deadline)  # set-up (the root's greedy seed) respects it too
        self.timed_out = False
        idx = np.arange(n, dtype=np.int64)
        # a two-level root small enough for the depth-2 kernel is scanned by it in chunks
        # (one numba call per iteration instead of a Python shape object per action)
        self.root = self._new_state(idx, self.D, hint=0.0, vt=None)
        self._touch(self.root)

    # -- helpers --------------------------------------------------------------------

    def _leaves(self, depth: int) -> int:
        return self.B[min(depth, len(self.B) - 1)]

    def _orders_of(self, st: _Data) -> np.ndarray:
        o = self._orders.get(st.key)
        if o is None:
            o = self._sort(st.idx)
            self._orders[st.key] = o
            if len(self._orders) > 8:
                self._orders.popitem(last=False)
        else:
            self._orders.move_to_end(st.key)
        return o

    def _sort(self, idx: np.ndarray) -> np.ndarray:
        """:func:`kernels.sort_orders` of the rows ``idx``, in parallel over the features
        for large states (at least :data:`_PARALLEL_SORT` feature-row pairs)."""
        if self.XT.shape[0] * idx.shape[0] >= _PARALLEL_SORT:
            return call_parallel(kernels.sort_orders_parallel, self.XT, idx)
        return kernels.sort_orders(self.XT, idx)

    def _touch(self, st: _Data) -> None:
        if st.key in self._cache:
            self._cache.move_to_end(st.key)
        else:
            self._cache[st.key] = st

    def _class_lb(self, counts: np.ndarray, d: int) -> float:
        """Admissible lower bound of a data state with class counts ``counts`` and ``d``
        levels left (the *class-count bound*): a subtree with ``L <= 2^d`` leaves predicts
        at most ``L`` classes, so it misclassifies at least the ``c - L`` smallest of the
        ``c`` classes present, and it has ``L - 1`` internal nodes of cost >= lambda + alpha:
        ``min_{1 <= L <= min(2^d, c)} (L - 1)(lambda + alpha) + S(c - L)`` with ``S(k)`` the
        sum of the ``k`` smallest non-zero counts.  ``L = 1`` is the leaf (``Err``) and
        ``L = 2`` is at least SPEC's ``min(Err, lambda + alpha)``, so the bound is never
        weaker than SPEC's; it is stronger with three classes or more."""
        cnt = sorted(v for v in counts.tolist() if v > 0)  # a few classes: plain Python
        c = len(cnt)
        if d <= 0 or c <= 1:
            return float(sum(cnt) - (cnt[-1] if c else 0))
        top = min(c, 1 << min(d, 30))
        csum = [0.0]  # csum[k] = S(k)
        for v in cnt:
            csum.append(csum[-1] + v)
        best = np.inf
        for leaves in range(1, top + 1):
            v = (leaves - 1) * self.lr + csum[c - leaves]
            if v < best:
                best = v
        return float(best)

    def _trivial(self, err: float, d: int) -> bool:
        """True when the child is a solved leaf (no state stored)."""
        return d == 0 or err <= self.lr + _EPS

    def _new_state(self, idx, d, hint, vt, force=False, orders=None, budget=np.inf):
        """Create a data state (not yet in the cache unless ``force``)."""
        counts = kernels.class_counts(self.y, idx, self.C)
        err = float(idx.shape[0] - counts.max())
        st = _Data(_key(idx, d), idx, d, self.D - d, counts, err)
        st.vt = err if vt is None else vt
        if self._trivial(err, d):
            st.lb = err
            st.solved = True
            st.kind = "d1"
            self.solved_count += 1
        elif d == 1:
            o = orders if orders is not None else self._sort(idx)
            val, j, bps = kernels.solve_depth1(
                self.XT, self.y, o, self.C, self._leaves(st.depth), self.Kmax, self.lam, self.alpha
            )
            st.kind = "d1"
            st.sol_j = int(j)
            st.sol_bps = bps
            st.lb = st.ub = float(val)
            st.solved = True
            self.solved_count += 1
            self.expanded += 1
        elif d == 2 and (
            self.candidate_scope == "root"
            or (KERNEL_DEPTH >= 2 and not force and self._d2_small(st))
        ):
            st.kind = "d2"
            st.lb = max(self._class_lb(counts, d), hint)
            self._solve_d2(st, budget, orders)
        else:
            st.lb = max(self._class_lb(counts, d), hint)
            self._seed(st, orders)
        return st

    def _seed(self, st: _Data, orders=None) -> None:
        """Seed an open (searched) data state's incumbent with its greedy shape tree
        (:func:`engine.literati.greedy.greedy_shape_tree`, built with the same candidates
        the search uses below the state, so it lies in the search space):
        ``ub = min(Err, greedy objective)``.  Skipped when seeding is off or the deadline
        has passed (the builder also stops at the deadline, leaving leaves).

        States solved by the depth-2 kernel are not seeded: its scan visits shapes in gini
        order, so its first chunk already holds the greedy root split with exact children
        (measured: seeding them cost ~3 % of the search time on breast_cancer D = 3 and
        changed neither the proof time nor the anytime UB)."""
        if not self.greedy_seed or time.perf_counter() >= self.deadline:
            return
        t0 = time.perf_counter()
        if orders is None:
            orders = self._orders.get(st.key)
        if orders is None:
            orders = self._sort(st.idx)
            self._orders[st.key] = orders  # the expansion of this state reuses them
            if len(self._orders) > 8:
                self._orders.popitem(last=False)
        g = greedy_shape_tree(
            self.XT,
            self.y,
            self.C,
            st.idx,
            st.d,
            st.depth,
            self.B,
            self.Kmax,
            self.lam,
            self.alpha,
            deadline=self.deadline,
            orders=orders,
        )
        self.greedy_calls += 1
        self.greedy_seconds += time.perf_counter() - t0
        if g.objective < st.err - _EPS:
            st.greedy = g
            st.gub = g.objective
            st.ub = g.objective
            if st.lb >= st.ub - _EPS:
                st.lb = st.ub
                st.solved = True
                self.solved_count += 1

    def _d2_small(self, st: _Data) -> bool:
        """True when the depth-2 kernel can list the state's shapes cheaply (at most
        :data:`_D2_MAX_SHAPES`, counted with every midpoint as a candidate when B_d is
        infinite); larger states are searched as graph nodes, which create refinements
        only when they are selected."""
        m = st.idx.shape[0]
        nc = (m - 1) if self._leaves(st.depth) <= 0 else self._leaves(st.depth) - 1
        count = 0
        c = 1
        for k in range(1, min(self.Kmax, max(nc, 0)) + 1):
            c = c * (nc - k + 1) // k
            count += c
        return self.X.shape[1] * count <= _D2_MAX_SHAPES

    def _solve_d2(self, st: _Data, budget: float, orders=None) -> None:
        """Advance the depth-2 kernel's scan of a two-level state by one bounded chunk
        (:data:`_D2_WORK`); exact once the scan completes with an
        infinite ``budget``; with a finite one it may end at a lower bound >= ``budget``
        (a later visit restarts it without budget)."""
        if budget <= st.lb + _EPS:
            return  # cannot matter on this path: keep the admissible bound, solve later
        sc = st.scan
        if sc is None or sc[6]:
            # (re)start the scan from the current incumbent so the state's ub never rises
            if st.sol is None:
                sc = [
                    0,
                    st.err,
                    np.inf,
                    np.full(3, -1, dtype=np.int64),
                    np.zeros(3, dtype=np.int64),
                    np.zeros((3, self.Kmax)),
                    False,
                ]
            else:
                sc = [0, st.ub, np.inf, st.sol[0].copy(), st.sol[1].copy(), st.sol[2].copy(), False]
            st.scan = sc
        o = orders if orders is not None else self._orders_of(st)
        if self.candidate_scope == "root":
            self._count_d2(st, sc, o)
            return
        evals = max(4, _D2_WORK // max(self.X.shape[1] * st.idx.shape[0], 1))
        best, lb_skip, nxt, lb_rest, n_shapes, _ = call_parallel(
            depth2_kernels.solve_depth2,
            self.XT,
            self.y,
            o,
            self.C,
            self._leaves(st.depth),
            self._leaves(st.depth + 1),
            self.Kmax,
            self.lam,
            self.alpha,
            float(budget),
            int(sc[0]),
            int(evals),
            float(sc[1]),
            float(sc[2]),
            sc[3],
            sc[4],
            sc[5],
            depth2_kernels._D2_PAR_MIN,
        )
        sc[0], sc[1], sc[2] = nxt, best, lb_skip
        sc[6] = nxt >= n_shapes
        self.expanded += 1
        if best < st.ub - _EPS:
            st.ub = float(best)
        st.sol = (sc[3].copy(), sc[4].copy(), sc[5].copy())
        st.lb = max(st.lb, min(best, lb_skip, lb_rest))
        if st.lb >= st.ub - _EPS:
            st.lb = st.ub
            st.solved = True
            st.scan = None
            self.solved_count += 1

    def _count_d2(self, st: _Data, sc: list, orders) -> None:
        """Solve a two-level state exactly by the counting solver
        (:func:`engine.literati._counting_kernels.solve_depth2_counting`; every state uses
        the root's candidates): one call, the state is solved when it returns."""
        best, _ = call_parallel(
            counting_kernels.solve_depth2_counting,
            self.XT,
            self.y,
            orders,
            self.C,
            self._leaves(st.depth),
            self.Kmax,
            self.lam,
            self.alpha,
            float(sc[1]),
            sc[3],
            sc[4],
            sc[5],
        )
        self.expanded += 1
        st.ub = min(st.ub, float(best))
        st.sol = (sc[3].copy(), sc[4].copy(), sc[5].copy())
        st.lb = st.ub
        st.solved = True
        st.scan = None
        self.solved_count += 1

    # -- expansion ------------------------------------------------------------------

    def _expand_data(self, st: _Data) -> None:
        """Expand a data state: candidate breakpoints, one shape state per ``(j, u)``
        with its children's leaf errors (so the state's bounds and incumbent are updated
        at once), and V~ of the most promising shapes.  The shapes are ranked by the
        weighted gini impurity of their two children; V~ of the others is computed in
        later visits (:meth:`_more_vt`), a chunk per visit, so one expansion never holds
        the search for long."""
        o = self._orders_of(st)
        off, vals, cnt = kernels.state_candidates(
            self.XT, self.y, o, self.C, self._leaves(st.depth)
        )
        st.cand_off, st.cand_val, st.bin_counts = off, vals, cnt
        shapes = []
        proxy = []
        p = self.X.shape[1]
        for j in range(p):
            nc = int(off[j + 1] - off[j])
            for i in range(nc):
                h = self._make_shape(st, j, (i,))
                shapes.append(h)
                proxy.append(h.vt)
        order = np.argsort(np.asarray(proxy), kind="stable")
        st.shapes = shapes
        self._table(st)
        st.pending = [shapes[i] for i in order]
        st.vt_done = 0
        st.kind = "expanded"
        self.expanded += 1
        self._more_vt(st)

    def _table(self, st: _Data) -> None:
        """(Re)build the action table of a data state: numpy arrays over its split
        actions (lower/upper bounds, V~, selectable, alive) so backup and selection are
        vectorised."""
        n = len(st.shapes)
        st.a_lb = np.empty(n)
        st.a_ub = np.empty(n)
        st.a_vt = np.empty(n)
        st.a_sel = np.zeros(n, dtype=bool)
        st.a_alive = np.ones(n, dtype=bool)
        for i, h in enumerate(st.shapes):
            h.pos = i
            self._sync(h)

    @staticmethod
    def _sync(h: _Shape) -> None:
        """Copy a split action's values into its data state's table."""
        i = h.pos
        if i < 0:
            return
        st = h.state
        if st.a_lb is None or st.shapes is None or i >= st.a_lb.shape[0] or st.shapes[i] is not h:
            return
        st.a_lb[i] = h.lb
        st.a_ub[i] = h.ub
        st.a_vt[i] = np.inf if h.vts is None else h.vt
        st.a_sel[i] = not (h.solved or h.dead) and h.vts is not None

    def _more_vt(self, st: _Data) -> None:
        """Compute V~ of the next chunk of a data state's shapes (in gini order)."""
        if st.pending is None:
            return
        if time.perf_counter() >= self.deadline:
            self.timed_out = True
            return
        size = self._chunk(st)
        chunk = st.pending[st.vt_done : st.vt_done + size]
        chunk = [h for h in chunk if not (h.dead or h.solved)]
        if chunk:
            self._lookahead(st, self._orders_of(st), chunk)
            for h in chunk:
                self._sync(h)
        st.vt_done += size
        if st.vt_done >= len(st.pending):
            st.pending = None

    def _chunk(self, st: _Data) -> int:
        """Shapes per lookahead call (:data:`_LA_WORK`)."""
        work = self.X.shape[1] * st.idx.shape[0] * max(st.d - 1, 1)
        return int(min(max(_LA_WORK // max(work, 1), 1), 256))

    def _lookahead(self, st: _Data, o: np.ndarray, shapes: list) -> None:
        feats = np.array([h.j for h in shapes], dtype=np.int64)
        off = np.zeros(len(shapes) + 1, dtype=np.int64)
        off[1:] = np.cumsum([len(h.k) for h in shapes])
        vals = np.concatenate([h.bpv for h in shapes]) if shapes else np.empty(0)
        out = kernels.lookahead_shapes(
            self.XT,
            self.y,
            o,
            self.C,
            st.d - 1,
            self.lr,
            feats,
            off,
            np.ascontiguousarray(vals, dtype=np.float64),
            self._mark,
            self._side,
        )
        for h, (a, b) in zip(shapes, out, strict=True):
            h.vts = (float(a), float(b))
            h.vt = h.vts[0] + h.vts[1]

    def _make_shape(self, st: _Data, j: int, k: tuple) -> _Shape:
        off = st.cand_off
        cand = st.cand_val[off[j] : off[j + 1]]
        nc = cand.shape[0]
        cnt = st.bin_counts[off[j] + j : off[j + 1] + j + 1]
        side = np.zeros(nc + 1, dtype=np.int64)
        for i in k:
            side[i + 1 :] ^= 1
        left = side == 0
        cl = cnt[left].sum(axis=0)
        cr = cnt[~left].sum(axis=0)
        err = (float(cl.sum() - cl.max()), float(cr.sum() - cr.max()))
        refinable = len(k) < self.Kmax and k[-1] < nc - 1
        h = _Shape(st, j, k, cand[list(k)].copy(), err, refinable)
        # class-count bounds of the two children (exact leaf errors when trivial)
        h.hint = [self._class_lb(cl, st.d - 1), self._class_lb(cr, st.d - 1)]
        h.lb = self._shape_base_lb(h)
        # weighted gini of the children: ranks shapes until V~ is known (then V~)
        nl, nr = cl.sum(), cr.sum()
        h.vt = (nl - (cl @ cl) / nl if nl else 0.0) + (nr - (cr @ cr) / nr if nr else 0.0)
        if h.lb >= h.ub - _EPS:
            h.lb = h.ub
            h.solved = True
        return h

    # -- similarity bound (every midpoint a candidate) ---------------------------------------

    def _bins_of(self, st: _Data, j: int):
        """``(rows per candidate bin, its prefix sums)`` of feature ``j`` at state ``st``."""
        ent = self._sim.get((st.key, j))
        if ent is None:
            off = st.cand_off
            sizes = st.bin_counts[off[j] + j : off[j + 1] + j + 1].sum(axis=1)
            pre = np.concatenate(([0], np.cumsum(sizes)))
            ent = self._sim[(st.key, j)] = [sizes, pre, []]
            if len(self._sim) > 4 * self.cache_size:
                self._sim.pop(next(iter(self._sim)))
        return ent

    @staticmethod
    def _left_bins(k: tuple, nb: int) -> np.ndarray:
        side = np.zeros(nb, dtype=np.int64)
        for i in k:
            side[i + 1 :] ^= 1
        return side == 0

    def _similarity_bounds(self, h: _Shape) -> list:
        """Lower bounds of the commit's two children from the children of shapes on the
        same feature of the same state expanded earlier (MurTree's similarity bound):
        with every midpoint a candidate, the optimum of a remaining depth d is monotone in
        the row set and drops by at most one per removed row, so for a child D and an
        earlier child N on the same side, ``V(D) >= V(D & N) >= LB(N) - |N minus D|``;
        ``|N minus D|`` is a sum of candidate-bin sizes (for one breakpoint each, the rows
        between the two breakpoints).  Not valid for data-dependent candidates (B_d finite),
        where a smaller row set may get better candidates: used only with every midpoint."""
        st = h.state
        sizes, pre, items = self._bins_of(st, h.j)
        out = [0.0, 0.0]
        if not items:
            return out
        one = len(h.k) == 1
        i = h.k[0]
        left = None
        for k_n, keys_n, err_n in items:
            for s in (0, 1):
                key = keys_n[s]
                if key is None:
                    lb_n = err_n[s]  # a solved leaf child: its value is its leaf error
                else:
                    child = self._cache.get(key)
                    if child is None:
                        continue
                    lb_n = child.lb
                if lb_n <= out[s]:
                    continue
                if one and len(k_n) == 1:
                    i_n = k_n[0]
                    if s == 0:  # left = bins 0..i: N minus D = bins i+1..i_n
                        diff = pre[i_n + 1] - pre[i + 1] if i_n > i else 0
                    else:  # right = bins i+1..: N minus D = bins i_n+1..i
                        diff = pre[i + 1] - pre[i_n + 1] if i_n < i else 0
                else:
                    if left is None:
                        left = self._left_bins(h.k, sizes.shape[0])
                    left_n = self._left_bins(k_n, sizes.shape[0])
                    in_n, in_d = (left_n, left) if s == 0 else (~left_n, ~left)
                    diff = sizes[in_n & ~in_d].sum()
                v = lb_n - float(diff)
                if v > out[s]:
                    out[s] = v
        return out

    def _remember_children(self, h: _Shape) -> None:
        items = self._bins_of(h.state, h.j)[2]
        items.append((h.k, tuple(h.keys), h.err))
        if len(items) > _SIM_ITEMS:
            del items[0]

    def _child_base_lb(self, err: float, d: int) -> float:
        return err if self._trivial(err, d) else min(err, self.lr)

    def _shape_base_lb(self, h: _Shape) -> float:
        d = h.state.d - 1
        commit = max(self._child_base_lb(h.err[0], d), h.hint[0]) + max(
            self._child_base_lb(h.err[1], d), h.hint[1]
        )
        return min(self.alpha, commit) if h.refinable else commit

    def _expand_shape(self, h: _Shape, budget: float = np.inf) -> None:
        """Create the commit's children (solved at once when one or two levels are left;
        ``budget``: the value above which this shape cannot improve any incumbent on the
        selection path) and the refinements with their V~."""
        st = h.state
        side = self._side
        kernels.route_left(self.XT, st.idx, h.j, h.bpv, side)
        mask = side[st.idx]
        h.child_idx = (st.idx[mask], st.idx[~mask])
        d = st.d - 1
        keys = [None, None]
        orders = None
        budget = min(budget, h.ub)
        if self._allmid and d >= 1:
            sim = self._similarity_bounds(h)
            h.hint = [max(h.hint[0], sim[0]), max(h.hint[1], sim[1])]
        lbs = [max(self._child_base_lb(h.err[s], d), h.hint[s]) for s in (0, 1)]
        for s in (0, 1) if h.err[0] >= h.err[1] else (1, 0):
            if self._trivial(h.err[s], d):
                continue
            idx = h.child_idx[s]
            key = _key(idx, d)
            keys[s] = key
            child = self._cache.get(key)
            if child is None:
                if d <= KERNEL_DEPTH and orders is None:
                    o = self._orders_of(st)
                    orders = kernels.split_orders(o, side, int(mask.sum()))
                child = self._new_state(
                    idx,
                    d,
                    hint=h.hint[s],
                    vt=None if h.vts is None else h.vts[s],
                    orders=None if orders is None else orders[s],
                    budget=budget - lbs[1 - s],
                )
                self._cache[key] = child
            else:
                self._cache.move_to_end(key)
            lbs[s] = max(lbs[s], child.lb)
        h.keys = keys
        if self._allmid and d >= 1:
            self._remember_children(h)
        # refinements
        refines = []
        if h.refinable:
            nc = int(st.cand_off[h.j + 1] - st.cand_off[h.j])
            for i in range(h.k[-1] + 1, nc):
                refines.append(self._make_shape(st, h.j, h.k + (i,)))
            o = self._orders_of(st)
            a = 0
            while a < len(refines):
                if time.perf_counter() >= self.deadline:
                    self.timed_out = True
                    break
                size = self._chunk(st)
                self._lookahead(st, o, refines[a : a + size])
                a += size
        h.refines = refines
        h.expanded = True
        self.expanded += 1

    # -- child access -----------------------------------------------------------------

    def _child(self, h: _Shape, s: int):
        """(lb, ub, solved, state or None) of side ``s`` of an expanded shape's commit."""
        d = h.state.d - 1
        err = h.err[s]
        if h.keys is None or h.keys[s] is None:
            return err, err, True, None
        st = self._cache.get(h.keys[s])
        if st is None:
            lb = max(self._child_base_lb(err, d), h.hint[s])
            return lb, err, False, None
        if h.hint[s] > st.lb:
            st.lb = h.hint[s]
            if st.lb >= st.ub - _EPS and not st.solved:
                st.lb = st.ub
                st.solved = True
                self.solved_count += 1
        h.hint[s] = st.lb
        return st.lb, st.ub, st.solved, st

    def _get_child(self, h: _Shape, s: int) -> _Data:
        st = self._cache.get(h.keys[s])
        if st is None:  # evicted earlier: recreate with the bound proved before
            st = self._new_state(h.child_idx[s], h.state.d - 1, hint=h.hint[s], vt=h.vts[s])
            self._cache[h.keys[s]] = st
        else:
            self._cache.move_to_end(h.keys[s])
        return st

    # -- backup -----------------------------------------------------------------------

    def _backup_shape(self, h: _Shape) -> None:
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
            if q < ub - _EPS:
                ub = q
                best = r
            lbm = min(lbm, self.alpha + r.lb)
        h.ub = ub
        h.best = best
        h.lb = max(h.lb, min(lbm, ub))
        keep = []
        for r in h.refines:
            if r is not best and self.alpha + r.lb >= ub - _EPS:
                r.dead = True
                self.pruned += 1
            else:
                keep.append(r)
        h.refines = keep
        if best is not None and not h.commit_pruned and clb >= ub - _EPS:
            h.commit_pruned = True
            h.keys = None
            h.child_idx = None
            self.pruned += 1
        if not h.solved and h.lb >= h.ub - _EPS:
            h.lb = h.ub
            h.solved = True
            self.solved_count += 1
        self._sync(h)

    def _backup_data(self, st: _Data) -> None:
        if st.kind != "expanded" or st.solved:
            return
        ub = st.base_ub
        best = None
        bi = -1
        lbm = st.base_ub
        if st.a_ub.shape[0]:
            q_ub = self.lr + st.a_ub
            i = int(np.argmin(q_ub))
            if q_ub[i] < ub - _EPS:
                ub = float(q_ub[i])
                best = st.shapes[i]
                bi = i
            lbm = min(lbm, float(np.min(self.lr + st.a_lb)))
        st.ub = ub
        st.best = best
        st.lb = max(st.lb, min(lbm, ub))
        if st.a_ub.shape[0]:
            cond = st.a_alive & (self.lr + st.a_lb >= ub - _EPS)
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
        if st.lb >= st.ub - _EPS:
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
        path = []
        node = root
        is_data = True
        budget = root.ub  # a subtree is useful only while its value stays below this
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
                if st.kind == "d2":  # scan unfinished, or stopped at a budget: go on
                    fresh = st.scan is None or st.scan[6] or budget <= st.lb + _EPS
                    self._solve_d2(st, np.inf if fresh else budget)
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
                if isinstance(choice, _Shape):
                    node = choice
                    budget -= self.alpha
                    continue
                budget -= self._child(h, 1 - choice)[0]
                child = self._get_child(h, choice)
                node = child
                is_data = True
        self._path = path
        for obj in reversed(path):
            if isinstance(obj, _Data):
                self._backup_data(obj)
            else:
                self._backup_shape(obj)
        if self.evictions:
            self._repair(root)
        self.iterations += 1
        if len(self._cache) > self.cache_size:
            self._evict(path)
        return True

    def _repair(self, st: _Data) -> None:
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
            broken = hf.ub < real - _EPS
            if not broken:
                return
            for h in reversed(chain):
                h.solved = False
                self._backup_shape(h)
            st.solved = False
            self._backup_data(st)

    def _select_shape(self, st: _Data, budget: float = np.inf):
        """The open split action with the least ``max(V~, V)`` among those whose lower
        bound ``lambda + alpha + V`` is below ``budget`` (the value above which nothing under
        this state can improve the root's incumbent on this path); when there is none (the
        bounds above are stale), the least over all open actions.  None if none is open."""
        if not st.a_sel.any():
            return None
        q = np.where(st.a_sel, np.maximum(st.a_vt, st.a_lb), np.inf)
        useful = st.a_sel & (self.lr + st.a_lb < budget - _EPS)
        if useful.any():
            q = np.where(useful, q, np.inf)
        return st.shapes[int(np.argmin(q))]

    def _select_action(self, h: _Shape, budget: float = np.inf):
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
                if not (solL and solR) and (not use_budget or lbL + lbR < budget - _EPS):
                    bq = max(h.vts[0], lbL) + max(h.vts[1], lbR)
                    sides = [s for s in (h.rr, 1 - h.rr) if not (solL if s == 0 else solR)]
                    best = sides[0]
            for r in h.refines:
                if r.solved or r.vts is None:
                    continue
                if use_budget and self.alpha + r.lb >= budget - _EPS:
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
        protected.update(o.key for o in path if isinstance(o, _Data))
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
        dicts (idx, feature, bps, children, lb, ub) in depth-first order (root 0)."""
        nodes = []

        def leaf(idx, lb=None, ub=None):
            nodes.append(
                {"idx": idx, "feature": -2, "bps": None, "children": None, "lb": lb, "ub": ub}
            )
            return len(nodes) - 1

        def internal(idx, j, bps, lb, ub):
            nodes.append(
                {
                    "idx": idx,
                    "feature": int(j),
                    "bps": np.asarray(bps, float),
                    "children": None,
                    "lb": lb,
                    "ub": ub,
                }
            )
            return len(nodes) - 1

        def split(idx, j, bps):
            left = kernels.shape_route_kernel(
                np.ascontiguousarray(self.X[idx, j]), np.ascontiguousarray(bps, dtype=np.float64)
            )
            return idx[left], idx[~left]

        def walk(st: _Data | None, idx):
            if st is None:
                return leaf(idx)
            if st.kind == "d1":
                if st.sol_j < 0:
                    return leaf(idx, st.lb, st.ub)
                me = internal(idx, st.sol_j, st.sol_bps, st.lb, st.ub)
                a, b = split(idx, st.sol_j, st.sol_bps)
                nodes[me]["children"] = (leaf(a), leaf(b))
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
                    if feats[s] < 0:
                        kids.append(leaf(cidx))
                    else:
                        us = bps[s, : ks[s]]
                        c = internal(cidx, feats[s], us, None, None)
                        a, b = split(cidx, feats[s], us)
                        nodes[c]["children"] = (leaf(a), leaf(b))
                        kids.append(c)
                nodes[me]["children"] = tuple(kids)
                return me
            if st.kind != "expanded" or st.best is None:
                if st.greedy is not None and st.gub < st.err - _EPS:
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
