"""The nodes of Literati's AND/OR graph (docs/spec.md section 1; the search is
:mod:`engine.literati.search`).

A :class:`DataState` ``(D_s, d)`` is an OR node over the samples ``D_s`` with ``d`` levels
left, keyed by :func:`state_key`; a :class:`ShapeState` ``(D_s, d, j, k)`` is the shape
function on feature ``j`` with breakpoints ``k`` that its data state may commit to (an AND
node over its two children) or refine.
"""

from __future__ import annotations

import hashlib

import numpy as np

#: Tolerance of the comparisons of bounds and objectives (misclassification units).
EPS = 1e-9


def state_key(idx: np.ndarray, d: int) -> tuple:
    """Cache key of a data state: remaining depth, size and a digest of its sample ids."""
    return (d, idx.shape[0], hashlib.blake2b(idx.tobytes(), digest_size=16).digest())


class DataState:
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
        "floors",
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
        # depth-3 kernel: float64 (p, 2**bins) subset bounds of its depth-2 children, or None
        self.floors = None

    @property
    def base_ub(self) -> float:
        """Incumbent value without split actions: the leaf or the greedy completion."""
        return self.err if self.err <= self.gub else self.gub


class ShapeState:
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
        self.best = None  # None = commit, or a refined ShapeState
        self.commit_pruned = False
        self.child_idx = None
        self.dead = False
        self.pos = -1  # index in the owning data state's action table (-1: a refinement)
        self.ub = err[0] + err[1]
        self.lb = 0.0
