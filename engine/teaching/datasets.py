"""Curated datasets of the lessons: bundled tables and small synthetic sets made to show one
point each (seeded, so every student sees the same rows).

Every loader returns a :class:`LessonData` with float64 ``X`` (n, p), ``y`` (int64 class
codes or float64 values), the feature names, the class labels and a one-line description.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from engine.data import load_bundled, make_dataset


@dataclass(frozen=True, eq=False)
class LessonData:
    """A lesson's dataset.

    Attributes:
        name: short identifier (``'iris'``, ``'signal_and_noise'``).
        X: float64 (n, p), C-contiguous.
        y: int64 class codes ``0..K-1`` (classification) or float64 values (regression).
        feature_names: p names.
        class_names: K labels (classification) or ``None``.
        task: ``'classification'`` or ``'regression'``.
        target: the target's name.
        description: what the rows are, one sentence.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    class_names: tuple[str, ...] | None
    task: str
    target: str
    description: str


@lru_cache(maxsize=16)
def bundled(name: str) -> LessonData:
    """A bundled dataset by catalog name (``'iris'``, ``'xor'``, ``'bimodal'``, ...), its
    last column the target as the catalog says.  Raises ``DataError`` for an unknown name."""
    df, _report, entry = load_bundled(name)
    ds = make_dataset(df, entry["target"])
    return LessonData(
        name=name,
        X=np.ascontiguousarray(ds.X, dtype=np.float64),
        y=ds.y,
        feature_names=tuple(ds.feature_names),
        class_names=None if ds.classes_ is None else tuple(str(c) for c in ds.classes_),
        task=ds.task,
        target=ds.target,
        description=str(entry.get("description", "")),
    )


@lru_cache(maxsize=4)
def signal_and_noise(n: int = 200, effect: float = 0.1, seed: int = 0) -> LessonData:
    """One weak binary signal and three many-valued noise features.

    ``signal`` is 0 or 1 (probability 1/2); the label is 1 with probability
    ``0.5 + effect`` when ``signal = 1`` and ``0.5 - effect`` when it is 0; ``noise_1`` to
    ``noise_3`` are Uniform(0, 1), independent of everything (n distinct values each).
    Drawn with ``numpy.random.RandomState(seed)`` in that order, one column after the
    other.
    """
    rng = np.random.RandomState(seed)
    signal = rng.randint(0, 2, n).astype(np.float64)
    y = (rng.rand(n) < 0.5 + effect * (2 * signal - 1)).astype(np.int64)
    noise = np.c_[rng.rand(n), rng.rand(n), rng.rand(n)]
    return LessonData(
        name="signal_and_noise",
        X=np.ascontiguousarray(np.c_[signal, noise]),
        y=y,
        feature_names=("signal", "noise_1", "noise_2", "noise_3"),
        class_names=("0", "1"),
        task="classification",
        target="label",
        description=(
            f"{n} rows: a binary feature that shifts the label's probability by "
            f"{effect:+.0%}/{-effect:+.0%} and three continuous features of pure noise."
        ),
    )


@lru_cache(maxsize=4)
def and_game(main_effect: float = 0.45, replicates: int = 10) -> LessonData:
    """A full factorial of five binary features, each combination ``replicates`` times.

    ``y = main_effect * x0 + x1 * x2 * x3 * x4`` (no noise): ``x0`` acts alone, ``x1`` to
    ``x4`` only together (a four-way AND).  Every feature is 0 or 1 in exactly half of the
    rows and the features are independent, so a tree fitted to it reproduces ``y`` exactly.
    """
    grid = np.array([[(i >> b) & 1 for b in range(5)] for i in range(32)], dtype=np.float64)
    X = np.repeat(grid, replicates, axis=0)
    y = main_effect * X[:, 0] + X[:, 1] * X[:, 2] * X[:, 3] * X[:, 4]
    return LessonData(
        name="and_game",
        X=np.ascontiguousarray(X),
        y=y.astype(np.float64),
        feature_names=("alone", "and_1", "and_2", "and_3", "and_4"),
        class_names=None,
        task="regression",
        target="y",
        description=(
            f"{len(y)} rows, five 0/1 features: y = {main_effect:g} x alone + "
            "and_1 x and_2 x and_3 x and_4 (a feature acting alone and four acting only "
            "together)."
        ),
    )
