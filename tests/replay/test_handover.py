"""Pairs reach the store's writer in bursts, not one thread hop each: a burst is due once
``HANDOVER_PAIRS`` are ready or the first of them is ``HANDOVER_DELAY`` old, so a pair is
stored while the replay goes on, not only at its end or once a burst fills."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.answers.client import Upstream
from shadowdiff.replay import logs, runner
from shadowdiff.replay.runner import Overrides, Replay, ReplaySettings
from shadowdiff.store import Store
from shadowdiff.vocabulary import Side
from tests.support.servers import read_body, serve_app

_ANSWER = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "yes"},
                                   "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}).encode()


class WaitsForTheStore:
    """Answers at once, except the prompts that say "later": those wait until the store
    holds ``expected`` pairs (at most ``patience`` seconds), and note how many it held."""

    def __init__(self, store: Store, run_id: str, expected: int, patience: float = 3.0) -> None:
        self.store, self.run_id, self.expected, self.patience = store, run_id, expected, patience
        self.seen: list[int] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if b"later" in body:
            deadline = time.monotonic() + self.patience
            stored = 0
            while time.monotonic() < deadline:
                stored = await asyncio.to_thread(lambda: sum(1 for _ in self.store.pairs(self.run_id)))
                if stored >= self.expected:
                    break
                await asyncio.sleep(0.05)
            self.seen.append(stored)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": _ANSWER})


def _log(path: Path, prompts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": p}]}) + "\n" for p in prompts))
    return path


def _replay(tmp_path: Path, prompts: list[str], expected: int) -> tuple[WaitsForTheStore, int]:
    store = Store.open(tmp_path / "store")
    run_id = store.create_run("replay", {})
    app = WaitsForTheStore(store, run_id, expected)
    try:
        with serve_app(app) as url:
            settings = ReplaySettings(log=_log(tmp_path / "log.jsonl", prompts),
                                      baseline=Upstream(Side.BASELINE, url, "b"),
                                      candidate=Upstream(Side.CANDIDATE, url, "c"), concurrency=1, score=False,
                                      overrides=Overrides(stream=False, logprobs=0))
            tally = asyncio.run(Replay(settings, store, run_id).run(logs.LogFormat.BODIES))
        return app, tally.done
    finally:
        store.close()


def test_a_pair_is_stored_while_the_next_is_being_made(tmp_path: Path) -> None:
    # one pair, far fewer than a burst: the next prompt's answers wait until it is stored
    app, done = _replay(tmp_path, ["first", "later"], expected=1)
    assert done == 2
    assert app.seen == [1, 1]      # both sides of the second prompt found the first pair stored


def test_a_full_burst_is_handed_over_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "HANDOVER_PAIRS", 3)
    monkeypatch.setattr(runner, "HANDOVER_DELAY", 30.0)   # never due by time in this test
    app, done = _replay(tmp_path, ["a", "b", "c", "later"], expected=3)
    assert done == 4
    assert app.seen == [3, 3]


def test_without_a_burst_or_its_delay_nothing_is_stored_before_the_end(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests above can fail: with neither due, the first pairs wait for the end."""
    monkeypatch.setattr(runner, "HANDOVER_PAIRS", 100)
    monkeypatch.setattr(runner, "HANDOVER_DELAY", 30.0)
    store = Store.open(tmp_path / "store")
    run_id = store.create_run("replay", {})
    app = WaitsForTheStore(store, run_id, expected=1, patience=0.5)
    try:
        with serve_app(app) as url:
            settings = ReplaySettings(log=_log(tmp_path / "log.jsonl", ["first", "later"]),
                                      baseline=Upstream(Side.BASELINE, url, "b"),
                                      candidate=Upstream(Side.CANDIDATE, url, "c"), concurrency=1, score=False,
                                      overrides=Overrides(stream=False, logprobs=0))
            tally = asyncio.run(Replay(settings, store, run_id).run(logs.LogFormat.BODIES))
        assert app.seen == [0, 0]
        assert tally.done == 2 and sum(1 for _ in store.pairs(run_id)) == 2   # all stored at the end
    finally:
        store.close()


def test_a_pair_redacted_while_a_burst_is_handed_over_is_stored(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """With --redact a pair is redacted in a thread; a burst handed over meanwhile must not
    take the list the pair then joins (it was lost, the run a pair short, and exit 0)."""
    from shadowdiff.answers.redact import Redactor
    from shadowdiff.store.writer import PairWriter

    slow_started, first_handed = threading.Event(), threading.Event()
    redact, submit = Redactor.pair, PairWriter.submit

    def pair(self: Redactor, p: Any) -> Any:          # (in the redaction's thread)
        if "slow" in p.prompt:
            slow_started.set()
            first_handed.wait(10)      # redacted only once the other pair's burst is handed over
        else:
            slow_started.wait(10)      # ...which is not before this one is being redacted
        return redact(self, p)

    def submitted(self: PairWriter, p: Any, size: int = 0) -> None:
        submit(self, p, size)
        if "first" in p.prompt:
            first_handed.set()

    monkeypatch.setattr(Redactor, "pair", pair)
    monkeypatch.setattr(PairWriter, "submit", submitted)
    store = Store.open(tmp_path / "store")
    run_id = store.create_run("replay", {})
    try:
        with serve_app(WaitsForTheStore(store, run_id, expected=0)) as url:
            settings = ReplaySettings(log=_log(tmp_path / "log.jsonl", ["first", "slow"]),
                                      baseline=Upstream(Side.BASELINE, url, "b"),
                                      candidate=Upstream(Side.CANDIDATE, url, "c"), concurrency=2, score=False,
                                      overrides=Overrides(stream=False, logprobs=0), redact=("no such word",))
            tally = asyncio.run(Replay(settings, store, run_id).run(logs.LogFormat.BODIES))
        assert first_handed.is_set() and slow_started.is_set()   # the hand-over did come mid-redaction
        assert tally.done == 2
        assert sorted(p["prompt"] for p in store.pairs(run_id)) == ["first", "slow"]
    finally:
        store.close()


def test_a_run_started_ignoring_sigint_keeps_ignoring_it_and_the_handler_is_given_back(tmp_path: Path) -> None:
    """`shadowdiff replay … &` from a script starts with SIGINT ignored: a Ctrl+C meant for the
    shell must not stop it. And a run leaves SIGINT's handler as it found it."""
    import os
    import signal
    import threading

    store = Store.open(tmp_path / "store")
    run_id = store.create_run("replay", {})
    before = signal.getsignal(signal.SIGINT)
    try:
        with serve_app(WaitsForTheStore(store, run_id, expected=0)) as url:
            settings = ReplaySettings(log=_log(tmp_path / "log.jsonl", [f"p{i}" for i in range(20)]),
                                      baseline=Upstream(Side.BASELINE, url, "b"),
                                      candidate=Upstream(Side.CANDIDATE, url, "c"), concurrency=2, score=False,
                                      overrides=Overrides(stream=False, logprobs=0))
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            tally = asyncio.run(Replay(settings, store, run_id).run(logs.LogFormat.BODIES))
            timer.join()
            assert tally.done == 20 and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            mine = lambda signum, frame: None   # noqa: E731
            signal.signal(signal.SIGINT, mine)
            asyncio.run(Replay(settings, store, store.create_run("replay", {})).run(logs.LogFormat.BODIES))
            assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, before)
        store.close()
