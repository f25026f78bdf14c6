"""What the heartbeat reports as in flight: the chat requests the proxy holds that its run
has not counted yet - a mirrored one until its pair's outcome is counted (the client may
have had its answer long before), an unmirrored one only until it is counted as such."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shadowdiff.proxy import pairwork
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from tests.support.fixtures import MODEL
from tests.support.proxying import FP8, chat, counter, settled, wait_for
from tests.support.servers import HTTP, read_body, serve_app

Start = Callable[..., Any]


class Gated:
    """An upstream held by ``gate``: every request waits for it, or (``only_held``) those
    sent with ``X-Hold``, whose answer starts streaming and then waits for it to end."""

    def __init__(self, app: Any, only_held: bool = False) -> None:
        self.app = app
        self.only_held = only_held
        self.gate = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or (self.only_held and (b"x-hold", b"1") not in scope["headers"]):
            await self.app(scope, receive, send)
            return
        if not self.only_held:
            await asyncio.to_thread(self.gate.wait)
            await self.app(scope, receive, send)
            return
        await read_body(receive)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"data: {}\n\n", "more_body": True})
        await asyncio.to_thread(self.gate.wait)
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


def test_a_request_is_in_flight_until_its_run_counts_it(start_proxy: Start, tmp_path: Path) -> None:
    primary = Gated(build_app(SimulatorSettings(served_model_names=(MODEL,))), only_held=True)
    shadow = Gated(build_app(SimulatorSettings(served_model_names=(FP8,))))
    with serve_app(primary) as primary_url, serve_app(shadow) as shadow_url:
        try:
            proxy, app = start_proxy(primary=primary_url, shadow=shadow_url, shadow_model=FP8, max_shadow_in_flight=1,
                                     store=str(tmp_path / "s"))
            assert app.pairs.in_flight == 0
            assert HTTP.post(proxy + "/v1/chat/completions", json=chat("one")).status_code == 200
            # answered, but its pair waits for the shadow: not counted yet
            assert app.pairs.in_flight == 1
            # the shadow is busy: this one is not mirrored, and counted as such at once, while it streams
            with HTTP.stream("POST", proxy + "/v1/chat/completions", json=chat("two", stream=True),
                             headers={"x-hold": "1"}) as streaming:
                assert next(streaming.iter_raw())
                assert counter(app, "shadow", "skipped", "in_flight_bound") == 1
                assert app.pairs.in_flight == 1
            assert HTTP.get(proxy + "/v1/models").status_code == 200      # not a chat request: never held
            assert app.pairs.in_flight == 1
        finally:
            primary.gate.set()    # (a failure above must not leave its requests waiting)
            shadow.gate.set()
        settled(app)     # the pair is counted
        assert app.pairs.in_flight == 0
        # what the heartbeat reports holds them until their counts are in the store (about a second)
        wait_for(lambda: app.pairs.unwritten == 0, seconds=10)
        assert app.writer.requests_unwritten == 0 and app.pairs.released == 0


def test_past_the_pairs_bound_requests_are_not_mirrored_and_counted_so(start_proxy: Start, tmp_path: Path) -> None:
    """A proxy whose pairs are not complete up to their bound (the shadow's places and the
    pairs thread's queue) stops mirroring, counted as ``pairs_behind``, rather than hold the
    answers of every new request in memory; the client is served all the same, and
    mirroring resumes once the pairs are done."""
    primary = build_app(SimulatorSettings(served_model_names=(MODEL,)))
    shadow = Gated(build_app(SimulatorSettings(served_model_names=(FP8,))))
    with serve_app(primary) as primary_url, serve_app(shadow) as shadow_url:
        try:
            proxy, app = start_proxy(primary=primary_url, shadow=shadow_url, shadow_model=FP8, max_shadow_in_flight=8,
                                     store=str(tmp_path / "s"))
            assert app.pairs.bound == 8 + pairwork.MAX_WAITING
            app.pairs.bound = 2      # (a small bound, below the shadow's places, to reach it here)
            for i in range(4):
                assert HTTP.post(proxy + "/v1/chat/completions", json=chat(f"q{i}")).status_code == 200
            assert len(app.pairs.pending) == 2
            assert counter(app, "shadow", "skipped", "pairs_behind") == 2
            assert app.metrics.pairs_pending._value.get() == 2
            assert app.mirror.in_flight == 2       # the places of those not mirrored given back
        finally:
            shadow.gate.set()
        settled(app)
        assert app.metrics.pairs_pending._value.get() == 0
        assert HTTP.post(proxy + "/v1/chat/completions", json=chat("again")).status_code == 200
        settled(app)
        assert counter(app, "shadow", "skipped", "pairs_behind") == 2    # mirrored again
        assert counter(app, "shadow", "mirrored", "ok") == 3
