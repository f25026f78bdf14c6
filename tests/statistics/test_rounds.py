"""The interval of a speed ratio over paired rounds."""

from __future__ import annotations

import math

import pytest

from shadowdiff.statistics.rounds import ratio_interval


def test_the_geometric_mean_and_students_t_over_the_log_ratios() -> None:
    interval = ratio_interval([1.1, 1.3, 1.2])
    assert interval is not None
    logs = [math.log(r) for r in (1.1, 1.3, 1.2)]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)     # t(0.975, 2 degrees of freedom)
    assert (interval.estimate, interval.low, interval.high) == pytest.approx(
        (math.exp(mean), math.exp(mean - half), math.exp(mean + half)))
    assert interval.low < 1.1 and interval.high > 1.3     # wide, as three rounds should be


def test_no_interval_from_too_few_rounds_or_a_side_that_gave_nothing() -> None:
    assert ratio_interval([]) is None and ratio_interval([1.5, 1.6]) is None
    assert ratio_interval([1.5, 0.0, 1.6]) is None and ratio_interval([1.5, float("nan"), 1.6]) is None
    steady = ratio_interval([2.0, 2.0, 2.0, 2.0])
    assert steady is not None and steady.low == pytest.approx(2.0) == steady.high
