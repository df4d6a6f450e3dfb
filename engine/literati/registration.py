"""The Literati entries of the Compare page's model registry (:mod:`engine.model_registry`):
the optimal shape tree and the greedy shape tree it starts from."""

from __future__ import annotations

from engine.literati.estimator import GreedyShapeTreeClassifier, LiteratiClassifier
from engine.model_registry import ModelSpec, ParamSpec, param_spec, register_model

_LITERATI_CANDIDATES = {"8,4": (8, 4), "16,8": (16, 8), "4": 4, "all": None}


def _literati(task, random_state, max_depth, max_breakpoints, time_limit, candidate_leaves):
    return LiteratiClassifier(
        max_depth=max_depth,
        max_breakpoints=max_breakpoints,
        time_limit=time_limit,
        candidate_leaves=_LITERATI_CANDIDATES[candidate_leaves],
        random_state=random_state,
    )


def _shape_tree_params(estimator, leaves_help: str) -> tuple[ParamSpec, ...]:
    """Depth, K_max and B_d widgets of a shape tree (ranges from ``estimator``'s table)."""
    return (
        param_spec(estimator, "max_depth", 3, help="Maximum depth D of the tree."),
        param_spec(
            estimator,
            "max_breakpoints",
            2,
            help="K_max: breakpoints per node's shape function (1 = plain thresholds).",
        ),
        ParamSpec(
            "candidate_leaves",
            "8,4",
            "choice",
            choices=tuple(_LITERATI_CANDIDATES),
            help=leaves_help,
        ),
    )


_LITERATI_DEPTH, _LITERATI_KMAX, _LITERATI_LEAVES = _shape_tree_params(
    LiteratiClassifier,
    "B_d per depth (root first, the last repeats): leaves of the one-feature CART giving "
    "each state's candidate breakpoints; 'all' = every midpoint (exact, slowest).",
)
register_model(
    ModelSpec(
        key="treelab_literati",
        label="Literati optimal shape tree (TreeLab)",
        build=_literati,
        tasks=("classification",),
        params=(
            _LITERATI_DEPTH,
            _LITERATI_KMAX,
            param_spec(
                LiteratiClassifier,
                "time_limit",
                5.0,
                low=0.5,
                high=600.0,
                help="Seconds per fit; the search returns its best tree at the limit "
                "(every fold and the refit get this budget).",
            ),
            _LITERATI_LEAVES,
        ),
        description="Anytime AO* search for the optimal shape generalized tree: errors + "
        "0.005 n per split and per breakpoint (Literati, arXiv 2609.09299).",
        tree_figure=True,
        family="TreeLab",
    )
)


def _greedy_shape(task, random_state, max_depth, max_breakpoints, candidate_leaves):
    return GreedyShapeTreeClassifier(
        max_depth=max_depth,
        max_breakpoints=max_breakpoints,
        candidate_leaves=_LITERATI_CANDIDATES[candidate_leaves],
        random_state=random_state,
    )


register_model(
    ModelSpec(
        key="treelab_greedy_shape",
        label="Greedy shape tree (TreeLab)",
        build=_greedy_shape,
        tasks=("classification",),
        params=_shape_tree_params(
            GreedyShapeTreeClassifier,
            "B_d per depth (root first, the last repeats): leaves of the one-feature CART "
            "giving each node's candidate breakpoints; 'all' = every midpoint.",
        ),
        description="Greedy top-down shape tree in Literati's candidate space (least gini "
        "impurity per node), pruned by errors + 0.005 n per split and per breakpoint; "
        "the tree Literati's search starts from.",
        tree_figure=True,
        family="TreeLab",
    )
)
