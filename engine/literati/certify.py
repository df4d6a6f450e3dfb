"""Certify any tree: its objective in Literati's terms against a search's proven lower bound.

A tree from elsewhere (scikit-learn's ``DecisionTreeClassifier``, TreeLab's
``CARTClassifier``, a ``pystreed.STreeDClassifier`` fitted on 0/1 threshold columns, or
Literati's own trees) is read as a shape tree: a threshold split ``x_j <= t`` is a shape
function with ``K = 1`` breakpoint.  On the training rows its objective is Literati's
(docs/spec.md section 1)::

    Err(T) + sum over internal nodes v of (lambda + alpha * K_v)

with ``Err`` the training rows that disagree with the majority class of their leaf.  A
Literati search of the same depth on the same rows proves a lower bound ``LB`` on every
tree **of its candidate space** (depth <= D, K_v <= K_max, each breakpoint one of the
candidates of the node's data state), so ``objective - LB`` bounds how far the tree is
from the optimum of that space.

What the bound covers.  A split only matters through the partition of the rows reaching
the node: a threshold anywhere between the same two adjacent distinct values of those rows
partitions them the same way.  :func:`check_splits` maps every split of the tree to that
partition and says whether the search's candidates for the same data state contain an
equivalent shape (a candidate in every gap where the partition changes side).  When every
split has one (and the tree is no deeper than D), the tree's objective is at least the
objective of a tree in the search's space, so ``LB <= objective`` is proven.  Otherwise the
bound is relative to the candidate space: the tree may even beat it, and the certificate
says so.  With every midpoint as a candidate (``candidate_leaves=None``) every split that
separates the rows reaching it is in the space; :func:`all_thresholds_feasible` says when
the data are small enough to offer that.

Public names: :func:`as_shape_tree`, :func:`tree_objective`, :func:`check_splits`,
:func:`certify`, :func:`certify_tree`, :func:`certify_bounds` (= :func:`certify_checked` of
:func:`check_tree`, the part that reads the rows), :func:`all_thresholds_feasible`,
:class:`SplitCheck`, :class:`TreeCheck`, :class:`Certificate` (:func:`as_shape_tree` and
:func:`tree_objective` live in :mod:`engine.literati.objective` and are re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.literati import _kernels as kernels
from engine.literati.estimator import LiteratiClassifier, encode_missing
from engine.literati.objective import _codes, _node_rows, as_shape_tree, tree_objective
from engine.literati.shapes import internal_nodes, node_breakpoints

__all__ = [
    "ALL_THRESHOLDS_MAX_CELLS",
    "Certificate",
    "SplitCheck",
    "all_thresholds_feasible",
    "as_shape_tree",
    "certify",
    "TreeCheck",
    "certify_bounds",
    "certify_checked",
    "certify_tree",
    "check_splits",
    "check_tree",
    "tree_objective",
]

#: Largest ``rows x features`` for which :func:`all_thresholds_feasible` offers every
#: midpoint as a candidate (the search's states then list every distinct value's gap).
ALL_THRESHOLDS_MAX_CELLS = 20_000

_TOL = 1e-9


# ---------------------------------------------------------------------------------------
# candidate space
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitCheck:
    """One split of a certified tree, mapped to the partition of the rows reaching it.

    Attributes
    ----------
    node : int
        Node id in the tree.
    depth : int
        Its depth (root = 0); the search's candidates at this depth use ``B_depth``.
    feature : int
        Its feature (column of ``X``).
    breakpoints : tuple of float
        Its breakpoints (``(threshold,)`` for a threshold split).
    rows, rows_left : int
        Training rows reaching the node and those it sends left.
    gaps : tuple of (float, float)
        For each place where the partition changes side along the feature's sorted
        values: the two adjacent distinct values ``(a, b)`` of the node's rows around it
        (any breakpoint ``a <= u < b`` gives the same partition); NaN stands for
        "missing".  Empty when the split sends every row one way.
    candidates : tuple of float
        An equivalent candidate of the search for each gap (same order), or empty when
        the split is not in the search's space.
    in_space : bool
        True when an equivalent shape (a candidate in every gap, at most ``K_max`` of
        them, and no more than the breakpoints the tree's objective counts for the split)
        is in the search's candidate space for this data state.
    reason : str
        Why not (empty when ``in_space``).
    """

    node: int
    depth: int
    feature: int
    breakpoints: tuple
    rows: int
    rows_left: int
    gaps: tuple
    candidates: tuple
    in_space: bool
    reason: str


def _space_of(search) -> dict:
    """The candidate space of a fitted :class:`LiteratiClassifier` (or its parameters)."""
    return {
        "max_depth": int(search.max_depth),
        "max_breakpoints": int(search.max_breakpoints),
        "candidate_leaves": list(search.candidate_leaves_),
        "candidate_scope": str(getattr(search, "candidate_scope", "state")),
    }


def check_splits(
    tree,
    X,
    y,
    *,
    max_depth: int,
    max_breakpoints: int,
    candidate_leaves,
    candidate_scope: str = "state",
) -> list[SplitCheck]:
    """For every split of ``tree`` (pre-order): the partition of the training rows it
    makes, and whether a shape with the same partition is in Literati's candidate space.

    The search's candidates for a data state at depth ``d`` on a column are the
    thresholds of a univariate CART with at most ``B_d`` leaves on the state's rows
    (every midpoint when ``B_d`` is 0 or None; with ``candidate_scope='root'`` the root's
    candidates on all rows), on the columns of :func:`engine.literati.estimator.encode_missing`
    when ``X`` has NaN.  A split is in the space when, on one of its feature's columns, the
    rows it sends left form a union of alternating intervals of the rows' sorted values (or
    the mirror image: the children swapped, same objective) with ``1 <= K' <= K_max``
    changes, each gap holding a candidate.  Splits below depth ``max_depth - 1`` are not.

    Parameters
    ----------
    tree : TreeArrays or fitted tree model
        Read with :func:`as_shape_tree`.
    X, y : array-like
        The training rows the search ran on, ``(n, p)`` and ``(n,)``.
    max_depth, max_breakpoints : int
        The search's D and K_max.
    candidate_leaves : int, None or sequence
        The search's B_d per depth (the last repeats; 0 or None = every midpoint).
    candidate_scope : {'state', 'root'}
        The search's candidate scope.

    Returns
    -------
    list of SplitCheck

    Raises
    ------
    ValueError
        Bad ``X`` or ``y`` (as :func:`tree_objective`).
    """
    tree = as_shape_tree(tree)
    Xc = tree.check_X(X)
    _, codes = _codes(y)
    if codes.shape[0] != Xc.shape[0]:
        raise ValueError(f"X has {Xc.shape[0]} rows but y has {codes.shape[0]} labels.")
    X_search, source, _ = encode_missing(np.ascontiguousarray(Xc, dtype=np.float64))
    candidates = _CandidateLookup(
        X_search, codes, _leaves_per_depth(candidate_leaves, Xc.shape[0]), candidate_scope
    )
    rows = _node_rows(tree, Xc)
    depth_of = tree.depth
    out = []
    for v in internal_nodes(tree):
        idx = rows[v]
        left = np.zeros(Xc.shape[0], dtype=bool)
        left[rows[int(tree.children_left[v])]] = True
        left = left[idx]
        depth = int(depth_of[v])
        in_space, gaps, cands, reason = _best_column_match(
            tree, v, depth, Xc, X_search, source, idx, left, candidates, max_breakpoints
        )
        if depth >= max_depth:
            in_space, cands, reason = False, (), f"deeper than the search's depth {max_depth}"
        out.append(
            SplitCheck(
                node=int(v),
                depth=depth,
                feature=int(tree.feature[v]),
                breakpoints=tuple(float(u) for u in node_breakpoints(tree, v)),
                rows=int(idx.size),
                rows_left=int(left.sum()),
                gaps=gaps,
                candidates=cands,
                in_space=in_space,
                reason=reason,
            )
        )
    return out


def _leaves_per_depth(candidate_leaves, n_rows: int) -> list[int]:
    """The search's ``B_d`` per depth as a list of ints (0 = every midpoint; the last
    repeats), each capped at the rows as the estimator does (a larger one would overflow)."""
    seq = (
        list(candidate_leaves)
        if isinstance(candidate_leaves, (list, tuple))
        else [candidate_leaves]
    )
    most = max(int(n_rows), 2)
    return [0 if v is None else min(int(v), most) for v in seq] or [0]


class _CandidateLookup:
    """The search's candidate thresholds of a data state on one encoded column.

    ``X_search`` is ``(n, p')`` float64 (the columns of :func:`encode_missing`), ``codes``
    the ``(n,)`` class codes, ``leaves`` the ``B_d`` per depth.  With ``scope='root'`` every
    depth uses the root's candidates on all rows, computed once per column.
    """

    def __init__(self, X_search: np.ndarray, codes: np.ndarray, leaves: list[int], scope: str):
        self.X_search = X_search
        self.codes = codes
        self.n_classes = int(codes.max()) + 1 if codes.size else 1
        self.leaves = leaves
        self.scope = scope
        self._root: dict[int, np.ndarray] = {}

    def __call__(self, column: int, idx: np.ndarray, depth: int) -> np.ndarray:
        """The candidates (float64, sorted) for the rows ``idx`` at ``depth``."""
        if self.scope == "root":
            if column not in self._root:
                self._root[column] = self.of_rows(column, np.arange(self.X_search.shape[0]), 0)
            return self._root[column]
        return self.of_rows(column, idx, depth)

    def of_rows(self, column: int, idx: np.ndarray, depth: int) -> np.ndarray:
        """A univariate CART's thresholds with ``B_depth`` leaves on the rows ``idx``."""
        values = self.X_search[idx, column]
        order = np.argsort(values, kind="mergesort")
        b = self.leaves[min(depth, len(self.leaves) - 1)]
        return kernels.uni_thresholds(
            np.ascontiguousarray(values[order]),
            np.ascontiguousarray(self.codes[idx][order]),
            self.n_classes,
            b,
        )


def _best_column_match(
    tree, v, depth, Xc, X_search, source, idx, left, candidates, max_breakpoints: int
) -> tuple:
    """``(in_space, gaps, candidates, reason)`` of split node ``v`` at ``depth``: of its
    feature's encoded columns (missing values lowest or highest), the one whose equivalent
    shape is in the space with the fewest breakpoints (else the first column's reason).
    ``idx`` are the rows reaching ``v`` and ``left`` (bool, one per row of ``idx``) those
    it sends left; a shape needing more than ``max_breakpoints`` or more breakpoints than
    the tree's objective counts for ``v`` is not in the space."""
    j = int(tree.feature[v])
    charged = int(node_breakpoints(tree, v).size)  # the K_v its objective counts
    best = None  # (in_space, gaps, cands, reason)
    for column in np.flatnonzero(source == j):
        gaps, cands, reason = _match(
            X_search[idx, column], left, lambda c=column, i=idx, d=depth: candidates(c, i, d)
        )
        original = Xc[idx, j]  # "missing" is encoded below / above: report it as NaN
        gaps = tuple((_nan_if_fake(a, original), _nan_if_fake(b, original)) for a, b in gaps)
        if not reason and len(gaps) > max_breakpoints:
            reason = (
                f"needs {len(gaps)} breakpoints on these rows, more than K_max = {max_breakpoints}"
            )
        elif not reason and len(gaps) > charged:
            # the equivalent shape costs more than the tree pays: no bound on the tree
            reason = (
                f"needs {len(gaps)} breakpoints in the search's terms, more than the "
                f"{charged} its objective counts"
            )
        ok = not reason
        if best is None or (ok and (not best[0] or len(gaps) < len(best[1]))):
            best = (ok, gaps, cands if ok else (), reason)
    return best


def _nan_if_fake(value: float, original: np.ndarray) -> float:
    """The encoded stand-in for "missing" (outside the observed values) as NaN."""
    observed = original[~np.isnan(original)]
    if np.isnan(original).any() and (
        observed.size == 0 or value < observed.min() or value > observed.max()
    ):
        return math.nan
    return float(value)


def _match(values: np.ndarray, left: np.ndarray, get_candidates):
    """``(gaps, candidates, reason)`` for the partition ``left`` of rows with ``values``
    on one column: the gaps where the side changes along the sorted distinct values, an
    equivalent candidate in each, or the reason there is none."""
    distinct, group = np.unique(values, return_inverse=True)
    side_sum = np.bincount(group, weights=left.astype(np.float64), minlength=distinct.size)
    size = np.bincount(group, minlength=distinct.size)
    if np.any((side_sum > 0) & (side_sum < size)):
        return (), (), "splits rows with equal values apart (not a shape on this column)"
    side = side_sum > 0
    change = np.flatnonzero(side[1:] != side[:-1])
    gaps = tuple((float(distinct[i]), float(distinct[i + 1])) for i in change)
    if not gaps:
        return (), (), "sends every row reaching it the same way"
    cands = np.asarray(get_candidates(), dtype=np.float64)
    # gap index of each candidate: distinct values <= it (a <= u < b -> index of a + 1)
    where = np.searchsorted(distinct, cands, side="right")
    found = []
    for i in change:
        hit = cands[where == i + 1]
        if hit.size == 0:
            a, b = distinct[i], distinct[i + 1]
            return (
                gaps,
                (),
                f"no candidate between {a:.6g} and {b:.6g} ({cands.size} at this node)",
            )
        found.append(float(hit[0]))
    return gaps, tuple(found), ""


# ---------------------------------------------------------------------------------------
# the certificate
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Certificate:
    """How far a tree is proven to be from Literati's optimum on the same rows.

    Attributes
    ----------
    name : str
        What the tree is ("scikit-learn's depth-3 tree").
    objective : float
        The tree's objective, ``errors + lambda * splits + alpha * breakpoints``, with
        ``errors`` by the majority class of each leaf on the training rows.
    breakdown : dict
        :func:`tree_objective`'s dict.
    lower_bound, upper_bound : float
        The search's proven lower bound and its incumbent's objective (equal when proven).
    proven_optimal : bool
        Whether the search proved its incumbent optimal (then ``lower_bound`` is the
        optimum of its space).
    gap : float
        ``objective - lower_bound``: the tree is at most this much above the optimum of
        the search's space (a proof when ``in_space``).
    in_space : bool
        Every split has an equivalent shape in the search's candidate space and the tree
        is no deeper than the search: ``lower_bound <= objective`` is then proven.
    splits : tuple of SplitCheck
        One per split (:func:`check_splits`).
    max_depth, max_breakpoints : int
        The search's D and K_max.
    split_penalty, breakpoint_penalty : float
        lambda and alpha.
    candidate_leaves : tuple
        The search's B_d per depth (0 = every midpoint).
    all_candidates : bool
        Every midpoint was a candidate at every depth.
    notes : tuple of str
        Caveats the page shows under the sentence (leaf labels, space, time limit).
    """

    name: str
    objective: float
    breakdown: dict
    lower_bound: float
    upper_bound: float
    proven_optimal: bool
    gap: float
    in_space: bool
    splits: tuple
    max_depth: int
    max_breakpoints: int
    split_penalty: float
    breakpoint_penalty: float
    candidate_leaves: tuple
    all_candidates: bool
    notes: tuple = field(default=())

    @property
    def relative_gap(self) -> float:
        """``gap / objective`` (0 when the objective is 0)."""
        return self.gap / self.objective if self.objective > 0 else 0.0

    def space_text(self) -> str:
        """The search's space in words ("depth 3, at most 2 breakpoints per split, on the
        search's candidates")."""
        k = self.max_breakpoints
        shape = "threshold splits" if k == 1 else f"at most {k} breakpoints per split"
        cands = "every threshold" if self.all_candidates else "these candidates"
        return f"depth {self.max_depth}, {shape}, on {cands}"

    def sentence(self) -> str:
        """One sentence: the tree's errors and objective, the proven bound, the gap."""
        b = self.breakdown
        errors = f"{b['errors']} error{'' if b['errors'] == 1 else 's'}"
        head = f"{self.name} makes {errors} (objective {self.objective:.4g})"
        kind = "the optimum is" if self.proven_optimal else "no tree does better than"
        space = f"among trees of {self.space_text()}, {kind} {self.lower_bound:.4g} (proven)"
        if not self.in_space:
            outside = sum(not s.in_space for s in self.splits)
            n = len(self.splits)
            if not outside:
                what = f"it is deeper than {self.max_depth}, so it lies"
            elif n == 1:
                what = "its split lies"
            else:
                what = f"{outside} of its {n} splits {'lies' if outside == 1 else 'lie'}"
            tail = f"; {what} outside that space, so the bound does not cover this tree: "
            if self.gap >= 0:
                tail += f"it is {self.gap:.4g} above the bound of that space, not a proof of "
                tail += "its distance from its own optimum"
            else:
                tail += f"it beats every tree of that space by {-self.gap:.4g}"
            return head + "; " + space + tail + "."
        if self.gap <= _TOL * max(1.0, abs(self.objective)):
            verdict = "it is optimal (gap 0)" if self.proven_optimal else "it is optimal"
        elif self.proven_optimal:
            verdict = f"it is exactly {self.gap:.4g} above optimal"
        else:
            verdict = f"it is at most {self.gap:.4g} above optimal"
        if self.upper_bound < self.objective - _TOL and not self.proven_optimal:
            verdict += f" (the search's best tree so far has {self.upper_bound:.4g})"
        return f"{head}; {space}: {verdict}."

    def table(self) -> pd.DataFrame:
        """The certificate as a two-column table (quantity, value; numbers as text, printed
        with four significant digits like :meth:`sentence`)."""
        b = self.breakdown
        rows = [
            ("training errors (majority per leaf)", b["errors"]),
            ("splits", b["n_splits"]),
            ("breakpoints", b["n_breakpoints"]),
            ("objective", f"{self.objective:.4g}"),
            ("lower bound (proven)", f"{self.lower_bound:.4g}"),
            ("upper bound (search's incumbent)", f"{self.upper_bound:.4g}"),
            (
                "proven gap: at most this above optimal"
                if self.in_space
                else "objective - bound (no proof: outside the space)",
                f"{self.gap:.4g}",
            ),
            ("search proved its optimum", "yes" if self.proven_optimal else "no"),
            (
                "splits with an equivalent candidate",
                f"{sum(s.in_space for s in self.splits)} of {len(self.splits)}",
            ),
            ("bound covers this tree", "yes" if self.in_space else "no"),
        ]
        if b["own_errors"] != b["errors"]:
            rows.insert(1, ("errors with the tree's own leaf labels", b["own_errors"]))
        return pd.DataFrame({"quantity": [r[0] for r in rows], "value": [str(r[1]) for r in rows]})

    def splits_table(self, feature_names=None) -> pd.DataFrame:
        """One row per split: node, depth, feature, breakpoints, rows, the partition's gap
        and the equivalent candidate, or why it is outside the search's space."""
        out = []
        for s in self.splits:
            name = feature_names[s.feature] if feature_names is not None else f"x{s.feature}"
            gap = "; ".join(f"{_fmt(a)} .. {_fmt(b)}" for a, b in s.gaps) or "-"
            out.append(
                {
                    "node": s.node,
                    "depth": s.depth,
                    "feature": name,
                    "breakpoints": ", ".join(f"{u:.6g}" for u in s.breakpoints),
                    "rows (left / all)": f"{s.rows_left} / {s.rows}",
                    "same partition between": gap,
                    "equivalent candidate": ", ".join(f"{c:.6g}" for c in s.candidates) or "-",
                    "in the search's space": "yes" if s.in_space else f"no: {s.reason}",
                }
            )
        return pd.DataFrame(out)


def _fmt(value: float) -> str:
    return "missing" if math.isnan(value) else f"{value:.6g}"


def certify(tree, X, y, search: LiteratiClassifier, name: str = "The tree") -> Certificate:
    """Certify ``tree`` against a finished Literati search on the same training rows.

    Parameters
    ----------
    tree : TreeArrays or fitted tree model
        Read with :func:`as_shape_tree`.
    X, y : array-like
        The training rows the search ran on, ``(n, p)`` float and ``(n,)``.
    search : LiteratiClassifier
        Fitted (``fit``, or ``finish()`` of a :class:`engine.literati.LiteratiSearch`):
        its ``lower_bound_``, ``upper_bound_``, ``proven_optimal_``, penalties and
        candidate space are used.
    name : str
        What the tree is, for :meth:`Certificate.sentence`.

    Returns
    -------
    Certificate

    Raises
    ------
    ValueError
        ``search`` is not fitted, ``X`` does not have its number of features or rows of
        the wrong shape, ``y`` of another length.
    """
    if not hasattr(search, "lower_bound_"):
        raise ValueError("The Literati search has not run: fit it (or finish it) first.")
    n_features = getattr(search, "n_features_in_", None)
    Xa = np.asarray(X, dtype=np.float64)
    if n_features is not None and (Xa.ndim != 2 or Xa.shape[1] != n_features):
        raise ValueError(f"X must have the search's {n_features} features; got shape {Xa.shape}.")
    return certify_bounds(
        tree,
        Xa,
        y,
        lower_bound=float(search.lower_bound_),
        upper_bound=float(search.upper_bound_),
        proven_optimal=bool(search.proven_optimal_),
        split_penalty=float(search.split_penalty_),
        breakpoint_penalty=float(search.breakpoint_penalty_),
        name=name,
        **_space_of(search),
    )


def certify_bounds(
    tree,
    X,
    y,
    *,
    lower_bound: float,
    upper_bound: float,
    proven_optimal: bool,
    max_depth: int,
    max_breakpoints: int,
    split_penalty: float,
    breakpoint_penalty: float,
    candidate_leaves,
    candidate_scope: str = "state",
    name: str = "The tree",
) -> Certificate:
    """:func:`certify` from a search's numbers: its bounds (``lower_bound``,
    ``upper_bound``, ``proven_optimal``), penalties and candidate space (``max_depth``,
    ``max_breakpoints``, ``candidate_leaves`` as B_d per depth with 0 or None = every
    midpoint, ``candidate_scope``), e.g. for a search reopened from the run store.
    ``X``, ``y``: the rows the search ran on.  Raises ``ValueError`` as :func:`certify`.

    The same as :func:`certify_checked` of :func:`check_tree`: the part that reads the
    rows can be computed once (e.g. in a job) and combined with bounds later."""
    checked = check_tree(
        tree,
        X,
        y,
        max_depth=max_depth,
        max_breakpoints=max_breakpoints,
        split_penalty=split_penalty,
        breakpoint_penalty=breakpoint_penalty,
        candidate_leaves=candidate_leaves,
        candidate_scope=candidate_scope,
        name=name,
    )
    return certify_checked(
        checked,
        lower_bound=lower_bound,
        upper_bound=upper_bound,
        proven_optimal=proven_optimal,
    )


@dataclass(frozen=True)
class TreeCheck:
    """What a certificate needs from the tree and the training rows, before any bound:
    :func:`check_tree`'s result, turned into a :class:`Certificate` by
    :func:`certify_checked` with a search's bounds (no pass over the rows then).

    Attributes
    ----------
    name : str
        What the tree is, for :meth:`Certificate.sentence`.
    breakdown : dict
        :func:`tree_objective`'s dict on the rows.
    splits : tuple of SplitCheck
        :func:`check_splits` on the rows.
    max_depth, max_breakpoints : int
        The search's D and K_max the splits were checked against.
    split_penalty, breakpoint_penalty : float
        lambda and alpha.
    candidate_leaves : tuple of int
        B_d per depth (0 = every midpoint).
    candidate_scope : str
        ``'state'`` or ``'root'``.
    """

    name: str
    breakdown: dict
    splits: tuple
    max_depth: int
    max_breakpoints: int
    split_penalty: float
    breakpoint_penalty: float
    candidate_leaves: tuple
    candidate_scope: str


def check_tree(
    tree,
    X,
    y,
    *,
    max_depth: int,
    max_breakpoints: int,
    split_penalty: float,
    breakpoint_penalty: float,
    candidate_leaves,
    candidate_scope: str = "state",
    name: str = "The tree",
) -> TreeCheck:
    """The part of :func:`certify_bounds` that reads the rows ``(X, y)``: the tree's
    objective (:func:`tree_objective`) and each split against the candidate space
    (:func:`check_splits`).  Parameters and errors as :func:`certify_bounds`; cost linear
    in the rows (one sort of each split's feature over the rows reaching it)."""
    Xa = np.asarray(X, dtype=np.float64)
    tree = as_shape_tree(tree)
    lam, alpha = float(split_penalty), float(breakpoint_penalty)
    breakdown = tree_objective(tree, Xa, y, lam, alpha)
    seq = (
        list(candidate_leaves)
        if isinstance(candidate_leaves, (list, tuple))
        else [candidate_leaves]
    )
    leaves = tuple(0 if v is None else int(v) for v in seq)
    splits = check_splits(
        tree,
        Xa,
        y,
        max_depth=int(max_depth),
        max_breakpoints=int(max_breakpoints),
        candidate_leaves=list(leaves),
        candidate_scope=str(candidate_scope),
    )
    return TreeCheck(
        name=name,
        breakdown=breakdown,
        splits=tuple(splits),
        max_depth=int(max_depth),
        max_breakpoints=int(max_breakpoints),
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=leaves,
        candidate_scope=str(candidate_scope),
    )


def certify_checked(
    checked: TreeCheck, *, lower_bound: float, upper_bound: float, proven_optimal: bool
) -> Certificate:
    """The :class:`Certificate` of a :func:`check_tree` result against a search's proven
    ``lower_bound``, its incumbent's ``upper_bound`` and whether it was ``proven_optimal``
    (the search must have run on the same rows, space and penalties).  No pass over the
    rows: a few arithmetic operations.  Raises ``RuntimeError`` if a tree inside the space
    beats the proven bound (a bug)."""
    breakdown = checked.breakdown
    splits = checked.splits
    deep = breakdown["depth"] > checked.max_depth
    in_space = all(s.in_space for s in splits) and not deep
    lb, ub = float(lower_bound), float(upper_bound)
    objective = float(breakdown["objective"])
    leaves = checked.candidate_leaves
    all_cands = all(v == 0 for v in leaves) and checked.candidate_scope == "state"
    notes = []
    if breakdown["own_errors"] != breakdown["errors"]:
        notes.append(
            f"With its own leaf labels the tree makes {breakdown['own_errors']} "
            f"error{'' if breakdown['own_errors'] == 1 else 's'} "
            f"(objective {breakdown['own_objective']:.4g}); Literati's objective relabels "
            "each leaf with its majority class on the training rows."
        )
    if not in_space:
        if deep:
            notes.append(
                f"The tree has depth {breakdown['depth']}, deeper than the search's "
                f"{checked.max_depth}."
            )
        notes.append(
            "The lower bound holds over the search's candidate space only; this tree is "
            "outside it, so the bound is relative to that space, not a proof about the tree."
        )
        if not all_cands:
            notes.append(
                "A search with every threshold as a candidate (B_d = all) covers every "
                "split that separates its rows."
            )
    if not proven_optimal:
        notes.append(
            f"The search stopped before proving its optimum (gap {ub - lb:.4g}); a longer "
            "run can only raise the lower bound and shrink this tree's proven gap."
        )
    if in_space and objective < lb - 1e-6 * max(1.0, abs(lb)):  # pragma: no cover - a bug
        raise RuntimeError(
            f"Internal error: a tree in the search's space has objective {objective} below "
            f"the proven lower bound {lb}."
        )
    return Certificate(
        name=checked.name,
        objective=objective,
        breakdown=breakdown,
        lower_bound=lb,
        upper_bound=ub,
        proven_optimal=bool(proven_optimal),
        gap=objective - lb,
        in_space=in_space,
        splits=tuple(splits),
        max_depth=checked.max_depth,
        max_breakpoints=checked.max_breakpoints,
        split_penalty=checked.split_penalty,
        breakpoint_penalty=checked.breakpoint_penalty,
        candidate_leaves=leaves,
        all_candidates=all_cands,
        notes=tuple(notes),
    )


def all_thresholds_feasible(n_samples: int, n_features: int) -> bool:
    """Whether to offer every midpoint as a candidate: ``n_samples * n_features`` is at
    most :data:`ALL_THRESHOLDS_MAX_CELLS`."""
    return int(n_samples) * int(n_features) <= ALL_THRESHOLDS_MAX_CELLS


def certify_tree(
    tree,
    X,
    y,
    *,
    split_penalty: float,
    breakpoint_penalty: float,
    max_depth: int | None = None,
    max_breakpoints: int = 1,
    candidate_leaves=(8, 4),
    time_limit: float = 20.0,
    name: str = "The tree",
) -> Certificate:
    """Run a Literati search on ``(X, y)`` and certify ``tree`` against it.

    ``max_depth`` defaults to the tree's depth (at least 1, at most 8);
    ``candidate_leaves='all'`` (or None) makes every midpoint a candidate, so every split
    that separates the rows reaching it is in the search's space (slower on large data:
    :func:`all_thresholds_feasible`).  Other parameters as :class:`LiteratiClassifier`
    and :func:`certify`.  Raises ``ValueError`` as those.
    """
    shape_tree = as_shape_tree(tree)
    depth = max(1, min(8, shape_tree.max_depth)) if max_depth is None else int(max_depth)
    leaves = None if candidate_leaves == "all" else candidate_leaves
    search = LiteratiClassifier(
        max_depth=depth,
        max_breakpoints=max_breakpoints,
        split_penalty=split_penalty,
        breakpoint_penalty=breakpoint_penalty,
        candidate_leaves=leaves,
        time_limit=time_limit,
    ).fit(X, y)
    return certify(shape_tree, X, y, search, name=name)
