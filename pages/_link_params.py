"""Every page's link parameters, declared in one place (issue 16 point 2).

Each function returns the :class:`pages._links.LinkParam` entries of one page: the widgets
whose values determine what the page computes or shows, their short names in the query
string, types, defaults and allowed values.  Some depend on the dataset (the task decides
which models, strategies and learners exist; the number of features bounds the top-k
values): those functions take the task (and sizes) and the page calls them once its
dataset is known, before its widgets are drawn.  :func:`declared_links` lists every
page's parameters for both tasks: docs/deploy.md's table is generated from it
(:func:`link_table`), and a test checks the two agree.
"""

from __future__ import annotations

from pages._links import LinkParam

TASKS = ("classification", "regression")
#: The URL names of the sidebar's settings, with what they set (pages/_shared.py).
SIDEBAR = (
    ("ds", "the bundled dataset (an uploaded CSV is not in links)"),
    ("target", "the target column"),
    ("task", "auto, classification or regression"),
    ("missing", "rows with missing values: keep, drop or error"),
    ("seed", "the random seed"),
    ("sub", "rows of the seeded stratified subsample, when it is on (pages/_scale.py)"),
    ("sub_seed", "the subsample's seed"),
    ("projection", "projection mode (1 / 0)"),
)
#: Most folds of a cross-validation slider (pages/_shared.py ``folds_slider``).
MAX_FOLDS = 10


# -- Optimal shape trees ----------------------------------------------------------------------
#: The Literati page's candidate scopes: URL code -> the radio's label.
LITERATI_SCOPES = {
    "state": "each state's own (paper)",
    "root": "the root's (counting)",
}


def optimal_shape_trees_link() -> tuple[LinkParam, ...]:
    """The Optimal shape trees page (pages/optimal_shape_trees.py)."""
    return (
        LinkParam("lit_depth", "depth", int, 3, low=1, high=8, doc="maximum depth D"),
        LinkParam("lit_kmax", "kmax", int, 2, low=1, high=4, doc="breakpoints per node K_max"),
        LinkParam("lit_time", "time", float, 20.0, low=1.0, high=600.0, doc="time limit (s)"),
        LinkParam("lit_lambda", "lambda", float, 0.005, low=0.0, high=1.0, doc="split penalty"),
        LinkParam("lit_alpha", "alpha", float, 0.005, low=0.0, high=1.0, doc="breakpoint penalty"),
        LinkParam("lit_test", "test", float, 0.25, low=0.1, high=0.5, doc="test share"),
        LinkParam("lit_bd", "bd", str, "8, 4", doc="candidate breakpoints B_d per depth"),
        LinkParam("lit_cache", "cache", int, 10_000, low=100, high=1_000_000, doc="cache size"),
        LinkParam("lit_k1", "baseline", bool, True, doc="K_max = 1 baseline search"),
        LinkParam(
            "lit_scope",
            "scope",
            str,
            LITERATI_SCOPES["state"],
            options=LITERATI_SCOPES,
            doc="candidates below the root: state or root",
        ),
    )


# -- Split strategies -------------------------------------------------------------------------
#: The strategies the Split strategies page starts with, per task.
SPLIT_DEFAULTS = {
    "classification": [
        "exhaustive",
        "quantile",
        "random",
        "dics_paper",
        "class_centroid",
        "kde_valley",
    ],
    "regression": ["exhaustive", "quantile", "random", "kmeans1d", "kde_valley"],
}


def split_strategies_link(task: str) -> tuple[LinkParam, ...]:
    """The Split strategies page (pages/split_strategies.py) for a ``task`` dataset."""
    from engine.cart.service import strategies_for

    available = tuple(strategies_for(task))
    default = [s for s in SPLIT_DEFAULTS[task] if s in available]
    params = [
        LinkParam(
            "ss_strategies", "strategies", list, default, options=available, doc="strategies"
        ),
        LinkParam("ss_k", "k", int, 0, low=0, high=256, doc="candidates k (0 = default)"),
        LinkParam("ss_depth", "depth", int, 3, low=1, high=6, doc="depth of the node tree"),
        LinkParam("ss_msl", "min_leaf", int, 1, low=1, high=500, doc="minimum rows per leaf"),
        LinkParam("ss_cv_depth", "cv_depth", int, 8, low=1, high=20, doc="whole-tree depth"),
        LinkParam("ss_cv_folds", "folds", int, 5, low=2, high=MAX_FOLDS, doc="folds"),
        LinkParam("ss_cv_budget", "budget", int, 120, low=5, high=3600, doc="time budget (s)"),
    ]
    if task == "classification":
        params.insert(
            2,
            LinkParam(
                "ss_criterion",
                "criterion",
                str,
                "gini",
                options=("gini", "entropy"),
                doc="impurity (classification)",
            ),
        )
    return tuple(params)


# -- Compare ----------------------------------------------------------------------------------
def compare_link(task: str) -> tuple[LinkParam, ...]:
    """The Compare page (pages/compare.py) for a ``task`` dataset: the models, folds, budget
    and every model's parameters (``<model>.<parameter>``, e.g. ``cart.max_depth``)."""
    from engine.compare import available_models

    specs = available_models(task)
    keys = tuple(s.key for s in specs)
    params = [
        LinkParam("cmp_models", "models", list, list(keys[:3]), options=keys, doc="models"),
        LinkParam("cmp_folds", "folds", int, 5, low=2, high=MAX_FOLDS, doc="folds"),
        LinkParam("cmp_budget", "budget", int, 120, low=5, high=3600, doc="time budget (s)"),
    ]
    for spec in specs:
        for p in spec.params:
            key, name = f"cmp_{spec.key}_{p.name}", f"{spec.key}.{p.name}"
            doc = f"{spec.label}: {p.name}"
            if p.kind == "choice":
                params.append(LinkParam(key, name, str, p.default, options=p.choices, doc=doc))
            elif p.kind == "float":
                low, high = float(p.low), float(p.high)
                params.append(
                    LinkParam(key, name, float, float(p.default), low=low, high=high, doc=doc)
                )
            else:
                default = 0 if p.default is None else int(p.default)
                params.append(LinkParam(key, name, int, default, low=p.low, high=p.high, doc=doc))
    return tuple(params)


# -- Conditional inference --------------------------------------------------------------------
CI_PROCEDURES = ("ctree", "paper")
CI_PRESETS = ("auto", "minimum", "maximum", "fixed B")


def _ci_test_params(clf: bool) -> list[LinkParam]:
    """The Conditional inference page's tests: the procedure, statistics, selector and
    splitter (by task), levels, Bonferroni, adaptive stopping, permutations, muting and
    scanning."""
    two = ("quadratic", "maximum")
    params = [
        LinkParam("ci_procedure", "procedure", str, "ctree", options=CI_PROCEDURES, doc="ctree"),
        LinkParam("ci_teststat", "teststat", str, "quadratic", options=two, doc="ctree stage A"),
        LinkParam("ci_splitstat", "splitstat", str, "quadratic", options=two, doc="ctree B"),
    ]
    if clf:
        params += [
            LinkParam(
                "ci_selector_clf",
                "selector",
                str,
                "mc",
                options=("mc", "mi"),
                doc="selector, stage A (regression: `pc`)",
            ),
            LinkParam(
                "ci_splitter_clf",
                "splitter",
                str,
                "gini",
                options=("gini", "entropy"),
                doc="splitter, stage B (regression: `mse`)",
            ),
        ]
    else:
        params += [
            LinkParam("ci_selector_reg", "selector", str, "pc", options=("pc",)),
            LinkParam("ci_splitter_reg", "splitter", str, "mse", options=("mse",)),
        ]
    params += [
        LinkParam("ci_alpha_sel", "alpha_a", float, 0.05, low=0.0001, high=0.5, doc="alpha A"),
        LinkParam("ci_alpha_spl", "alpha_b", float, 0.05, low=0.0001, high=0.5, doc="alpha B"),
        LinkParam("ci_adj_sel", "bonferroni_a", bool, True, doc="Bonferroni in stage A"),
        LinkParam("ci_adj_spl", "bonferroni_b", bool, True, doc="Bonferroni in stage B"),
        LinkParam("ci_es_sel", "stopping_a", bool, True, doc="adaptive stopping A"),
        LinkParam("ci_es_spl", "stopping_b", bool, True, doc="adaptive stopping B"),
        LinkParam(
            "ci_b_sel_preset",
            "perm_a",
            str,
            "auto",
            options=CI_PRESETS,
            doc="permutations, stage A",
        ),
        LinkParam("ci_b_sel", "b_a", int, 99, low=1, high=100_000, doc="fixed B, stage A"),
        LinkParam(
            "ci_b_spl_preset",
            "perm_b",
            str,
            "auto",
            options=CI_PRESETS,
            doc="permutations, stage B",
        ),
        LinkParam("ci_b_spl", "b_b", int, 99, low=1, high=100_000, doc="fixed B, stage B"),
        LinkParam("ci_muting", "muting", bool, False, doc="feature muting"),
        LinkParam("ci_fscan", "feature_scan", bool, True, doc="feature scanning"),
        LinkParam("ci_tscan", "threshold_scan", bool, True, doc="threshold scanning"),
    ]
    return params


def _ci_growth_params() -> list[LinkParam]:
    """The Conditional inference page's growth settings: features per node, threshold
    candidates, impurity decrease, depth, node sizes, the forests' trees."""
    return [
        LinkParam(
            "ci_max_features",
            "max_features",
            str,
            "all",
            options=("all", "sqrt", "log2"),
            doc="features per node",
        ),
        LinkParam(
            "ci_tmethod",
            "thresholds",
            str,
            "exact",
            options=("exact", "histogram", "percentile", "random"),
            doc="threshold candidates",
        ),
        LinkParam(
            "ci_mt_kind",
            "k_kind",
            str,
            "sqrt",
            options=("sqrt", "log2", "fixed k"),
            doc="number k of candidates",
        ),
        LinkParam("ci_mt_k", "k", int, 256, low=1, high=10_000, doc="fixed k"),
        LinkParam(
            "ci_min_dec",
            "min_decrease",
            float,
            0.0,
            low=0.0,
            high=1e6,
            doc="min. impurity decrease",
        ),
        LinkParam("ci_max_depth", "max_depth", int, 0, low=0, high=50, doc="0 = none"),
        LinkParam("ci_mss", "min_split", int, 20, low=2, high=100_000, doc="min. rows to split"),
        LinkParam("ci_msl", "min_leaf", int, 7, low=1, high=100_000, doc="min. rows per leaf"),
        LinkParam(
            "ci_min_frac",
            "min_fraction",
            float,
            0.01,
            low=0.0,
            high=0.49,
            doc="min. child fraction",
        ),
        LinkParam("ci_n_trees", "trees", int, 50, low=5, high=500, doc="trees in the forests"),
    ]


def _ci_top_k_params(task: str, n_features: int) -> list[LinkParam]:
    """The Conditional inference page's top-k and selection-bias settings (the k values go
    up to ``n_features``)."""
    from engine.cit.service import CART, CIF, CIT, CLASSIFICATION_LEARNERS, REGRESSION_LEARNERS, RF

    methods = {"CIT": CIT, "CIF": CIF, "CART": CART, "RF": RF}  # URL code -> label
    clf = task == "classification"
    ks = [k for k in (1, 2, 3, 5, 10, 20, 50) if k <= n_features]
    if n_features not in ks:
        ks.append(n_features)
    return [
        LinkParam(
            f"ci_learner_{task}",
            "learner",
            str,
            (CLASSIFICATION_LEARNERS if clf else REGRESSION_LEARNERS)[0],
            options=CLASSIFICATION_LEARNERS if clf else REGRESSION_LEARNERS,
            doc="top-k learner",
        ),
        LinkParam(
            "ci_ks_view",
            "ks",
            list,
            [k for k in (1, 2, 3, 5, 10) if k in ks] or ks[:1],
            options=tuple(ks),
            doc="top-k: k values",
        ),
        LinkParam("ci_folds", "folds", int, 5, low=2, high=10, doc="top-k folds"),
        LinkParam("ci_rerank", "rerank", bool, True, doc="re-rank on every training fold"),
        LinkParam(
            "ci_topk_methods",
            "methods",
            list,
            list(methods.values()),
            options=methods,
            doc="top-k methods",
        ),
        LinkParam("ci_n_noise", "noise", int, 10, low=1, high=200, doc="noise features added"),
    ]


def conditional_inference_link(task: str, n_features: int) -> tuple[LinkParam, ...]:
    """The Conditional inference page (pages/conditional_inference.py) for a ``task``
    dataset with ``n_features`` features (the top-k values go up to it)."""
    clf = task == "classification"
    return tuple(_ci_test_params(clf) + _ci_growth_params() + _ci_top_k_params(task, n_features))


# -- Feature ranking --------------------------------------------------------------------------
def feature_ranking_link() -> tuple[LinkParam, ...]:
    """The Feature ranking page (pages/feature_ranking.py)."""
    from engine.treegrad.service import TRAINED_KINDS

    kinds = tuple(TRAINED_KINDS)
    return (
        LinkParam(
            "tg_source",
            "source",
            str,
            "train",
            options=("train", "remembered", "upload"),
            doc="model source (a remembered or uploaded model is not in links)",
        ),
        LinkParam("tg_test", "test", float, 0.25, low=0.1, high=0.5, doc="test share"),
        LinkParam("tg_kind", "model", str, kinds[0], options=kinds, doc="model type"),
        LinkParam("tg_depth", "depth", int, 6, low=0, high=60, doc="max depth"),
        LinkParam("tg_leaves", "leaves", int, 0, low=0, high=100_000, doc="max leaves"),
        LinkParam("tg_trees", "trees", int, 50, low=1, high=500, doc="trees"),
        LinkParam("tg_gblr", "boost_lr", float, 0.1, low=0.01, high=1.0, doc="learning rate"),
        LinkParam(
            "tg_class",
            "class",
            int,
            -1,
            low=-1,
            high=10_000,
            doc="class explained, from 0 (-1: the predicted class)",
        ),
        LinkParam("tg_row", "row", int, None, low=0, high=2**31 - 1, doc="sample: a test row"),
        LinkParam(
            "tg_edits",
            "edits",
            str,
            "",
            doc="what-if edits of the row: `feature=value` items joined by `;`, a feature by "
            "its column number from 0, a category by its code from 0, `na` for missing",
        ),
        LinkParam("tg_alpha", "beta_alpha", int, 4, low=1, high=64, doc="Beta alpha"),
        LinkParam("tg_beta", "beta_beta", int, 1, low=1, high=64, doc="Beta beta"),
        LinkParam("tg_p", "p", float, 0.3, low=0.0, high=1.0, doc="weighted Banzhaf p"),
        LinkParam("tg_lr", "lr", float, 5.0, low=0.001, high=100.0, doc="Ranker step size"),
        LinkParam("tg_steps", "steps", int, 100, low=1, high=1000, doc="Ranker steps"),
        LinkParam("tg_nrandom", "random", int, 16, low=0, high=200, doc="random orders"),
        LinkParam(
            "tg_curve_out",
            "curve_output",
            str,
            "probability",
            options=("probability", "game"),
            doc="curves of a boosted classifier",
        ),
        LinkParam(
            "tg_topk", "features_shown", int, None, low=1, high=100_000, doc="features shown"
        ),
        LinkParam("tg_norm", "normalise", bool, False, doc="scale each method"),
        LinkParam(
            "tg_mode", "curves", str, "sample", options=("sample", "batch"), doc="curves for"
        ),
        LinkParam("tg_batch", "batch", int, None, low=1, high=500, doc="rows in the batch"),
        LinkParam(
            "tg_heat",
            "heat",
            str,
            "Ranker Adam",
            options=("Ranker Adam", "Ranker GA"),
            doc="heat map of",
        ),
        LinkParam(
            "tg_num_depths",
            "depths",
            list,
            [5, 10, 20, 30, 45, 0],
            options=(5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 0),
            doc="numerics: max depths",
        ),
        LinkParam(
            "tg_num_rows",
            "rows",
            int,
            40000,
            options=(5000, 10000, 20000, 40000),
            doc="numerics: training rows",
        ),
        LinkParam(
            "tg_rt_leaves",
            "runtime_leaves",
            list,
            [100, 1000, 10000],
            options=(100, 300, 1000, 3000, 10000, 30000),
            doc="runtime: leaves",
        ),
    )


# -- Conditional density ----------------------------------------------------------------------
DENSITY_FLOORS = (1e-15, 1e-12, 1e-9, 1e-6, 1e-4, 1e-3)


#: The text of a missing category in the ``edits`` link parameter.
EDIT_MISSING = "na"


def format_edits(edits: dict[int, float | int | None]) -> str:
    """The ``edits`` link text of the what-if edits ``{feature: value}`` (a category's code
    as an int, ``None`` for a missing category): ``"2=1.5;4=na"``, features in order."""
    items = []
    for feature in sorted(edits):
        value = edits[feature]
        if value is None:
            text = EDIT_MISSING
        elif isinstance(value, int):
            text = str(value)
        else:
            text = repr(float(value))
        items.append(f"{feature}={text}")
    return ";".join(items)


def parse_edits(
    text: str, n_features: int, categories: list[list[str] | None]
) -> tuple[dict[int, float | int | None], list[tuple[str, str]]]:
    """The what-if edits ``{feature: value}`` an ``edits`` link text stands for, and an
    ``(item, problem)`` pair per item that could not be used (never raises, never
    evaluates the text).

    A numeric feature takes a finite number; a categorical one (``categories[j]`` not None)
    a code ``0 .. len - 1`` or ``na`` (missing)."""
    edits: dict[int, float | int | None] = {}
    problems = []
    for item in filter(None, (part.strip() for part in str(text).split(";"))):
        feature_text, equals, value_text = item.partition("=")
        feature_text, value_text = feature_text.strip(), value_text.strip()
        if not equals or not feature_text.isdigit() or int(feature_text) >= n_features:
            problems.append((item, f"names no feature (a column number 0 to {n_features - 1})"))
            continue
        feature = int(feature_text)
        labels = categories[feature]
        if labels is not None:
            if value_text.lower() == EDIT_MISSING:
                edits[feature] = None
            elif value_text.isdigit() and int(value_text) < len(labels):
                edits[feature] = int(value_text)
            else:
                problems.append(
                    (item, f"is not a category code 0 to {len(labels) - 1} or {EDIT_MISSING}")
                )
            continue
        try:
            value = float(value_text)
        except ValueError:
            value = float("nan")
        if value != value or value in (float("inf"), float("-inf")):
            problems.append((item, "does not give a numeric feature a finite number"))
            continue
        edits[feature] = value
    return edits, problems


def conditional_density_link(task: str) -> tuple[LinkParam, ...]:
    """The Conditional density page (pages/conditional_density.py) for a ``task`` dataset
    (its leaf budget and minimum volume fraction have one widget per task)."""
    from engine.partition.service import MAX_LEAVES_CLF, MAX_LEAVES_REG

    regression = task == "regression"
    leaves = MAX_LEAVES_REG if regression else MAX_LEAVES_CLF
    return (
        LinkParam("pt_kind", "model", str, "tree", options=("tree", "forest"), doc="model"),
        LinkParam(
            f"pt_max_leaves_{task}",
            "max_leaves",
            int,
            leaves,
            low=2,
            high=4096,
            doc=f"maximum leaves (default {MAX_LEAVES_CLF} classification, {MAX_LEAVES_REG} regression)",
        ),
        LinkParam("pt_max_depth", "max_depth", int, 0, low=0, high=100, doc="0 = unlimited"),
        LinkParam("pt_min_xy", "min_xy", int, 1, low=0, high=10_000, doc="min rows per cell"),
        LinkParam("pt_min_x", "min_x", int, 1, low=1, high=10_000, doc="min rows per X set"),
        LinkParam("pt_min_y", "min_y", int, 1, low=1, high=10_000, doc="min rows per Y set"),
        LinkParam(
            f"pt_mvf_{task}",
            "min_volume",
            float,
            0.1 if regression else 0.0,
            low=0.0,
            high=0.5,
            doc="min volume fraction (regression)",
        ),
        LinkParam("pt_bexp", "expansion", float, 0.1, low=0.0, high=2.0, doc="boundary f"),
        LinkParam("pt_n_estimators", "trees", int, 50, low=1, high=500, doc="forest: trees"),
        LinkParam(
            "pt_max_samples",
            "bootstrap",
            float,
            0.8,
            low=0.05,
            high=1.0,
            doc="forest: bootstrap fraction",
        ),
        LinkParam(
            "pt_max_features",
            "features",
            float,
            0.8,
            low=0.05,
            high=1.0,
            doc="forest: feature fraction",
        ),
        LinkParam(
            "pt_aggregation",
            "aggregation",
            str,
            "unnormalised",
            options=("unnormalised", "normalised"),
            doc="forest aggregation",
        ),
        LinkParam("pt_test_frac", "test", float, 0.2, low=0.1, high=0.5, doc="test fraction"),
        LinkParam(
            "pt_val_frac", "validation", float, 0.2, low=0.0, high=0.5, doc="validation fraction"
        ),
        LinkParam("pt_keep_best", "keep_best", bool, True, doc="keep the best validation size"),
        LinkParam("pt_floor", "floor", float, 1e-9, options=DENSITY_FLOORS, doc="density floor"),
        LinkParam("pt_budget", "budget", int, 120, low=5, high=3600, doc="time budget (s)"),
    )


# -- Data and Learn ---------------------------------------------------------------------------
#: Most levels the Data page's level cap allows.
MAX_LEVEL_CAP = 10_000


def data_link(option: str | None, numeric_columns=()) -> tuple[LinkParam, ...]:
    """The Data page (pages/data.py): the column roles of the sidebar's bundled dataset
    ``option`` (``numeric_columns``: the numeric features that may be marked categorical).
    An uploaded file's settings are not in links (``option`` None: no parameter)."""
    from engine.data import MANY_LEVEL_CHOICES, MAX_CATEGORIES, SMALL_CLASS_CHOICES

    if option is None:
        return ()
    many, small = tuple(MANY_LEVEL_CHOICES), tuple(SMALL_CLASS_CHOICES)
    return (
        LinkParam(
            f"categorical::{option}",
            "categorical",
            list,
            [],
            options=tuple(numeric_columns),
            doc="numeric columns treated as categorical",
        ),
        LinkParam(
            f"max_levels::{option}",
            "max_levels",
            int,
            MAX_CATEGORIES,
            low=2,
            high=MAX_LEVEL_CAP,
            doc="most levels of a categorical column",
        ),
        LinkParam(
            f"many_levels::{option}",
            "many_levels",
            str,
            many[0],
            options=many,
            doc="columns with more levels",
        ),
        LinkParam(
            f"small_classes::{option}",
            "small_classes",
            str,
            small[0],
            options=small,
            doc="classes with fewer than 2 rows",
        ),
    )


def learn_link(lessons: tuple[str, ...], lesson: str, n_steps: int) -> tuple[LinkParam, ...]:
    """The Lessons page (pages/learn.py): the lesson shown (one of ``lessons``) and the
    step of ``lesson`` (1 to ``n_steps`` in the URL; the radio's value counts from 0)."""
    steps = {str(i + 1): i for i in range(n_steps)}
    return (
        LinkParam("learn_lesson", "lesson", str, lessons[0], options=lessons, doc="lesson id"),
        LinkParam(f"learn_step::{lesson}", "step", int, 0, options=steps, doc="step, from 1"),
    )


#: The Predict, then reveal page's questions (URL code -> the radio's label).
PREDICT_KINDS = {
    "root": "Which feature will the root split on?",
    "top": "Which feature ranks first for a row?",
    "p": "Is this p-value significant at alpha?",
}


#: The Watch a tree grow page's dataset choices: URL code -> the select box's label.
GROWTH_SOURCES = {
    "sidebar": "the sidebar's dataset",
    "iris": "Iris (curated: classification)",
    "diabetes": "Diabetes (curated: regression)",
}


def learn_growth_link() -> tuple[LinkParam, ...]:
    """The Watch a tree grow page (pages/learn_growth.py)."""
    from engine.teaching.growth import CART_CRITERIA, METHODS

    methods = tuple(METHODS)
    return (
        LinkParam(
            "learn_gr_source",
            "source",
            str,
            GROWTH_SOURCES["sidebar"],
            options=GROWTH_SOURCES,
            doc="dataset: sidebar, iris or diabetes",
        ),
        LinkParam("learn_gr_method", "method", str, methods[0], options=methods, doc="method"),
        LinkParam("learn_gr_leaves", "leaves", int, 8, low=2, high=16, doc="most leaves"),
        LinkParam("learn_gr_depth", "depth", int, 3, low=1, high=5, doc="deepest level"),
        LinkParam(
            "learn_gr_criterion",
            "criterion",
            str,
            "gini",
            options=tuple(CART_CRITERIA),
            doc="CART's impurity on a classification target: gini or entropy",
        ),
    )


def learn_predict_link() -> tuple[LinkParam, ...]:
    """The Predict, then reveal page (pages/learn_predict.py)."""
    kinds = tuple(PREDICT_KINDS)
    return (
        LinkParam("learn_pr_kind", "question", str, kinds[0], options=kinds, doc="question"),
        LinkParam(
            "learn_pr_alpha",
            "alpha",
            float,
            0.05,
            options=(0.001, 0.01, 0.05, 0.1),
            doc="CIT level",
        ),
    )


def home_link() -> tuple[LinkParam, ...]:
    """The start page (pages/home.py): no parameters of its own (the sidebar's apply)."""
    return ()


def glossary_link() -> tuple[LinkParam, ...]:
    """The Glossary page (pages/learn_glossary.py): the search text."""
    return (LinkParam("learn_gl_query", "q", str, "", doc="search text"),)


def _stable(params: tuple[LinkParam, ...]) -> tuple[LinkParam, ...]:
    """Compare's parameters in an order that does not depend on which method package
    registered its models first: the models' options and their parameters by name."""
    import dataclasses

    head, models = params[:3], params[3:]
    head = tuple(
        dataclasses.replace(p, options=tuple(sorted(p.allowed()))) if p.kind is list else p
        for p in head
    )
    return head + tuple(sorted(models, key=lambda p: p.name))


def declared_links() -> dict[str, tuple[LinkParam, ...]]:
    """Every page's parameters (url path -> params), both tasks' variants merged by name;
    for the docs table and its test."""

    def merged(*groups) -> tuple[LinkParam, ...]:
        seen: dict[str, LinkParam] = {}
        for group in groups:
            for param in group:
                seen.setdefault(param.name, param)
        return tuple(seen.values())

    from engine.teaching.lessons import LESSONS

    return {
        "home": home_link(),
        "optimal_shape_trees": optimal_shape_trees_link(),
        "conditional_density": merged(*(conditional_density_link(t) for t in TASKS)),
        "feature_ranking": feature_ranking_link(),
        "conditional_inference": merged(*(conditional_inference_link(t, 50) for t in TASKS)),
        "split_strategies": merged(*(split_strategies_link(t) for t in TASKS)),
        "compare": _stable(merged(*(compare_link(t) for t in TASKS))),
        "data": data_link("iris"),
        "learn": learn_link(tuple(LESSONS), next(iter(LESSONS)), 9),
        "learn_challenge": (),
        "learn_growth": learn_growth_link(),
        "learn_predict": learn_predict_link(),
        "glossary": glossary_link(),
    }


#: The pages' names in the docs table (url path -> title in the navigation).
PAGE_NAMES = {
    "home": "Start",
    "optimal_shape_trees": "Optimal shape trees",
    "conditional_density": "Conditional density",
    "feature_ranking": "Feature ranking",
    "conditional_inference": "Conditional inference",
    "split_strategies": "Split strategies",
    "compare": "Compare",
    "data": "Data",
    "learn": "Lessons",
    "learn_challenge": "Build your own tree",
    "learn_growth": "Watch a tree grow",
    "learn_predict": "Predict, then reveal",
    "glossary": "Glossary",
}


def _allowed_text(param: LinkParam) -> str:
    from pages._links import MAX_TEXT, format_item

    codes = list(param.codes())
    if param.kind is list:
        return "comma-separated, of: " + (
            ", ".join(f"`{c}`" for c in codes) if codes else "the page's list"
        )
    if param.kind is bool:
        return "`1` or `0`"
    if codes:
        return " / ".join(f"`{c}`" for c in codes)
    if param.kind is str:
        return f"text, at most {MAX_TEXT} characters"
    low, high = (format_item(param.kind(v)) for v in (param.low, param.high))
    return f"{'whole number' if param.kind is int else 'number'} {low} to {high}"


def link_table() -> str:
    """The Markdown table of every page's link parameters (docs/deploy.md, between its
    ``link-parameters`` markers; ``python -m pages._link_params`` prints it)."""
    from pages._links import format_value

    rows = ["| Page | Parameter | Sets | Allowed | Default |", "|---|---|---|---|---|"]
    for name, doc in SIDEBAR:
        rows.append(f"| sidebar | `{name}` | {doc} | see the sidebar | |")
    for page, params in declared_links().items():
        if not params:
            rows.append(f"| {PAGE_NAMES[page]} | none of its own | | | |")
        for param in params:
            default = format_value(param, param.default)
            doc = (param.doc or param.key).replace("|", "/")
            allowed = _allowed_text(param).replace("|", "/")
            shown = f"`{default}`" if default else "(empty)"
            if param.default is None:
                shown = "the dataset's"
            rows.append(f"| {PAGE_NAMES[page]} | `{param.name}` | {doc} | {allowed} | {shown} |")
    rows.append("| any | `run` | a stored run | a run id | none |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(link_table(), end="")
