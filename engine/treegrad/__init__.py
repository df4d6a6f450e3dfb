"""TreeGrad: O(L) gradients of the multilinear extension of a tree's path-dependent game,
TreeGrad-Ranker, TreeGrad-Shap (Beta semivalues), weighted Banzhaf, TreeProb and
insertion/deletion curves (SPEC section 3; paper: "TreeGrad-Ranker: Feature Ranking via
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
    "Curves", "RankResult", "banzhaf", "best_curves", "beta_shapley", "game_value",
    "insertion_deletion", "multilinear", "quadrature", "random_insertion_deletion", "rank",
    "shapley", "treegrad", "treeprob",
]


@register_warmup("treegrad")
def _warmup() -> None:
    """Compile (or load from cache) every TreeGrad kernel on a tiny stump (float64 X)."""
    from engine.tree import _tiny_tree

    tree = _tiny_tree()
    X = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float64)
    treegrad(tree, X, np.array([0.5, 1.0]))
    rank(tree, X, steps=2)
    rank(tree, X[0], steps=2, optimizer="adam")
    game_value(tree, X, [0])
    treeprob(tree, X[0])
    treeprob(tree, X[0], nodes="chebyshev")
