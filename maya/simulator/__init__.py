"""Simulator: discrete-event simulation of every rank's host, streams, events and collectives."""

from maya.simulator.breakdown import RankBreakdown
from maya.simulator.chrome_trace import export_chrome_trace
from maya.simulator.collective_matcher import CollectiveMismatchError
from maya.simulator.host_model import HostModel
from maya.simulator.params import SimulationParams
from maya.simulator.result import SimulationResult
from maya.simulator.simulate import SimulationDeadlockError, simulate

__all__ = [
    "CollectiveMismatchError",
    "HostModel",
    "RankBreakdown",
    "SimulationDeadlockError",
    "SimulationParams",
    "SimulationResult",
    "export_chrome_trace",
    "simulate",
]
