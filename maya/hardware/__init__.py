"""Hardware catalog: GPU specifications loaded from the YAML files beside this module."""

from maya.hardware.gpu import GpuSpec, available_gpus, load_gpu

__all__ = ["GpuSpec", "available_gpus", "load_gpu"]
