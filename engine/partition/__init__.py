"""Partition Tree and Partition Forest: conditional density estimation (docs/spec.md section 2).

Public API::

    from engine.partition import PartitionTreeRegressor
    m = PartitionTreeRegressor(max_leaves=32).fit(X, y)
    m.density(X, y); m.slice(X[0]); m.nll(X, y, floor=1e-9); m.predict(X); m.trace_
"""

from engine.partition import scans  # noqa: F401  (registers the scan warm-up)
from engine.partition.estimators import (
    PartitionForestClassifier,
    PartitionForestRegressor,
    PartitionTreeClassifier,
    PartitionTreeRegressor,
)
from engine.partition.growth import GrowParams, PartitionTreeArrays, grow_tree

__all__ = [
    "GrowParams",
    "PartitionForestClassifier",
    "PartitionForestRegressor",
    "PartitionTreeArrays",
    "PartitionTreeClassifier",
    "PartitionTreeRegressor",
    "grow_tree",
]
