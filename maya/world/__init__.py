"""Multi-rank emulation: ranks as Ray tasks, identical ranks emulated once (`emulate_world`)."""

from maya.world.world_emulation import (
    ActorDiedError,
    DedupMismatchError,
    RankCheckStop,
    RankFailedError,
    TooManyRankClassesError,
    WorldEmulation,
    emulate_world,
)

__all__ = ["ActorDiedError", "DedupMismatchError", "RankCheckStop", "RankFailedError", "TooManyRankClassesError", "WorldEmulation", "emulate_world"]
