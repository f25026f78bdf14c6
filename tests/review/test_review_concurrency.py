"""Eight reviewers with no think time against two ``shadowdiff review`` processes on one
store, SQLite and PostgreSQL: "next" never hands a pair that is claimed or judged to a
second reviewer, every pair that needs a verdict gets exactly one, and nothing is a 5xx.

The reviewers are scripts (a token of their own each, as a Bearer header) that alternate
between the two servers on every request, so a claim on one process races verdicts and
claims on the other; a round is repeated on a fresh run, since an interleaving that
hands a pair out twice is rare in any one of them."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from shadowdiff.store import Store, schema
from shadowdiff.store.reviewers import Reviewers
from tests.support.fixtures import postgres_database
from tests.support.reviewing import TOKEN
from tests.support.runs import add_run, flips
from tests.support.servers import dies_with_the_tests, free_port, stop, wait_ready

REVIEWERS = 8
PAIRS = 207       # what each round's reviewers judge between them
ROUNDS = 3


def start_review(location: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``shadowdiff review LOCATION`` started and answering; the process and the UI's base URL.
    (Its stderr goes to ``log``, not a pipe nobody reads, which would fill and stall it.)"""
    for _ in range(3):
        port = free_port()
        with log.open("wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "shadowdiff", "review", location, "--token", TOKEN, "--port", str(port)],
                stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                preexec_fn=dies_with_the_tests)
        base = f"http://127.0.0.1:{port}/review"
        try:
            wait_ready(base + "/login", process, timeout=30)
            return process, base
        except (RuntimeError, TimeoutError) as exc:
            stop(process)
            # a free port taken by another test's server before this one bound it: another port
            if "is in use" not in log.read_text():
                raise AssertionError(f"{exc}: {log.read_text()[-2000:]}") from exc
    raise AssertionError(f"no free port for shadowdiff review: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def review_process(location: str, log: Path) -> Iterator[str]:
    """``start_review``, stopped at the end."""
    process, base = start_review(location, log)
    try:
        yield base
    finally:
        stop(process)


@dataclass
class Tally:
    """What one reviewer got: the pairs ``next`` handed them, and every answer's status."""

    handed: list[int] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)


def review_until_empty(token: str, servers: list[str], first: int, start: threading.Barrier) -> Tally:
    """next -> verdict, no pause, until ``next`` has nothing left; each request to the other
    server than the one before."""
    tally = Tally()
    turn = first
    with httpx.Client(headers={"authorization": f"Bearer {token}"}, timeout=60) as client:
        start.wait()
        while len(tally.handed) <= PAIRS:     # (a queue that never empties is a failure too)
            claimed = client.post(servers[turn % 2] + "/next")
            turn += 1
            tally.statuses[claimed.status_code] += 1
            if claimed.status_code != 303:
                tally.errors.append(f"next: {claimed.status_code} {claimed.text[:200]}")
                return tally
            where = claimed.headers["location"]
            if "/pairs/" not in where:
                return tally                  # the queue is empty
            pair_id = int(where.split("/pairs/", 1)[1].split("?", 1)[0])
            tally.handed.append(pair_id)
            judged = client.post(f"{servers[turn % 2]}/pairs/{pair_id}/verdict", data={"verdict": "wording"})
            turn += 1
            tally.statuses[judged.status_code] += 1
            if judged.status_code != 303:
                tally.errors.append(f"verdict on {pair_id}: {judged.status_code} {judged.text[:200]}")
                return tally
    return tally


def one_round(store: Store, tokens: list[str], servers: list[str]) -> tuple[set[int], list[Tally]]:
    """A fresh run of ``PAIRS`` pairs that need a verdict, judged by every reviewer at once."""
    _, ids = add_run(store, flips(PAIRS))
    start = threading.Barrier(len(tokens))
    tallies = [Tally() for _ in tokens]

    def reviewer(i: int) -> None:
        tallies[i] = review_until_empty(tokens[i], servers, i, start)

    threads = [threading.Thread(target=reviewer, args=(i,)) for i in range(len(tokens))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a reviewer is still going after 120 s"
    return set(ids.values()), tallies


def reviews_per_pair(store: Store, pair_ids: set[int]) -> dict[int, tuple[int, int]]:
    """For each pair judged: (its verdicts, its distinct reviewers), from the reviews table."""
    r = schema.reviews.c
    query = (sa.select(r.pair_id, sa.func.count(), sa.func.count(sa.distinct(r.reviewer)))
             .where(r.pair_id.in_(pair_ids)).group_by(r.pair_id))
    with store.engine.connect() as c:
        return {int(pid): (int(n), int(who)) for pid, n, who in c.execute(query)}


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the store is: a directory (SQLite), or a database of its own (PostgreSQL)."""
    with contextlib.ExitStack() as stack:
        where = str(tmp_path / "store") if request.param == "sqlite" else stack.enter_context(postgres_database())
        yield where


@pytest.mark.slow
def test_eight_reviewers_on_two_servers_never_get_the_same_pair(location: str, tmp_path: Path) -> None:
    store = Store.open(location)
    try:
        tokens = [Reviewers(store).add(f"reviewer{i}")[1] for i in range(REVIEWERS)]
        with review_process(location, tmp_path / "a.log") as a, review_process(location, tmp_path / "b.log") as b:
            for n in range(ROUNDS):
                pairs, tallies = one_round(store, tokens, [a, b])
                statuses = sum((t.statuses for t in tallies), Counter[int]())
                handed = Counter(pid for t in tallies for pid in t.handed)
                judged = reviews_per_pair(store, pairs)
                twice = {pid: seen for pid, seen in judged.items() if seen != (1, 1)}
                print(f"round {n + 1}: {sum(handed.values())} claims, statuses {dict(statuses)}, "
                      f"per reviewer {[len(t.handed) for t in tallies]}, judged twice {len(twice)}")
                assert [e for t in tallies for e in t.errors] == []
                assert not [s for s in statuses if s >= 500]
                assert twice == {}, f"round {n + 1}: pairs judged more than once (verdicts, reviewers): {twice}"
                assert [pid for pid, times in handed.items() if times > 1] == []
                assert set(judged) == pairs and set(handed) == pairs, f"round {n + 1}: pairs left unjudged"
    finally:
        store.close()
