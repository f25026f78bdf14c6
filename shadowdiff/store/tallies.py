"""A run's tally: what the store holds of a run, counted, for the acceptance verdict.

The verdict (``shadowdiff.verdict.acceptance.decide``) is a pure function of a
``RunTally``, so that its rules can be tested on counts made up by the test; this
module is the reading - every query - and holds no rule. The pairs are counted by the
database, grouped on the few columns the decision needs, so a run of a million pairs
gives a few dozen rows; only the run's reviews (as many as people wrote) and the
answers cut by the token cap (a handful in most runs) are read row by row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from shadowdiff.store import schema
from shadowdiff.store.members import RunMembers
from shadowdiff.store.prune import pruned_counts
from shadowdiff.store.review import first_verdicts
from shadowdiff.store.store import Store
from shadowdiff.vocabulary import Outcome, Side

# The run's setting that says its log changed while it was replayed (how, in words), and
# the one that says a line of it stopped the run (which, in words): replay writes them.
LOG_CHANGED = "log_changed_during_run"
STOPPED_BY_LOG = "stopped_by_log"


@dataclass(frozen=True)
class PairGroup:
    """The run's stored pairs alike in every column the verdict reads, and how many."""

    outcome: str
    comparable: bool
    n: int
    reviewed: bool = False            # a person gave it a verdict
    replica_failed: bool = False      # the replica (the noise floor) failed on its prompt
    suggested: str | None = None      # the triage's suggested verdict
    judge_verdict: str | None = None  # an LLM judge's suggestion (shown, never counted)
    judge_wrong_side: str | None = None


@dataclass(frozen=True)
class Review:
    """A reviewer's first (blind) verdict on a pair."""

    pair_id: int
    key: str
    reviewer: str
    verdict: str
    wrong_side: str | None = None
    note: str = ""


@dataclass(frozen=True)
class CappedPairs:
    """The stored comparable pairs where both sides stopped at the token cap (finish
    reason ``length``) in the same choice."""

    pairs: int = 0
    unanswered: int = 0       # of them, cut before either side gave any answer
    unknown: int = 0          # comparable pairs with no finish reason on a side: not known either way
    # the fewest and the most tokens a side generated per choice in them (None: no count)
    tokens: tuple[int | None, int | None] = (None, None)


@dataclass(frozen=True)
class RunTally:
    """Everything the acceptance verdict decides a run on, read from the store."""

    kind: str = "replay"
    finished: bool = True
    log_changed: str | None = None      # the run's ``LOG_CHANGED`` setting, when set
    stopped_by_log: str | None = None   # the run's ``STOPPED_BY_LOG`` setting, when set
    groups: tuple[PairGroup, ...] = ()
    # each reviewer's first verdict on each pair, oldest first, and how many later ones
    # (given after the reveal, by older builds) were left out
    reviews: tuple[Review, ...] = ()
    after_reveal: int = 0
    # the run's counts table (a serve run's: what it saw, stored or not), by (of, outcome, comparable)
    counts: Mapping[tuple[str, str, bool], int] = field(default_factory=dict)
    # the pairs deleted by retention, by (outcome, comparable): none was reviewed
    pruned: Mapping[tuple[str, bool], int] = field(default_factory=dict)
    skipped: int = 0                    # log lines (or saved answers) that made no pair
    capped: CappedPairs = CappedPairs()
    # the run's proxies that stopped without writing all they compared
    short_members: int = 0


def run_tally(store: Store, run_id: str) -> RunTally:
    """The run's tally, as the store holds it now."""
    groups, reviews = _pairs_and_reviews(store, run_id)
    blind = first_verdicts(reviews)
    capped = _capped(store, run_id)
    counts = store.counts(run_id)
    pruned = pruned_counts(store, run_id)
    skipped = len(store.skipped(run_id))
    run = store.run(run_id)
    changed, stopped = run.settings.get(LOG_CHANGED), run.settings.get(STOPPED_BY_LOG)
    return RunTally(kind=run.kind, finished=run.finished_at is not None,
                    log_changed=str(changed) if changed else None, stopped_by_log=str(stopped) if stopped else None,
                    groups=groups, reviews=tuple(blind), after_reveal=len(reviews) - len(blind), counts=counts,
                    pruned=pruned, skipped=skipped, capped=capped, short_members=_short_members(store, run_id))


def _pairs_and_reviews(store: Store, run_id: str) -> tuple[tuple[PairGroup, ...], list[Review]]:
    """The run's pairs, grouped and counted, and every review of them, oldest first."""
    p, r = schema.pairs.c, schema.reviews.c
    reviewed = (sa.select(r.pair_id).select_from(schema.reviews.join(schema.pairs, r.pair_id == p.id))
                .where(p.run_id == run_id).distinct().subquery())
    is_reviewed = reviewed.c.pair_id.is_not(None).label("reviewed")
    replica_failed = p.noise_outcome == Outcome.ERROR.value
    group = (p.outcome, p.comparable, p.suggested, p.judge_verdict, p.judge_wrong_side)
    with store.engine.connect() as c:
        rows = c.execute(sa.select(*group, is_reviewed, replica_failed.label("replica_failed"),
                                   sa.func.count().label("n"))
                         .select_from(schema.pairs.outerjoin(reviewed, reviewed.c.pair_id == p.id))
                         .where(p.run_id == run_id)
                         .group_by(*group, reviewed.c.pair_id.is_not(None), replica_failed)).all()
        reviews = c.execute(sa.select(r.pair_id, p.key, r.reviewer, r.verdict, r.wrong_side, r.note)
                            .select_from(schema.reviews.join(schema.pairs, r.pair_id == p.id))
                            .where(p.run_id == run_id).order_by(r.id)).all()
    # (a pair without a replica compares its noise outcome, NULL, to nothing: neither true nor false)
    groups = tuple(PairGroup(row.outcome, bool(row.comparable), int(row.n), reviewed=bool(row.reviewed),
                             replica_failed=bool(row.replica_failed), suggested=row.suggested,
                             judge_verdict=row.judge_verdict, judge_wrong_side=row.judge_wrong_side)
                   for row in rows)
    return groups, [Review(row.pair_id, row.key, row.reviewer, row.verdict, row.wrong_side, row.note)
                    for row in reviews]


def _capped(store: Store, run_id: str) -> CappedPairs:
    """The stored comparable pairs cut by the token cap on both sides, and the fewest
    and most tokens a side generated per choice in them. Read from the answers whose
    first choice was cut, or that hold more choices (their finish reasons are in
    ``other_choices``): a handful of rows in most runs."""
    p, base, cand = schema.pairs.c, schema.answers.alias("base"), schema.answers.alias("cand")
    cut_or_many = [sa.or_(side.c.finish_reason == "length", side.c.other_choices.is_not(None)) for side in (base, cand)]
    query = (sa.select(p.outcome, base.c.finish_reason, cand.c.finish_reason, base.c.other_choices,
                       cand.c.other_choices, base.c.completion_tokens, cand.c.completion_tokens,
                       base.c.choice_count, cand.c.choice_count)
             .select_from(schema.pairs
                          .join(base, sa.and_(base.c.pair_id == p.id, base.c.side == Side.BASELINE.value))
                          .join(cand, sa.and_(cand.c.pair_id == p.id, cand.c.side == Side.CANDIDATE.value)))
             .where(p.run_id == run_id, p.comparable, p.outcome != Outcome.ERROR.value, *cut_or_many))
    pairs = unanswered = 0
    tokens: list[float] = []
    unknown = (sa.select(sa.func.count()).select_from(query.get_final_froms()[0])
               .where(p.run_id == run_id, p.comparable, p.outcome != Outcome.ERROR.value,
                      sa.or_(base.c.finish_reason.is_(None), cand.c.finish_reason.is_(None))))
    with store.engine.connect() as c:
        not_known = int(c.execute(unknown).scalar_one())
        for outcome, finish_a, finish_b, others_a, others_b, tokens_a, tokens_b, count_a, count_b in c.execute(query):
            if not _cut(finish_a, others_a) & _cut(finish_b, others_b):
                continue
            pairs += 1
            unanswered += outcome == Outcome.UNANSWERED
            # usage counts every choice's tokens: per choice, as the cap applies
            tokens += [t / max(n or 1, 1) for t, n in ((tokens_a, count_a), (tokens_b, count_b)) if t is not None]
    return CappedPairs(pairs, unanswered, not_known,
                       (round(min(tokens)), round(max(tokens))) if tokens else (None, None))


def _cut(first: str | None, others: Any) -> set[int]:
    """The indexes of an answer's choices that stopped at the token cap."""
    choices = [{"index": 0, "finish_reason": first}, *(others if isinstance(others, list) else ())]
    return {int(ch.get("index", i)) for i, ch in enumerate(choices)
            if isinstance(ch, dict) and ch.get("finish_reason") == "length"}


def _short_members(store: Store, run_id: str) -> int:
    """The run's proxies that stopped without writing all they compared. Lost: killed;
    incomplete: its store failed at shutdown; forced: closed by --force while it still
    counted as running - alive, it moved on to a new run with what it held (and is found
    there); killed, it is short like a lost one."""
    members = RunMembers(store).members(run_id)
    moved = _moved_on(store, run_id, [m.id for m in members if m.ended == "forced"])
    return sum(m.ended in ("lost", "incomplete") or (m.ended == "forced" and m.id not in moved) for m in members)


def _moved_on(store: Store, run_id: str, members: list[str]) -> set[str]:
    """Those of ``members`` (closed by --force in ``run_id``) found in another run since: alive."""
    if not members:
        return set()
    m = schema.run_members.c
    with store.engine.connect() as c:
        return set(c.execute(sa.select(m.member).where(m.member.in_(members), m.run_id != run_id)).scalars())
