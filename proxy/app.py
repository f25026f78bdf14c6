"""``build_app(settings)``: the shadow proxy as one ASGI application.

Requests for the proxy's own endpoints (``/healthz``, ``/readyz``, ``/metrics``) go
to a small Starlette app; everything else goes to the ``Forwarder``, a plain ASGI
callable, without passing through any framework layer. The lifespan opens the
connection pools, the store and its writer; at shutdown, after uvicorn has let the
in-flight streams finish, it waits for the pairs still being compared and flushes
them to the store.

Nothing a client, a probe or a scrape waits for waits for the store: the writer and
the heartbeat have threads of their own, ``/metrics`` reads the store through
``store_health.LastKnown`` (and renders on a thread of its own, never the event
loop's default executor, which name resolution for new upstream connections needs),
and the review UI has its own connection pool. Shutdown is bounded by
``--drain-timeout`` from the signal, whatever the store does.
"""

from __future__ import annotations

import asyncio
import gc
import hmac
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import FrameType
from typing import Any

import aiohttp
import httpx
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, multiprocess
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from shadowdiff import __version__
from shadowdiff.answers.engineversion import engine_version
from shadowdiff.answers.redact import Redactor, failure_text, public_url
from shadowdiff.proxy.capture import Capture
from shadowdiff.proxy.childpairs import Stats
from shadowdiff.proxy.forward import Forwarder
from shadowdiff.proxy.membership import Membership
from shadowdiff.proxy.metrics import ProxyMetrics, StateCollector, exposition, multiprocess_dir
from shadowdiff.proxy.pairs import PairRecorder
from shadowdiff.proxy.retention import Retention
from shadowdiff.proxy.scoring import PairScorer, score_client
from shadowdiff.proxy.settings import MIRRORED_PATHS, ProxySettings
from shadowdiff.proxy.shadow import Mirror
from shadowdiff.proxy.store_health import LastKnown, StoreHealth
from shadowdiff.store import Store
from shadowdiff.store.writer import PairWriter
from shadowdiff.vocabulary import Side

log = logging.getLogger("shadowdiff.proxy")
ADMIN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
STORE_STEP = 2.0      # seconds, at most, for each store step of the shutdown past the deadline
REVIEW_PREFIX = "/review"   # vLLM serves nothing there, so it is safe to take from the forwarded space


class ProxyApp:
    """The proxy: admin endpoints, the forwarder, and the lifespan that ties them."""

    def __init__(self, settings: ProxySettings, registry: CollectorRegistry | None = None) -> None:
        self.settings = settings
        self.metrics = ProxyMetrics(registry)
        self.mirror = Mirror(settings, self.metrics)
        self.redactor = Redactor(settings.redact)
        self.store: Store | None = None
        self.reads: Store | None = None       # the review UI's and the scrapes': a pool of their own
        self.health = StoreHealth(lambda up: self.metrics.store_up.set(1 if up else 0))
        self.admin_pool: ThreadPoolExecutor | None = None
        self.stopping_at: float | None = None  # when SIGTERM/SIGINT came: --drain-timeout counts from it
        self.writer: PairWriter | None = None
        self._queue = (0, 0)            # the writer's queue: pairs, bytes
        self._child = Stats()           # the pair process's writer: its state, its queue, what it dropped
        self._child_lost = 0            # pairs lost with a pair process that ended holding them unwritten
        self.run_id: str | None = None
        self.membership: Membership | None = None
        self.retention: Retention | None = None
        self.capture: Capture | None = None
        self.review: ASGIApp | None = None
        self.state: StateCollector | None = None
        self.probe: asyncio.Task[None] | None = None
        # (the sides' engine versions, and the sides that are the simulator), probed at start-up
        self.engines: tuple[dict[str, str | None], list[str]] | None = None
        self.score_client: httpx.AsyncClient | None = None   # with --score-rate: the scorer's own pool
        self.pairs = PairRecorder(settings, self.metrics, None, self.redactor)
        self.mirror.channel = self.pairs.channel
        self.forwarder = Forwarder(settings, self.mirror, self.pairs, self.metrics)
        self.admin = Starlette(routes=[
            Route("/healthz", self._healthz), Route("/readyz", self._readyz), Route("/metrics", self._metrics),
        ])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            if path in ADMIN_PATHS:
                await self.admin(scope, receive, send)
            elif self.review is not None and (path == REVIEW_PREFIX or path.startswith(REVIEW_PREFIX + "/")):
                await self.review(scope, receive, send)
            elif path in MIRRORED_PATHS and scope["method"] == "POST":
                with self.pairs.serving():   # in flight until its run counts it (the heartbeat reports it)
                    await self.forwarder(scope, receive, send)
            else:
                await self.forwarder(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "websocket":
            # Not proxied (vLLM's OpenAI API is plain HTTP): refused, which uvicorn sends as a 403.
            await send({"type": "websocket.close", "code": 1008})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def startup(self) -> None:
        s = self.settings
        self._watch_signals()
        self.admin_pool = ThreadPoolExecutor(1, thread_name_prefix="shadowdiff-metrics")
        if s.shadow is not None:
            self.store = await asyncio.to_thread(Store.open, s.store, timeout=s.store_timeout)
        if s.shadow is not None or s.review_token is not None:
            self.reads = await asyncio.to_thread(Store.open, s.store, timeout=s.store_timeout)
            self.metrics.store_up.set(1)
        if self.store is not None:
            # this process's key prefix names it among the run's members: keys never collide in a shared run
            self.membership = Membership(self.store, s.deployment, s.recorded(), self.forwarder.instance.rstrip("-"),
                                         on_result=lambda ok: self.health.report("heartbeat", ok),
                                         in_flight=lambda: self.pairs.unwritten)
            self.run_id = await asyncio.to_thread(self.membership.join)
            self.writer = PairWriter(self.store, self.run_id, on_written=self.metrics.stored.inc,
                                     on_finished=self.membership.move,
                                     on_dropped=lambda reason, n: self.metrics.dropped.labels(reason).inc(n),
                                     on_state=lambda up: self.health.report("writer", up),
                                     on_queue=self._queued, max_queue=s.store_queue, max_bytes=s.store_queue_bytes,
                                     member=self.membership.member)
            self.pairs.writer = self.writer
            self.membership.on_moved = self._moved
            self.membership.in_flight_lock = self.writer.writing_counts
            if self.pairs.channel is not None:     # (the pair process stores the pairs it makes there)
                self.pairs.channel.run_id = self.run_id
        if self.pairs.channel is not None:
            self.pairs.channel.on_stats = self._child_stats
            self.pairs.channel.on_ended = self._child_ended
        if s.retain is not None and self.store is not None:
            self.retention = Retention(self.store, s.retain, s.deployment, every=s.retain_every,
                                       on_pruned=self.metrics.pruned.inc)
            self.retention.start()
        review = None
        if self.reads is not None:
            from shadowdiff.store.review import serve_review_state

            reads = self.reads
            review = LastKnown(lambda: serve_review_state(reads), name="review-state",
                               on_result=lambda ok: self.health.report("reads", ok))
        if s.review_token is not None and self.reads is not None:
            from shadowdiff.review.app import build_review_app

            self.review = build_review_app(self.reads, s.review_token, prefix=REVIEW_PREFIX)
            if s.metrics_token is None:
                log.warning("the review UI is on and /metrics is open: anyone who can reach this port can follow "
                            "the verdicts (shadowdiff_review_verdicts) as reviewers give them, which unblinds a "
                            "second review; set --metrics-token, or keep reviewers to /review/")
        self.state = StateCollector(
            version=__version__, baseline=s.name_of(Side.BASELINE), candidate=s.name_of(Side.CANDIDATE),
            margin=s.alert_margin, review=review)
        if multiprocess_dir() is None:
            self.metrics.registry.register(self.state)
        if s.capture is not None:
            self.capture = Capture(s.capture, self.redactor)
            self.forwarder.capture = self.capture
        self.forwarder.open()
        self.mirror.open()
        if s.shadow is not None:
            self.pairs.work.start()     # (the pair process, if any, starts now: its pairs are the thread's meanwhile)
        if s.score_rate > 0 and s.shadow is not None:
            self.score_client = score_client(s)
            self.pairs.scorer = PairScorer(s, self.metrics, self.score_client)
            self.metrics.score_rate.set(s.score_rate)
        # not awaited: start-up does not wait for the upstreams, it only says when they are down
        self.probe = asyncio.get_running_loop().create_task(self._probe_upstreams())
        # What start-up allocated lives as long as the process: keep it out of the
        # garbage collector's scans, which otherwise show up as latency spikes.
        gc.collect()
        gc.freeze()

    def _queued(self, pairs: int, size: int) -> None:
        """(the writer's thread) Its queue, in the gauges with the pair process's writer's."""
        self._queue = (pairs, size)
        self._show_queue()

    def _show_queue(self) -> None:
        child = self._child.queued, self._child.queued_bytes
        self.metrics.store_queue.set(self._queue[0] + child[0])
        self.metrics.store_queue_bytes.set(self._queue[1] + child[1])

    def _child_stats(self, stats: Stats) -> None:
        """(on the event loop) What the pair process's writer did, in the metrics and the
        store's health, as the proxy's own writer's."""
        if stats.written:
            self.metrics.stored.inc(stats.written)
        for reason, n in stats.dropped.items():
            self.metrics.dropped.labels(reason).inc(n)
        if stats.up != self._child.up:
            self.health.report("pair process's writer", stats.up)
        self._child.up, self._child.queued, self._child.queued_bytes = stats.up, stats.queued, stats.queued_bytes
        self._child.held = stats.held
        self._child.dropped.update(stats.dropped)
        self._show_queue()

    @property
    def incomplete(self) -> bool:
        """Whether this proxy's run is short of what it compared: pairs or counts that its
        writer, or a pair process's, never wrote (at the end, or with a pair process killed)."""
        return self.writer is not None and bool(self.writer.dropped["shutdown"] or self.writer.unwritten
                                                or self.pairs.work.incomplete or self._child_lost > 0)

    def _child_ended(self, last: Stats) -> None:
        """(on the event loop) The pair process ended while serving (killed, or ended as
        hung): the pairs its writer held are lost, counted in the run but never stored, and
        the run is left incomplete; its queue and its state are no longer the store's."""
        if last.held > 0:
            self._child_lost += last.held
            self.metrics.dropped.labels("lost").inc(last.held)
            self._child.dropped["lost"] += last.held
            log.error("the pair process ended holding %d %s it had not written: they are lost, and this proxy "
                      "will leave its run incomplete", last.held, "pair" if last.held == 1 else "pairs")
        if not self._child.up:
            self.health.report("pair process's writer", True)
        self._child = Stats(dropped=self._child.dropped)
        self._show_queue()

    def _watch_signals(self) -> None:
        """Note when SIGTERM or SIGINT arrives, then let uvicorn's handler do the rest: the
        shutdown's deadline counts from the signal, not from when uvicorn, done draining
        connections, tells the app. (uvicorn restores its own saved handlers on exit.)"""
        if threading.current_thread() is not threading.main_thread():
            return     # (an app run in a thread: the deadline counts from the lifespan's shutdown)
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)
            if callable(previous):
                signal.signal(sig, self._noting(previous))

    def _noting(self, previous: Callable[[int, FrameType | None], Any]) -> Callable[[int, FrameType | None], None]:
        def handler(sig: int, frame: FrameType | None) -> None:
            if self.stopping_at is None:
                self.stopping_at = time.monotonic()
            previous(sig, frame)
        return handler

    def _moved(self, run_id: str) -> None:
        """The run was closed under this process, which joined ``run_id`` (the heartbeat's or the writer's thread)."""
        self.run_id = run_id
        if self.writer is not None:
            self.writer.run_id = run_id    # read once per batch by the writer's thread
        self._record_engines(run_id)
        if self.pairs.channel is not None:
            self.pairs.channel.move(run_id)

    async def _probe_upstreams(self) -> None:
        """One warning per upstream whose ``/health`` does not answer at start-up: in front
        of a primary that is down, the proxy otherwise starts without a word. Then each
        side's engine version, recorded with the run as replay records it (``versions``,
        and ``simulated``: the sides that are shadowdiff's simulator, which every report
        of the run then says)."""
        s = self.settings
        assert self.forwarder.upstream is not None
        session = self.forwarder.upstream.pooled
        upstreams = [("primary", s.primary, session)]
        if s.shadow is not None and self.mirror.upstream is not None:
            upstreams.append(("shadow", s.shadow, self.mirror.upstream.pooled))
        problems = await asyncio.gather(*(health_problem(session, url) for _, url, session in upstreams))
        for (name, url, _), problem in zip(upstreams, problems, strict=True):
            if problem is not None:
                log.warning("the %s %s is not answering: %s; serving anyway", name, public_url(url), problem)
        if self.store is None:
            return
        sides = [(s.primary_side, s.primary), *([(s.shadow_side, s.shadow)] if s.shadow else []),
                 *([(Side.REPLICA, s.replica)] if s.replica else [])]
        found = await asyncio.gather(*(engine_version(session, url.rstrip("/") + "/version") for _, url in sides))
        self.engines = ({side.value: version for (side, _), (version, _) in zip(sides, found, strict=True)},
                        [side.value for (side, _), (_, fake) in zip(sides, found, strict=True) if fake])
        await asyncio.to_thread(self._record_engines)

    def _record_engines(self, run_id: str | None = None) -> None:
        """The sides' engine versions with the run (``run_id``: the one joined after a move), best
        effort: a store that fails now loses a label of the report, never a pair."""
        run_id = run_id or self.run_id
        if self.engines is None or self.store is None or run_id is None:
            return
        versions, simulated = self.engines
        try:
            self.store.set_run_setting(run_id, "versions", versions)
            if simulated:
                self.store.set_run_setting(run_id, "simulated", simulated)
                log.info("the %s %s shadowdiff's simulator (a test double, synthetic text): every report of "
                            "this run says so", " and the ".join(simulated), "is" if len(simulated) == 1 else "are")
        except SQLAlchemyError as exc:
            log.warning("could not record the engines' versions with run %s: %s", run_id, exc)

    async def shutdown(self) -> None:
        """Within ``--drain-timeout`` of the signal (uvicorn spent part of it on the
        in-flight requests), plus at most a few seconds for the store: the pairs still
        being compared, then the writer's queue (what the store has not taken by then is
        dropped and counted), then leaving the run. A store that does not answer is
        given up on: the run's membership lapses by itself (``store.members``)."""
        deadline = (self.stopping_at or time.monotonic()) + self.settings.drain_timeout
        if self.probe is not None:
            self.probe.cancel()
        if self.retention is not None:
            self.retention.stop(timeout=0)   # at once: it stops after its batch in progress
        await self.pairs.drain(max(0.0, deadline - time.monotonic()))
        # the pair process's writer has as long as the proxy's, below, for the pairs it holds
        budget = max(1.0, deadline - time.monotonic())
        if self.pairs.channel is not None:
            self.pairs.channel.close(budget)     # (before its child is ended: its end is no loss to report)
        work = self.pairs.work
        # (drained: nothing is queued for the thread; a job late is done by its caller)
        await _bounded(lambda: work.close(timeout=0, process_timeout=budget + STORE_STEP), budget + 2 * STORE_STEP,
                       "ending the pair process")
        self.pairs.flush_counts()
        self.pairs.closed = True
        await self.forwarder.close()
        await self.mirror.close()
        if self.score_client is not None:
            await self.score_client.aclose()
        if self.writer is not None:
            # (at least a second to write what is queued, if the store is there to take it)
            budget = max(1.0, deadline - time.monotonic())
            writer = self.writer
            await _bounded(lambda: writer.close(budget), budget + STORE_STEP, "writing the pairs held")
            if writer.dropped["shutdown"]:
                log.warning("shutdown: %d pairs the store had not taken by the deadline were dropped (counted in "
                            "shadowdiff_pairs_dropped_total)", writer.dropped["shutdown"])
        if self.retention is not None:
            retention = self.retention
            await _bounded(lambda: retention.stop(STORE_STEP), STORE_STEP, "stopping the retention")
        if self.membership is not None:
            # a proxy that could not write all it compared says so: its run cannot pass on counts that are short
            incomplete = self.incomplete
            membership = self.membership
            await _bounded(lambda: membership.leave(incomplete), STORE_STEP, "leaving the run")
        for store in (self.store, self.reads):
            if store is not None:
                await _bounded(store.close, STORE_STEP, "closing the store")
        if self.capture is not None:
            await asyncio.to_thread(self.capture.close)
        if self.admin_pool is not None:
            self.admin_pool.shutdown(wait=False, cancel_futures=True)
        if multiprocess_dir() is not None:
            # this worker's in-flight gauge leaves the sum (its counters stay counted)
            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    async def _healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def _readyz(self, request: Request) -> Response:
        """Ready when the primary answers: the proxy serves while its store is down, so the
        store's state is shown beside (``store``), never a reason to be taken out of service."""
        upstream = self.forwarder.upstream
        assert upstream is not None
        problem = await health_problem(upstream.pooled, self.settings.primary)
        store = self._store_state()
        if problem is None:
            return JSONResponse({"status": "ready", **store})
        return JSONResponse({"status": "not ready", "detail": f"the primary {problem}", **store}, status_code=503)

    def _store_state(self) -> dict[str, object]:
        if self.reads is None:
            return {}
        if self.state is not None and self.state.review is not None:
            self.state.review.get(wait=False)   # (a stale read is redone: the reads' part of the state stays current)
        state = self.health.describe()
        if self.writer is not None:
            state["queued_pairs"] = self.writer.queued + self._child.queued
            state["dropped_pairs"] = sum(self.writer.dropped.values()) + sum(self._child.dropped.values())
        return {"store": state}

    async def _metrics(self, request: Request) -> Response:
        assert self.state is not None and self.admin_pool is not None
        token = self.settings.metrics_token
        if token is not None:
            scheme, _, given = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode("utf-8", "surrogatepass"),
                                                                    token.encode()):
                return Response("a metrics token is required (--metrics-token)\n", status_code=401,
                                headers={"www-authenticate": 'Bearer realm="shadowdiff metrics"'},
                                media_type="text/plain")
        # on a thread of its own: rendering takes a while, and the store's figures may
        # wait (at most a second) for a read
        body = await asyncio.get_running_loop().run_in_executor(self.admin_pool, exposition, self.metrics,
                                                                self.state)
        return Response(body, media_type=CONTENT_TYPE_LATEST)


async def health_problem(session: aiohttp.ClientSession, base_url: str, seconds: float = 2.0) -> str | None:
    """What is wrong with an upstream's ``/health`` (vLLM's, SGLang's, TGI's), or None when
    it answers 200.

    A server without one (404 or 405: llama-cpp-python's OpenAI server) is asked ``GET
    /v1/chat/completions`` instead: an OpenAI server has that route for POST only, so it
    answers 405 (or another 4xx) without doing any work; a URL that is not an OpenAI
    server's base (another web server, a base ending in ``/v1``) answers 404. Never
    ``/v1/models``: llama-cpp-python answers it under the lock its generation holds, so a
    probe waited behind every generation (a busy server looked down) and, with
    ``--interrupt_requests`` (its default), ended the stream a user was reading."""
    base = base_url.rstrip("/")
    path = "/health"
    timeout = aiohttp.ClientTimeout(total=seconds)
    try:
        async with session.get(base + path, timeout=timeout) as r:
            if r.status == 200:
                return None
            if r.status not in (404, 405):
                return f"answered /health with {r.status}"
        path = "/v1/chat/completions"
        async with session.get(base + path, timeout=timeout) as route:
            if route.status == 404:
                return ("has no /health and answered GET /v1/chat/completions with 404: not an OpenAI-compatible "
                        "server's base URL (give it without /v1)")
            return None if route.status < 500 else f"has no /health and answered GET {path} with {route.status}"
    except TimeoutError:
        return f"did not answer {path} within {seconds:g} s"
    except aiohttp.ClientError as exc:
        return f"did not answer {path}: {failure_text(exc)}"


async def _bounded(call: Callable[[], object], seconds: float, what: str) -> None:
    """Run a blocking shutdown step in a daemon thread, waiting at most ``seconds``: a
    store that hangs is left behind, and the process exits anyway (a daemon thread
    does not hold it)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle(error: BaseException | None) -> None:
        if not done.done():
            done.set_result(None) if error is None else done.set_exception(error)

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the event loop, reported below
            loop.call_soon_threadsafe(settle, exc)
        else:
            loop.call_soon_threadsafe(settle, None)

    threading.Thread(target=run, name="shadowdiff-shutdown", daemon=True).start()
    try:
        await asyncio.wait_for(done, seconds)
    except TimeoutError:
        log.warning("shutdown: gave up on %s after %.0f s (the store does not answer)", what, seconds)
    except Exception as exc:
        log.warning("shutdown: %s failed: %s", what, failure_text(exc))


def build_app(settings: ProxySettings, registry: CollectorRegistry | None = None) -> ProxyApp:
    """The proxy as an ASGI app; nothing is opened until the lifespan starts."""
    return ProxyApp(settings, registry)
