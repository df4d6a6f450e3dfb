"""Literati's anytime search, step by step (docs/spec.md section 1; issue 4).

:class:`LiteratiSearch` (from :meth:`engine.literati.LiteratiClassifier.start`) drives the AO*
search of :mod:`engine.literati.search` in bounded steps for the live page (``step`` /
``snapshot`` / ``trace`` / ``incumbent`` / ``result`` / ``finish``), records its progress
(:data:`TRACE_COLUMNS`) and keeps the incumbent; :func:`nodes_to_tree` turns the search's
nodes into a :class:`~engine.tree.TreeArrays`.  Missing values enter the search as extra
columns (:func:`encode_missing`).
"""

from __future__ import annotations

import copy
import math
import pickle
import threading
import time
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.literati.node_bounds import NodeBounds, NodeBoundTracker
from engine.literati.search import AOStarSearch
from engine.tree import TreeArrays

if TYPE_CHECKING:
    from engine.literati.estimator import LiteratiClassifier


def encode_missing(X):
    """The columns the search runs on when ``X`` (float64 ``(n, p)``) has NaN.

    Every feature with a NaN becomes two columns: NaN replaced by a value below every
    observed value (``min - max(1, range)``) and, appended after the ``p`` originals, NaN
    replaced by a value above them (``max + max(1, range)``); a shape on the first sends
    the missing rows with its lowest region (left), one on the second with its highest
    (left iff its number of breakpoints is even).  Returns ``(X_search float64
    C-contiguous (n, p + m), source int64 (p + m,): the original feature of each column,
    end int8 (p + m,): 0 no missing values, 1 NaN below, 2 NaN above)``; ``X`` itself when
    it has no NaN (``end`` all 0)."""
    n, p = X.shape
    has = np.isnan(X).any(axis=0)
    if not has.any():
        return X, np.arange(p, dtype=np.int64), np.zeros(p, dtype=np.int8)
    extra = np.flatnonzero(has)
    out = np.empty((n, p + extra.size), dtype=np.float64)
    out[:, :p] = X
    end = np.zeros(p + extra.size, dtype=np.int8)
    for i, j in enumerate(extra):
        col = X[:, j]
        nan = np.isnan(col)
        observed = col[~nan]
        low, high = (observed.min(), observed.max()) if observed.size else (0.0, 0.0)
        margin = max(1.0, high - low)
        out[:, j] = np.where(nan, low - margin, col)
        out[:, p + i] = np.where(nan, high + margin, col)
        end[j] = 1
        end[p + i] = 2
    source = np.r_[np.arange(p), extra].astype(np.int64)
    return np.ascontiguousarray(out), source, end


#: Columns of ``trace_`` / ``LiteratiSearch.trace()``.
TRACE_COLUMNS = (
    "time",
    "iterations",
    "expanded",
    "solved",
    "pruned",
    "cache_size",
    "evictions",
    "ub",
    "lb",
    "gap",
    "rel_gap",
    "event",
    "priority",
)

_TOL = 1e-9
#: The trace keeps about this many rows (plain progress rows are thinned; event rows stay).
_MAX_ROWS = 1000


class LiteratiSearch:
    """A running Literati search, advanced by bounded :meth:`step` calls.

    Create it with :meth:`LiteratiClassifier.start`.  ``step(max_seconds)`` does at least
    one AO* iteration and stops once ``max_seconds`` have passed (an iteration is a few
    bounded kernel calls: typically 1-100 ms, a few hundred ms on a large, many-class state
    under load); it returns True when the root is proven optimal, the time limit is reached
    (also checked between the kernel calls of one expansion) or the search was finished.
    Time counts while setting up (the root state) and while stepping, not between steps.

    Attributes: ``engine`` (:class:`engine.literati.search.AOStarSearch`), ``incumbents``
    (list of dicts ``time``, ``ub``, ``lb``, ``tree``), ``elapsed`` (s), ``done``,
    ``proven``, ``timed_out``, ``stopped``, ``prm`` (resolved parameters).
    """

    def __init__(self, estimator: LiteratiClassifier, X, codes, prm):
        t0 = time.perf_counter()
        self._lock = threading.RLock()  # held by step(): pickling waits for a whole state
        self.estimator = estimator
        self.X = X
        self.codes = codes
        self.prm = prm
        n = X.shape[0]
        self.n_samples = n
        X_search, self.source, self.end = encode_missing(X)
        self.engine = AOStarSearch(
            X_search,
            codes,
            estimator.n_classes_,
            prm["max_depth"],
            prm["max_breakpoints"],
            prm["split_penalty"],
            prm["breakpoint_penalty"],
            prm["candidate_leaves"],
            prm["cache_size"],
            greedy_seed=prm["greedy_seed"],
            deadline=t0 + prm["time_limit"],
            candidate_scope=prm["candidate_scope"],
        )
        self.elapsed = 0.0
        self.done = False
        self.proven = False
        self.timed_out = False
        self.stopped = False
        self._rows: list[dict] = []
        self.incumbents: list[dict] = []
        self._ub = math.inf
        self._tree = None
        self._breakdown = None
        self._tracker: NodeBoundTracker | None = None
        self._refresh_incumbent(force=True)
        self.elapsed = time.perf_counter() - t0  # set-up counts against the time limit
        self.incumbents[0]["time"] = self.elapsed
        self._log("incumbent")

    # -- pickling (the Dask runner streams snapshots from another thread) -----------------

    def __getstate__(self):
        """Pickled between two steps only: the job's pump thread pickles the snapshot while
        the next step may be running, so the state is pickled to bytes under the lock."""
        with self._lock:
            state = {k: v for k, v in self.__dict__.items() if k != "_lock"}
            return {"frozen": pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)}

    def __setstate__(self, state):
        self.__dict__.update(pickle.loads(state["frozen"]))  # noqa: S301 - our own bytes
        self._lock = threading.RLock()

    # -- internals ----------------------------------------------------------------------

    @property
    def lower_bound(self) -> float:
        return min(self.engine.root.lb, self._ub)

    def _refresh_incumbent(self, force=False) -> bool:
        """Extract the incumbent when the root's upper bound improved."""
        eng = self.engine
        if not force and eng.root.ub >= self._ub - _TOL:
            return False
        nodes, obj = eng.extract()
        if not force and obj >= self._ub - _TOL:
            return False
        self._ub = obj
        self._tree, self._breakdown = self._to_tree(nodes)
        self._tracker = NodeBoundTracker(eng, nodes)
        self.incumbents.append(
            {"time": self.elapsed, "ub": obj, "lb": self.lower_bound, "tree": self._tree}
        )
        return True

    def _to_tree(self, nodes):
        return nodes_to_tree(
            self.estimator,
            self.codes,
            self.X.shape[1],
            self.prm["split_penalty"],
            self.prm["breakpoint_penalty"],
            nodes,
            self.source,
            self.end,
        )

    def _log(self, event: str, priority: str | None = None) -> None:
        eng = self.engine
        if priority is None:
            priority = eng.priority
        ub = self._ub
        lb = self.lower_bound
        if self._rows:
            lb = max(lb, self._rows[-1]["lb"])
        if eng.root.solved and lb >= ub - 1e-6 * max(1.0, abs(ub)):
            lb = ub  # proven: the bounds met (up to float rounding of the sums)
        gap = max(0.0, ub - lb)
        self._rows.append(
            {
                "time": self.elapsed,
                "iterations": eng.iterations,
                "expanded": eng.expanded,
                "solved": eng.solved_count,
                "pruned": eng.pruned,
                "cache_size": len(eng._cache),
                "evictions": eng.evictions,
                "ub": ub,
                "lb": lb,
                "gap": gap,
                "rel_gap": gap / max(abs(ub), 1e-12) if gap > 0 else 0.0,
                "event": event,
                "priority": "" if priority is None else priority,
            }
        )
        if len(self._rows) > 2 * _MAX_ROWS:
            # downsample: keep every event row, the latest rows and every other plain row
            head, tail = self._rows[:-10], self._rows[-10:]
            kept = [r for i, r in enumerate(head) if r["event"] or i % 2 == 0]
            self._rows = kept + tail

    # -- public API -----------------------------------------------------------------------

    def step(self, max_seconds: float = 0.1) -> bool:
        """Run AO* iterations for about ``max_seconds``; True when finished (proven optimal,
        time limit reached, or stopped)."""
        with self._lock:
            return self._step(max_seconds)

    def _step(self, max_seconds: float) -> bool:
        if self.done:
            return True
        eng = self.engine
        t0 = time.perf_counter()
        limit_at = t0 + (self.prm["time_limit"] - self.elapsed)
        eng.deadline = limit_at
        stop_at = min(t0 + max(float(max_seconds), 0.0), limit_at)
        while True:
            steering = eng.priority
            progressed = eng.iterate()
            self.elapsed += time.perf_counter() - t0
            t0 = time.perf_counter()
            if steering is not None and eng.priority is None:
                # the prioritised subtree is proven (or has nothing left): the row names it
                self._log("priority_end", priority=steering)
            if self._refresh_incumbent():
                self._log("incumbent")
            if eng.root.solved or (
                not progressed and not eng.timed_out and not eng.kernel_stop.cancelled()
            ):  # proven, even when Stop came in the same step
                self.proven = True
                self.done = True
                self._log("optimal")
                return True
            if eng.kernel_stop.cancelled():  # Stop interrupted a kernel call: end here
                self.done = True
                self.stopped = True
                self._log("stopped")
                return True
            now = time.perf_counter()
            if eng.timed_out or now >= limit_at:
                self.timed_out = True
                self.done = True
                self._log("time_limit")
                return True
            if now >= stop_at:
                break
        self._log("")
        return False

    def snapshot(self) -> dict:
        """The latest trace row (keys as :data:`TRACE_COLUMNS`) plus ``done``, ``nodes``,
        the incumbent's per-node bounds (:meth:`node_bounds`), and ``frontier``, the root's
        splits holding its lower bound (:meth:`lower_bound_frontier`)."""
        row = dict(self._rows[-1])
        row["done"] = self.done
        row["nodes"] = self.node_bounds()
        row["frontier"] = self.lower_bound_frontier()
        return row

    def node_bounds(self) -> NodeBounds:
        """Each node of the current incumbent with its lower and upper bound (objective
        units) and its share of the remaining gap (:mod:`engine.literati.node_bounds`);
        node ids as in :meth:`incumbent`.  The root's bounds are the trace's ``lb`` and
        ``ub``."""
        return self._tracker.bounds(self.engine._cache, self._rows[-1]["lb"])

    def lower_bound_frontier(self, count: int = 5) -> list[dict]:
        """Where the root's lower bound lives: the root's open split actions with the lowest
        lower bounds, lowest first (at most ``count``).  The bound the search proves for the
        root through its splits is the least of them, so it rises only when the search
        raises that split's bound or prunes it; the root's LB is the larger of that and the
        bound the root started with (its class-count bound).

        Each item: ``feature`` (column of ``X``), ``breakpoints`` (list of float; a
        shape's refinements add more), ``lower`` (the split's lower bound, lambda + alpha
        and its shape's bound, objective units), ``upper`` (its best tree so far),
        ``tied`` (how many root splits not pruned share the least bound: all of them must rise
        before the root's bound does), ``open`` (root splits not pruned).  Empty
        when the root is solved or was solved in one kernel scan (depth 2 or less)."""
        root = self.engine.root
        with self._lock:
            if root.solved or root.kind != "expanded" or root.a_lb is None:
                return []
            bound = self.engine.lr + np.where(root.a_alive, root.a_lb, np.inf)
            order = np.argsort(bound, kind="stable")[: max(int(count), 0)]
            least = float(bound[order[0]]) if order.size else np.inf
            tied = int(np.sum(bound <= least + 1e-9))
            n_open = int(np.sum(np.isfinite(bound)))
            out = []
            for i in order:
                h = root.shapes[int(i)]
                if h is None or not np.isfinite(bound[i]):
                    continue
                out.append(
                    {
                        "feature": int(self.source[h.j]),
                        "breakpoints": [float(v) for v in h.bpv],
                        "lower": float(bound[i]),
                        "upper": float(self.engine.lr + root.a_ub[i]),
                        "tied": tied,
                        "open": n_open,
                    }
                )
            return out

    def prioritise(self, path: str | None) -> None:
        """Give the subtree at ``path`` of the incumbent tree priority (``""`` the root,
        then ``"L"`` / ``"R"`` per level; :meth:`NodeBounds.paths` names every node's), or
        clear it with ``None``: the search expands that subtree's states first until it is
        proven (:meth:`engine.literati.search.AOStarSearch.set_priority`), which changes
        the order of the work, not the optimum.  The trace records it: a row with event
        ``"priority"`` and the path in column ``priority`` (every row while it holds), and
        a row ``"priority_end"`` when the subtree is proven or has nothing left to do.
        Raises ``ValueError`` for a malformed path; does nothing once the search is done."""
        with self._lock:
            if self.done:
                return
            before = self.engine.priority
            self.engine.set_priority(path)
            if path is not None:
                self._log("priority")
            elif before is not None:
                self._log("priority_end", priority=before)

    def trace(self) -> pd.DataFrame:
        """All trace rows so far as a DataFrame with :data:`TRACE_COLUMNS`."""
        return pd.DataFrame(self._rows, columns=list(TRACE_COLUMNS))

    def incumbent(self) -> TreeArrays:
        """The current incumbent tree (its objective equals the trace's ``ub``)."""
        return self._tree

    def interrupt(self) -> None:
        """Stop the search from another thread: a running :meth:`step` returns within one
        root shape of the depth-3 kernel or one root feature of the depth-2 counting kernel
        (the long kernel calls poll a flag,
        :class:`engine.literati.interrupt.KernelStop`) instead of at the end of its
        iteration, and ends ``stopped`` with the incumbent kept.  Does not take the step's
        lock; later steps end at once."""
        self.engine.kernel_stop.stop()

    def stop_on(self, cancel_event: threading.Event) -> None:
        """Interrupt as :meth:`interrupt` does once ``cancel_event`` is set (a job's Stop
        button): a kernel call running then notices within
        :data:`engine.literati.interrupt.POLL_SECONDS`."""
        self.engine.kernel_stop.cancel_event = cancel_event

    def finish(self) -> LiteratiClassifier:
        """Stop the search and return the estimator fitted with the current incumbent."""
        with self._lock:
            if not self.done:
                self.done = True
                self.stopped = True
                self._log("stopped")
            return self._fitted(self.estimator, self.trace(), self.node_bounds())

    def result(self, node_bounds: NodeBounds | None = None) -> LiteratiClassifier:
        """What :meth:`finish` would return now, without stopping the search: a copy of the
        estimator fitted with the current incumbent (its trace ends with a ``"stopped"``
        row unless the search is done).  Small (the trees, trace and bounds; no training
        rows), so a job can send it with every snapshot and a stopped job keeps it.
        ``node_bounds``: :meth:`node_bounds` when the caller already has it."""
        with self._lock:
            rows = self._rows
            if not self.done:
                rows = [*rows, {**rows[-1], "event": "stopped"}]
            trace = pd.DataFrame(rows, columns=list(TRACE_COLUMNS))
            bounds = self.node_bounds() if node_bounds is None else node_bounds
            return self._fitted(copy.copy(self.estimator), trace, bounds)

    def _fitted(self, est, trace: pd.DataFrame, node_bounds: NodeBounds) -> LiteratiClassifier:
        """``est`` with the fitted attributes of the current incumbent."""
        est.tree_ = self._tree
        est.objective_ = float(self._ub)
        est.upper_bound_ = float(self._ub)
        est.lower_bound_ = float(trace["lb"].iloc[-1])
        est.proven_optimal_ = bool(self.proven)
        est.objective_breakdown_ = dict(self._breakdown)
        est.trace_ = trace
        est.node_bounds_ = node_bounds
        est.incumbents_ = list(self.incumbents)
        est.split_penalty_ = self.prm["split_penalty"]
        est.breakpoint_penalty_ = self.prm["breakpoint_penalty"]
        est.candidate_leaves_ = list(self.prm["candidate_leaves"])
        est.n_iterations_ = self.engine.iterations
        est.search_time_ = self.elapsed
        est.greedy_calls_ = self.engine.greedy_calls
        est.greedy_seconds_ = self.engine.greedy_seconds
        return est


def nodes_to_tree(est, codes, n_features, lam, alpha, nodes, source=None, end=None):
    """Node dicts (``idx``, ``feature``, ``bps``, ``children``, ``lb``, ``ub``; as
    :meth:`AOStarSearch.extract`) to ``(TreeArrays, objective breakdown dict)``: class
    fractions from ``codes`` (int64 ``(n,)``) of each node's samples, breakpoints in
    ``bp_offsets``/``bp_values``, ``threshold`` = first breakpoint.  ``source`` / ``end``
    (:func:`encode_missing`) map the search's columns to the features and give each
    split's ``missing_go_to_left``: 1 with NaN below, ``K`` even with NaN above, else the
    child with more training rows (ties: left)."""
    C = est.n_classes_
    m = len(nodes)
    cl = np.full(m, -1, dtype=np.int64)
    cr = np.full(m, -1, dtype=np.int64)
    feat = np.full(m, -2, dtype=np.int64)
    thr = np.full(m, -2.0)
    imp = np.zeros(m)
    nns = np.zeros(m, dtype=np.int64)
    val = np.zeros((m, 1, C))
    lbs = np.full(m, np.nan)
    ubs = np.full(m, np.nan)
    bp_off = np.zeros(m + 1, dtype=np.int64)
    missing_left = np.zeros(m, dtype=np.uint8)
    bps = []
    errors = 0
    n_splits = 0
    n_bp = 0
    for i, nd in enumerate(nodes):
        cnt = np.bincount(codes[nd["idx"]], minlength=C).astype(np.float64)
        tot = cnt.sum()
        nns[i] = int(tot)
        val[i, 0] = cnt / tot if tot > 0 else cnt
        imp[i] = 1.0 - float(np.sum((cnt / tot) ** 2)) if tot > 0 else 0.0
        if nd["children"] is None:
            errors += int(tot - cnt.max())
            lbs[i] = ubs[i] = float(tot - cnt.max())
        else:
            cl[i], cr[i] = nd["children"]
            column = nd["feature"]
            feat[i] = column if source is None else source[column]
            b = nd["bps"]
            nan_end = 0 if end is None else int(end[column])
            if nan_end == 1:
                missing_left[i] = 1
            elif nan_end == 2:
                missing_left[i] = int(len(b) % 2 == 0)
            else:
                sizes = [nodes[c]["idx"].shape[0] for c in nd["children"]]
                missing_left[i] = int(sizes[0] >= sizes[1])
            thr[i] = float(b[0])
            bps.append(b)
            n_splits += 1
            n_bp += len(b)
        if nd["lb"] is not None:
            lbs[i], ubs[i] = nd["lb"], nd["ub"]
        bp_off[i + 1] = bp_off[i] + (0 if nd["children"] is None else len(nd["bps"]))
    names = getattr(est, "feature_names_in_", None)
    tree = TreeArrays(
        cl,
        cr,
        feat,
        thr,
        imp,
        nns,
        nns.astype(np.float64),
        val,
        task="classification",
        n_features=n_features,
        classes_=est.classes_,
        feature_names=None if names is None else [str(s) for s in names],
        bp_offsets=bp_off,
        bp_values=np.concatenate(bps) if bps else np.empty(0),
        lower_bound=lbs,
        upper_bound=ubs,
        missing_go_to_left=missing_left,
    )
    breakdown = {
        "errors": int(errors),
        "n_splits": n_splits,
        "n_breakpoints": n_bp,
        "split_cost": lam * n_splits,
        "breakpoint_cost": alpha * n_bp,
        "objective": errors + lam * n_splits + alpha * n_bp,
    }
    return tree, breakdown
