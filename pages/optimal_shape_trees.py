"""Optimal shape trees page (Literati, docs/spec.md section 1): an anytime AO* search for the optimal
shape generalized tree, its gap closing live, every node's shape function, and baselines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from engine.figures.literati import (
    gap_figure,
    node_shape_figure,
    shape_grid_figure,
    shape_rule,
    shape_tree_figure,
)
from engine.jobs import Job
from engine.literati import LiteratiClassifier
from engine.literati.service import (
    JOB_SLACK,
    MIN_ROWS,
    MISSING_VALUES_CAPTION,
    internal_nodes,
    literati_steps,
    node_rows,
    objective_of,
    parse_candidate_leaves,
    rows_by_node,
    search_results,
    split_and_penalties,
    split_nodes_table,
    training_errors,
    tree_counts,
)
from engine.snippets import optimal_shape_trees_snippet
from engine.teaching import predict
from engine.teaching.glossary import link_terms
from pages._link_params import LITERATI_SCOPES, optimal_shape_trees_link
from pages._links import page_title
from pages._literati_views import PHASE_TITLE, certify_section, draw_live, label_tree, plural
from pages._shared import (
    PageJob,
    ResultPanel,
    SavedSettings,
    clicked_node,
    current_dataset,
    dataset_caption,
    dataset_digest,
    job_meta,
    md,
    remember_model,
    require_entrypoint,
    scale_notice,
    seed,
    show_job_failure,
    stop_page,
)
from pages._teaching import PredictFirst

PAPER = "https://arxiv.org/abs/2609.09299"


def on_regression_switch(option: str) -> None:
    st.session_state[f"task::{option}"] = "classification"


# -- header and data ---------------------------------------------------------------------
require_entrypoint("pages/optimal_shape_trees.py")
#: The parameter panel's values, saved at every run that draws it and put back before any
#: widget is drawn (see pages/_jobs.py).
SETTINGS = SavedSettings(
    "_lit_saved_params",
    keys=(
        "lit_depth",
        "lit_kmax",
        "lit_time",
        "lit_lambda",
        "lit_alpha",
        "lit_test",
        "lit_bd",
        "lit_cache",
        "lit_k1",
        "lit_scope",
    ),
    # link: read after the dataset caption (SETTINGS.read_link), so its warnings show there
)
SETTINGS.restore()
#: The candidate scopes, as the page names them.
SCOPES = {label: code for code, label in LITERATI_SCOPES.items()}
#: What a result's caption adds after B_d for each scope.
SCOPE_NOTE = {"state": "", "root": "; every state uses the root's candidates (B_0)"}


def search_fields(fields: dict) -> dict:
    """What the run store keeps of the search job's snapshot: the searches' labels, not the
    models and baselines (their results, :func:`search_results`, are kept with the run)."""
    payload = fields["result"] if isinstance(fields["result"], dict) else fields["latest"]
    payload = payload or {}
    kept = {"phase": payload.get("phase"), "models": dict.fromkeys(payload.get("models") or {})}
    return {**fields, "latest": kept, "result": kept}


#: The search job (the main search and the K_max = 1 baseline, one after the other).
SEARCH = PageJob(
    "lit",
    elsewhere="A search is still running on {caption} It ends at its time limit; pick that "
    "dataset again to watch it, or stop it here.",
    to_store=search_fields,
)
if SEARCH.restore_run("optimal_shape_trees"):  # ?run=<id>: the stored search, not run again
    # new runs of this session count on from the reopened one (view widgets are per run)
    st.session_state["_lit_runs"] = max(
        st.session_state.get("_lit_runs", 0), SEARCH.meta.get("run", 0)
    )
page_title("Optimal shape trees (Literati)")
st.markdown(
    "A classic decision tree asks one question per node: *is x ≤ t?* A **shape tree** lets "
    "each node use a step function of one feature with up to K_max breakpoints, so a node can "
    'send the middle of a range one way and both ends the other ("between 3 and 7 cm"), '
    "which a threshold tree needs two levels for. **Literati** "
    f"([Towards Anytime Optimal Shape Generalized Trees via AO*, arXiv 2609.09299]({PAPER})) "
    "searches for the tree with the fewest training errors plus a price per split (λ) and per "
    "breakpoint (α), at most D levels deep, by AO* best-first search on an AND/OR graph of "
    "data states. At every moment it holds a valid tree (the *incumbent*, its objective is the "
    "upper bound UB) and a proven lower bound LB on the best possible objective; when they "
    "meet, the tree is **proven optimal** among the candidate breakpoints. Press **Run** and "
    "watch the gap close; **Stop** keeps the best tree found so far."
)

ds = current_dataset(allow_missing=True)
if ds is None:
    stop_page(SEARCH)
st.markdown(dataset_caption(ds))
st.caption(link_terms(MISSING_VALUES_CAPTION))
SETTINGS.read_link(optimal_shape_trees_link())
if ds.task != "classification":
    option = st.session_state.get("ds")
    st.error(
        f"Literati is classification-only: it minimises misclassified rows, and the "
        f"target **{md(ds.target)}** is set up as regression (numbers). Pick a class column "
        "as target in the sidebar, or treat this target's values as classes."
    )
    n_values = int(np.unique(ds.y).size)
    if n_values <= 20:
        st.button(
            f"Treat {md(ds.target)} as classification ({n_values} classes)",
            key="lit_switch_btn",
            on_click=on_regression_switch,
            args=(option,),
        )
    else:
        st.caption(
            link_terms(
                f"{md(ds.target)} has {n_values} distinct values: too many to use as classes."
            )
        )
    stop_page(SEARCH)
if ds.n_samples < MIN_ROWS:
    st.error(
        f"This dataset has {ds.n_samples} rows; Literati needs at least {MIN_ROWS} "
        "(a training and a test part). Load a larger table."
    )
    stop_page(SEARCH)
if ds.n_classes < 2:
    st.error(
        f"The target **{ds.target}** has a single class: there is nothing to classify. "
        "Pick another target column in the sidebar."
    )
    stop_page(SEARCH)

# -- parameters --------------------------------------------------------------------------
with st.expander("Parameters", expanded=True):
    c1, c2, c3 = st.columns(3)
    depth = c1.slider(
        "Maximum depth D",
        1,
        8,
        3,
        key="lit_depth",
        help=link_terms(
            "Levels of questions from the root to a leaf. Depth 2-3 is usually proven "
            "optimal within seconds; deeper trees grow the search space fast, and the search "
            "then returns its best tree at the time limit with the remaining gap."
        ),
    )
    kmax = c2.slider(
        "Breakpoints per node K_max",
        1,
        4,
        2,
        key="lit_kmax",
        help=link_terms(
            "Most breakpoints one node's shape function may use. K = 1 is a plain threshold "
            "x ≤ t; K = 2 sends a middle range one way and both ends the other; K = 3, 4 "
            "alternate further (left, right, left, ...)."
        ),
    )
    time_limit = c3.number_input(
        "Time limit (seconds)",
        1.0,
        600.0,
        20.0,
        step=1.0,
        key="lit_time",
        help=link_terms(
            "The search stops here and returns its incumbent with the gap to the lower "
            "bound. It is checked inside the search's inner loops, so it holds within a "
            "fraction of a second."
        ),
    )
    c4, c5, c6 = st.columns(3)
    lam_frac = c4.number_input(
        "Split penalty λ (fraction of training rows)",
        0.0,
        1.0,
        0.005,
        step=0.001,
        format="%.4f",
        key="lit_lambda",
        help=link_terms(
            "Price of each internal node, as a fraction of the training rows: 0.005 with "
            "1,000 rows costs 5 misclassified rows per split. Larger: smaller trees."
        ),
    )
    alpha_frac = c5.number_input(
        "Breakpoint penalty α (fraction of training rows)",
        0.0,
        1.0,
        0.005,
        step=0.001,
        format="%.4f",
        key="lit_alpha",
        help=link_terms(
            "Price of each breakpoint of a shape function, as a fraction of the training "
            "rows. A node with K breakpoints costs λ + α·K; larger α: fewer breakpoints."
        ),
    )
    test_share = c6.slider(
        "Test share",
        0.1,
        0.5,
        0.25,
        step=0.05,
        key="lit_test",
        help=link_terms(
            "Rows held out (stratified by class, shuffled with the sidebar seed) to measure "
            "test accuracy; the search sees only the training rows."
        ),
    )
    c7, c8, c9 = st.columns(3)
    bd_text = c7.text_input(
        "Candidate breakpoints B_d per depth",
        "8, 4",
        key="lit_bd",
        help=link_terms(
            "At every data state, each feature's candidate breakpoints are the thresholds "
            "of a one-feature CART with at most B_d leaves fitted on that state's rows. Give "
            "one number per depth from the root (the last repeats below): '8, 4' = 8 at the "
            "root, 4 below. 'all' = every midpoint between distinct values: the exact "
            "(slowest) search. Optimality is proven among these candidates."
        ),
    )
    cache_size = c8.number_input(
        "Cache size (states)",
        100,
        1_000_000,
        10_000,
        step=1_000,
        key="lit_cache",
        help=link_terms(
            "Most search states kept in memory (least recently used are evicted, never "
            "those on the incumbent or the current path). An evicted state restarts from "
            "its lower bound when reached again: memory stays bounded, work may repeat."
        ),
    )
    run_k1 = c9.checkbox(
        "Baseline: the same search with K_max = 1",
        True,
        key="lit_k1",
        help=link_terms(
            "After the main search, the same search with plain threshold splits only "
            "(K_max = 1) and the same time limit, on the same split: what do shape "
            "functions buy? Skipped when K_max is already 1."
        ),
    )
    scope_label = st.radio(
        "Candidates of the states below the root",
        list(SCOPES),
        key="lit_scope",
        horizontal=True,
        help=link_terms(
            "Each state's own (the paper's space): every data state fits its own "
            "one-feature CARTs (B_d leaves) for its candidates. The root's: every state reuses "
            "the root's candidates (B_0), so a depth-2 tree is solved exactly from class "
            "counts in time linear in the rows (about a second at 200,000 rows); a different "
            "candidate space, so the optimum can differ. At depth 3 one triple histogram "
            "per root feature solves every root shape's depth-2 subtrees from counts; "
            "deeper, the states with four levels or more are searched and every three-level "
            "state below them is solved that way (all 569 rows of breast_cancer at depth 4, "
            "K_max = 1: proven in about a minute on two cores; K_max = 2 not within a minute). "
            "No greedy start."
        ),
    )

SETTINGS.save()
try:
    candidate_leaves = parse_candidate_leaves(bd_text)
    bd_error = None
except ValueError as exc:
    candidate_leaves, bd_error = None, str(exc)
    st.error(bd_error)
scope = SCOPES[scope_label]
if bd_error is None and scope == "root":
    top = candidate_leaves[0] if isinstance(candidate_leaves, tuple) else candidate_leaves
    if top is None:
        bd_error = (
            "The root's candidates need a number at the root in B_d (e.g. '8, 4'), not "
            "'all': every midpoint would make the counting tables as large as the data."
        )
    if bd_error is not None:
        st.error(bd_error)

split = split_and_penalties(
    ds,
    test_share=test_share,
    split_fraction=lam_frac,
    breakpoint_fraction=alpha_frac,
    seed=seed(),
)
tr_idx, te_idx = split.train, split.test
if split.note:
    st.info(md(split.note))
n_train = tr_idx.size
lam, alpha = split.split_penalty, split.breakpoint_penalty
st.caption(
    link_terms(
        f"With {n_train:,} training rows: **λ = {lam:.4g}** and **α = {alpha:.4g}** misclassified "
        f"rows. A plain threshold split costs **λ_r = λ + α = {lam + alpha:.4g}**; each extra "
        f"breakpoint costs α = {alpha:.4g}, so a K = 2 node costs {lam + 2 * alpha:.4g}. A split "
        f"pays off only when it removes more errors than it costs. {te_idx.size:,} rows are held "
        "out for testing."
    )
)
if np.any(ds.is_categorical):
    st.caption(
        link_terms(
            "Categorical features are searched as their category codes in order (as the "
            "figures show them); a shape function with several breakpoints can still group "
            "non-adjacent categories."
        )
    )


# -- predict first (optional): the root's feature -------------------------------------------
#: The key of the search these settings make (the tree depends on the data and all of them).
predict_key = predict.result_key(
    dataset_digest(ds),
    int(depth),
    int(kmax),
    float(lam),
    float(alpha),
    bd_text.strip(),
    scope,
    float(time_limit),
    int(cache_size),
    float(test_share),
    seed(),
)
PREDICT = PredictFirst("lit", what="the tree")
PREDICT.ask([predict.root_split_question(ds.feature_names, model="Literati's tree")], predict_key)


# -- run / stop --------------------------------------------------------------------------
def start_search():
    """The search job (not started) and its meta: what the results are drawn from."""
    common = dict(
        max_depth=int(depth),
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=candidate_leaves,
        time_limit=float(time_limit),
        cache_size=int(cache_size),
        random_state=seed(),
        candidate_scope=scope,
    )
    ests = [("main", LiteratiClassifier(max_breakpoints=int(kmax), **common))]
    if run_k1 and kmax > 1:
        ests.append(("k1", LiteratiClassifier(max_breakpoints=1, **common)))
    # the job fits the baselines (greedy shape tree, CART) before its searches: the page
    # only draws them (issue 20: those fits took 10 s at 200,000 rows while drawing)
    baselines = {
        "depth": int(depth),
        "kmax": int(kmax),
        "lam": lam,
        "alpha": alpha,
        "leaves": candidate_leaves,
        "scope": scope,
        "seed": seed(),
        "bounds": [p for p, _ in ests],
    }
    job = Job(
        literati_steps,
        ests,
        ds.X[tr_idx],
        ds.y[tr_idx],
        baselines=baselines,
        name="literati",
        max_history=20,
        budget=len(ests) * float(time_limit) + JOB_SLACK,
    )
    st.session_state["_lit_runs"] = st.session_state.get("_lit_runs", 0) + 1
    meta = {
        **job_meta(ds),
        "y": ds.y,
        "tr": tr_idx,
        "te": te_idx,
        "depth": int(depth),
        "kmax": int(kmax),
        "lam": lam,
        "alpha": alpha,
        "time_limit": float(time_limit),
        "bd": bd_text.strip(),
        "leaves": candidate_leaves,
        "scope": scope,
        "cache": int(cache_size),
        "phases": [p for p, _ in ests],
        "seed": seed(),
        "test_share": float(test_share),
        "split_fraction": float(lam_frac),
        "breakpoint_fraction": float(alpha_frac),
        "digest": dataset_digest(ds),
        "run": st.session_state["_lit_runs"],
        "predict_key": predict_key,
    }
    st.session_state.pop("_lit_results", None)
    return job, meta


scale_notice(  # measured at depth 2: a deeper search takes longer (a lower bound then)
    ds,
    "literati_root" if scope_label == LITERATI_SCOPES["root"] else "literati",
    budget=float(time_limit),
    what=f"proving a depth-{int(depth)} tree optimal",
    key="lit_subsample_btn",
    lower_bound=int(depth) > 2,
    fit_share=1.0 - float(test_share),
)
SEARCH.controls("Run", start_search, disabled=bd_error is not None)

if SEARCH.running:
    SEARCH.live(lambda snap: draw_live(snap, SEARCH, PREDICT), caption="Running on {caption}")
    st.stop()
job = SEARCH.job
if job is None:
    st.info(
        "Set the parameters and press **Run**: the gap chart, the counters and the "
        "incumbent tree appear here while the search runs."
    )
    st.stop()

# -- results -----------------------------------------------------------------------------
meta = SEARCH.meta
snap = job.snapshot()
if snap.status == "error":
    show_job_failure(snap, "The search", "lower the cache size or the depth")
    if snap.error_kind == "exception":
        st.stop()
payload = snap.result if isinstance(snap.result, dict) else snap.latest
if not payload or not payload.get("models"):
    st.warning("The search was stopped before it produced a tree. Press **Run** again.")
    st.stop()


cache = st.session_state.get("_lit_results")
if cache is None or cache[0] is not job:
    kept = SEARCH.extra.get("results")  # a run reopened from its link: its stored results
    try:
        results = kept or search_results(
            payload["models"], meta, snap.status, payload.get("baselines")
        )
    except (ValueError, RuntimeError) as exc:
        st.error(f"Could not read the search result: {md(exc)}")
        st.stop()
    cache = (job, results)
    st.session_state["_lit_results"] = cache
res = cache[1]
SEARCH.keep_extra({"results": res})
models = res["models"]
main = models["main"]
classes = meta["classes"]


def labelled(tree):
    return label_tree(tree, meta)


def view_key(name: str) -> str:
    """Key of a result-view widget, new for every Run: the browser keeps the value of a
    widget whose key and options did not change (the incumbent slider of the last result
    at #1 of 5 stayed at #1 for the next result with 5 incumbents, drawn at #5)."""
    return f"lit_{name}{meta.get('run', 0)}_view"


if meta["caption"] != dataset_caption(ds):
    st.info(
        "These results are for the dataset the search ran on, not the active one. Press "
        "**Run** to search on the active dataset."
    )
if meta.get("predict_key"):  # a run stored before the questions has none
    PREDICT.reveal(
        meta["predict_key"],
        lambda question: predict.root_split_answer(main.tree_, meta["feature_names"]),
    )
st.subheader("Result")
panel = ResultPanel("optimal_shape_trees", meta)
st.markdown(f"On {meta['caption']}")
st.caption(
    link_terms(
        f"Run with D = {meta['depth']}, K_max = {meta['kmax']}, λ = {meta['lam']:.4g}, "
        f"α = {meta['alpha']:.4g}, B_d = {meta['bd']}{SCOPE_NOTE[meta.get('scope', 'state')]}, "
        f"time limit {meta['time_limit']:g} s, "
        f"cache {meta['cache']:,} states, {len(meta['tr']):,} training / "
        f"{len(meta['te']):,} test rows (seed {meta['seed']})."
    )
)
SEARCH.keep_run("optimal_shape_trees")
if "test_share" in meta:  # a run stored before the snippets has no split shares
    panel.snippet(optimal_shape_trees_snippet(meta))
t_end = float(main.trace_["time"].iloc[-1]) if len(main.trace_) else 0.0
ub, lb = float(main.upper_bound_), float(main.lower_bound_)
# how the main search itself ended (the job may have been stopped later, in the baseline)
main_end = str(main.trace_["event"].iloc[-1]) if len(main.trace_) else "stopped"
if main.proven_optimal_:
    st.success(
        f"**Proven optimal** after {t_end:.2f} s: objective {ub:.4g} (among the "
        f"candidate breakpoints B_d = {meta['bd']}{SCOPE_NOTE[meta.get('scope', 'state')]})."
    )
elif main_end != "time_limit":
    why = "Stopped" if res["status"] == "cancelled" else "The job's time budget ran out"
    st.warning(
        f"{why} after {t_end:.2f} s: the best tree so far has objective {ub:.4g}; "
        f"the optimum is at least {lb:.4g} (gap {ub - lb:.4g})."
    )
else:
    st.info(
        f"Time limit reached after {t_end:.2f} s: the best tree found has objective "
        f"{ub:.4g}; the optimum is at least {lb:.4g} (gap {ub - lb:.4g}, "
        f"{100 * (ub - lb) / max(ub, 1e-12):.1f} %). Raise the time limit, lower D or "
        "B_d, or raise λ/α to close the gap."
    )

bd = main.objective_breakdown_
c1, c2, c3, c4 = st.columns(4)
c1.metric("objective (UB)", f"{ub:.4g}")
c2.metric("lower bound (LB)", f"{lb:.4g}")
main_row = res["table"].iloc[0]
c3.metric("train accuracy", f"{main_row['train accuracy']:.3f}")
c4.metric("test accuracy", f"{main_row['test accuracy']:.3f}")

left, right = st.columns([2, 3])
with left:
    st.markdown("**Objective breakdown** (training rows)")
    breakdown = pd.DataFrame(
        [
            {
                "part": "misclassified rows",
                "count": str(bd["errors"]),
                "price each": "1",
                "cost": f"{float(bd['errors']):.4g}",
            },
            {
                "part": "splits × λ",
                "count": str(bd["n_splits"]),
                "price each": f"{meta['lam']:.4g}",
                "cost": f"{float(bd['split_cost']):.4g}",
            },
            {
                "part": "breakpoints × α",
                "count": str(bd["n_breakpoints"]),
                "price each": f"{meta['alpha']:.4g}",
                "cost": f"{float(bd['breakpoint_cost']):.4g}",
            },
            {
                "part": "objective",
                "count": "",
                "price each": "",
                "cost": f"{float(bd['objective']):.4g}",
            },
        ]
    )
    panel.table(breakdown, name="objective_breakdown", hide_index=True, width="stretch")
with right:
    st.markdown("**Split nodes** (each costs λ + α·K)")
    panel.table(
        split_nodes_table(main.tree_, meta["feature_names"], meta["lam"], meta["alpha"]),
        name="split_nodes",
        hide_index=True,
        width="stretch",
    )
st.markdown("**Baselines on the same split**")
if "k1" in meta["phases"] and "k1" not in models:
    st.caption(link_terms("The K_max = 1 baseline did not run: the search was stopped before it."))
for msg in res.get("warnings", []):
    st.warning(msg)
# Objective and lower bound printed here, like the metrics above: the browser's %.4g rounds
# ties up (361.25 -> 361.3) where Python rounds them to even (361.2), which put '361.3' beside
# a lower bound '361.2' in a row marked proven optimal.  A greedy model has no bound: "—".
shown = res["table"].copy()
shown["objective (λ, α)"] = [f"{v:.4g}" for v in shown["objective (λ, α)"]]
shown["lower bound"] = [("—" if pd.isna(v) else f"{v:.4g}") for v in shown["lower bound"]]
panel.table(
    shown,
    name="baselines",
    hide_index=True,
    width="stretch",
    column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in ("train accuracy", "test accuracy")
    }
    | {"seconds": st.column_config.NumberColumn(format="%.4g")},
)
st.caption(
    link_terms(
        "Objective = training errors + λ × splits + α × breakpoints, the same for every row. "
        "The greedy shape tree grows top-down among each state's own candidate "
        "breakpoints; with those candidates (the paper's space) it is the search's first "
        "upper bound (the search is seeded with it), so Literati with the same K_max can "
        "only improve on it (unless the time limit ran out while the search was still "
        "growing it); with the root's candidates it is outside the search's space and can "
        "beat its optimum. CART is greedy and picks thresholds "
        "among all midpoints, so its objective can even fall below Literati's lower bound "
        "when Literati searches fewer candidates (B_d); with B_d = 'all' it cannot. "
        "Literati's seconds count search time only."
    )
)

# gap chart (main search or the baseline)
traces = {label: m.trace_ for label, m in models.items()}
shown = "main"
if len(traces) > 1:
    shown = st.radio(
        "Gap chart of",
        list(traces),
        key=view_key("trace"),
        horizontal=True,
        format_func=PHASE_TITLE.get,
    )
panel.chart(
    gap_figure(
        traces[shown],
        time_limit=meta["time_limit"],
        title=f"{PHASE_TITLE[shown]}: gap convergence "
        f"(UB {float(models[shown].upper_bound_):.4g}, LB "
        f"{float(models[shown].lower_bound_):.4g})",
        incumbents=getattr(models[shown], "incumbents_", None),
    ),
    key="lit_gap_fig",
)

# -- incumbent tree over time --------------------------------------------------------------
st.subheader("The incumbent tree and its shape functions")
incumbents = list(getattr(main, "incumbents_", []) or [])
if not incumbents:
    incumbents = [{"time": t_end, "ub": ub, "lb": lb, "tree": main.tree_}]
pick = len(incumbents) - 1
if len(incumbents) > 1:
    pick = st.select_slider(
        "Incumbent over time",
        options=list(range(len(incumbents))),
        value=len(incumbents) - 1,
        key=view_key("snap"),
        format_func=lambda i: (
            f"#{i + 1} at {incumbents[i]['time']:.2f} s (UB {incumbents[i]['ub']:.4g})"
        ),
        help=link_terms(
            "Every tree the search held as its best so far, in order; the last is the "
            "result. Slide back to see how the anytime search improved it."
        ),
    )
inc = incumbents[pick]
tree = labelled(inc["tree"])
X_tr, y_tr = meta["X"][meta["tr"]], meta["y"][meta["tr"]]
n_split, n_bp = tree_counts(tree)
# training errors of this incumbent: majority class of the leaf each row reaches by shape routing
err = training_errors(tree, X_tr, y_tr)
st.caption(
    link_terms(
        f"Incumbent #{pick + 1} of {len(incumbents)}, found at {inc['time']:.2f} s: "
        f"{plural(err, 'training error')}, {plural(n_split, 'split')}, "
        f"{plural(n_bp, 'breakpoint')}, objective "
        f"{objective_of(err, n_split, n_bp, meta['lam'], meta['alpha']):.4g}."
    )
)
# the final incumbent's bounds per node (a run stored before them has none)
final_bounds = getattr(main, "node_bounds_", None) if pick == len(incumbents) - 1 else None
fig = shape_tree_figure(
    tree,
    split_penalty=meta["lam"],
    breakpoint_penalty=meta["alpha"],
    collapse_depth=4 if tree.max_depth > 4 else None,
    node_bounds=final_bounds,
)
fig.update_traces(unselected=dict(marker=dict(opacity=1.0)), selector=dict(type="scatter"))
if final_bounds is not None:
    st.caption(
        link_terms(
            "Rings: each node's share of the remaining gap, its UB − LB (this subtree's "
            "objective minus the proven lower bound for its rows) over the root's"
            + (
                "; all 0: the tree is proven optimal."
                if final_bounds.root_gap == 0
                else f" ({final_bounds.root_gap:.4g}). Hover a node for its bounds."
            )
        )
    )
    with st.expander("Bounds of every node (objective units)"):
        panel.table(final_bounds.table(), name="node_bounds", hide_index=True, width="stretch")
event = panel.chart(fig, on_select="rerun", selection_mode="points", key=view_key("tree"))
inner = internal_nodes(tree)
if not inner:
    st.info(
        "This tree is a single leaf: no split pays for its price λ + α here. Lower λ or "
        "α, or raise the depth."
    )
else:
    clicked = clicked_node(event)  # a node, or a gap ring: [node, LB, UB, ...]
    if clicked in inner:
        st.session_state[view_key("node")] = clicked
    if st.session_state.get(view_key("node")) not in inner:
        st.session_state[view_key("node")] = inner[0]
    names = meta["feature_names"]
    node = st.selectbox(
        "Node (or click a split node in the tree)",
        inner,
        key=view_key("node"),
        format_func=lambda v: f"node {v}: {shape_rule(tree, v, names)}",
    )
    at_node = node_rows(tree, X_tr, node)
    panel.chart(node_shape_figure(tree, X_tr[at_node], y_tr[at_node], node), key="lit_node_fig")
    with st.expander(f"All {len(inner)} split nodes at a glance", expanded=len(inner) <= 7):
        panel.chart(
            shape_grid_figure(tree, X_tr, y_tr, rows_by_node(tree, X_tr)), key="lit_grid_fig"
        )

# -- downloads and hand-over ---------------------------------------------------------------
panel.downloads(
    [
        (
            "Download tree (JSON)",
            labelled(main.tree_).to_json(),
            "literati_tree.json",
            "application/json",
            "lit_tree_dl",
        ),
        (
            "Download trace (CSV)",
            main.trace_.to_csv(index=False).encode(),
            "literati_trace.csv",
            "text/csv",
            "lit_trace_dl",
        ),
    ],
    columns=(1, 1, 3),
)

# Offer the model to the other pages (Feature ranking explains it with TreeGrad).  TreeGrad
# routes every node by its single threshold, so only trees whose nodes all have K = 1 are
# explained correctly: a shape tree with K >= 2 somewhere is not offered, its K_max = 1
# baseline is.
if st.session_state.get("_lit_remembered") is not job and meta["digest"] == dataset_digest(ds):
    offered = []
    for label, m in models.items():
        n_split, n_bp = tree_counts(m.tree_)
        if n_split and n_bp == n_split:
            k = meta["kmax"] if label == "main" else 1
            name = f"Literati (K_max = {k}, depth {meta['depth']}), target {ds.target}"
            remember_model(name, m, ds, "Optimal shape trees")
            offered.append(name)
    st.session_state["_lit_remembered"] = job
    st.session_state["_lit_offered"] = offered
offered = st.session_state.get("_lit_offered") or []
if offered:
    st.caption(
        link_terms("Offered to the other pages (e.g. Feature ranking): " + "; ".join(offered) + ".")
    )
elif tree_counts(main.tree_)[1] > tree_counts(main.tree_)[0]:
    st.caption(
        link_terms(
            "This tree is not offered to the Feature ranking page: its explanations route "
            "each node by one threshold, which a node with several breakpoints does not "
            "have. Run with the K_max = 1 baseline to offer that tree."
        )
    )


certify_section(res, meta, panel, ds, view_key)
