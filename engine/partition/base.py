"""What the four Partition estimators share: :class:`_PartitionBase` (validation, growth,
the per-tree density slices, :meth:`~_PartitionBase.density`, :meth:`~_PartitionBase.nll`,
:meth:`~_PartitionBase.slice`, :meth:`~_PartitionBase.cells`), the tree and forest fitting
mixins, the parameter constraint tables and :func:`lattice_step`.

The estimators themselves, with their docstrings and the Compare page registration, are in
:mod:`engine.partition.estimators`; see its docstring for the density aggregation and the
density floor (docs/spec.md section 2).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from engine.data import DataError
from engine.partition.growth import (
    LEAF,
    X_CAT,
    X_CONT,
    GrowParams,
    PartitionTreeArrays,
    grow_steps,
    grow_tree,
    leaf_of,
    slice_leaves,
)
from engine.partition.pruning import best_validation_size, truncate

DEFAULT_FLOOR = 1e-9
#: How the Partition Tree / Forest treat missing values, in one sentence (pages draw it).
MISSING_VALUES_NOTE = (
    "Missing values: each x split learns where the rows with a missing value go (scored on "
    "both sides; for a categorical feature 'missing' is one more category); a split whose "
    "feature had no missing value in training sends them to the child with more rows."
)
#: Default leaf budgets: classification trees usually stop earlier on min_samples; 512
#: leaves reach the reference log-losses on digits (5-fold CV; see tests).
MAX_LEAVES_REG = 32
MAX_LEAVES_CLF = 512


#: Constraints of the parameters every Partition estimator has (scikit-learn's
#: ``_parameter_constraints`` format).
TREE_CONSTRAINTS: dict = {
    "max_leaves": [Interval(Integral, 1, None, closed="left")],
    "max_depth": [Interval(Integral, 0, None, closed="left"), None],
    "min_samples_xy": [Interval(Integral, 0, None, closed="left")],
    "min_samples_x": [Interval(Integral, 1, None, closed="left")],
    "min_samples_y": [Interval(Integral, 1, None, closed="left")],
    "min_volume_fraction": [Interval(Real, 0, 1, closed="both"), None],
    "boundary_expansion": [Interval(Real, 0, None, closed="left")],
    "categorical_features": ["array-like", None],
    "random_state": ["random_state"],
}
#: Constraints of the trees' own parameters.
SIZE_CONSTRAINTS: dict = {"select_size": [StrOptions({"best_validation", "last"})]}
#: Constraints of the regressors' own parameters.
BOX_CONSTRAINTS: dict = {"box": [StrOptions({"spec", "reference"})]}
#: Most decimals of a y lattice that ``box='reference'`` detects (the reference package's).
MAX_LATTICE_DECIMALS = 9


def lattice_step(y) -> float | None:
    """The resolution r of the decimal lattice the values ``y`` lie on, or None.

    The reference package's automatic target type (``dtype_overrides='auto'``): with d the
    most decimals among the values (at most :data:`MAX_LATTICE_DECIMALS`), r is the greatest
    common divisor of the scaled non-zero values and of the gaps between consecutive distinct
    values, divided by 10^d (integers give 1, prices in cents 0.01).
    """
    from decimal import Decimal

    vals = np.unique(np.asarray(y, dtype=np.float64))
    if vals.size == 0 or not np.all(np.isfinite(vals)):
        return None
    scale = max(max(-Decimal(repr(float(v))).normalize().as_tuple().exponent, 0) for v in vals)
    if scale > MAX_LATTICE_DECIMALS or np.max(np.abs(vals)) * 10.0**scale > 2.0**62:
        return None
    scaled = np.round(vals * 10.0**scale).astype(np.int64)
    quanta = np.concatenate([np.abs(scaled[scaled != 0]), np.diff(scaled)])
    quanta = quanta[quanta > 0]
    if quanta.size == 0:
        return None
    step = float(np.gcd.reduce(quanta)) / 10.0**scale
    ratio = vals / step
    if np.any(np.abs(ratio - np.round(ratio)) > 1e-9 * np.maximum(np.abs(ratio), 1.0)):
        return None
    return step


#: Constraints of the forests' own parameters.
FOREST_CONSTRAINTS: dict = {
    "n_estimators": [Interval(Integral, 1, None, closed="left")],
    "max_samples": [Interval(Real, 0, 1, closed="right")],
    "max_features": [Interval(Real, 0, 1, closed="right")],
    "aggregation": [StrOptions({"unnormalised", "normalised"})],
    "n_jobs": [Integral, None],
}


class _PartitionBase(BaseEstimator):
    _discrete = False
    _default_min_volume = 0.1

    # -- fitting ----------------------------------------------------------------------------
    def _grow_params(self, forest: bool) -> GrowParams:
        mvf = self.min_volume_fraction
        if mvf is None:
            mvf = self._default_min_volume
        return GrowParams(
            max_leaves=int(self.max_leaves),
            max_depth=self.max_depth,
            min_samples_xy=int(self.min_samples_xy),
            min_samples_x=int(self.min_samples_x),
            min_samples_y=int(self.min_samples_y),
            min_volume_fraction=float(mvf),
            max_features=float(self.max_features) if forest else 1.0,
            y_step=float(getattr(self, "y_step_", 0.0)),
            unit_floor=getattr(self, "box", "spec") == "reference",
        )

    def _prepare(self, X, y):
        """Validated ``X`` (float64 ``(n, d)``) and ``y`` as float64 values (class codes
        for a classifier); sets the fitted input attributes.  scikit-learn's checks and
        messages (2-D, no inf, dense, class labels / numeric y; NaN in X is kept: the
        trees route it), raised as :class:`engine.data.DataError`."""
        ndim = getattr(X, "ndim", None)
        if ndim is None and isinstance(X, (list, tuple)):
            ndim = np.asarray(X, dtype=object).ndim
        if ndim is not None and ndim != 2:
            raise DataError(
                f"X must be 2-D (rows x features), got a {ndim}-D array: for a single "
                "feature pass X.reshape(-1, 1) (or a one-column table)"
            )
        try:
            X, y = validate_data(
                self,
                X,
                y,
                dtype=np.float64,
                order="C",
                y_numeric=not self._discrete,
                ensure_all_finite="allow-nan",
            )
            if self._discrete:
                check_classification_targets(y)
        except ValueError as exc:
            raise DataError(str(exc)) from exc
        d = X.shape[1]
        is_cat = np.zeros(d, dtype=bool)
        if self.categorical_features is not None:
            cf = np.asarray(self.categorical_features)
            if cf.dtype == bool:
                is_cat[:] = cf
            else:
                is_cat[cf.astype(np.int64)] = True
        n_cats = np.zeros(d, dtype=np.int64)
        for j in np.flatnonzero(is_cat):
            col = X[:, j]
            col = col[~np.isnan(col)]  # missing values are routed, not a category code
            if np.any(col < 0) or np.any(col != np.round(col)):
                raise DataError(f"categorical feature {j} must hold codes 0..k-1")
            n_cats[j] = int(col.max()) + 1 if col.size else 1
        self.is_categorical_ = is_cat
        self.n_categories_ = n_cats
        self.n_features_in_ = d
        if self._discrete:
            self.classes_, codes = np.unique(y, return_inverse=True)
            yv = codes.astype(np.float64)
            self.n_classes_ = len(self.classes_)
            self.y_box_ = (0.0, float(self.n_classes_))
        else:
            try:
                yv = np.ascontiguousarray(y.astype(np.float64))
            except (TypeError, ValueError):
                raise DataError("y must be numeric for regression") from None
            lo, hi = float(yv.min()), float(yv.max())
            delta = float(self.boundary_expansion) * (hi - lo) / 2.0
            if hi - lo <= 0:
                delta = 0.5
            self.y_box_ = (lo - delta, hi + delta)
            self.y_step_ = 0.0
            if getattr(self, "box", "spec") == "reference":
                step = lattice_step(yv)
                if step is not None:  # the box's ends on the lattice's half steps
                    low = np.floor(self.y_box_[0] / step + 0.5) - 0.5
                    high = np.ceil(self.y_box_[1] / step - 0.5) + 0.5
                    self.y_box_ = (float(low * step), float(high * step))
                    self.y_step_ = step
            self.n_classes_ = 0
        return X, yv

    def _data_description(self) -> dict:
        """What the growth (:func:`grow_tree`, :func:`grow_steps`) reads of the prepared
        data besides ``X`` and ``y``: the categorical columns and their levels, the kind of
        y, the classes and the y box."""
        return dict(
            is_cat=self.is_categorical_,
            n_cats=self.n_categories_,
            discrete_y=self._discrete,
            n_classes=self.n_classes_,
            y_box=self.y_box_,
        )

    def _grow_one(self, X, yv, params, seed, callback=None):
        return grow_tree(
            X,
            yv,
            **self._data_description(),
            params=params,
            rng=check_random_state(seed),
            callback=callback,
        )

    def _finish_fit(self):
        d = self.n_features_in_
        gains = np.zeros(d)
        y_gain = 0.0
        for t in self.trees_:
            for node in np.flatnonzero(t.kind != LEAF):
                if t.kind[node] in (X_CONT, X_CAT):
                    gains[t.feature[node]] += t.gain[node]
                else:
                    y_gain += t.gain[node]
        n_t = len(self.trees_)
        self.gain_importances_ = gains / n_t
        self.y_importance_ = y_gain / n_t
        total = gains.sum()
        self.feature_importances_ = gains / total if total > 0 else np.zeros(d)
        return self

    # -- unnormalised per-tree pieces -------------------------------------------------------
    def _check_X(self, X):
        """``X`` validated against the fitted input (scikit-learn's checks: 2-D, the
        number of features and their names, no inf; NaN kept), as float64; raises
        :class:`engine.data.DataError`."""
        try:
            return validate_data(
                self, X, reset=False, dtype=np.float64, order="C", ensure_all_finite="allow-nan"
            )
        except ValueError as exc:
            raise DataError(str(exc)) from exc

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # NaN in X is routed by each X split's learnt side (engine.partition.growth);
        # sparse X is refused (the scans read dense columns)
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = False
        return tags

    @staticmethod
    def _mass(t: PartitionTreeArrays):
        return t.nxy / np.maximum(t.nx, 1.0)

    def _tree_slices(self, t, X):
        """Continuous y: Z(x) = sum of matched masses and sum of mass * cell midpoint."""
        n = X.shape[0]
        z = np.zeros(n)
        num = np.zeros(n)
        mass = self._mass(t)
        mid = 0.5 * (t.ylo + t.yhi)
        for leaf, rows in slice_leaves(t, X):
            z[rows] += mass[leaf]
            num[rows] += mass[leaf] * mid[leaf]
        return z, num

    def _tree_classes(self, t, X):
        """Discrete y: unnormalised class masses (n, K)."""
        acc = np.zeros((X.shape[0], self.n_classes_))
        mass = self._mass(t)
        for leaf, rows in slice_leaves(t, X):
            m = t.ymask[leaf]
            acc[np.ix_(rows, np.flatnonzero(m))] += mass[leaf] / m.sum()
        return acc

    def _normalised_mode(self):
        return getattr(self, "aggregation", "unnormalised") == "normalised"

    # -- public API -------------------------------------------------------------------------
    def _proba(self, X):
        check_is_fitted(self, "trees_")
        X = self._check_X(X)
        out = np.zeros((X.shape[0], self.n_classes_))
        for t in self.trees_:
            acc = self._tree_classes(t, X)
            if self._normalised_mode():
                s = acc.sum(axis=1, keepdims=True)
                acc = np.where(s > 0, acc / np.where(s > 0, s, 1.0), 1.0 / self.n_classes_)
            out += acc
        s = out.sum(axis=1, keepdims=True)
        return np.where(s > 0, out / np.where(s > 0, s, 1.0), 1.0 / self.n_classes_)

    def _codes(self, y) -> np.ndarray:
        """Discrete y: class codes of ``y`` (-1 for a class not seen in training)."""
        pos = {c: i for i, c in enumerate(self.classes_.tolist())}
        return np.array([pos.get(v, -1) for v in np.asarray(y).tolist()], dtype=np.int64)

    def _y_values(self, X, y):
        X = self._check_X(X)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise DataError("X and y have different numbers of rows")
        if self._discrete:
            return X, self._codes(y)
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise DataError("y must be numeric for regression") from None
        if np.isnan(y).any():
            raise DataError("y contains NaN")
        return X, y

    def _tree_terms(self, t, X, y) -> tuple[np.ndarray, np.ndarray]:
        """One tree's contribution ``(num, den)`` to p(y | x) for each row.

        ``y`` holds values (continuous) or codes (discrete, -1 unseen). The forest's density
        is ``sum(num) / sum(den)`` over trees: unnormalised aggregation adds the tree's
        density at y and its slice total Z(x); normalised aggregation adds num / Z and 1.
        """
        n = X.shape[0]
        num = np.zeros(n)
        if self._discrete:
            acc = self._tree_classes(t, X)
            z = acc.sum(axis=1)
            seen = y >= 0
            num[seen] = acc[np.flatnonzero(seen), y[seen]]
            if self._normalised_mode():
                uniform = np.where(seen, 1.0 / self.n_classes_, 0.0)
                return np.where(z > 0, num / np.where(z > 0, z, 1.0), uniform), np.ones(n)
            return num, z
        lo, hi = self.y_box_
        inside = (y >= lo) & (y <= hi)
        leaf = leaf_of(t, X[inside], y[inside])
        num[inside] = self._mass(t)[leaf] / (t.yhi - t.ylo)[leaf]
        z, _ = self._tree_slices(t, X)
        if self._normalised_mode():
            return num / np.where(z > 0, z, 1.0), np.ones(n)
        return num, z

    def _combine(self, num, den, y) -> np.ndarray:
        """p(y | x) from summed :meth:`_tree_terms` (0 outside the support; a slice with no
        mass at all falls back to the uniform density on the support)."""
        if self._discrete:
            inside = y >= 0
            uniform = 1.0 / self.n_classes_
        else:
            lo, hi = self.y_box_
            inside = (y >= lo) & (y <= hi)
            uniform = 1.0 / (hi - lo)
        p = np.where(den > 0, num / np.where(den > 0, den, 1.0), uniform)
        return np.where(inside, p, 0.0)

    def density(self, X, y) -> np.ndarray:
        """p(y | x) per row: a density per unit of y (regression) or a probability
        (classification); 0 outside the Y box or for a class not seen in training."""
        check_is_fitted(self, "trees_")
        X, yv = self._y_values(X, y)
        num = np.zeros(X.shape[0])
        den = np.zeros(X.shape[0])
        for t in self.trees_:
            a, b = self._tree_terms(t, X, yv)
            num += a
            den += b
        return self._combine(num, den, yv)

    def nll(self, X, y, floor: float = DEFAULT_FLOOR) -> tuple[float, int]:
        """Mean negative log-likelihood with density floor ``floor``, and n_out_of_support.

        A row is out of support when its y lies outside the Y box (regression) or its class
        was not seen in training (classification); its density is 0 and is floored.
        """
        d = self.density(X, y)
        if self._discrete:
            n_out = int(np.sum(~np.isin(np.asarray(y), self.classes_)))
        else:
            yv = np.asarray(y, dtype=np.float64)
            n_out = int(np.sum((yv < self.y_box_[0]) | (yv > self.y_box_[1])))
        return float(np.mean(-np.log(np.maximum(d, floor)))), n_out

    def slice(self, x):
        """The normalised conditional density for one x.

        Regression: ``{'edges': (m + 1,), 'heights': (m,)}``, a piecewise-constant density
        over the Y box integrating to 1. Classification: ``{'classes', 'proba'}``.
        """
        check_is_fitted(self, "trees_")
        x = self._check_X(np.asarray(x, dtype=np.float64).reshape(1, -1))
        if self._discrete:
            return {"classes": self.classes_, "proba": self._proba(x)[0]}
        pieces = []
        edges = {self.y_box_[0], self.y_box_[1]}
        for t in self.trees_:
            leaves = [leaf for leaf, _ in slice_leaves(t, x)]
            pieces.append((t, leaves))
            for leaf in leaves:
                edges.update((float(t.ylo[leaf]), float(t.yhi[leaf])))
        e = np.array(sorted(edges))
        mids = 0.5 * (e[:-1] + e[1:])
        total = np.zeros(mids.shape[0])
        for t, leaves in pieces:
            h = np.zeros(mids.shape[0])
            mass = self._mass(t)
            for leaf in leaves:
                sel = (mids > t.ylo[leaf]) & (mids < t.yhi[leaf])
                h[sel] = mass[leaf] / (t.yhi[leaf] - t.ylo[leaf])
            if self._normalised_mode():
                s = np.sum(h * np.diff(e))
                h = h / s if s > 0 else h
            total += h
        s = np.sum(total * np.diff(e))
        heights = total / s if s > 0 else np.full(mids.shape[0], 1.0 / (e[-1] - e[0]))
        return {"edges": e, "heights": heights}

    def cells(self, tree: int = 0) -> list[dict]:
        """The leaves of one fitted tree for drawing.

        Each cell: ``x_low``/``x_high`` (bounds per feature, continuous splits),
        ``x_categories`` (feature -> allowed codes, categorical splits), ``n_xy``, ``n_x`` and
        A_Y: ``y_low``/``y_high``/``density`` (regression) or ``classes`` (classification).
        """
        check_is_fitted(self, "trees_")
        t = self.trees_[tree]
        d = self.n_features_in_
        out = []
        stack = [(0, np.full(d, -np.inf), np.full(d, np.inf), {})]
        while stack:
            node, xlo, xhi, cats = stack.pop()
            k = t.kind[node]
            if k == LEAF:
                cell = {
                    "x_low": xlo.copy(),
                    "x_high": xhi.copy(),
                    "n_xy": float(t.nxy[node]),
                    "n_x": float(t.nx[node]),
                    "x_categories": {f: np.flatnonzero(m) for f, m in cats.items()},
                }
                if self._discrete:
                    cell["classes"] = self.classes_[t.ymask[node]]
                else:
                    cell["y_low"], cell["y_high"] = float(t.ylo[node]), float(t.yhi[node])
                    cell["density"] = float(self._mass(t)[node] / (t.yhi[node] - t.ylo[node]))
                out.append(cell)
            elif k == X_CONT:
                f, thr = t.feature[node], t.threshold[node]
                lh = xhi.copy()
                lh[f] = min(lh[f], thr)
                rl = xlo.copy()
                rl[f] = max(rl[f], thr)
                stack += [(t.left[node], xlo, lh, cats), (t.right[node], rl, xhi, cats)]
            elif k == X_CAT:
                f, mask = int(t.feature[node]), t.cat_left[node]
                here = cats.get(f, np.ones(mask.shape[0], dtype=bool))
                stack += [
                    (t.left[node], xlo, xhi, {**cats, f: here & mask}),
                    (t.right[node], xlo, xhi, {**cats, f: here & ~mask}),
                ]
            else:
                stack += [(t.left[node], xlo, xhi, cats), (t.right[node], xlo, xhi, cats)]
        return out


class _TreeMixin:
    max_features = 1.0

    def _set_tree(self, tree, rows):
        self.n_leaves_grown_ = tree.n_leaves
        self.trees_ = [tree]
        self.partition_tree_ = tree
        self.trace_ = list(rows)
        return self._finish_fit()

    def _seed(self):
        """The growth's random state: ``random_state`` (None = 0, so a tree is
        reproducible by default)."""
        return 0 if self.random_state is None else self.random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, X_val=None, y_val=None, callback=None):
        """Grow best-first; ``trace_`` holds (n_leaves, train NLL, validation NLL).

        Train NLL is the empirical loss of the unnormalised cells (what the growth
        minimises); validation NLL (NaN without ``X_val``) is the normalised, floored NLL.
        ``callback(n_leaves, train_nll, val_nll)`` (optional) is called after each split.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (float64; categorical columns hold codes 0..k-1; no NaN / inf).
        y : array-like of shape (n_samples,)
            Numeric targets (regressor) or class labels (classifier).
        X_val, y_val : array-like or None, default=None
            Validation rows for the trace's validation NLL; with ``select_size=
            'best_validation'`` the fitted tree is the size of the lowest one.
        callback : callable or None, default=None
            Called after each split.

        Returns
        -------
        self
            The fitted estimator.
        """
        if X_val is None and callback is None:
            X, yv = self._prepare(X, y)
            tree = self._grow_one(X, yv, self._grow_params(False), self._seed())
            return self._set_tree(tree, [(n, tr, np.nan) for n, tr in tree.trace])
        for step in self.fit_steps(X, y, X_val, y_val):
            if callback is not None and step["n_leaves"] > 1:
                callback(step["n_leaves"], step["train_nll"], step["val_nll"])
        return self

    def fit_steps(
        self,
        X,
        y,
        X_val=None,
        y_val=None,
        val_every: int = 1,
        floor: float = DEFAULT_FLOOR,
        frontier: list | None = None,
    ):
        """:meth:`fit` as a generator, one split per step (for live pages and jobs).

        Yields ``{'n_leaves', 'train_nll', 'val_nll'}`` for the root and after each split;
        at every yield the estimator is a valid fitted model (the tree so far), so a
        consumer that stops early keeps a usable smaller tree. The validation NLL (floored
        at ``floor``) is computed every ``val_every`` splits and for the final tree (NaN in
        between and without ``X_val``). The result equals :meth:`fit`'s for the same data;
        after the last step the tree is pruned to the best validation size
        (``select_size``), so a consumer that runs the generator to its end gets that tree.
        Bad parameters raise ``InvalidParameterError`` at the first ``next``, as bad data.
        ``frontier`` (optional list) collects, before each split, which leaf splits and the
        other leaves' best gains (see :func:`engine.partition.growth.grow_steps`).
        """
        self._validate_params()
        X, yv = self._prepare(X, y)
        if X_val is not None:
            X_val, _ = self._y_values(X_val, y_val)  # fail early on a bad validation set
        val_every = max(1, int(val_every))
        steps = grow_steps(
            X,
            yv,
            **self._data_description(),
            params=self._grow_params(False),
            rng=check_random_state(self._seed()),
            frontier=frontier,
        )
        rows = []
        while True:
            try:
                n, train_nll, build = next(steps)
            except StopIteration as stop:
                final = stop.value
                break
            self._set_tree(build(), rows)
            v = np.nan
            if X_val is not None and (n - 1) % val_every == 0:
                v = self.nll(X_val, y_val, floor)[0]
            rows.append((n, train_nll, v))
            self.trace_ = list(rows)
            yield {"n_leaves": n, "train_nll": train_nll, "val_nll": v}
        if X_val is not None and np.isnan(rows[-1][2]):
            self._set_tree(final, rows)
            rows[-1] = (rows[-1][0], rows[-1][1], self.nll(X_val, y_val, floor)[0])
        self._set_tree(final, rows)
        best = best_validation_size(rows) if self.select_size == "best_validation" else None
        if best is not None and best < final.n_leaves:
            self._set_tree(truncate(final, best), rows)  # trace_ keeps the whole growth
        self.n_leaves_grown_ = final.n_leaves


class _ForestMixin:
    def _bootstrap(self, X, yv):
        """Yield ``(X_boot, y_boot, seed)`` per tree, drawn lazily from one seeded stream
        (only the samples joblib has dispatched are in memory, not one copy per tree)."""
        rng = check_random_state(self.random_state)
        n = X.shape[0]
        m = max(1, int(round(float(self.max_samples) * n)))
        for _ in range(int(self.n_estimators)):
            rows = rng.randint(0, n, m)
            seed = int(rng.randint(0, 2**31 - 1))
            yield np.ascontiguousarray(X[rows]), np.ascontiguousarray(yv[rows]), seed

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit ``n_estimators`` trees on bootstrap samples (joblib over trees).

        joblib prefers threads here: the split scans release the GIL, and threads skip the
        process start-up and numba cache load of each worker (measured at N = 10,000 x 9,
        10 trees, on a busy 2-core box before rows were presorted: 2 threads 3.4 s, 2 loky
        processes 6.9-8.5 s, serial 4.1-5.3 s).
        A backend chosen with ``joblib.parallel_config`` (e.g. Dask or Ray on a cluster)
        takes precedence.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (float64; categorical columns hold codes 0..k-1; no NaN / inf).
        y : array-like of shape (n_samples,)
            Numeric targets (regressor) or class labels (classifier).

        Returns
        -------
        self
            The fitted estimator.
        """
        X, yv = self._prepare(X, y)
        params = self._grow_params(True)
        self.trees_ = Parallel(n_jobs=self.n_jobs, prefer="threads")(
            delayed(self._grow_one)(Xb, yb, params, seed) for Xb, yb, seed in self._bootstrap(X, yv)
        )
        return self._finish_fit()

    def fit_steps(self, X, y, X_val=None, y_val=None, floor: float = DEFAULT_FLOOR):
        """:meth:`fit` as a generator, one tree per step (serial; same trees as :meth:`fit`).

        Yields ``{'n_trees', 'n_leaves', 'train_nll', 'val_nll'}`` after each tree: the NLL
        (floored at ``floor``) of the forest so far on the training rows and on the
        validation rows (NaN without ``X_val``), kept as running sums so each step costs one
        tree. At every yield the estimator is a valid fitted forest of the trees so far.
        ``trace_`` holds ``(n_trees, train_nll, val_nll)`` rows.  Bad parameters raise
        ``InvalidParameterError`` at the first ``next``, as bad data.
        """
        self._validate_params()
        X, yv = self._prepare(X, y)
        y_train = yv.astype(np.int64) if self._discrete else yv  # as _y_values(X, y)
        if X_val is not None:
            X_val, y_val = self._y_values(X_val, y_val)
        sums = {"train": (X, y_train, np.zeros(len(y_train)), np.zeros(len(y_train)))}
        if X_val is not None:
            sums["val"] = (X_val, y_val, np.zeros(len(y_val)), np.zeros(len(y_val)))
        params = self._grow_params(True)
        trees, rows = [], []
        for Xb, yb, seed in self._bootstrap(X, yv):
            trees.append(self._grow_one(Xb, yb, params, seed))
            self.trees_ = list(trees)
            self._finish_fit()
            out = {}
            for name, (Xs, ys, num, den) in sums.items():
                a, b = self._tree_terms(trees[-1], Xs, ys)
                num += a
                den += b
                p = self._combine(num, den, ys)
                out[name] = float(np.mean(-np.log(np.maximum(p, floor))))
            rows.append((len(trees), out["train"], out.get("val", np.nan)))
            self.trace_ = list(rows)
            yield {
                "n_trees": len(trees),
                "n_leaves": sum(t.n_leaves for t in trees),
                "train_nll": out["train"],
                "val_nll": out.get("val", np.nan),
            }


def _predict_mean(est, X):
    check_is_fitted(est, "trees_")
    X = est._check_X(X)
    num = np.zeros(X.shape[0])
    z = np.zeros(X.shape[0])
    for t in est.trees_:
        zt, nt = est._tree_slices(t, X)
        if est._normalised_mode():
            num += nt / np.where(zt > 0, zt, 1.0)
            z += 1.0
        else:
            num += nt
            z += zt
    return np.where(z > 0, num / np.where(z > 0, z, 1.0), 0.5 * sum(est.y_box_))
