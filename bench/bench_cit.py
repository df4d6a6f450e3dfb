"""Benchmark: conditional inference trees and forests against R partykit's ``ctree``.

Run ``python bench/bench_cit.py`` from the repository root (``--quick`` for a short run:
B = 999, fewer repeats, one learner and smaller forests).  Needs ``Rscript`` with
``library(partykit)`` (Debian ``r-cran-partykit``); without it the ctree columns say so.

All sections except 3 run the CIT paper's permutation procedure
(``engine.cit.PAPER_SETTINGS``); the estimators' defaults follow ctree's asymptotic tests
(``bench_cit_partykit.py``: p-values against partykit; ``bench_cit_scale.py``: fit time
against ctree's defaults from 1,000 to 200,000 rows).

1. Fit time at equal B: TreeLab's ``ConditionalInferenceTreeClassifier`` with B fixed
   permutations per test (``n_resamples_selector = n_resamples_splitter = B``, unadjusted
   level 0.05 per test, ``min_samples_split=20, min_samples_leaf=7`` = ctree's ``minsplit``
   / ``minbucket``), with adaptive stopping (the default) and without, against
   ``ctree(y ~ ., control = ctree_control(testtype = "MonteCarlo", nresample = B,
   mincriterion = 0.95))``.  Our time: best of N in this process, warm JIT
   (``time.perf_counter``).  ctree's time: ``system.time`` around the ``ctree`` call only, best
   of N inside one ``Rscript`` run, on the same rows written to a temporary CSV.  Data:
   breast_cancer (bundled) and a synthetic 2,000 x 50 table (``make_classification``:
   10 informative, 5 redundant, 2 classes, flip_y 0.05, seed 0).
2. Effect of adaptive stopping and of the threshold method on our fit time (the paper's
   settings otherwise: Bonferroni, B 'auto'): exact vs histogram (256 bins), adaptive on / off.
3. Split variables of the first two levels, ours (the defaults, ``min_samples_split=20,
   min_samples_leaf=7``) beside ctree's defaults (asymptotic Bonferroni test), on iris, wine,
   breast_cancer and penguins (categorical island / sex as factors in R).
4. Top-k balanced accuracy (k = 1, 2, 3, 5, 10) on wine, breast_cancer and digits for CIT,
   CIF, CART and random forest (scikit-learn, default parameters), the CIT paper's protocol
   (citrees ``paper/benchmark/pipeline/stage1.py`` / ``stage2.py``): for seeds s = 0 ..
   ``--seeds`` - 1, stratified 5-fold CV shuffled with s; on every fold of seed s the ranker
   is seeded with s (``--ranker-seed reference``, the default: the seeding of the SPEC's
   reference run: with it our seeds 0 and 1 give that run's random-forest row to the third
   decimal and its CART row within 0.002; ``paper``: ``s * 1000 + f`` on fold f, as
   stage1.py), fitted on the standardised training fold and ranked by
   ``np.argsort(importances)[::-1]``; features standardised on the training fold, mean over
   the learners logistic regression, RBF SVM and 5-NN (``--quick``: logistic only); then
   every seed's mean and the standard error of the mean over seeds.  CIT / CIF use the
   paper's configuration (B 'minimum', histogram thresholds with max_thresholds=256,
   adaptive stopping, Bonferroni); CIF 100 trees (50 with ``--quick``).  Shown beside the
   docs/spec.md section 4 reference figures on wine (CART and RF: the same reference run, from the
   research notes).
5. Forest draws on the reference's own splits (``--only draws``): CIF's top-k result depends
   on its random draws, and the reference is one draw; on the reference's CV splits (seeds 0
   and 1) and seeding, ``--draws`` R runs of CIT and CIF (run 0 with the reference's seeds,
   run r > 0 with seeds 100 + 2r + s): mean and standard deviation over runs and the share
   of runs at or above the reference (within 0.0005) at each k.

Prints markdown tables plus the machine and writes them to ``bench/out/cit.md``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _docs import update_benchmarks  # noqa: E402
from _machine import machine  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402

from engine.cit import (  # noqa: E402
    PAPER_SETTINGS,
    ConditionalInferenceForestClassifier,
    ConditionalInferenceTreeClassifier,
    top_k_curve,
)
from engine.data import load_bundled, make_dataset  # noqa: E402
from engine.warmup import warm_up  # noqa: E402

KS = (1, 2, 3, 5, 10)
SPEC_WINE = {
    "CIF": (0.728, 0.899, 0.937, 0.982, 0.977),
    "CIT": (0.707, 0.873, 0.929, 0.963, 0.966),
    # the same reference run's decision tree and random forest rows (research notes)
    "CART": (0.767, 0.894, 0.946, 0.957, 0.972),
    "RF": (0.692, 0.884, 0.943, 0.982, 0.974),
}
#: The paper's procedure (permutation tests in both stages; the estimators' defaults are
#: ctree's since the asymptotic p-values, see bench_cit_partykit.py / bench_cit_scale.py).
PAPER = PAPER_SETTINGS["classification"]
PAPER_CFG = dict(
    **PAPER,
    n_resamples_selector="minimum",
    n_resamples_splitter="minimum",
    threshold_method="histogram",
    max_thresholds=256,
)
CTREE_MIN = dict(min_samples_split=20, min_samples_leaf=7)

R_SCRIPT = r"""
suppressMessages(library(partykit))
a <- commandArgs(TRUE)
d <- read.csv(a[1], stringsAsFactors = TRUE)
d$y <- factor(d$y)
B <- as.integer(a[2]); reps <- as.integer(a[3])
ctl <- if (B > 0) ctree_control(testtype = "MonteCarlo", nresample = B,
                                mincriterion = 0.95) else ctree_control()
best <- Inf
for (i in seq_len(reps)) {
  set.seed(i)
  t <- system.time(m <- ctree(y ~ ., data = d, control = ctl))[["elapsed"]]
  best <- min(best, t)
}
vn <- function(nd) {
  s <- split_node(nd)
  if (is.null(s)) "leaf" else names(m$data)[varid_split(s)]
}
root <- node_party(m)
kids <- kids_node(root)
lv2 <- if (is.null(kids)) "" else paste(sapply(kids, vn), collapse = "|")
cat(best, length(m), vn(root), lv2, sep = "\t")
"""


def have_r() -> bool:
    if shutil.which("Rscript") is None:
        return False
    r = subprocess.run(
        ["Rscript", "-e", "suppressMessages(library(partykit))"], capture_output=True, text=True
    )
    return r.returncode == 0


def run_ctree(frame: pd.DataFrame, y, B: int, reps: int) -> dict:
    """ctree on ``frame`` (columns f0..) + y: best elapsed seconds, nodes, level-1/2 vars."""
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "data.csv"
        script = Path(tmp) / "ctree.R"
        df = frame.copy()
        df["y"] = np.asarray(y).astype(str)
        df.to_csv(csv, index=False)
        script.write_text(R_SCRIPT)
        r = subprocess.run(
            ["Rscript", str(script), str(csv), str(B), str(reps)],
            capture_output=True,
            text=True,
            timeout=3600,
        )
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    best, nodes, lv1, lv2 = r.stdout.strip().split("\t") + [""] * (
        4 - len(r.stdout.strip().split("\t"))
    )
    return {
        "seconds": float(best),
        "nodes": int(nodes),
        "lv1": lv1,
        "lv2": [v for v in lv2.split("|") if v],
    }


def best_time(make, X, y, reps: int):
    best, est = np.inf, None
    for i in range(reps):
        t0 = time.perf_counter()
        est = make(i).fit(X, y)
        best = min(best, time.perf_counter() - t0)
    return best, est


def bundled(name: str):
    df, _, entry = load_bundled(name)
    return make_dataset(df, entry["target"], missing="drop")


def r_frame(ds) -> pd.DataFrame:
    """Features named f0.. (categorical ones as labels, read as factors by R)."""
    ff = ds.feature_frame()
    ff.columns = [f"f{j}" for j in range(ds.n_features)]
    return ff


def synthetic():
    X, y = make_classification(
        n_samples=2000,
        n_features=50,
        n_informative=10,
        n_redundant=5,
        n_classes=2,
        flip_y=0.05,
        random_state=0,
    )
    return np.ascontiguousarray(X), y


# -- 1. fit time vs ctree ------------------------------------------------------------------
def fit_time_table(sets, B: int, reps: int, r_ok: bool) -> str:
    rows = []
    for name, X, y, frame in sets:
        fixed = dict(
            n_resamples_selector=B,
            n_resamples_splitter=B,
            adjust_alpha_selector=False,
            adjust_alpha_splitter=False,
            **{**PAPER, **CTREE_MIN},
        )
        t_ad, est_ad = best_time(
            lambda i, f=fixed: ConditionalInferenceTreeClassifier(random_state=i, **f), X, y, reps
        )
        t_fx, est_fx = best_time(
            lambda i, f=fixed: ConditionalInferenceTreeClassifier(
                random_state=i, early_stopping_selector=None, early_stopping_splitter=None, **f
            ),
            X,
            y,
            reps,
        )
        if r_ok:
            rc = run_ctree(frame, y, B, reps)
            ct, cn = f"{rc['seconds']:.2f}", str(rc["nodes"])
            r_ad, r_fx = f"{rc['seconds'] / t_ad:.1f}x", f"{rc['seconds'] / t_fx:.1f}x"
        else:
            ct = cn = r_ad = r_fx = "n/a (no Rscript/partykit)"
        rows.append(
            f"| {name} | {X.shape[0]} x {X.shape[1]} | {B} | {t_ad:.2f} "
            f"({est_ad.tree_.node_count}) | {t_fx:.2f} ({est_fx.tree_.node_count}) | "
            f"{ct} ({cn}) | {r_ad} | {r_fx} |"
        )
    head = (
        "| data | rows x features | B | TreeLab CIT, adaptive: s (nodes) | TreeLab CIT, "
        "fixed B: s (nodes) | partykit ctree MonteCarlo: s (nodes) | ctree / ours "
        "(adaptive) | ctree / ours (fixed B) |\n|---|---|---|---|---|---|---|---|"
    )
    return "\n".join([head] + rows)


# -- 2. adaptive stopping and threshold method ---------------------------------------------
def options_table(sets, reps: int) -> str:
    configs = {
        "exact, adaptive (the paper's default)": {},
        "histogram 256, adaptive": dict(threshold_method="histogram", max_thresholds=256),
        "exact, fixed B": dict(early_stopping_selector=None, early_stopping_splitter=None),
        "histogram 256, fixed B": dict(
            threshold_method="histogram",
            max_thresholds=256,
            early_stopping_selector=None,
            early_stopping_splitter=None,
        ),
    }
    rows = []
    for name, X, y, _ in sets:
        base = None
        for label, cfg in configs.items():
            t, est = best_time(
                lambda i, c=cfg: ConditionalInferenceTreeClassifier(
                    random_state=i, **{**PAPER, **c}
                ),
                X,
                y,
                reps,
            )
            base = base or t
            perms = int(est.n_permutations_selector_.sum() + est.n_permutations_splitter_.sum())
            recs = est.node_records_
            run_a = sum(int(sum(r.get("n_permutations", []))) for r in recs)
            run_b = sum(int(sum(r.get("threshold_n_permutations", []))) for r in recs)
            n_thr = sum(len(r.get("thresholds", [])) for r in recs)
            rows.append(
                f"| {name} | {label} | {t:.2f} | {t / base:.1f}x | "
                f"{est.tree_.node_count} | {perms:,} | {run_a:,} + {run_b:,} | "
                f"{n_thr} |"
            )
            print(rows[-1], file=sys.stderr, flush=True)
    head = (
        "| data | thresholds, stopping | fit s | vs default | nodes | permutations at the "
        "splits (stage A + B) | permutations in the records of every node (stage A + "
        "stage B) | thresholds recorded |\n|---|---|---|---|---|---|---|---|"
    )
    return "\n".join([head] + rows)


# -- 3. agreement with ctree ------------------------------------------------------------------
def agreement_table(names, r_ok: bool) -> str:
    rows = []
    for dname in names:
        ds = bundled(dname)
        est = ConditionalInferenceTreeClassifier(
            categorical_features=ds.is_categorical, random_state=0, **CTREE_MIN
        ).fit(ds.X, ds.y)
        t = est.tree_
        fn = ds.feature_names

        def var(v, t=t, fn=fn):
            return "leaf" if t.children_left[v] < 0 else fn[t.feature[v]]

        ours1 = var(0)
        ours2 = (
            [] if t.children_left[0] < 0 else [var(t.children_left[0]), var(t.children_right[0])]
        )
        if r_ok:
            rc = run_ctree(r_frame(ds), ds.target_labels(), 0, 1)
            mp = {f"f{j}": n for j, n in enumerate(fn)}
            c1 = mp.get(rc["lv1"], rc["lv1"])
            c2 = [mp.get(v, v) for v in rc["lv2"]]
            agree1 = "yes" if c1 == ours1 else "no"
            agree2 = "yes" if c2 == ours2 else ("same set" if sorted(c2) == sorted(ours2) else "no")
            ctxt = f"{c1} / {' , '.join(c2) or '-'}"
        else:
            ctxt, agree1, agree2 = "n/a", "n/a", "n/a"
        rows.append(
            f"| {dname} | {ours1} / {' , '.join(ours2) or '-'} | {ctxt} | {agree1} | {agree2} |"
        )
    head = (
        "| data | TreeLab CIT: root / level 2 (left, right) | partykit ctree: root / level "
        "2 (left, right) | root agrees | level 2 agrees |\n|---|---|---|---|---|"
    )
    return "\n".join([head] + rows)


# -- 4. top-k ----------------------------------------------------------------------------------
def top_k_table(
    names, learners, n_trees: int, seeds: int = 1, ranker_seed: str = "reference"
) -> str:
    """Top-k balanced accuracy, the CIT paper's protocol (citrees ``paper/benchmark``,
    stage1.py / stage2.py): for each seed s, stratified 5-fold CV shuffled with s; the ranker
    is seeded with s on every fold (``ranker_seed='reference'``) or with ``s * 1000 + f`` on
    fold f (``'paper'``) and fitted on the standardised training fold, ranking
    ``np.argsort(importances)[::-1]``; mean over seeds, folds and learners, plus per-seed
    means and their standard error."""
    from sklearn.base import clone
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    from engine.cit.steps import _OneFold
    from engine.cit.topk import ranking_of

    def rankers(seed):
        return {
            "CIT": ConditionalInferenceTreeClassifier(random_state=seed, **PAPER_CFG),
            "CIF": ConditionalInferenceForestClassifier(
                n_estimators=n_trees, n_jobs=1, random_state=seed, **PAPER_CFG
            ),
            "CART": DecisionTreeClassifier(random_state=seed),
            "RF": RandomForestClassifier(random_state=seed),
        }

    rows = []
    seed_rows = []
    for dname in names:
        ds = bundled(dname)
        for mname in rankers(0):
            t0 = time.perf_counter()
            scores = np.zeros((seeds, len(learners), 5, len(KS)))
            for seed in range(seeds):
                folds = StratifiedKFold(5, shuffle=True, random_state=seed).split(ds.X, ds.y)
                for f, (tr, te) in enumerate(folds):  # one ranking per training fold
                    rs = seed if ranker_seed == "reference" else seed * 1000 + f
                    est = rankers(rs)[mname]
                    Xtr = StandardScaler().fit_transform(ds.X[tr])
                    rank = ranking_of(
                        clone(est).fit(Xtr, ds.y[tr]).feature_importances_, ties="numpy"
                    )
                    for i, lr in enumerate(learners):
                        scores[seed, i, f] = top_k_curve(
                            rank,
                            ds.X,
                            ds.y,
                            KS,
                            learner=lr,
                            cv=_OneFold(tr, te),
                            task="classification",
                        )["mean"]
            mean = scores.mean(axis=(0, 1, 2))
            ref = SPEC_WINE.get(mname) if dname == "wine" else None
            cells = " | ".join(
                f"{v:.3f}" + (f" ({r:.3f})" if ref else "")
                for v, r in zip(mean, ref or [None] * len(KS), strict=True)
            )
            rows.append(f"| {dname} | {mname} | {cells} | {time.perf_counter() - t0:.0f} |")
            print(rows[-1], file=sys.stderr, flush=True)
            per_seed = scores.mean(axis=(1, 2))  # seeds x ks
            for seed in range(seeds):
                seed_rows.append(
                    f"| {dname} | {mname} | {seed} | "
                    + " | ".join(f"{v:.3f}" for v in per_seed[seed])
                    + " |"
                )
            if seeds > 2:  # the SPEC reference run had 2 seeds
                seed_rows.append(
                    f"| {dname} | {mname} | mean of seeds 0, 1 | "
                    + " | ".join(f"{v:.3f}" for v in per_seed[:2].mean(axis=0))
                    + " |"
                )
            if seeds > 1:
                se = per_seed.std(axis=0, ddof=1) / np.sqrt(seeds)
                seed_rows.append(
                    f"| {dname} | {mname} | SE of the mean | "
                    + " | ".join(f"{v:.3f}" for v in se)
                    + " |"
                )
    head = (
        "| data | ranking | "
        + " | ".join(f"k={k}" for k in KS)
        + " | s |\n|---|---|"
        + "---|" * (len(KS) + 1)
    )
    seed_head = (
        "| data | ranking | seed | "
        + " | ".join(f"k={k}" for k in KS)
        + " |\n|---|---|---|"
        + "---|" * len(KS)
    )
    return (
        "\n".join([head] + rows) + "\n\nPer-seed means (over folds and learners) and the "
        "standard error of the mean over seeds:\n\n" + "\n".join([seed_head] + seed_rows)
    )


def draws_table(learners, n_trees: int, draws: int) -> str:
    """CIT and CIF on wine over ``draws`` random runs on the reference's own CV splits
    (stratified 5-fold shuffled with seeds 0 and 1) and seeding (run 0: the ranker seeded with
    s on every fold of seed s; run r > 0: with ``100 + 2 r + s``); per k the mean and standard
    deviation over runs of the two-seed mean, and the share of runs at or above the SPEC
    reference (within 0.0005)."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from engine.cit.steps import _OneFold
    from engine.cit.topk import ranking_of

    ds = bundled("wine")
    splits = [
        list(StratifiedKFold(5, shuffle=True, random_state=s).split(ds.X, ds.y)) for s in range(2)
    ]
    memo = {}  # (seed, fold, learner, top-10 tuple) -> scores at each k

    def fold_scores(s, f, rank, learner):
        key = (s, f, learner, tuple(rank[: max(KS)]))
        if key not in memo:
            memo[key] = top_k_curve(
                rank,
                ds.X,
                ds.y,
                KS,
                learner=learner,
                cv=_OneFold(*splits[s][f]),
                task="classification",
            )["mean"]
        return memo[key]

    rows = []
    for mname in ("CIT", "CIF"):
        t0 = time.perf_counter()
        runs = np.zeros((draws, len(KS)))
        for r in range(draws):
            per = np.zeros((2, 5, len(learners), len(KS)))
            for s in range(2):
                rs = s if r == 0 else 100 + 2 * r + s
                for f, (tr, _) in enumerate(splits[s]):
                    est = (
                        ConditionalInferenceTreeClassifier(random_state=rs, **PAPER_CFG)
                        if mname == "CIT"
                        else ConditionalInferenceForestClassifier(
                            n_estimators=n_trees, n_jobs=1, random_state=rs, **PAPER_CFG
                        )
                    )
                    Xtr = StandardScaler().fit_transform(ds.X[tr])
                    rank = ranking_of(est.fit(Xtr, ds.y[tr]).feature_importances_, ties="numpy")
                    for i, lr in enumerate(learners):
                        per[s, f, i] = fold_scores(s, f, rank, lr)
            runs[r] = per.mean(axis=(0, 1, 2))
        ref = np.array(SPEC_WINE[mname])
        fmt = lambda v: " | ".join(f"{x:.3f}" for x in v)  # noqa: E731
        rows.append(f"| {mname} | reference (one run) | {fmt(ref)} |")
        rows.append(f"| {mname} | run 0 (reference seeding) | {fmt(runs[0])} |")
        rows.append(f"| {mname} | mean of {draws} runs | {fmt(runs.mean(axis=0))} |")
        rows.append(f"| {mname} | SD over runs | {fmt(runs.std(axis=0, ddof=1))} |")
        rows.append(
            f"| {mname} | share of runs >= reference | "
            + " | ".join(f"{x:.2f}" for x in (runs >= ref - 5e-4).mean(axis=0))
            + " |"
        )
        print(
            f"{mname}: {draws} runs in {time.perf_counter() - t0:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    head = (
        "| ranking | row | " + " | ".join(f"k={k}" for k in KS) + " |\n|---|---|" + "---|" * len(KS)
    )
    return "\n".join([head] + rows)


def main() -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="B = 999, one repeat, smaller runs")
    ap.add_argument("--B", type=int, default=None, help="permutations for the ctree race")
    ap.add_argument(
        "--topk-sets",
        nargs="*",
        default=["wine", "breast_cancer", "digits"],
        help="datasets of the top-k table",
    )
    ap.add_argument(
        "--seeds", type=int, default=1, help="top-k: seeds of the 5-fold CV (the CIT paper uses 5)"
    )
    ap.add_argument(
        "--ranker-seed",
        choices=("reference", "paper"),
        default="reference",
        help="top-k: seed every fold's ranker with the CV seed s (the SPEC "
        "reference run) or with s * 1000 + fold (citrees' stage1.py)",
    )
    ap.add_argument(
        "--draws",
        type=int,
        default=30,
        help="draws: random runs of CIT / CIF on the reference's splits",
    )
    ap.add_argument(
        "--only",
        nargs="*",
        choices=("agree", "topk", "fit", "options", "draws"),
        help="run only these parts (default: all)",
    )
    args = ap.parse_args()
    quick = args.quick
    B = args.B or (999 if quick else 9999)
    reps = 1 if quick else 3
    warm_up()
    r_ok = have_r()
    bc = bundled("breast_cancer")
    Xs, ys = synthetic()
    sframe = pd.DataFrame(Xs, columns=[f"f{j}" for j in range(Xs.shape[1])])
    sets = [("breast_cancer", bc.X, bc.y, r_frame(bc)), ("synthetic", Xs, ys, sframe)]
    ConditionalInferenceTreeClassifier(random_state=0).fit(bc.X[:60], bc.y[:60])  # warm
    parts = []
    t0 = time.perf_counter()

    def add(text):  # print each table as soon as it is measured
        parts.append(text)
        print(text + "\n", flush=True)

    only = set(args.only or ("agree", "topk", "fit", "options", "draws"))
    if "agree" in only:
        add(
            "### Split variables of the first two levels vs ctree\n\n"
            + agreement_table(("iris", "wine", "breast_cancer", "penguins"), r_ok)
        )
    if "fit" in only:
        add(f"### Fit time vs partykit ctree at equal B\n\n{fit_time_table(sets, B, reps, r_ok)}")
    if "options" in only:
        add(
            "### Adaptive stopping and threshold method (TreeLab CIT, defaults otherwise)"
            f"\n\n{options_table(sets, 1)}"
        )
    learners = ("logistic",) if quick else ("logistic", "svm", "knn")
    if "topk" in only:
        add(
            f"### Top-k balanced accuracy (mean over {', '.join(learners)} and "
            f"{args.seeds} x 5-fold CV; the reference run in brackets)\n\n"
            + top_k_table(
                args.topk_sets, learners, 50 if quick else 100, args.seeds, args.ranker_seed
            )
        )
    if "draws" in only:
        n_draws = min(args.draws, 5) if quick else args.draws
        add(
            f"### CIT / CIF over {n_draws} random runs on the reference's wine splits (mean "
            f"over {', '.join(learners)}, seeds 0 and 1 x 5 folds"
            + (
                "; --quick: one learner and 50 trees, not comparable with the reference"
                if quick
                else ""
            )
            + ")\n\n"
            + draws_table(learners, 50 if quick else 100, n_draws)
        )
    parts.append(
        f"Machine: {machine()}; R partykit via Rscript: {'yes' if r_ok else 'no'}; "
        f"total {time.perf_counter() - t0:.0f} s" + (" (--quick)" if quick else "") + "."
    )
    out = "\n\n".join(parts)
    print(parts[-1])
    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "cit.md").write_text(out + "\n", encoding="utf-8")
    if not quick and not args.only:
        update_benchmarks("bench_cit.py", out)
    return out


if __name__ == "__main__":
    main()
