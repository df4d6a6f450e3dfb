"""Checks and conversions shared by :class:`~engine.tree.TreeArrays` and
:class:`~engine.tree.TreeEnsemble`: array casting, CSR pairs, rows to route, and the
JSON-safe encoding of floats and class labels."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_TASKS = ("classification", "regression")
_NAN_MESSAGE = (
    "this tree has no rule for missing values (it was fitted without them): impute or drop "
    "those rows before predicting, or refit on data with missing values kept"
)

# ---------------------------------------------------------------------------------------


def _as_1d(name: str, a: Any, dtype, length: int | None = None) -> np.ndarray:
    """Cast ``a`` to a fresh, writable, C-contiguous 1-D array of ``dtype``."""
    try:
        raw = np.asarray(a)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise ValueError(f"{name}: cannot convert to an array ({exc})") from exc
    if raw.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {raw.shape}")
    if np.dtype(dtype).kind == "i":
        if raw.dtype.kind == "f":
            if not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
                raise ValueError(f"{name} must hold integers, got non-integral floats")
        elif raw.dtype.kind not in "iub" and raw.size:
            raise ValueError(f"{name} must hold integers, got dtype {raw.dtype}")
    elif raw.dtype.kind not in "fiub" and raw.size:
        raise ValueError(f"{name} must be numeric, got dtype {raw.dtype}")
    out = np.array(raw, dtype=dtype, order="C", copy=True)
    if length is not None and out.shape[0] != length:
        raise ValueError(f"{name} has length {out.shape[0]}, expected {length}")
    return out


def _check_csr(name: str, offsets: Any, values: Any, n_nodes: int, dtype):
    """Validate a CSR pair (``offsets`` int64 of length n_nodes + 1, ``values``)."""
    if (offsets is None) != (values is None):
        raise ValueError(f"{name}_offsets and {name}_values must be given together")
    if offsets is None:
        return None, None
    off = _as_1d(f"{name}_offsets", offsets, np.int64, n_nodes + 1)
    val = _as_1d(f"{name}_values", values, dtype)
    if off[0] != 0 or np.any(np.diff(off) < 0) or off[-1] != val.shape[0]:
        raise ValueError(
            f"{name}_offsets must start at 0, never decrease and end at len({name}_values)"
            f" = {val.shape[0]}"
        )
    return off, val


def _fmt_number(x: float, decimals: int | None = None) -> str:
    """Threshold text: ``decimals`` fixed digits, or up to 6 significant digits."""
    if decimals is not None:
        return f"{x:.{decimals}f}"
    return f"{x:.6g}"


def _float_list(a: np.ndarray) -> list:
    """JSON-safe list of floats: NaN -> None, +-inf -> "inf"/"-inf" (strict JSON)."""
    out = a.astype(np.float64).tolist()

    def enc(v):
        if isinstance(v, list):
            return [enc(u) for u in v]
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v

    return enc(out)


def _float_array(v: Any) -> np.ndarray:
    """Inverse of :func:`_float_list`."""

    def dec(u):
        if isinstance(u, list):
            return [dec(w) for w in u]
        if u is None:
            return math.nan
        if isinstance(u, str):
            return float(u)
        return u

    return np.asarray(dec(v), dtype=np.float64)


def _classes_list(classes: np.ndarray | None) -> list | None:
    """Class labels as plain Python values (numpy scalars unwrapped) for JSON."""
    if classes is None:
        return None
    return [c.item() if isinstance(c, np.generic) else c for c in classes.tolist()]


def _check_X(
    X: Any,
    n_features: int,
    feature_names: list[str] | None = None,
    *,
    allow_nan: bool = False,
) -> np.ndarray:
    """Shared row validation; see :meth:`TreeArrays.check_X`.  ``allow_nan`` keeps NaN
    (trees that route missing values); infinities are kept either way."""
    if hasattr(X, "to_numpy") and hasattr(X, "columns"):
        X = X.to_numpy()
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X must be numeric (float64-convertible): {exc}") from exc
    if arr.ndim != 2:
        hint = " (use x.reshape(1, -1) for one sample)" if arr.ndim == 1 else ""
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {arr.shape}{hint}")
    if arr.shape[1] != n_features:
        raise ValueError(
            f"X has {arr.shape[1]} columns but the tree expects n_features = {n_features}"
        )
    nan = None if allow_nan else np.isnan(arr)
    if nan is not None and nan.any():
        rows, cols = np.nonzero(nan)
        col = int(cols[0])
        name = feature_names[col] if feature_names is not None else f"feature_{col}"
        raise ValueError(
            f"X contains NaN in {len(np.unique(rows))} rows (first at row {int(rows[0])}, "
            f"column {name!r}); {_NAN_MESSAGE}"
        )
    arr = np.ascontiguousarray(arr)
    if not arr.flags.writeable:
        arr = arr.copy()
    return arr
