"""CART and its split strategies (DICS): the numba builder, ``CARTClassifier`` /
``CARTRegressor``, the candidate-threshold strategies and the split profiles of one node.

The builder grows a binary tree entirely inside one numba call (``nogil``):

* **presort once**: every feature's row order is sorted once per fit (``order[f]``, with the
  sorted values ``xs[f]``); a node owns the same contiguous segment ``[start, end)`` of every
  feature's arrays, and a split partitions every feature's segment stably (left rows first),
  so each node sees every feature already sorted - O(n_node) per feature instead of a sort;
* **split search** at a node, per feature: the strategy's candidate positions
  (:func:`engine.cart._candidate_kernels.node_positions`; ``exhaustive`` scans inline), then one pass that
  accumulates weighted class counts (or sums) in sorted order and evaluates the impurity
  proxy of :mod:`engine.criteria` at the candidates only; the best proxy wins (strictly
  greater; features in index order, positions left to right);
* **categorical features** (``categorical_features``): best subset split.  Categories are
  ordered by the class-1 proportion (binary classification) or the mean target
  (regression) and the best prefix of that order is taken - optimal for Gini, entropy and
  squared error (Breiman et al. 1984, section 9.4).  Multiclass: a *heuristic* - every
  one-vs-rest ordering (categories by the proportion of class ``c``, for every class
  present) is scanned and the best prefix over all orderings is kept; it is not guaranteed
  to find the optimal subset;
* **growth**: depth-first with an explicit stack (nodes numbered in pre-order, left child
  first, as scikit-learn's ``DepthFirstTreeBuilder``), or best-first by weighted impurity
  decrease when ``max_leaf_nodes`` is set (scikit-learn's ``BestFirstTreeBuilder``);
* stopping rules as scikit-learn: ``depth >= max_depth``, ``n < min_samples_split``,
  ``n < 2 min_samples_leaf``, impurity <= eps, no valid split, or
  ``improvement + eps < min_impurity_decrease``.

With ``splitter='exhaustive'`` the tree equals scikit-learn's ``DecisionTreeClassifier`` /
``DecisionTreeRegressor`` on data whose values are float32-representable and without ties
between different splits (scikit-learn visits features in a random order, we in index
order); ``tests/test_cart.py`` checks it node by node.
Modules (strategies first, then the builder that uses them):

* :mod:`engine.cart.candidates` - the strategies (:data:`STRATEGIES`,
  :func:`candidate_thresholds`); their per-node kernels in ``_candidate_kernels``;
* :mod:`engine.cart.dics` - the DICS dictionary (:func:`dics_dictionary`);
* ``_split_kernels`` / ``_node_kernels`` / ``_grow_kernels`` - the builder's numba kernels
  (split search over the features; one node's split and children; growth of the whole
  tree);
* :mod:`engine.cart.builder` - :func:`build_tree` (-> :class:`GrownTree`), :func:`presort`,
  :func:`feature_breakpoints`;
* :mod:`engine.cart.estimator` - :class:`CARTClassifier`, :class:`CARTRegressor`;
* :mod:`engine.cart.profile` - what each strategy tries and picks at one node
  (:func:`split_profile`, the Split strategies page);
* :mod:`engine.cart.registration` - the Compare page's CART entry.
"""

from engine.cart import registration  # noqa: F401  (registers CART with the Compare page)
from engine.cart._grow_kernels import grow_tree
from engine.cart.builder import GrownTree, build_tree, feature_breakpoints, presort
from engine.cart.candidates import STRATEGIES, candidate_thresholds, strategies_for
from engine.cart.dics import DICSDictionary, dics_dictionary
from engine.cart.estimator import CARTClassifier, CARTRegressor
from engine.cart.profile import SplitProfile, StrategyResult, node_mask, split_profile

__all__ = [
    "STRATEGIES",
    "CARTClassifier",
    "CARTRegressor",
    "DICSDictionary",
    "GrownTree",
    "SplitProfile",
    "StrategyResult",
    "build_tree",
    "candidate_thresholds",
    "dics_dictionary",
    "feature_breakpoints",
    "grow_tree",
    "node_mask",
    "presort",
    "split_profile",
    "strategies_for",
]
