"""The bounds and intervals of shadowdiff.statistics.confidence: closed forms where there are some,
the defining equation otherwise, and their coverage checked by simulation (a 95 % bound
must hold the true rate in about 95 % of runs; Clopper–Pearson at least that)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from statistics import NormalDist

import pytest

from shadowdiff.statistics import confidence
from shadowdiff.statistics.confidence import paired_difference, rate_upper, reviews_needed
from shadowdiff.store import Store
from shadowdiff.store.review import ReviewQueue
from tests.support import cli
from tests.support.demo import Demo


def test_zero_in_twenty_still_allows_fourteen_percent() -> None:
    assert rate_upper(0, 20) == pytest.approx(1 - 0.05 ** (1 / 20))
    assert round(rate_upper(0, 20), 4) == 0.1391          # the "up to 14 %"
    assert rate_upper(20, 20) == 1.0 and rate_upper(0, 1) == pytest.approx(0.95)
    with pytest.raises(ValueError, match="3 events in 2 trials"):
        rate_upper(3, 2)


def test_the_bound_solves_the_binomial_equation() -> None:
    for k, n in ((1, 20), (3, 50), (10, 1000), (250, 100_000)):
        upper = rate_upper(k, n)
        assert k / n < upper < 1
        # P(X <= k | n, upper) = 5 %: the largest rate the data do not rule out
        assert confidence._binomial_cdf(k, n, upper) == pytest.approx(0.05, abs=1e-9)
    assert round(rate_upper(1, 20), 4) == 0.2161          # tables of exact one-sided bounds


def test_reviews_needed_for_a_target_bound() -> None:
    assert reviews_needed(0.14) == 20 and rate_upper(0, reviews_needed(0.14)) <= 0.14
    assert reviews_needed(0.05) == 59 and rate_upper(0, 58) > 0.05 >= rate_upper(0, 59)
    assert reviews_needed(0.01) == 299
    with pytest.raises(ValueError, match="between 0 and 1"):
        reviews_needed(0.0)


def test_the_upper_bound_covers_the_true_rate_at_least_95_percent_of_the_time() -> None:
    rng = random.Random(20)
    for rate, n in ((0.02, 50), (0.1, 20), (0.3, 80)):
        runs = 1000
        covered = sum(rate <= rate_upper(sum(rng.random() < rate for _ in range(n)), n) for _ in range(runs))
        assert covered / runs >= 0.94, (rate, n, covered)


def test_newcombes_published_intervals() -> None:
    """Method 10's figures as published (Newcombe 1998, and as held by ratesci's tests):
    a table from Newcombe's paper and one from Fagerland et al."""
    for table, (low, high) in (((20, 12, 2, 16), (0.0562, 0.3292)), ((1, 1, 7, 12), (-0.507, -0.026)),
                               ((8, 3, 1, 2), (-0.1574, 0.4136))):
        interval = paired_difference(*table)
        assert interval is not None
        assert (round(interval.low, 4), round(interval.high, 4)) == pytest.approx((low, high), abs=6e-4), table
    # every prompt agreeing is no proof of no difference: the interval still has width
    same = paired_difference(5, 0, 0, 5)
    assert same is not None and same.low < 0 < same.high and same.high > 0.1


def test_a_paired_difference_on_the_same_prompts() -> None:
    # 80 prompts: the candidate changed 72, the replica 18, 16 of them both
    interval = paired_difference(both=16, first_only=56, second_only=2, neither=6)
    assert interval is not None
    assert interval.estimate == pytest.approx((56 - 2) / 80)
    assert interval.low < interval.estimate < interval.high and interval.low > 0.5
    assert set(interval.as_json()) == {"estimate", "low", "high", "confidence", "method"}
    none = paired_difference(0, 0, 0, 20)       # nothing changed on either side
    assert none is not None and none.estimate == 0 and none.low < 0 < none.high
    assert paired_difference(0, 0, 0, 0) is None
    # pairs that go together give a narrower interval than the same margins apart
    together = paired_difference(30, 10, 0, 40)
    apart = paired_difference(6, 34, 24, 16)
    assert together is not None and apart is not None and together.estimate == apart.estimate
    assert together.high - together.low < apart.high - apart.low


def test_the_paired_interval_covers_the_true_difference_about_95_percent_of_the_time() -> None:
    """Prompts the replica changed, the candidate changed too (plus more of its own), or
    the two independently: the true excess is known; the interval should hold it in about
    95 % of 1,000 runs (Newcombe's method 10 is near nominal, a little either side)."""
    rng = random.Random(7)
    for p_noise, p_candidate, correlated, n in ((0.2, 0.6, True, 80), (0.0, 0.1, True, 60),
                                                (0.2, 0.25, False, 200), (0.1, 0.1, False, 40)):
        runs, covered = 1000, 0
        for _ in range(runs):
            counts = [0, 0, 0, 0]   # both, first only, second only, neither
            for _ in range(n):
                noise = rng.random() < p_noise                 # the replica changed this prompt
                if correlated:                                 # ... and so did the candidate, and more
                    changed = noise or rng.random() < (p_candidate - p_noise) / (1 - p_noise)
                else:
                    changed = rng.random() < p_candidate
                counts[0 if changed and noise else 1 if changed else 2 if noise else 3] += 1
            interval = paired_difference(*counts)
            assert interval is not None
            covered += interval.low <= p_candidate - p_noise <= interval.high
        assert 0.92 <= covered / runs <= 0.99, (p_noise, p_candidate, correlated, n, covered)
    # most prompts agree (both changed or neither): without Newcombe's corrected phi the
    # interval shrank to nothing and held the true excess 64.8 % of the time
    runs, covered = 1000, 0
    for _ in range(runs):
        counts = [0, 0, 0, 0]
        for _ in range(50):
            noise = rng.random() < 0.5
            changed = noise or rng.random() < 0.02 / 0.5
            counts[0 if changed and noise else 1 if changed else 2 if noise else 3] += 1
        interval = paired_difference(*counts)
        assert interval is not None
        covered += interval.low <= 0.02 <= interval.high
    assert covered / runs >= 0.95, covered


def test_a_run_reports_its_excess_divergence_and_the_bound_its_reviews_allow(tmp_path: Path, demo: Demo) -> None:
    """The demo's run (simulators), then reviews: summary.json and the report text carry
    the paired excess over the noise floor and the exact bound on the regression rate."""
    out = demo.copy(tmp_path / "demo")
    summary = json.loads((out / "summary.json").read_text())
    excess, (both, first, second, neither) = summary["excess_divergence"], summary["paired"]
    assert both + first + second + neither == summary["comparable"] - summary["comparable_outcomes"]["error"]
    assert excess["estimate"] == pytest.approx(summary["changed_rate"] - summary["noise_rate"])
    assert excess["low"] <= excess["estimate"] <= excess["high"] and excess["confidence"] == 0.95
    assert "excess over the noise floor" in demo.ran.stdout
    assert summary["acceptance"]["factual_rate_upper"] is None        # nothing reviewed yet
    store = Store.open(out)
    run = store.latest_run("replay")
    assert run is not None
    queue = ReviewQueue(store)
    needing = [p.row["id"] for p in store.pairs(run.id) if p.row["outcome"] in ("near", "divergent")]
    for pair_id in needing:
        queue.add_review(pair_id, "ada", "wording")
    store.close()
    report = cli.shadowdiff("report", str(out))
    bound = json.loads((out / "summary.json").read_text())["acceptance"]["factual_rate_upper"]
    n = len(needing)
    assert bound["factual"] == 0 and bound["reviewed"] == n and bound["upper"] == pytest.approx(rate_upper(0, n))
    assert f"0 factual in {n} reviewed: the rate among pairs changed in substance may still be up to " \
           f"{rate_upper(0, n) * 100:.1f} %" in report.stdout


def test_reviews_needed_with_regressions_found() -> None:
    needed = reviews_needed(0.05, 1)
    assert needed == 93 and rate_upper(1, needed) <= 0.05 < rate_upper(1, needed - 1)
    for k in (2, 5):
        n = reviews_needed(0.1, k)
        assert rate_upper(k, n) <= 0.1 < rate_upper(k, n - 1)


def test_the_gates_on_how_sure_a_run_is(tmp_path: Path, demo: Demo) -> None:
    """report --max-excess-divergence fails only when the interval's lower bound is above
    it, passes only when the whole interval is within it, and is undecided in between;
    --max-factual-rate holds a run INCOMPLETE until enough reviews bound the rate;
    `shadowdiff plan` says how many."""
    out = demo.copy(tmp_path / "demo")
    excess = json.loads((out / "summary.json").read_text())["excess_divergence"]

    def report(*options: str) -> cli.Ran:
        # (the demo's 20 prompts: fewer than the default --min-compared, which is not the subject here)
        return cli.shadowdiff("report", str(out), "--min-reviewed", "0", "--min-compared", "20", *options)

    assert report().returncode == 0                                    # nothing asked of the figures: PASS
    above = report("--max-excess-divergence", f"{excess['high'] + 0.01:.2f}")
    assert above.returncode == 0, above.stdout
    within = report("--max-excess-divergence", f"{(excess['low'] + excess['estimate']) / 2:.2f}")
    # the estimate is above, but not surely: no FAIL, and no PASS while the interval reaches past it
    assert within.returncode == 2 and "more prompts (or a quieter replica) narrow it" in within.stdout, within.stdout
    below = report("--max-excess-divergence", f"{excess['low'] - 0.01:.2f}")
    assert below.returncode == 1 and "more answers than the noise floor" in below.stdout
    bounded = report("--max-factual-rate", "0.05")
    assert bounded.returncode == 2 and "59 more reviewed pairs without a factual regression" in bounded.stdout
    plan = cli.shadowdiff("plan", "--max-factual-rate", "0.05")
    assert plan.returncode == 0 and plan.stdout.splitlines()[1].split() == ["5", "%", "59"]
    bad = report("--max-factual-rate", "0")
    assert bad.returncode == 3 and "Traceback" not in bad.stderr


@pytest.mark.parametrize(("df", "quantile"), [(1, 12.7062), (2, 4.3027), (3, 3.1824), (5, 2.5706), (10, 2.2281),
                                              (19, 2.0930), (30, 2.0423), (1000, 1.9623)])
def test_students_t_quantiles_match_the_tables(df: int, quantile: float) -> None:
    assert confidence.t_quantile(0.975, df) == pytest.approx(quantile, abs=1e-4)
    assert confidence.t_quantile(0.025, df) == pytest.approx(-quantile, abs=1e-4)
    assert confidence.t_quantile(0.95, 7) == pytest.approx(1.8946, abs=1e-4)
    with pytest.raises(ValueError, match="no t quantile"):
        confidence.t_quantile(1.0, 3)


def test_a_clustered_ratio_is_the_ratio_of_sums_with_an_interval_from_two_clusters() -> None:
    ratio = confidence.ClusteredRatio()
    assert ratio.estimate is None and ratio.interval() is None
    ratio.add(3, 100)
    assert ratio.estimate == pytest.approx(0.03) and ratio.interval() is None   # one prompt: no spread
    ratio.add(1, 300)
    interval = ratio.interval()
    assert interval is not None and interval.estimate == pytest.approx(4 / 400)
    # by hand: residuals 3 - 0.01*100 = 2 and 1 - 0.01*300 = -2; m/(m-1) * 8 = 16; se = 4/400; t(0.975, 1)
    assert interval.high - interval.estimate == pytest.approx(12.7062 * 0.01, abs=1e-5)
    assert "Student's t" in interval.method


def test_the_clustered_interval_covers_the_true_excess_about_95_percent_of_the_time() -> None:
    """Prompts of unlike lengths whose own excess rates scatter around a true one: the
    interval over 20 prompts holds the true rate in about 95 % of runs."""
    rng = random.Random(20261205)
    true, spread, runs, covered = 0.03, 0.02, 1500, 0
    # the population ratio E[y]/E[n] (rates independent of lengths): the mean of the rate
    # clipped at 0, a little above `true`: mu * Phi(mu/sigma) + sigma * phi(mu/sigma)
    unit = NormalDist()
    mean_rate = true * unit.cdf(true / spread) + spread * unit.pdf(true / spread)
    for _ in range(runs):
        ratio = confidence.ClusteredRatio()
        for _ in range(20):
            n = rng.randint(40, 256)
            rate = min(max(rng.gauss(true, spread), 0.0), 1.0)   # prompts differ in how much they move
            ratio.add(sum(rng.random() < rate for _ in range(n)), n)
        interval = ratio.interval()
        assert interval is not None
        covered += interval.low <= mean_rate <= interval.high
    assert 0.92 <= covered / runs <= 0.975, covered / runs
