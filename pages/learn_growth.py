"""Watch a tree grow: step through CART, the conditional inference tree and the Partition
Tree node by node (engine/teaching/growth.py computes the steps; this page draws them)."""

import time

import numpy as np
import streamlit as st

from engine.figures.cit import threshold_statistic_figure
from engine.figures.growth import (
    cart_scan_figure,
    cit_tests_figure,
    growth_tree_figure,
    partition_gains_figure,
)
from engine.figures.tree import tree_figure
from engine.teaching import growth
from engine.teaching.datasets import bundled
from engine.teaching.glossary import link_terms
from pages._link_params import GROWTH_SOURCES, learn_growth_link
from pages._links import apply_link, mirror_link, page_title
from pages._shared import (
    current_dataset,
    dataset_caption,
    dataset_digest,
    md,
    require_entrypoint,
    shown_figure,
)

require_entrypoint("pages/learn_growth.py")
LINK = learn_growth_link()
apply_link("learn_growth", LINK)
page_title("Watch a tree grow")
st.markdown(
    "Step through how a tree is built, one node at a time. **CART** scans every threshold "
    "of every feature and keeps the largest impurity decrease; the **conditional inference "
    "tree** first tests each feature's independence from the target (stage A) and only "
    "then looks for a cut point on the winner (stage B); the **Partition Tree** grows "
    "best-first: of all the leaves, the one whose best split gains most splits next."
)

SOURCES = {label: None if code == "sidebar" else code for code, label in GROWTH_SOURCES.items()}
#: Seconds between two steps while playing.
SPEEDS = {"slow (3 s)": 3.0, "normal (1.5 s)": 1.5, "fast (0.5 s)": 0.5}

c1, c2, c3, c4 = st.columns([3, 3, 2, 2])
source = c1.selectbox("Dataset", list(SOURCES), key="learn_gr_source")
method = c2.selectbox("Method", list(growth.METHODS), key="learn_gr_method")
if method == "Partition Tree":
    cap = c3.slider("Most leaves", 2, 16, 8, key="learn_gr_leaves")
else:
    cap = c3.slider("Deepest level", 1, 5, 3, key="learn_gr_depth")
speed = c4.selectbox("Speed while playing", list(SPEEDS), index=1, key="learn_gr_speed")
mirror_link(LINK)

if SOURCES[source] is None:
    ds = current_dataset()
    if ds is None:
        st.stop()
    st.caption(dataset_caption(ds))
    X, y, task, names = ds.X, ds.y, ds.task, list(ds.feature_names)
    classes = None if ds.classes_ is None else [str(c) for c in ds.classes_]
    categorical, target, digest = ds.is_categorical, ds.target, dataset_digest(ds)
    category_labels = ds.categories
else:
    lesson_data = bundled(SOURCES[source])
    st.caption(md(lesson_data.description))
    X, y, task = lesson_data.X, lesson_data.y, lesson_data.task
    names, target = list(lesson_data.feature_names), lesson_data.target
    classes = None if lesson_data.class_names is None else list(lesson_data.class_names)
    categorical, digest = None, f"curated:{SOURCES[source]}"
    category_labels = None

try:
    data = growth.prepare(
        X,
        y,
        task=task,
        feature_names=names,
        is_categorical=categorical,
        n_classes=len(classes or ()),
        keep_categorical=method == "CART",  # CART splits categories into two sets
        categories=category_labels,
    )
except ValueError as exc:
    st.error(md(exc))
    st.stop()
for note in data.notes:
    st.info(md(note))

criterion = "gini"
if method == "CART" and task == "classification":
    criterion = st.radio(
        "Impurity",
        list(growth.CART_CRITERIA),
        format_func={"gini": "Gini impurity", "entropy": "entropy (bits)"}.get,
        horizontal=True,
        key="learn_gr_criterion",
        help=link_terms(
            "What CART's impurity decrease measures: Gini impurity (the chance two random "
            "rows of the node disagree) or entropy (bits of uncertainty about the class)."
        ),
    )
mirror_link(LINK)
key = f"{digest}:{method}:{cap}:{criterion}"
store = st.session_state.setdefault("_learn_gr_growths", {})
if key not in store:
    with st.spinner(f"Growing the {method}..."):
        try:
            store.clear()  # one growth per session: the steps of the current settings
            store[key] = growth.grow(
                method, data, cap=cap, class_names=classes, target=target, criterion=criterion
            )
        except ValueError as exc:
            st.error(md(exc))
            st.stop()
grown = store[key]
if st.session_state.get("_learn_gr_key") != key:  # new settings: back to the root
    st.session_state["_learn_gr_key"] = key
    st.session_state["learn_gr_pos"] = 0
    st.session_state["learn_gr_playing"] = False
n_steps = len(grown)
what = "depth" if method != "Partition Tree" else "leaves"
st.caption(
    f"{n_steps} step{'s' if n_steps != 1 else ''} to the final tree ({grown.final.node_count} "
    f"nodes, {what} at most {cap}; {data.X.shape[0]:,} rows, {data.X.shape[1]} features)."
)
playing = bool(st.session_state.get("learn_gr_playing"))


def _set_pos(pos: int) -> None:
    st.session_state["learn_gr_pos"] = int(min(max(pos, 0), n_steps))


def _step() -> None:
    _set_pos(st.session_state.get("learn_gr_pos", 0) + 1)


def _back() -> None:
    st.session_state["learn_gr_playing"] = False
    _set_pos(st.session_state.get("learn_gr_pos", 0) - 1)


def _reset() -> None:
    st.session_state["learn_gr_playing"] = False
    _set_pos(0)


def _toggle_play() -> None:
    now_playing = not st.session_state.get("learn_gr_playing", False)
    if now_playing and st.session_state.get("learn_gr_pos", 0) >= n_steps:
        _set_pos(0)  # Play at the end starts again from the root
    st.session_state["learn_gr_playing"] = now_playing
    st.session_state["_learn_gr_tick"] = time.monotonic()


CRITERION = (
    {"gini": "Gini", "entropy": "entropy"}[criterion]
    if task == "classification"
    else "squared error"
)


def _where(scan, i: int) -> str:
    """Candidate ``i`` of ``scan``: a threshold, or the category set going left."""
    if not scan.categorical:
        return f"<= {scan.thresholds[i]:.4g}"
    labels = None if data.categories is None else data.categories[scan.feature]
    return "in {" + growth.category_list(scan.left_sets[i], labels) + "}"


def _cart_details(step) -> None:
    scans = step.details["scans"]
    st.dataframe(
        {
            "feature": [names_of[s.feature] for s in scans],
            "candidates": [int(s.thresholds.size) for s in scans],
            "best split": [_where(s, s.best) if s.best >= 0 else None for s in scans],
            "best decrease": [round(s.best_decrease, 6) if s.best >= 0 else None for s in scans],
            "chosen": [s.feature == step.feature for s in scans],
        },
        hide_index=True,
    )
    with st.expander("Every candidate split (the whole scan)"):
        st.dataframe(
            {
                "feature": [names_of[s.feature] for s in scans for _ in s.thresholds],
                "split": [_where(s, i) for s in scans for i in range(s.thresholds.size)],
                "impurity decrease": np.concatenate([s.decreases for s in scans]),
            },
            hide_index=True,
        )


def _cart_scan(step) -> None:
    st.plotly_chart(
        shown_figure(
            cart_scan_figure(
                step, feature_names=names_of, criterion=CRITERION, categories=data.categories
            )
        ),
        key="learn_gr_scan_view",
    )
    if task == "regression":
        st.caption(
            f"Squared-error decrease in squared units of {md(target)}: the drop of the "
            "node's variance when it splits there."
        )


def _cit_details(step) -> None:
    rec = step.details["record"]
    alpha = step.details["alpha"]
    if step.phase in ("tests", "leaf"):
        st.dataframe(
            {
                "feature": [names_of[f] for f in rec["features"]],
                "statistic": [f"{v:.4g}" for v in rec["statistics"]],
                "p-value": [f"{v:.3g}" for v in rec["p_values"]],
                "adjusted p-value": [f"{v:.3g}" for v in step.details["p_adjusted"]],
                f"below alpha = {alpha:g}": [bool(p < alpha) for p in step.details["p_adjusted"]],
            },
            hide_index=True,
        )
        st.caption(
            "Adjusted p-value: 1 - (1 - p)^m over the m features tested (partykit's "
            "Bonferroni-type adjustment); it is compared with alpha itself, on the same scale."
        )
        st.plotly_chart(
            shown_figure(cit_tests_figure(step, feature_names=names_of)), key="learn_gr_tests_view"
        )
    else:
        st.plotly_chart(
            shown_figure(
                threshold_statistic_figure(
                    rec,
                    feature_name=names_of[step.feature],
                    title=f"Stage B at node {step.tree_node}: every cut point on "
                    f"{names_of[step.feature]} (the largest statistic wins)",
                )
            ),
            key="learn_gr_cuts_view",
        )


def _partition_details(step) -> None:
    before, after = step.details["train_nll"]
    m1, m2, m3 = st.columns(3)
    m1.metric("Split", step.details["kind"])
    m2.metric("Gain (nats per row)", f"{step.details['gain']:.4g}")
    m3.metric("Training log-loss", f"{after:.4f}", f"{after - before:.4f}", delta_color="inverse")
    others = step.details["others"]
    st.dataframe(
        {
            "leaf": [step.tree_node] + [o[0] for o in others],
            "best split": [step.details["rule"]]
            + [o[3] + (f" <= {o[4]:.4g}" if np.isfinite(o[4]) else "") for o in others],
            "kind": [step.details["kind"]] + [o[2] for o in others],
            "gain": [step.details["gain"]] + [o[1] for o in others],
            "splits now": [True] + [False] * len(others),
        },
        hide_index=True,
    )
    st.plotly_chart(shown_figure(partition_gains_figure(step)), key="learn_gr_gains_view")


names_of = list(grown.feature_names) + ([target] if method == "Partition Tree" else [])


@st.fragment(run_every=SPEEDS[speed] if playing else None)
def stepper() -> None:
    playing_now = bool(st.session_state.get("learn_gr_playing"))
    if playing_now != playing:  # Play / Pause: a full rerun sets or clears the timer
        st.rerun()
    if playing_now:
        now = time.monotonic()
        if now - st.session_state.get("_learn_gr_tick", 0.0) >= 0.8 * SPEEDS[speed]:
            st.session_state["_learn_gr_tick"] = now
            _step()
        if st.session_state["learn_gr_pos"] >= n_steps:
            st.session_state["learn_gr_playing"] = False
            st.rerun()  # stop the timer
    pos = int(st.session_state.get("learn_gr_pos", 0))
    b1, b2, b3, b4, _ = st.columns([1, 1, 1, 1, 3])
    b1.button("Back", key="learn_gr_back_btn", on_click=_back, disabled=pos == 0)
    b2.button("Step", key="learn_gr_step_btn", on_click=_step, disabled=pos >= n_steps)
    b3.button(
        "Pause" if playing_now else "Play",
        key="learn_gr_play_btn",
        on_click=_toggle_play,
        type="primary",
    )
    b4.button("Reset", key="learn_gr_reset_btn", on_click=_reset, disabled=pos == 0)
    st.progress(pos / max(n_steps, 1), text=f"Step {pos} of {n_steps}")
    if pos == 0:
        root, _ = growth.partial_tree(grown.final, [])
        st.info("The root holds every row. Press **Step** (or **Play**) to examine it.")
        st.plotly_chart(
            shown_figure(
                tree_figure(
                    root,
                    feature_names=names_of,
                    class_names=classes if task == "classification" else None,
                    title="The tree before any step: the root",
                )
            ),
            key="learn_gr_tree_view",
        )
        return
    step = grown.steps[pos - 1]
    head = f"**Step {pos}, node {step.tree_node}** (depth {step.depth}, {step.n_samples} rows): "
    (st.success if step.phase == "split" else st.info)(head + md(step.reason))
    left, right = st.columns([1, 1])
    with left:
        if method == "CART":
            _cart_details(step)
        elif method == "Partition Tree":
            _partition_details(step)
        else:
            _cit_details(step)
    with right:
        st.plotly_chart(
            shown_figure(growth_tree_figure(step, class_names=classes)), key="learn_gr_tree_view"
        )
    if method == "CART":
        _cart_scan(step)
    if pos >= n_steps:
        st.caption("The tree is complete: every leaf is pure, too small, or at the size cap.")


stepper()
