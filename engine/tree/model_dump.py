"""Uploaded model dumps: :func:`detect_model_dump` tells an XGBoost JSON/UBJSON model from a
LightGBM ``dump_model()`` JSON, :func:`load_model_dump` converts either into a
:class:`~engine.tree.TreeEnsemble` (bounded by :class:`DumpLimits`; pickles and other
formats are refused with a message that says how to save the model instead)."""

from __future__ import annotations

from typing import Any

from engine.tree._dump_checks import DEFAULT_LIMITS, DumpLimits, check_size, parse_json
from engine.tree.ensemble import TreeEnsemble
from engine.tree.lightgbm_import import _from_dump as _lightgbm_from_dump
from engine.tree.xgboost_import import _from_model_json as _xgboost_from_json
from engine.tree.xgboost_import import _looks_like_json

#: What :func:`detect_model_dump` returns.
FORMATS = ("xgboost-json", "xgboost-ubj", "lightgbm-json")

_HOW_TO_SAVE = (
    "save an XGBoost model with booster.save_model('model.json') (or '.ubj'), a LightGBM "
    "model with json.dump(booster.dump_model(), open('model.json', 'w'))"
)
#: The file formats an upload may have, in words (the page says it under every error).
EXPECTED_FORMATS = (
    "XGBoost's model JSON or UBJSON (booster.save_model('model.json') or 'model.ubj') or "
    "LightGBM's booster.dump_model() written as JSON"
)


def _refuse_other_formats(data: bytes, filename: str) -> None:
    name = filename.lower()
    if data[:1] == b"\x80" or name.endswith((".pkl", ".pickle", ".joblib", ".sav")):
        raise ValueError(f"pickled models are never loaded (they can run code): {_HOW_TO_SAVE}")
    if data.lstrip()[:5] == b"tree\n" or data.lstrip()[:6] == b"tree\r\n":
        raise ValueError(
            "this is LightGBM's text model format (model.txt); upload the JSON of "
            "booster.dump_model() instead: json.dump(booster.dump_model(), "
            "open('model.json', 'w'))"
        )


def detect_model_dump(data: bytes, filename: str | None = None) -> tuple[str, Any]:
    """Which model dump ``data`` is, and its decoded content.

    Returns ``(format, decoded)`` with ``format`` in :data:`FORMATS`.  JSON is recognised
    by content (an object with ``learner`` is XGBoost's model JSON, one with ``tree_info``
    LightGBM's dump); a file that is not JSON and starts with ``{`` is read as XGBoost
    UBJSON.  Raises ``ValueError`` for pickles (by content or name), LightGBM's
    ``model.txt`` format, XGBoost's ``get_dump`` tree lists (they lack the objective and
    base score: use :func:`~engine.tree.from_xgboost` with those), malformed input and
    anything else, saying how to save a supported dump.
    """
    filename = filename or ""
    data = bytes(data)
    if not data.strip():
        raise ValueError(f"the model file is empty; expected {EXPECTED_FORMATS}")
    _refuse_other_formats(data, filename)
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"[") and _looks_like_json(data):
        try:
            decoded = parse_json(data, "model file")
        except ValueError as exc:
            raise ValueError(f"{exc}; expected {EXPECTED_FORMATS}") from None
        if isinstance(decoded, dict) and "learner" in decoded:
            return "xgboost-json", decoded
        if isinstance(decoded, dict) and "tree_info" in decoded:
            return "lightgbm-json", decoded
        if isinstance(decoded, list) and decoded and isinstance(decoded[0], (dict, str)):
            raise ValueError(
                "this looks like XGBoost's get_dump() tree list, which has no objective or "
                "base score; " + _HOW_TO_SAVE
            )
        raise ValueError(
            "this JSON is neither an XGBoost model (no 'learner') nor a LightGBM dump (no "
            "'tree_info'); " + _HOW_TO_SAVE
        )
    if data[:1] == b"{":
        from engine.tree._ubjson import decode_ubjson

        try:
            decoded = decode_ubjson(data)
        except ValueError as exc:
            raise ValueError(
                f"the model file is not valid JSON or UBJSON ({exc}); expected {EXPECTED_FORMATS}"
            ) from None
        if isinstance(decoded, dict) and "learner" in decoded:
            return "xgboost-ubj", decoded
        raise ValueError(
            "this UBJSON file is not an XGBoost model (no 'learner'); save it with "
            "booster.save_model('model.ubj')"
        )
    raise ValueError(f"the model file is not a supported model dump; {_HOW_TO_SAVE}")


def load_model_dump(
    data: bytes, filename: str | None = None, *, limits: DumpLimits = DEFAULT_LIMITS
) -> TreeEnsemble:
    """Convert an uploaded XGBoost or LightGBM model dump into a :class:`TreeEnsemble`.

    Parameters
    ----------
    data : bytes
        The file's bytes: XGBoost's model JSON (``save_model('model.json')``), its UBJSON
        (``save_model('model.ubj')``) or LightGBM's ``dump_model()`` JSON.
    filename : str, optional
        The uploaded file's name (only used to refuse pickles by name).
    limits : DumpLimits
        Size, tree, node and feature bounds, checked before and while parsing.

    Returns
    -------
    TreeEnsemble
        As :func:`~engine.tree.from_xgboost` / :func:`~engine.tree.from_lightgbm` (see
        their docstrings for the exact routing and raw-margin semantics).

    Raises
    ------
    ValueError
        Too large, not a supported dump (see :func:`detect_model_dump`), malformed or an
        unsupported model; the message names what is wrong and never holds a traceback.
    """
    check_size(bytes(data), limits, "model file")
    fmt, decoded = detect_model_dump(data, filename)
    if fmt.startswith("xgboost"):
        return _xgboost_from_json(decoded, limits, None, None)
    return _lightgbm_from_dump(decoded, limits, None, None)
