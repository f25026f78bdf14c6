"""Pairs made and stored by the pair process (``shadowdiff.proxy.childpairs``), where the
shadow's answer is: what the proxy gets back, what the child's writer tells it, a pair
the child cannot store, a run closed under it, an end with pairs held; and the channel's
relay of the child's counts (``shadowcalls``). The proxies that use all of it, over real
HTTP, are in test_pairprocess.py, test_store_faults.py and test_one_run.py."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from shadowdiff.proxy.childpairs import ChildPairs, Stats
from shadowdiff.proxy.metrics import ProxyMetrics
from shadowdiff.proxy.pairmaking import TALLIES, Maker, from_plain
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.proxy.shadowcalls import ShadowChannel, _frame, _Link
from shadowdiff.store import Store
from shadowdiff.vocabulary import Outcome
from tests.support.pairinputs import GOOD, SETTINGS, pair_inputs
from tests.support.proxying import wait_for
from tests.support.storefaults import SqliteLock, injected


class Replies:
    """What the child sends the proxy, as it sends it (from its thread)."""

    def __init__(self) -> None:
        self.got: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()

    def __call__(self, replies: list[tuple[Any, ...]]) -> None:
        with self.lock:
            self.got += replies

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        with self.lock:
            return [r for r in self.got if r[0] == kind]

    def written(self) -> int:
        return sum(Stats.from_parts(r[2]).written for r in self.of("stats"))


def _child(location: str, **settings: Any) -> tuple[ChildPairs, Replies]:
    replies = Replies()
    proxy = ProxySettings(primary="http://127.0.0.1:9", shadow="http://127.0.0.1:8", store=location, **settings)
    return ChildPairs(Maker(SETTINGS), proxy, replies), replies


def _run(location: Path) -> tuple[Store, str]:
    store = Store.open(location)
    return store, store.create_run("serve", {})


def test_the_child_stores_its_pairs_and_gives_back_what_the_proxy_counts(tmp_path: Path) -> None:
    store, run_id = _run(tmp_path)
    child, replies = _child(str(tmp_path))
    try:
        child.run(run_id)
        for i in range(5):
            child.make(i, lambda i=i: pair_inputs(i, *GOOD), retries=i)   # type: ignore[misc]
        wait_for(lambda: len(replies.of("made")) == 5 and replies.written() == 5)
        for _, call, (made, retries) in replies.of("made"):
            found, stored, size = made
            assert stored is None and size == 0       # (stored by the child: nothing goes back)
            assert retries == call
            measured = from_plain(found)
            assert measured.outcome is Outcome.NEAR and found[TALLIES] == measured.tallies
            assert measured.similarity is not None and measured.first_char is not None
        assert child.close(5.0)
        stored_pairs = list(store.pairs(run_id))
        assert sorted(p["key"] for p in stored_pairs) == [f"k{i}" for i in range(5)]
        # redacted as the proxy's own writer would store them: the client's credentials never land
        assert all("sk-secretvalue12345" not in str(p["request"]) for p in stored_pairs)
    finally:
        store.close()


def test_the_childs_queue_and_the_pairs_it_holds_are_told_once_written_with_nothing_after(tmp_path: Path) -> None:
    """The queue told as each pair is submitted is told again once the writer has written it:
    no other pair may come to carry it, and a queue shown full while empty misleads."""
    store, run_id = _run(tmp_path)
    child, replies = _child(str(tmp_path), store_timeout=0.5)

    def last() -> Stats:
        return Stats.from_parts(replies.of("stats")[-1][2])

    try:
        child.run(run_id)
        child.make(0, lambda: pair_inputs(0, *GOOD), retries=0)
        wait_for(lambda: replies.written() == 1)
        with injected(SqliteLock(tmp_path / "shadowdiff.sqlite")):
            for i in range(1, 4):
                child.make(i, lambda i=i: pair_inputs(i, *GOOD), retries=0)   # type: ignore[misc]
            wait_for(lambda: len(replies.of("made")) == 4 and not last().up)
            assert last().held == 3                # (held: the batch in hand as well as the queue)
        wait_for(lambda: replies.written() == 4)
        wait_for(lambda: (last().queued, last().queued_bytes, last().held) == (0, 0, 0))
        assert child.close(5.0)
    finally:
        store.close()


def test_a_pair_the_child_cannot_store_goes_back_whole_for_the_proxys_writer(tmp_path: Path) -> None:
    child, replies = _child(str(tmp_path / "nowhere" / "missing"))   # (never made: it is opened, not created)
    child.run("a-run")
    child.make(0, lambda: pair_inputs(0, *GOOD), retries=0)
    wait_for(lambda: len(replies.of("made")) == 1)
    (_, _, ((_, stored, size), _)), = replies.of("made")
    assert stored is not None and stored.key == "k0" and size > 0
    assert "sk-secretvalue12345" not in str(stored.request)     # (redacted in the child all the same)
    assert child.close(1.0)


def test_a_run_closed_under_the_child_takes_its_pairs_to_the_run_the_proxy_names(tmp_path: Path) -> None:
    store, first = _run(tmp_path)
    child, replies = _child(str(tmp_path))
    try:
        child.run(first)
        child.make(0, lambda: pair_inputs(0, *GOOD), retries=0)
        wait_for(lambda: replies.written() == 1)
        store.finish_run(first)                      # (shadowdiff close --force)
        child.make(1, lambda: pair_inputs(1, *GOOD), retries=0)
        time.sleep(0.5)        # the writer meets the finished run and waits for the proxy to move
        assert replies.written() == 1
        second = store.create_run("serve", {})
        child.run(second)      # the proxy joined another run: it says so
        wait_for(lambda: replies.written() == 2)
        assert child.close(5.0)
        assert [p["key"] for p in store.pairs(first)] == ["k0"]
        assert [p["key"] for p in store.pairs(second)] == ["k1"]
    finally:
        store.close()


def test_pairs_held_at_the_end_are_dropped_counted_and_the_end_says_incomplete(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store, run_id = _run(tmp_path)
    child, replies = _child(str(tmp_path), store_timeout=0.5)
    try:
        child.run(run_id)
        child.make(0, lambda: pair_inputs(0, *GOOD), retries=0)
        wait_for(lambda: replies.written() == 1)
        with injected(SqliteLock(tmp_path / "shadowdiff.sqlite")):
            child.make(1, lambda: pair_inputs(1, *GOOD), retries=0)
            wait_for(lambda: any(not Stats.from_parts(r[2]).up for r in replies.of("stats")))   # told: down
            assert not child.close(0.5)
        assert [p["key"] for p in store.pairs(run_id)] == ["k0"]
        # said: the proxy's metrics no longer hear from the child at its end
        assert "shutdown: 1 pairs the store had not taken by the deadline were dropped" in caplog.text
    finally:
        store.close()


def test_the_childs_retries_are_counted_once_however_its_replies_are_ordered() -> None:
    """A made pair's reply carries the child's count of retries when its shadow answered;
    pairs wait for their primaries, so an earlier count may come after a later one."""
    async def main() -> float:
        metrics = ProxyMetrics(CollectorRegistry(auto_describe=False))
        channel = ShadowChannel(ProxySettings(primary="http://127.0.0.1:9", shadow="http://127.0.0.1:8"), metrics)
        channel.open()
        link = _Link(channel)
        made = ((), None, 0)
        for call, retries in [(0, 2), (2, 5), (1, 3), (3, 5), (4, 6)]:
            link.data_received(_frame(("made", call, (made, retries))))
        return float(metrics.retries.labels("candidate")._value.get())

    assert asyncio.run(main()) == 6.0


def test_the_childs_writer_stats_reach_the_proxys_metrics() -> None:
    async def main() -> list[Stats]:
        metrics = ProxyMetrics(CollectorRegistry(auto_describe=False))
        channel = ShadowChannel(ProxySettings(primary="http://127.0.0.1:9", shadow="http://127.0.0.1:8"), metrics)
        told: list[Stats] = []
        channel.on_stats = told.append
        link = _Link(channel)
        stats = Stats(3, {"queue_full": 1}, False, 7, 700, 9)   # type: ignore[arg-type]
        link.data_received(_frame(("stats", -1, stats.parts())))
        return told

    (stats,) = asyncio.run(main())
    assert (stats.written, dict(stats.dropped), stats.up, stats.queued, stats.queued_bytes, stats.held) == \
        (3, {"queue_full": 1}, False, 7, 700, 9)
