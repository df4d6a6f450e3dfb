"""Parts of the Optimal shape trees page (pages/optimal_shape_trees.py) kept in their own
module: the live view of a running search (gap chart, the incumbent with every node's
bounds and gap share, "Give priority to node") and the "Certify a tree" section.  They
only draw; the numbers come from :mod:`engine.literati.service`."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from engine.figures.literati import gap_figure, shape_tree_figure
from engine.jobs import Job
from engine.literati.service import (
    BASELINE_STEPS,
    CERTIFY_SOURCES,
    JOB_SLACK,
    all_thresholds_feasible,
    certifiable,
    certificate_for,
    certificate_of_check,
    certificate_of_model,
    certify_all_thresholds_steps,
    path_label,
    priority_message,
    tree_counts,
)
from engine.teaching.glossary import link_terms
from pages._shared import (
    PageJob,
    dataset_digest,
    kernels_ready,
    md,
    remembered_models,
    show_job_failure,
    shown_figure,
)

PHASE_TITLE = {"main": "Literati search", "k1": "Baseline: Literati with K_max = 1"}
#: Session key of the node picked in the live view's "Give priority to node".
PRIORITY_PICK = "lit_priority_pick"
#: Session key of the last priority sent: (job id, phase, path).
PRIORITY_SENT = "_lit_priority_sent"


def label_tree(tree, meta: dict):
    """The tree with the feature, category and class labels of the dataset it ran on."""
    return dataclasses.replace(
        tree,
        feature_names=meta["feature_names"],
        categories=meta["categories"],
        classes_=np.array(meta["classes"], dtype=object),
    )


def plural(count: int, word: str) -> str:
    """'1 split', '3 splits'."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _send_priority(search_job, phase: str) -> None:
    """Button callback: send the picked node's path to the running search."""
    job = search_job.job
    path = st.session_state.get(PRIORITY_PICK)
    if job is None or job.finished or path is None:
        return
    job.send(priority_message(phase, None if path == "__none__" else path))
    st.session_state[PRIORITY_SENT] = (id(job), phase, path)


def _priority_controls(search_job, phase: str, nb, latest: dict) -> None:
    """The picker of the node to prioritise, its button and what has priority now."""
    # the root is where the search starts anyway: below it, the nodes not proven yet
    open_nodes = [p for p, exact in zip(nb.paths, nb.exact, strict=True) if p and not exact]
    active = latest.get("priority")
    options = ["__none__", *open_nodes]
    labels = {"__none__": "none (the search picks)"}
    for path in open_nodes:
        v = nb.paths.index(path)
        labels[path] = (
            f"node {v}, {path_label(path)}: LB {nb.lower[v]:.4g}, UB {nb.upper[v]:.4g}, "
            f"{100 * nb.share[v]:.0f} % of the gap"
        )
    c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
    c1.selectbox(
        "Give priority to node",
        options,
        format_func=lambda p: labels.get(p, p),
        key=PRIORITY_PICK,
        help=link_terms(
            "Steerable search: the search expands this node's subtree first, until its "
            "bounds meet (it is proven optimal for its rows), then goes on from the root. "
            "It changes the order of the work, never the optimum. Nodes already proven are "
            "not listed, nor the root (where the search starts anyway)."
        ),
    )
    c2.button(
        "Give priority",
        key="lit_priority_btn",
        on_click=_send_priority,
        args=(search_job, phase),
        width="stretch",
    )
    sent = st.session_state.get(PRIORITY_SENT)
    trace = latest["trace"]
    if active is None and len(trace) and trace["priority"].iloc[-1]:
        active = str(trace["priority"].iloc[-1])  # the trace's last row holds it
    if active is not None:
        st.caption(
            f"**Priority:** {path_label(active)} — the search works in that subtree until it is "
            "proven; the trace records it (event *priority*)."
        )
    elif sent is not None and sent[0] == id(search_job.job) and sent[2] != "__none__":
        done = (trace["event"] == "priority_end") & (trace["priority"] == sent[2])
        st.caption(
            f"Priority for {path_label(sent[2])} "
            + ("ended: that subtree is proven." if done.any() else "sent; waiting for the search.")
        )
    else:
        st.caption("No node has priority: the search picks where to work.")
    for msg in latest.get("ignored", []):
        st.caption(f"Not applied: {md(msg)}")


def draw_live(snap, search_job, predict) -> None:
    """The running search: progress, counters, the gap chart, the current incumbent with
    each node's bounds and gap share, and the node to give priority to."""
    meta = search_job.meta
    latest = snap.latest
    if latest is None:
        st.progress(
            0.0,
            text=f"Preparing the search: candidate breakpoints and the ordering "
            f"heuristic... {snap.elapsed:.1f} s",
        )
        return
    phase = latest["phase"]
    if phase == "baselines":
        st.progress(
            latest["done"] / latest["of"],
            text=f"Fitting the baselines before the search: {BASELINE_STEPS[latest['fitting']]} "
            f"({latest['done'] + 1} of {latest['of']}) on {len(meta['tr']):,} training rows... "
            f"{snap.elapsed:.1f} s",
        )
        return
    row = latest["snap"]
    k = meta["phases"].index(phase) + 1
    st.progress(
        min(float(row["time"]) / meta["time_limit"], 1.0),
        text=f"{PHASE_TITLE[phase]} ({k}/{len(meta['phases'])}): "
        f"{float(row['time']):.1f} of {meta['time_limit']:g} s, "
        f"UB {float(row['ub']):.4g}, LB {float(row['lb']):.4g}, "
        f"gap {float(row['gap']):.4g}",
    )
    counters = [
        ("iterations", "iterations"),
        ("states expanded", "expanded"),
        ("solved", "solved"),
        ("pruned", "pruned"),
        ("cache size", "cache_size"),
        ("evictions", "evictions"),
    ]
    for col, (name, key) in zip(st.columns(6), counters, strict=True):
        col.metric(name, f"{int(row[key]):,}")
    st.plotly_chart(
        shown_figure(
            gap_figure(
                latest["trace"],
                time_limit=meta["time_limit"],
                title=f"{PHASE_TITLE[phase]}: gap convergence (live)",
            )
        ),
        key="lit_live_gap",
    )
    if predict.asking(meta.get("predict_key", "")):
        st.caption(
            link_terms(
                "The incumbent tree is hidden until you lock in your answer (Predict first)."
            )
        )
        return
    # the incumbent as it changes (the worker swaps in a new immutable tree object)
    inc = latest["incumbent"]
    nb = row.get("nodes")
    if inc is None:
        return
    n_split, n_bp = tree_counts(inc)
    if nb is not None and nb.node_count != inc.node_count:
        nb = None  # a snapshot from between two incumbents: draw the tree alone
    st.plotly_chart(
        shown_figure(
            shape_tree_figure(
                label_tree(inc, meta),
                split_penalty=meta["lam"],
                breakpoint_penalty=meta["alpha"],
                collapse_depth=3 if inc.max_depth > 3 else None,
                title=f"Current incumbent (UB {float(row['ub']):.4g}): "
                f"{plural(n_split, 'split')}, {plural(n_bp, 'breakpoint')}, "
                f"depth {inc.max_depth}; rings: share of the remaining gap",
                node_bounds=nb,
                priority_path=latest.get("priority"),
            )
        ),
        key="lit_live_tree",
    )
    if nb is None:
        return
    st.caption(
        link_terms(
            "Each node's ring is coloured by its share of the remaining gap: its UB − LB "
            "(the incumbent subtree's objective minus the lower bound of the best subtree "
            "for its rows, in misclassified rows + penalties) over the root's. Hover a node "
            "for its bounds and its own share (the part a different split there could still "
            "save; the own shares add up to 100 %)."
        )
    )
    _priority_controls(search_job, phase, nb, latest)
    frontier = row.get("frontier") or []
    if frontier:
        names = meta["feature_names"]
        first = frontier[0]
        st.caption(
            link_terms(
                "Where the lower bound lives: the root's splits with the lowest bounds. The "
                "search proves no more than the least of them for the root until it raises "
                f"that split's bound or prunes it; {first['tied']:,} of the {first['open']:,} "
                f"root splits not pruned are at the least bound {first['lower']:.4g}."
            )
        )
        st.dataframe(
            pd.DataFrame(
                {
                    "root split on": [names[f["feature"]] for f in frontier],
                    "breakpoints": [
                        ", ".join(f"{b:.4g}" for b in f["breakpoints"]) for f in frontier
                    ],
                    "its lower bound": [round(f["lower"], 4) for f in frontier],
                    "its best tree (UB)": [round(f["upper"], 4) for f in frontier],
                }
            ),
            hide_index=True,
            width="stretch",
            key="lit_live_frontier",
        )


def certify_section(res: dict, meta: dict, panel, ds, view_key) -> None:
    """ "Certify a tree": a tree of the same depth fitted on the run's training rows, its
    objective in Literati's terms against the search's proven lower bound.  ``res``: the
    run's :func:`engine.literati.service.search_results` (its ``models`` and the ``checks``
    the job made of the baselines, so nothing is fitted here); ``view_key`` names the
    result-view widgets of the run (new keys for every Run)."""
    models = res["models"]
    checks = res.get("checks")  # None: a run stored before the job checked its baselines
    st.subheader("Certify a tree")
    st.caption(
        "How far from optimal is a tree you already have? Its objective on the training "
        "rows (errors by each leaf's majority class + λ × splits + α × breakpoints; a "
        "threshold split has one breakpoint) beside the search's proven lower bound. The "
        "bound holds over the trees whose breakpoints are among the search's candidates: "
        "each split of the tree is checked for a candidate that splits the same rows."
    )
    c1, c2 = st.columns([3, 2])
    # trees other pages fitted on this dataset (e.g. a conditional inference tree)
    others = {
        f"other::{label}": entry
        for label, entry in remembered_models(ds).items()
        if entry["source"] != "Optimal shape trees"
        and meta["digest"] == dataset_digest(ds)
        and certifiable(entry["model"])
    }
    labels = {k: f"{CERTIFY_SOURCES[k]}, depth {meta['depth']}" for k in CERTIFY_SOURCES}
    labels["greedy"] = f"{CERTIFY_SOURCES['greedy']} (K_max = {meta['kmax']})"
    labels |= {k: f"{k[7:]} (from {e['source']})" for k, e in others.items()}
    source = c1.radio(
        "Tree to certify",
        list(labels),
        format_func=labels.get,
        key=view_key("certify_source"),
        horizontal=True,
    )
    bound = "main"
    if "k1" in models:
        bound = c2.radio(
            "Lower bound from",
            ["main", "k1"],
            format_func={"main": f"K_max = {meta['kmax']}", "k1": "K_max = 1"}.get,
            key=view_key("certify_bound"),
            horizontal=True,
            help="K_max = 1 bounds only threshold trees: a tighter bound for a CART tree.",
        )
    if checks is None and source == "cart" and not kernels_ready(["cart"], "TreeLab's CART"):
        return
    store = st.session_state.setdefault("_lit_certificates", {})
    key = (meta.get("run", 0), meta["digest"], source, bound)
    if source in others:
        key += (id(others[source]["model"]),)  # a refit on that page is another tree
    if key not in store:
        try:
            if source in others:  # routing and the split checks on the training rows only
                store[key] = certificate_of_model(
                    others[source]["model"], source[7:], models, meta, bound
                )
            elif checks is not None:  # fitted and checked by the job: bounds only
                if source not in checks:
                    why = res.get("check_errors", {}).get(source, "the job did not fit it")
                    raise ValueError(f"the search job could not fit this tree: {why}")
                store[key] = certificate_of_check(checks[source][bound], models, bound)
            else:
                store[key] = certificate_for(source, models, meta, bound)
        except (ValueError, RuntimeError) as exc:
            st.error(f"Could not certify the tree: {md(exc)}")
            return
    cert = store[key]
    (st.success if cert.in_space else st.warning)(md(cert.sentence()))
    left, right = st.columns([5, 6])
    with left:
        panel.table(cert.table(), name="certificate", hide_index=True, width="stretch")
    with right:
        for note in cert.notes:
            st.caption(note)
        if source in others:  # fitted there, on its own rows; counted here on the run's
            fitted = (
                f"the tree was fitted on the {others[source]['source']} page; its errors "
                "are counted on the run's training rows"
            )
        else:
            fitted = "the tree is fitted on the run's training rows"
        st.caption(
            f"λ = {cert.split_penalty:.4g} per split and α = {cert.breakpoint_penalty:.4g} "
            f"per breakpoint, as in the run; {fitted}."
        )
    st.markdown("**Its splits and the search's candidates**")
    panel.table(
        cert.splits_table(meta["feature_names"]),
        name="certificate_splits",
        hide_index=True,
        width="stretch",
        column_config={
            "node": st.column_config.NumberColumn(width="small"),
            "depth": st.column_config.NumberColumn(width="small"),
            "in the search's space": st.column_config.TextColumn(width="large"),
        },
    )
    n_rows, n_features = len(meta["tr"]), meta["X"].shape[1]
    if not cert.in_space and not cert.all_candidates and source not in others:
        if all_thresholds_feasible(n_rows, n_features):
            _certify_all_thresholds(source, meta, panel, key + ("all",), store)
        else:
            st.caption(
                f"{n_rows:,} training rows × {n_features} features are too many to search "
                "with every threshold as a candidate here: the bound stays relative to the "
                "run's candidates."
            )


#: The "Certify against every threshold" job (its own search, B_d = all).
CERTIFY_ALL = PageJob("lit_cert", join_seconds=2.0)


def _certify_all_thresholds(source: str, meta: dict, panel, all_key: tuple, store: dict) -> None:
    """Run / Stop of the job that certifies ``source`` against a new search with every
    threshold as a candidate (:func:`engine.literati.service.certify_all_thresholds_steps`),
    its progress while it runs, and the certificate it returned (drawn, not computed)."""
    seconds = min(float(meta["time_limit"]), 20.0)

    def start():
        store.pop(all_key, None)  # a new run replaces the last certificate when it ends
        job = Job(
            certify_all_thresholds_steps,
            source,
            meta["X"][meta["tr"]],
            meta["y"][meta["tr"]],
            {
                k: meta[k]
                for k in ("depth", "kmax", "lam", "alpha", "seed", "leaves", "bd")
                if k in meta
            },
            seconds,
            name="literati-certify",
            max_history=5,
            budget=seconds + JOB_SLACK,
        )
        return job, {"key": all_key, "caption": meta["caption"], "seconds": seconds}

    job = CERTIFY_ALL.job
    mine = job is not None and CERTIFY_ALL.meta.get("key") == all_key
    if mine and job.finished and all_key not in store:
        snap = job.snapshot()
        if snap.status == "error":
            show_job_failure(snap, "Certifying against every threshold")
        else:
            payload = snap.result if isinstance(snap.result, dict) else snap.latest
            if payload and payload.get("certificate") is not None:
                store[all_key] = (payload["certificate"], snap.status, payload)
            else:
                why = "ran out of time" if snap.status == "timeout" else "was stopped"
                st.warning(
                    f"The job {why} before the search started: no certificate. Press the "
                    "button again."
                )
    st.markdown(
        f"**Certify against every threshold**: a new search with B_d = all (every split "
        f"that separates the rows is a candidate) for at most {seconds:g} s, in the background."
    )
    CERTIFY_ALL.controls(
        "Certify against every threshold",
        start,
        primary=False,
        columns=(3, 1, 4),
        disabled=CERTIFY_ALL.running and not mine,
    )
    if mine and CERTIFY_ALL.running:
        CERTIFY_ALL.live(_draw_certify_progress)
        return
    if all_key not in store:
        return
    wide, status, payload = store[all_key]
    if status == "done":
        st.markdown("**With every threshold as a candidate:** " + md(wide.sentence()))
    else:
        why = "Stopped" if status == "cancelled" else "The job's time budget ran out"
        st.markdown(
            f"**With every threshold as a candidate** ({why.lower()} after "
            f"{payload.get('time', 0.0):.1f} s of search; the lower bound is what it had "
            "proven by then): " + md(wide.sentence())
        )
    wide_left, _ = st.columns([5, 6])
    panel.table(wide.table(), name="certificate_all", hide_index=True, where=wide_left)


def _draw_certify_progress(snap) -> None:
    """The every-threshold search while it runs: where it is and its bounds so far."""
    latest = snap.latest or {}
    phase = latest.get("phase")
    if phase == "search":
        st.progress(
            min(latest["time"] / latest["time_limit"], 1.0),
            text=f"Searching with every threshold as a candidate: {latest['time']:.1f} of "
            f"{latest['time_limit']:g} s, LB {latest['lb']:.4g}, UB {latest['ub']:.4g}; "
            "Stop keeps the bound proven so far.",
        )
    elif phase == "checking":
        st.progress(0.0, text=f"Checking {latest['what']}'s splits against every threshold...")
    else:
        what = latest.get("what", "the tree")
        st.progress(0.0, text=f"Fitting {what} on the run's training rows... {snap.elapsed:.1f} s")
