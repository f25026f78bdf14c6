"""The pairs' thread: a pair's reading, comparison, triage and redaction never run on
the event loop, and come back to it in batches."""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.proxy import pairmaking as pairs_module
from shadowdiff.proxy import pairwork
from shadowdiff.proxy.pairwork import PairWork
from shadowdiff.simulator import profiles
from shadowdiff.store import Store
from tests.support.proxying import FP8, chat, settled, wait_for
from tests.support.servers import HTTP

Start = Callable[..., Any]


def test_jobs_run_in_the_pairs_thread_and_come_back_in_one_call_per_batch() -> None:
    async def main() -> tuple[list[str], int]:
        work = PairWork()
        gate = threading.Event()
        handed_back = 0
        real = pairwork._settle

        def counted(batch: list[Any]) -> None:
            nonlocal handed_back
            handed_back += 1
            real(batch)

        pairwork._settle = counted
        try:
            first = asyncio.ensure_future(work.run(lambda: gate.wait(5) and threading.current_thread().name))
            await asyncio.sleep(0.05)   # the thread holds the first job: the next ten queue behind it
            rest = [asyncio.ensure_future(work.run(lambda: threading.current_thread().name)) for _ in range(10)]
            await asyncio.sleep(0)
            gate.set()
            names = [await first, *[await job for job in rest]]
        finally:
            pairwork._settle = real
            work.close()
        return names, handed_back

    names, handed_back = asyncio.run(main())
    assert set(names) == {"shadowdiff-pairs"}
    assert handed_back == 2    # the first job, then the ten queued behind it together


def test_a_jobs_exception_is_its_callers() -> None:
    async def main() -> None:
        work = PairWork()

        def broken() -> None:
            raise ValueError("a bug in a job")

        try:
            with pytest.raises(ValueError, match="a bug in a job"):
                await work.run(broken)
            assert await work.run(lambda: 7) == 7    # the thread goes on
        finally:
            work.close()

    asyncio.run(main())


def test_a_job_whose_caller_left_before_it_was_taken_is_not_done() -> None:
    async def main() -> list[str]:
        work = PairWork()
        gate = threading.Event()
        done: list[str] = []
        try:
            first = asyncio.ensure_future(work.run(lambda: gate.wait(5)))
            await asyncio.sleep(0.05)
            late = asyncio.ensure_future(work.run(lambda: done.append("late")))
            await asyncio.sleep(0)
            late.cancel()
            gate.set()
            await first
            assert await work.run(lambda: "next") == "next"
        finally:
            work.close()
        return done

    assert asyncio.run(main()) == []


def test_a_full_queue_holds_the_pair_task_not_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the bound, the job's caller waits for room; the event loop goes on (a client's
    request is not held up by the pairs' backlog), and the job is still done in the thread.
    Only the test frees the room: an event loop held until then could not run the check
    that comes before (a timer frees it in the end, should the loop be held)."""
    async def main() -> tuple[list[str], bool, bool]:
        work = PairWork()
        gate = threading.Event()
        safety = threading.Timer(10, gate.set)
        try:
            first = asyncio.ensure_future(work.run(lambda: gate.wait(20)))
            await asyncio.sleep(0.05)
            monkeypatch.setattr(pairwork, "MAX_WAITING", 1)
            queued = asyncio.ensure_future(work.run(lambda: threading.current_thread().name))
            await asyncio.sleep(0)     # queued: the queue holds one, full
            safety.start()
            over = asyncio.ensure_future(work.run(lambda: threading.current_thread().name))
            await asyncio.sleep(0.05)  # the loop runs other work meanwhile
            loop_ran_first = not gate.is_set()   # (the room still taken when the loop came back)
            waited = not over.done()
            gate.set()
            names = [await queued, await over]
            await first
        finally:
            safety.cancel()
            work.close()
        return names, loop_ran_first, waited

    names, loop_ran_first, waited = asyncio.run(main())
    assert names == ["shadowdiff-pairs", "shadowdiff-pairs"]   # the work stays in the pairs' thread
    assert waited                  # the job over the bound waited for room...
    assert loop_ran_first          # ...and the event loop did not


def test_a_pair_task_waiting_for_room_at_shutdown_does_its_job_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> str:
        work = PairWork()
        gate = threading.Event()
        first = asyncio.ensure_future(work.run(lambda: gate.wait(5)))
        await asyncio.sleep(0.05)
        monkeypatch.setattr(pairwork, "MAX_WAITING", 0)     # no room ever: only close() frees it
        over = asyncio.ensure_future(work.run(lambda: threading.current_thread().name))
        await asyncio.sleep(0.05)
        assert not over.done()
        gate.set()
        work.close()
        name = await asyncio.wait_for(over, 2)
        await first
        return name

    assert asyncio.run(main()) == "MainThread"


def test_a_stopped_thread_leaves_the_job_to_its_caller() -> None:
    async def main() -> str:
        work = PairWork()
        assert await work.run(lambda: 1) == 1
        work.close()
        return await work.run(lambda: threading.current_thread().name)

    assert asyncio.run(main()) == threading.current_thread().name


def test_a_proxied_pair_is_read_compared_triaged_and_redacted_off_the_event_loop(
        start_simulator: Start, start_proxy: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: dict[str, set[str]] = {}

    def recorded(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            threads.setdefault(name, set()).add(threading.current_thread().name)
            return real(*args, **kwargs)
        return call

    for name in ("read_answer", "compare_answers", "assemble_pair", "held_size"):
        monkeypatch.setattr(pairs_module, name, recorded(name, getattr(pairs_module, name)))
    monkeypatch.setattr(pairs_module.ShadowReply, "read", recorded("shadow's read", pairs_module.ShadowReply.read))
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    store = tmp_path / "store"
    proxy, app = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8, store=str(store), keep_rate=1.0)
    for i in range(6):
        body = chat(f"Question {i}: explain rivers for a newcomer.", stream=i % 2 == 0)
        assert HTTP.post(proxy + "/v1/chat/completions", json=body).status_code == 200
    settled(app)
    assert threads == {name: {"shadowdiff-pairs"} for name in
                       ("read_answer", "compare_answers", "assemble_pair", "held_size", "shadow's read")}
    opened = Store.open(store)
    try:
        run = opened.latest_run("serve")
        assert run is not None
        app.writer.close()
        wait_for(lambda: len(list(opened.pairs(run.id))) == 6)   # every pair kept (keep_rate 1): all stored
    finally:
        opened.close()


def test_the_pairs_thread_yields_to_the_event_loop_in_the_scheduler_and_the_interpreters_lock() -> None:
    async def main() -> tuple[int, float]:
        work = PairWork()
        try:
            nice = await work.run(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        finally:
            work.close()
        return nice, sys.getswitchinterval()

    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    nice, interval = asyncio.run(main())
    assert nice == max(before, pairwork.NICE)
    assert interval <= pairwork.SWITCH_INTERVAL
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before   # the event loop's own is kept


def test_tasks_waiting_for_room_are_let_in_in_the_order_they_came(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> list[int]:
        work = PairWork()
        gate = threading.Event()
        ran: list[int] = []
        try:
            first = asyncio.ensure_future(work.run(lambda: gate.wait(5)))
            await asyncio.sleep(0.05)
            monkeypatch.setattr(pairwork, "MAX_WAITING", 1)
            waiting = []
            for i in range(6):
                waiting.append(asyncio.ensure_future(work.run(functools.partial(ran.append, i))))
                await asyncio.sleep(0)
            waiting[2].cancel()            # one leaves the line: the others still go in order
            gate.set()
            await asyncio.gather(first, *waiting, return_exceptions=True)
        finally:
            work.close()
        return ran

    assert asyncio.run(main()) == [0, 1, 3, 4, 5]
