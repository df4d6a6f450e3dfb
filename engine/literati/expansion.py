"""Creating and expanding the states of Literati's AO* search (:mod:`engine.literati.search`).

:class:`StateExpansion` is the part of :class:`engine.literati.search.AOStarSearch` that
calls the numba kernels: it creates data states (solving those with one or two levels left
by the exact depth-1 / depth-2 kernels, seeding the others' incumbents with a greedy shape
tree), lists a state's shape actions with their bounds (candidate breakpoints, class
counts, the lookahead CART's ``V~`` in chunks), the similarity bound when every midpoint is
a candidate, and a shape's children.  The search loop (selection, backup, pruning,
extraction) is in :mod:`engine.literati.search`.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from engine._numba import call_parallel
from engine.literati import _counting_kernels as counting_kernels
from engine.literati import _depth2_kernels as depth2_kernels
from engine.literati import _kernels as kernels
from engine.literati.greedy import GreedyTree, greedy_shape_tree
from engine.literati.states import EPS, DataState, ShapeState, state_key

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

#: Work of one depth-3 counting call in (row x feature x feature) units of triple-histogram
#: counting: ``max(threads, _D3_WORK // (m p^2))`` root features per call.
_D3_WORK = 20_000_000
#: Three-level states of ``candidate_scope='root'`` are solved by the depth-3 counting
#: kernel (False: searched as graph nodes over depth-2 children, the path the tests compare
#: it with).
D3_COUNTING = True
#: Largest triple histogram (bytes, one per thread) of the depth-3 counting kernel; above
#: it, three-level states are searched as graph nodes over depth-2 children.
_D3_BYTES = 256 << 20
#: Largest ``floors`` array (columns, :func:`engine.literati._counting_kernels.floor_width`)
#: a three-level state keeps between depth-3 calls and hands to its siblings.
_FLOOR_KEEP = 256

#: Earlier shapes per (state, feature) whose children bound a new shape's children
#: (similarity bound, every midpoint a candidate).
_SIM_ITEMS = 16
#: Work of one lookahead kernel call (V~ of a chunk of shapes) in (feature x sample x
#: level) units: ``max(1, _LA_WORK // (p * m * levels))`` shapes per call.  The clock is
#: checked between calls.
_LA_WORK = 2_000_000


class StateExpansion:
    """State creation and expansion of :class:`engine.literati.search.AOStarSearch` (a
    mixin: it uses the search's data, cache and counters set in its ``__init__``)."""

    # -- helpers --------------------------------------------------------------------

    def _leaves(self, depth: int) -> int:
        return self.B[min(depth, len(self.B) - 1)]

    def _orders_of(self, st: DataState) -> np.ndarray:
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

    def _touch(self, st: DataState) -> None:
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
        return d == 0 or err <= self.lr + EPS

    def _new_state(self, idx, d, hint, vt, force=False, orders=None, budget=np.inf, floors=None):
        """Create a data state (not yet in the cache unless ``force``); ``floors``: the
        depth-3 kernel's subset bounds known for it (:meth:`_sibling_floors`)."""
        counts = kernels.class_counts(self.y, idx, self.C)
        err = float(idx.shape[0] - counts.max())
        st = DataState(state_key(idx, d), idx, d, self.D - d, counts, err)
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
        elif d == 3 and self._d3_fits():
            st.kind = "d3"
            st.lb = max(self._class_lb(counts, d), hint)
            st.floors = floors
            self._solve_d3(st, budget)
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

    def _seed(self, st: DataState, orders=None) -> None:
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
        if g.objective < st.err - EPS:
            st.greedy = g
            st.gub = g.objective
            st.ub = g.objective
            if st.lb >= st.ub - EPS:
                st.lb = st.ub
                st.solved = True
                self.solved_count += 1

    def _d2_small(self, st: DataState) -> bool:
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

    def _solve_d2(self, st: DataState, budget: float, orders=None) -> None:
        """Advance the depth-2 kernel's scan of a two-level state by one bounded chunk
        (:data:`_D2_WORK`); exact once the scan completes with an
        infinite ``budget``; with a finite one it may end at a lower bound >= ``budget``
        (a later visit restarts it without budget)."""
        if st.kind == "d3":
            self._solve_d3(st, budget)
            return
        if budget <= st.lb + EPS:
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
        if self.candidate_scope == "root":
            self._count_d2(st, sc)
            return
        o = orders if orders is not None else self._orders_of(st)
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
        if best < st.ub - EPS:
            st.ub = float(best)
        st.sol = (sc[3].copy(), sc[4].copy(), sc[5].copy())
        st.lb = max(st.lb, min(best, lb_skip, lb_rest))
        if st.lb >= st.ub - EPS:
            st.lb = st.ub
            st.solved = True
            st.scan = None
            self.solved_count += 1

    def _root_candidates(self, idx: np.ndarray) -> None:
        """``candidate_scope='root'``: the root's candidates (B_0), shared by every state,
        and every row's bin of them (:func:`engine.literati._counting_kernels.bin_rows`).
        The greedy seed is off: it picks each state's own candidates, outside this space."""
        orders = self._sort(idx)
        self._orders[state_key(idx, self.D)] = orders  # the root's expansion reuses them
        off, vals, _ = kernels.state_candidates(self.XT, self.y, orders, self.C, self._leaves(0))
        self._root_off, self._root_vals = off, vals
        self._bins = call_parallel(counting_kernels.bin_rows, self.XT, off, vals)
        self.greedy_seed = False

    def _root_state_candidates(self, idx: np.ndarray):
        """``candidate_scope='root'``: the candidates of a state expanded as a graph node
        are the root's, with the class counts of the state's rows ``idx`` per bin of them
        (the layout of :func:`engine.literati._kernels.state_candidates`: ``(off, vals,
        counts)``, bin ``b`` of feature ``j`` in row ``off[j] + j + b`` of int64 counts
        ``(len(vals) + p, C)``), read from the rows' bins of :meth:`_root_candidates`."""
        off, vals = self._root_off, self._root_vals
        p = self.X.shape[1]
        counts = np.zeros((vals.shape[0] + p, self.C), dtype=np.int64)
        codes = self.y[idx]
        for j in range(p):
            nb = int(off[j + 1] - off[j]) + 1
            cell = self._bins[idx, j].astype(np.int64) * self.C + codes
            per_bin = np.bincount(cell, minlength=nb * self.C).reshape(nb, self.C)
            counts[off[j] + j : off[j] + j + nb] = per_bin
        return off, vals, counts

    def _count_d2(self, st: DataState, sc: list) -> None:
        """Solve a two-level state exactly by the counting solver
        (:func:`engine.literati._counting_kernels.solve_depth2_counting`; every state uses
        the root's candidates): one call, the state is solved when it returns, unless the
        call was interrupted (time limit or Stop): then its tree is kept as the state's
        incumbent and a later visit calls it again."""
        with self.kernel_stop.watch(self.deadline) as guard:
            called = guard.call(
                counting_kernels.solve_depth2_counting,
                self._bins,
                self.y,
                st.idx,
                self._root_off,
                self._root_vals,
                self.C,
                self.Kmax,
                self.lam,
                self.alpha,
                float(sc[1]),
                sc[3],
                sc[4],
                sc[5],
                guard.flag,
            )
        if guard.skipped:  # its time limit or Stop came while another search held the cores
            self.timed_out = True
            return
        best = called[0]
        self.expanded += 1
        st.ub = min(st.ub, float(best))
        st.sol = (sc[3].copy(), sc[4].copy(), sc[5].copy())
        if guard.interrupted:  # a tree of its value, not the optimum: not solved
            sc[1] = min(sc[1], float(best))
            self.timed_out = True
            return
        st.lb = st.ub
        st.solved = True
        st.scan = None
        self.solved_count += 1

    def _d3_fits(self) -> bool:
        """True when three-level states are solved by the depth-3 counting kernel
        (``candidate_scope='root'`` and a triple histogram of at most :data:`_D3_BYTES`
        per thread); otherwise they are searched as graph nodes over depth-2 children."""
        if self.candidate_scope != "root" or not D3_COUNTING:
            return False
        off = self._root_off
        nb = int(np.max(np.diff(off))) + 1 if off.shape[0] > 1 else 1
        p = self.X.shape[1]
        return (nb + 1) * (p * nb) ** 2 * self.C * 4 <= _D3_BYTES

    def _solve_d3(self, st: DataState, budget: float) -> None:
        """Advance the depth-3 counting scan of a three-level state by one chunk of root
        features (:func:`engine.literati._counting_kernels.solve_depth3_counting`, about
        :data:`_D3_WORK` units of work per call).  The scan starts from the state's
        depth-2 optimum (a tree of the space: the incumbent, kept as a
        :class:`~engine.literati.greedy.GreedyTree` that :meth:`extract` routes) and, when
        created below a shape with a finite ``budget``, proves only that nothing below
        ``budget`` exists (the state's lower bound becomes ``budget``; a later visit scans
        again without budget).  The state is solved when a scan without budget ends.  No
        chunk starts after the deadline (``timed_out`` is set), and a chunk running at the
        deadline (or when the search is stopped) is interrupted
        (:class:`engine.literati.interrupt.KernelStop`): its trees are kept as incumbents,
        its unfinished features are scanned again by a later call."""
        if st.solved:
            return
        sc = st.scan
        if sc is None or sc[6]:
            if st.sol is None:  # the depth-2 optimum seeds the incumbent
                self._d3_seed(st)
                if st.solved:
                    return
            if budget <= st.lb + EPS:
                # cannot matter on this path (its bound, e.g. a subset bound, reaches the
                # budget): keep the bound, scan again later
                return
            # [next feature, -, scan budget, -, -, -, done]
            sc = [0, None, float(budget), None, None, None, False]
            st.scan = sc
        if time.perf_counter() >= self.deadline:
            self.timed_out = True  # the incumbent stands; a later deadline resumes the scan
            return
        p = self.X.shape[1]
        m = st.idx.shape[0]
        threads = max(1, numba.get_num_threads())
        per = max(1, _D3_WORK // max(m * p * p, 1))
        q = min(p - sc[0], max(threads, per - per % threads))
        features = np.arange(sc[0], sc[0] + q, dtype=np.int64)
        start = min(st.ub, sc[2])
        results = np.full((q, counting_kernels.D3_RESULT), np.inf)
        res_bps = np.zeros((q, 7, self.Kmax), dtype=np.int64)
        if st.floors is None:
            width = counting_kernels.floor_width(self._root_off)
            floors = np.full((p, width), -np.inf)
            if width <= _FLOOR_KEEP:
                st.floors = floors  # kept: later calls and the state's siblings use it
        else:
            floors = st.floors
        with self.kernel_stop.watch(self.deadline) as guard:
            guard.call(
                counting_kernels.solve_depth3_counting,
                self._bins,
                self.y,
                st.idx,
                self._root_off,
                self.C,
                self.Kmax,
                self.lam,
                self.alpha,
                float(start),
                features,
                results,
                res_bps,
                floors[sc[0] : sc[0] + q],
                guard.flag,
            )
        if guard.skipped:  # not called: the time limit or Stop came while waiting
            self.timed_out = True
            return
        interrupted = guard.interrupted
        self.expanded += 1
        t = int(np.argmin(results[:, 0]))  # lowest feature first on ties
        value = float(results[t, 0])
        if value < st.ub - EPS:
            feats = results[t, 1::2].astype(np.int64)
            ks = results[t, 2::2].astype(np.int64)
            bps = [
                self._root_vals[self._root_off[f] + res_bps[t, i, : ks[i]]] if f >= 0 else None
                for i, f in enumerate(feats)
            ]
            self._d3_incumbent(st, feats, ks, bps, value)
        if interrupted:
            # cut short at the time limit or by Stop: its trees (above) and floors are
            # valid, but an empty row no longer means "nothing below the budget", so the
            # scan does not advance (a later call redoes these features)
            self.timed_out = True
            return
        sc[0] += q
        if sc[0] >= p:
            sc[6] = True
            if sc[2] >= st.ub - EPS:  # an exact scan: the incumbent is the optimum
                st.lb = st.ub
            else:  # nothing below the scan's budget
                st.lb = max(st.lb, sc[2])
            if st.lb >= st.ub - EPS:
                st.lb = st.ub
                st.solved = True
                st.scan = None
                self.solved_count += 1

    def _d3_seed(self, st: DataState) -> None:
        """The depth-2 optimum of a three-level state (the counting solver): its first
        incumbent."""
        feats = np.full(3, -1, dtype=np.int64)
        ks = np.zeros(3, dtype=np.int64)
        bps = np.zeros((3, self.Kmax))
        # interrupted by Stop only, not at the deadline: the seed is the incumbent a time
        # limit leaves (interrupted, it would be a leaf); Stop keeps whatever it has
        with self.kernel_stop.watch(np.inf) as guard:
            called = guard.call(
                counting_kernels.solve_depth2_counting,
                self._bins,
                self.y,
                st.idx,
                self._root_off,
                self._root_vals,
                self.C,
                self.Kmax,
                self.lam,
                self.alpha,
                float(st.err),
                feats,
                ks,
                bps,
                guard.flag,
            )
        if guard.skipped:  # Stop came while another search held the cores: not seeded
            self.timed_out = True
            return
        best = called[0]
        st.sol = True  # seeded
        if best < st.ub - EPS:
            heap = np.full(7, -1, dtype=np.int64)
            heap_k = np.zeros(7, dtype=np.int64)
            heap[:3], heap_k[:3] = feats, ks
            self._d3_incumbent(
                st, heap, heap_k, [bps[i, : ks[i]] if i < 3 else None for i in range(7)], best
            )
        if st.lb >= st.ub - EPS:
            st.lb = st.ub
            st.solved = True
            self.solved_count += 1

    @staticmethod
    def _d3_incumbent(st: DataState, feats, ks, bps, value: float) -> None:
        """Make the depth-3 tree in heap order (``feats[i]`` -1 = leaf, ``bps[i]`` the
        breakpoint values of node ``i``) the state's incumbent (``st.greedy``, which
        :meth:`extract` routes for a state that is not an expanded graph node)."""
        tree = GreedyTree()

        def add(i):
            me = tree.n_nodes
            f = int(feats[i]) if i < len(feats) else -1
            leaf = f < 0
            tree.feature.append(-2 if leaf else f)
            tree.bps.append(None if leaf else np.ascontiguousarray(bps[i], dtype=np.float64))
            tree.children.append(None)
            tree.err.append(0.0)
            tree.n.append(0)
            if not leaf:
                a = add(2 * i + 1)
                b = add(2 * i + 2)
                tree.children[me] = (a, b)
            return me

        add(0)
        tree.objective = float(value)
        st.greedy = tree
        st.gub = float(value)
        st.ub = float(value)

    # -- expansion ------------------------------------------------------------------

    def _expand_data(self, st: DataState) -> None:
        """Expand a data state: candidate breakpoints, one shape state per ``(j, u)``
        with its children's leaf errors (so the state's bounds and incumbent are updated
        at once), and V~ of the most promising shapes.  The shapes are ranked by the
        weighted gini impurity of their two children; V~ of the others is computed in
        later visits (:meth:`_more_vt`), a chunk per visit, so one expansion never holds
        the search for long."""
        if self.candidate_scope == "root":
            off, vals, cnt = self._root_state_candidates(st.idx)
        else:
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

    def _table(self, st: DataState) -> None:
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
    def _sync(h: ShapeState) -> None:
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

    def _more_vt(self, st: DataState) -> None:
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

    def _chunk(self, st: DataState) -> int:
        """Shapes per lookahead call (:data:`_LA_WORK`)."""
        work = self.X.shape[1] * st.idx.shape[0] * max(st.d - 1, 1)
        return int(min(max(_LA_WORK // max(work, 1), 1), 256))

    def _lookahead(self, st: DataState, o: np.ndarray, shapes: list) -> None:
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

    def _make_shape(self, st: DataState, j: int, k: tuple) -> ShapeState:
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
        h = ShapeState(st, j, k, cand[list(k)].copy(), err, refinable)
        # class-count bounds of the two children (exact leaf errors when trivial)
        h.hint = [self._class_lb(cl, st.d - 1), self._class_lb(cr, st.d - 1)]
        h.lb = self._shape_base_lb(h)
        # weighted gini of the children: ranks shapes until V~ is known (then V~)
        nl, nr = cl.sum(), cr.sum()
        h.vt = (nl - (cl @ cl) / nl if nl else 0.0) + (nr - (cr @ cr) / nr if nr else 0.0)
        if h.lb >= h.ub - EPS:
            h.lb = h.ub
            h.solved = True
        return h

    # -- similarity bound (every midpoint a candidate) ---------------------------------------

    def _bins_of(self, st: DataState, j: int):
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

    def _similarity_bounds(self, h: ShapeState) -> list:
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

    def _remember_children(self, h: ShapeState) -> None:
        items = self._bins_of(h.state, h.j)[2]
        items.append((h.k, tuple(h.keys), h.err))
        if len(items) > _SIM_ITEMS:
            del items[0]

    def _bin_mask(self, idx: np.ndarray, j: int) -> int:
        """The root bins of feature ``j`` that the rows ``idx`` fall in, as a bit set
        (``candidate_scope='root'``)."""
        present = np.unique(self._bins[idx, j])
        return sum(1 << int(b) for b in present)

    def _subset_bound(self, st: DataState, j: int, mask: int) -> float:
        """The *subset bound* of a child of ``st`` by a shape on feature ``j`` whose rows
        fall in the root bins ``mask`` of ``j`` (``candidate_scope='root'``): the largest
        lower bound of a cached child of ``st`` by a shape on ``j`` (any K) whose bins are a
        subset of ``mask``.  Such a child's rows are a subset of this child's, and a tree's
        errors only grow with its rows, so its optimum is at most this one's
        (``-inf`` when there is none)."""
        best = -np.inf
        for other, key in self._subsets.get((st.key, j), ()):
            if other & ~mask:
                continue
            child = self._cache.get(key)
            if child is not None and child.lb > best:
                best = child.lb
        return best

    def _refresh_subset_bounds(self, st: DataState, j: int) -> None:
        """Raise the lower bounds of the unexpanded shapes of ``st`` on feature ``j`` (its
        own split actions and the refinements of its expanded shapes) by the subset bounds
        of their children (:meth:`_subset_bound`, ``candidate_scope='root'``), after a child
        on ``j`` was created or its bound rose: before any kernel call for them, so a shape
        that a second breakpoint refines, whose children contain (outer intervals) the
        children of shapes with one breakpoint, is pruned or passed over when their bounds
        already reach its budget.  A shape's child holds the state's rows in the bins of
        ``j`` on its side (the bit set of those bins, empty ones included, is a valid mask:
        a child whose bins are a subset holds a subset of these rows).  The parents of
        refinements that rose are backed up again (their tables synced)."""
        if self.candidate_scope != "root" or st.d - 1 < 2 or st.shapes is None:
            return
        if not self._subsets.get((st.key, j)):
            return
        nb = int(st.cand_off[j + 1] - st.cand_off[j]) + 1
        full = (1 << nb) - 1
        for h in st.shapes:
            if h is None or h.j != j or h.dead:
                continue
            if not h.expanded:
                if self._raise_by_subsets(st, h, nb, full):
                    self._sync(h)
                continue
            rose = False
            for r in h.refines or ():
                if not r.expanded and not r.dead:
                    rose |= self._raise_by_subsets(st, r, nb, full)
            if rose:
                self._backup_shape(h)

    def _raise_by_subsets(self, st: DataState, h: ShapeState, nb: int, full: int) -> bool:
        """Raise an unexpanded shape's children hints (and so its bound) by their subset
        bounds; True when its lower bound rose."""
        if h.solved:
            return False
        left = self._left_bins(h.k, nb)
        mask_left = sum(1 << int(b) for b in np.flatnonzero(left))
        d = st.d - 1
        for s, mask in ((0, mask_left), (1, full ^ mask_left)):
            if not self._trivial(h.err[s], d):
                h.hint[s] = max(h.hint[s], self._subset_bound(st, h.j, mask))
        lb = self._shape_base_lb(h)
        if lb <= h.lb + EPS:
            return False
        h.lb = lb
        if h.lb >= h.ub - EPS:
            h.lb = h.ub
            h.solved = True
            self.solved_count += 1
        return True

    def _sibling_floors(self, st: DataState, j: int, mask: int):
        """Subset bounds for the depth-3 kernel (its ``floors``) of a new three-level child
        of ``st`` by a shape on feature ``j`` whose rows fall in the root bins ``mask``
        of ``j``, from the cached siblings (children of ``st`` by shapes on any feature) that
        kept theirs, or None.  A sibling on ``j`` whose bins are a subset of ``mask`` has a
        subset of the rows: its floors hold for this child as they are.  A sibling on
        another feature ``f``, bins ``M_f``, knows a floor ``x`` for its rows with ``j`` in
        ``mask`` (its ``floors[j, mask]``): those rows are this child's rows with ``f`` in
        ``M_f``, so ``x`` holds here for ``f`` in every bin set containing ``M_f``."""
        width = counting_kernels.floor_width(self._root_off)
        if width > _FLOOR_KEEP or width <= 1:
            return None
        p = self.X.shape[1]
        floors = None
        for f in range(p):
            for other, key in self._subsets.get((st.key, f), ()):
                sib = self._cache.get(key)
                if sib is None or sib.floors is None:
                    continue
                if floors is None:
                    floors = np.full((p, width), -np.inf)
                if f == j:
                    if not other & ~mask:
                        np.maximum(floors, sib.floors, out=floors)
                    continue
                x = sib.floors[j, mask]
                if x > -np.inf:
                    sup = self._supersets(other, width)
                    floors[f, sup] = np.maximum(floors[f, sup], x)
        return floors

    def _supersets(self, mask: int, width: int) -> np.ndarray:
        """The bit sets below ``width`` that contain ``mask`` (int64, cached)."""
        table = self._superset_table
        got = table.get((mask, width))
        if got is None:
            every = np.arange(width, dtype=np.int64)
            got = every[(every & mask) == mask]
            table[(mask, width)] = got
        return got

    def _child_base_lb(self, err: float, d: int) -> float:
        return err if self._trivial(err, d) else min(err, self.lr)

    def _shape_base_lb(self, h: ShapeState) -> float:
        d = h.state.d - 1
        commit = max(self._child_base_lb(h.err[0], d), h.hint[0]) + max(
            self._child_base_lb(h.err[1], d), h.hint[1]
        )
        return min(self.alpha, commit) if h.refinable else commit

    def _expand_shape(self, h: ShapeState, budget: float = np.inf) -> None:
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
        masks = [None, None]
        if self.candidate_scope == "root" and d >= 2:
            for s in (0, 1):
                if not self._trivial(h.err[s], d):
                    masks[s] = self._bin_mask(h.child_idx[s], h.j)
                    h.hint[s] = max(h.hint[s], self._subset_bound(st, h.j, masks[s]))
        lbs = [max(self._child_base_lb(h.err[s], d), h.hint[s]) for s in (0, 1)]
        for s in (0, 1) if h.err[0] >= h.err[1] else (1, 0):
            if self._trivial(h.err[s], d):
                continue
            idx = h.child_idx[s]
            key = state_key(idx, d)
            keys[s] = key
            child = self._cache.get(key)
            if child is None:
                if d <= KERNEL_DEPTH and orders is None and self.candidate_scope != "root":
                    o = self._orders_of(st)
                    orders = kernels.split_orders(o, side, int(mask.sum()))
                child = self._new_state(
                    idx,
                    d,
                    hint=h.hint[s],
                    vt=None if h.vts is None else h.vts[s],
                    orders=None if orders is None else orders[s],
                    budget=budget - lbs[1 - s],
                    floors=(
                        self._sibling_floors(st, h.j, masks[s])
                        if d == 3 and masks[s] is not None and self._d3_fits()
                        else None
                    ),
                )
                self._cache[key] = child
            else:
                self._cache.move_to_end(key)
            lbs[s] = max(lbs[s], child.lb)
            if masks[s] is not None:
                self._subsets.setdefault((st.key, h.j), []).append((masks[s], key))
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
        if masks[0] is not None or masks[1] is not None:
            self._refresh_subset_bounds(st, h.j)

    # -- child access -----------------------------------------------------------------

    def _child(self, h: ShapeState, s: int):
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
            if st.lb >= st.ub - EPS and not st.solved:
                st.lb = st.ub
                st.solved = True
                self.solved_count += 1
        h.hint[s] = st.lb
        return st.lb, st.ub, st.solved, st

    def _get_child(self, h: ShapeState, s: int) -> DataState:
        st = self._cache.get(h.keys[s])
        if st is None:  # evicted earlier: recreate with the bound proved before
            st = self._new_state(h.child_idx[s], h.state.d - 1, hint=h.hint[s], vt=h.vts[s])
            self._cache[h.keys[s]] = st
        else:
            self._cache.move_to_end(h.keys[s])
        return st
