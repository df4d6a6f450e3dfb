"""Model preparation: any supported model + ``class_index`` -> packed arrays for the kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.tree import TreeArrays, TreeEnsemble, from_lightgbm, from_sklearn, from_xgboost


@dataclass(eq=False)
class Packed:
    """One explained output of a model as concatenated node arrays (see ``_kernels``).

    ``offset`` is the additive constant of the output (boosting's initial raw score, signed
    for binary class 0); it enters game values and fbar, not gradients or attributions.
    Nodes are renumbered in depth-first pre-order (left subtree first), the order the
    kernels visit them, so a traversal walks the arrays forwards (a best-first tree of 100k
    leaves numbered in growth order made every node a cache miss, ~15x slower);
    ``new_ids[t][u]`` is the packed position of node ``u`` of tree ``t`` (without the offset).
    """

    offs: np.ndarray
    left: np.ndarray
    right: np.ndarray
    feat: np.ndarray
    parent: np.ndarray
    ratio: np.ndarray
    cover: np.ndarray
    rv: np.ndarray
    lv: np.ndarray
    thr: np.ndarray
    trees: list[TreeArrays]
    new_ids: list[np.ndarray]
    n_features: int
    max_depth: int
    offset: float
    model: TreeArrays | TreeEnsemble
    class_index: int
    _walk: Walk | None = None

    @property
    def plain(self) -> bool:
        """True when every split is a threshold split (no categorical set splits)."""
        return not any(t.has_categorical_splits for t in self.trees)

    def walk(self) -> Walk:
        """The walk tables of the TreeGrad-Shap kernels (built once, then cached)."""
        if self._walk is None:
            self._walk = make_walk(self)
        return self._walk

    def check_X(self, X: Any, finite: bool = True) -> tuple[np.ndarray, bool]:
        """Rows as float64 C-contiguous 2-D; returns ``(X2d, was_1d)``.

        Raises ``ValueError`` (wrong number of features, NaN/inf, non-numeric, > 2-D).
        A writable float64 C-contiguous array of the right width is used as is (a view);
        with ``finite=False`` its values are not checked here (the caller's kernel counts
        non-finite values and calls this again with ``finite=True`` to raise).
        """
        if (
            type(X) is np.ndarray
            and X.dtype == np.float64
            and 1 <= X.ndim <= 2
            and X.shape[-1] == self.n_features
            and X.flags.c_contiguous
            and X.flags.writeable
        ):
            arr = X.reshape(1, -1) if X.ndim == 1 else X
            if not finite or np.isfinite(arr).all():
                return arr, X.ndim == 1
        arr = np.asarray(X) if not isinstance(X, np.ndarray) else X
        was_1d = arr.ndim == 1
        if was_1d:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2:
            raise ValueError(
                f"X must be 1-D (one sample) or 2-D (samples x features), got {arr.ndim}-D"
            )
        out = self.model.check_X(arr)
        if np.isnan(out).any():
            raise ValueError(
                "X contains NaN; TreeGrad needs observed feature values: impute or drop "
                "those rows before explaining them"
            )
        if not np.all(np.isfinite(out)):
            raise ValueError("X contains inf; TreeGrad needs finite feature values")
        return out, was_1d

    def goleft(self, X: np.ndarray) -> np.ndarray:
        """uint8 ``(n_samples, n_nodes)``: 1 where the sample goes left at an internal node."""
        m = X.shape[0]
        out = np.zeros((m, self.left.shape[0]), dtype=np.uint8)
        if not any(t.has_categorical_splits for t in self.trees):
            from engine.treegrad._kernels import goleft_plain

            goleft_plain(self.left, np.maximum(self.feat, 0), self.thr, X, out)
            return out
        for t, tree in enumerate(self.trees):
            o = int(self.offs[t])
            internal = np.flatnonzero(tree.children_left >= 0)
            if internal.size == 0:
                continue
            thr = tree.routing_arrays()[3]
            cols = X[:, tree.feature[internal]]
            gl = cols <= thr[internal]
            if tree.has_categorical_splits:
                for k, node in enumerate(internal):
                    cats = tree.category_set(int(node))
                    if cats is not None:
                        gl[:, k] = np.isin(cols[:, k], cats.astype(np.float64))
            out[:, o + self.new_ids[t][internal]] = gl
        return out


@dataclass(eq=False)
class Walk:
    """Per-model tables of the pre-order TreeGrad-Shap kernels (``_kernels.walk_tables``).

    ``ints`` int64 ``(n_nodes, 5)`` (depth, feature of the edge into the node, depth of the
    nearest ancestor edge on the same feature or ``max_depth + 1``, parent, flags),
    ``floats`` float64 ``(n_nodes, 3)`` (parent's threshold, cover ratio, ``lv``);
    ``max_path_features``: the most distinct features on a root-to-leaf path, which sets
    the quadrature size; ``plain``: no categorical set splits (routing from thresholds).
    """

    ints: np.ndarray
    floats: np.ndarray
    max_depth: int
    max_path_features: int
    plain: bool


def make_walk(P: Packed) -> Walk:
    """Build the :class:`Walk` tables of a packed model (O(n_nodes * max_depth))."""
    from engine.treegrad._kernels import walk_tables

    n = P.left.shape[0]
    ints = np.zeros((n, 5), dtype=np.int64)
    floats = np.zeros((n, 3), dtype=np.float64)
    depth, n_path = walk_tables(
        P.left, np.maximum(P.feat, 0), P.parent, P.thr, P.ratio, P.lv, ints, floats
    )
    return Walk(ints, floats, int(depth), int(n_path), P.plain)


def _is_sklearn(model: Any) -> bool:
    return type(model).__module__.startswith("sklearn.")


def as_treelab(model: Any) -> TreeArrays | TreeEnsemble:
    """Our ``TreeArrays``/``TreeEnsemble`` as is (or the ``tree_`` of a TreeLab estimator such
    as :class:`engine.cart.CARTClassifier`); a fitted scikit-learn tree/forest/GB
    converted with :func:`engine.tree.from_sklearn`; a fitted XGBoost / LightGBM model
    converted with :func:`engine.tree.from_xgboost` / :func:`engine.tree.from_lightgbm`;
    anything else raises ``TypeError``."""
    if isinstance(model, (TreeArrays, TreeEnsemble)):
        return model
    if isinstance(getattr(model, "tree_", None), TreeArrays):  # TreeLab's own estimators
        return model.tree_
    library = type(model).__module__.split(".")[0]
    if library in ("xgboost", "lightgbm"):  # converted through their JSON dumps
        convert = from_xgboost if library == "xgboost" else from_lightgbm
        try:
            return convert(model)
        except ValueError as exc:
            raise TypeError(f"unsupported {library} model {type(model).__name__}: {exc}") from exc
    if _is_sklearn(model):
        try:
            return from_sklearn(model)
        except (TypeError, ValueError, AttributeError) as exc:
            raise TypeError(
                f"unsupported scikit-learn model {type(model).__name__}: {exc}"
            ) from exc
    raise TypeError(
        f"unsupported model {type(model).__name__}: expected TreeArrays, TreeEnsemble, a "
        "fitted scikit-learn decision tree, random forest or gradient boosting model, or an "
        "XGBoost / LightGBM model"
    )


def n_outputs(model: TreeArrays | TreeEnsemble) -> int:
    """Number of valid ``class_index`` values (1 for regression)."""
    if isinstance(model, TreeArrays):
        return model.n_classes if model.task == "classification" else 1
    if model.kind == "forest":
        return model.trees[0].n_classes if model.task == "classification" else 1
    if model.task == "classification":
        return max(2, model.base.shape[0])
    return 1


def _resolve_class(model: TreeArrays | TreeEnsemble, class_index: Any) -> int:
    k = n_outputs(model)
    if class_index is None:
        if k == 1:
            return 0
        if k == 2:
            return 1
        raise ValueError(f"class_index is required for a model with {k} classes (0..{k - 1})")
    if isinstance(class_index, bool) or not isinstance(class_index, (int, np.integer)):
        raise ValueError(f"class_index must be an int in [0, {k}), got {class_index!r}")
    c = int(class_index)
    if not 0 <= c < k:
        raise ValueError(
            f"class_index {c} out of range: this model has {k} output(s) (valid 0..{k - 1})"
        )
    return c


def _leaf_column(tree: TreeArrays, col: int) -> np.ndarray:
    v = tree.value[:, 0, :]
    if tree.task == "classification":
        s = v.sum(axis=1, keepdims=True)
        v = np.where(s > 0, v / np.where(s > 0, s, 1.0), v)
    return np.ascontiguousarray(v[:, col], dtype=np.float64)


def pack(model: Any, class_index: Any = None) -> Packed:
    """Prepare ``model`` (ours or scikit-learn) for explaining output ``class_index``.

    * ``TreeArrays``: leaf class fractions (rows renormalised) or regression values.
    * forest: mean of the trees (weight ``1 / n_trees``).
    * boosting: ``base + learning_rate * sum`` of the trees of that class's raw score;
      binary classifiers model class 1, class 0 is the negative (sign -1).

    ``class_index`` ``None`` means 0 for regression and 1 for binary classification; it is
    required for multiclass.  Raises ``TypeError`` (unsupported model) and ``ValueError``
    (bad ``class_index``).  Our own models are packed once per ``class_index`` and cached on
    the object; pass ``from_sklearn(model)`` instead of a scikit-learn model to reuse it.
    """
    if isinstance(model, (TreeArrays, TreeEnsemble)) and (
        class_index is None or type(class_index) is int
    ):
        # fast path for repeated calls: the packed output under the class_index as given
        hit = model.__dict__.get("_treegrad_packed", {}).get(("given", class_index))
        if hit is not None:
            return hit
    given = class_index
    model = as_treelab(model) if not _is_sklearn(model) else model
    ours = isinstance(model, (TreeArrays, TreeEnsemble))
    model = as_treelab(model)
    c = _resolve_class(model, class_index)
    if ours:
        # TreeArrays / TreeEnsemble are immutable by contract: keep the packed arrays on the
        # object (a scikit-learn model may be refitted in place, so it is converted each call).
        cache = model.__dict__.setdefault("_treegrad_packed", {})
        if c not in cache:
            cache[c] = _pack(model, c)
        if given is None or type(given) is int:
            cache[("given", given)] = cache[c]
        return cache[c]
    return _pack(model, c)


def preorder_ids(
    children_left: np.ndarray, children_right: np.ndarray, depth: np.ndarray
) -> np.ndarray:
    """Depth-first pre-order position (root 0, left subtree before right) of every node,
    int64 ``(n_nodes,)``; vectorised level by level (subtree sizes bottom-up, positions
    top-down).  The identity for trees grown depth-first (scikit-learn's default builder)."""
    cl, cr = children_left, children_right
    n = cl.size
    internal = np.flatnonzero(cl >= 0)
    if internal.size == 0:
        return np.arange(n, dtype=np.int64)
    size = _subtree_sizes(cl, cr, depth)
    if np.array_equal(cl[internal], internal + 1) and np.array_equal(
        cr[internal], internal + 1 + size[cl[internal]]
    ):
        return np.arange(n, dtype=np.int64)
    by_depth = internal[np.argsort(depth[internal], kind="stable")]
    bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
    pos = np.zeros(n, dtype=np.int64)
    for d in range(bounds.size - 1):
        nodes = by_depth[bounds[d] : bounds[d + 1]]
        pos[cl[nodes]] = pos[nodes] + 1
        pos[cr[nodes]] = pos[nodes] + 1 + size[cl[nodes]]
    return pos


def _subtree_sizes(cl: np.ndarray, cr: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Nodes in the subtree of every node (itself included), bottom-up by depth."""
    size = np.ones(cl.size, dtype=np.int64)
    internal = np.flatnonzero(cl >= 0)
    if internal.size == 0:
        return size
    by_depth = internal[np.argsort(-depth[internal], kind="stable")]
    dd = depth[by_depth]
    for d in np.unique(dd)[::-1]:
        nodes = by_depth[dd == d]
        size[nodes] += size[cl[nodes]] + size[cr[nodes]]
    return size


def _pack(model: TreeArrays | TreeEnsemble, c: int) -> Packed:
    if isinstance(model, TreeArrays):
        parts = [(model, 1.0, c)]
        offset = 0.0
    elif model.kind == "forest":
        w = 1.0 / model.n_trees
        parts = [(t, w, c) for t in model.trees]
        offset = 0.0
    else:
        if model.base.shape[0] == 1:
            sign = -1.0 if (model.task == "classification" and c == 0) else 1.0
            parts = [(t, sign * model.scale, 0) for t in model.trees]
            offset = sign * float(model.base[0])
        else:
            parts = [
                (t, model.scale, 0)
                for t, k in zip(model.trees, model.tree_output, strict=True)
                if k == c
            ]
            offset = float(model.base[c])
    sizes = [p[0].node_count for p in parts]
    offs = np.zeros(len(parts) + 1, dtype=np.int64)
    offs[1:] = np.cumsum(sizes)
    left, right, feat, parent, ratio, cover, rv, lv, thr = ([] for _ in range(9))
    new_ids = []
    for (tree, w, col), o in zip(parts, offs[:-1], strict=True):
        cl = tree.children_left.astype(np.int64)
        cr = tree.children_right.astype(np.int64)
        leaf = cl < 0
        par = tree.parent.astype(np.int64)
        cov = tree.weighted_n_node_samples.astype(np.float64)
        pc = np.where(par < 0, 1.0, cov[np.maximum(par, 0)])
        r = np.where((par >= 0) & (cov > 0), pc / np.where(cov > 0, cov, 1.0), 1.0)
        val = w * _leaf_column(tree, col)
        val = np.where(leaf, val, 0.0)
        croot = cov[0] if cov[0] > 0 else 1.0
        new = preorder_ids(cl, cr, tree.depth)
        old = np.empty_like(new)
        old[new] = np.arange(new.size)
        new_ids.append(new)
        lo, ro, po = cl[old], cr[old], par[old]
        left.append(np.where(lo < 0, -1, new[np.maximum(lo, 0)] + o))
        right.append(np.where(ro < 0, -1, new[np.maximum(ro, 0)] + o))
        parent.append(np.where(po < 0, -1, new[np.maximum(po, 0)] + o))
        feat.append(np.where(leaf, -1, tree.feature.astype(np.int64))[old])
        ratio.append(r[old])
        cover.append(cov[old])
        rv.append(val[old])
        lv.append((val * cov / croot)[old])
        thr.append(tree.routing_arrays()[3].astype(np.float64)[old])
    cat = [
        np.ascontiguousarray(np.concatenate(a))
        for a in (left, right, feat, parent, ratio, cover, rv, lv, thr)
    ]
    return Packed(
        offs,
        *cat,
        trees=[p[0] for p in parts],
        new_ids=new_ids,
        n_features=int(model.n_features),
        max_depth=int(
            max(t.max_depth for t in model.trees)
            if isinstance(model, TreeEnsemble)
            else model.max_depth
        ),
        offset=offset,
        model=model,
        class_index=c,
    )
