"""What the Optimal shape trees page computes (Literati, docs/spec.md section 1): the
candidate-leaves setting, the seeded train/test split and the penalties, the search job's
steps, the baselines (greedy shape tree, CART) and their scores.

The shape-function helpers the page needs (internal nodes, breakpoints, the rows reaching a
node) are re-exported from :mod:`engine.literati.shapes`.  The page only draws what these
return; every function works without Streamlit::

    from engine.literati.service import literati_steps, search_results, split_and_penalties
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.data import train_test_rows
from engine.job_context import relay
from engine.literati.certify import (
    Certificate,
    TreeCheck,
    all_thresholds_feasible,
    as_shape_tree,
    certify_bounds,
    certify_checked,
    check_tree,
)
from engine.literati.estimator import MISSING_VALUES_CAPTION, GreedyShapeTreeClassifier
from engine.literati.node_bounds import NodeBounds, path_label
from engine.literati.shapes import (
    internal_nodes,
    node_breakpoints,
    node_rows,
    rows_by_node,
    shape_apply,
)

__all__ = [
    "BASELINE_STEPS",
    "CERTIFY_SOURCES",
    "Certificate",
    "MISSING_VALUES_CAPTION",
    "JOB_SLACK",
    "MIN_ROWS",
    "NodeBounds",
    "STEP_SECONDS",
    "SearchSplit",
    "all_thresholds_feasible",
    "certifiable",
    "certificate_all_thresholds",
    "certify_all_thresholds_steps",
    "certificate_for",
    "certificate_of_check",
    "certificate_of_model",
    "fit_baselines",
    "greedy_baseline",
    "internal_nodes",
    "literati_steps",
    "node_breakpoints",
    "node_rows",
    "objective_of",
    "parse_candidate_leaves",
    "path_label",
    "priority_message",
    "rows_by_node",
    "search_results",
    "split_and_penalties",
    "split_nodes_table",
    "training_errors",
    "tree_counts",
]

#: Seconds one search step may take before the worker yields (the live view's granularity).
STEP_SECONDS = 0.1
#: Extra wall-clock seconds the job may use beyond the searches' own time limits (candidate
#: generation before the first step; the searches stop themselves at their limits).
JOB_SLACK = 60.0
#: Fewest rows the page searches (a training and a test part).
MIN_ROWS = 10


def parse_candidate_leaves(text: str):
    """'8, 4' -> (8, 4); '8' -> 8; 'all' -> None.  ValueError with a message otherwise."""
    t = text.strip().lower()
    if t in ("all", "none", "inf", "\u221e"):
        return None
    parts = [p.strip() for p in t.replace(";", ",").split(",") if p.strip()]
    if not parts:
        raise ValueError("Give B_d as 'all' or as whole numbers per depth, e.g. '8, 4'.")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise ValueError(
            f"B_d must be 'all' or whole numbers separated by commas (e.g. '8, 4'); got {text!r}."
        ) from None
    if any(v < 2 for v in values):
        raise ValueError(
            "Each B_d must be at least 2 (a local CART with 2 leaves gives one "
            f"candidate breakpoint); got {text!r}."
        )
    return values[0] if len(values) == 1 else tuple(values)


@dataclass(frozen=True)
class SearchSplit:
    """The seeded, stratified train/test rows of a search and its penalties in rows.

    ``train``, ``test``: int64 row indices; ``note``: what the split changed (classes too
    small to stratify), or None; ``split_penalty`` (lambda) and ``breakpoint_penalty``
    (alpha): the page's fractions times the number of training rows (misclassified rows).
    """

    train: np.ndarray
    test: np.ndarray
    note: str | None
    split_penalty: float
    breakpoint_penalty: float


def split_and_penalties(
    ds, *, test_share: float, split_fraction: float, breakpoint_fraction: float, seed: int
) -> SearchSplit:
    """The shared seeded split (:func:`engine.data.train_test_rows`, stratified by class)
    of ``ds`` with ``round(test_share * n)`` test rows (at least 1), and the penalties
    lambda = ``split_fraction`` x training rows, alpha = ``breakpoint_fraction`` x
    training rows."""
    n_test = max(int(round(test_share * ds.n_samples)), 1)
    split = train_test_rows(
        ds.n_samples,
        ds.y,
        test_size=n_test,
        random_state=seed,
        class_names=[str(c) for c in ds.classes_],
    )
    n_train = split.train.size
    return SearchSplit(
        split.train,
        split.test,
        split.note,
        split_fraction * n_train,
        breakpoint_fraction * n_train,
    )


def priority_message(phase: str, path: str | None) -> dict:
    """The message (:meth:`engine.jobs.Job.send`) that gives the subtree at ``path`` of the
    running search ``phase``'s incumbent priority (``None``: clear it); read by
    :func:`literati_steps`."""
    return {"type": "priority", "phase": str(phase), "path": path}


def literati_steps(ctx, estimators, X, y, baselines: dict | None = None):
    """Job step generator: fit the baselines (when ``baselines`` is given), then run each
    ``(label, LiteratiClassifier)`` search in turn.

    ``baselines``: the run's settings for :func:`fit_baselines` (``depth``, ``kmax``,
    ``lam``, ``alpha``, ``leaves``, ``scope``, ``seed``, ``bounds``); each baseline fit is
    one step, its snapshot ``{"phase": "baselines", "fitting": key, "done", "of"}``, so
    the page draws the finished result without fitting anything (issue 20).

    One search step is at most :data:`STEP_SECONDS` of AO* work; every step yields the
    running search's latest trace row with its per-node bounds and frontier
    (``"snap"``, :meth:`engine.literati.LiteratiSearch.snapshot`), its trace, its incumbent
    tree (``"incumbent"``) and ``"models"``: every search so far as a fitted estimator
    (:meth:`engine.literati.LiteratiSearch.result`; the finished ones and the running one
    as it stands), plus ``"baselines"``.  A snapshot holds no training rows and no search
    object (a few hundred kB at most), so the Dask runner's pump pickles it without
    pausing the search for long, and Stop (which ends the job between steps, and
    interrupts a depth-3 kernel call running then:
    :meth:`engine.literati.LiteratiSearch.stop_on`) keeps every incumbent: the last
    snapshot is the result.  Before each step the messages sent to the
    job are read: a :func:`priority_message` for the running search gives that subtree
    priority (:meth:`engine.literati.LiteratiSearch.prioritise`); one for another search,
    or with a malformed path, is left out and the snapshot's ``"ignored"`` says why.
    Returns ``{"phase": "done", "models", "baselines"}``.
    """
    fitted = None
    if baselines is not None:
        fitted = yield from relay(
            fit_baselines(X, y, baselines),
            lambda key: {
                "phase": "baselines",
                "fitting": key,
                "done": list(BASELINE_STEPS).index(key),
                "of": len(BASELINE_STEPS),
            },
        )
    finished: dict = {}
    ignored: list[str] = []
    for label, est in estimators:
        search = est.start(X, y)
        search.stop_on(ctx.cancel_event)  # Stop interrupts a long kernel call too
        while True:
            for msg in ctx.messages():
                if msg.get("type") != "priority":
                    ignored.append(f"unknown message {msg.get('type')!r}")
                elif msg.get("phase") != label:
                    ignored.append(f"priority for {msg.get('phase')!r}: that search is not running")
                else:
                    try:
                        search.prioritise(msg.get("path"))
                    except ValueError as exc:
                        ignored.append(str(exc))
            done = search.step(max_seconds=STEP_SECONDS)
            snap = search.snapshot()
            yield {
                "phase": label,
                "snap": snap,
                "trace": search.trace(),
                "incumbent": search.incumbent(),
                "models": {**finished, label: search.result(snap["nodes"])},
                "priority": search.engine.priority,
                "ignored": list(ignored[-5:]),
                "baselines": fitted,
            }
            if done:
                break
        finished[label] = search.finish()
    return {"phase": "done", "models": finished, "baselines": fitted}


def objective_of(errors: int, n_splits: int, n_bp: int, lam: float, alpha: float) -> float:
    """Literati's objective: training errors + lambda x splits + alpha x breakpoints."""
    return float(errors + lam * n_splits + alpha * n_bp)


def tree_counts(tree) -> tuple[int, int]:
    """(internal nodes, breakpoints) of a TreeArrays (K = 1 where no breakpoints)."""
    inner = internal_nodes(tree)
    return len(inner), int(sum(node_breakpoints(tree, v).size for v in inner))


def training_errors(tree, X, y) -> int:
    """Rows of ``X`` whose leaf (shape routing) has a majority class other than ``y``."""
    return int(np.sum(np.argmax(tree.value[shape_apply(tree, X), 0, :], axis=1) != y))


def split_nodes_table(tree, feature_names, lam: float, alpha: float) -> pd.DataFrame:
    """One row per split node of ``tree``: feature, K, breakpoints, rows and its price
    lambda + alpha x K."""
    rows = []
    for v in internal_nodes(tree):
        u = node_breakpoints(tree, v)
        rows.append(
            {
                "node": v,
                "feature": feature_names[int(tree.feature[v])],
                "K": int(u.size),
                "breakpoints": ", ".join(f"{b:.4g}" for b in u),
                "rows": int(tree.n_node_samples[v]),
                "cost": round(lam + alpha * u.size, 4),
            }
        )
    return pd.DataFrame(rows, columns=["node", "feature", "K", "breakpoints", "rows", "cost"])


def greedy_baseline(meta) -> GreedyShapeTreeClassifier:
    """The greedy shape tree in Literati's candidate space with the run's D, K_max, λ, α and
    B_d, fitted on the run's training rows (the tree the main search is seeded with)."""
    return _fit_tree("greedy", meta["X"][meta["tr"]], meta["y"][meta["tr"]], meta)[0]


#: The baselines the search job fits before its searches (:func:`fit_baselines`), in
#: order: key (as :data:`CERTIFY_SOURCES`) -> what the live view says it is fitting.
BASELINE_STEPS = {
    "greedy": "the greedy shape tree",
    "sklearn": "scikit-learn's CART",
    "cart": "TreeLab's CART",
}


def fit_baselines(X, y, settings: dict):
    """Generator (steps of the search job, :func:`literati_steps`): fit each baseline of
    :data:`BASELINE_STEPS` on the training rows ``X`` (float64 ``(n, p)``), ``y`` and check
    it against the run's candidate space (:func:`engine.literati.certify.check_tree`), so
    that the page draws the baselines table and certifies these trees without fitting.

    ``settings``: ``depth``, ``kmax``, ``lam``, ``alpha`` (in rows), ``leaves`` (B_d as
    :func:`parse_candidate_leaves` returns it), ``scope``, ``seed`` and ``bounds``, the
    searches whose bounds certify (``"main"``: K_max; ``"k1"``: 1).  Yields the key of the
    baseline it is about to fit; returns ``{"models": key -> fitted model, "names": key ->
    name for the certificate, "seconds": key -> fit seconds, "errors": key -> message
    (a baseline that could not be fitted), "checks": key -> bound -> TreeCheck}``.
    """
    out = {"models": {}, "names": {}, "seconds": {}, "errors": {}, "checks": {}}
    bounds = list(settings.get("bounds", ["main"]))
    for key in BASELINE_STEPS:
        yield key
        t0 = time.perf_counter()
        try:
            model, name = _fit_tree(key, X, y, settings)
        except Exception as exc:  # noqa: BLE001 -- a baseline must not take the run down
            out["errors"][key] = str(exc) or type(exc).__name__
            continue
        out["seconds"][key] = time.perf_counter() - t0
        out["models"][key], out["names"][key] = model, name
        try:
            out["checks"][key] = {
                bound: check_tree(
                    model,
                    X,
                    y,
                    max_depth=int(settings["depth"]),
                    max_breakpoints=int(settings["kmax"]) if bound == "main" else 1,
                    split_penalty=float(settings["lam"]),
                    breakpoint_penalty=float(settings["alpha"]),
                    candidate_leaves=settings["leaves"],
                    candidate_scope=settings.get("scope", "state"),
                    name=name,
                )
                for bound in bounds
            }
        except (ValueError, RuntimeError) as exc:
            out["errors"][key] = str(exc)
    return out


def search_results(models: dict, meta: dict, status: str, baselines: dict | None) -> dict:
    """The baselines table of a finished run: the searches' fitted models, the greedy shape
    tree and scikit-learn's CART (fitted by the job, :func:`fit_baselines`), each scored
    on the split (predictions only, nothing is fitted here).  A baseline the job could not
    fit is left out of the table and explained in ``warnings`` (list of str).

    ``models``: label -> fitted :class:`engine.literati.LiteratiClassifier` (``"main"``, and
    ``"k1"`` for the K_max = 1 baseline; the job's result or last snapshot); ``meta``: the
    run (``X``, ``y``, ``tr``, ``te``, ``lam``, ``alpha``, ``depth``, ``kmax``); ``status``:
    the job's; ``baselines``: :func:`fit_baselines`'s result (None: the job fitted none).
    Returns ``{"models", "table", "status", "warnings", "checks", "names",
    "check_errors"}``: the last three are what :func:`certificate_of_check` needs to
    certify the baselines later.
    """
    from engine.tree import from_sklearn

    X, y = meta["X"], meta["y"]
    tr, te = meta["tr"], meta["te"]
    lam, alpha = meta["lam"], meta["alpha"]
    base = baselines or {"models": {}, "names": {}, "seconds": {}, "errors": {}, "checks": {}}
    rows, warnings = [], []

    def add(name, model, tree, fit_s, proven, lb):
        n_split, n_bp = tree_counts(tree)
        pred_tr = model.predict(X[tr])
        err = int(np.sum(pred_tr != y[tr]))
        rows.append(
            {
                "model": name,
                "train accuracy": float(np.mean(pred_tr == y[tr])),
                "test accuracy": float(np.mean(model.predict(X[te]) == y[te])),
                "objective (λ, α)": objective_of(err, n_split, n_bp, lam, alpha),
                "lower bound": float("nan") if lb is None else lb,  # NaN: blank cell
                "proven optimal": proven,
                "splits": n_split,
                "breakpoints": n_bp,
                "leaves": tree.n_leaves,
                "depth": tree.max_depth,
                "seconds": fit_s,
            }
        )

    for label, m in models.items():
        name = (
            f"Literati, K_max = {meta['kmax']}"
            if label == "main"
            else "Literati, K_max = 1 (threshold splits)"
        )
        t_end = float(m.trace_["time"].iloc[-1]) if len(m.trace_) else 0.0
        gap = float(m.upper_bound_) - float(m.lower_bound_)
        add(
            name,
            m,
            m.tree_,
            t_end,
            "yes" if m.proven_optimal_ else f"no (gap {gap:.4g})",
            float(m.lower_bound_),
        )
    greedy = base["models"].get("greedy")
    if greedy is None:
        why = base["errors"].get("greedy", "the job did not fit it")
        warnings.append(f"The greedy shape tree baseline could not be fitted: {why}")
    else:
        add(
            f"Greedy shape tree, K_max = {meta['kmax']}",
            greedy,
            greedy.tree_,
            base["seconds"]["greedy"],
            "greedy, no bound",
            float("nan"),
        )
        main = models.get("main")
        if main is not None and greedy.objective_ < float(main.objective_) - 1e-9:
            if meta.get("scope", "state") == "root":
                # the greedy tree picks each state's own candidates: outside the root's space
                warnings.append(
                    f"The greedy shape tree (objective {greedy.objective_:.4g}) beats the "
                    f"search's result ({float(main.objective_):.4g}): it picks each "
                    "state's own candidate breakpoints, while this search used the root's "
                    "candidates in every state, a different candidate space whose optimum "
                    "can be worse. Search each state's own candidates to cover it."
                )
            else:
                # the search starts from this very tree, unless its time limit cut that start
                warnings.append(
                    f"The greedy shape tree (objective {greedy.objective_:.4g}) beats the "
                    f"search's result ({float(main.objective_):.4g}): the time limit ran "
                    "out while the search was still growing its own greedy starting tree, "
                    "so it started from a smaller one. Raise the time limit."
                )
    cart = base["models"].get("sklearn")
    if cart is None:
        why = base["errors"].get("sklearn", "the job did not fit it")
        warnings.append(f"The CART baseline could not be fitted: {why}")
    else:
        add(
            f"CART (scikit-learn), depth {meta['depth']}",
            cart,
            from_sklearn(cart),
            base["seconds"]["sklearn"],
            "greedy, no bound",
            float("nan"),
        )
    return {
        "models": models,
        "table": pd.DataFrame(rows),
        "status": status,
        "warnings": warnings,
        "checks": base["checks"],
        "names": base["names"],
        "check_errors": base["errors"],
    }


# -- certify a tree (issue 18 point 3; engine/literati/certify.py) ---------------------------

#: The trees the page can certify: key -> what the selector shows.
CERTIFY_SOURCES = {
    "sklearn": "scikit-learn CART",
    "cart": "TreeLab CART",
    "greedy": "greedy shape tree",
}


def _fit_tree(source: str, X, y, settings: dict):
    """``(fitted model, name for the sentence)`` of ``source`` (a :data:`CERTIFY_SOURCES`
    key) on the training rows ``X``, ``y`` with the run's depth D (``settings["depth"]``),
    seeded; the greedy shape tree also with its K_max, λ, α and B_d."""
    depth = int(settings["depth"])
    if source == "sklearn":
        from sklearn.tree import DecisionTreeClassifier

        model = DecisionTreeClassifier(max_depth=depth, random_state=settings["seed"]).fit(X, y)
        return model, f"scikit-learn's depth-{depth} CART tree"
    if source == "cart":
        from engine.cart.estimator import CARTClassifier

        model = CARTClassifier(max_depth=depth, random_state=settings["seed"]).fit(X, y)
        return model, f"TreeLab's depth-{depth} CART tree"
    if source == "greedy":
        leaves = (
            settings["leaves"] if "leaves" in settings else parse_candidate_leaves(settings["bd"])
        )
        est = GreedyShapeTreeClassifier(
            max_depth=depth,
            max_breakpoints=settings["kmax"],
            split_penalty=settings["lam"],
            breakpoint_penalty=settings["alpha"],
            candidate_leaves=leaves,
            random_state=settings["seed"],
        )
        return est.fit(X, y), f"The greedy shape tree (K_max = {settings['kmax']})"
    raise ValueError(f"Unknown tree to certify {source!r}; choose one of {list(CERTIFY_SOURCES)}.")


def _tree_to_certify(source: str, meta: dict):
    """:func:`_fit_tree` on the run's training rows (``meta``: the run)."""
    return _fit_tree(source, meta["X"][meta["tr"]], meta["y"][meta["tr"]], meta)


def certificate_for(source: str, models: dict, meta: dict, bound: str = "main") -> Certificate:
    """Certify the page's ``source`` tree (:data:`CERTIFY_SOURCES`) against the finished
    search ``models[bound]`` (``"main"``, or ``"k1"`` for the K_max = 1 baseline): the
    tree is fitted on the run's training rows with depth D and compared on those rows
    with the search's proven lower bound and candidate space
    (:func:`engine.literati.certify.certify_bounds`).  Raises ``ValueError`` for an
    unknown ``source`` or ``bound``."""
    model, name = _tree_to_certify(source, meta)
    return certificate_of_model(model, name, models, meta, bound)


def certificate_of_check(checked: TreeCheck, models: dict, bound: str = "main") -> Certificate:
    """The certificate of a tree the job already checked (:func:`fit_baselines`'s
    ``checks[source][bound]``) against the finished search ``models[bound]``: only the
    search's bounds are read, no row (:func:`engine.literati.certify.certify_checked`).
    Raises ``ValueError`` for an unknown ``bound``."""
    if bound not in models:
        raise ValueError(f"No search {bound!r} in this run; choose one of {list(models)}.")
    search = models[bound]
    return certify_checked(
        checked,
        lower_bound=float(search.lower_bound_),
        upper_bound=float(search.upper_bound_),
        proven_optimal=bool(search.proven_optimal_),
    )


def certifiable(model) -> bool:
    """Whether ``model`` is one classification tree :func:`certificate_of_model` can read
    (:func:`engine.literati.certify.as_shape_tree`), e.g. a tree another page offers."""
    try:
        as_shape_tree(model)
    except (TypeError, ValueError):
        return False
    return True


def certificate_of_model(
    model, name: str, models: dict, meta: dict, bound: str = "main"
) -> Certificate:
    """:func:`certificate_for` of an already fitted tree ``model`` (named ``name`` in the
    sentence), e.g. one fitted on another page on the same dataset: its objective counts
    the run's training rows (each leaf relabelled by its majority there; the certificate
    notes when its own labels make more errors).  Raises ``ValueError`` for an unknown
    ``bound`` or a model that is not one classification tree over the run's features."""
    if bound not in models:
        raise ValueError(f"No search {bound!r} in this run; choose one of {list(models)}.")
    search = models[bound]
    leaves = meta["leaves"] if "leaves" in meta else parse_candidate_leaves(meta["bd"])
    return certify_bounds(
        model,
        meta["X"][meta["tr"]],
        meta["y"][meta["tr"]],
        lower_bound=float(search.lower_bound_),
        upper_bound=float(search.upper_bound_),
        proven_optimal=bool(search.proven_optimal_),
        max_depth=int(meta["depth"]),
        max_breakpoints=int(meta["kmax"]) if bound == "main" else 1,
        split_penalty=float(meta["lam"]),
        breakpoint_penalty=float(meta["alpha"]),
        candidate_leaves=leaves,
        candidate_scope=meta.get("scope", "state"),
        name=name,
    )


def certify_all_thresholds_steps(
    ctx,
    source: str,
    X,
    y,
    settings: dict,
    time_limit: float,
    max_breakpoints: int | None = None,
):
    """Job step generator (:class:`engine.jobs.Job`, either runner): certify the page's
    ``source`` tree (:data:`CERTIFY_SOURCES`) against a new search with every midpoint as
    a candidate (B_d = all, so every split that separates its rows is in the space).

    ``X`` (float64 ``(n, p)``), ``y`` (int64 codes): the run's training rows;
    ``settings``: the run's ``depth``, ``kmax``, ``lam``, ``alpha``, ``seed`` (and for
    the greedy tree ``leaves`` or ``bd``); ``max_breakpoints``: the search's K_max
    (default the run's); ``time_limit``: the search's seconds.  Steps: fitting the tree,
    checking its splits against the space (one pass over the rows), then one step per
    :data:`STEP_SECONDS` of AO* work.  Each search step yields ``{"phase": "search",
    "time", "time_limit", "lb", "ub", "gap", "certificate"}``: the certificate against
    the bound proven so far (a valid, weaker one while the search runs), so Stop keeps
    a certificate.  Returns ``{"phase": "done", "certificate", "proven", "seconds"}``.

    Raises ``ValueError`` (the job's ``error`` status, its message for the page) when
    the rows are too many for every threshold
    (:func:`engine.literati.certify.all_thresholds_feasible`) or ``source`` is unknown.
    """
    from engine.literati.estimator import LiteratiClassifier

    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y)
    if not all_thresholds_feasible(*X.shape):
        raise ValueError(
            f"{X.shape[0]:,} training rows x {X.shape[1]} features are too many to search "
            "with every threshold as a candidate here; certify against the run's candidates."
        )
    if source not in CERTIFY_SOURCES:
        raise ValueError(
            f"Unknown tree to certify {source!r}; choose one of {list(CERTIFY_SOURCES)}."
        )
    k = int(settings["kmax"]) if max_breakpoints is None else int(max_breakpoints)
    space = dict(
        max_depth=int(settings["depth"]),
        max_breakpoints=k,
        split_penalty=float(settings["lam"]),
        breakpoint_penalty=float(settings["alpha"]),
    )
    yield {"phase": "fitting", "what": CERTIFY_SOURCES[source]}
    model, name = _fit_tree(source, X, y, settings)
    yield {"phase": "checking", "what": name}
    checked = check_tree(model, X, y, candidate_leaves=None, name=name, **space)
    search = LiteratiClassifier(
        candidate_leaves=None, time_limit=float(time_limit), random_state=settings["seed"], **space
    ).start(X, y)
    while True:
        done = search.step(max_seconds=STEP_SECONDS)
        row = search.trace().iloc[-1]
        lb, ub = float(row["lb"]), float(row["ub"])
        yield {
            "phase": "search",
            "time": float(row["time"]),
            "time_limit": float(time_limit),
            "lb": lb,
            "ub": ub,
            "gap": ub - lb,
            "certificate": certify_checked(
                checked, lower_bound=lb, upper_bound=ub, proven_optimal=bool(search.proven)
            ),
        }
        if done:
            break
    fitted = search.finish()
    return {
        "phase": "done",
        "certificate": certify_checked(
            checked,
            lower_bound=float(fitted.lower_bound_),
            upper_bound=float(fitted.upper_bound_),
            proven_optimal=bool(fitted.proven_optimal_),
        ),
        "proven": bool(fitted.proven_optimal_),
        "seconds": float(fitted.trace_["time"].iloc[-1]) if len(fitted.trace_) else 0.0,
    }


def certificate_all_thresholds(
    source: str, meta: dict, time_limit: float, max_breakpoints: int | None = None
) -> Certificate:
    """:func:`certify_all_thresholds_steps` run here to its end (no job: a notebook, a
    test) on the run's training rows (``meta``: the run, with ``X``, ``y``, ``tr``).
    Raises ``ValueError`` as that generator."""
    from engine.job_context import JobContext, run_to_end

    steps = certify_all_thresholds_steps(
        JobContext(deadline=float("inf")),
        source,
        meta["X"][meta["tr"]],
        meta["y"][meta["tr"]],
        meta,
        time_limit,
        max_breakpoints,
    )
    return run_to_end(steps)["certificate"]
