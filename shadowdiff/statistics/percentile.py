"""The one definition of a percentile that reports and ``shadowdiff bench`` share."""

from __future__ import annotations

import math


def nearest_rank(n: int, p: float) -> int:
    """The 0-based index of the ``p``-th percentile among ``n`` sorted values (nearest
    rank: the smallest value with at least ``p`` % of the values at or below it)."""
    return min(n - 1, max(0, math.ceil(p / 100 * n) - 1))
