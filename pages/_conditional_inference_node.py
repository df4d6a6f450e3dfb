"""Sections 2 and 3 of the Conditional inference page (pages/conditional_inference.py): the
fitted tree, and why a node split (or did not): its stage A tests, null distributions and
stage B thresholds."""

import numpy as np
import streamlit as st

from engine.cit.service import (
    NOT_IN_POOL,
    NOT_TESTED,
    TESTED,
    node_feature_table,
    threshold_table,
)
from engine.figures.cit import (
    cit_tree_figure,
    leaf_distribution_figure,
    null_histogram_figure,
    threshold_statistic_figure,
)
from engine.teaching.glossary import link_terms
from pages._shared import (
    PROJECTION_KEY,
    clicked_node,
    csv_download,
    md,
)

STATUS_SHORT = {TESTED: "tested", NOT_TESTED: "scan stopped", NOT_IN_POOL: "not in pool"}


def draw_node_tests(*, est, meta, names, nodes, panel, tree, why_leaf):
    """Section 3 of the Conditional inference page: why the chosen node split (or did not), its stage A tests, null distributions and stage B thresholds."""
    st.subheader("3. Why this node split (or did not)")
    st.caption(link_terms("Click a node in the tree, or choose it here."))
    node = st.selectbox(
        "Node",
        nodes,
        key="ci_node_view",
        format_func=lambda v: _node_label(v, est=est, names=names, tree=tree),
    )
    st.session_state["_ci_node"] = node
    rec = est.node_records_[node]
    table = node_feature_table(est, node, names)
    if table.empty:
        st.info(f"Node {node} has no tests: {why_leaf(node)}.")
        return
    asymptotic = rec.get("p_value_method") == "asymptotic"
    adjusted = bool(est.adjust_alpha_selector)
    # one scale: the p-value that decides (adjusted under Bonferroni) beside the level alpha
    adj_name = "adjusted p (1-(1-p)^m)" if asymptotic else "adjusted p (m x p, Bonferroni)"
    _draw_stage_a_summary(
        node=node,
        rec=rec,
        table=table,
        names=names,
        tree=tree,
        why_leaf=why_leaf,
        asymptotic=asymptotic,
        adjusted=adjusted,
    )
    _draw_tests_table(
        panel=panel, table=table, adj_name=adj_name, asymptotic=asymptotic, adjusted=adjusted
    )
    _draw_floor_caption(table=table, rec=rec, adjusted=adjusted)
    st.caption(
        link_terms(
            "Status: *tested*; *scan stopped*: drawn, but feature scanning stopped at an "
            "earlier significant feature (statistic only; turn scanning off to test every "
            "feature); *not in pool*: muted by an ancestor's test, constant at this node, or "
            "not drawn (features per node). Categorical features use another statistic "
            "(mutual information or the correlation ratio of y), so compare p-values, not "
            "statistics, across feature types."
        )
    )
    csv_download(
        "Download this node's tests (CSV)", table, f"cit_node{node}_tests.csv", key="ci_node_dl"
    )
    # side by side; one above the other in projection mode (half the width cut the titles)
    c1, c2 = (
        (st.container(), st.container()) if st.session_state.get(PROJECTION_KEY) else st.columns(2)
    )
    with c1:
        _draw_stage_a_null(
            node=node, rec=rec, table=table, names=names, panel=panel, asymptotic=asymptotic
        )
    with c2:
        _draw_stage_b(
            node=node,
            rec=rec,
            est=est,
            meta=meta,
            names=names,
            panel=panel,
            tree=tree,
            why_leaf=why_leaf,
        )


def _node_label(v: int, *, est, names, tree) -> str:
    """The Node selectbox's label of node ``v``: its rule, rows and stage A p-value."""
    rows = int(tree.n_node_samples[v])
    if tree.is_leaf[v]:
        return f"node {v}: leaf, {rows} rows"
    routed = est.node_records_[v].get("n_missing_routed", 0)
    by_rule = f", {routed} routed by the missing-value rule" if routed else ""
    return (
        f"node {v}: {tree.rule(v, names)}, {rows} rows{by_rule}, p = {est.p_value_selector_[v]:.3g}"
    )


def _draw_stage_a_summary(*, node, rec, table, names, tree, why_leaf, asymptotic, adjusted):
    """The sentence above the node's tests: features drawn and tested, the level alpha, the
    chosen feature (or why the node is a leaf) and the rows the missing-value rule routed."""
    n_tested = int((table["status"] == "tested").sum())
    chosen = table.loc[table["chosen"], "feature"]
    alpha = float(table["alpha"].iloc[0])
    verdict = (
        f"**{md(chosen.iloc[0])}** was chosen ("
        + ("adjusted " if adjusted else "")
        + f"p = {float(table.loc[table['chosen'], 'p_bonferroni'].iloc[0]):.3g} < alpha = "
        f"{alpha:.3g})"
        if len(chosen)
        else why_leaf(node)
    )
    how = (
        f"tested with asymptotic p-values ({rec.get('teststat', 'quadratic')} statistic)"
        if asymptotic
        else "permutation-tested"
    )
    scale = (
        f" (each p-value adjusted for the {rec['n_tested']} features drawn"
        + ("" if asymptotic else f"; the same as p < alpha / m = {rec['alpha_selector']:.3g}")
        + ")"
        if adjusted
        else ""
    )
    routed = rec.get("n_missing_routed", 0)
    st.markdown(
        f"Stage A at node {node}: {rec['n_tested']} features drawn, {n_tested} "
        f"{how} at level alpha = {alpha:.3g}{scale}; {verdict}."
        + (
            f" The split routed {routed} rows with a missing "
            f"{md(names[int(tree.feature[node])])} by the missing-value rule "
            f"({rec.get('n_missing_left', 0)} to the left)."
            if routed and not tree.is_leaf[node]
            else ""
        )
    )


def _draw_tests_table(*, panel, table, adj_name, asymptotic, adjusted):
    """The node's stage A table (chosen feature highlighted), with column help; the adjusted
    p-value column (``adj_name``) only under Bonferroni, permutations only when tested so."""
    decided = adj_name if adjusted else "p-value"
    show = table.drop(columns=["level", "at_floor"]).rename(
        columns={"p_value": "p-value", "p_bonferroni": adj_name, "alpha": "level alpha"}
    )
    show["status"] = show["status"].map(STATUS_SHORT)
    if not adjusted:  # without Bonferroni the column would repeat p
        show = show.drop(columns=adj_name)
    if asymptotic:  # no permutations to count
        show = show.drop(columns="permutations")

    def highlight(row):
        colour = "background-color: #FBD9BF" if row["chosen"] else ""
        return [colour] * len(row)

    number = st.column_config.NumberColumn
    panel.table(
        # "—" for a feature that was not tested (st.dataframe writes None)
        show.style.apply(highlight, axis=1).format(
            {c: "{:.4g}" for c in ("p-value", adj_name) if c in show}, na_rep="—"
        ),
        name="node_tests",
        hide_index=True,
        width="stretch",
        key="ci_node_table",
        column_config={
            "index": None,
            "statistic": number(
                format="%.4f",
                help=(
                    "ctree's quadratic / maximum statistic (asymptotic tests) or the raw "
                    "selector statistic (permutation tests)."
                ),
            ),
            "p-value": number(
                help=(
                    "Asymptotic p-value (chi-square or multivariate normal limit) or Monte "
                    "Carlo permutation p-value (1 + #{T_b >= T}) / (B + 1); unadjusted; —: "
                    "not tested."
                ),
            ),
            adj_name: number(
                help=(
                    "1 - (1 - p)^m (partykit's adjustment) or min(1, m p), m = features "
                    "drawn at the node; significant when below the level alpha beside it."
                ),
            ),
            "level alpha": number(
                format="%.3g",
                help=(
                    f"The level the {decided} column is compared with: significant when "
                    "below it. Under Bonferroni, m p < alpha is the same test as p < alpha / m."
                ),
            ),
            "permutations": number(
                help=("Permutations run (adaptive stopping ends early once the decision is clear).")
            ),
            "status": st.column_config.TextColumn(width="medium"),
        },
    )


def _draw_floor_caption(*, table, rec, adjusted):
    """A caption explaining the permutation floor 1/(B+1) when a tested feature reached it."""
    floored = table[table["at_floor"]]
    if not len(floored):
        return
    b_values = sorted({int(b) for b in floored["permutations"]})
    floor = 1.0 / (b_values[0] + 1)
    which = ", ".join(md(f) for f in floored["feature"][:4]) + (
        f" and {len(floored) - 4} more" if len(floored) > 4 else ""
    )
    st.caption(
        link_terms(
            f"p = {floor:.3g} for {which} is the **permutation floor** 1/(B+1) with B = "
            + " or ".join(f"{b:,}" for b in b_values)
            + ": none of the B shuffled targets gave a statistic as large as the observed "
            "one, and a Monte Carlo p-value (1 + #{T_b >= T}) / (B + 1) cannot go lower. The "
            "true p-value is smaller still; only more permutations (Permutations B) can "
            "show how small"
            + (
                f". Adjusted for the {rec['n_tested']} features, the floor is "
                f"{min(1.0, rec['n_tested'] * floor):.3g}."
                if adjusted
                else "."
            )
        )
    )


def _draw_stage_a_null(*, node, rec, table, names, panel, asymptotic):
    """Stage A's permutation null distribution of a tested feature (chosen in a selectbox),
    or, for asymptotic tests, a caption naming the limit distribution instead."""
    if asymptotic:
        st.caption(
            link_terms(
                "Asymptotic tests have no permutation null distribution: the p-value is the "
                + (
                    "chi-square tail of the quadratic statistic (degrees of freedom = rank of "
                    "its covariance)."
                    if rec.get("teststat") == "quadratic"
                    else "multivariate normal tail of the maximum statistic."
                )
                + " Choose the CIT paper's procedure to see permutation nulls."
            )
        )
        return
    nulls = rec.get("nulls", {})
    options = [int(f) for f in table.loc[table["status"] == "tested", "index"] if f in nulls]
    if not options:
        return
    if st.session_state.get("ci_null_feature_view") not in options:
        # Streamlit forgot the *_view widget on another page: back to the last choice
        last = st.session_state.get("_ci_null_feature")
        st.session_state["ci_null_feature_view"] = last if last in options else options[0]
    f = st.selectbox(
        "Null distribution of",
        options,
        key="ci_null_feature_view",
        format_func=lambda j: names[j],
        help=link_terms(
            "The feature's selector statistic under permutations of the target at this node."
        ),
    )
    st.session_state["_ci_null_feature"] = f
    row = table[table["index"] == f].iloc[0]
    panel.chart(
        null_histogram_figure(
            nulls[f],
            row["statistic"],
            p_value=row["p_value"],
            tail="right",
            name="selector statistic",
            level=rec["alpha_selector"],
            title=f"Stage A, node {node}: {names[f]}",
        ),
        key="ci_null_fig",
    )


def _draw_stage_b(*, node, rec, est, meta, names, panel, tree, why_leaf):
    """Stage B at the node: the split statistic over the candidate thresholds and the chosen
    threshold's null distribution, the chosen categories' caption, or why stage B did not run."""
    if "candidate_thresholds" in rec and len(rec["candidate_thresholds"]):
        f_split = int(rec["features"][int(np.argmin(rec["p_values"]))])
        if not tree.is_leaf[node]:
            f_split = int(tree.feature[node])
        cats = meta["categories"][f_split]
        panel.chart(
            threshold_statistic_figure(
                rec,
                feature_name=names[f_split],
                parent_impurity=float(tree.impurity[node]),
                category_labels=cats,
            ),
            key="ci_thr_fig",
        )
        tnull = rec.get("threshold_null")
        if tnull is not None and "chosen_threshold" in rec:
            trow = threshold_table(est, node)
            trow = trow[trow["chosen"]].iloc[0]
            panel.chart(
                null_histogram_figure(
                    tnull,
                    trow["statistic"],
                    p_value=trow["p_value"],
                    tail="left",
                    name="weighted child impurity",
                    level=rec["alpha_splitter"],
                    title=f"Stage B, node {node}: chosen threshold on {names[f_split]}",
                ),
                key="ci_thr_null_fig",
            )
    elif "chosen_categories" in rec:
        cats = meta["categories"][int(tree.feature[node])]
        left = ", ".join(md(cats[c]) for c in rec["chosen_categories"])
        st.caption(
            link_terms(
                f"Stage B: the split of the categories into two groups with the largest "
                f"{rec['split_statistic']} statistic ({rec['split_statistic_value']:.4g}) "
                f"sends {{{left}}} left."
            )
        )
    elif rec.get("p_values"):
        st.caption(link_terms(f"Stage B did not run here: {why_leaf(node)}."))


def draw_tree(*, est, meta, names, panel, tree, why_leaf):
    """Section 2 of the Conditional inference page: the fitted tree (click a node to inspect it); returns the node ids."""
    st.subheader("2. The tree")
    if tree.node_count == 1:
        rec0 = est.node_records_[0]
        st.info(
            f"The tree is a single leaf: at the root, {why_leaf(0)}."
            + (
                " Below are the root's tests; a larger alpha, more permutations or turning "
                "Bonferroni off lets weaker associations split."
                if rec0.get("p_values")
                else ""
            )
        )
    nodes = list(range(tree.node_count))
    if st.session_state.get("_ci_tree_id") != id(est):
        st.session_state["ci_node_view"] = 0  # a new fit starts at the root
        st.session_state["_ci_tree_id"] = id(est)
    elif st.session_state.get("ci_node_view") not in nodes:
        # Streamlit forgot the *_view widget on another page: back to this tree's last node
        last = st.session_state.get("_ci_node", 0)
        st.session_state["ci_node_view"] = last if last in nodes else 0
    fig = cit_tree_figure(
        est,
        tree=tree,
        feature_names=names,
        class_names=meta["classes"],
        highlight_node=st.session_state["ci_node_view"],
    )
    fig.update_traces(unselected=dict(marker=dict(opacity=1.0)), selector=dict(type="scatter"))

    def on_tree_click():
        """Select the clicked node (a callback runs before the page, so the selectbox below
        and the highlight follow at once, even while the forests are still being fitted)."""
        clicked = clicked_node(st.session_state.get("ci_tree_fig_view"))
        if clicked is not None and 0 <= clicked < tree.node_count:
            st.session_state["ci_node_view"] = clicked

    panel.chart(fig, on_select=on_tree_click, selection_mode="points", key="ci_tree_fig_view")
    panel.chart(
        leaf_distribution_figure(
            tree,
            tree.apply(meta["X"]),
            meta["y"],
            class_names=meta["classes"],
            target=meta.get("target"),
        ),
        key="ci_leaves",
    )
    st.download_button(
        "Download the tree (JSON)",
        tree.to_json(indent=1).encode(),
        file_name="conditional_inference_tree.json",
        mime="application/json",
        on_click="ignore",
        key="ci_tree_dl",
    )
    return nodes
