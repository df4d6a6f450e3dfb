"""The :class:`TreeEnsemble`: forests (average of trees) and gradient boosting (additive raw
scores) made of :class:`~engine.tree.TreeArrays`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.tree._checks import (
    _TASKS,
    _as_1d,
    _check_X,
    _classes_list,
    _float_array,
    _float_list,
)
from engine.tree._kernels import _ensemble_apply_kernel, _ensemble_sum_kernel
from engine.tree.arrays import ENSEMBLE_FORMAT, TreeArrays

# ---------------------------------------------------------------------------------------
# TreeEnsemble
# ---------------------------------------------------------------------------------------

_LINKS = ("identity", "logit", "half_logit", "softmax")


def _expit(z: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(z)


@dataclass(eq=False)
class TreeEnsemble:
    """Forest or gradient-boosting model made of :class:`TreeArrays`.

    Fields:

    * ``trees`` - list of ``n_trees`` :class:`TreeArrays` (same ``n_features``).
    * ``tree_output`` - int64 ``(n_trees,)``: the raw-score column each tree adds to
      (the class index for multiclass boosting, 0 for binary/regression boosting), or -1
      when the tree adds its whole value vector (forests).
    * ``scale`` - float: ``1 / n_trees`` for forests (raw = mean of the trees' leaf values),
      the learning rate for boosting (raw = base + scale * sum of leaf values).
    * ``base`` - float64 ``(n_columns,)``: zeros for forests; for boosting the raw
      prediction of the initial estimator (scikit-learn's ``_raw_predict_init``).
    * ``kind`` - 'forest' | 'boosting'; ``task`` - 'classification' | 'regression'.
    * ``classes_``, ``feature_names``.
    * ``link`` - how boosting raw scores become probabilities: 'logit' (binary log-loss,
      p1 = expit(raw)), 'half_logit' (exponential loss, p1 = expit(2 raw)), 'softmax'
      (multiclass), 'identity' (forests and regression).

    Binary boosting models one raw score, for class ``classes_[1]``; the class-0 score is
    its negative (scikit-learn's convention), and ``predict`` picks class 1 when raw >= 0.
    """

    trees: list[TreeArrays]
    tree_output: np.ndarray
    scale: float
    base: np.ndarray
    kind: str
    task: str
    classes_: np.ndarray | None = None
    feature_names: list[str] | None = None
    link: str = "identity"
    _packed: tuple | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.trees:
            raise ValueError("trees is empty: an ensemble needs at least one tree")
        if not all(isinstance(t, TreeArrays) for t in self.trees):
            raise ValueError("trees must be a list of TreeArrays")
        self.trees = list(self.trees)
        if self.kind not in ("forest", "boosting"):
            raise ValueError(f"kind must be 'forest' or 'boosting', got {self.kind!r}")
        if self.task not in _TASKS:
            raise ValueError(f"task must be one of {_TASKS}, got {self.task!r}")
        if self.link not in _LINKS:
            raise ValueError(f"link must be one of {_LINKS}, got {self.link!r}")
        self.tree_output = _as_1d("tree_output", self.tree_output, np.int64, len(self.trees))
        self.base = _as_1d("base", self.base, np.float64)
        self.scale = float(self.scale)
        nf = {t.n_features for t in self.trees}
        if len(nf) != 1:
            raise ValueError(f"trees disagree on n_features: {sorted(nf)}")
        if self.classes_ is not None:
            self.classes_ = np.array(self.classes_, copy=True)
        if self.feature_names is not None:
            self.feature_names = [str(s) for s in self.feature_names]
            if len(self.feature_names) != self.n_features:
                raise ValueError(
                    f"feature_names has {len(self.feature_names)} names, expected {self.n_features}"
                )
        if self.kind == "forest":
            widths = {t.n_classes for t in self.trees}
            if len(widths) != 1 or np.any(self.tree_output != -1):
                raise ValueError("a forest needs trees of one value width and tree_output -1")
            if {t.task for t in self.trees} != {self.task}:
                raise ValueError(f"every tree of a {self.task} forest must be {self.task}")
            if self.base.shape[0] != widths.pop():
                raise ValueError("base must have one entry per value column of the trees")
        else:
            if any(t.task != "regression" for t in self.trees):
                raise ValueError("boosting trees must be regression trees (one value column)")
            if np.any(self.tree_output < 0) or self.tree_output.max() >= self.base.shape[0]:
                raise ValueError("tree_output must index a column of base for boosting")
        if self.task == "classification" and self.classes_ is None:
            raise ValueError("classes_ is required for a classification ensemble")

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return len(self.trees)

    @property
    def n_features(self) -> int:
        """Columns of ``X``."""
        return self.trees[0].n_features

    def _pack(self):
        """Concatenate the trees' routing arrays (cached) for the ensemble kernels."""
        if self._packed is None:
            offs = np.zeros(self.n_trees + 1, dtype=np.uint64)
            offs[1:] = np.cumsum([t.node_count for t in self.trees])
            routing = [t.routing_arrays() for t in self.trees]
            left, right, feat, thr = (
                np.ascontiguousarray(np.concatenate(parts)) for parts in zip(*routing, strict=True)
            )
            values = np.ascontiguousarray(
                np.concatenate([t.value[:, 0, :] for t in self.trees]), dtype=np.float64
            )
            plain = not any(t.has_categorical_splits or t.has_shape_splits for t in self.trees)
            self._packed = (offs, left, right, feat, thr, values, plain)
        return self._packed

    def check_X(self, X: Any) -> np.ndarray:
        """Validate rows as :meth:`TreeArrays.check_X`; NaN is accepted when every tree
        routes missing values (has ``missing_go_to_left``)."""
        routes_nan = all(t.routes_missing for t in self.trees)
        return _check_X(X, self.n_features, self.feature_names, allow_nan=routes_nan)

    def apply(self, X: Any) -> np.ndarray:
        """Leaf ids int64 ``(n_samples, n_trees)`` (ids local to each tree)."""
        X = self.check_X(X)
        offs, cl, cr, feat, thr, _values, plain = self._pack()
        if not plain or np.isnan(X).any():  # NaN: each tree's missing_go_to_left
            return np.column_stack([t._route(X) for t in self.trees])
        return _ensemble_apply_kernel(offs, cl, cr, feat, thr, X)

    def predict_raw(self, X: Any) -> np.ndarray:
        """Raw ensemble output, float64.

        * forest: the mean over trees of the leaf values = scikit-learn ``predict_proba``
          ``(n_samples, n_classes)`` for classifiers, ``predict`` ``(n_samples,)`` for
          regressors;
        * boosting: ``base + scale * sum of leaf values`` = scikit-learn
          ``decision_function`` for classifiers (``(n_samples,)`` for binary: the class-1
          score, class 0 has its negative; ``(n_samples, n_classes)`` for multiclass) and
          ``predict`` ``(n_samples,)`` for regressors.
        """
        X = self.check_X(X)
        offs, cl, cr, feat, thr, values, plain = self._pack()
        n_cols = self.base.shape[0]
        out = np.empty((X.shape[0], n_cols), dtype=np.float64)
        out[:] = self.base
        weight = 1.0 if self.kind == "forest" else self.scale
        if plain and not np.isnan(X).any():  # NaN: routed tree by tree (missing_go_to_left)
            _ensemble_sum_kernel(
                offs, cl, cr, feat, thr, values, self.tree_output, float(weight), X, out
            )
        else:
            for t, k, tree in zip(range(self.n_trees), self.tree_output, self.trees, strict=True):
                v = values[int(offs[t]) + tree._route(X)]
                if k < 0:
                    out += v
                else:
                    out[:, k] += weight * v[:, 0]
        if self.kind == "forest":
            out /= self.n_trees
            return out if self.task == "classification" else out[:, 0].copy()
        return out[:, 0].copy() if out.shape[1] == 1 else out

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities float64 ``(n_samples, n_classes)``: forest mean of leaf
        fractions; boosting sigmoid (binary) or softmax (multiclass) of the raw score.
        Raises ``ValueError`` for regression."""
        if self.task != "classification":
            raise ValueError("predict_proba needs a classification ensemble; this is regression")
        raw = self.predict_raw(X)
        if self.kind == "forest":
            return raw
        if self.link in ("logit", "half_logit"):
            p1 = _expit(raw if self.link == "logit" else 2.0 * raw)
            proba = np.empty((raw.shape[0], 2), dtype=np.float64)
            proba[:, 1] = p1
            proba[:, 0] = 1.0 - p1
            return proba
        z = raw - raw.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        """Class labels or regression values ``(n_samples,)``, as scikit-learn's
        ``predict`` (binary boosting: class 1 when raw >= 0)."""
        raw = self.predict_raw(X)
        if self.task == "regression":
            return raw
        if raw.ndim == 1:
            return self.classes_.take((raw >= 0).astype(np.int64), axis=0)
        return self.classes_.take(np.argmax(raw, axis=1), axis=0)

    def to_dict(self) -> dict:
        """JSON-serialisable dict with a ``format`` key; trees via :meth:`TreeArrays.to_dict`."""
        return {
            "format": ENSEMBLE_FORMAT,
            "kind": self.kind,
            "task": self.task,
            "link": self.link,
            "scale": self.scale,
            "base": _float_list(self.base),
            "tree_output": self.tree_output.tolist(),
            "classes": _classes_list(self.classes_),
            "feature_names": self.feature_names,
            "trees": [t.to_dict() for t in self.trees],
        }

    @classmethod
    def from_dict(cls, d: dict) -> TreeEnsemble:
        """Inverse of :meth:`to_dict`; raises ``ValueError`` on a wrong ``format``."""
        if not isinstance(d, dict) or d.get("format") != ENSEMBLE_FORMAT:
            got = d.get("format") if isinstance(d, dict) else type(d).__name__
            raise ValueError(
                f"not a TreeLab ensemble: expected format {ENSEMBLE_FORMAT!r}, got {got!r}"
            )
        return cls(
            trees=[TreeArrays.from_dict(t) for t in d["trees"]],
            tree_output=np.asarray(d["tree_output"], dtype=np.int64),
            scale=float(d["scale"]),
            base=_float_array(d["base"]),
            kind=d["kind"],
            task=d["task"],
            classes_=None if d.get("classes") is None else np.asarray(d["classes"]),
            feature_names=d.get("feature_names"),
            link=d.get("link", "identity"),
        )

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_dict` as strict JSON."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, s: str | bytes) -> TreeEnsemble:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(s))
