"""Pareto hypervolume in (quality up, cost down) for two objectives."""

from __future__ import annotations

from collections.abc import Iterable


def hypervolume(points: Iterable[tuple[float, float]], ref_cost: float, ref_quality: float = 0.0) -> float:
    """Area dominated by (quality, cost) points, bounded by the reference (ref_quality, ref_cost).

    Sweeping from the cheapest point, each point adds the quality it gains over every
    cheaper point, times the cost distance to the reference.
    """
    area, best = 0.0, ref_quality
    for quality, cost in sorted(points, key=lambda p: (p[1], -p[0])):
        if cost < ref_cost and quality > best:
            area += (ref_cost - cost) * (quality - best)
            best = quality
    return area
