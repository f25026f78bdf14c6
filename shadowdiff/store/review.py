"""The review queue on top of the store: claims, verdicts, counts, exports.

Several reviewers (and several proxy replicas writing pairs) share one store. A pair
is *claimed* by one reviewer at a time: on PostgreSQL with ``FOR UPDATE SKIP LOCKED``
(two reviewers asking at once get different pairs, without waiting on each other),
on SQLite by a conditional update (SQLite has one writer at a time anyway). A claim
expires after ``ttl`` seconds, so a reviewer who walks away does not hold a pair
forever. A verdict is never overwritten: each is a row of its own, and two reviewers
who disagree are both kept and shown. A reviewer's first verdict on a pair is their
last: it reveals which side is the candidate on their page, so another from them would
not be blind (``VerdictGiven``). Rows from builds that took one anyway are kept, and
read as after the reveal: shown as such, never counted (``first_verdicts``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from shadowdiff.errors import InputError
from shadowdiff.store import schema
from shadowdiff.store.order import queue_order, queue_place
from shadowdiff.store.reviewers import check_name
from shadowdiff.store.rows import StoredPair
from shadowdiff.store.store import Store
from shadowdiff.triage.signals import SIGNAL_KINDS
from shadowdiff.vocabulary import SUBSTANTIVE, Outcome, Side, Verdict

MAX_NOTE = 10_000
# a filter longer than any value its column holds (keys, categories: 255) selects nothing
MAX_FILTER = 255
# a prompt search is a phrase a reviewer types, not a pasted prompt
MAX_SEARCH = 200
# how much of each prompt the queue reads: its snippet and tooltip, not a whole long prompt per row
PROMPT_PREVIEW = 1000
# the filters as the UI's query string names them, for messages a reviewer can act on
_FILTER_NAMES = {"run_id": "run", "outcome": "outcome", "suggested": "suggested", "signal": "signal",
                 "verdict": "verdict"}


def check_text(what: str, value: str, most: int) -> None:
    """``InputError`` for text no column can take: PostgreSQL refuses a NUL byte anywhere
    in a statement's parameters, and a value longer than its column (a 500, not an answer)."""
    if "\x00" in value:
        raise InputError(f"{what} contains a NUL byte (\\0), which the store cannot hold")
    if len(value) > most:
        raise InputError(f"{what} is longer than {most:,} characters ({len(value):,})")


class VerdictGiven(InputError):
    """A verdict from a reviewer who has already judged the pair (and so seen its reveal)."""

    def __init__(self, reviewer: str, pair_id: int, given: str) -> None:
        super().__init__(
            f"{reviewer} has already given pair {pair_id} a verdict ({given}), and it is final: after a first "
            "verdict the page shows which side is the candidate, so another would not be blind. Nothing was "
            "saved; for another opinion, have a reviewer who has not seen the pair judge it (the queue's "
            "'for a second review')")
        self.reviewer = reviewer
        self.pair_id = pair_id


@dataclass(frozen=True)
class Review:
    id: int
    pair_id: int
    reviewer: str
    verdict: Verdict
    wrong_side: Side | None
    note: str
    created_at: datetime
    # a later verdict of the same reviewer on the pair, which older builds took after the
    # reveal: kept and shown, never counted
    after_reveal: bool = False


@dataclass(frozen=True)
class Filters:
    """What the queue page and ``claim_next`` select."""

    run_id: str | None = None
    outcome: str | None = None
    suggested: str | None = None
    signal: str | None = None
    verdict: str | None = None
    search: str | None = None     # text the prompt contains, any case; % and _ are characters, not wildcards
    unreviewed: bool = False
    mine: bool = False            # only pairs ``viewer`` has judged ("my reviews")
    second: bool = False          # only pairs judged by someone else and not ``viewer``: a second blind review
    viewer: str | None = None     # who is asking: the verdict filter reads their verdicts...
    all_verdicts: bool = True     # ...or everyone's (an admin)

    def __post_init__(self) -> None:
        # (here, so that no caller can hand the database what it would fail on)
        for name, shown in _FILTER_NAMES.items():
            value = getattr(self, name)
            if value is not None:
                check_text(f"the {shown} filter", value, MAX_FILTER)
        if self.search is not None:
            check_text("the search", self.search, MAX_SEARCH)
        # a kind, and only a kind: the filter matches the stored signals as text, which hold
        # the real sides (their values and reasons), so any other pattern would look them up
        if self.signal is not None and self.signal not in SIGNAL_KINDS:
            # (without the value: a page would show a link's text as the UI's own words)
            raise InputError(f"the signal filter must be one of {', '.join(SIGNAL_KINDS)}")


def _review(row: Any, after_reveal: bool) -> Review:
    return Review(row.id, row.pair_id, row.reviewer, Verdict(row.verdict),
                  Side(row.wrong_side) if row.wrong_side else None, row.note, row.created_at, after_reveal)


def first_verdict(r: Any) -> Any:
    """Whether the review row ``r`` (``schema.reviews.c``, or an alias's) is its reviewer's
    first on its pair: the only one given blind, the only one that counts."""
    earlier = schema.reviews.alias("earlier").c
    return ~sa.exists().where(earlier.pair_id == r.pair_id, earlier.reviewer == r.reviewer, earlier.id < r.id)


def first_verdicts(rows: Iterable[Any]) -> list[Any]:
    """Of review rows (``pair_id``, ``reviewer``; oldest first), each reviewer's first on
    each pair: a later one was given after the reveal, and is not counted."""
    seen: set[tuple[int, str]] = set()
    out = []
    for row in rows:
        if (row.pair_id, row.reviewer) not in seen:
            seen.add((row.pair_id, row.reviewer))
            out.append(row)
    return out


class ReviewQueue:
    def __init__(self, store: Store, claim_ttl: float = 600.0) -> None:
        self.store = store
        self.engine = store.engine
        self.claim_ttl = claim_ttl

    # -- selecting ----------------------------------------------------------------------

    def _where(self, f: Filters) -> list[Any]:
        p, r = schema.pairs.c, schema.reviews.c
        clauses: list[Any] = [p.outcome != Outcome.IDENTICAL]
        if f.run_id:
            clauses.append(p.run_id == f.run_id)
        if f.outcome:
            clauses.append(p.outcome == f.outcome)
        if f.suggested:
            clauses.append(p.suggested == f.suggested)
        if f.search:
            # lower(prompt) LIKE lower(?) on SQLite (which folds ASCII letters only), ILIKE on
            # PostgreSQL; autoescape makes the reviewer's % and _ plain characters
            clauses.append(p.prompt.icontains(f.search, autoescape=True))
        reviewed = sa.exists().where(r.pair_id == p.id)
        if f.unreviewed:
            clauses.append(~reviewed)
        by_viewer = [r.reviewer == (f.viewer or "")]
        if f.verdict:
            clauses.append(sa.exists().where(r.pair_id == p.id, r.verdict == f.verdict,
                                             *([] if f.all_verdicts else by_viewer)))
        if f.mine:
            clauses.append(sa.exists().where(r.pair_id == p.id, *by_viewer))
        if f.second:
            clauses += [reviewed, ~sa.exists().where(r.pair_id == p.id, *by_viewer),
                        sa.select(sa.func.count(sa.distinct(r.reviewer))).where(r.pair_id == p.id)
                        .scalar_subquery() < 2]
        if f.signal:
            # JSON containment differs per database; a text match on the kind is portable.
            clauses.append(sa.cast(p.signals, sa.Text).like(f'%"kind": "{f.signal}"%')
                           | sa.cast(p.signals, sa.Text).like(f'%"kind":"{f.signal}"%'))
        return clauses

    def page(self, f: Filters, offset: int = 0, limit: int = 50) -> list[dict[str, Any]]:
        """Queue rows in the queue's order (``queue_order``, the report's too), with their
        review counts and the first ``PROMPT_PREVIEW`` characters of each prompt (one more
        when it is longer)."""
        p, r = schema.pairs.c, schema.reviews.c
        reviews = sa.select(sa.func.count()).where(r.pair_id == p.id).scalar_subquery()
        # whether reviewers disagree is everyone's verdicts: an admin's to see
        # (the verdicts that count: a reviewer's first on each pair)
        verdicts = (sa.select(sa.func.count(sa.distinct(r.verdict + sa.func.coalesce(r.wrong_side, ""))))
                    .where(r.pair_id == p.id, first_verdict(r)).scalar_subquery()
                    if f.all_verdicts else sa.literal(0))
        mine = (sa.select(r.verdict).where(r.pair_id == p.id, r.reviewer == (f.viewer or ""))
                .order_by(r.id).limit(1).scalar_subquery())
        preview = sa.func.substr(p.prompt, 1, PROMPT_PREVIEW + 1).label("prompt")
        query = (sa.select(p.id, p.key, p.run_id, p.category, p.outcome, p.similarity, p.suggested, p.priority,
                           preview,
                           p.signals, p.claimed_by, p.claimed_until, p.judge_verdict, p.judge_wrong_side,
                           reviews.label("reviews"), verdicts.label("verdicts"), mine.label("my_verdict"))
                 .where(*self._where(f)).order_by(*queue_order()).offset(offset).limit(limit))
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
            failed = c.execute(count.where(*self._where(base), p.outcome == Outcome.ERROR)).scalar_one()
            reviewed = c.execute(sa.select(sa.func.count(sa.distinct(r.pair_id))).select_from(
                schema.reviews.join(schema.pairs, r.pair_id == p.id)).where(*self._where(base))).scalar_one()
            # per verdict: everyone's for an admin, a reviewer's own otherwise
            own = [] if f.all_verdicts else [r.reviewer == (f.viewer or "")]
            by_verdict = c.execute(sa.select(r.verdict, sa.func.count()).select_from(
                schema.reviews.join(schema.pairs, r.pair_id == p.id)).where(*self._where(base), *own, first_verdict(r))
                .group_by(r.verdict)).all()
            # what the acceptance verdict waits for: changed, comparable pairs
            needing = [*self._where(base), p.outcome.in_(SUBSTANTIVE), p.comparable.is_(True)]
            needs = c.execute(count.where(*needing)).scalar_one()
            needs_done = c.execute(count.where(*needing, sa.exists().where(r.pair_id == p.id))).scalar_one()
        # the queue holds every pair not identical: the changed ones and the failed ones
        out = {"total": int(total), "changed": int(total) - int(failed), "failed": int(failed),
               "selected": int(selected), "reviewed": int(reviewed),
               "needs_review": int(needs), "needs_review_done": int(needs_done)}
        out.update({f"verdict_{v}": int(n) for v, n in by_verdict})
        return out

    def neighbours(self, pair_id: int, f: Filters) -> tuple[int | None, int | None]:
        """The pairs before and after ``pair_id`` in the queue's order (``queue_order``),
        among those ``f`` selects."""
        p = schema.pairs.c
        order = queue_order()
        with self.engine.connect() as c:
            row = c.execute(sa.select(p.priority, p.outcome, p.similarity, p.seq, p.id)
                            .where(p.id == pair_id)).one_or_none()
            if row is None:
                return None, None
            here, at = queue_place(dict(row._mapping)), sa.tuple_(*order)
            before = c.execute(sa.select(p.id).where(*self._where(f), at < here)
                               .order_by(*(key.desc() for key in order)).limit(1)).scalar_one_or_none()
            after = c.execute(sa.select(p.id).where(*self._where(f), at > here)
                              .order_by(*order).limit(1)).scalar_one_or_none()
        return before, after

    def pair(self, pair_id: int) -> StoredPair | None:
        rows = self.store._with_answers(schema.pairs.select().where(schema.pairs.c.id == pair_id))
        return rows[0] if rows else None

    # -- claims -------------------------------------------------------------------------

    def claim_next(self, reviewer: str, f: Filters | None = None) -> int | None:
        """Claim the most urgent unreviewed pair nobody else holds (this reviewer's own
        claim first, then in the queue's order); its id, or None.

        With ``f.second``: the most urgent pair someone else has judged and ``reviewer``
        has not (a second, blind review). Either way only pairs that need a verdict
        (changed in substance, comparable: what the acceptance verdict waits for) unless
        the filter names an outcome: equivalent and failed pairs go to a reviewer who
        asks for them."""
        reviewer = check_name(reviewer)
        second = bool(f and f.second)
        f = Filters(run_id=f.run_id if f else None, outcome=f.outcome if f else None,
                    suggested=f.suggested if f else None, signal=f.signal if f else None,
                    search=f.search if f else None, unreviewed=not second, second=second, viewer=reviewer)
        p = schema.pairs.c
        now = datetime.now(UTC)
        free = sa.or_(p.claimed_until.is_(None), p.claimed_until < now, p.claimed_by == reviewer)
        needed = [] if f.outcome else [p.outcome.in_(SUBSTANTIVE), p.comparable.is_(True)]
        candidates = (sa.select(p.id).where(*self._where(f), *needed, free)
                      # a reviewer's own claim first (CASE: NULLs sort first on PostgreSQL)
                      .order_by(sa.case((p.claimed_by == reviewer, 1), else_=0).desc(), *queue_order()))
        until = now + timedelta(seconds=self.claim_ttl)
        with self.engine.begin() as c:
            if self.store.dialect == "postgresql":
                passed: list[int] = []
                while (pair_id := c.execute(candidates.where(p.id.not_in(passed)).limit(1)
                                            .with_for_update(skip_locked=True, of=schema.pairs)
                                            ).scalar_one_or_none()) is not None:
                    # Under READ COMMITTED a locked row is re-checked against its own
                    # columns only: a verdict committed (and its claim released) while this
                    # statement ran is not seen by the statement's subqueries, so the pair
                    # would be handed out again. A new statement sees it; the lock held
                    # now keeps the answer true until this transaction ends.
                    if c.execute(candidates.where(p.id == pair_id)).scalar_one_or_none() is None:
                        passed.append(pair_id)
                        continue
                    c.execute(schema.pairs.update().where(p.id == pair_id)
                              .values(claimed_by=reviewer, claimed_until=until))
                    return int(pair_id)
                return None
            for pair_id in c.execute(candidates.limit(20)).scalars():
                claimed = c.execute(schema.pairs.update().where(p.id == pair_id, free)
                                    .values(claimed_by=reviewer, claimed_until=until))
                if claimed.rowcount == 1:
                    return int(pair_id)
        return None

    def release(self, pair_id: int, reviewer: str) -> None:
        reviewer = check_name(reviewer)
        p = schema.pairs.c
        with self.engine.begin() as c:
            c.execute(schema.pairs.update().where(p.id == pair_id, p.claimed_by == reviewer)
                      .values(claimed_by=None, claimed_until=None))

    # -- verdicts -------------------------------------------------------------------------

    def add_review(self, pair_id: int, reviewer: str, verdict: str, wrong_side: str | None = None,
                   note: str = "", seen_by: Collection[str] = ()) -> Review:
        """Record ``reviewer``'s verdict on a pair they have not judged (``VerdictGiven``
        if they have). ``seen_by``: other names whose verdict on the pair means the writer
        has seen its reveal too (the name a shared-token session is reviewing under when
        its form names another)."""
        try:
            checked = Verdict(verdict)
        except ValueError:
            raise InputError(f"unknown verdict {verdict!r}; one of {', '.join(v.value for v in Verdict)}") from None
        side: Side | None = None
        if checked.directional:
            # the side the verdict goes against: wrong (factual), worse (minor), not the better (improvement)
            what = "wrong" if checked is Verdict.FACTUAL else "worse"
            try:
                side = Side(wrong_side or "")
            except ValueError:
                raise InputError(f"a {checked.value} verdict says which side is {what}: baseline or candidate") \
                    from None
            if side is Side.REPLICA:
                raise InputError(f"a {checked.value} verdict says which side is {what}: baseline or candidate")
        elif wrong_side:
            raise InputError(f"a {checked.value} verdict names no side")
        reviewer = check_name(reviewer)
        check_text("the note", note, MAX_NOTE)
        now = datetime.now(UTC)
        with self.engine.begin() as c:
            # (on PostgreSQL the pair is locked against deletion until the verdict is in: a
            # prune, which skips locked pairs, cannot delete it under the reviewer; one that
            # got there first leaves "no pair", not a foreign-key error)
            # FOR NO KEY UPDATE, not KEY SHARE: two posts of one reviewer at once take turns,
            # so the second sees the first's verdict below (SQLite: BEGIN IMMEDIATE does it)
            exists = sa.select(schema.pairs.c.id).where(schema.pairs.c.id == pair_id).with_for_update(
                key_share=True)
            if c.execute(exists).first() is None:
                raise InputError(f"no pair {pair_id}")
            r = schema.reviews.c
            given = c.execute(sa.select(r.reviewer, r.verdict).where(
                r.pair_id == pair_id, r.reviewer.in_([reviewer, *seen_by])).order_by(r.id).limit(1)).first()
            if given is not None:
                raise VerdictGiven(given.reviewer, pair_id, given.verdict)
            review_id = c.execute(schema.reviews.insert().values(
                pair_id=pair_id, reviewer=reviewer, verdict=checked.value,
                wrong_side=side.value if side else None, note=note, created_at=now)).inserted_primary_key
            c.execute(schema.pairs.update().where(schema.pairs.c.id == pair_id,
                                                  schema.pairs.c.claimed_by == reviewer)
                      .values(claimed_by=None, claimed_until=None))
        assert review_id is not None
        return Review(int(review_id[0]), pair_id, reviewer, checked, side, note, now)

    def reviews(self, pair_id: int) -> list[Review]:
        """The pair's verdicts, oldest first; a reviewer's later ones marked ``after_reveal``."""
        query = schema.reviews.select().where(schema.reviews.c.pair_id == pair_id).order_by(schema.reviews.c.id)
        with self.engine.connect() as c:
            rows = c.execute(query).all()
        first = {row.id for row in first_verdicts(rows)}
        return [_review(row, row.id not in first) for row in rows]

    def export(self, run_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every verdict with its pair's key, outcome and suggestion, oldest first, and
        ``after_reveal`` for a reviewer's later verdict on a pair (not counted); read in
        batches (on PostgreSQL through a server-side cursor), so that memory does not grow
        with their number. A database error can come part-way: the review UI writes the
        whole export out before sending any of it (``shadowdiff.review.export``)."""
        if run_id is not None:
            check_text("the run filter", run_id, MAX_FILTER)
        p, r = schema.pairs.c, schema.reviews.c
        query = (sa.select(r.id, r.pair_id, p.run_id, p.key, p.category, p.outcome, p.similarity, p.suggested,
                           p.judge_verdict, r.reviewer, r.verdict, r.wrong_side, r.note, r.created_at,
                           (~first_verdict(r)).label("after_reveal"))
                 .select_from(schema.reviews.join(schema.pairs, r.pair_id == p.id)).order_by(r.id))
        if run_id:
            query = query.where(p.run_id == run_id)
        with self.engine.connect() as c:
            for row in c.execution_options(yield_per=1000).execute(query):
                out = dict(row._mapping)
                out["created_at"] = out["created_at"].isoformat()
                out["after_reveal"] = bool(out["after_reveal"])
                yield out

    def set_judge(self, pair_id: int, verdict: str, worse_side: str | None, reason: str) -> None:
        with self.engine.begin() as c:
            c.execute(schema.pairs.update().where(schema.pairs.c.id == pair_id).values(
                judge_verdict=verdict, judge_wrong_side=worse_side, judge_reason=reason, judge_blind=True))


def serve_review_state(store: Store) -> tuple[int, dict[tuple[str, str], int]]:
    """For the proxy's metrics: pairs from live traffic awaiting a verdict, and the
    verdicts given on them by (verdict, wrong side or "none")."""
    p, r, runs = schema.pairs.c, schema.reviews.c, schema.runs.c
    live = sa.select(runs.id).where(runs.kind == "serve")
    with store.engine.connect() as c:
        depth = c.execute(sa.select(sa.func.count()).select_from(schema.pairs).where(
            p.run_id.in_(live), p.outcome.in_(SUBSTANTIVE), p.comparable.is_(True),
            ~sa.exists().where(r.pair_id == p.id))).scalar_one()
        rows = c.execute(sa.select(r.verdict, r.wrong_side, sa.func.count())
                         .select_from(schema.reviews.join(schema.pairs, r.pair_id == p.id))
                         .where(p.run_id.in_(live)).group_by(r.verdict, r.wrong_side)).all()
    return int(depth), {(verdict, wrong or "none"): int(n) for verdict, wrong, n in rows}
