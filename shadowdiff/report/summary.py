"""The numbers of a run: outcomes, noise floor, similarity, categories, speed per side.

Computed without reading an answer's text: one streamed pass over a few columns of the
run's pairs (``store.summaryrows``), its answers counted and their speeds' percentiles
taken by the database, so a run of any size summarizes in memory proportional to its
number of categories.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from shadowdiff.statistics import confidence
from shadowdiff.statistics.scorestats import ScoreTally
from shadowdiff.store import Store
from shadowdiff.store.prune import pruned_counts
from shadowdiff.store.speed import Percentiles
from shadowdiff.store.summaryrows import AnswerGroup, SummaryRow, answer_groups, summary_rows
from shadowdiff.verdict.flips import flip_summary
from shadowdiff.vocabulary import ANSWERED, CHANGED, SUBSTANTIVE, Outcome, Side, Tally

METRIC = ("normalized Indel similarity (rapidfuzz): 1 - indel distance / (len(a) + len(b)), over characters "
          "(over words for answers longer than 8,000 characters)")
OUTCOMES = [o.value for o in Outcome]
# The speed figures compared side to side (candidate over baseline): the first three are
# times (above 1: the candidate is slower), the last a rate (above 1: faster).
RATIOS = ("ttft_p50", "inter_token_latency_p50", "latency_p50", "tokens_per_second_p50")
# Finer near 1, where quantization drift lives.
BINS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 1.0)


@dataclass
class SideStats:
    requests: int = 0
    errors: int = 0
    output_tokens: int = 0
    ttft_p50: float | None = None
    ttft_p95: float | None = None
    ttfat_p50: float | None = None    # to the first answer token: after a reasoning model's thinking
    ttfat_p95: float | None = None
    latency_p50: float | None = None
    latency_p95: float | None = None
    # Decoding, per request: the mean time between output tokens after the first, from the
    # first token's arrival to the last's, and the output tokens/s that makes; measured on
    # streamed answers whose tokens did not all come at once (``decoded`` of them).
    decoded: int = 0
    inter_token_latency_p50: float | None = None
    inter_token_latency_p95: float | None = None
    tokens_per_second_p50: float | None = None
    # where the answers' output token counts came from (records.TOKEN_SOURCES), and how
    # many answers had none: an engine without usage in its streams (llama.cpp's server)
    # is counted from its logprobs or its streamed pieces
    token_sources: dict[str, int] = field(default_factory=dict)

    def add(self, group: AnswerGroup) -> None:
        """Count a group of the side's stored answers (its speeds come from the store, ``_side_speeds``)."""
        self.requests += group.answers
        if not group.ok:
            self.errors += group.answers
            return
        self.output_tokens += group.output_tokens
        source = group.token_source or "none"
        self.token_sources[source] = self.token_sources.get(source, 0) + group.answers
        self.decoded += group.decoded


@dataclass
class CategoryRow:
    category: str
    pairs: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    similarity_sum: float = 0.0
    similarity_n: int = 0

    @property
    def mean_similarity(self) -> float | None:
        return self.similarity_sum / self.similarity_n if self.similarity_n else None


@dataclass
class Summary:
    run_id: str
    kind: str
    created_at: str
    settings: dict[str, Any]
    pairs: int                            # compared (for a serve run: more than were stored)
    stored: int                           # pairs in the store, which the rest of the report shows
    stored_changed: int                   # of those, changed: answered by both sides, not byte-identical
    stored_failed: int                    # of those, errors: shown side by side with the changed ones
    outcomes: dict[str, int]
    comparable: int
    comparable_outcomes: dict[str, int]   # the pairs the rates are about: deterministic decoding
    noise: dict[str, int] | None
    histogram: list[dict[str, Any]]
    categories: list[dict[str, Any]]
    sides: dict[str, dict[str, Any]]
    skipped: list[dict[str, Any]]
    # a proxy's requests that made no pair, by why (NOT_COMPARED_REASONS)
    not_compared: dict[str, int] = field(default_factory=dict)
    # a proxy's requests it did not mirror, by why (NOT_MIRRORED_REASONS)
    not_mirrored: dict[str, int] = field(default_factory=dict)
    # a proxy's pairs compared (and counted above) but never stored, by outcome (store.DROPPED)
    dropped: dict[str, int] = field(default_factory=dict)
    pruned: int = 0                       # stored pairs deleted by retention since (never reviewed ones)
    metric: str = METRIC
    # comparable pairs both the candidate and the replica answered, as a paired table: changed
    # (not identical) on both, the candidate only, the replica only, neither; None for a run
    # whose pairs are sampled (serve keeps identical ones at --keep-rate) or has no replica
    paired: list[int] | None = None
    # teacher-forced token agreement of the candidate with the baseline's answers, and of
    # the replica (its noise floor): shadowdiff.statistics.scorestats; None for a run never scored
    token_agreement: dict[str, Any] | None = None
    noise_token_agreement: dict[str, Any] | None = None
    # pairs graded against a reference answer: flips, McNemar's test (shadowdiff.verdict.flips); None
    # when no pair had a reference, only the counts when none was graded on both sides
    flips: dict[str, Any] | None = None
    finished_at: str | None = None        # None: the run did not finish (or is still going)
    # a `shadowdiff bench --out` file's figures (shadowdiff.report.benchfigures): stored with the
    # run by replay --bench, or given to this report by report --bench; None without one
    bench: dict[str, Any] | None = None

    @property
    def changed_rate(self) -> float | None:
        """Share of answered comparable pairs that changed: not byte-identical
        (equivalent, near or divergent). Sampled pairs differ by chance, so they never count."""
        return _rate(self.comparable_outcomes, CHANGED)

    @property
    def substantive_rate(self) -> float | None:
        """Share of answered comparable pairs changed in substance (near or divergent):
        the ones that need a person's verdict."""
        return _rate(self.comparable_outcomes, SUBSTANTIVE)

    @property
    def thinks(self) -> bool:
        """Whether some side's answers come after thinking: its first answer token is
        later than its first token, so the reports show both times (not for stores that
        predate the measure, nor for answers that all ended in their thinking)."""
        return any(s["ttfat_p50"] is not None and (s["ttfat_p50"], s["ttfat_p95"]) != (s["ttft_p50"], s["ttft_p95"])
                   for s in self.sides.values())

    @property
    def noise_rate(self) -> float | None:
        """``changed_rate`` of the replica against the baseline: the noise floor."""
        return _rate(self.noise, CHANGED) if self.noise else None

    @property
    def noise_substantive_rate(self) -> float | None:
        return _rate(self.noise, SUBSTANTIVE) if self.noise else None

    @property
    def excess_divergence(self) -> dict[str, Any] | None:
        """The candidate's changed rate minus the noise floor's on the same prompts, with a
        95 % interval fit for paired proportions (``confidence.paired_difference``): on the
        comparable prompts both the candidate and the replica answered (``pairs`` of them,
        out of ``compared``), each side's changed rate on them beside it."""
        interval = confidence.paired_difference(*self.paired) if self.paired else None
        if interval is None or self.paired is None:
            return None
        both, candidate_only, replica_only, _ = self.paired
        n = sum(self.paired)
        return {**interval.as_json(), "pairs": n, "compared": self.counts["compared"],
                "candidate_changed": (both + candidate_only) / n, "replica_changed": (both + replica_only) / n}

    @property
    def counts(self) -> dict[str, int]:
        """One set of counts for the run, the same in every output and in the verdict's:
        every pair made is compared (comparable, both sides answered), unanswered
        (comparable, neither side reached an answer), sampled (not comparable) or an error."""
        co = self.comparable_outcomes
        errors = self.outcomes.get(Outcome.ERROR, 0)
        sampled_errors = errors - co.get(Outcome.ERROR, 0)
        by_outcome = {o.value: co.get(o, 0) for o in ANSWERED}
        return {"pairs": self.pairs, "compared": sum(by_outcome.values()), **by_outcome,
                "unanswered": co.get(Outcome.UNANSWERED, 0), "sampled": self.pairs - self.comparable - sampled_errors,
                "errors": errors}

    @property
    def ratios(self) -> dict[str, float | None]:
        """Candidate over baseline for each of ``RATIOS`` (None where a side has no figure)."""
        base, cand = self.sides.get("baseline", {}), self.sides.get("candidate", {})
        return {name: cand[name] / base[name] if base.get(name) and cand.get(name) is not None else None
                for name in RATIOS}

    @property
    def speedup(self) -> float | None:
        """Candidate over baseline output tokens/s per request (p50): above 1 decodes faster."""
        return self.ratios["tokens_per_second_p50"]

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["changed_rate"] = self.changed_rate
        out["substantive_rate"] = self.substantive_rate
        out["noise_rate"] = self.noise_rate
        out["noise_substantive_rate"] = self.noise_substantive_rate
        out["excess_divergence"] = self.excess_divergence
        out["counts"] = self.counts
        out["ratios"] = self.ratios
        out["speedup"] = self.speedup
        return out


def iso_time(moment: datetime) -> str:
    """A time in ISO 8601 to the second, with its zone (SQLite returns stored times
    without one: the store writes them in UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.isoformat(timespec="seconds")


def _by_outcome() -> Counter[str]:
    """Every outcome at 0, in their order: the order the reports list them in."""
    return Counter(dict.fromkeys(OUTCOMES, 0))


@dataclass
class _Pairs:
    """What a run's stored pairs say, read in one pass (``add``, a pair at a time)."""

    outcomes: Counter[str] = field(default_factory=_by_outcome)
    comparable_outcomes: Counter[str] = field(default_factory=_by_outcome)
    noise: Counter[str] = field(default_factory=Counter)
    bins: list[int] = field(default_factory=lambda: [0] * (len(BINS) - 1))
    categories: dict[str, CategoryRow] = field(default_factory=dict)
    sides: dict[Side, SideStats] = field(default_factory=dict)
    total: int = 0
    comparable: int = 0
    # pairs by (changed, the noise floor changed): both, only the pair, only the floor, neither
    paired: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    scores: ScoreTally = field(default_factory=ScoreTally)
    noise_scores: ScoreTally = field(default_factory=ScoreTally)

    def add(self, pair: SummaryRow) -> None:
        self.total += 1
        self.scores.add(pair.score, pair.noise_score)
        self.noise_scores.add(pair.noise_score)
        outcome, similarity = pair.outcome, pair.similarity
        self.outcomes[outcome] += 1
        if pair.comparable:   # the rates, the floor and the histogram: deterministic pairs only
            self._add_comparable(outcome, pair.noise_outcome, similarity)
        row = self.categories.setdefault(pair.category or "(none)", CategoryRow(pair.category or "(none)"))
        row.pairs += 1
        row.outcomes[outcome] += 1
        if similarity is not None:
            row.similarity_sum += similarity
            row.similarity_n += 1

    def _add_comparable(self, outcome: str, noise_outcome: str | None, similarity: float | None) -> None:
        self.comparable += 1
        self.comparable_outcomes[outcome] += 1
        if noise_outcome:
            self.noise[noise_outcome] += 1
            if outcome in ANSWERED and noise_outcome in ANSWERED:
                changed, floor = outcome != Outcome.IDENTICAL, noise_outcome != Outcome.IDENTICAL
                self.paired[0 if changed and floor else 1 if changed else 2 if floor else 3] += 1
        if outcome in SUBSTANTIVE and similarity is not None:
            self.bins[_bin(similarity)] += 1


@dataclass
class _Counted:
    """A serve run's counts table, by what each row counts (``Store.counts``)."""

    outcomes: Counter[str] = field(default_factory=_by_outcome)
    comparable_outcomes: Counter[str] = field(default_factory=_by_outcome)
    noise: Counter[str] = field(default_factory=Counter)
    not_compared: Counter[str] = field(default_factory=Counter)
    not_mirrored: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)

    def add(self, of: str, outcome: str, comparable: bool, n: int) -> None:
        aside: dict[str, Counter[str]] = {Tally.NOT_COMPARED: self.not_compared, Tally.DROPPED: self.dropped,
                                          Tally.NOT_MIRRORED: self.not_mirrored}
        if of in aside:
            aside[of][outcome] += n
        elif of == "noise":
            if comparable:
                self.noise[outcome] += n
        elif of != Tally.CAPPED:   # (capped: judged by the verdict, a subset of the pairs counted here)
            self.outcomes[outcome] += n
            if comparable:
                self.comparable_outcomes[outcome] += n


# The percentiles of each measure the summary shows, per side.
SPEEDS = {"ttft": (50, 95), "ttfat": (50, 95), "duration": (50, 95), "inter_token_latency": (50, 95),
          "tokens_per_second": (50,)}


def _side_speeds(speeds: Percentiles, side: Side, stats: SideStats) -> None:
    figures = speeds.get(side, {})

    def of(measure: str) -> list[float | None]:
        return figures.get(measure, [None for _ in SPEEDS[measure]])

    stats.ttft_p50, stats.ttft_p95 = of("ttft")
    stats.ttfat_p50, stats.ttfat_p95 = of("ttfat")
    stats.latency_p50, stats.latency_p95 = of("duration")
    stats.inter_token_latency_p50, stats.inter_token_latency_p95 = of("inter_token_latency")
    (stats.tokens_per_second_p50,) = of("tokens_per_second")


def summarize(store: Store, run_id: str) -> Summary:
    # the counts and percentiles below are plans over the whole run: from current statistics
    store.refresh_statistics()
    run = store.run(run_id)
    stored = _Pairs()
    for pair in summary_rows(store, run_id):
        stored.add(pair)
    for group in answer_groups(store, run_id):
        stored.sides.setdefault(group.side, SideStats()).add(group)
    counted = _Counted(outcomes=stored.outcomes, comparable_outcomes=stored.comparable_outcomes, noise=stored.noise)
    total, comparable, paired = stored.total, stored.comparable, stored.paired
    if seen := store.counts(run_id):
        # A serve run stores every changed comparable pair but keeps identical, sampled
        # and failed ones at --keep-rate: the mix of outcomes comes from its counts (and
        # its stored pairs are no paired sample of them).
        counted = _Counted()
        for (of, outcome, is_comparable), n in seen.items():
            counted.add(of, outcome, is_comparable, n)
        total, comparable = sum(counted.outcomes.values()), sum(counted.comparable_outcomes.values())
        paired = [0, 0, 0, 0]
    speeds = store.speed_percentiles(run_id, SPEEDS) if stored.sides else {}
    for side, stats in stored.sides.items():
        _side_speeds(speeds, side, stats)
    return Summary(
        run_id=run.id, kind=run.kind, created_at=iso_time(run.created_at), settings=run.settings,
        finished_at=iso_time(run.finished_at) if run.finished_at else None,
        pairs=total, stored=stored.total, stored_changed=sum(stored.outcomes[o] for o in CHANGED),
        stored_failed=stored.outcomes[Outcome.ERROR],
        outcomes=dict(counted.outcomes), comparable=comparable,
        comparable_outcomes=dict(counted.comparable_outcomes),
        noise=dict(counted.noise) if counted.noise else None,
        histogram=[{"from": BINS[i], "to": BINS[i + 1], "pairs": n} for i, n in enumerate(stored.bins)],
        categories=[{"category": r.category, "pairs": r.pairs, **r.outcomes, "mean_similarity": r.mean_similarity}
                    for r in sorted(stored.categories.values(), key=lambda r: r.category)],
        sides={side.value: asdict(stats) for side, stats in sorted(stored.sides.items())},
        skipped=[{"line": line, "reason": reason} for line, reason in store.skipped(run_id)],
        not_compared=dict(counted.not_compared),
        not_mirrored=dict(counted.not_mirrored),
        dropped=dict(counted.dropped),
        pruned=sum(pruned_counts(store, run_id).values()),
        paired=paired if any(paired) else None,
        token_agreement=stored.scores.as_json(), noise_token_agreement=stored.noise_scores.as_json(),
        flips=flip_summary(store, run_id),
    )


def _rate(outcomes: dict[str, int], which: tuple[str, ...]) -> float | None:
    """The share of the answered pairs (errors and unanswered ones left out) whose outcome is one of ``which``."""
    answered = sum(outcomes.get(o, 0) for o in ANSWERED)
    return sum(outcomes.get(o, 0) for o in which) / answered if answered else None


def _bin(similarity: float) -> int:
    for i in range(len(BINS) - 1):
        if similarity < BINS[i + 1]:
            return i
    return len(BINS) - 2
