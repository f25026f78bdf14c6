"""The interval of a speed ratio measured in paired rounds.

``shadowdiff bench`` measures both sides in rounds, alternated (A B, B A, ...), so that a
drift of the machine's pace over the run lands on both sides alike; each round gives one
candidate/baseline ratio. The rounds, not the requests, are the sampled units: the
requests of one round share its load. A ratio's logarithm is symmetric (swapping the sides
negates it), so the interval is Student's t over the rounds' log ratios, turned back into
a ratio: the geometric mean of the rounds' ratios, and an interval that inverts exactly
when the sides are swapped. With few rounds the t quantile is wide (4.30 at three rounds,
2.78 at five), as it should be: a bootstrap over three rounds could only ever return
their range.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from shadowdiff.statistics.confidence import CONFIDENCE, Interval, t_quantile

MIN_ROUNDS = 3     # fewer rounds give no interval worth the name
METHOD = "Student's t over the paired rounds' log ratios (geometric mean)"


def geometric_mean(ratios: Sequence[float]) -> float:
    """The ratios' geometric mean (each positive): what ``ratio_interval`` is around."""
    return math.exp(statistics.fmean(math.log(r) for r in ratios))


def ratio_interval(ratios: Sequence[float], confidence: float = CONFIDENCE) -> Interval | None:
    """The rounds' ratios' geometric mean and its interval; None with fewer than
    ``MIN_ROUNDS`` rounds, or where a ratio is not positive (a side that gave nothing)."""
    if len(ratios) < MIN_ROUNDS or any(not r > 0 for r in ratios):
        return None
    logs = [math.log(r) for r in ratios]
    half = t_quantile(1 - (1 - confidence) / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    mean = geometric_mean(ratios)
    return Interval(mean, mean * math.exp(-half), mean * math.exp(half), confidence, METHOD)


# A ratio's verdict from its interval (candidate over baseline): called only where the interval leaves out 1.0.
FASTER, SLOWER, SAME, UNKNOWN = "faster", "slower", "no measurable difference", "too few rounds to tell"
# verdicts that withhold the call whatever the interval: a side's requests failed (its rounds
# timed less work), or the sides wrote answers of unequal length (tokens/s rewards the
# longer: its first token's wait is spread over more tokens; latency, the shorter)
ERRORS, UNEQUAL = "not measured: requests failed", "answers of unequal length"


def call(interval: Sequence[float] | None, higher_is_faster: bool) -> str:
    """The verdict on a ratio whose interval is ``(low, high)`` (None: no interval)."""
    if interval is None:
        return UNKNOWN
    low, high = interval
    if low > 1.0:
        return FASTER if higher_is_faster else SLOWER
    if high < 1.0:
        return SLOWER if higher_is_faster else FASTER
    return SAME
