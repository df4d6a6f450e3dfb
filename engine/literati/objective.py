"""Any tree as a Literati shape tree, and its objective in Literati's terms.

A tree from elsewhere (scikit-learn's ``DecisionTreeClassifier``, TreeLab's
``CARTClassifier``, a ``pystreed.STreeDClassifier`` fitted on 0/1 threshold columns, or
Literati's own trees) is read as a shape tree by :func:`as_shape_tree`: a threshold split
``x_j <= t`` is a shape function with ``K = 1`` breakpoint.  :func:`tree_objective` gives
its objective on the training rows (docs/spec.md section 1)::

    Err(T) + sum over internal nodes v of (lambda + alpha * K_v)

:mod:`engine.literati.certify` compares it with a search's proven lower bound (and
re-exports both names).
"""

from __future__ import annotations

import numpy as np

from engine.literati.shapes import goes_left, internal_nodes, node_breakpoints
from engine.tree import TREE_LEAF, TreeArrays

__all__ = ["as_shape_tree", "tree_objective"]


def as_shape_tree(model, binarisation=None) -> TreeArrays:
    """The fitted classification tree of ``model`` as a :class:`engine.tree.TreeArrays`
    whose splits are shape functions (a threshold split is ``K = 1``).

    Parameters
    ----------
    model : TreeArrays or fitted estimator
        A :class:`TreeArrays` (returned as is); an estimator whose ``tree_`` is a
        :class:`TreeArrays` (TreeLab's ``CARTClassifier``, ``LiteratiClassifier``,
        ``GreedyShapeTreeClassifier``); a scikit-learn ``DecisionTreeClassifier``
        (through :func:`engine.tree.from_sklearn`, which keeps scikit-learn's float32
        comparison); or a ``pystreed.STreeDClassifier`` fitted on 0/1 columns, with
        ``binarisation``.
    binarisation : sequence of (int, float), optional
        For a pystreed tree only: column ``c`` of the 0/1 matrix it was fitted on is
        ``x[feature] <= threshold`` with ``(feature, threshold) = binarisation[c]``.

    Returns
    -------
    TreeArrays
        A classification tree over the original features.

    Raises
    ------
    TypeError
        ``model`` is none of the above.
    ValueError
        The model is not fitted, is a regression tree, or is a pystreed tree without
        ``binarisation`` (or one naming a column it does not have).
    """
    if isinstance(model, TreeArrays):
        tree = model
    elif hasattr(model, "get_tree") and hasattr(model, "optimization_task"):
        tree = _from_pystreed(model, binarisation)
    elif isinstance(getattr(model, "tree_", None), TreeArrays):
        tree = model.tree_
    elif hasattr(model, "tree_") and hasattr(model.tree_, "children_left"):
        from engine.tree import from_sklearn

        tree = from_sklearn(model)
    elif hasattr(model, "fit") and not hasattr(model, "tree_"):
        raise ValueError(f"{type(model).__name__} is not fitted: call fit before certifying it.")
    else:
        raise TypeError(
            "Certify a TreeArrays, a fitted scikit-learn DecisionTreeClassifier, a TreeLab "
            "CARTClassifier, a Literati or greedy shape tree, or a pystreed "
            f"STreeDClassifier; got {type(model).__name__}."
        )
    if not isinstance(tree, TreeArrays) or tree.task != "classification":
        raise ValueError("Only classification trees can be certified (Literati counts errors).")
    return tree


def _from_pystreed(model, binarisation) -> TreeArrays:
    """A pystreed accuracy tree on 0/1 columns ``x[f] <= t`` as a threshold tree: pystreed
    sends 0 left, i.e. ``x[f] > t``, so its children are swapped."""
    if binarisation is None:
        raise ValueError(
            "A pystreed tree is fitted on 0/1 columns: pass binarisation=[(feature, "
            "threshold), ...] so that column c is x[feature] <= threshold."
        )
    try:
        root = model.get_tree()
    except Exception as exc:  # noqa: BLE001 -- pystreed raises its own types
        raise ValueError(f"The pystreed tree could not be read: {exc}") from exc
    classes = np.asarray(model.classes_) if hasattr(model, "classes_") else None
    nodes: list = []

    def visit(node) -> int:
        i = len(nodes)
        nodes.append(None)
        if node.is_leaf_node():
            nodes[i] = ("leaf", int(node.label))
            return i
        column = int(node.feature)
        if not 0 <= column < len(binarisation):
            raise ValueError(
                f"The pystreed tree splits on column {column}, but binarisation names "
                f"{len(binarisation)} columns."
            )
        left = visit(node.right_child)  # column == 1: x <= t
        right = visit(node.left_child)
        nodes[i] = ("split", column, left, right)
        return i

    visit(root)
    labels = [nd[1] for nd in nodes if nd[0] == "leaf"]
    n_classes = len(classes) if classes is not None else max(labels) + 1
    if classes is None:
        classes = np.arange(n_classes)
    m = len(nodes)
    cl = np.full(m, TREE_LEAF, dtype=np.int64)
    cr = np.full(m, TREE_LEAF, dtype=np.int64)
    feat = np.full(m, -2, dtype=np.int64)
    thr = np.full(m, -2.0)
    val = np.zeros((m, 1, n_classes))
    n_features = 1 + max(int(f) for f, _ in binarisation)
    for i, nd in enumerate(nodes):
        if nd[0] == "leaf":
            val[i, 0, nd[1]] = 1.0
        else:
            f, t = binarisation[nd[1]]
            feat[i], thr[i] = int(f), float(t)
            cl[i], cr[i] = nd[2], nd[3]
            val[i, 0, :] = 1.0 / n_classes
    ones = np.ones(m, dtype=np.int64)
    return TreeArrays(
        cl,
        cr,
        feat,
        thr,
        np.zeros(m),
        ones,
        ones.astype(np.float64),
        val,
        task="classification",
        n_features=n_features,
        classes_=classes,
    )


def _node_goes_left(tree: TreeArrays, node: int, col: np.ndarray) -> np.ndarray:
    """bool: which values ``col`` of ``node``'s feature go left, exactly as the tree routes
    (scikit-learn's float32 comparison for imported trees, shapes, category sets, NaN)."""
    has_shape = tree.bp_offsets is not None and tree.bp_offsets[node + 1] > tree.bp_offsets[node]
    if has_shape or tree.category_set(node) is not None:
        return goes_left(tree, node, col)
    threshold = tree.routing_arrays()[3][node]
    with np.errstate(invalid="ignore"):
        left = col <= threshold
    if tree.missing_go_to_left is not None:
        left = np.where(np.isnan(col), bool(tree.missing_go_to_left[node]), left)
    return left


def _node_rows(tree: TreeArrays, X: np.ndarray) -> dict[int, np.ndarray]:
    """node id -> int64 indices of the rows of ``X`` that reach it (every node)."""
    out = {0: np.arange(X.shape[0], dtype=np.int64)}
    stack = [0]
    while stack:
        v = stack.pop()
        if tree.children_left[v] == TREE_LEAF:
            continue
        rows = out[v]
        left = _node_goes_left(tree, v, X[rows, tree.feature[v]])
        a, b = int(tree.children_left[v]), int(tree.children_right[v])
        out[a], out[b] = rows[left], rows[~left]
        stack += [b, a]
    return out


def _codes(y, tree: TreeArrays | None = None):
    y = np.asarray(y).reshape(-1)
    classes, codes = np.unique(y, return_inverse=True)
    return classes, codes.astype(np.int64)


def tree_objective(tree, X, y, split_penalty: float, breakpoint_penalty: float) -> dict:
    """Literati's objective of ``tree`` on the rows ``(X, y)``.

    Parameters
    ----------
    tree : TreeArrays or fitted tree model
        Read with :func:`as_shape_tree`.
    X : array-like of shape (n_samples, n_features)
        Rows (float64; NaN only for a tree with a rule for missing values).
    y : array-like of shape (n_samples,)
        Class labels.
    split_penalty, breakpoint_penalty : float
        lambda and alpha, in misclassified rows.

    Returns
    -------
    dict
        ``errors`` (rows that disagree with their leaf's majority class on these rows:
        Literati's ``Err``), ``own_errors`` (rows that disagree with the tree's own leaf
        labels; larger when the tree was fitted on other rows or weights), ``n_splits``,
        ``n_breakpoints`` (sum of ``K_v``, 1 for a threshold split), ``split_cost``,
        ``breakpoint_cost``, ``objective`` and ``own_objective`` (the same with
        ``own_errors``), ``depth``, ``max_k`` (largest ``K_v``, 0 for a leaf).

    Raises
    ------
    ValueError
        Bad ``X`` (as :meth:`TreeArrays.check_X`) or ``y`` of another length.
    """
    tree = as_shape_tree(tree)
    Xc = tree.check_X(X)
    classes, codes = _codes(y)
    if codes.shape[0] != Xc.shape[0]:
        raise ValueError(f"X has {Xc.shape[0]} rows but y has {codes.shape[0]} labels.")
    rows = _node_rows(tree, Xc)
    C = classes.shape[0]
    y_arr = np.asarray(y).reshape(-1)
    errors = own_errors = 0
    for v, idx in rows.items():
        if tree.children_left[v] != TREE_LEAF or idx.size == 0:
            continue
        counts = np.bincount(codes[idx], minlength=C)
        errors += int(idx.size - counts.max())
        label = tree.classes_[int(np.argmax(tree.value[v, 0, :]))]
        own_errors += int(np.sum(y_arr[idx] != label))
    inner = internal_nodes(tree)
    ks = [int(node_breakpoints(tree, v).size) for v in inner]
    n_splits, n_bp = len(inner), int(sum(ks))
    lam, alpha = float(split_penalty), float(breakpoint_penalty)
    cost = lam * n_splits + alpha * n_bp
    return {
        "errors": errors,
        "own_errors": own_errors,
        "n_splits": n_splits,
        "n_breakpoints": n_bp,
        "split_cost": lam * n_splits,
        "breakpoint_cost": alpha * n_bp,
        "objective": errors + cost,
        "own_objective": own_errors + cost,
        "depth": tree.max_depth,
        "max_k": max(ks, default=0),
    }
