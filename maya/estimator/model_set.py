"""`ModelSet`: the fitted models of one GPU, loaded once from a models directory.

A models directory is what `fit_models` writes: `<family>.cbm.gz`, `exact_durations.parquet` (unless
fitted with `exact_table=False`, as the shipped H200 models are) and `fit_report.json`. The ones
shipped with Maya live in `maya/estimator/data/<gpu>/models/`.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from maya.estimator.exact_table import EXACT_FILE, ExactTable
from maya.estimator.families import families_of
from maya.estimator.fit import import_catboost, load_model
from maya.estimator.fit_report import REPORT_FILE, FitReport
from maya.hardware import GpuSpec, load_gpu

DATA_DIR = Path(__file__).parent / "data"
"""Profiles and models shipped with Maya: `data/<gpu>/*.parquet`, `data/<gpu>/models/`."""

TRANSFER_SOURCE_GPU = "h200"
"""GPU whose models estimate catalog GPUs that have no profiles of their own."""


def packaged_models_dir(gpu: str) -> Path:
    """Where the models shipped for a catalog GPU live."""
    return DATA_DIR / load_gpu(gpu).key / "models"


def fit_command(gpu: str) -> str:
    """The `maya fit` command line that creates the shipped models of a GPU."""
    key = load_gpu(gpu).key
    return f"maya fit --profiles maya/estimator/data/{key} --out maya/estimator/data/{key}/models --no-exact-table"


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelSet:
    """Every fitted model of one GPU, plus its exact-signature table."""

    models_dir: Path
    """Directory the models were loaded from."""
    gpu: GpuSpec
    """GPU whose profiles trained the models."""
    report: FitReport
    """The fit report written beside the models."""
    models: dict[str, Any] = field(default_factory=dict)
    """Family -> loaded `catboost.CatBoostRegressor`."""
    exact: ExactTable
    """Measured durations of every profiled signature."""

    def families(self, ops: np.ndarray) -> np.ndarray:
        """Model family of each op: the family it was trained under, else its `OP_FAMILIES` family."""
        trained = {op: family for family, fit in self.report.families.items() for op in fit.ops}
        routed = families_of(ops)
        uniques, inverse = np.unique(np.asarray(ops, dtype=str), return_inverse=True)
        override = np.array([trained.get(op) for op in uniques] + [None], dtype=object)[:-1][inverse]
        return np.where(override != None, override, routed)  # noqa: E711 (elementwise test)


@functools.lru_cache(maxsize=8)
def load_model_set(models_dir: str | os.PathLike) -> ModelSet:
    """Load a models directory written by `fit_models` (cached per path).

    Raises:
        FileNotFoundError: the directory or its fit report is missing; the message names the path
            and the `maya fit` command that creates it.
    """
    path = Path(models_dir)
    if not (path / REPORT_FILE).exists():
        raise FileNotFoundError(
            f"no fitted models in {path} ({REPORT_FILE} is missing); create them with "
            f"`maya fit --profiles PROFILE_DIR --out {path}` (profiles come from `maya profile` on a GPU)"
        )
    catboost = import_catboost()
    report = FitReport.load(path)
    models = {family: load_model(catboost, path, family) for family in report.families}
    exact_path = path / EXACT_FILE
    exact = ExactTable.load(exact_path) if exact_path.exists() else ExactTable(
        keys=np.zeros(0, np.uint64), duration_us=np.zeros(0))
    return ModelSet(models_dir=path, gpu=load_gpu(report.gpu), report=report, models=models, exact=exact)


def resolve_models_dir(gpu: str, models_dir: str | os.PathLike | None) -> Path:
    """The models directory to use for `gpu`: the given one, the GPU's own, or the transfer source's.

    Raises:
        FileNotFoundError: neither the GPU nor the transfer source has shipped models.
    """
    if models_dir is not None:
        return Path(models_dir)
    own = packaged_models_dir(gpu)
    if (own / REPORT_FILE).exists():
        return own
    source = packaged_models_dir(TRANSFER_SOURCE_GPU)
    if (source / REPORT_FILE).exists():
        return source
    raise FileNotFoundError(
        f"no fitted models for {gpu!r}: neither {own} nor {source} has {REPORT_FILE}; "
        f"create them with `{fit_command(TRANSFER_SOURCE_GPU)}`, or pass models_dir="
    )
