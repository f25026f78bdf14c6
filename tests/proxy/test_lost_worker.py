"""A worker of ``serve --workers 2`` killed with SIGKILL while it serves streams: its
supervisor marks it lost in the run at once (not when its silence passes STALE_AFTER,
nor when the run ends), with the requests it held, which the run's counts, gate and
report then show as lost. Real processes, real HTTP, slow simulated backends."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shadowdiff.store import Store
from shadowdiff.store.members import STALE_AFTER, Member, RunMembers
from shadowdiff.vocabulary import NotCompared, Tally
from tests.support.proxying import FP8, chat, report, serve, stop, wait_for
from tests.support.servers import shadowdiff_process

STREAMS = 8


@pytest.fixture(scope="module")
def slow_backends() -> Iterator[tuple[str, str]]:
    """A baseline and a candidate that take tenths of a second per token: streams stay open."""
    with shadowdiff_process("simulate", "--tpot", "0.1") as (_, baseline), \
            shadowdiff_process("simulate", "--served-model-name", FP8, "--tpot", "0.1") as (_, candidate):
        yield baseline, candidate


def hold_streams(url: str, n: int) -> list[threading.Thread]:
    """``n`` streamed chat requests, a connection each, read to their end (or their cut) in threads."""
    def read(i: int) -> None:
        with contextlib.suppress(httpx.HTTPError), httpx.Client(timeout=120) as client, \
                client.stream("POST", url + "/v1/chat/completions",
                              json=chat(f"Tell me a long story about topic {i}.", stream=True, max_tokens=2000)) as r:
            for _ in r.iter_raw():
                pass

    threads = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    return threads


def test_a_killed_worker_is_marked_lost_at_once_with_its_requests(slow_backends: tuple[str, str], location: str,
                                                                  tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with serve(slow_backends, location, log, "--workers", "2", "--drain-timeout", "3") as (process, url):
        threads = hold_streams(url, STREAMS)
        store = Store.open_existing(location)
        try:
            members = RunMembers(store)
            run_id = ""

            def holding() -> Member | None:
                nonlocal run_id
                run = store.latest_run("serve")
                run_id = run.id if run is not None else ""
                # a heartbeat (every 2 s) has reported the streams
                return next((m for m in members.members(run_id) if m.finished_at is None and m.in_flight > 0),
                            None) if run_id else None

            wait_for(lambda: holding() is not None, seconds=30)
            victim = holding()
            assert victim is not None
            os.kill(victim.pid, signal.SIGKILL)

            def marked() -> Member:
                (m,) = [m for m in members.members(run_id) if m.id == victim.id]
                return m

            # well before its silence would say so (STALE_AFTER): its supervisor saw it die
            wait_for(lambda: marked().ended == "lost", seconds=STALE_AFTER - 10)
            lost = marked()
            assert 0 < lost.in_flight <= STREAMS
            assert store.counts(run_id)[Tally.NOT_COMPARED, NotCompared.LOST, False] == lost.in_flight
        finally:
            store.close()
        stop(process, log)
    for thread in threads:
        thread.join(30)
    text = log.read_text()
    assert f"proxy {victim.id} ({lost.host} pid {victim.pid}) of run {run_id} is lost (its process " \
           f"{victim.pid} died): the {lost.in_flight} requests it held are counted as lost" in text, text
    # (its replacement, started as serve stopped, may have made a run of its own)
    code, report_text, summary = report(location, tmp_path / "report", "--run", run_id)
    assert code == 2, report_text     # a proxy was lost: the run is short of what it served
    assert summary["not_compared"][NotCompared.LOST] == lost.in_flight    # type: ignore[index]
    assert f"{lost.in_flight} were lost with a proxy killed while it served them" in report_text, report_text
    assert "1 lost (killed: " in report_text.splitlines()[0], report_text
