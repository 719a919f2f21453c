"""The Pareto frontier of two objectives, one maximized (goodput) and one minimized (p95), and
its knee. Pure: points in, indices out. Written by hand because the rule is a few lines and
the knee's is ours; Optuna's `best_trials` gives the frontier of its own study only, and ours
holds trials from a resumed search Optuna never saw measured."""

from __future__ import annotations

from typing import Sequence

Point = tuple[float, float]          # (higher is better, lower is better)


def dominates(a: Point, b: Point) -> bool:
    """`a` is at least as good as `b` on both objectives and better on one."""
    return a[0] >= b[0] and a[1] <= b[1] and (a[0] > b[0] or a[1] < b[1])


def frontier(points: Sequence[Point]) -> list[int]:
    """The indices of the points no other point dominates, by the first objective, highest
    first; of equal points, the first only."""
    keep: list[int] = []
    for i, p in enumerate(points):
        if any(dominates(q, p) for q in points):
            continue
        if any(points[j] == p for j in keep):
            continue
        keep.append(i)
    return sorted(keep, key=lambda i: (-points[i][0], points[i][1]))


def knee(points: Sequence[Point], front: Sequence[int]) -> int | None:
    """The knee of a frontier: its point farthest from the straight line joining its two ends,
    each objective first scaled to [0, 1] over the frontier (so that req/s and ms weigh
    alike). With one or two points, the first (the most goodput): no bend to find."""
    if not front:
        return None
    if len(front) <= 2:
        return front[0]
    xs = [points[i][0] for i in front]
    ys = [points[i][1] for i in front]

    def scaled(values: list[float], v: float) -> float:
        span = max(values) - min(values)
        return (v - min(values)) / span if span else 0.0
    ends = [(scaled(xs, points[i][0]), scaled(ys, points[i][1])) for i in (front[0], front[-1])]
    (x1, y1), (x2, y2) = ends
    length = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5

    def distance(i: int) -> float:
        x, y = scaled(xs, points[i][0]), scaled(ys, points[i][1])
        if length == 0:
            return 0.0
        return abs((y2 - y1) * x - (x2 - x1) * y + x2 * y1 - y2 * x1) / length
    return max(front, key=distance)
