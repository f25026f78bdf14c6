"""The pair process (``serve --pair-worker process``): the pairs it makes are the thread's,
one that dies or hangs is replaced and costs only the pair it failed over, one that
cannot start leaves the work to the thread, and none outlives the proxy."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from click.testing import CliRunner

from shadowdiff.errors import ConfigError
from shadowdiff.proxy import pairprocess, shadowcalls
from shadowdiff.proxy.cli import serve
from shadowdiff.proxy.pairmaking import Made, Maker, PairInputs
from shadowdiff.proxy.pairprocess import PairFailed, PairProcess
from shadowdiff.proxy.pairwork import PairWork
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.simulator import profiles
from shadowdiff.store import Store
from shadowdiff.vocabulary import Outcome, Side
from tests.support.fixtures import MODEL
from tests.support.pairinputs import GOOD, SETTINGS, pair_inputs
from tests.support.proxying import FP8, chat, counter, settled, wait_for
from tests.support.servers import HTTP, Answering, Reply, json_reply, metric, serve_app, serve_process

Start = Callable[..., Any]
class _Poison:
    """A value whose unpickling runs ``call(*args)``: in the pair process, which reads it."""

    def __init__(self, call: Callable[..., Any], *args: Any) -> None:
        self.call, self.args = call, args

    def __reduce__(self) -> tuple[Any, ...]:
        return self.call, self.args


def _ready(process: PairProcess) -> PairProcess:
    """``process`` with its child started and ready (``make`` would leave the pairs to the thread meanwhile)."""
    process._connection(wait=True)
    return process


def test_the_process_makes_the_pair_the_thread_makes() -> None:
    process = _ready(PairProcess(SETTINGS))
    try:
        pairs = [pair_inputs(0, *GOOD), pair_inputs(1, "same", "same"), pair_inputs(2, "Yes. sk-abcdefgh12345", "No.")]
        made = process.make(pairs)
    finally:
        process.close()
    here = [Maker(SETTINGS).make(p) for p in pairs]
    assert made == here
    assert [m.measured.outcome for m in here] == [Outcome.NEAR, Outcome.IDENTICAL, Outcome.DIVERGENT]
    stored = made[2]
    assert isinstance(stored, Made) and stored.stored is not None
    assert "sk-abcdefgh12345" not in orjson.dumps(stored.stored.answers[Side.BASELINE].text).decode()   # redacted


def test_a_pair_that_kills_the_process_fails_alone_and_a_new_one_makes_the_rest() -> None:
    process = _ready(PairProcess(SETTINGS))
    try:
        poisoned = pair_inputs(1, *GOOD, extra={"poison": _Poison(os._exit, 7)})
        made = process.make([pair_inputs(0, *GOOD), poisoned, pair_inputs(2, *GOOD)])
        assert [type(m).__name__ for m in made] == ["Made", "PairFailed", "Made"]
        assert "pair process failed" in str(made[1])
        assert process.restarts >= 2     # once for the batch, once for the pair that killed it again
        assert isinstance(_ready(process).make([pair_inputs(3, *GOOD)])[0], Made)
    finally:
        process.close()


def test_a_process_that_hangs_over_a_pair_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pairprocess, "BATCH_TIMEOUT", 1.0)
    process = _ready(PairProcess(SETTINGS))
    try:
        made = process.make([pair_inputs(0, *GOOD, extra={"poison": _Poison(time.sleep, 60)})])
        assert isinstance(made[0], PairFailed) and "no answer within" in str(made[0])
        assert isinstance(_ready(process).make([pair_inputs(1, *GOOD)])[0], Made)
    finally:
        process.close()


def test_a_process_that_cannot_start_leaves_the_pairs_to_the_thread_until_it_can(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    python = sys.executable
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    states: list[bool] = []

    async def main() -> tuple[list[Made], PairWork]:
        work = PairWork(Maker(SETTINGS), PairProcess(SETTINGS), on_process=states.append)
        try:
            made = [await work.make(pair_inputs(i, *GOOD), lambda made: made) for i in range(2)]
            monkeypatch.setattr(sys, "executable", python)    # (the install repaired)
            deadline = time.monotonic() + 30
            while not work._by_process and time.monotonic() < deadline:
                made.append(await work.make(pair_inputs(len(made), *GOOD), lambda made: made))
                await asyncio.sleep(0.05)
            return made, work
        finally:
            work.close()

    made, work = asyncio.run(main())
    assert {m.measured.outcome for m in made} == {Outcome.NEAR}      # every pair made, by one or the other
    assert work._by_process and states == [False, True]              # the thread, then the process again
    said = [r.getMessage() for r in caplog.records]
    assert sum("not available (cannot start it" in m for m in said) == 1 and "makes the pairs again" in said[-1]


def test_a_request_too_deep_to_pickle_is_made_by_the_thread_and_costs_its_batch_nothing() -> None:
    deep: dict[str, Any] = {}
    for _ in range(900):      # (valid JSON: the proxy reads 1,024 levels)
        deep = {"a": deep}

    async def main() -> list[Any]:
        process = _ready(PairProcess(SETTINGS))
        work = PairWork(Maker(SETTINGS), process)
        try:
            return await asyncio.gather(*(work.make(pair_inputs(i, *GOOD, extra={"metadata": deep} if i == 2 else None),
                                                    lambda made: made) for i in range(5)))
        finally:
            work.close()

    made = asyncio.run(main())
    assert [m.measured.outcome for m in made] == [Outcome.NEAR] * 5
    assert made[2].stored is not None and made[2].stored.request["metadata"]["a"]["a"] is not None


def test_pairs_are_made_by_the_thread_while_the_process_starts() -> None:
    process = PairProcess(SETTINGS)
    try:
        process.start()
        with pytest.raises(pairprocess.Starting):     # (it imports the comparison first: not ready at once)
            process.make([pair_inputs(0, *GOOD)])
        assert isinstance(_ready(process).make([pair_inputs(1, *GOOD)])[0], Made)
    finally:
        process.close()


def test_the_process_ignores_ctrl_c_and_sigterm_and_ends_with_the_work() -> None:
    async def main() -> Any:
        process = _ready(PairProcess(SETTINGS))
        work = PairWork(Maker(SETTINGS), process)
        await work.make(pair_inputs(0, *GOOD), lambda made: made)
        child = process._child
        assert child is not None and child.poll() is None
        child.send_signal(signal.SIGINT)     # a terminal's Ctrl-C reaches the whole process group...
        child.send_signal(signal.SIGTERM)    # ...and a service manager's stop (systemd's control group)
        made = await work.make(pair_inputs(1, *GOOD), lambda made: made)
        assert process._child is child and process.restarts == 0 and made.measured.outcome is Outcome.NEAR
        work.close()
        return child

    child = asyncio.run(main())
    assert child.poll() is not None      # ended and reaped


def test_the_process_dies_with_a_proxy_killed_outright(tmp_path: Path) -> None:
    script = tmp_path / "proxy.py"
    script.write_text(
        "import sys, time\n"
        "from shadowdiff.proxy.pairprocess import PairProcess\n"
        "from shadowdiff.proxy.pairmaking import MakerSettings\n"
        "from shadowdiff.vocabulary import Side\n"
        "p = PairProcess(MakerSettings(Side.BASELINE, None, 0.9, ()))\n"
        "p._connection(wait=True)\n"
        "print(p._child.pid, flush=True)\n"
        "time.sleep(60)\n")
    proxy = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert proxy.stdout is not None
    child = int(proxy.stdout.readline())
    os.kill(child, signal.SIGSTOP)    # (stopped: it would not even read the end of its socket)
    proxy.kill()
    proxy.wait()
    wait_for(lambda: not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text()
             .rsplit(")", 1)[1].split()[0], 10)


def test_auto_means_a_process_with_two_cores_or_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0})
    assert not pairprocess.wanted("auto")
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1})
    assert pairprocess.wanted("auto") and pairprocess.wanted("process") and not pairprocess.wanted("thread")


def test_a_containers_cpu_quota_counts_as_its_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(8)))
    own = tmp_path / "self-cgroup"
    own.write_text("0::/\n")

    def cores() -> float:
        return pairprocess.usable_cores(tmp_path, own)

    assert cores() == 8                                                # no cgroup files: the affinity
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cores() == 8                                                # no quota
    (tmp_path / "cpu.max").write_text("100000 100000\n")
    assert cores() == 1                                                # a pod limited to one CPU
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("250000\n")   # cgroup v1
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cores() == 2.5
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cores() == 8
    # a systemd unit's quota (CPUQuota=100%), on its own cgroup, without a cgroup namespace
    unit = tmp_path / "system.slice" / "shadowdiff.service"
    unit.mkdir(parents=True)
    (unit / "cpu.max").write_text("100000 100000\n")
    own.write_text("0::/system.slice/shadowdiff.service\n")
    assert cores() == 1


def test_an_unknown_pair_worker_is_refused() -> None:
    with pytest.raises(ConfigError, match="--pair-worker must be one of auto, process, thread"):
        ProxySettings(primary="http://a:1", pair_worker="fork")
    refused = CliRunner().invoke(serve, ["--primary", "http://a:1", "--pair-worker", "fork"])
    assert refused.exit_code == 2 and "'fork' is not one of 'auto', 'process', 'thread'" in refused.output


def _stored(location: Path) -> list[dict[str, Any]]:
    store = Store.open(location)
    try:
        run = store.latest_run("serve")
        assert run is not None
        return sorted(({"prompt": p["prompt"], "outcome": p["outcome"], "similarity": p["similarity"],
                        "signals": p["signals"], "texts": {s: a.text for s, a in p.answers.items()}}
                       for p in store.pairs(run.id)), key=lambda p: p["prompt"])
    finally:
        store.close()


def test_a_proxy_with_a_pair_process_stores_and_counts_what_one_without_does(
        start_simulator: Start, start_proxy: Start, tmp_path: Path) -> None:
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    stores, apps = {}, {}
    for worker in ("thread", "process"):
        stores[worker] = tmp_path / worker
        url, apps[worker] = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8, store=str(stores[worker]),
                                        keep_rate=1.0, pair_worker=worker)
        if worker == "process":    # (the shadow called from the child, once it is ready)
            wait_for(lambda: apps["process"].mirror.channel.ready, 30)
        for i in range(8):
            body = chat(f"Question {i}: explain rivers for a newcomer.", stream=i % 2 == 0)
            assert HTTP.post(url + "/v1/chat/completions", json=body).status_code == 200
        settled(apps[worker])
        # (the process's pairs are written by its own writer, counted in the proxy's metrics as it writes them)
        wait_for(lambda: apps[worker].metrics.stored._value.get() == 8)  # noqa: B023 (called here, at once)
        apps[worker].writer.close()
    child = apps["process"].pairs.work._process._child
    assert child is not None and child.pid != os.getpid()          # made there...
    assert apps["thread"].pairs.work._process is None              # ...and here in the thread
    assert apps["process"].mirror.channel.calls == 8 and apps["thread"].mirror.channel is None
    assert _stored(stores["process"]) == _stored(stores["thread"])
    assert len(_stored(stores["process"])) == 8
    for outcome in Outcome:
        assert counter(apps["process"], "pairs", outcome.value, "true") == \
            counter(apps["thread"], "pairs", outcome.value, "true"), outcome


def test_a_killed_pair_process_is_replaced_and_no_client_notices(
        start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    url, app = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8, pair_worker="process")
    asked = 0
    for round_ in range(3):
        for i in range(3):
            asked += 1
            body = chat(f"Round {round_}, question {i}: explain tides.", stream=i % 2 == 0)
            assert HTTP.post(url + "/v1/chat/completions", json=body).status_code == 200
        settled(app)
        process = app.pairs.work._process
        assert process is not None and process._child is not None
        process._child.kill()
        process._child.wait()
    wait_for(lambda: sum(counter(app, "pairs", o.value, "true") for o in Outcome) == asked)
    assert counter(app, "pairs", "error", "true") == 0
    # (each death is seen when its channel for the shadow's calls closes: another starts at once)
    wait_for(lambda: app.pairs.work._process.restarts == 3)
    assert app.metrics.pair_process_restarts._value.get() == 3


def test_a_pair_process_killed_holding_pairs_for_a_failing_store_leaves_the_run_incomplete(
        start_simulator: Start, start_proxy: Start, tmp_path: Path) -> None:
    """The pairs its writer held are counted in the run but never stored: the run cannot pass
    on counts its pairs are short of. And its writer's outage and queue, gone with it, are
    no longer the store's."""
    from tests.support.storefaults import SqliteLock, injected

    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    url, app = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8, pair_worker="process",
                           store=str(tmp_path), keep_rate=1.0, store_timeout=0.5)
    wait_for(lambda: app.mirror.channel.ready, 30)
    assert HTTP.post(url + "/v1/chat/completions", json=chat("Question: waves?")).status_code == 200
    wait_for(lambda: app.metrics.stored._value.get() == 1, 30)     # (by the child's writer, open now)
    with injected(SqliteLock(tmp_path / "shadowdiff.sqlite")):
        for i in range(3):
            assert HTTP.post(url + "/v1/chat/completions", json=chat(f"Question {i}: tides?")).status_code == 200
        settled(app)
        wait_for(lambda: app._child.held == 3 and not app._child.up, 30)   # (told by the child)
        assert app.health.describe()["status"] == "failing" and not app.incomplete
        process = app.pairs.work._process
        assert process is not None and process._child is not None
        process._child.kill()
        process._child.wait()
        wait_for(lambda: app._child.held == 0, 30)
        assert app.metrics.dropped.labels("lost")._value.get() == 3
        assert app.incomplete
        assert "pair process's writer" not in app.health.describe().get("failing", [])
        assert app.metrics.store_queue._value.get() == app._queue[0]


def test_pairs_are_handed_over_in_batches_of_bounded_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [pair_inputs(i, *GOOD) for i in range(5)]
    monkeypatch.setattr(pairprocess, "BATCH_BYTES", 2 * pairs[0].size)    # two pairs a batch
    process = _ready(PairProcess(SETTINGS))
    sent: list[int] = []
    real = process._exchange

    def counted(batch: list[PairInputs], wait: bool) -> list[Made | PairFailed]:
        sent.append(len(batch))
        return real(batch, wait)

    monkeypatch.setattr(process, "_exchange", counted)
    try:
        made = process.make(pairs)
    finally:
        process.close()
    assert sent == [2, 2, 1]
    assert [m.stored.key for m in made if isinstance(m, Made) and m.stored] == [p.key for p in pairs]


def test_a_process_that_keeps_dying_leaves_the_pairs_to_the_thread_for_a_while(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(pairprocess, "MAX_STARTS", 2)

    async def main() -> list[Any]:
        process = _ready(PairProcess(SETTINGS))
        work = PairWork(Maker(SETTINGS), process)
        results: list[Any] = []
        try:
            for i in range(4):     # each kills the child it is handed to: a start each
                with contextlib.suppress(pairprocess.PairProcessUnavailable):
                    _ready(process)        # (the next child waited for: the pair goes to it, not the thread)
                try:
                    results.append(await work.make(pair_inputs(i, *GOOD, extra={"poison": _Poison(os._exit, 3)}),
                                                   lambda made: made))
                except PairFailed as exc:
                    results.append(exc)
            return results
        finally:
            work.close()

    results = asyncio.run(main())
    assert [type(r).__name__ for r in results] == ["PairFailed", "PairFailed", "Made", "Made"]
    # (the first two killed their children and were never made here; past the budget, the thread makes them)
    assert any("2 were started within 300 s" in r.getMessage() for r in caplog.records)


def test_serve_starts_a_pair_process_by_default_where_it_has_two_cores(
        start_simulator: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (the suite's `serve` processes make their pairs in a thread: see tests/support/fixtures.py)
    monkeypatch.delenv("SHADOWDIFF_PAIR_WORKER", raising=False)
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    with serve_process(tmp_path, primary, "--shadow", shadow, "--shadow-model", FP8) as url:
        assert HTTP.post(url + "/v1/chat/completions", json=chat("Explain tides.")).status_code == 200
        wait_for(lambda: metric(url, "shadowdiff_pairs_total") == 1)
        assert metric(url, "shadowdiff_pair_process_up") == (1 if pairprocess.wanted("auto") else 0)


def _ready_proxy(start_proxy: Start, primary: str, shadow: str, **settings: Any) -> tuple[str, Any]:
    """A proxy whose pair process is ready to call the shadow."""
    url, app = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8, pair_worker="process", **settings)
    wait_for(lambda: app.mirror.channel.ready, 30)
    return url, app


def test_a_shadow_call_lost_with_the_process_fails_its_pair_alone_and_mirroring_goes_on(
        start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator(served_model_names=(MODEL, FP8))   # (its answers are the shadow's too)
    arrived = threading.Event()
    hang = [True]

    async def shadow(path: str, body: bytes) -> Reply:   # the first call is answered only when its client leaves
        if hang[0]:
            arrived.set()
            return None
        async with httpx.AsyncClient() as client:     # (then the primary's own answer)
            r = await client.post(primary + path, content=body, headers={"content-type": "application/json"})
            return json_reply(200, r.json())

    with serve_app(Answering(shadow)) as shadow_url:
        url, app = _ready_proxy(start_proxy, primary, shadow_url)
        answer = HTTP.post(url + "/v1/chat/completions", json=chat("Explain tides."))
        assert answer.status_code == 200      # (the client has the primary's answer: the shadow's call goes on)
        assert arrived.wait(10)
        process = app.pairs.work._process
        process._child.kill()
        process._child.wait()
        wait_for(lambda: counter(app, "pairs", "error", "true") == 1)
        settled(app)
        hang[0] = False
        # another child is started at once, and takes the calls once it is ready
        wait_for(lambda: app.mirror.channel.ready, 30)
        assert process.restarts == 1
        calls = app.mirror.channel.calls
        assert HTTP.post(url + "/v1/chat/completions", json=chat("Explain rivers.")).status_code == 200
        settled(app)
    assert app.mirror.channel.calls == calls + 1
    assert sum(counter(app, "pairs", o.value, "true") for o in Outcome if o is not Outcome.ERROR) == 1


def test_an_abandoned_pair_cancels_its_shadow_call_in_the_process(start_proxy: Start) -> None:
    left = threading.Event()

    async def hanging(path: str, body: bytes) -> Reply:
        return None

    async def shadow_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await Answering(hanging)(scope, receive, send)
        if scope["type"] == "http":
            left.set()     # (Answering returns once its client, the pair process, went away)

    refused = json_reply(500, {"error": {"message": "down", "type": "InternalServerError", "code": 500}})
    with serve_app(Answering(lambda path, body: refused)) as primary, serve_app(shadow_app) as shadow:
        url, app = _ready_proxy(start_proxy, primary, shadow, shadow_timeout=60.0)
        assert HTTP.post(url + "/v1/chat/completions", json=chat("Explain tides.")).status_code == 500
        # the primary failed: nothing to compare, so the shadow's call is cancelled - in the child
        assert left.wait(10)
        # ...which goes on calling the shadow: the cancel did not end its channel
        assert HTTP.post(url + "/v1/chat/completions", json=chat("Explain waves.")).status_code == 500
        settled(app)
    assert app.mirror.channel.calls == 2 and app.mirror.channel.ready
    assert app.pairs.work._process.restarts == 0 and app.mirror.in_flight == 0
    assert counter(app, "pairs", "error", "true") == 2


def test_a_hung_process_is_ended_and_its_shadow_calls_lost_rather_than_holding_the_shadow_s_places(
        start_simulator: Start, start_proxy: Start, monkeypatch: pytest.MonkeyPatch) -> None:
    # a child that never answers (stopped here; stuck in a C library alike) would hold its calls'
    # places for ever: no pair gets to the pairs' thread, which would find it hung, until they end
    monkeypatch.setattr(shadowcalls, "LATE", 0.5, raising=False)
    primary = start_simulator(served_model_names=(MODEL, FP8))
    url, app = _ready_proxy(start_proxy, primary, primary, shadow_timeout=1.0)
    process = app.pairs.work._process
    child = process._child
    os.kill(child.pid, signal.SIGSTOP)
    try:
        assert HTTP.post(url + "/v1/chat/completions", json=chat("Explain tides.")).status_code == 200
        wait_for(lambda: counter(app, "pairs", "error", "true") == 1, 30)
        settled(app)
        assert app.mirror.in_flight == 0
        assert child.wait(10) == -signal.SIGKILL
        # another child takes the calls once it is ready
        wait_for(lambda: app.mirror.channel.ready, 30)
        calls = app.mirror.channel.calls
        assert HTTP.post(url + "/v1/chat/completions", json=chat("Explain rivers.")).status_code == 200
        settled(app)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGCONT)
    assert app.mirror.channel.calls == calls + 1
    assert sum(counter(app, "pairs", o.value, "true") for o in Outcome if o is not Outcome.ERROR) == 1


def test_the_process_calls_the_shadow_at_the_proxys_priority_and_makes_pairs_below_it(
        start_simulator: Start, start_proxy: Start) -> None:
    """The thread that calls (and times) the shadow is not niced: at nice 10 on a busy
    machine it was starved, and timed the shadow's answers late and its connections out
    (``connect_error``, counted against the shadow). The threads making pairs are."""
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    url, app = _ready_proxy(start_proxy, primary, shadow)
    assert HTTP.post(url + "/v1/chat/completions", json=chat("Explain tides.")).status_code == 200
    settled(app)
    child = app.pairs.work._process._child.pid

    def nice(task: str) -> int:
        with open(f"/proc/{child}/task/{task}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[16])

    own = os.getpriority(os.PRIO_PROCESS, 0)
    values = sorted(nice(task) for task in os.listdir(f"/proc/{child}/task"))
    assert own in values, values                                         # the shadow's calls
    assert values.count(max(own, pairprocess.NICE)) >= 2, values       # the threads making pairs
    # not its main thread, which ends the process: at nice 10 on a busy machine, its exit
    # alone held the proxy's shutdown for 10 s
    assert nice(str(child)) == own


@pytest.mark.skipif(not hasattr(os, "setpriority") or not os.path.isdir("/proc/self/task"), reason="Linux")
def test_hurrying_gives_every_thread_the_callers_priority_back_where_the_system_allows() -> None:
    own = os.getpriority(os.PRIO_PROCESS, 0)
    niced, go = threading.Event(), threading.Event()
    seen: list[int] = []

    def making() -> None:
        pairprocess.yield_to_the_proxy()
        niced.set()
        go.wait(10)
        seen.append(os.getpriority(os.PRIO_PROCESS, 0))

    thread = threading.Thread(target=making)
    thread.start()
    assert niced.wait(10)
    try:
        may_lower = _may_lower_nice()
        pairprocess.hurry()
    finally:
        go.set()
        thread.join(10)
    # (without the right to lower a nice value, the thread stays below: its writes are bounded by the budget)
    assert seen == [own if may_lower else max(own, pairprocess.NICE)]


def _may_lower_nice() -> bool:
    """Whether this process may lower a thread's nice value (root, CAP_SYS_NICE, RLIMIT_NICE)."""
    result: list[bool] = []

    def run() -> None:
        own = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, own + 1)
        try:
            os.setpriority(os.PRIO_PROCESS, 0, own)
            result.append(True)
        except OSError:
            result.append(False)

    probe = threading.Thread(target=run)     # (its own thread: this one's value is not touched)
    probe.start()
    probe.join(10)
    return result == [True]
