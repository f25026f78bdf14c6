"""Serve runs shared by several processes: joining, leaving and closing are
race-free on SQLite and PostgreSQL, and a run finishes when its last live member leaves."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from shadowdiff.errors import RunFinished
from shadowdiff.store import Store, schema
from shadowdiff.store.members import STALE_AFTER, RunMembers, StillRunning, describe
from shadowdiff.store.writer import PairWriter
from tests.support.factories import pair
from tests.support.storing import SETTINGS, at_once, silence


def test_processes_starting_at_once_join_one_run(store: Store) -> None:
    members = RunMembers(store)
    joined = at_once(8, lambda i: members.join("prod", SETTINGS, f"m{i}", "host", i))
    assert len({j.run_id for j in joined}) == 1
    assert sum(j.created for j in joined) == 1
    assert [r.name for r in store.runs()] == ["prod"]
    assert sorted(m.id for m in members.members(joined[0].run_id)) == [f"m{i}" for i in range(8)]
    assert describe(members.members(joined[0].run_id)) == "8 proxies, 8 still running"


def test_the_run_finishes_when_its_last_member_leaves(store: Store) -> None:
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "a", "h", 1).run_id
    assert members.join("prod", SETTINGS, "b", "h", 2).run_id == run_id
    assert members.join(None, SETTINGS, "c", "h", 3).run_id != run_id     # no name: a run of its own
    assert not members.leave(run_id, "a")
    assert store.run(run_id).finished_at is None
    assert describe(members.members(run_id)) == "2 proxies, 1 still running"
    assert members.leave(run_id, "b")
    assert store.run(run_id).finished_at is not None
    assert [m.ended for m in members.members(run_id)] == ["stopped", "stopped"]
    # the deployment starting again: a new run
    assert members.join("prod", SETTINGS, "a", "h", 1).run_id != run_id


def test_a_member_joining_as_the_last_leaves_is_never_lost(store: Store) -> None:
    """Whichever comes first, the joiner ends in an open run it is a member of."""
    members = RunMembers(store)
    for i in range(15):
        first = members.join("prod", SETTINGS, f"old{i}", "h", 1).run_id
        _, joined = at_once(2, lambda k, i=i, first=first: members.leave(first, f"old{i}") if k == 0
                            else members.join("prod", SETTINGS, f"new{i}", "h", 2))
        assert store.run(joined.run_id).finished_at is None
        assert [m.id for m in members.members(joined.run_id) if m.running] == [f"new{i}"]
        if joined.run_id != first:
            assert store.run(first).finished_at is not None
        assert members.leave(joined.run_id, f"new{i}")


def test_other_settings_start_a_run_of_their_own(store: Store) -> None:
    members = RunMembers(store)
    old = members.join("prod", SETTINGS, "a", "h", 1)
    new = members.join("prod", {**SETTINGS, "shadow_model": "int4"}, "b", "h", 2)
    assert new.run_id != old.run_id and new.created and new.others == [old.run_id]


def test_close_refuses_while_a_member_beats_and_takes_silent_ones_for_lost(store: Store) -> None:
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "a", "host-a", 11).run_id
    members.join("prod", SETTINGS, "b", "host-b", 12)
    with pytest.raises(StillRunning, match=r"2 proxies still running \(host-a pid 11, heard from 0 s ago"):
        members.close(run_id)
    silence(store, run_id, "a", STALE_AFTER + 5)
    assert describe(members.members(run_id)) == "2 proxies, 1 still running, 1 not heard from for 30 s (killed?)"
    with pytest.raises(StillRunning, match="1 proxy still running"):
        members.close(run_id)
    silence(store, run_id, "b", STALE_AFTER + 1)
    assert [(m.id, m.ended) for m in members.close(run_id)] == [("a", "lost"), ("b", "lost")]
    assert store.run(run_id).finished_at is not None
    assert describe(members.members(run_id)) == "2 proxies, 2 lost (killed: their pairs in flight then are missing)"


def test_the_last_live_member_to_leave_finishes_the_run_past_a_killed_one(store: Store) -> None:
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "a", "h", 1).run_id
    members.join("prod", SETTINGS, "b", "h", 2)
    assert not members.heartbeat(run_id, "c")
    assert not members.leave(run_id, "b")          # a was heard from lately: it may still be serving
    silence(store, run_id, "a", STALE_AFTER + 5)   # ... until it has been silent too long
    members.join("prod", SETTINGS, "c", "h", 3)
    assert members.leave(run_id, "c")
    assert {m.id: m.ended for m in members.members(run_id)} == {"a": "lost", "b": "stopped", "c": "stopped"}


def test_a_run_without_members_closes_as_before(store: Store) -> None:
    run_id = store.create_run("serve", {})
    assert RunMembers(store).close(run_id) == []
    assert store.run(run_id).finished_at is not None
    with store.engine.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(schema.run_members)).scalar_one() == 0


def test_a_finished_run_takes_no_more_pairs_or_counts(store: Store) -> None:
    """Once closed, a run's pairs and counts stay as reported: later writes are refused whole."""
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "a", "h", 1).run_id
    store.add_pairs(run_id, [pair("k1", "same", "same")])
    store.add_counts(run_id, {("pairs", "identical", True): 1})
    assert [m.ended for m in members.close(run_id, force=True)] == ["forced"]
    assert describe(members.members(run_id)) == \
        "1 proxy, closed by --force, 1 proxy was still running (they went on in a new run)"
    with pytest.raises(RunFinished, match=f"run {run_id} is finished"):
        store.add_pairs(run_id, [pair("k2", "same", "same"), pair("k3", "a", "b")])
    with pytest.raises(RunFinished):
        store.add_counts(run_id, {("pairs", "identical", True): 2})
    assert [p["key"] for p in store.pairs(run_id)] == ["k1"]
    assert store.counts(run_id) == {("pairs", "identical", True): 1}
    store.finish_run(run_id, finished=False)   # a replay's --resume opens its run again before writing
    assert store.add_pairs(run_id, [pair("k2", "same", "same")]) == []


def test_the_writer_moves_a_batch_refused_by_a_closed_run(store: Store) -> None:
    """The proxy's writer, told the run is finished, writes the batch to the run it is given instead."""
    closed = store.create_run("serve", {})
    store.finish_run(closed)
    fresh = store.create_run("serve", {})
    asked: list[str] = []

    def move(run_id: str) -> str:
        asked.append(run_id)
        return fresh

    writer = PairWriter(store, closed, on_finished=move)
    writer.submit(pair("k1", "same", "same"))
    writer.add_counts({("pairs", "identical", True): 1})
    writer.close()
    assert asked == [closed] and writer.run_id == fresh
    assert not list(store.pairs(closed)) and not store.counts(closed)
    assert [p["key"] for p in store.pairs(fresh)] == ["k1"]
    assert store.counts(fresh) == {("pairs", "identical", True): 1}
    without = PairWriter(store, closed)   # a replay's: the error stops it
    without.submit(pair("k2", "same", "same"))
    with pytest.raises(RunFinished):
        without.close()
