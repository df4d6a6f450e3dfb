"""Limits and shared helpers of the XGBoost / LightGBM model-dump converters
(:mod:`engine.tree.xgboost_import`, :mod:`engine.tree.lightgbm_import`)."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DumpLimits:
    """Bounds on an uploaded model dump, checked before and while it is parsed.

    * ``max_bytes`` - size of the dump (JSON text or UBJSON), default 64 MiB;
    * ``max_trees`` - trees in the model (all rounds and classes), default 10,000;
    * ``max_nodes`` - nodes in all trees together, default 4,000,000 (about 200 MB of
      :class:`~engine.tree.TreeArrays`);
    * ``max_features`` - columns the model reads, default 100,000.
    """

    max_bytes: int = 64 * 2**20
    max_trees: int = 10_000
    max_nodes: int = 4_000_000
    max_features: int = 100_000


DEFAULT_LIMITS = DumpLimits()


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def check_size(data: bytes | str, limits: DumpLimits, what: str) -> None:
    """``ValueError`` when ``data`` is larger than ``limits.max_bytes``."""
    n = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
    if n > limits.max_bytes:
        raise ValueError(
            f"the {what} is {_mib(n)}, more than the limit of {_mib(limits.max_bytes)}: "
            "use a model with fewer or smaller trees"
        )


def read_bounded(path, limits: DumpLimits) -> bytes:
    """The bytes of the file at ``path``; ``ValueError`` when it is larger than the limit."""
    from pathlib import Path

    path = Path(path)
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise ValueError(
            f"the model file {path.name} is {_mib(size)}, more than the limit of "
            f"{_mib(limits.max_bytes)}"
        )
    return path.read_bytes()


def parse_json(data: bytes | str, what: str) -> Any:
    """Strict JSON text -> Python objects; ``ValueError`` with a short reason (and the
    position) for malformed text, text that is not UTF-8 or nesting Python cannot parse."""
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    except UnicodeDecodeError as exc:
        raise ValueError(f"the {what} is not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"the {what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise ValueError(f"the {what} nests too deeply to be parsed") from None


def check_counts(n_trees: int, n_nodes: int, limits: DumpLimits, library: str) -> None:
    """``ValueError`` when the model has more trees or nodes than the limits allow."""
    if n_trees < 1:
        raise ValueError(f"the {library} model has no trees")
    if n_trees > limits.max_trees:
        raise ValueError(
            f"the {library} model has {n_trees:,} trees, more than the limit of "
            f"{limits.max_trees:,}"
        )
    if n_nodes > limits.max_nodes:
        raise ValueError(
            f"the {library} model has {n_nodes:,} nodes, more than the limit of "
            f"{limits.max_nodes:,}"
        )


def check_n_features(n_features: Any, limits: DumpLimits, library: str) -> int:
    """The model's number of features as an int in ``[1, max_features]``."""
    try:
        n = int(n_features)
    except (TypeError, ValueError):
        raise ValueError(
            f"the {library} model gives no valid number of features ({n_features!r})"
        ) from None
    if not 1 <= n <= limits.max_features:
        raise ValueError(
            f"the {library} model reads {n:,} features; supported are 1 to {limits.max_features:,}"
        )
    return n


def booster_classes(task: str, n_outputs: int, classes) -> np.ndarray | None:
    """The class labels of a boosting model: ``classes`` (or ``0 .. k-1``) for a
    classifier with ``k = max(n_outputs, 2)`` classes, None for a regressor.

    Raises ``ValueError`` when ``classes`` does not hold ``k`` labels."""
    if task != "classification":
        return None
    k = max(n_outputs, 2)
    classes = np.arange(k) if classes is None else np.asarray(classes)
    if classes.shape != (k,):
        raise ValueError(f"classes has {classes.shape[0]} labels for {k} classes")
    return classes


def field(d: Any, key: str, where: str) -> Any:
    """``d[key]``, or ``ValueError`` naming the missing field and where it was expected."""
    if not isinstance(d, dict):
        raise ValueError(f"{where} should be a JSON object, got {type(d).__name__}")
    if key not in d:
        raise ValueError(f"{where} has no {key!r} field")
    return d[key]


def number_array(v: Any, dtype, where: str, length: int | None = None) -> np.ndarray:
    """A 1-D numeric array of ``dtype`` from a JSON list (or a decoded UBJSON array)."""
    try:
        a = np.asarray(v)
        if a.dtype.kind not in "biuf" and a.size:
            raise TypeError
        a = a.astype(dtype, copy=False)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{where} must be a list of numbers") from None
    if a.ndim != 1:
        raise ValueError(f"{where} must be a flat list of numbers")
    if length is not None and a.shape[0] != length:
        raise ValueError(f"{where} has {a.shape[0]} entries, expected {length}")
    return a


def cover_weighted_means(
    left: np.ndarray, right: np.ndarray, cover: np.ndarray, value: np.ndarray
) -> np.ndarray:
    """Node values for the tree view: leaves keep theirs, an internal node gets the
    cover-weighted mean of its children (the expected leaf value under the path-dependent
    game; the plain mean where both covers are 0).  ``left``/``right`` int64 with -1 at
    leaves; children are visited before their parents, level by level from the deepest."""
    out = value.astype(np.float64, copy=True)
    frontier = np.array([0], dtype=np.int64)
    levels = []
    while frontier.size:
        inner = frontier[left[frontier] >= 0]
        levels.append(inner)
        frontier = np.concatenate([left[inner], right[inner]])
    for nodes in reversed(levels):
        if nodes.size == 0:
            continue
        cl, cr = left[nodes], right[nodes]
        wl, wr = cover[cl], cover[cr]
        total = wl + wr
        safe = np.where(total > 0, total, 1.0)
        mean = np.where(total > 0, (wl * out[cl] + wr * out[cr]) / safe, 0.5 * (out[cl] + out[cr]))
        out[nodes] = mean
    return out


def reachable_order(left: np.ndarray, right: np.ndarray, where: str) -> np.ndarray:
    """Node ids reachable from the root (node 0), breadth first; ``ValueError`` on child ids
    out of range or a cycle (a node reached twice)."""
    n = left.shape[0]
    seen = np.zeros(n, dtype=bool)
    order = []
    frontier = np.array([0], dtype=np.int64)
    while frontier.size:
        if seen[frontier].any() or np.unique(frontier).size != frontier.size:
            raise ValueError(f"{where}: a node is reached twice (the children form a cycle)")
        seen[frontier] = True
        order.append(frontier)
        inner = frontier[left[frontier] >= 0]
        kids = np.concatenate([left[inner], right[inner]])
        if kids.size and (kids.min() < 0 or kids.max() >= n):
            raise ValueError(f"{where}: a child id is outside [0, {n})")
        frontier = kids
    return np.concatenate(order)


@contextlib.contextmanager
def malformed(library: str):
    """Turn the errors of reading an odd structure (a field of the wrong type, an index out
    of range...) into one ``ValueError`` naming the library, so no traceback-style message
    reaches a user."""
    try:
        yield
    except (TypeError, KeyError, AttributeError, IndexError, OverflowError) as exc:
        raise ValueError(
            f"the {library} model is malformed ({type(exc).__name__}: {exc})"
        ) from None
