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

    tree = _tiny_tree()
    X = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float64)
    for xs in (X, X[0]):  # a batch (parallel kernels) and one sample (serial kernels)
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
