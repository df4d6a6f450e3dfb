"""Lesson 3, ``partition``: a conditional density beats a point prediction (bimodal,
heteroscedastic)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.teaching import datasets
from engine.teaching.lessons.model import FigureSpec, Lesson, Question, Step, StepResult


def _split(data):
    from engine.data import train_test_rows

    return train_test_rows(len(data.y), None, test_size=0.25, random_state=0, stratify=False)


def _partition_fit(data, max_leaves: int = 24):
    from engine.partition.estimators import PartitionTreeRegressor

    rows = _split(data)
    model = PartitionTreeRegressor(max_leaves=max_leaves, random_state=0)
    model.fit(data.X[rows.train], data.y[rows.train])
    return model, rows


def _slice_summary(s: dict) -> tuple[float, float]:
    e, h = np.asarray(s["edges"]), np.asarray(s["heights"])
    mid, w = (e[1:] + e[:-1]) / 2, np.diff(e) * h
    mean = float(np.sum(mid * w))
    return mean, float(np.sqrt(np.sum(w * (mid - mean) ** 2)))


def _density_at(s: dict, value: float) -> float:
    e, h = np.asarray(s["edges"]), np.asarray(s["heights"])
    i = int(np.clip(np.searchsorted(e, value, side="right") - 1, 0, len(h) - 1))
    return float(h[i])


def _partition_bimodal() -> StepResult:
    from engine.cart.estimator import CARTRegressor

    data = datasets.bundled("bimodal")
    model, rows = _partition_fit(data)
    cart = CARTRegressor(max_depth=3, random_state=0).fit(data.X[rows.train], data.y[rows.train])
    x = np.array([0.5])
    s = model.slice(x)
    prediction = float(cart.predict(x[None, :])[0])
    at_prediction = _density_at(s, prediction)
    peak = float(np.max(s["heights"]))
    return StepResult(
        figures=[
            FigureSpec(
                "slices",
                {
                    "slices": [{"label": "x = 0.5", **s}],
                    "target": "y",
                    "title": "Bimodal: p(y | x = 0.5) and CART's point prediction",
                    "predictions": {"CART prediction (mean)": prediction},
                    "x_title": "y (synthetic, no unit)",
                },
            )
        ],
        facts={
            "prediction": prediction,
            "density_at_prediction": at_prediction,
            "peak": peak,
            "ratio": at_prediction / peak if peak > 0 else 0.0,
        },
    )


_BETWEEN, _AT_MODE = "in a valley, where y is rare", "at a peak, where y is common"


def _partition_hetero() -> StepResult:
    from engine.partition.explore import gaussian_baselines

    data = datasets.bundled("heteroscedastic")
    model, rows = _partition_fit(data)
    slices = [{"label": f"x = {v:g}", **model.slice(np.array([v]))} for v in (0.1, 0.9)]
    spreads = [_slice_summary(s)[1] for s in slices]
    nll, _ = model.nll(data.X[rows.test], data.y[rows.test])
    description, fit, predict_dist = gaussian_baselines(
        data.X[rows.train], data.y[rows.train], max_leaf_nodes=8
    )["Gaussian (constant)"]
    mean, sd = predict_dist(fit(), data.X[rows.test])
    yt = data.y[rows.test]
    const_nll = float(np.mean(0.5 * np.log(2 * np.pi * sd**2) + (yt - mean) ** 2 / (2 * sd**2)))
    table = pd.DataFrame(
        {
            "model": ["Partition Tree (24 leaves)", "constant Gaussian"],
            "test NLL (nats per row, lower is better)": [nll, const_nll],
        }
    )
    return StepResult(
        figures=[
            FigureSpec(
                "slices",
                {
                    "slices": slices,
                    "target": "y",
                    "title": "Heteroscedastic: p(y | x) at x = 0.1 and x = 0.9",
                    "x_title": "y (synthetic, no unit)",
                },
            )
        ],
        facts={
            "sd_low": spreads[0],
            "sd_high": spreads[1],
            "wider": slices[int(np.argmax(spreads))]["label"],
            "nll": float(nll),
            "const_nll": const_nll,
        },
        table=table,
    )


PARTITION = Lesson(
    id="partition",
    title="A density beats a point prediction (Partition Tree)",
    method="Conditional density (Partition Tree)",
    summary="One number per x hides two modes and a spread that changes with x.",
    steps=(
        Step(
            id="bimodal",
            title="Two modes: the mean is where nothing happens",
            text=(
                "In the **bimodal** data y is either about +(1 + x) or about -(1 + x), each "
                "half of the time. A regression tree predicts the mean of y in each leaf, "
                "about 0. The Partition Tree estimates the whole **conditional density** "
                "p(y | x) instead: a histogram of y for each x, drawn here at x = 0.5."
            ),
            compute=_partition_bimodal,
            question=Question(
                prompt="Where does CART's point prediction for x = 0.5 fall in p(y | x)?",
                options=lambda r: [_BETWEEN, _AT_MODE],
                answer=lambda r: _BETWEEN if r.facts["ratio"] < 0.25 else _AT_MODE,
                explanation=lambda r: (
                    f"CART predicts y = {r.facts['prediction']:.2f}; the density there is "
                    f"{r.facts['density_at_prediction']:.3f}, {r.facts['ratio']:.0%} of the "
                    f"peak ({r.facts['peak']:.2f}). The average of two modes is a value the "
                    "data almost never takes."
                ),
            ),
            terms=("conditional density", "mode", "point prediction"),
        ),
        Step(
            id="heteroscedastic",
            title="A spread that grows with x",
            text=(
                "In the **heteroscedastic** data y = 2x plus noise whose standard deviation "
                "grows from 0.1 at x = 0 to 1 at x = 1. A point prediction is the same "
                "kind of answer everywhere; a density says how sure it is. The table scores "
                "both as densities on held-out rows by the negative log-likelihood (NLL)."
            ),
            compute=_partition_hetero,
            question=Question(
                prompt="At which x will the Partition Tree's density be wider?",
                options=lambda r: ["x = 0.1", "x = 0.9"],
                answer=lambda r: r.facts["wider"],
                explanation=lambda r: (
                    f"The density's standard deviation is {r.facts['sd_low']:.2f} at x = 0.1 "
                    f"and {r.facts['sd_high']:.2f} at x = 0.9. Held out, the tree's NLL is "
                    f"{r.facts['nll']:.3f} against {r.facts['const_nll']:.3f} for one "
                    "Gaussian of constant spread."
                ),
            ),
            terms=("heteroscedastic", "negative log-likelihood"),
        ),
    ),
)
