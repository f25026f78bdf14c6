"""Mirroring: whether a request goes to the shadow too, and calling the shadow.

The shadow has its own connection pool, a timeout, and a bound on requests in flight;
whatever it does (hang, error, reset, garbage) ends as an ``Answer`` with an error and
a reason for the metrics, never as an exception reaching the client's request.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import random
import re
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from shadowdiff.answers.compare import is_comparable, wants_stream
from shadowdiff.answers.parse import answer_from, read_answer
from shadowdiff.answers.records import Answer
from shadowdiff.answers.redact import failure_text
from shadowdiff.proxy.answers import guarded
from shadowdiff.proxy.body import with_model
from shadowdiff.proxy.metrics import ProxyMetrics
from shadowdiff.proxy.settings import MIRRORED_PATHS, ProxySettings
from shadowdiff.proxy.upstream import Upstream, header_text, target
from shadowdiff.vocabulary import NotMirrored, Side

if TYPE_CHECKING:
    from shadowdiff.proxy.shadowcalls import KeptCall, ShadowChannel

HOP_BY_HOP = frozenset({
    b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te", b"trailer",
    b"trailers", b"transfer-encoding", b"upgrade", b"host",
})
# Request headers that are not forwarded: the hop-by-hop ones, and Expect, which the
# proxy's own server has answered (uvicorn sends the client its 100 Continue). Sent
# upstream, aiohttp would wait for a 100 that an upstream need not send, with no
# timeout running.
NOT_FORWARDED = HOP_BY_HOP | {b"expect"}
_ERROR_BODY_LIMIT = 2000
TAP_LIMIT = 16 * 1024 * 1024    # an answer larger than this is passed on but not compared


class ShadowReply:
    """A shadow's (or the replica's) answer as its call ended: its bytes, read by ``read``
    where that costs the event loop nothing (``shadowdiff.proxy.pairwork``), or its failure."""

    __slots__ = ("_ended", "_failed", "_raw", "_reason", "_started", "_stream", "_times")

    def __init__(self, failed: Answer, reason: str = "ok", raw: bytes | None = None, stream: bool = False,
                 started: float = 0.0, times: TokenTimes | None = None, ended: float = 0.0) -> None:
        self._failed, self._reason, self._raw, self._stream = failed, reason, raw, stream
        self._started, self._times, self._ended = started, times, ended

    @property
    def size(self) -> int:
        """The bytes of its answer."""
        return 0 if self._raw is None else len(self._raw)

    def parts(self) -> tuple[Any, ...]:
        """The reply as plain values (what the pair process sends the proxy: ``from_parts``
        makes it again there, around the proxy's own ``failed`` answer). perf_counter's clock
        is the system's monotonic one, the same in both processes."""
        if self._raw is None:
            return (self._failed.status, self._failed.error, self._reason)
        times = self._times or TokenTimes()
        return (self._raw, self._stream, self._started, times.first, times.first_answer, times.last, self._ended)

    @classmethod
    def from_parts(cls, failed: Answer, parts: tuple[Any, ...]) -> ShadowReply:
        if len(parts) == 3:
            status, error, reason = parts
            return cls(replace(failed, status=status, error=error), reason)
        raw, stream, started, first, first_answer, last, ended = parts
        return cls(failed, raw=raw, stream=stream, started=started, times=TokenTimes(first, first_answer, last),
                   ended=ended)

    def read(self) -> tuple[Answer, str]:
        """The answer and the metrics reason (``ok`` or why it failed)."""
        if self._raw is None:
            return self._failed, self._reason
        times = self._times or TokenTimes()
        reading = read_answer(self._raw, self._stream)
        # (a body's tokens all come at once: no last token's time)
        answer = answer_from(self._failed, reading, 200, self._started, times.first, self._ended,
                             times.first_answer, times.last if self._stream else None)
        if reading.error is not None:
            reason = "error_event" if reading.error.startswith("error event") else (
                "incomplete" if reading.error.startswith("the stream ended") else "malformed")
            return answer, reason
        return answer, "ok"


@dataclass
class Plan:
    """A request that will be mirrored: what the shadow gets, and what the pair needs."""

    body: bytes
    request: dict[str, Any]
    stream: bool
    comparable: bool
    holds_slot: bool = True      # one of the ``max_shadow_in_flight`` places, until released
    replica_body: bytes | None = None   # also sent to the replica (the noise floor), if set
    holds_replica_slot: bool = False    # one of the replica's places, until released
    # the client's headers: the credentials among them are removed verbatim from what is
    # stored of the pair (read only then: most pairs are not stored)
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    source: bytes = b""          # the body as the client sent it (``body`` names the shadow's model, if set)


# A generated token of any kind, as it appears in a chunk: text, reasoning (a user of a
# reasoning model waits for nothing else), a refusal, or the start of a tool call; an
# *answer* token is any of them but reasoning (time to first answer token). A non-empty
# string value, with or without spaces around the colon (vLLM writes none; other servers
# do); a quoted key inside a string value is escaped (\"text\") and never matches.
MARKER_SPAN = 64   # bytes of one read kept for the next: a marker split between them is found
_CALL = rb'|"tool_calls"\s*:\s*\[\s*\{'
_ANSWER = re.compile(rb'"(?:content|text|refusal)"\s*:\s*"[^"]' + _CALL)
_GENERATED = re.compile(rb'"(?:content|text|refusal|reasoning|reasoning_content)"\s*:\s*"[^"]' + _CALL)


def first_times(chunk: bytes, first: float | None, now: float | None = None) -> tuple[float | None, float | None]:
    """When the first generated token and the first answer token (not reasoning) came,
    given this chunk of an answer and the first token's time so far; found in the bytes,
    as the proxy does not parse what it passes on. ``now`` is when the chunk came (None:
    now, read once: an answer without thinking has the same two times)."""
    if first is None and _GENERATED.search(chunk):
        first = now = now or time.perf_counter()
    if first is None or not _ANSWER.search(chunk):
        return first, None
    return first, now or time.perf_counter()


@dataclass
class TokenTimes:
    """When an answer's tokens passed, found in its bytes read by read: its first
    generated token, first answer token and last generated token. The tokens of one read
    share its time, so that an answer that came whole in one read has no decoding time
    rather than an absurd one (a serve store once reported 1,750,640 tokens/s)."""

    first: float | None = None
    first_answer: float | None = None
    last: float | None = None
    # the end of the reads before (its last MARKER_SPAN bytes count): a key split between
    # reads is found; of every read before, not only the last one, which may be shorter
    # than a key. Sliced where it is used: most reads hold a marker and need none.
    _carry: bytes = b""

    def seen(self, chunk: bytes) -> None:
        now = time.perf_counter()
        if self.first_answer is None:
            self.first, self.first_answer = first_times(self._carry[-MARKER_SPAN:] + chunk, self.first, now)
        if self.first == now or _GENERATED.search(chunk) or self._completes_marker(chunk):
            self.last = now
        self._carry = chunk if len(chunk) >= MARKER_SPAN else (self._carry[-MARKER_SPAN:] + chunk)

    def _completes_marker(self, chunk: bytes) -> bool:
        """Whether a marker begun in the reads before ends in this one."""
        carry = self._carry[-MARKER_SPAN:]
        return any(m.end() > len(carry) for m in _GENERATED.finditer(carry + chunk[:MARKER_SPAN]))


class Mirror:
    """Decides what to mirror and sends it to the shadow."""

    def __init__(self, settings: ProxySettings, metrics: ProxyMetrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.in_flight = 0
        self.peak = 0                # the most shadow requests ever in flight at once
        self.replica_in_flight = 0   # bounded like the shadow's, separately
        self._rng = random.Random()
        self.upstream: Upstream | None = None
        self.replica_upstream: Upstream | None = None
        # the pair process's end for the shadow's calls, when it makes them (set by the app)
        self.channel: ShadowChannel | None = None
        # the answer a shadow's reply or failure is written into (only read: each is a copy)
        self.failed = Answer(settings.shadow_side, settings.shadow_model)

    def open(self) -> None:
        """Create the shadow's connection pool, and the replica's (inside the running event loop).

        Separate pools: a slow replica must not take the connections the shadow needs.
        """
        s = self.settings
        self.upstream = Upstream(s.shadow_side.value, self.metrics, limit=s.max_shadow_in_flight,
                                 keepalive_timeout=s.upstream_idle_timeout, api_key=s.shadow_api_key)
        if s.replica is not None:
            self.replica_upstream = Upstream(Side.REPLICA.value, self.metrics, limit=s.max_shadow_in_flight,
                                             keepalive_timeout=s.upstream_idle_timeout, api_key=s.replica_key)
        if self.channel is not None:
            self.channel.open()

    async def close(self) -> None:
        if self.channel is not None:
            self.channel.close()
        for upstream in (self.upstream, self.replica_upstream):
            if upstream is not None:
                await upstream.close()

    def wanted(self, method: str, path: str) -> bool:
        """Whether a request is a candidate for mirroring at all (cheap, before the body)."""
        return self.settings.shadow is not None and method == "POST" and path in MIRRORED_PATHS

    def _sampled(self, headers: list[tuple[bytes, bytes]]) -> bool:
        rate = self.settings.sample_rate
        if rate >= 1.0:
            return True
        name = self.settings.sample_header
        if name:
            wanted = name.lower().encode()
            value = next((v for k, v in headers if k.lower() == wanted), None)
            if value is not None:
                # Consistent sampling: the same session is always in or always out.
                digest = hashlib.blake2b(value, digest_size=8).digest()
                return int.from_bytes(digest, "big") / 2.0**64 < rate
        return self._rng.random() < rate

    def plan(self, headers: list[tuple[bytes, bytes]], body: bytes | None) -> Plan | NotMirrored:
        """A ``Plan`` for the shadow, or the reason the request is not mirrored."""
        if body is None:
            return NotMirrored.TOO_LARGE
        if not self._sampled(headers):
            return NotMirrored.SAMPLED_OUT
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            return NotMirrored.UNPARSABLE
        if not isinstance(request, dict):
            return NotMirrored.UNPARSABLE
        if request.get("model") in self.settings.exclude_models:
            return NotMirrored.EXCLUDED
        if self.in_flight >= self.settings.max_shadow_in_flight:
            return NotMirrored.IN_FLIGHT_BOUND
        shadow_body: bytes | None = body
        if self.settings.shadow_model is not None:
            shadow_body = with_model(body, request, self.settings.shadow_model)
        if shadow_body is None:   # e.g. nested deeper than orjson writes
            return NotMirrored.UNPARSABLE
        # The place is taken now, not when the shadow task first runs: requests whose
        # bodies complete in the same loop turn must not all pass the bound.
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.metrics.shadow_in_flight.inc()
        plan = Plan(shadow_body, request, wants_stream(request), is_comparable(request), headers=headers, source=body)
        plan.replica_body = self._replica_body(plan, body)
        return plan

    def _replica_body(self, plan: Plan, body: bytes) -> bytes | None:
        """The replica's copy of a comparable request, for a share of them (the noise
        floor means nothing for sampled decoding)."""
        s = self.settings
        if (s.replica is None or not plan.comparable or self.replica_in_flight >= s.max_shadow_in_flight
                or self._rng.random() >= s.replica_rate):
            return None
        model = s.model_of(Side.REPLICA)
        replica_body = body if model is None else with_model(body, plan.request, model)
        if replica_body is None:
            return None
        # reserved now, like the shadow's place (see ``plan``)
        self.replica_in_flight += 1
        plan.holds_replica_slot = True
        return replica_body

    def release_replica(self, plan: Plan) -> None:
        if plan.holds_replica_slot:
            plan.holds_replica_slot = False
            self.replica_in_flight -= 1

    def release(self, plan: Plan) -> None:
        """Give back the plan's place (once, however the shadow request ended)."""
        if plan.holds_slot:
            plan.holds_slot = False
            self.in_flight -= 1
            self.metrics.shadow_in_flight.dec()

    def start(self, plan: Plan, path: str, query: str, headers: list[tuple[bytes, bytes]],
              keep: bool = False) -> tuple[asyncio.Future[Any], KeptCall | None]:
        """The shadow's call for a plan, under way: made by the pair process when one is
        ready (``shadowdiff.proxy.shadowcalls``), else on this event loop. With ``keep`` (the
        pair is made without a replica's answer or scores) and a pair process, the process
        keeps the shadow's answer and makes the pair: the call is also returned as a
        ``KeptCall``, whose ``pair`` hands it the primary's answer, and the future gives
        the pair as made; else the future gives the ``ShadowReply``. The plan's place is
        given back when the shadow has answered, however its call ends."""
        call: asyncio.Future[Any]
        release = functools.partial(self.release, plan)
        kept = None
        if self.channel is not None and self.channel.ready:
            call = self.channel.call(plan.body, plan.stream, path, query, headers,
                                     keep=plan if keep else None, answered=release)
            if keep:
                kept = self.channel.kept(call)
        else:
            call = asyncio.get_running_loop().create_task(self.ask(plan.body, plan.stream, path, query, headers))
        call.add_done_callback(lambda _: release())  # even if cancelled before it ran
        return call, kept

    async def ask(self, body: bytes, stream: bool, path: str, query: str,
                  headers: list[tuple[bytes, bytes]]) -> ShadowReply:
        """The shadow's answer to ``body``, to be read (``ShadowReply.read``)."""
        s = self.settings
        assert s.shadow is not None
        assert self.upstream is not None
        return await self._call(self.upstream, s.shadow, self.failed, body, stream, path, query, headers,
                                s.shadow_api_key)

    async def call_replica(self, plan: Plan, path: str, query: str,
                           headers: list[tuple[bytes, bytes]]) -> ShadowReply:
        """The replica's answer, sent with the baseline's credentials."""
        s = self.settings
        assert s.replica is not None and plan.replica_body is not None and self.replica_upstream is not None
        try:
            return await self._call(self.replica_upstream, s.replica, Answer(Side.REPLICA, s.model_of(Side.REPLICA)),
                                    plan.replica_body, plan.stream, path, query, headers, s.replica_key)
        finally:
            self.release_replica(plan)

    async def _call(self, upstream: Upstream, base_url: str, failed: Answer, body: bytes, stream: bool,
                    path: str, query: str, headers: list[tuple[bytes, bytes]],
                    api_key: str | None) -> ShadowReply:
        url = target(base_url, path, query)   # (the query with its "?")
        # (the primary's request had them all in UTF-8, or it was refused before a mirror)
        sent = header_text([(k, v) for k, v in headers
                            if k.lower() not in NOT_FORWARDED and k.lower() != b"content-length"
                            and not (api_key and k.lower() == b"authorization")]) or []
        if api_key:
            sent.append(("Authorization", f"Bearer {api_key}"))
        started = time.perf_counter()
        times = TokenTimes()
        status: int | None = None    # once the answer's head is in
        try:
            timeout = aiohttp.ClientTimeout(total=self.settings.shadow_timeout,
                                            sock_connect=self.settings.connect_timeout)
            # (guarded: a body broken after its head is malformed at once, not a timeout)
            response = guarded(await upstream.request("POST", url, headers=sent, data=body, timeouts=timeout))
            status = response.status
            async with response:
                if response.status != 200:
                    text = (await response.content.read(_ERROR_BODY_LIMIT)).decode("utf-8", "replace")
                    return ShadowReply(replace(failed, status=response.status,
                                               error=f"HTTP {response.status}: {text}"), "http_error")
                raw = bytearray()
                async for chunk in response.content.iter_any():
                    raw += chunk
                    times.seen(chunk)
                    if len(raw) > TAP_LIMIT:
                        too_large = f"the answer is larger than the tap limit ({TAP_LIMIT} bytes)"
                        return ShadowReply(replace(failed, status=200, error=too_large), "malformed")
            ended = time.perf_counter()
        except (TimeoutError, aiohttp.ClientError) as exc:
            reason, what = _failure(exc, self.settings.shadow_timeout)
            return ShadowReply(replace(failed, status=status, error=what), reason)
        # (read with the pair, off the event loop)
        return ShadowReply(failed, raw=bytes(raw), stream=stream, started=started, times=times, ended=ended)


def _failure(exc: BaseException, timeout: float) -> tuple[str, str]:
    """A failed shadow call's reason for the metrics, and its error for the pair (each
    fault is counted by what aiohttp says happened)."""
    if isinstance(exc, (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)):
        # refused, unresolvable, or not connected within --connect-timeout: the shadow never had the request
        return "connect_error", f"connection failed: {failure_text(exc)}"
    if isinstance(exc, TimeoutError):
        return "timeout", f"no answer within {timeout:g} s"
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
        # closed or reset before the answer or within it (a cut body is a ClientPayloadError)
        return "reset", f"connection lost: {failure_text(exc)}"
    # bytes that are not an HTTP answer (ClientResponseError: a bad status line, header or chunk size)
    return "malformed", f"invalid answer: {failure_text(exc)}"
