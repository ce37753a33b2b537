"""`GpuSpec`: one GPU model's specification, loaded once from `gpus/<key>.yaml`."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import yaml

_GPU_DIR = Path(__file__).parent / "gpus"


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuSpec:
    """What the emulator reports for a GPU and what the estimator's roofline uses."""

    key: str
    """Short catalog name used on the command line (`--gpu h200`)."""
    name: str
    """Device name exactly as `torch.cuda.get_device_name()` reports it."""
    compute_capability: tuple[int, int]
    """(major, minor), as `torch.cuda.get_device_capability()` reports it."""
    multiprocessor_count: int
    """Number of streaming multiprocessors."""
    total_memory_bytes: int
    """Device memory as `get_device_properties().total_memory` reports it, in bytes."""
    l2_cache_bytes: int
    """L2 cache size in bytes."""
    memory_bandwidth_bytes_per_s: float
    """Peak HBM bandwidth in bytes per second."""
    peak_flops_per_s: dict[str, float] = field(default_factory=dict)
    """Dense peak rate per dtype name (`bfloat16`, `float32`, `tfloat32`, ...), FLOP per second."""
    nvlink_bandwidth_bytes_per_s: float
    """NVLink bandwidth per GPU per direction, bytes per second."""
    pcie_bandwidth_bytes_per_s: float
    """Host link bandwidth per direction, bytes per second."""
    supports_bf16: bool
    """Whether `torch.cuda.is_bf16_supported()` answers True."""
    price_per_gpu_hour_usd: float
    """Default on-demand price per GPU-hour in US dollars, used when a cluster spec gives none."""

    def __post_init__(self) -> None:
        if self.total_memory_bytes <= 0:
            raise ValueError(f"{self.key}: total_memory_bytes={self.total_memory_bytes} must be > 0")
        if self.memory_bandwidth_bytes_per_s <= 0:
            raise ValueError(f"{self.key}: memory bandwidth {self.memory_bandwidth_bytes_per_s} must be > 0")
        if "bfloat16" not in self.peak_flops_per_s or "float32" not in self.peak_flops_per_s:
            raise ValueError(f"{self.key}: peak_tflops needs at least bfloat16 and float32")

    def peak_flops_for(self, dtype_name: str) -> float:
        """Peak FLOP/s for a dtype name such as `bfloat16`; the float8 formats (`float8_e4m3fn`,
        `float8_e5m2`, ...) take the catalog's `float8` rate; unknown dtypes use float32's rate."""
        if dtype_name.startswith("float8_") and "float8" in self.peak_flops_per_s:
            dtype_name = "float8"
        return self.peak_flops_per_s.get(dtype_name, self.peak_flops_per_s["float32"])


def available_gpus() -> list[str]:
    """Catalog keys of every GPU that has a spec file."""
    return sorted(p.stem for p in _GPU_DIR.glob("*.yaml"))


@functools.cache
def load_gpu(key: str) -> GpuSpec:
    """Load a GPU spec by catalog key (`h200`) or by its full device name.

    Raises:
        ValueError: the GPU is not in the catalog; the message lists the known keys.
    """
    wanted = key.lower().replace(" ", "")
    for path in _GPU_DIR.glob("*.yaml"):
        raw = yaml.safe_load(path.read_text())
        if wanted in (raw["key"], raw["name"].lower().replace(" ", "")):
            return _from_yaml(raw)
    raise ValueError(f"unknown GPU {key!r}; the catalog has: {', '.join(available_gpus())}")


def _from_yaml(raw: dict) -> GpuSpec:
    giga, tera = 1e9, 1e12
    return GpuSpec(
        key=raw["key"],
        name=raw["name"],
        compute_capability=tuple(raw["compute_capability"]),
        multiprocessor_count=int(raw["multiprocessor_count"]),
        total_memory_bytes=int(raw["total_memory_bytes"]),
        l2_cache_bytes=int(raw["l2_cache_bytes"]),
        memory_bandwidth_bytes_per_s=raw["memory_bandwidth_GBps"] * giga,
        peak_flops_per_s={k: v * tera for k, v in raw["peak_tflops"].items()},
        nvlink_bandwidth_bytes_per_s=raw["nvlink_bandwidth_GBps"] * giga,
        pcie_bandwidth_bytes_per_s=raw["pcie_bandwidth_GBps"] * giga,
        supports_bf16=bool(raw["supports_bf16"]),
        price_per_gpu_hour_usd=float(raw["price_per_gpu_hour_usd"]),
    )
