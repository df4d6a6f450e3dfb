"""Regenerate TreeLab's bundled datasets.

Run from anywhere::

    python assets/datasets/make_datasets.py

Every file is written next to this script: one CSV per dataset plus
``catalog.json``. The script never touches the network: the real-world sets
come from the files that ship inside scikit-learn (``load_*``, never
``fetch_*``) and inside the ``palmerpenguins`` package; the synthetic teaching
sets are drawn with fixed seeds. Running it twice produces byte-identical
files.

Conventions shared by all CSVs:

* comma-separated, UTF-8, ``\\n`` line endings, one header row;
* the target is always the last column (``catalog.json`` names it);
* missing values are empty cells (only ``penguins.csv`` has any);
* real-world data is written with shortest round-trip (``repr``) precision so
  reading it back gives exactly the floats scikit-learn ships;
* synthetic data is rounded to 6 significant digits *before* labels are
  computed from it, so the labels in the file agree exactly with the stated
  rule applied to the values in the file (label noise aside).

The synthetic sets use ``numpy.random.RandomState`` (as ``make_moons`` does)
rather than ``numpy.random.Generator`` because NumPy guarantees that the
legacy stream stays identical across versions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn import datasets as skd

OUT_DIR = Path(__file__).resolve().parent

# One fixed seed per synthetic dataset (documented in README.md).
SEEDS = {
    "moons": 0,
    "xor": 1,
    "sandwich": 2,
    "heteroscedastic": 3,
    "bimodal": 4,
}

LABEL_NOISE = 0.05  # fraction of labels flipped in xor and sandwich
SANDWICH_LO, SANDWICH_HI = 0.33, 0.67

SKLEARN_FLOAT_FORMAT = None  # pandas default = repr precision, lossless
SYNTHETIC_FLOAT_FORMAT = "%.6g"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def clean_name(name: str) -> str:
    """Make a column name safe for a CSV header / URL parameter.

    scikit-learn's names are kept as they are (spaces and parentheses
    included); only characters that would break a plain CSV header
    (commas, quotes, line breaks) are replaced.
    """
    out = str(name)
    for bad in (",", '"', "\n", "\r"):
        out = out.replace(bad, " ")
    return " ".join(out.split())


def sig6(a: np.ndarray) -> np.ndarray:
    """Round to 6 significant digits, exactly as ``'%.6g'`` prints it."""
    a = np.asarray(a, dtype=np.float64)
    return np.array([float(f"{v:.6g}") for v in a.ravel()], dtype=np.float64).reshape(a.shape)


def flip_labels(y: np.ndarray, rng: np.random.RandomState, frac: float) -> np.ndarray:
    """Flip exactly ``round(frac * n)`` randomly chosen 0/1 labels."""
    y = y.copy()
    n_flip = int(round(frac * len(y)))
    idx = rng.choice(len(y), size=n_flip, replace=False)
    y[idx] = 1 - y[idx]
    return y


def write_csv(df: pd.DataFrame, name: str, float_format: str | None) -> Path:
    path = OUT_DIR / f"{name}.csv"
    assert not any("," in c for c in df.columns), df.columns
    assert df.columns.is_unique, df.columns
    df.to_csv(
        path,
        index=False,
        encoding="utf-8",
        lineterminator="\n",
        na_rep="",
        float_format=float_format,
    )
    return path


def sklearn_frame(bunch, target_name: str, labels: bool) -> pd.DataFrame:
    """Features (cleaned names) + target as the last column."""
    X = bunch.frame.drop(columns="target")
    X.columns = [clean_name(c) for c in X.columns]
    y = np.asarray(bunch.target)
    if labels:
        names = np.asarray(bunch.target_names)
        y = names[y].astype(str)
    df = X.copy()
    df[target_name] = y
    return df


# --------------------------------------------------------------------------
# real-world datasets (bundled, no network)
# --------------------------------------------------------------------------
def make_iris() -> pd.DataFrame:
    return sklearn_frame(skd.load_iris(as_frame=True), "species", labels=True)


def make_wine() -> pd.DataFrame:
    return sklearn_frame(skd.load_wine(as_frame=True), "cultivar", labels=True)


def make_breast_cancer() -> pd.DataFrame:
    return sklearn_frame(skd.load_breast_cancer(as_frame=True), "diagnosis", labels=True)


def make_digits() -> pd.DataFrame:
    df = sklearn_frame(skd.load_digits(as_frame=True), "digit", labels=False)
    feats = df.columns[:-1]
    vals = df[feats].to_numpy()
    assert np.array_equal(vals, np.round(vals)), "digits pixels are not integer-valued"
    df[feats] = vals.astype(np.int64)
    df["digit"] = df["digit"].astype(np.int64)
    return df


def make_diabetes() -> pd.DataFrame:
    # scaled=True (the default): features as sklearn ships them, mean-centred
    # and scaled by std * sqrt(n_samples).
    return sklearn_frame(skd.load_diabetes(as_frame=True), "progression", labels=False)


def make_penguins() -> pd.DataFrame:
    import palmerpenguins

    df = palmerpenguins.load_penguins()
    cols = [c for c in df.columns if c != "species"] + ["species"]
    return df[cols].reset_index(drop=True)


# --------------------------------------------------------------------------
# synthetic teaching sets
# --------------------------------------------------------------------------
def make_moons() -> pd.DataFrame:
    X, y = skd.make_moons(n_samples=400, noise=0.25, random_state=SEEDS["moons"])
    X = sig6(X)
    return pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "label": y.astype(np.int64)})


def make_xor() -> pd.DataFrame:
    rng = np.random.RandomState(SEEDS["xor"])
    n = 400
    X = sig6(rng.uniform(-1.0, 1.0, size=(n, 2)))
    y = (np.sign(X[:, 0]) == np.sign(X[:, 1])).astype(np.int64)
    y = flip_labels(y, rng, LABEL_NOISE)
    return pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "label": y})


def make_sandwich() -> pd.DataFrame:
    rng = np.random.RandomState(SEEDS["sandwich"])
    n = 300
    x = sig6(rng.uniform(0.0, 1.0, size=n))
    noise = sig6(rng.uniform(0.0, 1.0, size=n))
    y = ((x >= SANDWICH_LO) & (x <= SANDWICH_HI)).astype(np.int64)
    y = flip_labels(y, rng, LABEL_NOISE)
    return pd.DataFrame({"x": x, "noise": noise, "label": y})


def make_heteroscedastic() -> pd.DataFrame:
    rng = np.random.RandomState(SEEDS["heteroscedastic"])
    n = 1000
    x = sig6(rng.uniform(0.0, 1.0, size=n))
    eps = rng.standard_normal(n)
    y = sig6(2.0 * x + (0.1 + 0.9 * x) * eps)
    return pd.DataFrame({"x": x, "y": y})


def make_bimodal() -> pd.DataFrame:
    rng = np.random.RandomState(SEEDS["bimodal"])
    n = 1000
    x = sig6(rng.uniform(0.0, 1.0, size=n))
    s = np.where(rng.uniform(0.0, 1.0, size=n) < 0.5, -1.0, 1.0)
    y = sig6(s * (1.0 + x) + rng.normal(0.0, 0.2, size=n))
    return pd.DataFrame({"x": x, "y": y})


# --------------------------------------------------------------------------
# catalogue (order matters: iris first, it is the app's default)
# --------------------------------------------------------------------------
SPECS = [
    {
        "name": "iris",
        "make": make_iris,
        "target": "species",
        "task": "classification",
        "title": "Iris",
        "description": "150 flowers x 4 sepal/petal measurements; predict the species "
        "(setosa, versicolor, virginica) - the classic first dataset, small enough "
        "to read every split of the tree.",
        "source": "scikit-learn load_iris (Fisher 1936, UCI)",
        "expected_rows": 150,
        "synthetic": False,
    },
    {
        "name": "wine",
        "make": make_wine,
        "target": "cultivar",
        "task": "classification",
        "title": "Wine",
        "description": "178 Italian wines x 13 chemical measurements; predict which of three "
        "cultivars (class_0, class_1, class_2) the grapes came from - a clean "
        "multi-class set where a few features do most of the work.",
        "source": "scikit-learn load_wine (Forina et al., UCI Wine)",
        "expected_rows": 178,
        "synthetic": False,
    },
    {
        "name": "breast_cancer",
        "make": make_breast_cancer,
        "target": "diagnosis",
        "task": "classification",
        "title": "Breast cancer (Wisconsin diagnostic)",
        "description": "569 tumour biopsies x 30 cell-nucleus features; predict malignant vs "
        "benign - a realistic binary task with many correlated features, good for "
        "comparing split criteria and feature importances.",
        "source": "scikit-learn load_breast_cancer (Street, Wolberg & Mangasarian 1993, "
        "UCI Breast Cancer Wisconsin (Diagnostic))",
        "expected_rows": 569,
        "synthetic": False,
    },
    {
        "name": "digits",
        "make": make_digits,
        "target": "digit",
        "task": "classification",
        "title": "Digits (8x8)",
        "description": "1797 handwritten digits x 64 pixel intensities (0-16, 8x8 grid); "
        "predict the digit 0-9 - a ten-class, higher-dimensional set where single "
        "trees struggle and ensembles shine.",
        "source": "scikit-learn load_digits (UCI Optical Recognition of Handwritten "
        "Digits, Alpaydin & Kaynak 1998)",
        "expected_rows": 1797,
        "synthetic": False,
    },
    {
        "name": "diabetes",
        "make": make_diabetes,
        "target": "progression",
        "task": "regression",
        "title": "Diabetes",
        "description": "442 patients x 10 baseline variables (age, sex, BMI, blood pressure, "
        "six blood serum measurements; scaled as scikit-learn ships them); predict "
        "a quantitative measure of disease progression one year later - the "
        "standard small regression set.",
        "source": "scikit-learn load_diabetes (Efron, Hastie, Johnstone & Tibshirani 2004, "
        "Least Angle Regression)",
        "expected_rows": 442,
        "synthetic": False,
    },
    {
        "name": "penguins",
        "make": make_penguins,
        "target": "species",
        "task": "classification",
        "title": "Palmer penguins",
        "description": "344 penguins x 7 features (island, bill and flipper size, body mass, "
        "sex, year) with some missing values; predict the species (Adelie, "
        "Chinstrap, Gentoo) - a friendly iris alternative with categorical "
        "features and missing data.",
        "source": "palmerpenguins package load_penguins (Horst, Hill & Gorman 2020; "
        "data Gorman, Williams & Fraser 2014, Palmer Station LTER), CC0",
        "expected_rows": 344,
        "synthetic": False,
    },
    {
        "name": "moons",
        "make": make_moons,
        "target": "label",
        "task": "classification",
        "title": "Two moons",
        "description": "400 points x 2 coordinates in two interleaving half-circles; predict "
        "the moon (0/1) - a teaching set for seeing how axis-aligned splits "
        "staircase around a curved boundary.",
        "source": f"synthetic: scikit-learn make_moons(n_samples=400, noise=0.25, "
        f"random_state={SEEDS['moons']})",
        "expected_rows": 400,
        "synthetic": True,
    },
    {
        "name": "xor",
        "make": make_xor,
        "target": "label",
        "task": "classification",
        "title": "XOR",
        "description": "400 points x 2 coordinates in [-1, 1]^2, label 1 when both share a "
        "sign (5% label noise); a teaching set showing why greedy splitting "
        "fails when no single first split helps.",
        "source": f"synthetic: uniform on [-1,1]^2, label = [sign(x1) == sign(x2)], "
        f"5% labels flipped, seed {SEEDS['xor']}",
        "expected_rows": 400,
        "synthetic": True,
    },
    {
        "name": "sandwich",
        "make": make_sandwich,
        "target": "label",
        "task": "classification",
        "title": "Sandwich",
        "description": "300 points x 2 features (x plus a pure-noise column); label 1 when x "
        "lies in [0.33, 0.67] (5% label noise) - a teaching set where one split "
        "is useless but two splits on x are perfect.",
        "source": f"synthetic: x, noise ~ U[0,1], label = [0.33 <= x <= 0.67], "
        f"5% labels flipped, seed {SEEDS['sandwich']}",
        "expected_rows": 300,
        "synthetic": True,
    },
    {
        "name": "heteroscedastic",
        "make": make_heteroscedastic,
        "target": "y",
        "task": "regression",
        "title": "Heteroscedastic",
        "description": "1000 points x 1 feature; y = 2x + (0.1 + 0.9x) * N(0, 1), so the "
        "noise grows with x - a teaching set for prediction intervals and "
        "leaf-wise spread.",
        "source": f"synthetic: x ~ U[0,1], y = 2x + (0.1 + 0.9x) eps, eps ~ N(0,1), "
        f"seed {SEEDS['heteroscedastic']}",
        "expected_rows": 1000,
        "synthetic": True,
    },
    {
        "name": "bimodal",
        "make": make_bimodal,
        "target": "y",
        "task": "regression",
        "title": "Bimodal",
        "description": "1000 points x 1 feature; y = +/-(1 + x) with probability 1/2 each "
        "plus N(0, 0.2^2) noise, so p(y|x) has two modes and the mean (near 0) "
        "describes no point - a teaching set for the limits of mean predictions.",
        "source": f"synthetic: x ~ U[0,1], y = s (1 + x) + N(0, 0.2^2), "
        f"s = +/-1 w.p. 1/2, seed {SEEDS['bimodal']}",
        "expected_rows": 1000,
        "synthetic": True,
    },
]


def main() -> None:
    catalog: dict[str, dict] = {}
    for spec in SPECS:
        df = spec["make"]()
        name, target = spec["name"], spec["target"]
        assert df.columns[-1] == target, (name, list(df.columns))
        assert len(df) == spec["expected_rows"], (name, len(df))
        fmt = SYNTHETIC_FLOAT_FORMAT if spec["synthetic"] else SKLEARN_FLOAT_FORMAT
        path = write_csv(df, name, fmt)
        catalog[name] = {
            "file": path.name,
            "target": target,
            "task": spec["task"],
            "title": spec["title"],
            "description": spec["description"],
            "source": spec["source"],
            "n_rows": int(len(df)),
            "n_features": int(df.shape[1] - 1),
        }
        print(f"{path.name:24s} {len(df):5d} rows {df.shape[1] - 1:3d} features  target={target}")

    (OUT_DIR / "catalog.json").write_text(
        json.dumps(catalog, indent=2, ensure_ascii=False) + "\n", encoding="utf-8", newline="\n"
    )
    print("catalog.json")


if __name__ == "__main__":
    main()
