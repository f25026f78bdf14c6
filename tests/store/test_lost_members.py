"""A member of a serve run that dies is marked lost when it is noticed - by its supervisor
(by host and pid) or by a live member's heartbeat (silent for STALE_AFTER) - and the
requests it held at its last heartbeat are counted in the run as lost: errors against
its gate, and part of the report's share of the traffic compared. On SQLite and PostgreSQL."""

from __future__ import annotations

import logging

import pytest

from shadowdiff.report.summary import summarize
from shadowdiff.report.write import caveats
from shadowdiff.store import Store
from shadowdiff.store.members import STALE_AFTER, RunMembers, describe
from shadowdiff.store.writer import PairWriter
from shadowdiff.verdict.acceptance import acceptance
from shadowdiff.vocabulary import NotCompared, Tally
from tests.support.storing import SETTINGS, at_once, silence

HELD = (Tally.NOT_COMPARED, NotCompared.LOST, False)


def test_a_worker_found_dead_is_marked_lost_with_the_requests_it_held(store: Store,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "a", "host-1", 101).run_id
    members.join("prod", SETTINGS, "b", "host-1", 102)
    members.join("other", SETTINGS, "c", "host-1", 101)      # another deployment's process of that pid
    assert members.heartbeat(run_id, "a", 46)
    assert members.heartbeat(run_id, "b", 3)
    store.add_counts(run_id, {("pairs", "identical", True): 10})
    with caplog.at_level(logging.WARNING, logger="shadowdiff.store"):
        lost = members.mark_lost("host-1", 101, "prod")
    assert [(m.id, m.ended, m.in_flight) for m in lost] == [("a", "lost", 46)]
    assert [r.getMessage() for r in caplog.records] == [
        f"proxy a (host-1 pid 101) of run {run_id} is lost (its process 101 died): the 46 requests it held are "
        "counted as lost"]
    assert store.counts(run_id) == {("pairs", "identical", True): 10, HELD: 46}
    assert {m.id: m.ended for m in members.members(run_id)} == {"a": "lost", "b": None}
    assert store.run(run_id).finished_at is None                  # b still serves
    # once only: a second look, another host's pid 101, a pid that never joined
    assert members.mark_lost("host-1", 101, "prod") == []
    assert members.mark_lost("host-2", 102, "prod") == [] and members.mark_lost("host-1", 999) == []
    assert store.counts(run_id)[HELD] == 46
    assert describe(members.members(run_id)) == ("2 proxies, 1 still running, 1 lost (killed: 46 requests they held "
                                                 "then are counted as lost, pairs in flight then are missing)")
    # the run's end adds nothing more: a member that left holds nothing
    assert members.leave(run_id, "b")
    assert store.counts(run_id) == {("pairs", "identical", True): 10, HELD: 46}


def test_lost_requests_count_against_the_gate_and_the_share_compared(store: Store) -> None:
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "a", "h", 1).run_id
    members.join("prod", SETTINGS, "b", "h", 2)
    members.heartbeat(run_id, "a", 5)
    store.add_counts(run_id, {("pairs", "identical", True): 95})
    members.mark_lost("h", 1)
    members.leave(run_id, "b")
    summary = summarize(store, run_id)
    assert summary.not_compared == {NotCompared.LOST: 5} and summary.pairs == 95
    notes = caveats(summary)
    assert ("95 of the 100 chat and completions requests the proxy saw made a pair (95.0%); 5 were lost with a "
            "proxy killed while it served them (kill -9, out of memory)") in notes
    assert "5 requests made no pair: 5 lost with a proxy killed while it served them (kill -9, out of memory)" \
        in notes
    result = acceptance(store, run_id, max_errors=4)
    assert result.errors == 5 and result.unchecked == 5
    assert any("5 prompts unchecked, 4 allowed (--max-errors)" in reason for reason in result.reasons), \
        result.reasons
    assert "5 prompts unchecked" not in " ".join(acceptance(store, run_id, max_errors=5).reasons)


def test_a_heartbeat_marks_the_members_silent_too_long_lost_once(store: Store) -> None:
    """Replicas on other hosts have no supervisor: any live member's heartbeat marks a silent
    one lost, and several beating at once count its requests once."""
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "dead", "host-a", 1).run_id
    for i in range(4):
        members.join("prod", SETTINGS, f"live{i}", f"host-{i}", 10 + i)
    members.heartbeat(run_id, "dead", 7)
    silence(store, run_id, "dead", STALE_AFTER - 5)
    assert members.heartbeat(run_id, "live0")
    assert [m.ended for m in members.members(run_id) if m.id == "dead"] == [None]     # not silent long enough
    silence(store, run_id, "dead", STALE_AFTER + 1)
    assert at_once(4, lambda i: members.heartbeat(run_id, f"live{i}")) == [True] * 4
    (dead,) = [m for m in members.members(run_id) if m.id == "dead"]
    assert dead.ended == "lost" and dead.in_flight == 7
    assert store.counts(run_id) == {HELD: 7}
    assert store.run(run_id).finished_at is None


def test_the_run_ending_marks_its_silent_members_lost_with_their_requests(store: Store) -> None:
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "a", "h", 1).run_id
    members.join("prod", SETTINGS, "b", "h", 2)
    members.heartbeat(run_id, "a", 2)
    silence(store, run_id, "a", STALE_AFTER + 1)
    assert members.leave(run_id, "b")
    assert {m.id: m.ended for m in members.members(run_id)} == {"a": "lost", "b": "stopped"}
    assert store.counts(run_id) == {HELD: 2}


def test_a_member_taken_for_lost_that_beats_again_is_taken_back(store: Store) -> None:
    """Silent because its store was out of reach, not dead: it is back in its run, and counts
    the requests it held itself (they are no longer lost)."""
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "a", "h", 1).run_id
    members.join("prod", SETTINGS, "b", "h", 2)
    members.heartbeat(run_id, "a", 4)
    silence(store, run_id, "a", STALE_AFTER + 1)
    members.heartbeat(run_id, "b")
    assert store.counts(run_id) == {HELD: 4}
    assert members.heartbeat(run_id, "a", 1)
    (a,) = [m for m in members.members(run_id) if m.id == "a"]
    assert a.running and a.ended is None and a.in_flight == 1
    assert store.counts(run_id) == {}
    # a run that finished meanwhile takes nobody back: the member moves on (shadowdiff.proxy.membership)
    silence(store, run_id, "a", STALE_AFTER + 1)
    assert members.leave(run_id, "b")
    assert not members.heartbeat(run_id, "a", 0)
    assert store.counts(run_id) == {HELD: 1}


def test_requests_counted_after_the_last_heartbeat_are_not_lost_with_a_killed_worker(store: Store) -> None:
    """A beat reports 5 requests held; 3 are counted (their counts written) before the process
    is killed, ahead of its next beat: only the 2 left are lost. (Before, all 5 were: the run
    counted those 3 twice, as compared and as lost.) The writer carries the 3 with its counts."""
    members = RunMembers(store)
    run_id = members.join("prod", SETTINGS, "a", "h", 1).run_id
    members.join("prod", SETTINGS, "b", "h", 2)
    assert members.heartbeat(run_id, "a", 5)
    writer = PairWriter(store, run_id, member="a")
    writer.add_counts({("pairs", "identical", True): 3}, released=3)
    writer.add_counts({("noise", "identical", True): 3})          # (the noise floor's: no request of its own)
    writer.close()
    assert writer.requests_unwritten == 0
    assert [m.in_flight for m in members.members(run_id) if m.id == "a"] == [2]
    assert members.heartbeat(run_id, "b", 0)                      # another member's row is its own
    [lost] = members.mark_lost("h", 1)
    assert lost.in_flight == 2
    assert store.counts(run_id) == {("pairs", "identical", True): 3, ("noise", "identical", True): 3, HELD: 2}
    # more released than the beat said (counted between two beats): none left, never below 0
    again = members.join("prod", SETTINGS, "c", "h", 3).run_id
    store.add_counts(again, {("pairs", "identical", True): 4}, member="c", released=4)
    assert [m.in_flight for m in members.members(again) if m.id == "c"] == [0]
