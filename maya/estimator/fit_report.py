"""`FitReport`: what `fit_models` trained, on which data, and how well each model did on held-out ops.

Written next to the models as `fit_report.json`; the estimator reads it to learn each model's
feature list, the ops it was trained on, and the GPU its training data came from.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPORT_FILE = "fit_report.json"
"""File name of the report inside a models directory."""

TARGET = "log(duration_us / base_us)"
"""What every model predicts: the log of measured time over the op's base time
(`features.target_base_us`): its roofline time on the profiled GPU, and for cuDNN RNNs, whose time
steps run one after another, their cells (steps x layers x directions) in microseconds. Tree models
cannot extrapolate beyond the sizes they were trained on; a ratio to such a base stays bounded, so a
3-billion-parameter optimizer step is predicted from the achieved bandwidth of smaller ones instead
of saturating at the largest time seen."""


def to_target(duration_us, base_us):
    """Measured times as the models learn them (`TARGET`)."""
    return np.log(np.asarray(duration_us, dtype=np.float64) / base_us)


def from_target(prediction, base_us):
    """A model's predictions (`TARGET`) as times in microseconds."""
    return np.exp(np.asarray(prediction, dtype=np.float64)) * base_us


@dataclass(frozen=True, kw_only=True, slots=True)
class FamilyFit:
    """One family's model: training data and held-out accuracy."""

    family: str
    """Op family the model estimates (`gemm`)."""
    rows: int
    """Profile rows of this family (train plus held out)."""
    signatures: int
    """Distinct op signatures among those rows."""
    holdout_rows: int
    """Rows held out for evaluation (whole signatures, never split across train and held out)."""
    holdout_signatures: int
    """Distinct signatures held out."""
    features: tuple[str, ...]
    """Feature columns, in the order the model takes them."""
    categorical_features: tuple[str, ...]
    """Features declared categorical to CatBoost."""
    ops: tuple[str, ...]
    """Op names in the training data; the estimator routes these ops to this model."""
    mape: float | None
    """Held-out mean absolute percentage error, as a fraction (0.1 = 10%); None without a held-out set."""
    median_ape: float | None
    """Held-out median absolute percentage error, as a fraction."""
    time_weighted_error: float | None
    """Held-out sum(|predicted - measured|) / sum(measured): error weighted by time, as a fraction."""
    roofline_time_weighted_error: float | None
    """The roofline model's time-weighted error on the same held-out rows, for comparison."""
    depth: int | None = None
    """CatBoost tree depth of the model (None in reports written before it was recorded)."""
    loss_function: str | None = None
    """CatBoost loss the model was fitted with (`RMSE`, `MAE`)."""
    iterations: int | None = None
    """Boosting iterations of the model."""

    def __post_init__(self) -> None:
        if not 0 <= self.holdout_rows <= self.rows:
            raise ValueError(f"{self.family}: holdout_rows={self.holdout_rows} not in [0, rows={self.rows}]")


@dataclass(frozen=True, kw_only=True, slots=True)
class FitReport:
    """Every family model trained by one `fit_models` call."""

    gpu: str
    """Catalog key of the GPU whose profiles trained the models (`h200`)."""
    gpu_name: str
    """`gpu_name` as the profiles recorded it."""
    torch_versions: tuple[str, ...]
    """Distinct torch versions the profiles were recorded with."""
    catboost_version: str
    """CatBoost version that trained the models."""
    seed: int
    """Seed of the held-out split and of CatBoost."""
    holdout_fraction: float
    """Fraction of each family's signatures held out for evaluation."""
    iterations: int
    """CatBoost boosting iterations per model."""
    thread_count: int
    """CatBoost threads (fixed, so that training is deterministic)."""
    families: dict[str, FamilyFit] = field(default_factory=dict)
    target: str = TARGET
    """What the models predict (`TARGET`); models fitted for another target are refused."""
    """Family name -> its model's report."""

    def __post_init__(self) -> None:
        if self.target != TARGET:
            raise ValueError(f"models predict {self.target!r}, this Maya expects {TARGET!r}; refit them with `maya fit`")
        if not 0.0 <= self.holdout_fraction < 1.0:
            raise ValueError(f"holdout_fraction={self.holdout_fraction} must be in [0, 1)")

    def save(self, models_dir: str | os.PathLike) -> Path:
        """Write `<models_dir>/fit_report.json` and return its path."""
        path = Path(models_dir) / REPORT_FILE
        path.write_text(json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\n")
        return path

    @classmethod
    def load(cls, models_dir: str | os.PathLike) -> FitReport:
        """Read `<models_dir>/fit_report.json`."""
        raw = json.loads((Path(models_dir) / REPORT_FILE).read_text())
        raw.setdefault("target", "log(duration_us)")  # reports from before the target was recorded
        families = {
            name: FamilyFit(**{k: tuple(v) if isinstance(v, list) else v for k, v in fit.items()})
            for name, fit in raw.pop("families").items()
        }
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}, families=families)
