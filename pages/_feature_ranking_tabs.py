"""The tabs of the Feature ranking page (pages/feature_ranking.py): attributions,
insertion / deletion curves, the ranker, the tree and the numerics demos; the page computes
the model, the sample and the explanation, then calls one function per tab."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from engine.figures.treegrad import (
    attribution_figure,
    error_depth_figure,
    gamma_tree_figure,
    kendall_figure,
    ranker_figure,
    runtime_figure,
)
from engine.jobs import Job
from engine.teaching.glossary import link_terms
from engine.tree import TreeArrays, TreeEnsemble
from engine.treegrad.service import (
    MODEL_KINDS,
    PAPER_BETAS,
    CurveSet,
    MethodParams,
    curves_steps,
    edge_gammas,
    error_vs_depth_steps,
    kendall_matrix,
    path_table,
    runtime_vs_leaves_steps,
)
from pages._shared import (
    PROJECTION_KEY,
    csv_download,
    dataset_caption,
    seed,
    shown_figure,
)


@dataclasses.dataclass(frozen=True)
class CurvesContext:
    """What every section of the Insertion / deletion tab shares: the explained model and
    the curves' settings, and the page's job helpers.

    ``model`` is the explained tree model, ``model_key`` its cache key (it starts with the
    dataset's digest), ``ds`` the dataset, ``ci`` the explained class index, ``params``
    the method parameters (:class:`engine.treegrad.service.MethodParams`),
    ``curve_output`` what the curves follow (``curves_steps``' ``output``) and
    ``curve_label`` its axis label, ``n_random`` the random rankings drawn and
    ``batch_budget`` a job's time budget in seconds.  ``job_outcome(page_job, what)``,
    ``live_view(page_job, render, what)``, ``other_dataset(meta, what)`` and
    ``show_curves(curve_set, label, key, file_name)`` are the page's.
    """

    model: object
    model_key: str
    ds: object
    ci: int
    params: MethodParams
    curve_output: str
    curve_label: str
    n_random: int
    batch_budget: float
    job_outcome: Callable
    live_view: Callable
    other_dataset: Callable
    show_curves: Callable

    def job(self, rows: np.ndarray, classes, *, chunk: int, name: str) -> Job:
        """A background job of :func:`engine.treegrad.service.curves_steps`: the curves of
        ``rows`` (float64 ``(m, p)``) explained at ``classes`` (a class index, or int64
        ``(m,)`` one per row), ``chunk`` rows per step, seeded with the session's seed."""
        return Job(
            curves_steps,
            self.model,
            rows,
            classes,
            params=self.params,
            output=self.curve_output,
            n_random=int(self.n_random),
            seed=seed(),
            chunk=chunk,
            budget=self.batch_budget,
            name=name,
        )


def draw_curves_tab(
    curves: CurvesContext,
    *,
    batch_job,
    one_job,
    predicted,
    settings,
    classification,
    cls_choice,
    cs_one,
    edited,
    is_boost,
    n,
    n_nodes,
    param_values,
    row,
    tabs,
    te_idx,
    test_rows,
    x,
):
    """The Insertion / deletion tab: one sample's or a batch's curves (their jobs, settings and results)."""
    with tabs[1]:
        mode = st.radio(
            "Curves for",
            ["sample", "batch"],
            horizontal=True,
            key="tg_mode",
            format_func={
                "sample": f"this sample (row {row}{', edited' if edited.size else ''})",
                "batch": "the mean over a batch of test rows",
            }.get,
        )
        _draw_curves_caption(n)
        if mode == "sample" and cs_one is not None:
            curves.show_curves(
                cs_one, curves.curve_label, "tg_one", f"treegrad_curves_row{row}.csv"
            )
        elif mode == "sample":
            _draw_sample_curves_job(
                curves,
                one_job=one_job,
                n=n,
                n_nodes=n_nodes,
                param_values=param_values,
                row=row,
                x=x,
            )
        else:
            size = _draw_batch_size(
                settings=settings,
                test_rows=test_rows,
                own_class=cls_choice == predicted,
            )
            _draw_batch_curves_job(
                curves,
                batch_job=batch_job,
                predicted=predicted,
                classification=classification,
                cls_choice=cls_choice,
                is_boost=is_boost,
                size=size,
                te_idx=te_idx,
            )


def _draw_curves_caption(n):
    """What the insertion / deletion curves show (and, for ``n <= 12`` features, that the
    black dashed curves are the brute-force best envelopes)."""
    st.caption(
        link_terms(
            "Insert features one by one in each method's ranking order (insertion: start from no "
            "feature, f(\u2205), end at the prediction) or delete them (deletion: start at the "
            "prediction). A good ranking makes insertion rise fast (high AUC) and deletion fall fast "
            "(low AUC); AUC is the mean of the n + 1 points. Shapley-type values rank by *average* "
            "marginal effect; the Ranker maximises (f(S) - f(N\\S))/2 over coalitions directly, "
            "which is aimed at ins - del on the attributed game (compare in the table; on another "
            "scale, such as boosting's probability, or with few relevant features, linear "
            "attributions can match it). "
            + (
                "The black dashed curves are the best achievable values of any ranking (brute force "
                "over all subsets of each size)."
                if n <= 12
                else f"(Brute-force best envelopes need at most 12 features; this dataset has {n}.)"
            )
        )
    )


def _draw_sample_curves_job(curves: CurvesContext, *, one_job, n, n_nodes, param_values, row, x):
    """One sample's curves on a model too large to compute them at once: the background
    job's Run button, live view and result (with a note when the sample changed since)."""
    one_key = (
        curves.model_key,
        x.tobytes(),
        int(curves.ci),
        param_values,
        curves.curve_output,
        int(curves.n_random),
    )
    st.caption(
        link_terms(
            f"This model has {n_nodes:,} nodes: the {2 * (n + 1)} curve points of "
            f"{6 + len(PAPER_BETAS) + int(curves.n_random)} rankings take a few seconds, so they "
            "run in the background. Press Run (again after an edit)."
        )
    )

    def start_one():
        job = curves.job(x[None].copy(), int(curves.ci), chunk=1, name="tg_one")
        return job, {"key": one_key, "caption": dataset_caption(curves.ds)}

    one_job.controls("Run", start_one, columns=(1, 1, 5))
    if one_job.running:
        curves.live_view(one_job, lambda s, partial: None, "sample")
    out = curves.job_outcome(one_job, "samples")
    if out is not None and isinstance(out[0], CurveSet):
        if not curves.other_dataset(out[1], "curves") and out[1].get("key") != one_key:
            st.caption(
                link_terms(
                    "These curves are for the sample as it was when Run was pressed; "
                    "press Run to update them."
                )
            )
        curves.show_curves(out[0], curves.curve_label, "tg_one", f"treegrad_curves_row{row}.csv")


def _draw_batch_size(*, settings, test_rows, own_class):
    """The batch's number of test rows (a slider up to 500, kept within the test split) and
    a caption on how the batch runs; ``own_class``: each row explained at its predicted class."""
    n_test = len(test_rows)
    cA, cB = st.columns([2, 3])
    max_batch = min(500, n_test)
    # the kept value may come from a dataset with more test rows
    if not 1 <= st.session_state.get("tg_batch", 1) <= max_batch:
        settings.link_fixed("tg_batch", min(50, max_batch), f"is more than {max_batch} rows")
        st.session_state["tg_batch"] = min(50, max_batch)
    if max_batch > 1:
        size = cA.slider(
            "Rows in the batch",
            1,
            max_batch,
            min(50, max_batch),
            key="tg_batch",
            help=link_terms("The first rows of the seeded test split."),
        )
    else:
        size = 1
        cA.caption(link_terms("The test split has a single row: the batch is that row."))
    cB.caption(
        link_terms(
            "The batch runs in the background (Stop keeps the finished rows). Each row "
            "is explained at the chosen class"
            + (" (its own predicted class)" if own_class else "")
            + "; what-if edits apply to the single sample only."
        )
    )
    return size


def _draw_batch_curves_job(
    curves: CurvesContext,
    *,
    batch_job,
    predicted,
    classification,
    cls_choice,
    is_boost,
    size,
    te_idx,
):
    """The mean curves over the first ``size`` test rows: the background job's Run button,
    live view (the rows' AUCs so far) and result, with the per-row AUCs' download."""
    # what the batch's curves depend on: a finished batch with another key is out of date
    batch_key = (curves.model_key, int(size), curves.params, curves.curve_output, cls_choice)

    def start_batch():
        Xb = curves.ds.X[te_idx[: int(size)]]
        if classification and cls_choice == predicted:
            cls = np.argmax(curves.model.predict_proba(Xb), axis=1).astype(np.int64)
        else:
            cls = curves.ci
        job = curves.job(Xb, cls, chunk=2, name="tg_batch")
        meta = {
            "label": curves.curve_label
            if cls_choice != predicted or not classification
            else (
                "raw score of the predicted class"
                if is_boost and curves.curve_output == "game"
                else "P(predicted class)"
            ),
            "key": batch_key,
            "caption": f"{dataset_caption(curves.ds)} Model: "
            f"{MODEL_KINDS.get(getattr(curves.model, 'kind', 'tree'), 'tree model')}.",
        }
        return job, meta

    batch_job.controls("Run", start_batch, columns=(1, 1, 5))

    def render_batch(latest, partial=False):
        meta = batch_job.meta
        res = latest["result"] if isinstance(latest, dict) else latest
        if res is None:
            return
        if partial:  # the live view: AUCs of the rows so far (the charts come at the end)
            st.dataframe(res.auc_table().round(5), hide_index=True, width="stretch")
        else:
            curves.show_curves(
                res, meta.get("label", curves.curve_label), "tg_batch", "treegrad_curves_batch.csv"
            )

    job = batch_job.job
    if batch_job.running:
        curves.live_view(batch_job, render_batch, "rows")
    out = curves.job_outcome(batch_job, "rows")
    if out is None and job is None:
        st.info("Press **Run** to compute the mean curves over the batch.")
    elif out is not None and out[0] is not None:
        _draw_batch_result(
            out,
            render_batch=render_batch,
            other_dataset=curves.other_dataset,
            settings_key=batch_key,
        )


def _draw_batch_result(out, *, render_batch, other_dataset, settings_key):
    """A finished batch ``out = (CurveSet, meta)``: a note when it was computed with other
    settings than ``settings_key``, its curves and the per-row AUCs' download."""
    res, meta = out
    if not other_dataset(meta, "curves") and meta.get("key") != settings_key:
        st.caption(
            link_terms("These curves were computed with other settings; press Run to update them.")
        )
    render_batch(res)
    per_row = res.per_row_auc
    csv_download("Download per-row AUCs (CSV)", per_row, "treegrad_batch_auc.csv", key="tg_rows_dl")


def draw_ranker_tab(*, ex, names, panel, params, row, tabs):
    """The Ranker tab: the TreeGrad ranker's feature ranking."""
    with tabs[2]:
        heat = st.radio("Heat map of", ["Ranker Adam", "Ranker GA"], horizontal=True, key="tg_heat")
        panel.chart(
            ranker_figure(
                {"Ranker GA": ex.ga, "Ranker Adam": ex.adam},
                names,
                heat=heat,
                top_k=20,
                title=f"TreeGrad-Ranker on row {row}: lr {params.lr:g}, T = {params.steps}",
            ),
            key="tg_ranker_fig",
        )
        st.caption(
            link_terms(
                "z_i is the probability that feature i is *present*; the Ranker starts at "
                "z = 0.5 (its first step's gradient is the Banzhaf value) and climbs J(z) = "
                "(fbar(z) - fbar(1 - z))/2, the multilinear extension of f(S) - f(N\\S). Adam's "
                "first step is about lr \u00b7 sign(gradient), so it jumps to a vertex of the "
                "cube at once; plain gradient ascent moves in proportion to the gradient, whose "
                "size depends on the output's units."
            )
        )


def draw_tree_tab(*, ci, class_names, cname, ds, is_boost, model, n, names, panel, row, tabs, x):
    """The Tree tab: the explained tree and the sample's path."""
    with tabs[3]:
        trees = model.trees if isinstance(model, TreeEnsemble) else [model]
        ids = list(range(len(trees)))
        note = ""
        if is_boost and model.base.shape[0] > 1:  # multiclass boosting: the explained class's trees
            ids = [k for k in ids if int(model.tree_output[k]) == ci]
            note = f" (the trees adding to the raw score of {cname})"
        k_tree, pos = ids[0], 1
        if len(ids) > 1:
            pos = int(
                st.number_input(
                    f"Tree of the ensemble{note}: 1..{len(ids)}",
                    1,
                    len(ids),
                    1,
                    step=1,
                    key="tg_tree_view",
                    help=link_terms(
                        "The game averages (forest) or sums (boosting) the "
                        "trees; each has its own path and gammas."
                    ),
                )
            )
            k_tree = ids[pos - 1]
        tree: TreeArrays = trees[k_tree]
        tree = dataclasses.replace(
            tree,
            feature_names=names,
            categories=[ds.categories.get(j) for j in range(n)],
            classes_=None
            if tree.task != "classification" or class_names is None
            else np.array(class_names, dtype=object),
        )
        collapse = st.toggle(
            "Collapse below depth 4", value=tree.node_count > 63, key="tg_collapse"
        )
        which = f"Tree {pos} of {len(ids)}" if len(ids) > 1 else "The tree"
        panel.chart(
            gamma_tree_figure(
                tree,
                edge_gammas(tree, x),
                tree.decision_path(x),
                collapse_depth=4 if collapse else None,
                title=f"{which}: {tree.n_leaves} leaves, depth {tree.max_depth}; path of row {row}",
            ),
            key="tg_tree_fig",
        )
        st.caption(
            link_terms(
                "\u03b3 on an edge = cover(parent) / cover(child) where the sample takes the "
                "edge, 0 where it does not. A leaf's factor for feature j is "
                "(1 - z_j + z_j \u00b7 \u03b3_j), \u03b3_j the product over the path's edges on "
                "j: z_j = 0 removes j (the leaf keeps its cover share), z_j = 1 keeps it (the "
                "leaf counts only if the sample reaches it). Hover a node for the \u03b3 of "
                "its incoming edge; the whole path is listed below (also past collapsed "
                "subtrees)."
            )
        )
        edges = path_table(tree, x, names)
        panel.table(
            edges,
            name="path",
            hide_index=True,
            width="stretch",
            height=min(400, 35 * (len(edges) + 1) + 3),
        )


def draw_numerics_tab(
    *, batch_budget, numerics_job, runtime_job, job_outcome, live_view, panel, tabs
):
    """The Numerics tab: the error-vs-depth and runtime demos (their jobs and results)."""
    with tabs[4]:
        st.markdown(
            "**Why stable numerics matter.** On deep trees a path can hold many features; "
            "computing Beta semivalues by interpolating each path's polynomial at Chebyshev nodes "
            "with a Vandermonde solve (Linear TreeShap's approach) loses digits exponentially with "
            "depth, while TreeGrad-Shap's Gauss-Legendre quadrature and TreeProb's roots of unity "
            "stay exact. Errors are measured against brute force over all 2^10 subsets, on "
            "decision trees grown on a synthetic 10-feature problem with 30% label noise (so "
            "unconstrained trees get about 60 levels deep)."
        )
        c1, c2 = st.columns(2)
        depth_opts = [5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 0]
        depths = c1.multiselect(
            "Max depths (0 = grown out)",
            depth_opts,
            default=[5, 10, 20, 30, 45, 0],
            key="tg_num_depths",
        )
        rows_num = c2.select_slider(
            "Training rows", [5000, 10000, 20000, 40000], 40000, key="tg_num_rows"
        )

        def start_num() -> Job:
            if not depths:
                raise ValueError("Choose at least one depth.")
            return Job(
                error_vs_depth_steps,
                [d or None for d in sorted(depths, key=lambda d: d or 999)],
                int(rows_num),
                3,
                seed(),
                budget=batch_budget,
                name="tg_num",
            )

        _draw_demo_job(
            numerics_job,
            start_num,
            prefix="tg_num",
            figure=error_depth_figure,
            units=("depths", "depths"),
            table_name="error_vs_depth",
            column_config={
                "max_abs_error": st.column_config.NumberColumn("max |error|", format="%.2e")
            },
            download=("Download errors (CSV)", "treegrad_error_vs_depth.csv"),
            job_outcome=job_outcome,
            live_view=live_view,
            panel=panel,
        )
        st.markdown(
            "**Runtime vs number of leaves**: one sample, all features. TreeGrad's "
            "gradient is one O(L) pass; TreeGrad-Shap is O(L D); shap's TreeExplainer "
            "(path-dependent, C++) is O(L D\u00b2)."
        )
        leaves_opts = [100, 300, 1000, 3000, 10000, 30000]
        leaves_sel = st.multiselect(
            "Leaves", leaves_opts, default=[100, 1000, 10000], key="tg_rt_leaves"
        )

        def start_rt() -> Job:
            if not leaves_sel:
                raise ValueError("Choose at least one tree size.")
            return Job(
                runtime_vs_leaves_steps,
                sorted(leaves_sel),
                20,
                5,
                seed(),
                budget=batch_budget,
                name="tg_rt",
            )

        _draw_demo_job(
            runtime_job,
            start_rt,
            prefix="tg_rt",
            figure=runtime_figure,
            units=("sizes", "tree sizes"),
            table_name="runtime_vs_leaves",
            column_config={"seconds": st.column_config.NumberColumn("seconds", format="%.2e")},
            download=("Download timings (CSV)", "treegrad_runtime.csv"),
            job_outcome=job_outcome,
            live_view=live_view,
            panel=panel,
        )


def _draw_demo_job(
    page_job,
    start,
    *,
    prefix,
    figure,
    units,
    table_name,
    column_config,
    download,
    job_outcome,
    live_view,
    panel,
):
    """One demo of the Numerics tab: its Run / Stop buttons (``start`` makes the job), the
    live ``figure(rows)`` while it runs, and the finished rows' figure, table and CSV.

    ``prefix`` keys the widgets (``<prefix>_live``, ``_fig``, ``_dl``); ``units`` are what
    the live view and the outcome count (``("sizes", "tree sizes")``); ``download`` is
    ``(label, file name)``; ``job_outcome`` and ``live_view`` are the page's.
    """
    page_job.controls("Run", start, columns=(1, 1, 5))
    if page_job.running:
        live_view(
            page_job,
            lambda s, partial: st.plotly_chart(
                shown_figure(figure(s["rows"])), key=f"{prefix}_live"
            ),
            units[0],
        )
    out = job_outcome(page_job, units[1])
    if out is not None and out[0] is not None:
        df = out[0] if isinstance(out[0], pd.DataFrame) else out[0]["rows"]
        panel.chart(figure(df), key=f"{prefix}_fig")
        panel.table(
            df, name=table_name, hide_index=True, width="stretch", column_config=column_config
        )
        csv_download(download[0], df, download[1], key=f"{prefix}_dl")


def draw_attributions_tab(
    *, settings, edited, ex, fmt_value, game_label, n, names, panel, row, tabs, x
):
    """The Attributions tab: the sample's feature attributions by each method (figure and table)."""
    with tabs[0]:
        c1, c2 = st.columns([1, 1])
        top_k = n
        if n > 1:
            if not 1 <= st.session_state.get("tg_topk", 1) <= n:
                settings.link_fixed("tg_topk", min(n, 15), f"is more than the {n} features")
                st.session_state["tg_topk"] = min(n, 15)
            top_k = c1.slider(
                "Features shown",
                1,
                n,
                min(n, 15),
                key="tg_topk",
                help=link_terms("Features with the largest |attribution| over all methods."),
            )
        normalise = c2.toggle("Scale each method by its max |value|", key="tg_norm")
        value_label = f"contribution to {game_label}"
        panel.chart(
            attribution_figure(
                ex.scores,
                names,
                top_k=int(top_k),
                normalise=normalise,
                title=f"Attributions of row {row} ({'edited, ' if edited.size else ''}{value_label})",
                value_label="attribution",
            ),
            key="tg_attr_fig",
        )
        sh = ex.scores["Shapley"]
        st.caption(
            link_terms(
                f"Shapley efficiency: f(\u2205) + \u03a3\u03c6 = {float(ex.f_empty):.6g} + "
                f"{float(sh.sum()):.6g} = {float(ex.f_empty + sh.sum()):.6g}; f(all features) = "
                f"{float(ex.f_full):.6g}. Hatched bars are negative. Ranker scores are the running mean of "
                "the symmetric gradient, so they rank features; their size is not an additive "
                "share."
            )
        )
        # the heat map beside its explanation; above it in projection mode (too narrow)
        c1, c2 = (
            (st.container(), st.container())
            if st.session_state.get(PROJECTION_KEY)
            else st.columns([3, 2])
        )
        tau = kendall_matrix(ex.scores)
        panel.chart(kendall_figure(tau), key="tg_tau_fig", where=c1)
        table = pd.DataFrame(
            {"feature": names, "value": [fmt_value(j, x[j]) for j in range(n)]}
            | {k: v for k, v in ex.scores.items()}
        )
        unused = [names[j] for j in range(n) if all(s[j] == 0 for s in ex.scores.values())]
        c2.markdown(
            "**Kendall tau** compares orderings: 1 = same ranking, 0 = unrelated, "
            "-1 = reversed. Linear attributions (Shapley, Banzhaf, Beta) usually agree "
            "closely; the Ranker reorders features whose effect depends on others."
        )
        if unused:
            c2.caption(
                link_terms(
                    f"{len(unused)} feature(s) score 0 for every method (never on this "
                    f"sample's relevant paths): {', '.join(unused[:12])}"
                    + ("..." if len(unused) > 12 else "")
                )
            )
        panel.table(
            table.round(6),
            name="scores",
            hide_index=True,
            width="stretch",
            height=min(420, 35 * (n + 1) + 3),
        )
        csv_download(
            "Download scores (CSV)", table, f"treegrad_scores_row{row}.csv", key="tg_scores_dl"
        )
