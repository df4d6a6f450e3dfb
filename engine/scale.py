"""How long a method takes at ``n`` rows: the cost curves of ``bench/bench_scale.py``.

Each curve is the fitted power law ``seconds = a * n ** slope`` of one method's measured
times (least squares of log time on log n, as the bench computes its slopes), at the
bench's 30 features and scaled linearly to ``p`` features (every method scans each feature
at each node).  The times were measured on this project's benchmark machine (Intel Xeon,
2 cores, 24 GiB, shared; docs/benchmarks.md, section "Every method from 1,000 to 200,000
rows"; Literati's from the newer section "Literati depth 2 by counting", which replaced
its search after that table was measured; AMD EPYC, 2 cores) in December 2026: they say
how the time grows and its order of magnitude, not what a faster or busier server takes.
Pages use :func:`estimate_seconds` to say "about 40 s at 200,000 rows" before a job
runs, and :func:`rows_within` to size the subsample they offer when a method would exceed
its budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Features of the bench's data (``make_classification(n, 30, n_informative=10)``).
BENCH_FEATURES = 30
#: What the bench measured (docs/benchmarks.md), method -> (what, measured (rows, seconds)).
MEASURED = {
    "cart": (
        "CART, depth 8",
        (
            (1_000, 0.0302),
            (2_000, 0.0619),
            (5_000, 0.2),
            (20_000, 0.689),
            (50_000, 1.2),
            (200_000, 8.4),
        ),
    ),
    "sklearn_tree": (
        "scikit-learn DecisionTreeClassifier, depth 8",
        (
            (1_000, 0.0474),
            (2_000, 0.201),
            (5_000, 0.481),
            (20_000, 2.16),
            (50_000, 4.83),
            (200_000, 36.9),
        ),
    ),
    "literati": (
        "Literati, depth 2, K_max 2, time to proof, each state's own candidates (the paper's)",
        ((1_000, 0.34), (5_000, 1.83), (20_000, 12.61)),
    ),
    "literati_root": (
        "Literati, depth 2, K_max 2, time to proof, the root's candidates (counting)",
        ((1_000, 0.014), (5_000, 0.036), (20_000, 0.128), (50_000, 0.293), (200_000, 1.277)),
    ),
    "partition": (
        "Partition Tree, 32 leaves",
        (
            (1_000, 0.11),
            (2_000, 0.148),
            (5_000, 0.492),
            (20_000, 1.81),
            (50_000, 5.23),
            (200_000, 29.2),
        ),
    ),
    "treegrad": (
        "Shapley values of 200 rows of a tree fitted on n rows",
        (
            (1_000, 0.0179),
            (2_000, 0.0115),
            (5_000, 0.0244),
            (20_000, 0.105),
            (50_000, 0.122),
            (200_000, 0.637),
        ),
    ),
    "cit": (
        "conditional inference tree, depth 8",
        (
            (1_000, 0.0239),
            (2_000, 0.0605),
            (5_000, 0.0801),
            (20_000, 0.441),
            (50_000, 0.883),
            (200_000, 3.71),
        ),
    ),
}
#: In-page work must end within this many seconds; longer work runs as a job.
PAGE_BUDGET = 10.0


@dataclass(frozen=True)
class CostCurve:
    """``seconds = coefficient * n_rows ** slope * n_features / 30`` for one method.

    Attributes:
        method: key of :data:`MEASURED`.
        what: the measured setting, in words.
        coefficient: ``a`` (seconds at one row of 30 features).
        slope: the log-log slope (1 = linear in the rows).
        largest: the most rows measured; estimates beyond it extrapolate.
    """

    method: str
    what: str
    coefficient: float
    slope: float
    largest: int


def fit_curve(points) -> tuple[float, float]:
    """``(a, slope)`` of the least-squares line of log seconds on log rows through
    ``points`` (pairs of rows and seconds, at least two distinct row counts, times > 0)."""
    logs = [(math.log(n), math.log(t)) for n, t in points]
    mean_x = sum(x for x, _ in logs) / len(logs)
    mean_y = sum(y for _, y in logs) / len(logs)
    sxx = sum((x - mean_x) ** 2 for x, _ in logs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in logs) / sxx
    return math.exp(mean_y - slope * mean_x), slope


#: Every method's curve, fitted once from :data:`MEASURED`.
CURVES = {
    method: CostCurve(method, what, *fit_curve(points), max(n for n, _ in points))
    for method, (what, points) in MEASURED.items()
}


def estimate_seconds(method: str, n_rows: int, n_features: int = BENCH_FEATURES) -> float:
    """Predicted seconds of ``method`` (a key of :data:`CURVES`) on ``n_rows`` x
    ``n_features`` on the benchmark machine.  Raises ValueError for an unknown method or
    fewer than one row or feature."""
    if method not in CURVES:
        raise ValueError(f"No cost curve for {method!r}; known: {', '.join(CURVES)}.")
    if n_rows < 1 or n_features < 1:
        raise ValueError(f"Rows and features must be at least 1 (got {n_rows}, {n_features}).")
    curve = CURVES[method]
    return curve.coefficient * float(n_rows) ** curve.slope * n_features / BENCH_FEATURES


def rows_within(method: str, seconds: float, n_features: int = BENCH_FEATURES) -> int:
    """Most rows (at least 1,000) whose :func:`estimate_seconds` stays within ``seconds``:
    the size of the subsample a page offers, rounded down to a thousand."""
    curve = CURVES[method]
    scale = curve.coefficient * n_features / BENCH_FEATURES
    rows = (seconds / scale) ** (1.0 / curve.slope)
    return max(1_000, int(rows // 1_000) * 1_000)


def rows_within_seconds(seconds_at, budget: float, most: int) -> int:
    """Most rows (``most`` when they all fit, else a multiple of a thousand, at least 1,000
    and at most ``most``) whose
    ``seconds_at(rows)`` stays within ``budget`` seconds: the subsample a page offers for
    a job timed by several curves (``seconds_at``: rows of the whole table -> seconds,
    non-decreasing, e.g. :func:`engine.compare_estimate.estimate_comparison`'s)."""
    if seconds_at(int(most)) <= budget:
        return int(most)
    low, high = 1, max(1, int(most) // 1_000 + 1)  # in thousands
    while high - low > 1:  # seconds_at(low) <= budget < seconds_at(high), or low = 1
        mid = (low + high) // 2
        if seconds_at(mid * 1_000) <= budget:
            low = mid
        else:
            high = mid
    return min(int(most), low * 1_000)


def depth_factor(max_depth: int | None) -> float:
    """How a tree's depth scales a curve measured at depth 8: ``depth / 8``, a tree grown
    out (``None`` or 0) counted as depth 16 (each level scans every row once)."""
    return (int(max_depth or 0) or 16) / 8


def format_seconds(seconds: float) -> str:
    """``'about 40 s'``, ``'about 3 min'``, ``'under 1 s'``: an estimate in words."""
    if seconds < 1:
        return "under 1 s"
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"
