"""``build_app(settings)``: the shadow proxy as one ASGI application.

Requests for the proxy's own endpoints (``/healthz``, ``/readyz``, ``/metrics``) go
to a small Starlette app; everything else goes to the ``Forwarder``, a plain ASGI
callable, without passing through any framework layer. The lifespan opens the
connection pools, the store and its writer; at shutdown, after uvicorn has let the
in-flight streams finish, it waits for the pairs still being compared and flushes
them to the store.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time

import aiohttp
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, multiprocess
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from proxy.capture import Capture
from proxy.forward import Forwarder
from proxy.membership import Membership
from proxy.metrics import ProxyMetrics, StateCollector, exposition, multiprocess_dir
from proxy.pairs import PairRecorder
from proxy.retention import Retention
from proxy.settings import ProxySettings, public_url
from proxy.shadow import Mirror
from shadowdiff import __version__
from shadowdiff.records import Side
from shadowdiff.redact import Redactor, failure_text
from shadowdiff.store import Store
from shadowdiff.store.writer import PairWriter

log = logging.getLogger("shadowdiff.proxy")
ADMIN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
REVIEW_PREFIX = "/review"   # vLLM serves nothing there, so it is safe to take from the forwarded space


class ProxyApp:
    """The proxy: admin endpoints, the forwarder, and the lifespan that ties them."""

    def __init__(self, settings: ProxySettings, registry: CollectorRegistry | None = None) -> None:
        self.settings = settings
        self.metrics = ProxyMetrics(registry)
        self.mirror = Mirror(settings, self.metrics)
        self.redactor = Redactor(settings.redact)
        self.store: Store | None = None
        self.writer: PairWriter | None = None
        self.run_id: str | None = None
        self.membership: Membership | None = None
        self.retention: Retention | None = None
        self.capture: Capture | None = None
        self.review: ASGIApp | None = None
        self.state: StateCollector | None = None
        self.probe: asyncio.Task[None] | None = None
        self.pairs = PairRecorder(settings, self.metrics, None, self.redactor)
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
        if s.shadow is not None or s.review_token is not None:
            self.store = await asyncio.to_thread(Store.open, s.store)
        if s.shadow is not None and self.store is not None:
            # this process's key prefix names it among the run's members: keys never collide in a shared run
            self.membership = Membership(self.store, s.deployment, s.recorded(), self.forwarder.instance.rstrip("-"))
            self.run_id = await asyncio.to_thread(self.membership.join)
            self.metrics.store_up.set(1)
            self.writer = PairWriter(self.store, self.run_id, on_written=self.metrics.stored.inc,
                                     on_finished=self.membership.move,
                                     on_dropped=lambda reason, n: self.metrics.dropped.labels(reason).inc(n),
                                     on_state=lambda up: self.metrics.store_up.set(1 if up else 0))
            self.pairs.writer = self.writer
            self.membership.on_moved = self._moved
        if s.retain is not None and self.store is not None:
            self.retention = Retention(self.store, s.retain, s.deployment, every=s.retain_every,
                                       on_pruned=self.metrics.pruned.inc)
            self.retention.start()
        if s.review_token is not None and self.store is not None:
            from shadowdiff.review.app import build_review_app

            self.review = build_review_app(self.store, s.review_token, prefix=REVIEW_PREFIX)
        self.state = StateCollector(
            version=__version__, baseline=s.name_of(Side.BASELINE), candidate=s.name_of(Side.CANDIDATE),
            margin=s.alert_margin, store=self.store)
        if multiprocess_dir() is None:
            self.metrics.registry.register(self.state)
        if s.capture is not None:
            self.capture = Capture(s.capture, self.redactor)
            self.forwarder.capture = self.capture
        self.forwarder.open()
        self.mirror.open()
        # not awaited: start-up does not wait for the upstreams, it only says when they are down
        self.probe = asyncio.get_running_loop().create_task(self._probe_upstreams())
        # What start-up allocated lives as long as the process: keep it out of the
        # garbage collector's scans, which otherwise show up as latency spikes.
        gc.collect()
        gc.freeze()

    def _moved(self, run_id: str) -> None:
        """The run was closed under this process, which joined ``run_id`` (the heartbeat's or the writer's thread)."""
        self.run_id = run_id
        if self.writer is not None:
            self.writer.run_id = run_id    # read once per batch by the writer's thread

    async def _probe_upstreams(self) -> None:
        """One warning per upstream whose ``/health`` does not answer at start-up: in front
        of a primary that is down, the proxy otherwise starts without a word."""
        s = self.settings
        assert self.forwarder.upstream is not None
        upstreams = [("primary", s.primary, self.forwarder.upstream.pooled)]
        if s.shadow is not None and self.mirror.upstream is not None:
            upstreams.append(("shadow", s.shadow, self.mirror.upstream.pooled))
        problems = await asyncio.gather(*(health_problem(session, url) for _, url, session in upstreams))
        for (name, url, _), problem in zip(upstreams, problems, strict=True):
            if problem is not None:
                log.warning("the %s %s is not answering: %s; serving anyway", name, public_url(url), problem)

    async def shutdown(self) -> None:
        deadline = time.monotonic() + self.settings.drain_timeout
        if self.probe is not None:
            self.probe.cancel()
        if self.retention is not None:
            self.retention.stop(timeout=0)   # at once: it stops after its batch in progress
        await self.pairs.drain(self.settings.drain_timeout)
        self.pairs.flush_counts()
        self.pairs.closed = True
        await self.forwarder.close()
        await self.mirror.close()
        if self.writer is not None:
            # within --drain-timeout, whatever the store does: what it cannot take by then
            # is dropped and counted (at least a second to write what is queued)
            await asyncio.to_thread(self.writer.close, max(1.0, deadline - time.monotonic()))
        if self.retention is not None:
            await asyncio.to_thread(self.retention.stop, max(0.0, min(2.0, deadline - time.monotonic())))
        if self.store is not None:
            if self.membership is not None:
                await asyncio.to_thread(self.membership.leave)
            self.store.close()
        if self.capture is not None:
            await asyncio.to_thread(self.capture.close)
        if multiprocess_dir() is not None:
            # this worker's in-flight gauge leaves the sum (its counters stay counted)
            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    async def _healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def _readyz(self, request: Request) -> Response:
        upstream = self.forwarder.upstream
        assert upstream is not None
        problem = await health_problem(upstream.pooled, self.settings.primary)
        if problem is None:
            return JSONResponse({"status": "ready"})
        return JSONResponse({"status": "not ready", "detail": f"the primary {problem}"}, status_code=503)

    async def _metrics(self, request: Request) -> Response:
        assert self.state is not None
        # in a thread: the review state may query the store
        body = await asyncio.to_thread(exposition, self.metrics, self.state)
        return Response(body, media_type=CONTENT_TYPE_LATEST)


async def health_problem(session: aiohttp.ClientSession, base_url: str, seconds: float = 2.0) -> str | None:
    """What is wrong with an upstream's ``/health`` (vLLM's), or None when it answers 200."""
    try:
        async with session.get(base_url.rstrip("/") + "/health", timeout=aiohttp.ClientTimeout(total=seconds)) as r:
            return None if r.status == 200 else f"answered /health with {r.status}"
    except TimeoutError:
        return f"did not answer /health within {seconds:g} s"
    except aiohttp.ClientError as exc:
        return f"did not answer /health: {failure_text(exc)}"


def build_app(settings: ProxySettings, registry: CollectorRegistry | None = None) -> ProxyApp:
    """The proxy as an ASGI app; nothing is opened until the lifespan starts."""
    return ProxyApp(settings, registry)
