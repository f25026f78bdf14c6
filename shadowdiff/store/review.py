"""The review queue on top of the store: claims, verdicts, counts, exports.

Several reviewers (and several proxy replicas writing pairs) share one store. A pair
is *claimed* by one reviewer at a time: on PostgreSQL with ``FOR UPDATE SKIP LOCKED``
(two reviewers asking at once get different pairs, without waiting on each other),
on SQLite by a conditional update (SQLite has one writer at a time anyway). A claim
expires after ``ttl`` seconds, so a reviewer who walks away does not hold a pair
forever. A verdict is never overwritten: each is a row of its own, and two reviewers
who disagree are both kept and shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from shadowdiff.errors import InputError
from shadowdiff.records import Side, Verdict
from shadowdiff.store import Store, StoredPair, schema

NEEDS_REVIEW = ("near", "divergent")   # outcomes a person must look at


@dataclass(frozen=True)
class Review:
    id: int
    pair_id: int
    reviewer: str
    verdict: Verdict
    wrong_side: Side | None
    note: str
    created_at: datetime


@dataclass(frozen=True)
class Filters:
    """What the queue page and ``claim_next`` select."""

    run_id: str | None = None
    outcome: str | None = None
    suggested: str | None = None
    signal: str | None = None
    verdict: str | None = None
    unreviewed: bool = False


def _review(row: Any) -> Review:
    return Review(row.id, row.pair_id, row.reviewer, Verdict(row.verdict),
                  Side(row.wrong_side) if row.wrong_side else None, row.note, row.created_at)


class ReviewQueue:
    def __init__(self, store: Store, claim_ttl: float = 600.0) -> None:
        self.store = store
        self.engine = store.engine
        self.claim_ttl = claim_ttl

    # -- selecting ----------------------------------------------------------------------

    def _where(self, f: Filters) -> list[Any]:
        p, r = schema.pairs.c, schema.reviews.c
        clauses: list[Any] = [p.outcome != "identical"]
        if f.run_id:
            clauses.append(p.run_id == f.run_id)
        if f.outcome:
            clauses.append(p.outcome == f.outcome)
        if f.suggested:
            clauses.append(p.suggested == f.suggested)
        reviewed = sa.exists().where(r.pair_id == p.id)
        if f.unreviewed:
            clauses.append(~reviewed)
        if f.verdict:
            clauses.append(sa.exists().where(r.pair_id == p.id, r.verdict == f.verdict))
        if f.signal:
            # JSON containment differs per database; a text match on the kind is portable.
            clauses.append(sa.cast(p.signals, sa.Text).like(f'%"kind": "{f.signal}"%')
                           | sa.cast(p.signals, sa.Text).like(f'%"kind":"{f.signal}"%'))
        return clauses

    def page(self, f: Filters, offset: int = 0, limit: int = 50) -> list[dict[str, Any]]:
        """Queue rows, highest priority first, with their review counts."""
        p, r = schema.pairs.c, schema.reviews.c
        reviews = sa.select(sa.func.count()).where(r.pair_id == p.id).scalar_subquery()
        verdicts = sa.select(sa.func.count(sa.distinct(r.verdict))).where(r.pair_id == p.id).scalar_subquery()
        query = (sa.select(p.id, p.key, p.run_id, p.category, p.outcome, p.similarity, p.suggested, p.priority,
                           p.signals, p.claimed_by, p.claimed_until, p.judge_verdict, p.judge_wrong_side,
                           reviews.label("reviews"), verdicts.label("verdicts"))
                 .where(*self._where(f)).order_by(p.priority.desc(), p.id).offset(offset).limit(limit))
        with self.engine.connect() as c:
            return [dict(row._mapping) for row in c.execute(query)]

    def counts(self, f: Filters) -> dict[str, int]:
        """How many pairs the filter selects, how many are reviewed, and per verdict."""
        p, r = schema.pairs.c, schema.reviews.c
        base = Filters(run_id=f.run_id)
        count = sa.select(sa.func.count()).select_from(schema.pairs)
        with self.engine.connect() as c:
            total = c.execute(count.where(*self._where(base))).scalar_one()
            selected = c.execute(count.where(*self._where(f))).scalar_one()
            failed = c.execute(count.where(*self._where(base), p.outcome == "error")).scalar_one()
            reviewed = c.execute(sa.select(sa.func.count(sa.distinct(r.pair_id))).select_from(
                schema.reviews.join(schema.pairs, r.pair_id == p.id)).where(*self._where(base))).scalar_one()
            by_verdict = c.execute(sa.select(r.verdict, sa.func.count()).select_from(
                schema.reviews.join(schema.pairs, r.pair_id == p.id)).where(*self._where(base))
                .group_by(r.verdict)).all()
            # what the acceptance verdict waits for: changed, comparable pairs
            needing = [*self._where(base), p.outcome.in_(NEEDS_REVIEW), p.comparable.is_(True)]
            needs = c.execute(count.where(*needing)).scalar_one()
            needs_done = c.execute(count.where(*needing, sa.exists().where(r.pair_id == p.id))).scalar_one()
        # the queue holds every pair not identical: the changed ones and the failed ones
        out = {"total": int(total), "changed": int(total) - int(failed), "failed": int(failed),
               "selected": int(selected), "reviewed": int(reviewed),
               "needs_review": int(needs), "needs_review_done": int(needs_done)}
        out.update({f"verdict_{v}": int(n) for v, n in by_verdict})
        return out

    def neighbours(self, pair_id: int, f: Filters) -> tuple[int | None, int | None]:
        """The pairs before and after ``pair_id`` in the queue's order."""
        p = schema.pairs.c
        with self.engine.connect() as c:
            row = c.execute(sa.select(p.priority).where(p.id == pair_id)).one_or_none()
            if row is None:
                return None, None
            prio = row.priority
            before = c.execute(sa.select(p.id).where(*self._where(f), sa.or_(
                p.priority > prio, sa.and_(p.priority == prio, p.id < pair_id)))
                .order_by(p.priority.asc(), p.id.desc()).limit(1)).scalar_one_or_none()
            after = c.execute(sa.select(p.id).where(*self._where(f), sa.or_(
                p.priority < prio, sa.and_(p.priority == prio, p.id > pair_id)))
                .order_by(p.priority.desc(), p.id.asc()).limit(1)).scalar_one_or_none()
        return before, after

    def pair(self, pair_id: int) -> StoredPair | None:
        rows = self.store._with_answers(schema.pairs.select().where(schema.pairs.c.id == pair_id))
        return rows[0] if rows else None

    # -- claims -------------------------------------------------------------------------

    def claim_next(self, reviewer: str, f: Filters | None = None) -> int | None:
        """Claim the most urgent unreviewed pair nobody else holds; its id, or None."""
        f = Filters(run_id=f.run_id if f else None, outcome=f.outcome if f else None,
                    suggested=f.suggested if f else None, signal=f.signal if f else None, unreviewed=True)
        p = schema.pairs.c
        now = datetime.now(UTC)
        free = sa.or_(p.claimed_until.is_(None), p.claimed_until < now, p.claimed_by == reviewer)
        candidates = (sa.select(p.id).where(*self._where(f), free)
                      # a reviewer's own claim first (CASE: NULLs sort first on PostgreSQL)
                      .order_by(sa.case((p.claimed_by == reviewer, 1), else_=0).desc(), p.priority.desc(), p.id))
        until = now + timedelta(seconds=self.claim_ttl)
        with self.engine.begin() as c:
            if self.store.dialect == "postgresql":
                pair_id = c.execute(candidates.limit(1).with_for_update(skip_locked=True, of=schema.pairs)
                                    ).scalar_one_or_none()
                if pair_id is None:
                    return None
                c.execute(schema.pairs.update().where(p.id == pair_id)
                          .values(claimed_by=reviewer, claimed_until=until))
                return int(pair_id)
            for pair_id in c.execute(candidates.limit(20)).scalars():
                claimed = c.execute(schema.pairs.update().where(p.id == pair_id, free)
                                    .values(claimed_by=reviewer, claimed_until=until))
                if claimed.rowcount == 1:
                    return int(pair_id)
        return None

    def release(self, pair_id: int, reviewer: str) -> None:
        p = schema.pairs.c
        with self.engine.begin() as c:
            c.execute(schema.pairs.update().where(p.id == pair_id, p.claimed_by == reviewer)
                      .values(claimed_by=None, claimed_until=None))

    # -- verdicts -------------------------------------------------------------------------

    def add_review(self, pair_id: int, reviewer: str, verdict: str, wrong_side: str | None = None,
                   note: str = "") -> Review:
        """Record a verdict (a new row: an earlier verdict is kept, never overwritten)."""
        try:
            checked = Verdict(verdict)
        except ValueError:
            raise InputError(f"unknown verdict {verdict!r}; one of {', '.join(v.value for v in Verdict)}") from None
        side: Side | None = None
        if checked is Verdict.FACTUAL:
            try:
                side = Side(wrong_side or "")
            except ValueError:
                raise InputError("a factual verdict says which side is wrong: baseline or candidate") from None
            if side is Side.REPLICA:
                raise InputError("a factual verdict says which side is wrong: baseline or candidate")
        if not reviewer.strip():
            raise InputError("a verdict needs the reviewer's name")
        if len(note) > 10_000:
            raise InputError("the note is longer than 10,000 characters")
        now = datetime.now(UTC)
        with self.engine.begin() as c:
            # (on PostgreSQL the pair is locked against deletion until the verdict is in: a
            # prune, which skips locked pairs, cannot delete it under the reviewer; one that
            # got there first leaves "no pair", not a foreign-key error)
            exists = sa.select(schema.pairs.c.id).where(schema.pairs.c.id == pair_id).with_for_update(
                read=True, key_share=True)
            if c.execute(exists).first() is None:
                raise InputError(f"no pair {pair_id}")
            review_id = c.execute(schema.reviews.insert().values(
                pair_id=pair_id, reviewer=reviewer.strip()[:255], verdict=checked.value,
                wrong_side=side.value if side else None, note=note, created_at=now)).inserted_primary_key
            c.execute(schema.pairs.update().where(schema.pairs.c.id == pair_id,
                                                  schema.pairs.c.claimed_by == reviewer)
                      .values(claimed_by=None, claimed_until=None))
        assert review_id is not None
        return Review(int(review_id[0]), pair_id, reviewer.strip(), checked, side, note, now)

    def reviews(self, pair_id: int) -> list[Review]:
        query = schema.reviews.select().where(schema.reviews.c.pair_id == pair_id).order_by(schema.reviews.c.id)
        with self.engine.connect() as c:
            return [_review(r) for r in c.execute(query)]

    def export(self, run_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every verdict with its pair's key, outcome and suggestion, oldest first."""
        p, r = schema.pairs.c, schema.reviews.c
        query = (sa.select(r.id, r.pair_id, p.run_id, p.key, p.category, p.outcome, p.similarity, p.suggested,
                           p.judge_verdict, r.reviewer, r.verdict, r.wrong_side, r.note, r.created_at)
                 .select_from(schema.reviews.join(schema.pairs, r.pair_id == p.id)).order_by(r.id))
        if run_id:
            query = query.where(p.run_id == run_id)
        with self.engine.connect() as c:
            for row in c.execute(query):
                out = dict(row._mapping)
                out["created_at"] = out["created_at"].isoformat()
                yield out

    def set_judge(self, pair_id: int, verdict: str, worse_side: str | None, reason: str) -> None:
        with self.engine.begin() as c:
            c.execute(schema.pairs.update().where(schema.pairs.c.id == pair_id).values(
                judge_verdict=verdict, judge_wrong_side=worse_side, judge_reason=reason))


def serve_review_state(store: Store) -> tuple[int, dict[tuple[str, str], int]]:
    """For the proxy's metrics: pairs from live traffic awaiting a verdict, and the
    verdicts given on them by (verdict, wrong side or "none")."""
    p, r, runs = schema.pairs.c, schema.reviews.c, schema.runs.c
    live = sa.select(runs.id).where(runs.kind == "serve")
    with store.engine.connect() as c:
        depth = c.execute(sa.select(sa.func.count()).select_from(schema.pairs).where(
            p.run_id.in_(live), p.outcome.in_(NEEDS_REVIEW), p.comparable.is_(True),
            ~sa.exists().where(r.pair_id == p.id))).scalar_one()
        rows = c.execute(sa.select(r.verdict, r.wrong_side, sa.func.count())
                         .select_from(schema.reviews.join(schema.pairs, r.pair_id == p.id))
                         .where(p.run_id.in_(live)).group_by(r.verdict, r.wrong_side)).all()
    return int(depth), {(verdict, wrong or "none"): int(n) for verdict, wrong, n in rows}
