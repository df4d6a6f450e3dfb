"""Size selection of a best-first Partition Tree: the tree as it was after k splits.

Best-first growth appends the two children of the s-th split as nodes 2s - 1 and 2s
(root 0), so the tree after s splits is nodes ``0 .. 2s`` with every node whose children
came later turned back into a leaf. :func:`truncate` rebuilds it; :func:`best_validation_size`
picks the size of the lowest validation NLL on a growth trace.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from engine.partition.growth import LEAF, PartitionTreeArrays

#: What a node that becomes a leaf again gets, per field (other fields keep their values:
#: counts, Y bounds and depth describe the cell, whatever happens below it).
_LEAF_VALUES = {"kind": LEAF, "feature": -1, "threshold": np.nan, "left": -1, "right": -1}


def truncate(tree: PartitionTreeArrays, n_leaves: int) -> PartitionTreeArrays:
    """The tree after its first ``n_leaves - 1`` splits (a new object; ``tree`` is kept).

    Equal to the tree the growth had built at that size (same nodes, ids and trace up to
    that step). Raises ValueError unless ``1 <= n_leaves <= tree.n_leaves``.
    """
    grown = tree.n_leaves
    if not 1 <= int(n_leaves) <= grown:
        raise ValueError(f"n_leaves must be in [1, {grown}], got {n_leaves}")
    keep = 2 * (int(n_leaves) - 1) + 1
    n_nodes = tree.kind.shape[0]
    out = {}
    for f in dataclasses.fields(tree):
        v = getattr(tree, f.name)
        if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == n_nodes:
            v = v[:keep].copy()
        elif isinstance(v, list) and f.name != "trace" and len(v) == n_nodes:
            v = list(v[:keep])
        out[f.name] = v
    cut = out["left"] >= keep
    for name, value in _LEAF_VALUES.items():
        out[name][cut] = value
    for name in ("missing_left", "n_missing"):  # a leaf routes no missing values
        if out.get(name) is not None:
            out[name][cut] = 0
    out["gain"][cut] = 0.0
    if isinstance(out.get("cat_left"), list):
        for i in np.flatnonzero(cut):
            out["cat_left"][i] = None
    out["trace"] = list(tree.trace[: int(n_leaves)])
    return PartitionTreeArrays(**out)


def best_validation_size(trace) -> int | None:
    """Number of leaves with the lowest validation NLL in ``trace`` rows
    ``(n_leaves, train_nll, val_nll)`` (NaN rows skipped; ties: the fewest leaves), or
    None when no row has a validation NLL."""
    t = np.asarray(trace, dtype=np.float64).reshape(-1, 3)
    ok = np.isfinite(t[:, 2])
    if not ok.any():
        return None
    i = np.flatnonzero(ok)[int(np.argmin(t[ok, 2]))]
    return int(t[i, 0])
