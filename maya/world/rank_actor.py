"""`RankActor`: a Ray actor that emulates one rank of the world and hands back its trace."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from maya.emulator.state import IterationStats


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
    """Wall time of the emulation inside the actor, seconds."""


def emulate_rank(script: str, args: list[str], gpu: str, rank: int, world_size: int, local_world_size: int) -> RankResult:
    """Run `script` as `rank` of the world on the emulated `gpu` (in this process)."""
    import time

    from maya.emulator.runner import run_script
    from maya.emulator.state import RankConfig
    from maya.hardware import load_gpu
    from maya.trace.build import rows_to_table

    started = time.perf_counter()
    config = RankConfig(
        gpu=load_gpu(gpu), rank=rank, world_size=world_size, local_rank=rank % local_world_size,
        local_world_size=local_world_size,
    )
    from maya.event_timing import EventTimer

    outcome = run_script(script, list(args), config, elapsed_time_ms=EventTimer(gpu))
    state = outcome.state
    return RankResult(
        rank=rank,
        table=rows_to_table(state.rows),
        iterations=list(state.iterations),
        groups=list(state.groups),
        exit_code=outcome.exit_code,
        error=outcome.error,
        oom=outcome.oom,
        emulation_s=time.perf_counter() - started,
    )


class RankActor:
    """Ray actor body: one emulation per actor process (a rank's patches and groups never leak)."""

    def emulate(self, script: str, args: list[str], gpu: str, rank: int, world_size: int, local_world_size: int) -> RankResult:
        return emulate_rank(script, args, gpu, rank, world_size, local_world_size)


def remote_actor_class():
    """`RankActor` as a Ray actor: one CPU, restarted and its call retried once if the process dies."""
    import ray

    return ray.remote(num_cpus=1, max_restarts=1, max_task_retries=1)(RankActor)
