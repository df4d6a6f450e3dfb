"""Sections of the Conditional density page (pages/conditional_density.py): the live
growth, the what-if slices figure, one feature at a time, and the comparison with peers on held-out
rows (its job)."""

import numpy as np
import streamlit as st

from engine.figures.partition import (
    cells_figure,
    class_proba_figure,
    comparison_figure,
    density_heatmap_figure,
    growth_figure,
    pit_figure,
    slice_figure,
)
from engine.jobs import Job
from engine.partition.service import (
    class_grid,
    comparison_steps,
    comparison_table,
    density_grid,
    pit_histogram,
    query_slices,
    section_cells,
    slice_frame,
)
from engine.teaching.glossary import link_terms
from pages._shared import (
    csv_download,
    show_job_failure,
    shown_figure,
)


def draw_growth(snap, meta: dict, prefix: str) -> None:
    """The growing model (the growth job's live view): progress and the live train /
    validation NLL; ``meta``: the job's meta, ``prefix``: the page's widget-key prefix."""
    latest = snap.latest
    if latest is None:
        st.progress(0.0, text="starting...")
        return
    if latest["forest"]:
        done, total, unit = latest["n_trees"], meta["n_estimators"], "trees"
        note = f"{latest['n_leaves']} leaves in all"
    else:
        done, total, unit = latest["n_leaves"], meta["max_leaves"], "leaves"
        note = "the tree stops early when no split gains"
    st.progress(
        min(done / max(total, 1), 1.0),
        text=f"{done} / {total} {unit} -- {snap.elapsed:.1f} s ({note})",
    )
    trace = latest["model"].trace_
    if trace:
        st.plotly_chart(
            shown_figure(growth_figure(trace, forest=latest["forest"])), key=prefix + "live_fig"
        )


def draw_one_feature(
    *,
    prefix,
    X,
    categories,
    classes,
    discrete,
    forest,
    hi_all,
    imp,
    is_cat,
    lo_all,
    model,
    names,
    order,
    panel,
    save_view,
    target,
    tr,
    x,
    y,
):
    """The One feature at a time section of the Conditional density page: how the conditional density moves along one feature, the others held at the chosen row."""
    st.subheader("Along one feature")
    fc1, fc2 = st.columns([2, 1])
    j = fc1.selectbox(
        "Feature",
        order,
        key=prefix + "feature_view",
        format_func=lambda k: f"{names[k]} (importance {imp[k]:.3f})",
        help=link_terms("Sorted by the summed log-loss gains of the splits on it."),
    )
    tree_idx = 0
    if forest:
        tree_idx = int(
            fc2.number_input(
                "Tree of the forest to draw",
                0,
                len(model.trees_) - 1,
                0,
                key=prefix + "tree_view",
                help=link_terms("The cells figure shows one tree's partition."),
            )
        )
    save_view()
    if is_cat[j]:
        values = np.arange(len(categories[j]), dtype=np.float64)
    else:
        values = np.linspace(lo_all[j], hi_all[j], 60)
    y_grid = None if discrete else np.linspace(model.y_box_[0], model.y_box_[1], 120)
    if discrete:
        z = class_grid(model, x, j, values, len(classes))
    else:
        z = density_grid(model, x, j, values, y_grid)
    panel.chart(
        density_heatmap_figure(
            values,
            z,
            feature=names[j],
            target=target,
            y_grid=y_grid,
            classes=classes if discrete else None,
            x_current=x[j],
            categories=categories[j] if is_cat[j] else None,
            title=f"p({target} | {names[j]}), other features at the current x",
        ),
        key=prefix + "heat_fig",
    )
    cells = section_cells(model.cells(tree_idx), x, j)
    if discrete:
        cell_classes = [{**c, "classes": [classes[int(k)] for k in c["classes"]]} for c in cells]
    else:
        cell_classes = cells
    which = f"tree {tree_idx} of the forest" if forest else "the tree"
    panel.chart(
        cells_figure(
            cell_classes,
            X[tr, j],
            y[tr],
            feature_index=j,
            feature=names[j],
            target=target,
            y_box=None if discrete else model.y_box_,
            classes=classes if discrete else None,
            categories=categories[j] if is_cat[j] else None,
            x_current=x[j],
            title=f"Cells of {which} along {names[j]} (others at the current x): {len(cells)} cells",
        ),
        key=prefix + "cells_fig",
    )
    st.caption(
        link_terms(
            "Shaded boxes: the leaves of the partition that the line through the current x "
            f"(all features fixed except {names[j]}) meets, darker = denser; hover a box for "
            "its counts. Grey dots: training rows"
            + (
                " (their other features differ, so a dot need not sit in the box drawn around it)."
                if len(names) > 1
                else "."
            )
        )
    )


def draw_comparison_section(
    *,
    comparison_job,
    prefix,
    X,
    classes,
    discrete,
    forest,
    is_cat,
    meta,
    mfloor,
    model,
    panel,
    run_id,
    te,
    tr,
    y,
):
    """The comparison section of the Conditional density page: the Partition Tree and Forest against peers on held-out rows (its job, settings and result)."""
    st.subheader("Comparison on the same split")
    baselines = (
        "CART (scikit-learn DecisionTreeClassifier with the same leaf budget) and a "
        "random forest (100 trees), scored through predict_proba"
        if discrete
        else "a constant Gaussian, CART and a random forest with Gaussian residuals (residual "
        "scale out of fold: 5-fold for CART, out-of-bag for the forest) and a "
        "heteroscedastic Gaussian (mean from the random forest, variance from a second "
        "random forest fitted to the squared out-of-bag residuals)"
    )
    st.caption(
        link_terms(
            "On the training rows of the split above, fits the Partition Tree and the "
            "Partition Forest (the parameters of the grown model; the forest settings of the "
            f"parameter panel) and as baselines {baselines}. Then scores the test rows: "
            + ("log-loss" if discrete else "NLL in nats per unit of y")
            + f" (probabilities / densities floored at {mfloor:g}), test rows out of support, "
            "fit time in seconds."
        )
    )

    def start_comparison():
        """The comparison job (not started) on the grown model's split."""
        tree_params = dict(meta["tree_params"])  # the comparison fits the tree size that was kept
        if not forest:
            tree_params["max_leaves"] = model.partition_tree_.n_leaves
        job = Job(
            comparison_steps,
            X[tr],
            y[tr],
            X[te],
            y[te],
            task=meta["task"],
            n_classes=len(classes) if discrete else 0,
            categorical=is_cat if is_cat.any() else None,
            tree_params=tree_params,
            forest_params=meta["forest_params"],
            seed=meta["seed"],
            floor=mfloor,
            budget=600.0,
            name="pt_cmp",
        )
        return job, {"run_id": run_id, "caption": meta["caption"]}

    comparison_job.controls("Run comparison", start_comparison, primary=False, columns=(1.6, 1, 5))

    def draw_comparison(csnap) -> None:
        """The comparison so far: progress and the models scored."""
        latest = csnap.latest or {"completed": 0, "total": 1, "message": "starting...", "rows": []}
        st.progress(
            latest["completed"] / latest["total"],
            text=f"{latest['message']} -- {latest['completed']}/{latest['total']} models, "
            f"{csnap.elapsed:.1f} s",
        )
        if latest["rows"]:
            st.dataframe(comparison_table(latest["rows"]).round(4), hide_index=True)

    if comparison_job.running:
        comparison_job.live(draw_comparison)
        st.stop()
    cjob = comparison_job.job
    if cjob is None:
        st.info("Press **Run comparison** to fit the baselines on this split.")
        st.stop()
    csnap = cjob.snapshot()
    if csnap.status == "error":
        show_job_failure(csnap, "The comparison", "use fewer rows or fewer trees")
        if csnap.error_kind == "exception" or not (csnap.result or {}).get("rows"):
            st.stop()
    crows = (csnap.result or {}).get("rows", [])
    if csnap.status in ("cancelled", "timeout"):
        st.warning(f"The comparison was stopped; showing the {len(crows)} models that finished.")
    if not crows:
        st.stop()
    table = comparison_table(crows)
    panel.table(table.round(4), name="comparison", hide_index=True)
    at_floor = table["model"][np.isclose(table["test_nll"], -np.log(mfloor), rtol=0, atol=1e-9)]
    if len(at_floor):
        st.warning(
            f"Every test row of {', '.join(at_floor)} is at the density floor: "
            f"{'its' if len(at_floor) == 1 else 'their'} test NLL is -log {mfloor:g} = "
            f"{-np.log(mfloor):.4g} whatever the fit, so it does not rank the models. "
            "Choose a smaller density floor or rescale the target."
        )
    panel.chart(comparison_figure(table, task=meta["task"]), key=prefix + "cmp_fig")
    if not discrete:
        pits = {r["model"]: pit_histogram(r["pit"]) for r in crows if "pit" in r}
        panel.chart(
            pit_figure(pits, title="PIT histograms on the test rows"), key=prefix + "cmp_pit"
        )
    csv_download(
        "Download comparison (CSV)", table, "partition_comparison.csv", key=prefix + "cmp_dl"
    )


def draw_what_if_slices(
    *, prefix, X, classes, discrete, edited, model, overlay, panel, row, target, x, y
):
    """The what-if slices figure of the Conditional density page: the conditional density at the chosen x, the pinned x's and the overlaid test rows (figure and download)."""
    current_label = f"row {row}" + (" (edited x)" if edited else "")
    queries = [(current_label, x, row)]
    queries += [(p["label"], p["x"], p["row"]) for p in st.session_state["_pt_pins"]]
    queries += [(f"row {i}", X[i], i) for i in overlay]
    slices = query_slices(model, queries, y, classes if discrete else None)
    if discrete:
        panel.chart(class_proba_figure(classes, slices, target=target), key=prefix + "slice_fig")
        top = classes[int(np.argmax(slices[0]["proba"]))]
        st.caption(
            link_terms(
                f"Most probable {target} for {current_label}: **{top}** "
                f"(prefix = {slices[0]['proba'].max():.3f}); true {target} of row {row}: "
                f"**{classes[int(y[row])]}**."
            )
        )
    else:
        panel.chart(
            slice_figure(slices, target=target, y_range=model.y_box_), key=prefix + "slice_fig"
        )
        mean = float(model.predict(x.reshape(1, -1))[0])
        dens_true = float(model.density(x.reshape(1, -1), np.array([y[row]]))[0])
        st.caption(
            link_terms(
                f"Dashed lines: the true {target} of each test row shown (an edited x keeps "
                f"the true {target} of its row). Mean of the density for "
                f"{current_label}: **{mean:.4g}**; density at the true {target} of row {row} "
                f"({y[row]:.4g}): **{dens_true:.4g}** per unit of {target}."
            )
        )
    csv_download(
        "Download slices (CSV)",
        slice_frame(slices, target=target),
        "partition_slices.csv",
        key=prefix + "slice_dl",
    )
