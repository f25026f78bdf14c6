"""What the forwarder's requests become besides their answer: a shadow call, a pair, a capture line.

The forwarder (``shadowdiff.proxy.forward``) knows nothing of the shadow. It makes one call
per request, ``Mirroring.start``, once its head is read, and tells the ``MirroredRequest``
it gets back what happened, in this order:

* ``keeps_body`` (read before the body): keep a copy of the body for mirroring or capture;
* ``body_in(body)``: the body is in - the request is captured, and the shadow (and the
  replica) called now, while the primary works on it;
* ``keeps_answer`` (read before the answer): keep the primary's answer as it passes;
* ``primary_done(tapped)``: the primary's answer passed whole;
* ``finish(...)``: however the request ended, always, last.

Every chat or completions request the run saw is in its counts: its pair task counts a
mirrored one; one that is not mirrored is counted here with the reason
(``NOT_MIRRORED_REASONS``). Nothing here can fail the client's request:
an error of mirroring or capture is logged and counted, never raised to the forwarder.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from typing import Any

import orjson

from shadowdiff.answers.redact import header_secrets
from shadowdiff.proxy.capture import Capture
from shadowdiff.proxy.metrics import ProxyMetrics
from shadowdiff.proxy.pairs import NoAnswer, PairRecorder
from shadowdiff.proxy.settings import MIRRORED_PATHS
from shadowdiff.proxy.shadow import Mirror
from shadowdiff.proxy.tap import Tapped
from shadowdiff.vocabulary import NotMirrored

log = logging.getLogger("shadowdiff.proxy")


class Mirroring:
    """Mirroring and capture for one proxy process: ``start`` follows a request."""

    def __init__(self, mirror: Mirror, pairs: PairRecorder, metrics: ProxyMetrics,
                 capture: Capture | None = None) -> None:
        self.mirror = mirror
        self.pairs = pairs
        self.metrics = metrics
        self.capture = capture
        self.instance = uuid.uuid4().hex[:8] + "-"   # this process's prefix for request keys
        self.counter = itertools.count(1)

    def start(self, method: str, path: str, raw_path: str, query: str, headers: list[tuple[bytes, bytes]],
              has_body: bool) -> MirroredRequest:
        """Follow a request whose head was just read (its body, if ``has_body``, still to come).

        ``raw_path`` and ``query`` are the target as received (the query with its "?"), which
        the shadow and the replica get too; ``headers`` are the end-to-end ones."""
        return MirroredRequest(self, method, path, raw_path, query, headers, has_body)


class MirroredRequest:
    """One request as mirroring and capture see it (made by ``Mirroring.start``): most
    have no part in either, and then every method here does nothing."""

    def __init__(self, mirroring: Mirroring, method: str, path: str, raw_path: str, query: str,
                 headers: list[tuple[bytes, bytes]], has_body: bool) -> None:
        self.m = mirroring
        self.path = path
        self.raw_path = raw_path
        self.query = query
        self.headers = headers
        self.has_body = has_body
        self.wanted = mirroring.mirror.wanted(method, path)   # a chat request, and a shadow to mirror to
        captured = mirroring.capture is not None and method == "POST" and path in MIRRORED_PATHS
        self.keeps_body = has_body and (self.wanted or captured)
        self._key: str | None = None
        self.accounted = False     # counted in the run as not mirrored
        self.primary: asyncio.Future[Any] | None = None   # the pair task's wait for the primary's answer

    @property
    def keeps_answer(self) -> bool:
        """Whether the primary's answer is wanted (``primary_done``): the request is mirrored."""
        return self.primary is not None

    def body_in(self, body: bytes | None) -> None:
        """The request's body is in (None: none, or one larger than ``max_mirror_body``):
        capture it, and call the shadow, or count why not."""
        if not self.keeps_body:
            if not self.has_body and self.wanted:
                self._not_mirrored(NotMirrored.UNPARSABLE)   # a chat request with no body: no JSON object
            return
        try:
            self._mirror_and_capture(body)
        except Exception as exc:
            # (the request is POST to a path of MIRRORED_PATHS: short, unlike a path in general)
            log.error("mirroring or capture failed for POST %s: %s", self.path, self._failure(exc))
            log.debug("where mirroring or capture failed", exc_info=True)
            # (a request for the shadow that became no pair is counted when it ends: ``finish``)

    def primary_done(self, tapped: Tapped) -> None:
        """The primary's answer passed whole, as tapped."""
        if self.primary is not None and not self.primary.done():
            self.primary.set_result(tapped)

    def finish(self, *, refused: bool, client_left: bool, failed: bool, drained: bool) -> None:
        """Whatever happened, the pair learns how the primary side ended; a request for the
        shadow that never became a pair nor was counted as not mirrored is counted now:
        every request the run saw is in its counts.

        ``refused``: the proxy refused the request before it was forwarded; ``client_left``:
        the client left while its request arrived or before its answer was whole; ``failed``:
        the primary failed; ``drained``: the shutdown's deadline (--drain-timeout) cut it."""
        if self.primary is None and not self.accounted and self.wanted:
            self._not_mirrored(NotMirrored.UNFORWARDABLE if refused
                               else NotMirrored.UPLOAD_CUT if client_left else NotMirrored.PROXY_ERROR)
        if self.primary is not None and not self.primary.done():
            # None: the client left - the pair is aborted; DRAINED: --drain-timeout cut it
            self.primary.set_result(NoAnswer.FAILED if failed else NoAnswer.DRAINED if drained else None)

    @property
    def key(self) -> str:
        """The pair's and the capture line's id: unique in the run even when clients
        reuse an X-Request-Id, and still greppable by it - redacted, since it is stored
        and captured (a client may put anything there), and cut to fit the store's column."""
        if self._key is None:
            # (cut before it is redacted, as redaction costs time in its length; after, to fit)
            client_id = next((self.m.pairs.redactor.text(v[:512].decode("latin-1"))[:200]
                              for k, v in self.headers if k == b"x-request-id"), None)
            unique = f"{self.m.instance}{next(self.m.counter):x}"
            self._key = f"{client_id}-{unique}" if client_id else unique
        return self._key

    def _mirror_and_capture(self, body: bytes | None) -> None:
        m = self.m
        if m.capture is not None and body is not None:
            try:
                parsed = orjson.loads(body)
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                m.capture.offer(self.key, self.path, parsed, header_secrets(self.headers))
        if not self.wanted:
            return
        plan = m.mirror.plan(self.headers, body)
        if isinstance(plan, NotMirrored):
            self._not_mirrored(plan)
            return
        if m.pairs.behind:     # (after the plan: a request sampled out says so, not this)
            m.mirror.release(plan)
            m.mirror.release_replica(plan)
            self._not_mirrored(NotMirrored.PAIRS_BEHIND)
            return
        loop = asyncio.get_running_loop()
        # (a pair with a replica's answer or scores is made in the proxy: the pair process has neither)
        shadow, kept = m.mirror.start(plan, self.raw_path, self.query, self.headers,
                                          keep=plan.replica_body is None and m.pairs.scorer is None)
        replica = None
        if plan.replica_body is not None:
            replica = loop.create_task(m.mirror.call_replica(plan, self.raw_path, self.query, self.headers))
            replica.add_done_callback(lambda _: m.mirror.release_replica(plan))
        self.primary = loop.create_future()
        m.pairs.track(self.key, self.path, plan, self.primary, shadow, replica, kept)

    def _not_mirrored(self, why: NotMirrored) -> None:
        self.accounted = True
        self.m.metrics.shadow_event("skipped", why)
        self.m.pairs.not_mirrored(why)

    def _failure(self, exc: BaseException) -> str:
        """An error, for the log: on one line, without the credentials the request's headers carried."""
        return self.m.pairs.redactor.failure(exc, self.headers)
