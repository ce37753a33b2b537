"""`pareto_front`: the configurations no other beats on both time and cost."""

from __future__ import annotations

from collections.abc import Sequence


def pareto_front(time_s: Sequence[float], cost_usd: Sequence[float]) -> list[bool]:
    """For each point, whether it is Pareto-optimal when both coordinates are minimised.

    A point is dominated when another is at most as slow and at most as expensive, and strictly
    better in one of the two; equal points are all kept. Sort by (time, cost) and keep each point
    that is cheaper than every faster one: O(n log n).
    """
    order = sorted(range(len(time_s)), key=lambda i: (time_s[i], cost_usd[i]))
    front = [False] * len(time_s)
    cheapest = float("inf")
    last_kept: tuple[float, float] | None = None
    for i in order:
        point = (time_s[i], cost_usd[i])
        if cost_usd[i] < cheapest or point == last_kept:
            front[i] = True
            cheapest = cost_usd[i]
            last_kept = point
    return front
