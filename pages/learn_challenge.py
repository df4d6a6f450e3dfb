"""Build your own tree: grow a classification tree by hand on the sidebar's dataset and be
graded against CART of the same size and Literati's proven optimum of the same depth
(engine/teaching/challenge.py)."""

import streamlit as st

from engine.data import train_test_rows
from engine.figures.teaching import split_preview_figure
from engine.figures.tree import tree_figure
from engine.teaching import challenge
from pages._links import apply_link, page_title
from pages._shared import (
    clicked_node,
    current_dataset,
    dataset_caption,
    dataset_digest,
    md,
    require_entrypoint,
    seed,
    shown_figure,
)

require_entrypoint("pages/learn_challenge.py")
apply_link("learn_challenge", ())  # the tree is built by clicks: only unknown names warned
page_title("Build your own tree")
st.markdown(
    "Grow a decision tree by hand: pick a **leaf** (in the list or by clicking it in the "
    "tree), a **feature** and a **threshold**; the class counts and the impurity decrease "
    "update as you move the threshold. Then grade your tree: it is scored on the training "
    "rows and on held-out rows, against CART with the same number of splits and against "
    "the **best possible tree of the same depth**, which Literati's search proves optimal "
    "on the same thresholds."
)
ds = current_dataset()
if ds is None:
    st.stop()
st.markdown(dataset_caption(ds))
if ds.task != "classification":
    st.info(
        "The challenge grows classification trees: pick a dataset with a class target (Iris, "
        "Wine, Penguins, ...) or a class column as the target in the sidebar."
    )
    st.stop()
continuous = [j for j in range(ds.n_features) if not ds.is_categorical[j]]
if not continuous:
    st.info("Every feature of this dataset is categorical; the challenge splits numeric features.")
    st.stop()
if len(continuous) < ds.n_features:
    st.caption(
        f"Categorical features are left out of the challenge ({ds.n_features - len(continuous)} "
        "of them): a threshold on category codes would mean nothing."
    )

#: Up to this many thresholds, the slider stops at every midpoint; beyond, it is continuous
#: and the value snaps to the nearest midpoint.
MAX_SLIDER_OPTIONS = 400
classes = [str(c) for c in ds.classes_]
K = len(classes)
try:
    rows = train_test_rows(
        ds.n_samples, ds.y, test_size=0.3, random_state=seed(), class_names=classes
    )
except ValueError as exc:
    st.error(f"This dataset is too small to hold rows out: {md(exc)}")
    st.stop()
if rows.note:
    st.info(md(rows.note))
# the tree sees only the numeric features, in their column order
X_train, y_train = ds.X[rows.train][:, continuous], ds.y[rows.train]
X_test, y_test = ds.X[rows.test][:, continuous], ds.y[rows.test]
names = [ds.feature_names[j] for j in continuous]

digest = f"{dataset_digest(ds)}:{seed()}"
history_key = f"_learn_ch_history::{digest}"
history = st.session_state.setdefault(history_key, [challenge.UserTree()])
tree = history[-1]
arrays = challenge.to_tree_arrays(
    tree, X_train, y_train, K, feature_names=names, class_names=classes
)
order = challenge.preorder(tree)

st.subheader("Your tree")
st.caption(
    f"{tree.n_splits} split{'s' if tree.n_splits != 1 else ''}, depth {tree.max_depth}; "
    f"{len(rows.train)} training rows (the counts in the tree), {len(rows.test)} held out. "
    "Click a leaf to choose it."
)
fig = tree_figure(arrays, feature_names=names, class_names=classes, title="Your tree")
fig.update_traces(unselected=dict(marker=dict(opacity=1.0)), selector=dict(type="scatter"))
event = st.plotly_chart(
    shown_figure(fig), on_select="rerun", selection_mode="points", key="learn_ch_tree_view"
)
clicked = clicked_node(event)
leaves = tree.leaves()
if clicked is not None and clicked != st.session_state.get("_learn_ch_click"):
    st.session_state["_learn_ch_click"] = clicked
    if 0 <= clicked < len(order) and order[clicked] in leaves:
        st.session_state["learn_ch_leaf"] = order[clicked]
if st.session_state.get("learn_ch_leaf") not in leaves:
    st.session_state["learn_ch_leaf"] = leaves[0]

counts = challenge.leaf_counts(tree, X_train, y_train, K)
preorder_id = {node: i for i, node in enumerate(order)}


def leaf_label(leaf: int) -> str:
    c = counts[leaf]
    spread = ", ".join(f"{classes[k]} {c[k]}" for k in range(K) if c[k])
    return (
        f"node {preorder_id[leaf]} (depth {tree.depth[leaf]}, {c.sum()} rows: {spread or 'empty'})"
    )


st.subheader("Split a leaf")
c1, c2 = st.columns(2)
leaf = c1.selectbox("Leaf", leaves, format_func=leaf_label, key="learn_ch_leaf")
feature_name = c2.selectbox("Feature", names, key="learn_ch_feature")
feature = names.index(feature_name)
in_leaf = tree.apply(X_train) == leaf
x_leaf = X_train[in_leaf, feature]
mids = challenge.midpoints(x_leaf)

if tree.depth[leaf] >= challenge.MAX_DEPTH:
    st.info(
        f"This leaf is at depth {challenge.MAX_DEPTH}, the deepest the challenge grades. "
        "Pick another leaf, or grade your tree below."
    )
elif mids.size == 0:
    st.info(
        md(
            f"Every training row in this leaf has the same {feature_name}: it cannot be split "
            "on it. Pick another feature or leaf."
        )
    )
else:
    tkey = f"learn_ch_threshold::{leaf}:{feature}"
    label = md(f"Threshold on {feature_name}: rows with a value <= threshold go left")
    if mids.size == 1:
        raw = float(mids[0])
        st.caption(md(f"One possible threshold on {feature_name} here: {raw:.4g}."))
    elif mids.size <= MAX_SLIDER_OPTIONS:
        # every midpoint of the leaf's rows is a stop of the slider
        options = [float(v) for v in mids]
        if st.session_state.get(tkey) not in options:
            st.session_state[tkey] = options[len(options) // 2]
        raw = st.select_slider(label, options=options, key=tkey, format_func=lambda v: f"{v:.4g}")
    else:
        lo, hi = float(mids[0]), float(mids[-1])
        if not lo <= st.session_state.get(tkey, lo - 1) <= hi:
            st.session_state[tkey] = float(mids[len(mids) // 2])
        raw = st.slider(label, min_value=lo, max_value=hi, key=tkey, format="%.4g")
    threshold = challenge.snap(x_leaf, raw)
    view = challenge.preview(tree, X_train, y_train, leaf, feature, threshold, K)
    hints = st.toggle(
        "Hint: show the Gini decrease at every threshold and the best one",
        key="learn_ch_hints",
        help="Off, you judge a threshold by its class counts and its own Gini decrease "
        "only; on, the chart also draws the decrease at every threshold of this feature "
        "with CART's choice starred (the answer a greedy tree would take).",
    )
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Threshold (midpoint)", f"{threshold:.4g}")
    m2.metric(
        "Gini decrease at this node",
        f"{view.node_decrease:.4f}",
        help="Parent impurity minus the children's, weighted by their rows."
        + (
            f" The best on this feature here is {view.best_decrease:.4f} at "
            f"{view.best_threshold:.4g}."
            if hints
            else " Turn on the hint to see the best on this feature."
        ),
    )
    m3.metric("Training errors in this leaf", f"{view.errors_before} -> {view.errors_after}")
    m4.metric("Left / right rows", f"{view.counts_left.sum()} / {view.counts_right.sum()}")
    st.dataframe(
        {
            "side": [f"left ({feature_name} <= {threshold:.4g})", "right"],
            **{classes[k]: [int(view.counts_left[k]), int(view.counts_right[k])] for k in range(K)},
            "Gini impurity": [round(view.impurity_left, 4), round(view.impurity_right, 4)],
        },
        hide_index=True,
    )
    st.plotly_chart(
        shown_figure(
            split_preview_figure(
                view.histogram_edges,
                view.histogram_counts,
                threshold,
                feature_name=feature_name,
                class_names=classes,
                curve_thresholds=view.curve_thresholds if hints else None,
                curve_gains=view.curve_gains if hints else None,
            )
        ),
        key="learn_ch_preview_view",
    )
    if st.button("Split this leaf", key="learn_ch_split_run", type="primary"):
        history.append(tree.split(leaf, feature, threshold))
        st.rerun()

b1, b2, _ = st.columns([2, 2, 5])
if b1.button("Undo last split", key="learn_ch_undo_btn", disabled=len(history) < 2):
    history.pop()
    st.rerun()
if b2.button("Start over", key="learn_ch_reset_btn", disabled=len(history) < 2):
    del history[1:]
    st.rerun()

st.subheader("Grade your tree")
player = st.text_input(
    "Your name (for the class's score table)", key="learn_ch_player", max_chars=40
)
scores = st.session_state.setdefault("_learn_ch_scores", [])
if st.button("Grade my tree", key="learn_ch_grade_run", disabled=tree.n_splits == 0):
    with st.spinner("Fitting CART and searching for the optimal tree of your depth..."):
        grade = challenge.grade(tree, X_train, y_train, X_test, y_test, K, time_limit=10.0)
    scores.append(challenge.ScoreRow(player.strip() or "anonymous", st.session_state["ds"], grade))
    st.session_state["_learn_ch_last"] = (digest, len(history), grade)
if tree.n_splits == 0:
    st.caption("Split the root first: a single leaf has nothing to grade.")
last = st.session_state.get("_learn_ch_last")
if last and last[0] == digest and last[1] == len(history):
    grade = last[2]
    (st.success if grade.train_errors == grade.optimal_train_errors else st.info)(
        md(grade.sentence())
    )
    st.dataframe(
        {
            "tree": [
                "yours",
                f"CART, {grade.n_splits} split{'s' if grade.n_splits != 1 else ''}",
                f"best possible, depth {grade.depth}" + (" (proven)" if grade.proven else ""),
            ],
            "training errors": [
                grade.train_errors,
                grade.cart_train_errors,
                grade.optimal_train_errors,
            ],
            f"held-out errors (of {grade.n_test})": [
                grade.test_errors,
                grade.cart_test_errors,
                grade.optimal_test_errors,
            ],
        },
        hide_index=True,
    )
    st.caption(
        "The best possible tree is best on the training rows; held out, any of the three "
        "can win, since the training rows are all a tree sees."
    )

if scores:
    st.subheader("Score table (this session)")
    st.dataframe(challenge.score_table(scores), hide_index=True)
