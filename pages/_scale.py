"""Large uploads (issue 20 point 4): the sidebar's seeded stratified subsample and each
page's time estimate from the measured cost curves (:mod:`engine.scale`).

The subsample is the user's choice, never automatic: above :data:`SUBSAMPLE_FROM_ROWS`
rows the sidebar offers it (*Large data*), and a page whose method would exceed its
budget on all rows says so and offers it with one button (:func:`scale_notice`).  While
it is on, :func:`apply_subsample` cuts the prepared dataset in
:func:`pages._shared.current_dataset`, so every page, caption
(:func:`pages._shared.dataset_caption`), run meta (``subsample``, :func:`subsample_meta`),
report, stored run and snippet carries "on a seeded stratified subsample of N of M rows
(seed S)"; the full data stays loaded, and turning it off uses every row again.  Its size
and seed are in the link (``sub``, ``sub_seed``).
"""

from __future__ import annotations

import streamlit as st

from engine.data import MAX_ROWS, subsample_dataset
from engine.scale import (
    CURVES,
    PAGE_BUDGET,
    depth_factor,
    estimate_seconds,
    format_seconds,
    rows_within,
    rows_within_seconds,
)
from pages._links import LinkParam, read_param

#: The sidebar offers a subsample for tables with more rows than this.
SUBSAMPLE_FROM_ROWS = 20_000
#: The subsample's rows unless the user or a page's offer says otherwise.
DEFAULT_SUBSAMPLE_ROWS = 20_000
#: Fewest rows a subsample may have.
MIN_SUBSAMPLE_ROWS = 1_000
#: Session-state keys of the sidebar's widgets.
ON, ROWS, SEED = "subsample", "subsample_rows", "subsample_seed"


def subsample_link() -> tuple[LinkParam, ...]:
    """The sidebar's subsample settings in the URL: ``sub`` (rows; present while the
    subsample is on) and ``sub_seed``."""
    return (
        LinkParam(
            ROWS,
            "sub",
            int,
            DEFAULT_SUBSAMPLE_ROWS,
            low=MIN_SUBSAMPLE_ROWS,
            high=MAX_ROWS,
            doc="rows of the seeded stratified subsample (absent: all rows)",
        ),
        LinkParam(SEED, "sub_seed", int, 0, low=0, high=2**31 - 1, doc="the subsample's seed"),
    )


def _mirror(name: str, value, default) -> None:
    if value is None or value == default:
        st.query_params.pop(name, None)
    elif st.query_params.get(name) != str(value):
        st.query_params[name] = str(value)


def sidebar_subsample(container, n_rows: int) -> None:
    """The sidebar's *Large data* section for a table of ``n_rows`` rows: drawn when it has
    more than :data:`SUBSAMPLE_FROM_ROWS` rows (or a link turned the subsample on)."""
    rows_param, seed_param = subsample_link()
    if ON not in st.session_state and read_param(rows_param):
        st.session_state[ON] = True
    read_param(seed_param)
    if n_rows <= SUBSAMPLE_FROM_ROWS and not st.session_state.get(ON):
        return
    container.header("Large data")
    on = container.toggle(
        "Use a seeded stratified subsample",
        key=ON,
        help="Every page then works on the subsample's rows (stratified by class, or by "
        "target quantile bins for regression) and every result says so. The full data "
        "stays loaded: turn this off to use all rows again.",
    )
    rows = container.number_input(
        "Rows in the subsample",
        min_value=MIN_SUBSAMPLE_ROWS,
        max_value=MAX_ROWS,
        value=None if ROWS in st.session_state else DEFAULT_SUBSAMPLE_ROWS,
        step=1_000,
        key=ROWS,
        disabled=not on,
    )
    seed = container.number_input(
        "Subsample seed",
        min_value=0,
        max_value=2**31 - 1,
        value=None if SEED in st.session_state else 0,
        step=1,
        key=SEED,
        disabled=not on,
    )
    if on:
        kept = min(int(rows), n_rows)
        container.caption(f"{kept:,} of {n_rows:,} rows (seed {int(seed)}).")
    else:
        container.caption(
            f"All {n_rows:,} rows are used; the pages say when a method would take longer "
            "than its budget on them."
        )
    _mirror("sub", int(rows) if on else None, None)
    _mirror("sub_seed", int(seed) if on else None, 0)


def apply_subsample(ds):
    """``ds`` cut to the sidebar's subsample while it is on and smaller than ``ds``; else
    ``ds``.  Raises ValueError as :func:`engine.data.subsample_dataset`."""
    if not st.session_state.get(ON):
        return ds
    rows = int(st.session_state.get(ROWS) or DEFAULT_SUBSAMPLE_ROWS)
    if rows >= ds.n_samples:
        return ds
    return subsample_dataset(ds, rows, int(st.session_state.get(SEED) or 0))


def subsample_note(ds) -> str | None:
    """'on a seeded stratified subsample of N of M rows (seed S)' for a subsampled ``ds``,
    else ``None``."""
    sample = getattr(ds, "subsample", None)
    return None if sample is None else sample.note()


def subsample_meta(ds) -> dict:
    """``{'subsample': {...}}`` for a run's meta on a subsampled ``ds`` (rows, of, seed,
    strata), else ``{}``; :class:`pages._jobs.ResultPanel` writes its note under the
    results and into the report."""
    sample = getattr(ds, "subsample", None)
    return {} if sample is None else {"subsample": sample.as_dict()}


def meta_note(meta: dict) -> str | None:
    """The subsample note of a run's ``meta`` (:func:`subsample_meta`), or ``None``."""
    sample = (meta or {}).get("subsample")
    if not sample:
        return None
    return (
        f"on a seeded stratified subsample of {int(sample['rows']):,} of "
        f"{int(sample['of']):,} rows (seed {int(sample['seed'])})"
    )


def _use_subsample(rows: int) -> None:
    st.session_state[ON] = True
    st.session_state[ROWS] = int(rows)


def scale_notice(
    ds,
    method: str | None = None,
    *,
    budget: float,
    what: str,
    repeats: float = 1,
    key: str,
    container=None,
    lower_bound: bool = False,
    fit_share: float = 1.0,
    seconds_at=None,
    includes: str | None = None,
) -> float:
    """Say how long ``what`` takes on ``ds`` and offer a subsample when it would exceed
    ``budget`` seconds (the page's job budget).

    ``method`` names a cost curve of :mod:`engine.scale`; ``repeats`` multiplies it (e.g.
    the trees of a forest).  Nothing is drawn for an estimate under
    :data:`engine.scale.PAGE_BUDGET`.  Above the budget, an info box names the estimate
    and a button (``key``) turns the sidebar's subsample on at the size that fits
    (:func:`engine.scale.rows_within`).  ``lower_bound``: the curve is a faster method's,
    so the text says "at least".  Returns the estimate in seconds.  ``fit_share``: the
    share of the rows the method runs on (the training rows of a train/test split, e.g.
    0.75): the estimate is at that many rows, and the offered subsample is sized so that
    its share fits the budget.

    A job timed by several curves (Compare: folds x models plus refits) passes
    ``seconds_at`` instead of ``method``: rows of the whole table -> seconds of the whole
    job (:func:`engine.compare_estimate.estimate_comparison`), and ``includes``, what that counts
    in words (said with the estimate); the subsample is then the most rows whose
    ``seconds_at`` fits (:func:`engine.scale.rows_within_seconds`).
    """
    where = container or st
    full = getattr(ds, "subsample", None)
    share = min(1.0, max(float(fit_share), 1e-9))
    n_fit = max(1, round(ds.n_samples * share))
    if seconds_at is None:
        if method is None:
            raise ValueError("scale_notice needs a cost curve (method) or seconds_at.")

        def seconds_at(rows: int) -> float:
            fit_rows = max(1, round(rows * share))
            return repeats * estimate_seconds(method, fit_rows, ds.n_features)

        curve = CURVES[method]
        basis = (
            f"from the measured cost curve ({curve.what}, benchmark machine; docs/benchmarks.md)"
        )
    else:
        basis = "from the measured cost curves (benchmark machine; docs/benchmarks.md)"
    if includes:
        basis += f": {includes}"
    seconds = seconds_at(ds.n_samples)
    if seconds < PAGE_BUDGET:
        return seconds
    at = f"{ds.n_samples:,} rows x {ds.n_features} features"
    if n_fit < ds.n_samples:
        at = f"{n_fit:,} training rows (of {ds.n_samples:,}) x {ds.n_features} features"
    takes = "takes at least" if lower_bound else "takes"
    if seconds <= budget or full is not None:
        where.caption(
            f"{what[:1].upper() + what[1:]} {takes} {format_seconds(seconds)} at {at} {basis}; "
            "it runs as a background job with progress."
        )
        return seconds
    if method is not None:
        fit_rows = rows_within(method, budget / repeats, ds.n_features)
        rows = min(max(1_000, int(fit_rows / share) // 1_000 * 1_000), ds.n_samples)
    else:
        rows = rows_within_seconds(seconds_at, budget, ds.n_samples)
    if rows >= ds.n_samples:  # no subsample smaller than the table
        where.info(
            f"**{what[:1].upper() + what[1:]} would take {'at least ' if lower_bound else ''}"
            f"{format_seconds(seconds)} at {at}** {basis}, more than its time budget of "
            f"{budget:.0f} s, and the smallest subsample offered (1,000 rows) is not "
            "smaller than the table. Raise the budget or choose lighter settings; the job "
            "stops at its budget and keeps what finished."
        )
        return seconds
    where.info(
        f"**{what[:1].upper() + what[1:]} would take {'at least ' if lower_bound else ''}"
        f"{format_seconds(seconds)} at {at}** {basis}, "
        f"more than its time budget of {budget:.0f} s. A seeded stratified subsample of "
        f"{rows:,} rows {takes} {format_seconds(seconds_at(rows))}; "
        "every result on it says so, and the full data stays loaded (turn it off under "
        "*Large data* in the sidebar)."
    )
    where.button(
        f"Use a subsample of {rows:,} rows",
        key=key,
        on_click=_use_subsample,
        args=(rows,),
    )
    return seconds


def _table_speed(ds) -> float:
    """:func:`engine.compare_estimate.measured_speed` of ``ds``, once per table and
    session (a probe fit of a few milliseconds to a fraction of a second)."""
    from engine.compare_estimate import measured_speed
    from pages._shared import dataset_digest

    if getattr(ds, "X", None) is None:  # no rows to probe (a description of a table)
        return 1.0
    held = st.session_state.setdefault("_table_speed", {})
    key = dataset_digest(ds)
    if key not in held:
        try:
            held[key] = measured_speed(ds.X, ds.y, ds.task)
        except ValueError:  # a table scikit-learn refuses: the curves as measured
            held[key] = 1.0
    return held[key]


def comparison_notice(ds, models, n_splits: int, prefix: str, what: str | None = None, refit=True):
    """The :func:`scale_notice` arguments (``cv_job_panel``'s ``estimate``) of a
    cross-validation job of ``models`` (as :func:`engine.compare.plan_comparison` takes
    them) with ``n_splits`` folds on ``ds``: the whole job, every model on every fold's
    training rows plus each refit on all rows (``refit`` as the plan's: True, False or
    ``"trees"``) (:func:`engine.compare_estimate.estimate_comparison`), said with what it
    counts.  ``None``
    when there is nothing to estimate (no model, or settings the plan will refuse with
    its own message).  Its ``settings`` (a text naming the models, their parameters, the
    folds, the refits and the table) is not :func:`scale_notice`'s: ``cv_job_panel`` keeps
    it with a run and, once a run of the same settings finished within its budget, says
    how long that took instead of the estimate."""
    from engine.compare_estimate import estimate_comparison
    from pages._shared import dataset_digest

    if not models:
        return None
    options = dict(
        n_splits=int(n_splits),
        task=ds.task,
        n_classes=int(getattr(ds, "n_classes", 0) or 2),
        speed=_table_speed(ds),
        refit=refit,
    )
    try:
        here = estimate_comparison(models, ds.n_samples, ds.n_features, **options)
    except ValueError:
        return None
    n_models = len(here.models) + len(here.without_curve)
    table = (ds.n_samples, ds.n_features) if getattr(ds, "X", None) is None else dataset_digest(ds)
    return dict(
        what=what or f"the cross-validation ({n_splits} folds x {n_models} models)",
        seconds_at=lambda rows: estimate_comparison(models, rows, ds.n_features, **options).seconds,
        includes=here.includes(),
        key=f"{prefix}_subsample_btn",
        lower_bound=bool(here.without_curve),
        settings=repr((models, int(n_splits), refit, table)),
    )


def fit_within_budget(ds, kind: str, depth: int, n_trees: int, fit_share: float = 1.0) -> bool:
    """Whether a page may fit a scikit-learn ``kind`` model ('tree', 'forest', 'boosting')
    of ``depth`` (0: grown out) and ``n_trees`` trees on ``ds`` while it draws: yes when
    the estimate (the scikit-learn tree curve, per tree and scaled by depth / 8, a grown-out
    tree counted as depth 16, at the ``fit_share`` of the rows it is fitted on) is under
    :data:`engine.scale.PAGE_BUDGET`; else the page says so, offers the subsample
    (:func:`scale_notice`) and a checkbox to fit on every row anyway (the page waits
    while it fits), and this returns that checkbox's value."""
    trees = 1 if kind == "tree" else max(1, int(n_trees))
    seconds = scale_notice(
        ds,
        "sklearn_tree",
        budget=PAGE_BUDGET,
        what=f"fitting the {kind} model while the page draws",
        repeats=trees * depth_factor(depth),
        key="tg_subsample_btn",
        fit_share=fit_share,
    )
    if seconds < PAGE_BUDGET:
        return True
    return st.checkbox(
        f"Fit on these {ds.n_samples:,} rows anyway ({format_seconds(seconds)}; the page waits)",
        key="tg_fit_anyway",
    )
