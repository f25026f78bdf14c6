"""The plots' bounded data (shadowdiff.report.sampling): a sample that keeps every value up
to its size and a seeded, order-free sample of that size beyond; counts whose histogram
and median are those of every value."""

from __future__ import annotations

import random
import statistics
import tracemalloc

import pytest

from shadowdiff.report import svg as svgplot
from shadowdiff.report.plots import _collect
from shadowdiff.report.sampling import Counts, Sample, mix
from shadowdiff.store.plotrows import PlotRow


def _filled(size: int, values: list[tuple[int, float]]) -> Sample:
    sample = Sample(size)
    for key, value in values:
        sample.add(mix(key), value)
    return sample


def test_up_to_its_size_a_sample_is_every_value_in_order() -> None:
    values = [(k, random.Random(k).random()) for k in range(100)]
    sample = _filled(100, values)
    assert list(sample.values) == [v for _, v in values]
    assert sample.seen == 100 and not sample.sampled


def test_beyond_its_size_it_holds_that_many_whatever_was_fed() -> None:
    sample = Sample(500)
    held = []
    for key in range(50_000):
        sample.add(mix(key), float(key))
        held.append(len(sample._values))
    assert max(held) < 2 * 500   # compacted before it doubles
    assert len(sample.values) == 500 and sample.seen == 50_000 and sample.sampled


def test_the_sample_is_decided_by_the_keys_not_their_order() -> None:
    rows = [(k, float(k)) for k in range(20_000)]
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    a, b = _filled(1000, rows), _filled(1000, shuffled)
    assert sorted(a.values) == sorted(b.values)
    # the keys whose hashes are smallest
    assert sorted(a.values) == sorted(float(k) for k in sorted(range(20_000), key=mix)[:1000])


def test_the_sample_is_uniform() -> None:
    sample = _filled(5000, [(k, float(k % 1000)) for k in range(200_000)])
    # uniform over 0..999: mean 499.5, sd 288.7; the sample's mean within 4 standard errors
    assert abs(statistics.fmean(sample.values) - 499.5) < 4 * 288.7 / 5000 ** 0.5
    deciles = statistics.quantiles(sample.values, n=10)
    assert all(abs(q - 100 * (i + 1)) < 25 for i, q in enumerate(deciles))


def test_a_sample_holds_at_least_one_value() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Sample(0)


@pytest.mark.parametrize("seed", range(5))
def test_counts_give_the_median_of_every_value(seed: int) -> None:
    rng = random.Random(seed)
    values = [float(int(rng.expovariate(1 / 60))) for _ in range(rng.randrange(1, 2000))]
    counts = Counts()
    for v in values:
        counts.add(v)
    assert counts.exact and counts.seen == len(values)
    assert counts.median() == statistics.median(values)
    assert type(counts.median()) is type(statistics.median(values))
    assert Counts().median() is None


def test_counts_merged_into_blocks_keep_the_histogram_exact() -> None:
    rng = random.Random(3)
    values = [float(rng.randrange(0, 20_000_000)) for _ in range(80_000)]   # some 80,000 distinct
    counts = Counts()
    for v in values:
        counts.add(v)
    assert not counts.exact and counts.block == 1000 and len(counts.counts) <= 20_000
    drawn = svgplot.histogram_counts("t", "s", "#000", counts.counts, integer=True,
                                     ends=(counts.low or 0.0, counts.high or 0.0))
    exact = svgplot.histogram("t", svgplot.Series("s", values, "#000"), integer=True)
    assert drawn == exact
    median = counts.median()
    assert median is not None and abs(median - statistics.median(values)) <= counts.block


def _row(key: int, rng: random.Random) -> PlotRow:
    return PlotRow(key, True, "divergent", rng.random(), "near", rng.random(), rng.randrange(300), None,
                   rng.random(), rng.random(), rng.random(), rng.random(), rng.random(), rng.random())


def _peak(rows: int, size: int) -> int:
    rng = random.Random(1)
    tracemalloc.start()
    try:
        _collect((_row(k, rng) for k in range(rows)), size)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_plots_data_does_not_grow_with_the_rows_fed() -> None:
    small, large = _peak(2_000, 200), _peak(20_000, 200)
    # ten times the rows: the same peak, give or take the allocator's noise (a list of
    # every value would add 8 values x 18,000 rows x 8 bytes, over 1 MB)
    assert large < small + 128 * 1024, (small, large)
