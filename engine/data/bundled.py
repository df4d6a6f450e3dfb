"""The bundled datasets: :func:`bundled_datasets` (the catalog) and :func:`load_bundled`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from engine.data.errors import DataError, _q
from engine.data.parsing import MAX_BYTES, MAX_ROWS, ParseReport, load_csv


def _datasets_dir() -> Path:
    """The folder of the bundled CSVs: ``engine/data/datasets/`` in an installed package
    (``pip install .`` copies ``assets/datasets/`` there), else ``assets/datasets/`` of the
    source checkout this package runs from (an editable install or the repository)."""
    installed = Path(__file__).resolve().parent / "datasets"
    if (installed / "catalog.json").is_file():
        return installed
    return Path(__file__).resolve().parents[2] / "assets" / "datasets"


#: Folder of the bundled CSV files and their ``catalog.json``.
DATASETS_DIR: Path = _datasets_dir()


def bundled_datasets() -> dict[str, dict]:
    """The bundled datasets listed in ``DATASETS_DIR / 'catalog.json'``.

    Returns ``{name: entry}`` in catalog order; each entry is a copy of the catalog's dict
    (keys such as ``file``, ``target``, ``task``, ``title``, ``description``,
    ``source``).  Returns ``{}`` when the catalog file does not exist.

    Raises:
        DataError: the catalog exists but is not valid JSON of that form.
    """
    path = DATASETS_DIR / "catalog.json"
    if not path.is_file():
        return {}
    try:
        catalog = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(
            f"The dataset catalog {_q(path)} could not be read ({exc}). Reinstall the app's "
            "bundled data."
        ) from None
    if not isinstance(catalog, dict) or not all(
        isinstance(v, dict) and "file" in v for v in catalog.values()
    ):
        raise DataError(
            f"The dataset catalog {_q(path)} is not in the expected form "
            "({name: {'file': ..., 'target': ...}}). Reinstall the app's bundled data."
        )
    return {str(k): dict(v) for k, v in catalog.items()}


def load_bundled(name: str) -> tuple[pd.DataFrame, ParseReport, dict]:
    """Load a bundled dataset by its catalog name (e.g. ``'iris'``).

    Returns ``(df, report, entry)``: the parsed table and report as :func:`load_csv`
    gives them, and the catalog entry (dict with ``file``, ``target``, ``task``, ...).

    Raises:
        DataError: unknown name (the message lists the available names) or a missing or
            unreadable file.
    """
    catalog = bundled_datasets()
    if name not in catalog:
        available = ", ".join(sorted(catalog)) or "(none installed)"
        raise DataError(f"There is no bundled dataset {_q(name)}. Available datasets: {available}.")
    entry = catalog[name]
    path = DATASETS_DIR / str(entry["file"])
    if not path.is_file():
        raise DataError(
            f"The bundled dataset {_q(name)} is missing its file {_q(entry['file'])}. "
            "Reinstall the app's bundled data."
        )
    kwargs = {k: entry[k] for k in ("sep", "encoding", "decimal", "thousands") if k in entry}
    df, report = load_csv(
        path, max_rows=max(MAX_ROWS, 10**7), max_bytes=max(MAX_BYTES, 2**31), **kwargs
    )
    return df, report, entry
