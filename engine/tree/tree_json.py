"""The JSON form of a :class:`~engine.tree.TreeArrays` (``to_dict`` / ``from_dict`` /
``to_json`` / ``from_json``, format :data:`FORMAT`): strict JSON, lossless (every array
round-trips bit for bit).  :class:`TreeJSON` is the part of ``TreeArrays`` that reads and
writes it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from engine.tree._checks import _classes_list, _float_array, _float_list

if TYPE_CHECKING:
    from engine.tree.arrays import TreeArrays

#: Version tag written by ``to_dict`` and checked by ``from_dict``.
FORMAT = "treelab.tree/1"


class TreeJSON:
    """``TreeArrays``' JSON form (a base class of :class:`~engine.tree.TreeArrays`)."""

    def to_dict(self) -> dict:
        """JSON-serialisable dict (lists, ``None`` for absent extras, ``format`` key).

        Non-finite floats are written as ``None`` (NaN) or ``"inf"``/``"-inf"`` so the
        result is strict JSON; :meth:`from_dict` restores them.  Lossless: every array
        round-trips bit for bit.
        """
        classes = _classes_list(self.classes_)

        def ints(a):
            return None if a is None else a.tolist()

        def floats(a):
            return None if a is None else _float_list(a)

        return {
            "format": FORMAT,
            "task": self.task,
            "n_features": self.n_features,
            "feature_names": None if self.feature_names is None else list(self.feature_names),
            "classes": classes,
            "categories": None
            if self.categories is None
            else [None if c is None else list(c) for c in self.categories],
            "float32_inputs": self.float32_inputs,
            "children_left": ints(self.children_left),
            "children_right": ints(self.children_right),
            "feature": ints(self.feature),
            "threshold": floats(self.threshold),
            "impurity": floats(self.impurity),
            "n_node_samples": ints(self.n_node_samples),
            "weighted_n_node_samples": floats(self.weighted_n_node_samples),
            "value": floats(self.value),
            "p_value": floats(self.p_value),
            "bp_offsets": ints(self.bp_offsets),
            "bp_values": floats(self.bp_values),
            "lower_bound": floats(self.lower_bound),
            "upper_bound": floats(self.upper_bound),
            "cat_offsets": ints(self.cat_offsets),
            "cat_values": ints(self.cat_values),
            "missing_go_to_left": ints(self.missing_go_to_left),
            "n_missing": ints(self.n_missing),
        }

    @classmethod
    def from_dict(cls, d: dict) -> TreeArrays:
        """Inverse of :meth:`to_dict`.  Raises ``ValueError`` on a missing or unknown
        ``format`` key or missing arrays."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            got = d.get("format") if isinstance(d, dict) else type(d).__name__
            raise ValueError(f"not a TreeLab tree: expected format {FORMAT!r}, got {got!r}")
        required = (
            "children_left",
            "children_right",
            "feature",
            "threshold",
            "impurity",
            "n_node_samples",
            "weighted_n_node_samples",
            "value",
            "task",
            "n_features",
        )
        missing = [k for k in required if d.get(k) is None]
        if missing:
            raise ValueError(f"tree dict is missing {missing}")

        def floats(key):
            return None if d.get(key) is None else _float_array(d[key])

        def ints(key):
            return None if d.get(key) is None else np.asarray(d[key], dtype=np.int64)

        classes = d.get("classes")
        return cls(
            ints("children_left"),
            ints("children_right"),
            ints("feature"),
            floats("threshold"),
            floats("impurity"),
            ints("n_node_samples"),
            floats("weighted_n_node_samples"),
            floats("value"),
            task=d["task"],
            n_features=d["n_features"],
            classes_=None if classes is None else np.asarray(classes),
            feature_names=d.get("feature_names"),
            categories=d.get("categories"),
            float32_inputs=bool(d.get("float32_inputs", False)),
            p_value=floats("p_value"),
            bp_offsets=ints("bp_offsets"),
            bp_values=floats("bp_values"),
            lower_bound=floats("lower_bound"),
            upper_bound=floats("upper_bound"),
            cat_offsets=ints("cat_offsets"),
            cat_values=ints("cat_values"),
            missing_go_to_left=ints("missing_go_to_left"),
            n_missing=ints("n_missing"),
        )

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_dict` as a strict JSON string."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, s: str | bytes) -> TreeArrays:
        """Inverse of :meth:`to_json`.  Raises ``ValueError`` on invalid JSON."""
        try:
            d = json.loads(s)
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid tree JSON: {exc}") from exc
        return cls.from_dict(d)
