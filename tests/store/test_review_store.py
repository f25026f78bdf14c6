"""The review queue: claims, verdicts that are never lost, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from shadowdiff.errors import InputError
from shadowdiff.store import Store, schema
from shadowdiff.store.review import Filters, ReviewQueue, VerdictGiven
from shadowdiff.vocabulary import Side, Verdict
from tests.support.factories import fill, pair
from tests.support.fixtures import postgres_database


def test_queue_order_filters_and_counts(store: Store) -> None:
    run = fill(store)
    queue = ReviewQueue(store)
    rows = queue.page(Filters(run_id=run))
    assert [r["key"] for r in rows] == ["k2", "k4", "k1", "k5"]
    assert rows[0]["suggested"] == "factual"
    assert [r["key"] for r in queue.page(Filters(run_id=run, signal="numbers"))] == ["k2"]
    assert [r["key"] for r in queue.page(Filters(run_id=run, outcome="equivalent"))] == ["k5"]
    assert queue.counts(Filters(run_id=run)) == {"total": 4, "changed": 4, "failed": 0, "selected": 4, "reviewed": 0,
                                                 "needs_review": 3,
                                                 "needs_review_done": 0}
    before, after = queue.neighbours(rows[1]["id"], Filters(run_id=run))
    assert (before, after) == (rows[0]["id"], rows[2]["id"])


def test_two_reviewers_never_get_the_same_pair_and_claims_expire(store: Store) -> None:
    run = fill(store)
    queue = ReviewQueue(store, claim_ttl=0.5)
    ana, bob = queue.claim_next("ana", Filters(run_id=run)), queue.claim_next("bob", Filters(run_id=run))
    assert ana is not None and bob is not None and ana != bob
    assert queue.claim_next("ana", Filters(run_id=run)) == ana  # her own claim comes back to her
    time.sleep(0.6)
    assert queue.claim_next("carl", Filters(run_id=run)) == ana  # expired: free again


def test_concurrent_claims(store: Store) -> None:
    run = store.create_run("replay", {})
    store.add_pairs(run, [pair(f"k{i}", f"It costs {i} dollars.", f"It costs {i + 1} dollars.") for i in range(40)])
    queue = ReviewQueue(store)
    claimed: dict[str, list[int]] = {}
    lock = threading.Lock()

    def reviewer(name: str) -> None:
        mine = []
        for _ in range(10):
            pair_id = ReviewQueue(store).claim_next(name, Filters(run_id=run))
            if pair_id is not None:
                mine.append(pair_id)
                queue.add_review(pair_id, name, "wording")
        with lock:
            claimed[name] = mine

    threads = [threading.Thread(target=reviewer, args=(f"r{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [i for ids in claimed.values() for i in ids]
    assert len(everything) == 40
    assert len(set(everything)) == 40  # no pair reviewed twice by the claim protocol
    assert queue.counts(Filters(run_id=run))["reviewed"] == 40


def test_a_pair_judged_while_a_claim_ran_is_not_handed_out_again() -> None:
    """PostgreSQL, READ COMMITTED: a claim whose statement saw the top pair free and unjudged,
    but locked it only after another reviewer had claimed, judged and released it, must not
    return it (the lock re-checks the pair's own columns, not whether a verdict exists). The
    claim is held up deliberately, by a second's sleep in its statement after its snapshot."""

    class Slow(ReviewQueue):
        def _where(self, f: Filters) -> list[Any]:
            return [*super()._where(f), sa.text("(select pg_sleep(1.0)) is not null")]

    with postgres_database() as url:
        store = Store.open(url)
        try:
            run = fill(store)
            queue = ReviewQueue(store)
            late: list[int | None] = []
            claiming = threading.Thread(target=lambda: late.append(Slow(store).claim_next("bob", Filters(run_id=run))))
            claiming.start()
            time.sleep(0.3)   # bob's statement has its snapshot, and sleeps
            judged = queue.claim_next("ana", Filters(run_id=run))
            assert judged is not None
            queue.add_review(judged, "ana", "wording")
            claiming.join(30)
            assert late and late[0] is not None and late[0] != judged, (judged, late)
        finally:
            store.close()


def test_verdicts_are_never_overwritten(store: Store) -> None:
    run = fill(store)
    queue = ReviewQueue(store)
    target = queue.page(Filters(run_id=run))[0]["id"]
    queue.add_review(target, "ana", "factual", "candidate", "43 is wrong")
    queue.add_review(target, "bob", "minor", "baseline", note="rounding?")
    reviews = queue.reviews(target)
    assert [(r.reviewer, r.verdict, r.wrong_side) for r in reviews] == [
        ("ana", Verdict.FACTUAL, Side.CANDIDATE), ("bob", Verdict.MINOR, Side.BASELINE)]
    row = queue.page(Filters(run_id=run))[0]
    assert (row["reviews"], row["verdicts"]) == (2, 2)  # a disagreement, visible
    exported = list(queue.export(run))
    assert [e["verdict"] for e in exported] == ["factual", "minor"]
    assert exported[0]["key"] == "k2"
    assert [r["key"] for r in queue.page(Filters(run_id=run, verdict="factual"))] == ["k2"]
    assert [r["key"] for r in queue.page(Filters(run_id=run, unreviewed=True))] == ["k4", "k1", "k5"]


def test_a_reviewers_first_verdict_is_final(store: Store) -> None:
    run = fill(store)
    queue = ReviewQueue(store)
    target = queue.page(Filters(run_id=run))[0]["id"]
    queue.add_review(target, "ana", "equivalent")
    for verdict, side in (("factual", "candidate"), ("equivalent", None)):
        with pytest.raises(VerdictGiven, match=f"ana has already given pair {target} a verdict \\(equivalent\\)"):
            queue.add_review(target, "ana", verdict, side)
    # a name whose verdict means the writer saw the reveal too
    with pytest.raises(VerdictGiven, match="ana has already"):
        queue.add_review(target, "zed", "factual", "candidate", seen_by=["ana"])
    queue.add_review(target, "bob", "factual", "candidate", seen_by=["bob"])
    assert [(r.reviewer, r.verdict.value) for r in queue.reviews(target)] == [("ana", "equivalent"),
                                                                             ("bob", "factual")]


def test_verdicts_stored_after_the_reveal_are_marked_and_not_counted(store: Store) -> None:
    run = fill(store)
    queue = ReviewQueue(store)
    target = queue.page(Filters(run_id=run))[0]["id"]
    queue.add_review(target, "ana", "equivalent")
    with store.engine.begin() as c:   # as builds before the first verdict was final took it
        c.execute(schema.reviews.insert().values(pair_id=target, reviewer="ana", verdict="factual",
                                                   wrong_side="candidate", note="", created_at=datetime.now(UTC)))
    assert [(r.verdict.value, r.after_reveal) for r in queue.reviews(target)] == [("equivalent", False),
                                                                                 ("factual", True)]
    assert [(e["verdict"], e["after_reveal"]) for e in queue.export(run)] == [("equivalent", False),
                                                                              ("factual", True)]
    counts = queue.counts(Filters(run_id=run))
    assert counts["verdict_equivalent"] == 1 and "verdict_factual" not in counts
    row = queue.page(Filters(run_id=run, viewer="ana"))[0]
    assert (row["verdicts"], row["my_verdict"]) == (1, "equivalent")


@pytest.mark.parametrize(("verdict", "side", "message"), [
    ("great", None, "unknown verdict 'great'"),
    ("factual", None, "says which side is wrong"),
    ("factual", "replica", "says which side is wrong"),
    ("minor", None, "says which side is worse"),
    ("improvement", "replica", "says which side is worse"),
    ("wording", "candidate", "names no side"),
])
def test_bad_verdicts_are_refused(store: Store, verdict: str, side: str | None, message: str) -> None:
    run = fill(store)
    queue = ReviewQueue(store)
    target = queue.page(Filters(run_id=run))[0]["id"]
    with pytest.raises(InputError, match=message):
        queue.add_review(target, "ana", verdict, side)
    with pytest.raises(InputError, match="no pair"):
        queue.add_review(10**9, "ana", "wording")
    with pytest.raises(InputError, match="reviewer"):
        queue.add_review(target, "  ", "wording")
    assert queue.reviews(target) == []


def test_two_proxy_processes_write_to_one_postgresql_store(tmp_path: Path) -> None:
    from shadowdiff.simulator import profiles
    from shadowdiff.simulator.app import build_app
    from shadowdiff.simulator.settings import SimulatorSettings
    from tests.support.servers import HTTP, serve_app, shadowdiff_process, wait_ready

    with postgres_database() as url:
        with serve_app(build_app(SimulatorSettings())) as primary, \
                serve_app(build_app(SimulatorSettings(profile=profiles.builtin("fp8-heavy")))) as shadow:
            args = ["serve", "--primary", primary, "--shadow", shadow, "--store", url, "--keep-rate", "1"]
            with shadowdiff_process(*args) as (p1, proxy1), shadowdiff_process(*args) as (p2, proxy2):
                wait_ready(proxy1 + "/readyz", p1)
                wait_ready(proxy2 + "/readyz", p2)
                errors: list[Any] = []

                def send(proxy: str, offset: int) -> None:
                    for i in range(25):
                        r = HTTP.post(proxy + "/v1/chat/completions", json={
                            "messages": [{"role": "user", "content": f"Explain topic {offset + i}."}],
                            "temperature": 0})
                        if r.status_code != 200:
                            errors.append(r.status_code)

                threads = [threading.Thread(target=send, args=(proxy1, 0)),
                           threading.Thread(target=send, args=(proxy2, 100))]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                assert errors == []
                import signal as signals_module

                for process in (p1, p2):
                    process.send_signal(signals_module.SIGTERM)
                    process.wait(30)
        store = Store.open(url)
        runs = store.runs()
        assert len(runs) == 2
        assert sorted(store.count_pairs(r.id) for r in runs) == [25, 25]  # keep-rate 1: every pair
        # and every outcome counted, the last ones handed over at shutdown
        assert sorted(sum(n for (of, _, _), n in store.counts(r.id).items() if of == "pairs") for r in runs) == [
            25, 25]
        store.close()


