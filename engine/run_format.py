"""The run store's file format: an object tree <-> (JSON tree, numpy arrays) <-> zip bytes.

Data only, never a pickle: :func:`encode` / :func:`decode` walk a registry of known type
names (plain JSON values, numpy, pandas, the engine's records, fitted estimators);
:func:`pack` / :func:`unpack` write and read the zip of ``manifest.json`` and
``arrays/<i>.npy`` (``allow_pickle=False``).  :mod:`engine.store` keeps the archives on disk.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import math
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

#: The JSON key naming a registered type in the manifest tree.
TYPE_KEY = "__type__"


class RunStoreError(ValueError):
    """A run cannot be stored or reopened; the message says why and what to do."""


class InvalidRunId(RunStoreError):
    """The text is not a run id (a mistyped or truncated link)."""


class RunNotFound(RunStoreError):
    """No run under this id: never stored, expired, or evicted to make room."""


# ---------------------------------------------------------------------------------------
# the codec: object tree <-> (JSON tree, list of arrays)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Codec:
    name: str
    encode: Callable[[Any, _Encoder], dict]
    decode: Callable[[dict, _Decoder], Any]


#: type -> codec (exact type match), and name -> codec for decoding.
_BY_TYPE: dict[type, _Codec] = {}
_BY_NAME: dict[str, _Codec] = {}
#: "module:QualName" of estimator classes stored by their attributes (imported on decode).
_ESTIMATORS: dict[str, Callable[[Any], None] | None] = {}
#: "module:QualName" of dataclasses / named tuples registered lazily (imported on first use).
_LAZY_RECORDS = (
    "engine.tree.arrays:TreeArrays",
    "engine.literati.node_bounds:NodeBounds",
    "engine.literati.certify:TreeCheck",
    "engine.literati.certify:SplitCheck",
    "engine.tree.ensemble:TreeEnsemble",
    "engine.compare:CompareResult",
    "engine.cart.profile:StrategyResult",
    "engine.cart.profile:NodeHistogram",
    "engine.cart.profile:SplitProfile",
    "engine.cart.builder:GrownTree",
    "engine.cart.dics:DICSDictionary",
    "engine.cit.permutation:PermutationResult",
    "engine.partition.growth:GrowParams",
    "engine.partition.growth:PartitionTreeArrays",
    "engine.partition.explore:RowParts",
    "engine.treegrad.api:RankResult",
    "engine.treegrad.api:Curves",
    "engine.treegrad.explain:MethodParams",
    "engine.treegrad.explain:Explanation",
    "engine.treegrad.explain:CurveSet",
)
_lazy_done = False
_lazy_lock = threading.Lock()


def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _import_class(path: str) -> type:
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def register_type(cls: type, name: str, encode, decode) -> None:
    """Register a codec: ``encode(obj, encoder) -> dict`` (JSON values; call
    ``encoder(value)`` for nested values) and ``decode(dict, decoder) -> obj``.  Only
    registered names are decoded."""
    codec = _Codec(name, encode, decode)
    _BY_TYPE[cls] = codec
    _BY_NAME[name] = codec


def register_record(cls: type) -> None:
    """Register a dataclass or a ``NamedTuple`` stored field by field (its ``__init__``
    fields; fields with ``init=False`` are recomputed by the class).  Its name in the
    manifest is ``module:QualName``."""
    name = _class_path(cls)
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        names = list(cls._fields)
    else:
        raise TypeError(f"{name} is neither a dataclass nor a NamedTuple")

    def encode(obj, enc):
        return {"fields": {n: enc(getattr(obj, n), n) for n in names}}

    def decode(node, dec):
        return cls(**{n: dec(v) for n, v in node["fields"].items()})

    register_type(cls, name, encode, decode)


def register_estimator(path: str, after_decode: Callable[[Any], None] | None = None) -> None:
    """Allow the estimator class ``"module:QualName"`` to be stored by its attributes
    (``vars(estimator)``, each encoded by the registry); ``after_decode(estimator)``
    rebuilds what is not stored (e.g. a loss object)."""
    _ESTIMATORS[path] = after_decode


def _rebuild_gradient_boosting_loss(est) -> None:
    est._loss = est._get_loss(sample_weight=None)


for _path in (
    "engine.cart.estimator:CARTClassifier",
    "engine.cart.estimator:CARTRegressor",
    "engine.cit.tree:ConditionalInferenceTreeClassifier",
    "engine.cit.tree:ConditionalInferenceTreeRegressor",
    "engine.cit.forest:ConditionalInferenceForestClassifier",
    "engine.cit.forest:ConditionalInferenceForestRegressor",
    "engine.literati.estimator:LiteratiClassifier",
    "engine.literati.estimator:GreedyShapeTreeClassifier",
    "engine.partition.estimators:PartitionTreeClassifier",
    "engine.partition.estimators:PartitionTreeRegressor",
    "engine.partition.estimators:PartitionForestClassifier",
    "engine.partition.estimators:PartitionForestRegressor",
    "sklearn.tree._classes:DecisionTreeClassifier",
    "sklearn.tree._classes:DecisionTreeRegressor",
    "sklearn.tree._classes:ExtraTreeClassifier",
    "sklearn.tree._classes:ExtraTreeRegressor",
    "sklearn.ensemble._forest:RandomForestClassifier",
    "sklearn.ensemble._forest:RandomForestRegressor",
    "sklearn.ensemble._forest:ExtraTreesClassifier",
    "sklearn.ensemble._forest:ExtraTreesRegressor",
    "sklearn.dummy:DummyClassifier",
    "sklearn.dummy:DummyRegressor",
):
    register_estimator(_path)
for _path in (
    "sklearn.ensemble._gb:GradientBoostingClassifier",
    "sklearn.ensemble._gb:GradientBoostingRegressor",
):
    register_estimator(_path, _rebuild_gradient_boosting_loss)
#: attributes left out of a stored estimator (rebuilt by its ``after_decode``).
_SKIPPED_ATTRIBUTES = {"_loss"}


class _Encoder:
    """Walks an object tree into JSON values, collecting arrays in flat buffers
    (:attr:`arrays`)."""

    def __init__(self) -> None:
        self._groups: dict[str, tuple[int, list[int]]] = {}
        self._parts: list[list[np.ndarray]] = []
        self._path: list[str | int] = ["result"]

    def __call__(self, obj: Any, label: str | int | None = None) -> Any:
        if label is not None:
            self._path.append(label)
        try:
            return self._encode(obj)
        finally:
            if label is not None:
                self._path.pop()

    def where(self) -> str:
        return "".join(str(p) if i == 0 else f"[{p!r}]" for i, p in enumerate(self._path))

    def array_ref(self, array: np.ndarray) -> dict:
        """Append ``array`` to the flat buffer of its dtype (one ``.npy`` per dtype, not
        per array: a forest has thousands of small arrays) and return its reference
        ``{"ref": buffer, "offset": start, "shape": shape}``."""
        key = array.dtype.str if array.dtype.names is None else json.dumps(array.dtype.descr)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = (len(self._parts), [0])
            self._parts.append([])
        index, size = group
        flat = np.ascontiguousarray(array).reshape(-1)
        self._parts[index].append(flat)
        node = {TYPE_KEY: "ndarray", "ref": index, "offset": size[0], "shape": list(array.shape)}
        size[0] += flat.shape[0]
        return node

    @property
    def arrays(self) -> list[np.ndarray]:
        """The flat buffers, one per dtype, in reference order."""
        return [parts[0] if len(parts) == 1 else np.concatenate(parts) for parts in self._parts]

    def _encode(self, obj: Any) -> Any:
        kind = type(obj)
        if obj is None or kind in (bool, str, int):
            return obj
        if kind is float:
            if math.isfinite(obj):
                return obj
            return {TYPE_KEY: "float", "value": repr(obj)}  # 'nan', 'inf', '-inf'
        if kind is bytes:  # e.g. a row's ``tobytes()`` in a page's cache key
            return {**self.array_ref(np.frombuffer(obj, dtype=np.uint8)), TYPE_KEY: "bytes"}
        if kind is list:
            return [self(v, i) for i, v in enumerate(obj)]
        if kind is dict:
            if all(type(k) is str for k in obj) and TYPE_KEY not in obj:
                return {k: self(v, k) for k, v in obj.items()}
            return {
                TYPE_KEY: "dict",
                "items": [
                    [self(k), self(v, k if type(k) in (str, int) else str(k))]
                    for k, v in obj.items()
                ],
            }
        if kind is tuple:
            return {TYPE_KEY: "tuple", "items": [self(v, i) for i, v in enumerate(obj)]}
        if kind is np.ndarray:
            if obj.dtype.hasobject:
                return {
                    TYPE_KEY: "object_array",
                    "shape": list(obj.shape),
                    "items": [
                        self(v.item() if isinstance(v, np.generic) else v) for v in obj.ravel()
                    ],
                }
            return self.array_ref(obj)
        if isinstance(obj, np.generic) and not isinstance(obj, np.object_):
            return {**self.array_ref(np.asarray(obj)), TYPE_KEY: "numpy_scalar"}
        _register_lazy()
        codec = _BY_TYPE.get(kind)
        if codec is not None:
            return {TYPE_KEY: codec.name, **codec.encode(obj, self)}
        path = _class_path(kind)
        if path in _ESTIMATORS:
            state = {k: v for k, v in vars(obj).items() if k not in _SKIPPED_ATTRIBUTES}
            return {TYPE_KEY: "estimator", "class": path, "state": self(state)}
        raise RunStoreError(
            f"{self.where()}: cannot store a {path} (not a registered type); register it "
            "in engine.store (register_record / register_type / register_estimator) or keep "
            "its data (arrays, tables) instead"
        )


class _Decoder:
    """Rebuilds the object tree from JSON values and the stored arrays."""

    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays

    def array(self, node: dict) -> np.ndarray:
        """The array a reference node points to: a slice of its flat buffer, reshaped."""
        ref, offset, shape = node.get("ref"), node.get("offset"), node.get("shape")
        if (
            type(ref) is not int
            or not 0 <= ref < len(self.arrays)
            or type(offset) is not int
            or not isinstance(shape, list)
            or not all(type(n) is int and n >= 0 for n in shape)
        ):
            raise RunStoreError(f"the stored run refers to a missing array {ref!r}")
        count = math.prod(shape)
        buffer = self.arrays[ref]
        if not 0 <= offset <= offset + count <= buffer.shape[0]:
            raise RunStoreError(f"the stored run refers to a missing array {ref!r}")
        return buffer[offset : offset + count].reshape(shape)

    def __call__(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self(v) for v in node]
        if not isinstance(node, dict):
            return node
        name = node.get(TYPE_KEY)
        if name is None:
            return {k: self(v) for k, v in node.items()}
        if name == "float":
            return float(node["value"])
        if name == "dict":
            return {_hashable(self(k)): self(v) for k, v in node["items"]}
        if name == "tuple":
            return tuple(self(v) for v in node["items"])
        if name == "ndarray":
            return self.array(node)
        if name == "numpy_scalar":
            return self.array(node)[()]
        if name == "bytes":
            return self.array(node).tobytes()
        if name == "object_array":
            out = np.empty(len(node["items"]), dtype=object)
            out[:] = [self(v) for v in node["items"]]
            return out.reshape(node["shape"])
        if name == "estimator":
            return self._estimator(node)
        _register_lazy()
        codec = _BY_NAME.get(name)
        if codec is None:
            raise RunStoreError(f"the stored run names an unknown type {name!r}: refused")
        return codec.decode(node, self)

    def _estimator(self, node: dict) -> Any:
        path = node.get("class")
        if path not in _ESTIMATORS:
            raise RunStoreError(f"the stored run names an unknown estimator {path!r}: refused")
        try:
            cls = _import_class(path)
        except (ImportError, AttributeError) as exc:
            raise RunStoreError(
                f"the stored run needs {path}, which is not available ({exc})"
            ) from None
        est = cls.__new__(cls)
        est.__dict__.update(self(node["state"]))
        after = _ESTIMATORS[path]
        if after is not None:
            after(est)
        return est


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


# -- pandas ------------------------------------------------------------------------------


def _encode_values(values, enc: _Encoder) -> dict:
    """One column / index: numpy dtypes as arrays, extension dtypes (str, category, Int64,
    boolean, ...) by their dtype name and values."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cat = pd.Categorical(values)
        return {
            "kind": "category",
            "categories": enc(cat.categories),
            "codes": enc(np.asarray(cat.codes)),
            "ordered": bool(cat.ordered),
        }
    if isinstance(dtype, np.dtype):
        return {"kind": "numpy", "values": enc(np.asarray(values))}
    return {
        "kind": "extension",
        "dtype": str(dtype),
        "values": enc(np.asarray(values, dtype=object)),
    }


def _decode_values(node: dict, dec: _Decoder):
    kind = node["kind"]
    if kind == "category":
        return pd.Categorical.from_codes(
            dec(node["codes"]), categories=dec(node["categories"]), ordered=node["ordered"]
        )
    if kind == "numpy":
        return dec(node["values"])
    if kind == "extension":
        return pd.array(list(dec(node["values"])), dtype=node["dtype"])
    raise RunStoreError(f"the stored run has an unknown column kind {kind!r}")


def _encode_index(index: pd.Index, enc: _Encoder) -> dict:
    if type(index) is pd.RangeIndex:
        return {
            "range": [int(index.start), int(index.stop), int(index.step)],
            "name": enc(index.name),
        }
    if isinstance(index, pd.MultiIndex):
        return {
            "levels": [_encode_index(index.get_level_values(i), enc) for i in range(index.nlevels)],
            "names": [enc(n) for n in index.names],
        }
    return {"values": _encode_values(index, enc), "name": enc(index.name)}


def _decode_index(node: dict, dec: _Decoder) -> pd.Index:
    if "range" in node:
        return pd.RangeIndex(*node["range"], name=dec(node["name"]))
    if "levels" in node:
        levels = [_decode_index(level, dec) for level in node["levels"]]
        return pd.MultiIndex.from_arrays(levels, names=[dec(n) for n in node["names"]])
    return pd.Index(_decode_values(node["values"], dec), name=dec(node["name"]))


for _index_type in (pd.Index, pd.RangeIndex, pd.MultiIndex):
    register_type(_index_type, f"pandas.{_index_type.__name__}", _encode_index, _decode_index)
register_type(
    pd.Series,
    "pandas.Series",
    lambda obj, enc: {
        "name": enc(obj.name),
        "index": _encode_index(obj.index, enc),
        "values": _encode_values(obj.array, enc),
    },
    lambda node, dec: pd.Series(
        _decode_values(node["values"], dec),
        index=_decode_index(node["index"], dec),
        name=dec(node["name"]),
        copy=False,
    ),
)


def _encode_frame(frame: pd.DataFrame, enc: _Encoder) -> dict:
    return {
        "columns": _encode_index(frame.columns, enc),
        "index": _encode_index(frame.index, enc),
        "data": [_encode_values(frame.iloc[:, i].array, enc) for i in range(frame.shape[1])],
    }


def _decode_frame(node: dict, dec: _Decoder) -> pd.DataFrame:
    columns = _decode_index(node["columns"], dec)
    index = _decode_index(node["index"], dec)
    data = {i: _decode_values(col, dec) for i, col in enumerate(node["data"])}
    frame = pd.DataFrame(data, index=index, copy=False)
    frame.columns = columns
    return frame


register_type(pd.DataFrame, "pandas.DataFrame", _encode_frame, _decode_frame)
register_type(type(pd.NA), "pandas.NA", lambda obj, enc: {}, lambda node, dec: pd.NA)
register_type(type(pd.NaT), "pandas.NaT", lambda obj, enc: {}, lambda node, dec: pd.NaT)
register_type(
    pd.Timestamp,
    "pandas.Timestamp",
    lambda obj, enc: {"value": obj.isoformat()},
    lambda node, dec: pd.Timestamp(node["value"]),
)


# -- numpy and scikit-learn internals ----------------------------------------------------


def _encode_random_state(obj: np.random.RandomState, enc: _Encoder) -> dict:
    return {"state": enc(obj.get_state(legacy=True))}


def _decode_random_state(node: dict, dec: _Decoder) -> np.random.RandomState:
    state = np.random.RandomState(0)  # (seeding from the OS is slower; the state is set next)
    state.set_state(dec(node["state"]))
    return state


register_type(
    np.random.RandomState, "numpy.RandomState", _encode_random_state, _decode_random_state
)


def _encode_sklearn_tree(tree, enc: _Encoder) -> dict:
    state = tree.__getstate__()
    return {
        "n_features": int(tree.n_features),
        "n_classes": enc(np.asarray(tree.n_classes, dtype=np.intp)),
        "n_outputs": int(tree.n_outputs),
        "state": enc(state),
    }


def _decode_sklearn_tree(node: dict, dec: _Decoder):
    from sklearn.tree._tree import Tree

    tree = Tree(node["n_features"], dec(node["n_classes"]), node["n_outputs"])
    tree.__setstate__(dec(node["state"]))
    return tree


def _register_sklearn_tree() -> None:
    try:
        from sklearn.tree._tree import Tree
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return
    register_type(Tree, "sklearn.tree.Tree", _encode_sklearn_tree, _decode_sklearn_tree)


def _booster_params(est, enc) -> dict:
    """JSON-able constructor parameters of an XGBoost / LightGBM scikit-learn wrapper."""
    return {k: enc(v, k) for k, v in est.get_params().items() if _plain(v)}


def _plain(value) -> bool:
    return value is None or type(value) in (bool, int, float, str)


def _register_boosters() -> None:
    """XGBoost and LightGBM scikit-learn models, stored as their own text model formats
    (XGBoost's JSON model, LightGBM's model string), never as pickles; skipped when the
    library is not installed."""
    try:
        import xgboost
    except ImportError:
        xgboost = None
    if xgboost is not None:

        def encode_xgb(est, enc):
            raw = est.get_booster().save_raw(raw_format="json")
            return {"params": _booster_params(est, enc), "model": bytes(raw).decode("utf-8")}

        def decode_xgb(cls):
            def decode(node, dec):
                params = {k: dec(v) for k, v in node["params"].items()}
                est = cls(**params)
                est.load_model(bytearray(node["model"].encode("utf-8")))
                return est.set_params(**params)  # load_model resets some to None

            return decode

        for cls in (xgboost.XGBClassifier, xgboost.XGBRegressor):
            register_type(cls, _class_path(cls), encode_xgb, decode_xgb(cls))
    try:
        import lightgbm
    except ImportError:
        return

    def encode_lgb(est, enc):
        out = {"params": _booster_params(est, enc), "model": est.booster_.model_to_string()}
        if hasattr(est, "classes_"):
            out["classes"] = enc(np.asarray(est.classes_), "classes")
        return out

    def decode_lgb(cls):
        def decode(node, dec):
            from sklearn.preprocessing import LabelEncoder

            est = cls(**{k: dec(v) for k, v in node["params"].items()})
            booster = lightgbm.Booster(model_str=node["model"])
            est._Booster = booster
            est._n_features = est._n_features_in = booster.num_feature()
            est.fitted_ = True
            est._objective = booster.params.get("objective", est.objective)
            if "classes" in node:
                est._le = LabelEncoder().fit(dec(node["classes"]))
                est._classes = est._le.classes_
                est._n_classes = len(est._classes)
            return est

        return decode

    for cls in (lightgbm.LGBMClassifier, lightgbm.LGBMRegressor):
        register_type(cls, _class_path(cls), encode_lgb, decode_lgb(cls))


def _register_lazy() -> None:
    """Import and register the engine's record types and scikit-learn's ``Tree`` (on the
    first encode/decode, so that importing this module stays light)."""
    global _lazy_done
    if _lazy_done:
        return
    with _lazy_lock:
        if not _lazy_done:
            _register_sklearn_tree()
            _register_boosters()
            for path in _LAZY_RECORDS:
                try:
                    register_record(_import_class(path))
                except (ImportError, AttributeError):  # an optional part not installed:
                    continue  # its type stays unknown (refused, never guessed)
            _lazy_done = True


def encode(obj: Any) -> tuple[Any, list[np.ndarray]]:
    """``obj`` -> (JSON-able tree, list of numpy arrays it refers to by index).

    Raises :class:`RunStoreError` naming the place of a value of an unregistered type."""
    encoder = _Encoder()
    return encoder(obj), encoder.arrays


def decode(tree: Any, arrays: list[np.ndarray]) -> Any:
    """Inverse of :func:`encode`; builds only registered types (:class:`RunStoreError`
    otherwise)."""
    return _Decoder(arrays)(tree)


# ---------------------------------------------------------------------------------------
# archive: manifest + arrays in a zip, bytes only
# ---------------------------------------------------------------------------------------


def pack(manifest: dict, arrays: list[np.ndarray]) -> bytes:
    """A zip (stored, not compressed) of ``manifest.json`` and ``arrays/<i>.npy``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        text = json.dumps({**manifest, "n_arrays": len(arrays)}, allow_nan=False)
        archive.writestr("manifest.json", text)
        for i, array in enumerate(arrays):
            with archive.open(f"arrays/{i}.npy", "w", force_zip64=True) as handle:
                np.save(handle, array, allow_pickle=False)
    return buffer.getvalue()


def unpack(blob: bytes) -> tuple[dict, list[np.ndarray]]:
    """Inverse of :func:`pack`; arrays are read with ``allow_pickle=False``."""
    if not isinstance(blob, bytes | bytearray) or not blob.startswith(b"PK\x03\x04"):
        raise RunStoreError("the stored run is not a TreeLab run archive: refused")
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            n = manifest.get("n_arrays")
            if type(n) is not int or n < 0:
                raise RunStoreError("the stored run's manifest has no array count")
            arrays = []
            for i in range(n):
                with archive.open(f"arrays/{i}.npy") as handle:
                    arrays.append(np.load(io.BytesIO(handle.read()), allow_pickle=False))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as exc:
        raise RunStoreError(f"the stored run is damaged ({exc}); run it again") from exc
    except ValueError as exc:  # np.load refusing an object array
        if isinstance(exc, RunStoreError):
            raise
        raise RunStoreError(f"the stored run holds a non-data array ({exc}): refused") from exc
    return manifest, arrays


# ---------------------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------------------
