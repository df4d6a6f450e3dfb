"""The run store: finished (or stopped) jobs' results kept on disk, keyed by a run id.

A page saves its result with :meth:`RunStore.save`, puts the returned run id in its URL, and
a reload (or the link opened in another browser, or after a server restart) reopens the run
with :meth:`RunStore.load` without refitting.

What is stored is **data only, never a pickle**: one zip archive per run holding
``manifest.json`` (a versioned JSON tree) and ``arrays/<i>.npy`` files written by
:func:`numpy.save` and read back with ``allow_pickle=False`` (one flat buffer per dtype;
the manifest gives each array's buffer, offset and shape).  The JSON tree describes the
result object with a registry of known type names (:func:`encode`, :func:`decode`): plain
JSON values, tuples, bytes, dicts with non-string keys, numpy arrays and scalars, pandas
DataFrames / Series / Index, the engine's result dataclasses, :class:`TreeArrays`,
:class:`TreeEnsemble` and fitted estimators (ours and scikit-learn's trees, forests and
boosting, by their attributes and arrays).  Decoding builds only registered names; anything
else is refused with :class:`RunStoreError`.

The archive is kept in a :class:`diskcache.Cache` (SQLite index plus files) with a size
limit, least-recently-used eviction and an expiry per run.  diskcache pickles Python values
by default; :class:`DataOnlyDisk` accepts only ``str`` keys and ``bytes`` values, and refuses
to read a pickled entry.

Limits (environment variables, read when the store is first opened; docs/deploy.md):
``TREELAB_RUN_STORE`` (folder), ``TREELAB_RUN_STORE_SIZE`` (total size, default 2GiB),
``TREELAB_RUN_MAX_SIZE`` (one run, default 256MiB), ``TREELAB_RUN_EXPIRY_DAYS`` (default 7).
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.run_format import (  # noqa: F401  (the store's public names, kept here)
    TYPE_KEY,
    InvalidRunId,
    RunNotFound,
    RunStoreError,
    decode,
    encode,
    pack,
    register_estimator,
    register_record,
    register_type,
    unpack,
)

#: Version tag of a stored run's manifest (checked on load).
FORMAT = "treelab.run/1"
#: Bytes of randomness in a run id (``secrets.token_urlsafe``: 22 URL-safe characters).
RUN_ID_BYTES = 16
_RUN_ID = re.compile(r"[A-Za-z0-9_-]{22}")
#: Defaults of the limits (overridden by the environment variables below).
DEFAULT_SIZE = "2GiB"
DEFAULT_MAX_RUN = "256MiB"
DEFAULT_EXPIRY_DAYS = 7.0
ENV_DIRECTORY = "TREELAB_RUN_STORE"
ENV_SIZE = "TREELAB_RUN_STORE_SIZE"
ENV_MAX_RUN = "TREELAB_RUN_MAX_SIZE"
ENV_EXPIRY = "TREELAB_RUN_EXPIRY_DAYS"


def _disk_class():
    from diskcache import Disk
    from diskcache.core import MODE_BINARY, MODE_RAW

    class DataOnlyDisk(Disk):
        """A diskcache ``Disk`` that stores ``str`` keys and ``bytes`` values as they are
        and never pickles nor unpickles (diskcache's default pickles other values)."""

        def put(self, key):
            if type(key) is not str:
                raise TypeError(f"run store keys are str, got {type(key).__name__}")
            return super().put(key)

        def get(self, key, raw):
            if not raw:
                raise RunStoreError("the run store holds a pickled key: refused")
            return super().get(key, raw)

        def store(self, value, read, key=None):
            if type(value) is not bytes:
                raise TypeError(f"run store values are bytes, got {type(value).__name__}")
            return super().store(value, read, key=key)

        def fetch(self, mode, filename, value, read):
            if mode not in (MODE_RAW, MODE_BINARY):
                raise RunStoreError(
                    f"the run store holds an entry of diskcache mode {mode} (not raw bytes; "
                    "4 is a pickle): refused"
                )
            data = super().fetch(mode, filename, value, read)
            if type(data) is not bytes:
                raise RunStoreError("the run store holds a non-bytes entry: refused")
            return data

    return DataOnlyDisk


@functools.lru_cache(maxsize=1)
def _versions() -> tuple:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for name in ("treelab", "numpy", "pandas", "scikit-learn"):
        try:
            out.append((name, version(name)))
        except PackageNotFoundError:
            out.append((name, None))
    return tuple(out)


def library_versions() -> dict:
    """Versions of the libraries whose objects a run holds (written into each manifest)."""
    return dict(_versions())


def check_run_id(run_id: Any) -> str:
    """``run_id`` if it has the form of a run id (22 URL-safe characters), else
    :class:`InvalidRunId` with a message for the user."""
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        shown = repr(run_id) if len(repr(run_id)) <= 40 else repr(run_id)[:37] + "..."
        raise InvalidRunId(
            f"{shown} is not a run id (22 letters, digits, '-' or '_'); check that the link "
            "was copied completely, or run the job again"
        )
    return run_id


def new_run_id() -> str:
    """A fresh unguessable run id (``secrets.token_urlsafe``, 128 bits)."""
    return secrets.token_urlsafe(RUN_ID_BYTES)


@dataclass(frozen=True)
class StoredRun:
    """A run read back from the store: ``result`` is the decoded object tree, ``meta``
    the JSON-able description the page saved with it (dataset, parameters...),
    ``created`` / ``expires`` Unix times (seconds), ``size`` bytes of the archive,
    ``versions`` the libraries' versions it was saved with."""

    run_id: str
    kind: str
    result: Any
    meta: dict
    created: float
    expires: float | None
    size: int
    versions: dict


@dataclass(frozen=True)
class StoreLimits:
    """The store's bounds, for the pages to show: bytes and seconds."""

    directory: str
    size_limit: int
    max_run_bytes: int
    expire_seconds: float | None

    def describe(self) -> str:
        """'Runs are kept for 7 days; the store holds 2.0 GiB (256.0 MiB per run) and
        forgets the least recently opened runs first.'"""
        from engine.cluster import format_bytes

        if self.expire_seconds is None:
            kept = "Runs are kept until the store is full"
        else:
            days = self.expire_seconds / 86400
            kept = f"Runs are kept for {days:g} day{'s' if days != 1 else ''}"
        return (
            f"{kept}; the store holds {format_bytes(self.size_limit)} "
            f"({format_bytes(self.max_run_bytes)} per run) and forgets the least recently "
            "opened runs first."
        )


def default_directory() -> Path:
    """``$TREELAB_RUN_STORE``, else ``$XDG_CACHE_HOME/treelab/runs`` (``~/.cache``)."""
    if os.environ.get(ENV_DIRECTORY):
        return Path(os.environ[ENV_DIRECTORY])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "treelab" / "runs"


def limits_from_environment() -> dict:
    """``size_limit``, ``max_run_bytes``, ``expire_seconds`` from the environment variables
    (ValueError naming the variable and the bad value)."""
    from engine.cluster import parse_bytes

    out = {}
    for key, env, default in (
        ("size_limit", ENV_SIZE, DEFAULT_SIZE),
        ("max_run_bytes", ENV_MAX_RUN, DEFAULT_MAX_RUN),
    ):
        text = os.environ.get(env, "").strip() or default
        try:
            out[key] = parse_bytes(text)
        except ValueError as exc:
            raise ValueError(f"{env}: {exc}") from None
    text = os.environ.get(ENV_EXPIRY, "").strip()
    try:
        days = float(text) if text else DEFAULT_EXPIRY_DAYS
    except ValueError:
        raise ValueError(
            f"{ENV_EXPIRY} must be a number of days (e.g. 7, 0.5), got {text!r}"
        ) from None
    if not days > 0:
        raise ValueError(f"{ENV_EXPIRY} must be positive, got {text!r}")
    out["expire_seconds"] = days * 86400.0
    return out


class RunStore:
    """Results of finished or stopped jobs on disk, keyed by unguessable run ids.

    Parameters
    ----------
    directory : path, optional
        The store's folder (created); default :func:`default_directory`.  Two stores on one
        folder (two server processes, or one after a restart) see the same runs.
    size_limit : int, optional
        Bytes on disk (index plus archives); the least recently saved or opened runs are
        evicted past it.  Default ``$TREELAB_RUN_STORE_SIZE`` or 2 GiB.
    max_run_bytes : int, optional
        Largest archive of one run; default ``$TREELAB_RUN_MAX_SIZE`` or 256 MiB (at most
        half the size limit).
    expire_seconds : float or None, optional
        A run is forgotten this long after it was saved; default
        ``$TREELAB_RUN_EXPIRY_DAYS`` or 7 days; ``None``: never (only eviction).

    Raises
    ------
    ValueError
        On a non-positive limit or a bad environment variable.
    """

    def __init__(
        self,
        directory: str | os.PathLike | None = None,
        *,
        size_limit: int | None = None,
        max_run_bytes: int | None = None,
        expire_seconds: float | None | str = "environment",
    ) -> None:
        from diskcache import Cache

        env = limits_from_environment()
        self.directory = Path(directory) if directory is not None else default_directory()
        self.size_limit = int(size_limit if size_limit is not None else env["size_limit"])
        max_run = int(max_run_bytes if max_run_bytes is not None else env["max_run_bytes"])
        if expire_seconds == "environment":
            expire_seconds = env["expire_seconds"]
        if self.size_limit <= 0 or max_run <= 0:
            raise ValueError("size_limit and max_run_bytes must be positive")
        if expire_seconds is not None and not expire_seconds > 0:
            raise ValueError(f"expire_seconds must be positive or None, got {expire_seconds!r}")
        self.max_run_bytes = min(max_run, self.size_limit // 2)
        self.expire_seconds = None if expire_seconds is None else float(expire_seconds)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._cache = Cache(
            str(self.directory),
            size_limit=self.size_limit,
            eviction_policy="least-recently-used",
            disk=_disk_class(),
            # diskcache culls 10 entries at a time (made for many small items); runs are few
            # and large, so :meth:`_evict` removes one least recently used run at a time
            cull_limit=0,
        )

    # -- limits -------------------------------------------------------------------------

    @property
    def limits(self) -> StoreLimits:
        return StoreLimits(
            str(self.directory), self.size_limit, self.max_run_bytes, self.expire_seconds
        )

    def volume(self) -> int:
        """Bytes the store uses on disk now (index plus archives)."""
        return int(self._cache.volume())

    def __len__(self) -> int:
        return len(self._cache)

    def __contains__(self, run_id: object) -> bool:
        return isinstance(run_id, str) and bool(_RUN_ID.fullmatch(run_id)) and run_id in self._cache

    # -- save / load --------------------------------------------------------------------

    def save(self, kind: str, result: Any, *, meta: dict | None = None) -> str:
        """Store ``result`` (any tree of registered types) and return its new run id.

        ``kind`` names what it is (a page or job: 'compare', 'cit.fit'...); ``meta`` is a
        JSON-able dict the page wants back (dataset, target, parameters, seed).

        Raises
        ------
        RunStoreError
            When a value has no registered type (the message names where it is), or the
            run's archive is larger than ``max_run_bytes``.
        """
        tree, arrays = encode(result)
        meta_tree, meta_arrays = encode(dict(meta or {}))
        if meta_arrays:
            raise RunStoreError("meta must hold JSON values only (no arrays)")
        run_id = new_run_id()
        now = time.time()
        manifest = {
            "format": FORMAT,
            "versions": library_versions(),
            "run_id": run_id,
            "kind": str(kind),
            "created": now,
            "expires": None if self.expire_seconds is None else now + self.expire_seconds,
            "meta": meta_tree,
            "result": tree,
        }
        blob = pack(manifest, arrays)
        if len(blob) > self.max_run_bytes:
            from engine.cluster import format_bytes

            raise RunStoreError(
                f"this result takes {format_bytes(len(blob))}, more than the run store keeps "
                f"per run ({format_bytes(self.max_run_bytes)}, {ENV_MAX_RUN}); it stays in "
                "this session only -- download what you need"
            )
        self._cache.expire()
        self._cache.set(run_id, blob, expire=self.expire_seconds)
        self._evict(keep=run_id)
        return run_id

    def _evict(self, keep: str) -> None:
        """Delete least recently used runs, one at a time, until the store fits its size
        limit (``access_time`` is diskcache's column for its least-recently-used policy,
        updated by every :meth:`load`)."""
        while self._cache.volume() > self.size_limit:
            rows = self._cache._sql(
                "SELECT key FROM Cache WHERE key != ? ORDER BY access_time LIMIT 1", (keep,)
            ).fetchall()
            if not rows:
                break
            self._cache.delete(rows[0][0])

    def load(self, run_id: str) -> StoredRun:
        """The run saved under ``run_id`` (opening it counts as a use for eviction).

        Raises
        ------
        InvalidRunId
            When ``run_id`` does not have the form of a run id.
        RunNotFound
            When no run is stored under it (expired, evicted or never saved).
        RunStoreError
            When the stored entry is damaged, of an older format, or not data.
        """
        check_run_id(run_id)
        blob = self._cache.get(run_id, default=None)
        if blob is None:
            raise RunNotFound(
                f"run {run_id} is not in the store: it expired, was evicted to make room "
                "for newer runs, or was never saved here; run the job again"
            )
        manifest, arrays = unpack(blob)
        if manifest.get("format") != FORMAT:
            raise RunStoreError(
                f"run {run_id} was stored in format {manifest.get('format')!r}, this "
                f"version reads {FORMAT!r}; run the job again"
            )
        try:
            result = decode(manifest["result"], arrays)
            meta = decode(manifest["meta"], [])
        except RunStoreError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
            saved = manifest.get("versions", {})
            raise RunStoreError(
                f"run {run_id} cannot be rebuilt by this version ({type(exc).__name__}: {exc}; "
                f"saved with {saved}, running {library_versions()}); run the job again"
            ) from exc
        return StoredRun(
            run_id=run_id,
            kind=manifest["kind"],
            result=result,
            meta=meta,
            created=float(manifest["created"]),
            expires=manifest["expires"],
            size=len(blob),
            versions=dict(manifest.get("versions", {})),
        )

    def delete(self, run_id: str) -> bool:
        """Forget a run; True if it was there."""
        check_run_id(run_id)
        return bool(self._cache.delete(run_id))

    def close(self) -> None:
        self._cache.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_default: RunStore | None = None
_default_lock = threading.Lock()


def default_store() -> RunStore:
    """The server's run store (one per process, limits from the environment)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = RunStore()
        return _default
