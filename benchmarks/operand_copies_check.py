"""The copies CUDA ops make inside themselves, in a real profiled step and in Maya's emulation of it.

    python benchmarks/operand_copies_check.py [unet_fp32_128px torch_transformer_bf16 ...]

For each named calibration workload with a Chrome trace (`op_time_probe.py --chrome`: the H200's in
benchmarks/gpu/op_times_h200, else an H100 lease's in benchmarks/gpu/session39/s39b/op_times), it
counts the `aten::copy_` calls made inside an op whose operand copies Maya records
(`maya.emulator.operand_copies.COPYING_OPS`: a `contiguous()` or `.to(memory_format)` that copied),
per op, in the profiled step; and, in Maya's emulation of the same workload (2 warm-up + 2 steps, the
third iteration), the rows marked `internal_launch` per op they precede. Held-out workloads are refused.
"""

from __future__ import annotations

import collections
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = (ROOT / "benchmarks" / "gpu" / "op_times_h200", ROOT / "benchmarks" / "gpu" / "session39" / "s39b" / "op_times")
DEFAULT = ("unet_fp32_128px", "torch_transformer_bf16")
sys.path.insert(0, str(ROOT / "benchmarks"))
from host_phase_factors import emulated_trace  # noqa: E402
from kernel_attribution import cpu_op_stacks, read_events  # noqa: E402


def _op_names() -> set[str]:
    from maya.emulator.operand_copies import COPYING_OPS
    from maya.emulator.recorder import _op_name

    return {_op_name(op) for op in COPYING_OPS}


def profiled_copies(trace: Path, ops: set[str], by_call: bool = False) -> collections.Counter:
    """Op -> the `aten::copy_` calls made inside it in the profiled step; with `by_call`, (op, the call
    under it that copied: `aten::contiguous`, `aten::to`, ...) -> count."""
    counts = collections.Counter()
    for event, stack, _ in cpu_op_stacks(read_events(trace)):
        if event["name"] == "aten::copy_":
            names = [s["name"] for s in stack]
            owner = next((i for i, n in enumerate(names) if n in ops), None)
            if owner is not None:
                call = (names[owner + 1:] + [event["name"]])[0]
                counts[(names[owner], call) if by_call else names[owner]] += 1
    return counts


def emulated_copies(trace: Path, by_call: bool = False) -> collections.Counter:
    """Op -> the `internal_launch` rows recorded before it in the third iteration of an emulated trace;
    with `by_call`, (op, the copy row's op: `aten::clone`, `aten::_to_copy`) -> count."""
    import pyarrow.parquet as pq

    from maya.emulator.attrs import INTERNAL_LAUNCH

    df = pq.read_table(trace).to_pandas()
    rows = df[(df["iteration"] == 2) & (df["kind"] == "kernel")]
    counts, pending = collections.Counter(), []
    for op, attrs in zip(rows["op"], rows["attrs"]):
        if attrs and INTERNAL_LAUNCH in json.loads(attrs):
            pending.append(op)
        else:
            for copy in pending:
                counts[(op, copy) if by_call else op] += 1
            pending = []
    return counts


def main(argv: list[str] | None = None) -> None:
    names = (argv if argv is not None else sys.argv[1:]) or list(DEFAULT)
    ops = _op_names()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            trace = next((d / f"{name}.trace.json.gz" for d in TRACES if (d / f"{name}.trace.json.gz").is_file()), None)
            if trace is None:
                sys.exit(f"{name}: no profiled trace in {', '.join(str(d.relative_to(ROOT)) for d in TRACES)}")
            emulated = emulated_trace(name, Path(tmp))
            real, maya = profiled_copies(trace, ops), emulated_copies(emulated)
            print(f"{name} ({trace.relative_to(ROOT)}): copies per step inside each op, profiled / Maya")
            for op in sorted(set(real) | set(maya)):
                print(f"  {op}: {real[op]} / {maya[op]}")
            calls = [f"{o} {c}: {n}" for (o, c), n in sorted(profiled_copies(trace, ops, by_call=True).items())]
            rows = [f"{o} {c}: {n}" for (o, c), n in sorted(emulated_copies(emulated, by_call=True).items())]
            print(f"  profiled, by the call that copied: {'; '.join(calls)}")
            print(f"  Maya, by the copy row: {'; '.join(rows)}")


if __name__ == "__main__":
    main()
