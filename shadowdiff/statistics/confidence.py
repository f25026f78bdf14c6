"""How sure a run's figures are: exact bounds on a rate and intervals on paired differences.

A release gate on 20 prompts must say how little 20 prompts prove:

* ``rate_upper(k, n)``: the exact (Clopper–Pearson) one-sided upper bound of a rate after
  ``k`` events in ``n`` trials, e.g. of factual regressions among reviewed pairs: 0 in 20
  still allows up to 13.9 % at 95 %. It solves P(X ≤ k | n, p) = 1 − confidence for p, by
  bisection on the binomial distribution (exact, no normal approximation), so it never
  claims more than the data show (its coverage is at least the confidence).
* ``paired_difference(...)``: the difference of two proportions measured on the same
  prompts (the candidate's changed rate minus the replica's, the noise floor), with
  Newcombe's interval for paired data ("method 10": Wilson score intervals of each
  proportion, combined with the correlation of the pairs; Newcombe, Statistics in
  Medicine 17, 1998, 2635–2650). A paired design: each prompt has both outcomes, so the
  interval is narrower than for two independent samples when the outcomes go together.
* ``mcnemar_exact(b, c)``: McNemar's exact test of a paired 2x2 table, from its two
  discordant counts (prompts the baseline got right and the candidate wrong, and the
  other way round): the two-sided binomial test of b successes in b + c trials at 1/2.
* ``reviews_needed(target)``: how many reviewed pairs without a factual regression bring
  ``rate_upper`` to ``target``.

Standard library only (``statistics.NormalDist`` for the normal quantile, ``math.lgamma``
for the binomial terms): the functions are small and are checked against closed forms
and by simulation of their coverage (tests/statistics/test_confidence.py).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist

CONFIDENCE = 0.95


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X ≤ k) for X ~ Binomial(n, p), summed in log space (n may be large)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    head = math.lgamma(n + 1)
    terms = [head - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q for i in range(k + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))


# rate_upper and t_quantile bisect (100-200 evaluations of a series each), and a report or a
# simulation asks the same few (k, n) and degrees of freedom again and again: remembered.
@functools.lru_cache(maxsize=4096)
def rate_upper(k: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The exact one-sided upper confidence bound of a rate with ``k`` events in ``n``
    trials (Clopper–Pearson). ``n`` = 0 bounds nothing: 1.0."""
    if not 0 <= k <= n:
        raise ValueError(f"{k} events in {n} trials")
    if k == n:
        return 1.0
    alpha = 1.0 - confidence
    if k == 0:   # the closed form of the same equation: (1 - p)^n = alpha
        return 1.0 - float(alpha ** (1.0 / n))
    low, high = k / n, 1.0
    for _ in range(100):   # P(X <= k) falls as p rises: bisect for where it crosses alpha
        middle = (low + high) / 2
        if _binomial_cdf(k, n, middle) > alpha:
            low = middle
        else:
            high = middle
    return high


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact two-sided p-value from the discordant counts ``b`` and ``c``: twice
    the smaller binomial tail of Binomial(b + c, 1/2), at most 1. Without discordant pairs
    the data say nothing against equal rates: 1.0."""
    if min(b, c) < 0:
        raise ValueError("a count is negative")
    if b + c == 0:
        return 1.0
    return min(1.0, 2.0 * _binomial_cdf(min(b, c), b + c, 0.5))


def reviews_needed(target: float, events: int = 0, confidence: float = CONFIDENCE) -> int:
    """How many reviewed pairs, ``events`` of them factual regressions, bound the
    regression rate at or below ``target``: the smallest n with ``rate_upper(events, n)
    <= target`` (it falls as n grows)."""
    if not 0.0 < target < 1.0:
        raise ValueError(f"a target rate is between 0 and 1, not {target}")
    if events == 0:   # the closed form
        return math.ceil(math.log(1.0 - confidence) / math.log1p(-target))
    high = max(events + 1, 2)
    while rate_upper(events, high, confidence) > target:
        high *= 2
    low = high // 2
    while low < high:
        middle = (low + high) // 2
        if middle >= events and rate_upper(events, middle, confidence) <= target:
            high = middle
        else:
            low = middle + 1
    return high


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    confidence: float = CONFIDENCE
    method: str = "Newcombe's hybrid score interval for paired proportions (method 10)"

    def as_json(self) -> dict[str, float | str]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "confidence": self.confidence,
                "method": self.method}


def _wilson(successes: int, n: int, z: float) -> tuple[float, float]:
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


def paired_difference(both: int, first_only: int, second_only: int, neither: int,
                      confidence: float = CONFIDENCE) -> Interval | None:
    """The difference of two proportions measured on the same ``n`` items, from the four
    counts of the paired table: items where both events happened, only the first, only
    the second, neither. Estimate (first_only − second_only) / n, two-sided interval at
    ``confidence`` by Newcombe's method 10. None without items."""
    a, b, c, d = both, first_only, second_only, neither
    n = a + b + c + d
    if min(a, b, c, d) < 0:
        raise ValueError("a count is negative")
    if n == 0:
        return None
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = _wilson(a + b, n, z)
    l2, u2 = _wilson(a + c, n, z)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    # Newcombe's corrected phi (what makes it method 10, not 8): without it a table with
    # no discordant pairs (every prompt agrees) has phi = 1 and an interval of no width
    excess: float = a * d - b * c
    if excess > 0:
        excess = max(excess - n / 2, 0.0)
    phi = excess / math.sqrt(margins) if margins else 0.0
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    epsilon = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    theta = p1 - p2
    return Interval(theta, max(-1.0, theta - delta), min(1.0, theta + epsilon), confidence)


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (modified Lentz), taken on the side where it converges fast."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    value = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            value *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * value


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom:
    its CDF (from the incomplete beta function) inverted by bisection."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"no t quantile for p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)

    def upper_tail(t: float) -> float:   # P(T > t) for t >= 0
        return 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))

    low, high = 0.0, 1.0
    while upper_tail(high) > 1.0 - p:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if upper_tail(middle) > 1.0 - p:
            low = middle
        else:
            high = middle
    return high


RATIO_METHOD = ("ratio of sums over prompts, cluster-robust (linearized) standard error, Student's t with "
                "prompts - 1 degrees of freedom")


@dataclass
class ClusteredRatio:
    """Σy / Σn over clusters, each contributing ``(y, n)``: e.g. each prompt's tokens the
    candidate disagrees on beyond the baseline's own, over its tokens.

    The prompts are the sampled units, not the tokens: the tokens of one answer go
    together (a near-tie decided the other way early on moves its neighbours). The
    interval treats it so: the ratio estimator's linearized variance over clusters,
    m/(m-1) · Σ(y_i - R·n_i)² / (Σn)², with Student's t at m - 1 degrees of freedom.
    Running sums only, so a run of millions of pairs needs no list of them."""

    clusters: int = 0
    y: float = 0.0
    n: float = 0.0
    yy: float = 0.0
    yn: float = 0.0
    nn: float = 0.0

    def add(self, y: float, n: float) -> None:
        self.clusters += 1
        self.y += y
        self.n += n
        self.yy += y * y
        self.yn += y * n
        self.nn += n * n

    @property
    def estimate(self) -> float | None:
        return self.y / self.n if self.n else None

    def interval(self, confidence: float = CONFIDENCE) -> Interval | None:
        """None without tokens, or with fewer than two prompts (no spread to measure)."""
        r, m = self.estimate, self.clusters
        if r is None or m < 2:
            return None
        spread = max(self.yy - 2 * r * self.yn + r * r * self.nn, 0.0)
        error = math.sqrt(m / (m - 1) * spread) / self.n
        half = t_quantile(1 - (1 - confidence) / 2, m - 1) * error
        return Interval(r, r - half, r + half, confidence, RATIO_METHOD)
