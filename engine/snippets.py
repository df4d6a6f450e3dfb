"""Reproduce in Python: the engine calls that compute a page's result, as code text.

Each method page shows, with its result, a snippet that a notebook can run to get the same
numbers (issue 16 point 5).  The functions here build that text from the run's meta (the
dict a page keeps of a run: its ``recipe`` of the dataset, see
``pages._shared.dataset_recipe``, and the page's settings).  They only write strings: every
value goes into the code through :func:`repr`, so a column or file name can never become
code.  For an uploaded CSV the snippet reads ``load_csv("your_file.csv")`` with the same
parse options, and a comment says to put the file's path there.

The pages and what their snippet leaves in the notebook's namespace:

* :func:`optimal_shape_trees_snippet` -- ``ds``, ``split``, ``model`` (a fitted
  :class:`engine.literati.LiteratiClassifier`: ``model.upper_bound_`` is the objective).
* :func:`conditional_density_snippet` -- ``ds``, ``train`` / ``val`` / ``test``,
  ``model`` (a grown Partition Tree or Forest) and ``scores`` (its test NLL: ``scores.nll``).
* :func:`conditional_inference_snippet` -- ``ds``, ``model`` (a fitted conditional
  inference tree: ``model.tree_``, ``model.p_value_selector_``).
* :func:`feature_ranking_snippet` -- ``ds``, ``model`` (TreeLab arrays of the model trained
  on the page) and ``explanation`` (``explanation.scores``: method -> attributions of ``x``).
* :func:`compare_snippet` and :func:`split_strategies_snippet` -- ``ds``, ``plan``,
  ``result`` (a :class:`engine.compare.CompareResult`: ``result.summary``).
"""

from __future__ import annotations

#: make_dataset's defaults: an option at its default is left out of the call
_DATASET_DEFAULTS = {
    "task": None,
    "categorical": None,
    "missing": "error",
    "features": None,
    "max_categories": 50,
    "many_levels": "other",
    "small_classes": "keep",
}


class _Code(str):
    """Code text written as is (its repr is itself): an expression of the snippet's own
    names, never a value from the run."""

    def __repr__(self) -> str:
        return str(self)


def _value(value):
    """``value`` with numpy scalars as Python numbers and tuples / lists / dicts walked, so
    its repr is plain Python (``0.5``, not ``np.float64(0.5)``)."""
    if isinstance(value, _Code):
        return value
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    if isinstance(value, dict):
        return {_value(k): _value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_value(v) for v in value)
    return value


def _call(name: str, args: list[str], kwargs: dict, indent: str = "    ") -> str:
    """``name(arg, key=repr(value), ...)``, one argument a line when it is long."""
    parts = list(args) + [f"{key}={_value(value)!r}" for key, value in kwargs.items()]
    one_line = f"{name}({', '.join(parts)})"
    if len(one_line) <= 88:
        return one_line
    inner = "".join(f"{indent}{part},\n" for part in parts)
    return f"{name}(\n{inner})"


def dataset_code(recipe: dict | None) -> str:
    """The lines that make the run's dataset ``ds`` (and ``df``) from its ``recipe``.

    Parameters
    ----------
    recipe : dict or None
        ``source`` ('bundled' or 'upload'), ``name``, ``target`` and the
        :func:`engine.data.make_dataset` options (``task``, ``categorical``, ``missing``,
        ``features``, ``max_categories``, ``many_levels``, ``small_classes``); an upload
        also has ``parse`` (``sep``, ``decimal``, ``thousands``, ``encoding``); a run on a
        subsample has ``subsample`` (``rows``, ``of``, ``seed``:
        :func:`engine.data.subsample_dataset`).

    Returns
    -------
    str
        Python code; for an upload it reads ``"your_file.csv"`` and says so in a comment.
    """
    if not recipe:
        return "# the run's dataset is unknown: make `ds` with engine.data.make_dataset\n"
    lines = []
    if recipe.get("source") == "upload":
        lines.append("from engine.data import load_csv, make_dataset")
        lines.append("")
        lines.append(
            f"# the uploaded file {str(recipe.get('name', ''))!r}: put its path here "
            "(read with the same options)"
        )
        parse = {k: v for k, v in (recipe.get("parse") or {}).items()}
        lines.append("df, report = " + _call("load_csv", ['"your_file.csv"'], parse))
    else:
        lines.append("from engine.data import load_bundled, make_dataset")
        lines.append("")
        lines.append(f"df, report, entry = load_bundled({str(recipe['name'])!r})")
    options = {
        key: recipe.get(key)
        for key in _DATASET_DEFAULTS
        if recipe.get(key) not in (None, []) and recipe.get(key) != _DATASET_DEFAULTS[key]
    }
    lines.append("ds = " + _call("make_dataset", ["df", repr(str(recipe["target"]))], options))
    sample = recipe.get("subsample")
    if sample:
        lines[0] += ", subsample_dataset"
        lines.append(
            f"# a seeded stratified subsample of {int(sample['rows']):,} of "
            f"{int(sample['of']):,} rows"
        )
        lines.append(
            f"ds = subsample_dataset(ds, {int(sample['rows'])}, seed={int(sample['seed'])})"
        )
    return "\n".join(lines) + "\n"


def optimal_shape_trees_snippet(meta: dict) -> str:
    """The Optimal shape trees page's search (Literati) as code.

    Parameters
    ----------
    meta : dict
        The run's meta: ``recipe``, ``seed``, ``test_share``, ``split_fraction``,
        ``breakpoint_fraction``, ``depth``, ``kmax``, ``leaves``, ``scope``,
        ``time_limit``, ``cache``.

    Returns
    -------
    str
        Code ending with ``model`` fitted on the training rows and its objective
        (``model.upper_bound_``) and lower bound printed.
    """
    seed = int(meta.get("seed", 0))
    split = _call(
        "split_and_penalties",
        ["ds"],
        {
            "test_share": float(meta["test_share"]),
            "split_fraction": float(meta["split_fraction"]),
            "breakpoint_fraction": float(meta["breakpoint_fraction"]),
            "seed": seed,
        },
    )
    leaves = meta.get("leaves")
    model = _call(
        "LiteratiClassifier",
        [],
        {
            "max_depth": int(meta["depth"]),
            "max_breakpoints": int(meta["kmax"]),
            "candidate_leaves": tuple(leaves) if isinstance(leaves, list) else leaves,
            "candidate_scope": str(meta.get("scope", "state")),
            "time_limit": float(meta["time_limit"]),
            "cache_size": int(meta["cache"]),
            "random_state": seed,
            "split_penalty": _Code("split.split_penalty"),
            "breakpoint_penalty": _Code("split.breakpoint_penalty"),
        },
    )
    return (
        dataset_code(meta.get("recipe"))
        + "\n"
        + "from engine.literati import LiteratiClassifier\n"
        + "from engine.literati.service import split_and_penalties\n\n"
        + "# the seeded train / test split and the penalties λ, α (fractions of the training rows)\n"
        + f"split = {split}\n"
        + f"model = {model}\n"
        + "model.fit(ds.X[split.train], ds.y[split.train])\n"
        + 'print("objective", model.upper_bound_, "lower bound", model.lower_bound_)\n'
    )


def _plan_snippet(meta: dict, comment: str) -> str:
    plan = meta.get("plan") or {}
    models = [tuple(entry) for entry in plan.get("models", [])]
    lines = [
        dataset_code(meta.get("recipe")),
        "from engine.compare import plan_comparison, run_comparison",
        "",
        comment,
        "models = [",
        *[f"    {_value(entry)!r}," for entry in models],
        "]",
        "plan = "
        + _call(
            "plan_comparison",
            ["ds", "models"],
            {
                "n_splits": int(plan.get("n_splits", meta.get("n_folds", 5))),
                "random_state": int(plan.get("random_state", 0)),
            },
        ),
        "result = run_comparison(plan)  # every fit here, one after another",
        "print(result.summary)",
    ]
    return "\n".join(lines) + "\n"


def compare_snippet(meta: dict) -> str:
    """The Compare page's cross-validation as code: ``plan_comparison`` with the chosen
    models and their parameters, run by ``run_comparison``.

    Parameters
    ----------
    meta : dict
        The run's meta: ``recipe`` and ``plan`` (:attr:`engine.compare.ComparisonPlan.request`).

    Returns
    -------
    str
        Code ending with ``result`` (:class:`engine.compare.CompareResult`).
    """
    return _plan_snippet(meta, "# (registry key, parameters, label) of every model")


def split_strategies_snippet(meta: dict) -> str:
    """The Split strategies page's whole trees under cross-validation as code: one CART
    per strategy (:func:`engine.cart.service.strategy_plan` writes the same entries).

    Parameters
    ----------
    meta : dict
        The run's meta: ``recipe`` and ``plan`` (:attr:`engine.compare.ComparisonPlan.request`).

    Returns
    -------
    str
        Code ending with ``result`` (:class:`engine.compare.CompareResult`).
    """
    return _plan_snippet(meta, "# one CART per split strategy: (registry key, parameters, label)")


def conditional_inference_snippet(meta: dict) -> str:
    """The Conditional inference page's tree (CIT) as code.

    Parameters
    ----------
    meta : dict
        The run's meta: ``recipe``, ``task``, ``params`` (the estimator's keyword
        arguments) and ``seed``.

    Returns
    -------
    str
        Code ending with ``model`` fitted on every row, its root's feature and p-value
        printed.
    """
    name = (
        "ConditionalInferenceTreeClassifier"
        if meta.get("task") == "classification"
        else "ConditionalInferenceTreeRegressor"
    )
    params = dict(meta.get("params") or {})
    params["categorical_features"] = _Code("categorical")
    params["random_state"] = int(meta.get("seed", 0))
    return (
        dataset_code(meta.get("recipe"))
        + "\n"
        + f"from engine.cit import {name}\n\n"
        + "# categorical features are split by category sets\n"
        + "categorical = ds.is_categorical if ds.is_categorical.any() else None\n"
        + f"model = {_call(name, [], params)}\n"
        + "model.fit(ds.X, ds.y)\n"
        + "root = model.tree_.feature[0]  # -2: the root is a leaf\n"
        + "root_name = ds.feature_names[root] if root >= 0 else None\n"
        + 'print("root feature", root_name, "p-value", model.p_value_selector_[0])\n'
    )


def conditional_density_snippet(meta: dict) -> str:
    """The Conditional density page's grown Partition Tree (or Forest) as code.

    Parameters
    ----------
    meta : dict
        The run's meta: ``recipe``, ``task``, ``kind`` ('tree' / 'forest'),
        ``tree_params`` / ``forest_params``, ``test_fraction``, ``val_fraction``,
        ``val_every``, ``floor`` and ``seed``.

    Returns
    -------
    str
        Code ending with ``model`` grown on the training rows as the page grows it (split
        by split, the validation rows choosing its size) and its test NLL
        (``scores.nll``) printed.
    """
    seed = int(meta.get("seed", 0))
    kind = str(meta.get("kind", "tree"))
    params = dict(meta["forest_params"] if kind == "forest" else meta["tree_params"])
    split = _call(
        "split_rows",
        ["ds.n_samples", "ds.y"],
        {
            "test_fraction": float(meta["test_fraction"]),
            "val_fraction": float(meta["val_fraction"]),
            "seed": seed,
            "stratify": meta.get("task") == "classification",
            "class_names": _Code("None if ds.classes_ is None else [str(c) for c in ds.classes_]"),
        },
    )
    make = _call(
        "make_model",
        [repr(kind), "ds.task", "params"],
        {
            "categorical": _Code("ds.is_categorical if ds.is_categorical.any() else None"),
            "random_state": seed,
        },
    )
    grow = {"floor": float(meta["floor"])}
    if kind == "tree":
        grow = {"val_every": int(meta.get("val_every", 1)), **grow}
    steps = _call("model.fit_steps", ["X_train", "y_train", "X_val", "y_val"], grow)
    return (
        dataset_code(meta.get("recipe"))
        + "\n"
        + "from engine.partition.service import holdout_scores, make_model, split_rows\n\n"
        + "# the seeded train / validation / test rows\n"
        + f"train, val, test, note = {split}\n"
        + f"params = {_value(params)!r}\n"
        + f"model = {make}\n"
        + "X_train, y_train = ds.X[train], ds.y[train]\n"
        + "X_val, y_val = (ds.X[val], ds.y[val]) if len(val) else (None, None)\n"
        + f"for step in {steps}:\n"
        + "    pass  # one split (a forest: one tree) per step, as the page grows it\n"
        + f"scores = holdout_scores(model, ds.X[test], ds.y[test], {float(meta['floor'])!r})\n"
        + 'print("test NLL", scores.nll)\n'
    )


def feature_ranking_snippet(meta: dict) -> str:
    """The Feature ranking page's attributions (TreeGrad) of one row, for a model trained
    on the page, as code.

    Parameters
    ----------
    meta : dict
        ``recipe``, the model's ``kind``, ``depth``, ``leaves``, ``n_estimators``,
        ``learning_rate``, ``test_size`` and ``seed``; ``x`` (the explained row's values as
        shown, edits included), ``class_index`` and ``method_params``
        (:class:`engine.treegrad.explain.MethodParams` fields).

    Returns
    -------
    str
        Code ending with ``explanation`` (its ``scores``: method label -> attributions).
    """
    fit = _call(
        "fit_model",
        ["ds"],
        {
            "kind": str(meta["kind"]),
            "depth": int(meta["depth"]),
            "leaves": int(meta["leaves"]),
            "n_estimators": int(meta["n_estimators"]),
            "learning_rate": float(meta["learning_rate"]),
            "test_size": float(meta["test_size"]),
            "random_state": int(meta.get("seed", 0)),
        },
    )
    values = [_Code('float("nan")') if value != value else float(value) for value in meta["x"]]
    params = _call("MethodParams", [], dict(meta.get("method_params") or {}))
    return (
        dataset_code(meta.get("recipe"))
        + "\n"
        + "import numpy as np\n\n"
        + "from engine.treegrad.service import MethodParams, as_treelab, explain, fit_model\n\n"
        + "# the model trained on the seeded training rows, in TreeLab's arrays\n"
        + f"fitted, train, test, score, note = {fit}\n"
        + "model = as_treelab(fitted)\n"
        + f"x = np.array({_value(values)!r})  # the explained row, as shown\n"
        + f"explanation = explain(model, x, {int(meta['class_index'])!r}, {params})\n"
        + "for method, scores in explanation.scores.items():\n"
        + "    print(method, dict(zip(ds.feature_names, scores.round(6))))\n"
    )
