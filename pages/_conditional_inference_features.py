"""Sections 4 to 6 of the Conditional inference page (pages/conditional_inference.py):
the feature rankings, what the top-k features buy downstream, the selection-bias
experiment; and the page's job helpers (Run / Stop buttons with progress, a finished job's
result)."""

import numpy as np
import pandas as pd
import streamlit as st

from engine.cit.service import (
    CLASSIFICATION_LEARNERS,
    REGRESSION_LEARNERS,
    make_rankers,
    rankings_table,
    selection_bias_steps,
    top_k_steps,
)
from engine.figures.cit import (
    rankings_figure,
    selection_bias_figure,
    top_k_figure,
)
from engine.jobs import Job
from engine.teaching.glossary import link_terms
from pages._shared import (
    PageJob,
    csv_download,
    dataset_caption,
    seed,
    show_job_failure,
)


def draw_rankings(*, methods, fit, names, panel, running):
    """Section 4 of the Conditional inference page: the four methods' feature rankings (figure, table, download)."""
    st.subheader("4. Feature rankings: CIT, CIF, CART, random forest")
    imps = {m: fit["importances"][m] for m in methods if m in fit["importances"]}
    if running:
        st.caption(
            link_terms("The forests are still being fitted; the table fills in as they finish.")
        )
    rank = rankings_table(imps, names)
    st.caption(
        link_terms(
            "Normalised importances (each method sums to 1). CIT / CIF: impurity decrease of "
            "the significant splits (not weighted by node size); CART / random forest: "
            "scikit-learn's mean decrease in impurity (fully grown trees; categorical codes "
            "treated as numbers). Fit times: "
            + ", ".join(f"{m} {s:.2f} s" for m, s in fit["seconds"].items())
            + "."
        )
    )
    panel.chart(rankings_figure(rank, list(imps)), key="ci_rank_fig")
    shown_rank = rank.round(4)
    for column in [c for c in shown_rank if c.endswith(" rank")]:  # no order for importance 0
        shown_rank[column] = ["not used" if pd.isna(v) else str(int(v)) for v in rank[column]]
    panel.table(shown_rank, name="rankings", hide_index=True, width="stretch", key="ci_rank_table")
    csv_download("Download the rankings (CSV)", rank, "cit_rankings.csv", key="ci_rank_dl")
    unused = [m for m, v in imps.items() if not np.any(np.asarray(v) > 0)]
    if unused:
        st.caption(
            link_terms(
                f"{' and '.join(unused)} {'has' if len(unused) == 1 else 'have'} no split, so "
                "all importances are 0 and there is no ranking (a top-k run would keep the "
                "features in column order)."
            )
        )
    if any(rank[f"{m} rank"].isna().any() for m in imps if m not in unused):
        st.caption(
            link_terms(
                "A rank is *not used* where the method gives the feature no importance (it never "
                "splits on it)."
            )
        )


def draw_top_k(
    *,
    methods,
    topk_job,
    categorical,
    clf,
    digest,
    ds,
    fit,
    meta,
    n_trees,
    panel,
    params,
    save_settings,
):
    """Section 5 of the Conditional inference page: what the top-k features of each ranking buy a downstream learner (its job, settings and result)."""
    st.subheader("5. What the top-k features buy downstream")
    st.caption(
        link_terms(
            "For each k, a fixed learner is trained on the k top-ranked features of each method "
            "and scored by cross-validation (features standardised on the training fold). The "
            "paper's protocol re-ranks on every training fold."
        )
    )
    metric = "balanced accuracy" if clf else "R²"
    learner, ks, folds, rerank, topk_methods = _draw_top_k_settings(methods=methods, clf=clf, ds=ds)
    save_settings()

    def start_topk():
        if not ks:
            raise ValueError("Choose at least one k.")
        if not topk_methods:
            raise ValueError("Choose at least one method.")
        rankers = make_rankers(
            ds.task, params, categorical=categorical, n_estimators=int(n_trees), random_state=seed()
        )
        if not rerank:
            if meta["digest"] != digest:
                raise ValueError("The rankings above were fitted on another dataset; press Fit.")
            missing = [m for m in topk_methods if m not in fit["importances"]]
            if missing:
                raise ValueError(
                    f"No ranking above for {', '.join(missing)} yet (the fit was "
                    "stopped or is still running): wait for it, press Fit, remove "
                    "them from Methods, or re-rank on every training fold."
                )
            rankers = {
                m: np.argsort(-fit["importances"][m], kind="stable")
                for m in topk_methods
                if m in fit["importances"]
            }
        rankers = {m: r for m, r in rankers.items() if m in topk_methods}
        job = Job(
            top_k_steps,
            ds.X,
            ds.y,
            ds.task,
            rankers,
            sorted(ks),
            learner=learner,
            n_folds=int(folds),
            random_state=seed(),
            budget=900.0,
            name="ci_topk",
        )
        meta_topk = {
            "caption": dataset_caption(ds),
            "metric": metric,
            "learner": learner,
            "folds": int(folds),
        }
        return job, meta_topk

    tjob, trunning = job_controls(topk_job, "Run top-k", start_topk)
    if tjob is not None:
        tres = tjob.snapshot().latest if trunning else finished_result(tjob, "The top-k run")
        _draw_top_k_result(tres, tmeta=topk_job.meta, panel=panel)
    else:
        st.info("Press **Run top-k** to score the rankings downstream.")


def _draw_top_k_settings(*, methods, clf, ds):
    """The top-k run's widgets; returns ``(learner, ks, folds, rerank, methods chosen)``."""
    learners = CLASSIFICATION_LEARNERS if clf else REGRESSION_LEARNERS
    c = st.columns([2, 3, 2, 2])  # room for every chosen k (the box hid "10" at 1280 px)
    learner = c[0].selectbox(
        "Learner",
        learners,
        key=f"ci_learner_{ds.task}",
        help=link_terms(
            "The CIT paper's benchmark learners: logistic: logistic "
            "regression (balanced class weights); svm / svr: RBF support "
            "vector machine (C = 1); knn: 5 nearest neighbours, "
            "distance-weighted; ridge: ridge regression (alpha = 1)."
        ),
    )
    k_all = [k for k in (1, 2, 3, 5, 10, 20, 50) if k <= ds.n_features]
    if ds.n_features not in k_all:
        k_all.append(ds.n_features)
    ks = c[1].multiselect(
        "k values",
        k_all,
        default=[k for k in (1, 2, 3, 5, 10) if k in k_all] or k_all[:1],
        key="ci_ks_view",
        help=link_terms("Numbers of top-ranked features to keep."),
    )
    folds = c[2].slider("Folds", 2, 10, 5, key="ci_folds")
    rerank = c[3].checkbox(
        "Re-rank on every training fold",
        True,
        key="ci_rerank",
        help=link_terms(
            "The paper's protocol (honest, slower: every method is refitted "
            "per fold). Off: use the rankings above, fitted on all rows "
            "(optimistic, fast)."
        ),
    )
    topk_methods = st.multiselect(
        "Methods", list(methods), default=list(methods), key="ci_topk_methods"
    )
    return learner, ks, folds, rerank, topk_methods


def _draw_top_k_result(tres, *, tmeta, panel):
    """The top-k run's result ``tres`` (partial while it runs): notes, the score curves per
    method, their table and its download; nothing before the first curves."""
    if not (tres and tres.get("curves")):
        return
    st.caption(
        link_terms(f"Results for {tmeta['caption'].rstrip('.')}; learner {tmeta['learner']}.")
    )
    partial = [
        f"{m} ({len(cv['scores'])} of {tmeta['folds']} folds)"
        for m, cv in tres["curves"].items()
        if not cv.get("complete", True)
    ]
    if partial:
        st.caption(link_terms("Not every fold finished: " + ", ".join(partial) + "."))
    for note in tres.get("notes", []):
        st.info(note)
    panel.chart(top_k_figure(tres["curves"], metric=tmeta["metric"]), key="ci_topk_fig")
    ttable = pd.DataFrame({"k": next(iter(tres["curves"].values()))["k"]})
    for m, cv in tres["curves"].items():
        ttable[m] = np.round(cv["mean"], 4)
        ttable[f"{m} sd"] = np.round(cv["std"], 4)
    panel.table(ttable, name="top_k", hide_index=True, width="stretch", key="ci_topk_table")
    csv_download("Download the top-k scores (CSV)", ttable, "cit_top_k.csv", key="ci_topk_dl")


def draw_selection_bias(*, bias_job, categorical, ds, panel, params, save_settings):
    """Section 6 of the Conditional inference page: the selection-bias experiment (its job, settings and result)."""
    st.subheader("6. CART's selection bias, live")
    st.caption(
        link_terms(
            "Adds pure-noise features (continuous uniform: every value distinct) to the current "
            "data and fits a fully grown CART and the conditional inference tree with the "
            "parameters above. CART's greedy search finds spurious splits among many distinct "
            "values, so noise collects importance; the tests give it (almost) none."
        )
    )
    n_noise = st.number_input("Noise features to add", 1, 200, 10, step=1, key="ci_n_noise")
    save_settings()

    def start_bias():
        job = Job(
            selection_bias_steps,
            ds.X,
            ds.y,
            ds.task,
            params,
            int(n_noise),
            categorical=categorical,
            random_state=seed(),
            budget=600.0,
            name="ci_bias",
        )
        meta_bias = {
            "caption": dataset_caption(ds),
            "names": list(ds.feature_names),
            "n_noise": int(n_noise),
        }
        return job, meta_bias

    bjob, brunning = job_controls(bias_job, "Add noise and refit", start_bias)
    if bjob is not None and not brunning:
        bres = finished_result(bjob, "The demonstration")
        bmeta = bias_job.meta
        if bres and len(bres.get("importances", {})) == 2:
            k = bmeta["n_noise"]
            bnames = bmeta["names"] + [f"noise {i + 1}" for i in range(k)]
            is_noise = np.r_[np.zeros(len(bmeta["names"]), bool), np.ones(k, bool)]
            st.caption(
                link_terms(f"Results for {bmeta['caption'].rstrip('.')}, plus {k} noise features.")
            )
            share = {m: float(v[is_noise].sum()) for m, v in bres["importances"].items()}
            st.markdown(
                " · ".join(
                    f"**{m}** puts {s:.0%} of its importance on noise" for m, s in share.items()
                )
            )
            panel.chart(
                selection_bias_figure(bres["importances"], bnames, is_noise), key="ci_bias_fig"
            )
            btable = pd.DataFrame(
                {
                    "feature": bnames,
                    "noise": is_noise,
                    **{m: np.round(v, 4) for m, v in bres["importances"].items()},
                }
            )
            panel.table(
                btable, name="selection_bias", hide_index=True, width="stretch", key="ci_bias_table"
            )
    elif bjob is None:
        st.info("Press **Add noise and refit** to run the demonstration.")


# -- job helper --------------------------------------------------------------------------
def draw_progress(snap) -> None:
    latest = snap.latest or {"done": 0, "total": 1, "message": "starting..."}
    st.progress(
        min(1.0, latest["done"] / max(latest["total"], 1)),
        text=f"{latest['message']} ({snap.elapsed:.1f} s)",
    )


def job_controls(
    page_job: PageJob, label: str, start, *, help_text: str | None = None, redraw_on=None
):
    """The kit's Run / Stop buttons and progress fragment for ``page_job``; ``start()``
    returns ``(Job, meta)`` (or raises ValueError, shown as an error).  The whole page is
    redrawn when the job ends or when ``redraw_on(latest snapshot)`` changes (e.g. a new
    partial result to show).  Returns the job (None before the first run) and whether it
    runs."""
    page_job.controls(
        label,
        start,
        help=link_terms(help_text),
        columns=(1.4, 1, 5),
        on_error=lambda exc: st.error(str(exc)),
    )
    running = page_job.running
    if running:
        page_job.live(draw_progress, redraw_on=redraw_on)
    return page_job.job, running


def finished_result(job, what: str):
    """The job's result (or what Stop kept), after showing its status; None if nothing."""
    snap = job.snapshot()
    if snap.status == "error":
        show_job_failure(snap, what, "use fewer permutations, trees or rows")
        return snap.result
    if snap.status in ("cancelled", "timeout"):
        why = "was stopped" if snap.status == "cancelled" else "ran out of time"
        st.warning(f"{what} {why}; showing what finished.")
    return snap.result
