"""Benchmark: calibration and proper scores of the Partition Tree / Forest beside the
reference package, NGBoost and quantile regression forests (issue 18 point 4).

Run ``python bench/bench_partition_calibration.py`` from the repository root (about 5-15
minutes on a shared 2-core box; ``--quick`` runs the first two datasets only and does not
write docs/benchmarks.md).

Datasets (regression, at least 5): the bundled ``diabetes`` (integer y), ``heteroscedastic``
and ``bimodal``, and scikit-learn's generators ``make_friedman1`` (N = 1,000, noise 1) and
``make_friedman3`` (N = 1,000, noise 0.1), seed 0. One seeded split per dataset
(:func:`engine.partition.explore.split_rows`, seed 0: 20 % test, 20 % of the rest validation).
Every model fits the training rows; only "Partition Tree, best validation size" also sees the
validation rows (to choose its size).

Models: Partition Tree (TreeLab, ``max_leaves=32``, ``boundary_expansion=0.1``) with the
spec box, with ``box='reference'``, and kept at its best validation size; Partition Forest
(TreeLab, 50 trees); the reference package ``partition-tree`` (its tree with the same
``max_leaves``, ``boundaries_expansion_factor=0.1``, ``min_volume_fraction=0.1``), through its
skpro API (its piecewise-constant densities: NLL from its ``log_pdf``, the other scores from
its intervals with this module's closed forms); NGBoost (``NGBRegressor`` defaults: Normal,
500 stages; scores of its Normal in closed form) and a quantile regression forest
(``quantile_forest.RandomForestQuantileRegressor``, 100 trees; no density, so no NLL; CRPS and
PIT from 199 predicted quantiles at levels 0.005 ... 0.995: CRPS = 2 x the mean pinball loss
over them, PIT = the interpolated level of y).

Scores on the test rows (engine/partition/scoring.py): NLL (nats per unit of y, densities
floored at 1e-9), CRPS (units of y), mean pinball loss at 0.05, 0.10, ..., 0.95 (units of y)
and the PIT's Kolmogorov-Smirnov distance from U(0, 1) (0 = calibrated). Lower is better
for all four.

Extra installs (not in requirements-dev.txt: NGBoost pins scikit-learn < 1.7, so install
it without dependencies): ``pip install --no-deps ngboost==0.6.0`` and ``pip install
quantile-forest``; the reference package as in bench/bench_partition.py
(``PARTITION_TREE_PATH``). A model whose package cannot be imported gets a "not importable"
row. Quality only: the machine is shared, so no times are reported.
"""

from __future__ import annotations

import os
import sys
import warnings
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _docs import update_benchmarks  # noqa: E402
from _machine import machine  # noqa: E402
from sklearn.datasets import make_friedman1, make_friedman3  # noqa: E402

from engine.data import load_bundled, make_dataset  # noqa: E402
from engine.partition import (  # noqa: E402
    PartitionForestRegressor,
    PartitionTreeRegressor,
    scoring,  # noqa: E402
)
from engine.partition.explore import split_rows  # noqa: E402

QUICK = "--quick" in sys.argv
FLOOR = 1e-9
LEVELS = np.asarray(scoring.DEFAULT_LEVELS)
QRF_LEVELS = (np.arange(199) + 1) / 200.0


def datasets():
    out = []
    for name in ("diabetes", "heteroscedastic", "bimodal"):
        df, _, entry = load_bundled(name)
        ds = make_dataset(df, entry["target"])
        out.append((name, ds.X, ds.y))
    X, y = make_friedman1(1000, noise=1.0, random_state=0)
    out.append(("friedman1 (N=1000)", X, y))
    X, y = make_friedman3(1000, noise=0.1, random_state=0)
    out.append(("friedman3 (N=1000)", X, y))
    return out[:2] if QUICK else out


def scores_of_densities(dens, y, nll):
    u = scoring.pit(dens, y)
    loss = scoring.pinball_loss(y, scoring.quantiles(dens, LEVELS), LEVELS)
    return scoring.summarise(pit_values=u, crps_values=scoring.crps(dens, y), pinball=loss, nll=nll)


def ours(model, Xtr, ytr, Xte, yte, Xva=None, yva=None):
    model.fit(Xtr, ytr, Xva, yva) if Xva is not None else model.fit(Xtr, ytr)
    dens = scoring.conditional_densities(model, Xte)
    return scores_of_densities(dens, yte, model.nll(Xte, yte, FLOOR)[0])


def reference(Xtr, ytr, Xte, yte):
    extra = os.environ.get("PARTITION_TREE_PATH")
    if extra and extra not in sys.path:
        sys.path.append(extra)
    import pandas as pd
    from partition_tree.skpro import PartitionTreeRegressor as Reference

    cols = [f"x{i}" for i in range(Xtr.shape[1])]
    m = Reference(
        max_leaves=32, boundaries_expansion_factor=0.1, min_volume_fraction=0.1, random_state=0
    )
    m.fit(pd.DataFrame(Xtr, columns=cols), pd.DataFrame({"y": ytr}))
    dist = m.predict_proba(pd.DataFrame(Xte, columns=cols))
    lp = np.asarray(dist.log_pdf(pd.DataFrame({"y": yte}))).ravel()
    nll = float(np.mean(-np.maximum(lp, np.log(FLOOR))))
    slices = []
    for ivs, pdf in zip(dist.intervals, dist.pdf_values, strict=True):
        e = [ivs[0][0]]
        h = []
        for (lo, hi), p in zip(ivs, pdf, strict=True):
            if lo > e[-1]:  # a gap between intervals: density 0 there
                e.append(lo)
                h.append(0.0)
            e.append(hi)
            h.append(float(p))
        e, h = np.asarray(e), np.asarray(h)
        mass = float(np.sum(h * np.diff(e)))
        slices.append({"edges": e, "heights": h / mass if mass > 0 else h})
    return scores_of_densities(scoring.from_slices(slices), yte, nll)


def ngboost(Xtr, ytr, Xte, yte):
    from ngboost import NGBRegressor

    m = NGBRegressor(verbose=False, random_state=0).fit(Xtr, ytr)
    d = m.pred_dist(Xte)
    mean, sd = d.params["loc"], d.params["scale"]
    g = scoring.gaussian_scores(yte, mean, sd, LEVELS)
    from scipy.stats import norm

    nll = float(np.mean(-np.log(np.maximum(norm.pdf(yte, mean, sd), FLOOR))))
    return scoring.summarise(
        pit_values=g["pit"], crps_values=g["crps"], pinball=g["pinball"], nll=nll
    )


def qrf(Xtr, ytr, Xte, yte):
    from quantile_forest import RandomForestQuantileRegressor

    m = RandomForestQuantileRegressor(n_estimators=100, random_state=0).fit(Xtr, ytr)
    q = np.sort(np.asarray(m.predict(Xte, quantiles=list(QRF_LEVELS))), axis=1)
    crps = 2.0 * scoring.pinball_loss(yte, q, QRF_LEVELS).mean(axis=1)
    u = np.array(
        [np.interp(v, qi, QRF_LEVELS, left=0.0, right=1.0) for v, qi in zip(yte, q, strict=True)]
    )
    idx = [int(np.argmin(np.abs(QRF_LEVELS - t))) for t in LEVELS]
    pin = scoring.pinball_loss(yte, q[:, idx], LEVELS)
    return scoring.summarise(pit_values=u, crps_values=crps, pinball=pin)


def main() -> None:
    warnings.filterwarnings("ignore")
    header = (
        "| dataset | model | test NLL | CRPS | mean pinball | PIT KS |\n"
        "|---|---|---:|---:|---:|---:|"
    )
    lines = [header]
    wins = {}
    for name, X, y in datasets():
        X = np.ascontiguousarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        tr, va, te, _ = split_rows(len(y), seed=0)
        args = (X[tr], y[tr], X[te], y[te])
        kw = dict(max_leaves=32, boundary_expansion=0.1)
        models = [
            ("Partition Tree (TreeLab)", partial(ours, PartitionTreeRegressor(**kw), *args)),
            (
                "Partition Tree, box='reference'",
                partial(ours, PartitionTreeRegressor(box="reference", **kw), *args),
            ),
            (
                "Partition Tree, best validation size",
                partial(ours, PartitionTreeRegressor(**kw), *args, X[va], y[va]),
            ),
            (
                "Partition Forest (TreeLab, 50 trees)",
                partial(ours, PartitionForestRegressor(random_state=0, **kw), *args),
            ),
            ("partition-tree 0.0.6 (reference)", partial(reference, *args)),
            ("NGBoost (Normal, 500 stages)", partial(ngboost, *args)),
            ("quantile regression forest (100 trees)", partial(qrf, *args)),
        ]
        best = {}
        for label, run in models:
            try:
                s = run()
            except ImportError as exc:
                lines.append(f"| {name} | {label}: not importable ({exc}) | -- | -- | -- | -- |")
                continue
            nll = "n/a (no density)" if np.isnan(s["nll"]) else f"{s['nll']:.3f}"
            lines.append(
                f"| {name} | {label} | {nll} | {s['crps']:.4g} | {s['pinball']:.4g} | "
                f"{s['pit_ks']:.3f} |"
            )
            for k in ("nll", "crps", "pinball", "pit_ks"):
                if np.isfinite(s[k]) and (k not in best or s[k] < best[k][0]):
                    best[k] = (s[k], label)
            print(lines[-1], flush=True)
        for k, (_, label) in best.items():
            wins.setdefault(k, []).append(f"{name}: {label}")
    summary = ["", "Best per dataset (lower is better):", ""]
    for k, title in (
        ("nll", "NLL"),
        ("crps", "CRPS"),
        ("pinball", "pinball"),
        ("pit_ks", "PIT KS"),
    ):
        summary.append(f"- {title}: " + "; ".join(wins.get(k, [])))
    out = "\n".join(
        [
            "Test-set scores on one seeded split per dataset (seed 0; 20 % test, 20 % of the "
            "rest validation, used only by the best-validation-size tree). Quality only: the "
            "machine was shared by several jobs, so no times are reported.",
            "",
            *lines,
            *summary,
            "",
            f"Machine: {machine()}",
        ]
    )
    print(out)
    if not QUICK:
        update_benchmarks("bench_partition_calibration.py", out)


if __name__ == "__main__":
    main()
