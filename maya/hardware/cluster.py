"""`ClusterSpec`: the GPUs, nodes and links of a training cluster, loaded from `clusters/<name>.yaml`.

Ranks are placed the way torchrun places them: rank r runs on node r // gpus_per_node. GPUs whose
ranks share r // nvlink_domain_size talk over NVLink; every other pair goes through the NICs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from maya.hardware.gpu import GpuSpec, available_gpus, load_gpu

_CLUSTER_DIR = Path(__file__).parent / "clusters"
_BITS_PER_BYTE = 8


@dataclass(frozen=True, kw_only=True, slots=True)
class ClusterSpec:
    """A homogeneous GPU cluster: identical nodes joined by a non-blocking network fabric."""

    name: str
    """Preset name (`dgx-h100`) or the YAML file's stem."""
    gpu: str
    """GPU catalog key (`h200`), see `maya.hardware.gpu.load_gpu`."""
    nodes: int
    """Number of nodes."""
    gpus_per_node: int
    """GPUs per node; rank r runs on node r // gpus_per_node."""
    nvlink_domain_size: int
    """GPUs that share one NVLink/NVSwitch domain (8 on a DGX, 72 on a GB200 NVL72 rack)."""
    nics_per_node: int
    """Network interfaces per node used by NCCL for inter-node traffic."""
    nic_bandwidth_bytes_per_s: float
    """Bandwidth of one NIC per direction, bytes per second (YAML key `nic_bandwidth_Gbps`)."""
    nic_latency_us: float
    """One inter-node hop's latency (NIC + switch), microseconds."""
    nvlink_bandwidth_bytes_per_s: float
    """NVLink bandwidth per GPU per direction, bytes per second (default: the GPU catalog's)."""
    nvlink_latency_us: float
    """One NVLink hop's latency, microseconds."""
    price_per_gpu_hour_usd: float
    """Price per GPU-hour in US dollars (default: the GPU catalog's on-demand price)."""

    def __post_init__(self) -> None:
        for field_name in ("nodes", "gpus_per_node", "nvlink_domain_size", "nics_per_node"):
            value = getattr(self, field_name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"cluster {self.name!r}: {field_name}={value!r} must be an integer >= 1")
        domain, per_node = self.nvlink_domain_size, self.gpus_per_node
        if domain % per_node != 0 and per_node % domain != 0:
            raise ValueError(
                f"cluster {self.name!r}: nvlink_domain_size={domain} must divide or be a multiple of "
                f"gpus_per_node={per_node}"
            )
        if domain > per_node and (self.nodes * per_node) % domain != 0:
            raise ValueError(
                f"cluster {self.name!r}: nodes={self.nodes} * gpus_per_node={per_node} = "
                f"{self.nodes * per_node} GPUs is not a whole number of nvlink_domain_size={domain} domains"
            )
        for field_name in ("nic_bandwidth_bytes_per_s", "nvlink_bandwidth_bytes_per_s"):
            if not getattr(self, field_name) > 0:
                raise ValueError(f"cluster {self.name!r}: {field_name}={getattr(self, field_name)} must be > 0")
        for field_name in ("nic_latency_us", "nvlink_latency_us", "price_per_gpu_hour_usd"):
            if not getattr(self, field_name) >= 0:
                raise ValueError(f"cluster {self.name!r}: {field_name}={getattr(self, field_name)} must be >= 0")

    @property
    def world_size(self) -> int:
        """Total number of GPUs: nodes * gpus_per_node."""
        return self.nodes * self.gpus_per_node

    @property
    def gpu_spec(self) -> GpuSpec:
        """The catalog entry of this cluster's GPU."""
        return load_gpu(self.gpu)

    def node_of(self, rank: int) -> int:
        """The node that global rank `rank` runs on (torchrun placement)."""
        return rank // self.gpus_per_node

    def nvlink_domain_of(self, rank: int) -> int:
        """The NVLink domain of global rank `rank`; ranks in one domain talk over NVLink."""
        return rank // self.nvlink_domain_size

    def check_world_size(self, world_size: int) -> None:
        """Raise ValueError when a job of `world_size` ranks does not fit on this cluster.

        A job fits when it has at most `world_size` GPUs and, if it spans more than one node, fills
        whole nodes: torchrun starts the same number of ranks on every node, and ranks are placed
        r // gpus_per_node.
        """
        if world_size > self.world_size:
            raise ValueError(
                f"world_size={world_size} > nodes={self.nodes} * gpus_per_node={self.gpus_per_node} "
                f"= {self.world_size} GPUs of cluster {self.name!r}"
            )
        if world_size > self.gpus_per_node and world_size % self.gpus_per_node != 0:
            raise ValueError(
                f"world_size={world_size} spans more than one node but is not a multiple of "
                f"gpus_per_node={self.gpus_per_node} of cluster {self.name!r} ({world_size} % "
                f"{self.gpus_per_node} = {world_size % self.gpus_per_node}); torchrun starts the same "
                "number of ranks on every node: use a cluster whose gpus_per_node is the job's nproc_per_node"
            )

    def cost_per_hour_usd(self) -> float:
        """What the whole cluster costs per hour, US dollars."""
        return self.world_size * self.price_per_gpu_hour_usd


def available_clusters() -> list[str]:
    """Names of the cluster presets shipped in `maya/hardware/clusters/`."""
    return sorted(p.stem for p in _CLUSTER_DIR.glob("*.yaml"))


def load_cluster(name_or_path: str | os.PathLike, nodes: int | None = None) -> ClusterSpec:
    """Load a cluster preset by name (`dgx-h200`) or from a YAML file path.

    Args:
        name_or_path: a preset name from `available_clusters()` or a path to a YAML file with the
            same keys as the presets.
        nodes: overrides the file's `nodes` (presets describe one node).

    Raises:
        ValueError: unknown preset (the message lists the presets), a missing or unknown key, or a
            value that fails `ClusterSpec` validation.
    """
    path = Path(name_or_path)
    if not path.suffix:
        path = _CLUSTER_DIR / f"{name_or_path}.yaml"
        if not path.exists():
            raise ValueError(f"unknown cluster {str(name_or_path)!r}; presets: {', '.join(available_clusters())}")
    if not path.is_file():
        raise ValueError(f"cluster spec file {str(path)!r} not found; presets: {', '.join(available_clusters())}")
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"cluster spec file {str(path)!r} must hold a mapping of keys, got {type(raw).__name__}")
    if nodes is not None:
        raw["nodes"] = nodes
    return cluster_from_dict(raw, default_name=path.stem)


def cluster_for_gpu(gpu: str, world_size: int) -> ClusterSpec:
    """The DGX-style preset for a GPU type, with enough nodes for `world_size` ranks."""
    for name in available_clusters():
        raw = yaml.safe_load((_CLUSTER_DIR / f"{name}.yaml").read_text())
        if raw["gpu"] == gpu and name.startswith("dgx-"):
            per_node = int(raw["gpus_per_node"])
            return load_cluster(name, nodes=max(1, -(-world_size // per_node)))
    raise ValueError(f"no cluster preset for GPU {gpu!r}; presets: {', '.join(available_clusters())}")


_REQUIRED_KEYS = ("gpu", "gpus_per_node", "nics_per_node", "nic_bandwidth_Gbps")
_OPTIONAL_KEYS = (
    "name", "nodes", "nvlink_domain_size", "nic_latency_us", "nvlink_latency_us",
    "nvlink_bandwidth_GBps", "price_per_gpu_hour_usd",
)
_INTEGER_KEYS = ("nodes", "gpus_per_node", "nvlink_domain_size", "nics_per_node")
_NUMBER_KEYS = ("nic_bandwidth_Gbps", "nic_latency_us", "nvlink_latency_us", "nvlink_bandwidth_GBps", "price_per_gpu_hour_usd")


def cluster_from_dict(raw: dict, default_name: str = "custom") -> ClusterSpec:
    """Build a `ClusterSpec` from YAML-style keys with units (`nic_bandwidth_Gbps`), converting once.

    Raises:
        ValueError: naming the cluster and the offending key with its value: a missing or unknown
            key, a GPU that is not in the catalog, a non-numeric value, or a failed `ClusterSpec` check.
    """
    name = raw.get("name", default_name)
    missing = [k for k in _REQUIRED_KEYS if k not in raw]
    unknown = sorted(set(raw) - set(_REQUIRED_KEYS) - set(_OPTIONAL_KEYS))
    if missing or unknown:
        raise ValueError(
            f"cluster {name!r}: missing keys {missing}, unknown keys {unknown} "
            f"(required: {', '.join(_REQUIRED_KEYS)}; optional: {', '.join(_OPTIONAL_KEYS)})"
        )
    for key in _INTEGER_KEYS:
        if key in raw and (isinstance(raw[key], bool) or not isinstance(raw[key], int)):
            raise ValueError(f"cluster {name!r}: {key}={raw[key]!r} must be an integer >= 1")
    for key in _NUMBER_KEYS:
        if key in raw and (isinstance(raw[key], bool) or not isinstance(raw[key], (int, float))):
            raise ValueError(f"cluster {name!r}: {key}={raw[key]!r} must be a number")
    try:
        gpu = load_gpu(str(raw["gpu"]))
    except ValueError:
        raise ValueError(
            f"cluster {name!r}: gpu={raw['gpu']!r} is not in the GPU catalog ({', '.join(available_gpus())})"
        ) from None
    gpus_per_node = raw["gpus_per_node"]
    nvlink_bw = raw.get("nvlink_bandwidth_GBps")
    return ClusterSpec(
        name=name,
        gpu=gpu.key,
        nodes=raw.get("nodes", 1),
        gpus_per_node=gpus_per_node,
        nvlink_domain_size=raw.get("nvlink_domain_size", gpus_per_node),
        nics_per_node=raw["nics_per_node"],
        # Gb/s are decimal gigabits: 400 Gb/s = 50e9 bytes/s.
        nic_bandwidth_bytes_per_s=raw["nic_bandwidth_Gbps"] * 1e9 / _BITS_PER_BYTE,
        nic_latency_us=float(raw.get("nic_latency_us", 5.0)),
        nvlink_bandwidth_bytes_per_s=(
            nvlink_bw * 1e9 if nvlink_bw is not None else gpu.nvlink_bandwidth_bytes_per_s
        ),
        nvlink_latency_us=float(raw.get("nvlink_latency_us", 1.0)),
        price_per_gpu_hour_usd=float(raw.get("price_per_gpu_hour_usd", gpu.price_per_gpu_hour_usd)),
    )
