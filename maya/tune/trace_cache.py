"""`TraceCache`: emulation results on disk, reused by every configuration with the same per-rank trace.

Two keys split what the emulator decides from what only the simulator models:

- the *emulation key* hashes the script's content, its argv, the GPU type, the tensor- and
  pipeline-parallel degrees and, unless the configuration's `dp_mode` is `ddp`, the data-parallel
  degree (under FSDP it sets the shard shapes; a study without `dp_mode` does not say which the
  script uses: examples/train_gpt.py picks FSDP2 by itself when tp > 1). Under DDP the data-parallel
  degree is left out: at a fixed per-rank shape it only changes what the simulator does with the
  gradient all-reduce. Node count and price are left out too. The
  caching-allocator settings of the environment (PYTORCH_CUDA_ALLOC_CONF) are in, as they change
  reserved memory.
- the *simulation key* hashes the cluster's topology (nodes, GPUs per node, links; not its name or
  price), or is `single-gpu` for a one-GPU job, whose time no link affects; with the study's host
  figures for the cluster's GPU (`Study.host_profiles`), their hash is appended.

Each key also carries a fingerprint of the Maya code and data that make its result
(`code_fingerprint`): the emulator's for the emulation key, the estimator's, simulator's and hardware
catalog's (with the shipped models' fit report and calibration, host and NCCL figures) for the
simulation key. Entries written by another Maya (an upgrade, a refit of the models, a changed
transfer rule) are made again instead of read back; a cache left from before only costs disk.

A configuration of many micro-batches is not emulated at its own accum: its figures are extrapolated
from the entries of two small counts (`maya.tune.accum_extrapolation`), whose argv carry those
counts, so the configuration's own accum is in no key.

Layout of `ROOT/<emulation key>/`:

    inputs.json            what the key was made of (for people)
    outcome.json           a cluster-independent end: out of memory, or the script failed
    trace/                 the first emulation's trace directory (Parquet per rank, timeline.json)
    sims/<sim key>.json    predicted figures on one topology (step times, memory, breakdown)
    sims/<sim key>.trace/  a second emulation's trace, when re-simulating was not possible

and `ROOT/classes-<layout key>.json`: the rank classes of a layout (which group families change a
rank's trace, and every rank's representative) as its first emulation found them, so that
emulations of the same layout at another micro-batch size or count, or depth, emulate only the
class representatives (`maya.world.emulate_world`'s `rank_classes`).

Every file is written to a temporary name and renamed, and a trial holds `lock(key)` (an flock,
released by the kernel if the trial dies) while it looks up and fills an entry, so concurrent trials
with the same key emulate once. The cache may live on a shared file system for a multi-node Ray
cluster; on node-local disks each node keeps its own. The script's own imports are not hashed: after
changing a module the script imports, use a new cache directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from maya.hardware.cluster import ClusterSpec

SINGLE_GPU_SIM_KEY = "single-gpu"
OUTCOME_FILE = "outcome.json"

EMULATION_CODE = ("emulator", "world", "trace", "api.py")
"""Parts of the `maya` package (folders or files) whose content decides a per-rank trace."""
PREDICTION_CODE = ("estimator", "simulator", "hardware", "predict.py", "resimulate.py", "summary.py", "throughput.py",
                   "event_timing.py")
"""Parts of the `maya` package whose content turns a trace into predicted figures."""
FINGERPRINTED_SUFFIXES = (".py", ".json", ".yaml", ".yml")
"""Files a fingerprint reads: code and the small data files beside it. Profiles (Parquet) and model
files (.cbm.gz) are left out: a refit changes the models' `fit_report.json`, which is read."""


@functools.cache
def code_fingerprint(parts: tuple[str, ...], root: Path | None = None) -> str:
    """A short hash of the files under `parts` (folders or files relative to `root`, by default the
    installed `maya` package) with `FINGERPRINTED_SUFFIXES`, names and contents, read once per process."""
    if root is None:
        import maya

        root = Path(maya.__file__).parent
    h = hashlib.sha256()
    for part in parts:
        path = Path(root) / part
        files = [path] if path.is_file() else sorted(
            f for f in path.rglob("*") if f.is_file() and f.suffix in FINGERPRINTED_SUFFIXES)
        for f in files:
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def digest(payload: Any) -> str:
    """A short stable hash of a JSON-able payload (key order ignored): the cache's names."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes, hex; read once per file version (path, size and mtime) in this process:
    a trial keys its memory record, its layout and every extrapolation point on the script's hash."""
    stat = os.stat(path)
    return _sha256_of(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def emulation_inputs(
    *, script_sha256: str, argv: tuple[str, ...], gpu: str, tp: int, pp: int, dp: int, dp_mode: str | None
) -> dict[str, Any]:
    """What decides a per-rank trace (see the module docstring), with Maya's and the trace schema's versions
    and the caching-allocator settings of this process's environment (they change reserved memory)."""
    from maya import __version__
    from maya.emulator.allocator_config import environment_text
    from maya.trace.schema import TRACE_SCHEMA_VERSION

    return {
        "maya": __version__,
        "emulator_code": code_fingerprint(EMULATION_CODE),
        "trace_schema": TRACE_SCHEMA_VERSION,
        "script_sha256": script_sha256,
        "argv": list(argv),
        "gpu": gpu,
        "tp": tp,
        "pp": pp,
        "dp": None if dp_mode == "ddp" else dp,
        "alloc_conf": environment_text(),
    }


def emulation_key(inputs: dict[str, Any]) -> str:
    """Hash of `emulation_inputs(...)`."""
    return digest(inputs)


def simulation_key(cluster: ClusterSpec, host_per_op_us: Mapping[str, float] | None = None) -> str:
    """Hash of a cluster's topology (`single-gpu` for a one-GPU job), then `-code-<the prediction code's
    fingerprint>`, then `-host-<hash>` when the job is predicted with host figures other than the
    shipped ones."""
    if cluster.world_size == 1:
        key = SINGLE_GPU_SIM_KEY
    else:
        key = digest({k: v for k, v in asdict(cluster).items() if k not in ("name", "price_per_gpu_hour_usd")})
    key = f"{key}-code-{code_fingerprint(PREDICTION_CODE)[:12]}"
    return f"{key}-host-{digest(dict(host_per_op_us))[:12]}" if host_per_op_us else key


class TraceCache:
    """A directory of emulation results keyed as the module docstring describes."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def entry(self, key: str) -> Path:
        """Directory of one emulation key."""
        return self.root / key

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold the key's exclusive lock (blocks while another process holds it)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / f"{key}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def trace_dir(self, key: str) -> Path | None:
        """The key's first trace directory, if an emulation completed into it."""
        path = self.entry(key) / "trace"
        return path if (path / "meta.json").exists() else None

    def new_trace_dir(self, key: str, sim_key: str) -> Path:
        """Where a new emulation for `key` writes: `trace/` first, then one per simulation key."""
        first = self.entry(key) / "trace"
        return first if not first.exists() else self.entry(key) / "sims" / f"{sim_key}.trace"

    def read_outcome(self, key: str) -> dict | None:
        """A cluster-independent end (out of memory, script failure) recorded for `key`."""
        return _read_json(self.entry(key) / OUTCOME_FILE)

    def write_outcome(self, key: str, outcome: dict, inputs: dict) -> None:
        self._write_inputs(key, inputs)
        _write_json(self.entry(key) / OUTCOME_FILE, outcome)

    def read_figures(self, key: str, sim_key: str) -> dict | None:
        """Predicted figures of `key`'s trace on topology `sim_key`."""
        return _read_json(self.entry(key) / "sims" / f"{sim_key}.json")

    def write_figures(self, key: str, sim_key: str, figures: dict, inputs: dict) -> None:
        self._write_inputs(key, inputs)
        _write_json(self.entry(key) / "sims" / f"{sim_key}.json", figures)

    def read_rank_classes(self, layout_key: str) -> dict | None:
        """The rank classes recorded for `layout_key` (`maya.tune.evaluate.layout_inputs`'s digest), if
        any: `variant_families` and `rank_to_representative` (string ranks), as a trace's meta.json has them."""
        return _read_json(self.root / f"classes-{layout_key}.json")

    def write_rank_classes(self, layout_key: str, record: dict) -> None:
        _write_json(self.root / f"classes-{layout_key}.json", record)

    def _write_inputs(self, key: str, inputs: dict) -> None:
        path = self.entry(key) / "inputs.json"
        if not path.exists():
            _write_json(path, inputs)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def _write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(payload, indent=1, default=str))
    os.replace(tmp, path)
