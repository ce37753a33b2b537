"""`emulate_rank`: emulate one rank of the world in this process and hand back its trace (run as a Ray task)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from maya.emulator.object_mailbox import MessageKey, ObjectMessage
from maya.emulator.state import IterationStats
from maya.summary import peak_over


@dataclass(frozen=True, kw_only=True, slots=True)
class RankResult:
    """What one emulated rank produced."""

    rank: int
    """Global rank."""
    table: pa.Table
    """The rank's trace (maya.trace.schema.TRACE_SCHEMA)."""
    iterations: list[IterationStats] = field(default_factory=list)
    """Per-iteration allocator peaks, as the emulation state keeps them."""
    groups: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    """Every process group the script created (the group table)."""
    exit_code: int = 0
    """0 when the script finished on this rank."""
    error: str | None = None
    """The script's traceback on this rank, when it failed."""
    oom: bool = False
    """The rank ran out of emulated GPU memory."""
    emulation_s: float = 0.0
    """Wall time of the emulation in its worker process, seconds."""
    pid: int = 0
    """The worker process that emulated it (workers are reused between emulations)."""
    sent_objects: tuple[ObjectMessage, ...] = ()
    """The object lists the rank sent (`send_object_list`), for the ranks that receive them."""
    waiting_for: int | None = None
    """The rank whose object list this one was receiving when its emulation stopped, as that rank's
    emulation had not sent it (`maya.emulator.object_mailbox`); None: it did not stop so."""
    waiting_key: MessageKey | None = None
    """The key of the object list it waits for."""
    process_emulations: int = 1
    """Emulations its worker process had run, this one included (Ray reuses workers): above 1, state a
    library kept from an earlier emulation (a module-level global) may have made it fail."""

    @property
    def peak_allocated_bytes(self) -> int:
        """The rank's allocator peak over its iterations, bytes."""
        return peak_over(self.iterations, "peak_allocated_bytes")

    @property
    def peak_reserved_bytes(self) -> int:
        """The rank's reserved-memory peak over its iterations, bytes."""
        return peak_over(self.iterations, "peak_reserved_bytes")


def emulate_rank(script: str, args: list[str], gpu: str, rank: int, world_size: int, local_world_size: int,
                 objects: Sequence[ObjectMessage] = ()) -> RankResult:
    """Run `script` as `rank` of the world on the emulated `gpu` (in this process), with the object
    lists other ranks' emulations sent so far (`objects`)."""
    import os
    import time

    from maya.emulator.runner import run_script
    from maya.emulator.state import RankConfig
    from maya.hardware import load_gpu
    from maya.trace.build import rows_to_table

    global _EMULATIONS
    _EMULATIONS += 1
    started = time.perf_counter()
    config = RankConfig(
        gpu=load_gpu(gpu), rank=rank, world_size=world_size, local_rank=rank % local_world_size,
        local_world_size=local_world_size,
    )
    from maya.event_timing import EventTimer

    outcome = run_script(script, list(args), config, elapsed_time_ms=EventTimer(gpu), objects=objects)
    state = outcome.state
    waiting = state.mailbox.waiting
    return RankResult(
        rank=rank,
        table=rows_to_table(state.rows),
        iterations=list(state.iterations),
        groups=list(state.groups),
        exit_code=outcome.exit_code,
        error=outcome.error,
        oom=outcome.oom,
        emulation_s=time.perf_counter() - started,
        pid=os.getpid(),
        sent_objects=tuple(state.mailbox.sent),
        waiting_for=waiting.src if waiting is not None else None,
        waiting_key=waiting.key if waiting is not None else None,
        process_emulations=_EMULATIONS,
    )


_EMULATIONS = 0
"""Emulations this process has run (`RankResult.process_emulations`)."""


MAX_EMULATIONS_PER_WORKER = 50
"""Emulations a worker process runs before Ray replaces it (bounds what a script might leak into it)."""


def remote_emulate_rank(fresh: bool = False):
    """`emulate_rank` as a Ray task of one CPU, retried once if its process dies.

    Ray runs the tasks on reused worker processes: a warm worker has torch, Maya and PyTorch's
    dispatch caches loaded, and emulates a 2-block Llama-70B-width rank (1,418 trace rows) in 1.7-2.1 s
    where the first emulation in a process takes 5.4 s (benchmarks/results/rank_emulation_warm.json). A rank's patches, process groups
    and allocator are set up and torn down by `maya.emulator.runner.run_script` for each emulation;
    what a library keeps in its own modules is not (Megatron's parsed arguments), which is why a rank
    that fails in a reused worker is emulated again in a fresh one (`fresh`: a process per emulation,
    `maya.world.world_emulation._RankRunner`).
    """
    import ray

    return ray.remote(num_cpus=1, max_retries=1, max_calls=1 if fresh else MAX_EMULATIONS_PER_WORKER)(emulate_rank)
