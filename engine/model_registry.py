"""The Compare page's model registry: which models it can cross-validate, and their
parameter widgets (docs/spec.md section 6).

Each method registers a :class:`ModelSpec` (a label, the tasks it handles, its tunable
parameters and a factory returning an unfitted scikit-learn-compatible estimator) with
:func:`register_model`.  A parameter's widget range and choices are read from the
estimator's scikit-learn constraint table (``_parameter_constraints``) by
:func:`param_spec`, and :func:`register_model` refuses a spec whose widget could send a value
that table refuses (:func:`check_model_spec`), so the page and the estimators cannot
disagree.  The scikit-learn, XGBoost and LightGBM entries are in
:mod:`engine.baseline_models`, Literati's in :mod:`engine.literati.registration`, the other
methods' in their packages; :func:`available_models` imports them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    Options,
    make_constraint,
)

TASKS = ("classification", "regression")


@dataclass(frozen=True)
class ParamSpec:
    """One tunable parameter shown on the Compare page.

    ``kind`` is 'int', 'float', 'int_or_none' (0 in the widget means ``None``) or 'choice'.
    """

    name: str
    default: Any
    kind: str = "int"
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    help: str = ""

    def validate(self, value):
        """Return ``value`` cast to the parameter's type; ValueError naming it if invalid."""
        if self.kind == "choice":
            if value not in self.choices:
                raise ValueError(f"{self.name} must be one of {list(self.choices)}, got {value!r}")
            return value
        if self.kind == "int_or_none" and (value is None or value == 0):
            return None
        try:
            cast = float(value) if self.kind == "float" else int(value)
        except (TypeError, ValueError):
            raise ValueError(f"{self.name} must be a number, got {value!r}") from None
        if self.low is not None and cast < self.low or self.high is not None and cast > self.high:
            raise ValueError(f"{self.name} must be between {self.low} and {self.high}, got {cast}")
        return cast


@dataclass(frozen=True)
class ModelSpec:
    """A model the Compare page can cross-validate.

    ``build(task, random_state, **params)`` returns an unfitted estimator with
    ``fit``/``predict`` (and ``predict_proba`` for classification).  ``tree_figure``: the
    fitted estimator is one tree with a ``tree_`` the pages draw (a single tree, not an
    ensemble); :func:`engine.compare.plan_comparison` with ``refit="trees"`` refits only
    these models on all rows.
    """

    key: str
    label: str
    build: Callable[..., Any]
    tasks: tuple[str, ...] = TASKS
    params: tuple[ParamSpec, ...] = ()
    description: str = ""
    family: str = "scikit-learn"
    tree_figure: bool = False

    def make(self, task: str, random_state: int = 0, **params):
        """Build the estimator with validated parameters (defaults for missing ones)."""
        if task not in self.tasks:
            raise ValueError(
                f"{self.label} does not support {task}; it supports {list(self.tasks)}"
            )
        known = {p.name: p for p in self.params}
        unknown = set(params) - set(known)
        if unknown:
            raise ValueError(
                f"{self.label}: unknown parameter(s) {sorted(unknown)}; known: {sorted(known)}"
            )
        values = {p.name: p.validate(params.get(p.name, p.default)) for p in self.params}
        return self.build(task, random_state, **values)


def _table_entry(estimator, name: str) -> list:
    """The constraints of parameter ``name`` in ``estimator``'s (class or instance)
    scikit-learn table, as constraint objects; ValueError when there is none."""
    table = getattr(estimator, "_parameter_constraints", None)
    label = getattr(estimator, "__name__", type(estimator).__name__)
    if not isinstance(table, dict) or name not in table:
        raise ValueError(f"{label} has no constraint for a parameter {name!r}")
    return [make_constraint(c) for c in table[name]]


def _closed_bound(interval: Interval, side: str):
    """The interval's bound on ``side`` as a value a widget can take (an open integer
    bound moved by one), or None when it is infinite or open on the reals."""
    value = interval.left if side == "left" else interval.right
    if value is None or not np.isfinite(value):
        return None
    closed = interval.closed in ("both", side)
    if closed:
        return value
    if interval.type is Integral:
        return value + 1 if side == "left" else value - 1
    return None


def param_spec(
    estimator,
    name: str,
    default,
    *,
    kind: str | None = None,
    low=None,
    high=None,
    choices: tuple | None = None,
    help: str = "",
) -> ParamSpec:
    """A :class:`ParamSpec` whose kind, range and choices come from the constraint table
    (``_parameter_constraints``, scikit-learn's format) of ``estimator`` (class or
    instance).

    ``kind`` (default: inferred) is 'choice' when the table lists string options and no
    interval, else 'int' / 'float' from its interval's type, 'int_or_none' when None is
    allowed too (the widget's 0 means None); give 'int_or_none' for a parameter whose 0
    the model's build function maps to a default, or 'choice' to offer only the options
    of a table that also has an interval.  ``low`` / ``high`` default to the interval's
    bounds and, when given (a widget needs a finite range), must lie inside it;
    ``choices`` default to the table's options (sorted) and, when given, must be among
    them.  Raises ValueError when a bound cannot be derived or is outside the table.
    """
    constraints = _table_entry(estimator, name)
    label = getattr(estimator, "__name__", type(estimator).__name__)
    intervals = [c for c in constraints if isinstance(c, Interval)]
    options = [o for c in constraints if isinstance(c, Options) for o in c.options]
    allows_none = any(c.is_satisfied_by(None) for c in constraints)
    if kind is None:
        if options and not intervals:
            kind = "choice"
        elif intervals:
            integral = any(c.type is Integral for c in intervals)
            kind = ("int_or_none" if allows_none else "int") if integral else "float"
        else:
            raise ValueError(f"{label}.{name}: the table has no interval or options")
    if kind == "choice":
        if choices is None:
            choices = tuple(sorted(options))
        refused = [c for c in choices if not any(k.is_satisfied_by(c) for k in constraints)]
        if refused:
            raise ValueError(f"{label}.{name}: choices {refused} are not allowed by its table")
        return ParamSpec(name, default, "choice", choices=tuple(choices), help=help)
    want = Integral if kind in ("int", "int_or_none") else None
    interval = next((c for c in intervals if want is None or c.type is want), None)
    if interval is None:
        raise ValueError(f"{label}.{name}: the table has no interval for a {kind!r} widget")
    cast = float if kind == "float" else int
    bounds = {}
    for side, given in (("left", low), ("right", high)):
        if given is None:
            given = _closed_bound(interval, side)
            if given is None:
                raise ValueError(
                    f"{label}.{name}: the table's interval {interval} has no finite closed "
                    f"{side} bound; give {'low' if side == 'left' else 'high'} for the widget"
                )
        elif not interval.is_satisfied_by(cast(given)) and not (
            kind == "int_or_none" and side == "left" and given == 0
        ):
            raise ValueError(f"{label}.{name}: widget bound {given!r} is outside {interval}")
        bounds[side] = cast(given)
    if kind == "int_or_none":
        bounds["left"] = 0  # the widget's 0 stands for None
    return ParamSpec(name, default, kind, bounds["left"], bounds["right"], help=help)


def _probe_values(param: ParamSpec) -> list:
    """The values a widget of ``param`` can send at its edges: every choice, or the
    default, the range's ends (and 1, the first value after the None of 'int_or_none')."""
    if param.kind == "choice":
        return list(param.choices)
    values = [param.default, param.low, param.high]
    if param.kind == "int_or_none" and param.high is not None and param.high >= 1:
        values.append(1)
    return [v for v in values if v is not None]


def check_model_spec(spec: ModelSpec) -> None:
    """Check that the Compare page's widgets for ``spec`` cannot send a value its
    estimators' constraint tables refuse.

    For every task and parameter, each value of :func:`_probe_values` is cast by the
    :class:`ParamSpec`, turned into an estimator by ``spec.build`` and checked with the
    estimator's ``_validate_params`` (scikit-learn's constraint table; estimators without
    one are not checked).  A value the build function itself refuses with a ValueError
    (e.g. a strategy that needs class labels, for regression) is the build's deliberate
    refusal and is skipped.  Raises ValueError listing every disagreement, a ParamSpec
    whose default is outside its range, or a parameter no built estimator has.
    """
    problems = []
    for param in spec.params:
        known = False
        for value in _probe_values(param):
            try:
                cast = param.validate(value)
            except ValueError as exc:
                problems.append(f"{param.name}={value!r}: {exc}")
                continue
            for task in spec.tasks:
                try:
                    est = spec.make(task, 0, **{param.name: cast})
                except InvalidParameterError as exc:
                    problems.append(f"{param.name}={cast!r} ({task}): {exc}")
                    continue
                except ValueError:
                    continue  # the build function's own refusal for this task
                known = known or param.name in est.get_params(deep=False)
                if not hasattr(est, "_parameter_constraints"):
                    continue
                try:
                    est._validate_params()
                except InvalidParameterError as exc:
                    problems.append(f"{param.name}={cast!r} ({task}): {exc}")
        if not known and not any(p.startswith(f"{param.name}=") for p in problems):
            problems.append(f"{param.name}: no estimator built by {spec.key!r} has it")
    if problems:
        raise ValueError(
            f"Model {spec.key!r}: its parameter widgets disagree with its estimators' "
            "constraint tables: " + "; ".join(problems)
        )


REGISTRY: dict[str, ModelSpec] = {}


def register_model(spec: ModelSpec) -> ModelSpec:
    """Add ``spec`` to the registry (a later registration with the same key replaces it).

    Raises ValueError (from :func:`check_model_spec`) when a parameter widget of ``spec``
    could send a value its estimators' constraint tables refuse.
    """
    check_model_spec(spec)
    REGISTRY[spec.key] = spec
    return spec


#: Modules that register models, in the order their models are listed: the baselines and
#: Literati first (:mod:`engine.compare` imports them), then the method packages.
REGISTERING_MODULES = ("engine.baseline_models", "engine.literati.registration")
#: Method packages that register models, in the order their models are listed.
METHOD_MODULES = (
    "engine.cit",
    "engine.literati",
    "engine.partition",
    "engine.treegrad",
    "engine.cart",
)


def load_methods() -> None:
    """Import every method package so that its models are registered (``import engine`` is
    lazy, so nothing else guarantees it)."""
    import importlib

    for module in REGISTERING_MODULES + METHOD_MODULES:
        importlib.import_module(module)


def available_models(task: str) -> list[ModelSpec]:
    """The registered models that handle ``task``, in registration order."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    load_methods()
    return [s for s in REGISTRY.values() if task in s.tasks]
