"""`run_script`: run a user's training script, unchanged, as one torchrun rank under emulation."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import runpy
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from maya.emulator import allocator_config
from maya.emulator.iteration_cycles import merge_optimizer_cycles
from maya.emulator.object_mailbox import ObjectMessage
from maya.emulator.session import EmulationSession
from maya.emulator.state import EmulationState, RankConfig

log = logging.getLogger(__name__)

MASTER_ADDR = "127.0.0.1"
MASTER_PORT = "29500"


@dataclass(frozen=True, kw_only=True, slots=True)
class RunOutcome:
    """What happened when a script ran under emulation."""

    state: EmulationState
    """Everything recorded, up to the end or the failure."""
    exit_code: int
    """0 when the script finished; its SystemExit code or 1 when it failed."""
    error: str | None
    """The script's traceback (or exit message) when it failed, else None."""
    oom: bool
    """The script hit the emulated GPU's memory limit."""


def torchrun_env(config: RankConfig) -> dict[str, str]:
    """The environment torchrun gives one worker."""
    return {
        "RANK": str(config.rank),
        "WORLD_SIZE": str(config.world_size),
        "LOCAL_RANK": str(config.local_rank),
        "LOCAL_WORLD_SIZE": str(config.local_world_size),
        "GROUP_RANK": str(config.rank // config.local_world_size),
        "ROLE_RANK": str(config.rank),
        "ROLE_WORLD_SIZE": str(config.world_size),
        "MASTER_ADDR": MASTER_ADDR,
        "MASTER_PORT": MASTER_PORT,
        "TORCHELASTIC_RUN_ID": "maya",
    }


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptModule:
    """A training script given as a module, as `python -m NAME` and torchrun's `-m` run it: as
    `__main__`, found from `directory` (the caller's working directory, which `python -m` puts first
    on sys.path), with sys.argv[0] its file."""

    name: str
    """Dotted module name: `torchtitan.train`."""
    directory: str
    """Directory the module is found from, before the rest of sys.path."""

    @classmethod
    def here(cls, name: str) -> ScriptModule:
        """The module `name`, found from this process's working directory."""
        return cls(name=name, directory=os.getcwd())

    def __str__(self) -> str:
        return f"-m {self.name}"


def check_script(script: str | os.PathLike | ScriptModule) -> None:
    """Raise FileNotFoundError, naming it, when `script` does not exist (for a module: when its
    top-level package is not found from its directory; importing its submodules is the run's)."""
    if isinstance(script, ScriptModule):
        top = script.name.split(".", 1)[0]
        if not script.name or not all(part.isidentifier() for part in script.name.split(".")):
            raise FileNotFoundError(f"training module {script.name!r} is not a module name")
        sys.path.insert(0, script.directory)
        try:
            found = importlib.util.find_spec(top) is not None
        finally:
            sys.path.remove(script.directory)
        if not found:
            raise FileNotFoundError(f"training module not found: {top} (looked for from {script.directory} and "
                                    "the Python path)")
    elif not Path(script).is_file():
        raise FileNotFoundError(f"training script not found: {script}")


HEARTBEAT_S = 20.0
"""Seconds between `run_script`'s progress lines while a script runs."""


@contextlib.contextmanager
def _heartbeat(progress: Callable[[str], None] | None, state: EmulationState, rank: int, every_s: float):
    """Every `every_s` seconds while the block runs, a line to `progress` saying how far the script got."""
    if progress is None:
        yield
        return
    done, start = threading.Event(), time.monotonic()

    def beat() -> None:
        while not done.wait(every_s):
            ended = len(state.iteration_ends)
            progress(f"  rank {rank}: {time.monotonic() - start:.0f} s, {len(state.rows):,} trace rows, "
                     f"{ended} iteration{'s' if ended != 1 else ''} ended")

    thread = threading.Thread(target=beat, name="maya-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def run_script(script: str | os.PathLike | ScriptModule, args: list[str], config: RankConfig,
               elapsed_time_ms=None, progress: Callable[[str], None] | None = None,
               progress_every_s: float = HEARTBEAT_S, objects: Sequence[ObjectMessage] = ()) -> RunOutcome:
    """Run `script args...` as `__main__` on the emulated GPU of `config`: a file, or a module
    (`ScriptModule`, torchrun's `-m`).

    `elapsed_time_ms`, if given, answers the script's `Event.elapsed_time` (see maya.event_timing).
    `progress`, if given, gets a line every `progress_every_s` seconds while the script runs: the
    trace rows recorded and the iterations ended so far. `objects`: what other ranks' emulations sent
    with `send_object_list` (`maya.emulator.object_mailbox`); a receive of one not among them stops
    the script, and the outcome's `state.mailbox.waiting` says which.

    Raises:
        FileNotFoundError: the script does not exist.
    """
    check_script(script)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    # The whole environment, not only torchrun's: what a script or its libraries set there (accelerate's
    # ACCELERATE_USE_DEEPSPEED) must not reach the next emulation in this process.
    saved_env = dict(os.environ)
    os.environ.update(torchrun_env(config))
    if isinstance(script, ScriptModule):
        sys.argv = [script.name, *args]  # run_module(alter_sys=True) puts the module's file first
        sys.path.insert(0, script.directory)

        def run() -> None:
            runpy.run_module(script.name, run_name="__main__", alter_sys=True)
    else:
        path = Path(script)
        sys.argv = [str(path), *args]
        sys.path.insert(0, str(path.resolve().parent))

        def run() -> None:
            runpy.run_path(str(path), run_name="__main__")
    exit_code, error, oom = 0, None, False
    session = EmulationSession(config, elapsed_time_ms, objects)
    try:
        with session, _heartbeat(progress, session.state, config.rank, progress_every_s):
            try:
                run()
            except SystemExit as e:
                if e.code not in (None, 0):
                    exit_code = e.code if isinstance(e.code, int) else 1
                    error = f"SystemExit: {e.code}"
            except torch.OutOfMemoryError:
                exit_code, oom, error = 1, True, traceback.format_exc()
            except Exception as e:
                exit_code, error = 1, traceback.format_exc() + _hint(e)
    finally:
        # session.state is None when the session itself failed to start; that error propagates alone
        settings = [allocator_config.environment_text(), *(session.state.allocator_settings if session.state else [])]
        sys.argv, sys.path[:] = saved_argv, saved_path
        for k in set(os.environ) - set(saved_env):
            del os.environ[k]
        os.environ.update({k: v for k, v in saved_env.items() if os.environ.get(k) != v})
    if note := allocator_settings_note(settings):
        log.warning(note)
    merge_optimizer_cycles(session.state)
    return RunOutcome(state=session.state, exit_code=exit_code, error=error, oom=oom or session.state.oom)


def allocator_settings_note(settings: list[str]) -> str | None:
    """A warning naming the caching-allocator settings a run asked for (its PYTORCH_CUDA_ALLOC_CONF, as
    the script left it, and `torch.cuda.memory._set_allocator_settings` calls) that the emulated
    allocator does not follow (`maya.emulator.allocator_config` lists those it does); None when there
    are none. `backend:cudaMallocAsync`, CUDA's own pool allocator, is the usual one."""
    keys = []
    for text in settings:
        try:
            ignored = allocator_config.parse(text)[1]
        except ValueError:  # the script's first allocation raised it already
            continue
        keys += [k for k in ignored if k not in keys]
    if not keys:
        return None
    return (f"allocator settings not emulated ({', '.join(keys)}): Maya's reserved memory and out-of-memory point "
            "follow PyTorch's caching allocator without them (allocated memory, the tensors' own, changes little)")


DATA_MOVE_HINT = (
    "Maya: a tensor on the host was given an emulated GPU tensor's data (`tensor.data = tensor.to('cuda')`), "
    "which a host tensor cannot take under emulation. Move modules with `module.cuda()` or `module.to(device)` "
    "(FSDP1, FSDP2 and DeepSpeed's own moves are handled), or make the tensor on the GPU."
)


def _hint(e: BaseException) -> str:
    """What Maya adds to a script's traceback where the cause is the emulation, not the script."""
    message = str(e)
    if isinstance(e, RuntimeError) and "set_data" in message and "incompatible tensor type" in message:
        return DATA_MOVE_HINT + "\n"
    return ""
