"""TreeGrad: O(L) gradients of the multilinear extension of a tree's path-dependent game,
TreeGrad-Ranker, TreeGrad-Shap (Beta semivalues), weighted Banzhaf, TreeProb and
insertion/deletion curves (docs/spec.md section 3; paper: "TreeGrad-Ranker: Feature Ranking via
O(L)-Time Gradients for Decision Trees", ICLR 2026, https://openreview.net/forum?id=OcMeNbkN13).

Public API (see :mod:`engine.treegrad.api` for shapes, dtypes and errors):
``game_value``, ``multilinear``, ``treegrad``, ``rank``, ``beta_shapley``, ``shapley``,
``banzhaf``, ``treeprob``, ``insertion_deletion``, ``random_insertion_deletion``,
``best_curves``.
"""

from __future__ import annotations

import numpy as np

from engine._numba import register_warmup
from engine.treegrad.api import (
    Curves,
    RankResult,
    banzhaf,
    best_curves,
    beta_shapley,
    game_value,
    insertion_deletion,
    multilinear,
    quadrature,
    random_insertion_deletion,
    rank,
    shapley,
    treegrad,
    treeprob,
)

__all__ = [
    "Curves",
    "RankResult",
    "banzhaf",
    "best_curves",
    "beta_shapley",
    "game_value",
    "insertion_deletion",
    "multilinear",
    "quadrature",
    "random_insertion_deletion",
    "rank",
    "shapley",
    "treegrad",
    "treeprob",
]


@register_warmup("treegrad")
def _warmup() -> None:
    """Compile (or load from cache) every TreeGrad kernel on a tiny stump (float64 X)."""
    from engine.tree.arrays import _tiny_tree
    from engine.treegrad import _kernels as kernels
    from engine.treegrad._model import pack
    from engine.treegrad.api import _NO_GOLEFT, _rule

    tree = _tiny_tree()
    X = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float64)
    # the walk kernel on a block of samples (one-sample calls below)
    P = pack(tree)
    W = P.walk()
    t, omt, w = _rule(1, 1, W.max_path_features)
    X4 = np.repeat(X, 2, axis=0)
    out = np.zeros((4, 2))
    fb = np.zeros((4, t.shape[0]))
    kernels.count_nonfinite(X4)
    kernels.shap_rows(
        0, 1, P.offs, W.ints, W.floats, X4, _NO_GOLEFT, W.plain, t, omt, w, W.max_depth, out, fb
    )
    for xs in (X, X[0]):  # a batch and one sample (serial kernels for tiny work)
        treegrad(tree, xs, np.array([0.5, 1.0]))
        multilinear(tree, xs, 0.5)
        rank(tree, xs, steps=2)
        rank(tree, xs, steps=2, optimizer="adam")
        beta_shapley(tree, xs)
        banzhaf(tree, xs, 0.3)
        game_value(tree, xs, [0])
        treeprob(tree, xs)
        treeprob(tree, xs, nodes="chebyshev")
        cur = insertion_deletion(tree, xs, np.array([1.0, 0.0]))
        random_insertion_deletion(tree, xs, n_rankings=2)
        best_curves(tree, xs)
        _ = cur.joint
