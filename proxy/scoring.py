"""Teacher-forced scoring of the proxy's pairs (``--score-rate``): rate-limited, bounded, off the client's path.

``shadowdiff.triage.scoring`` reads the baseline's answer under the candidate, the replica and
the baseline itself. Each reading costs its server a prefill of the prompt and the
answer, so the proxy scores at most ``--score-rate`` pairs a second (per process), from
a token bucket that allows a small burst (``SCORE_BURST``); a pair over the rate is not
scored, and counted (``shadowdiff_scores_total{result="rate_limited"}``). The rate also
bounds what scoring costs the proxy itself: the servers' ``prompt_logprobs`` are parsed
on the event loop, ~16 ms per 1,000 tokens per server, holding the GIL (a thread would
not spare the loop; ``bench/score_read_cost.py``).

Only greedy (comparable) pairs whose candidate answered are scored, in the pair's own
task: the client has had its whole answer before the pair task goes on (the forwarder
hands the tapped answer over after the last byte is sent), so scoring never delays or
changes what a client gets. Each server's reading is bounded by ``--shadow-timeout`` or
``SCORE_TIMEOUT``, whichever is smaller, and the whole pair's scoring by twice that (a
server's engine is found by trying two); what does not finish by then, or when the
proxy starts stopping, is unscorable, and the pair is stored without its figures.

The servers are asked with the credentials the proxy forwards to them, by the same rule
(``shadowdiff.proxy.upstream.credentials``): a side's ``--*-api-key``, else the user and password in
its URL, else the client's own ``Authorization``, whatever its scheme.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx
from yarl import URL

from shadowdiff.answers.arrivals import http_client
from shadowdiff.answers.client import Upstream
from shadowdiff.answers.records import Answer
from shadowdiff.answers.redact import failure_text
from shadowdiff.proxy.metrics import ProxyMetrics
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.proxy.shadow import Plan
from shadowdiff.proxy.upstream import credentials
from shadowdiff.triage.scoring import Scorer, scorable, score_pair
from shadowdiff.vocabulary import Outcome, Side

log = logging.getLogger("shadowdiff.proxy")

SCORE_TIMEOUT = 30.0    # seconds for one server's reading at most (a prefill: far less, normally)
SCORE_BURST = 10.0      # pairs scored at once at most, after a quiet spell (fewer when the rate is below 10/s)
# The scorer's connections to the three servers together: a pair asks each at once, and
# waiting for a connection counts in the timeout.
SCORE_CONNECTIONS = 32


class TokenBucket:
    """At most ``rate`` takes a second on average, and ``burst`` at once."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self.tokens = burst
        self.at = clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


def burst_of(rate: float) -> float:
    """The pairs scored at once after a quiet spell: a second's worth, at least one, at most ``SCORE_BURST``."""
    return min(max(rate, 1.0), SCORE_BURST)


def score_client(settings: ProxySettings) -> httpx.AsyncClient:
    """The scorer's HTTP client (its own bounded pool: scoring never takes the shadow's connections)."""
    seconds = reading_timeout(settings)
    return http_client(SCORE_CONNECTIONS, httpx.Timeout(seconds, connect=min(seconds, settings.connect_timeout)))


def reading_timeout(settings: ProxySettings) -> float:
    return min(settings.shadow_timeout, SCORE_TIMEOUT)


def client_authorization(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The value of a client's ``Authorization`` header, if it sent one (as an upstream
    reads it: UTF-8)."""
    value = next((v for k, v in headers if k.lower() == b"authorization"), None)
    if value is None:
        return None
    return value.decode("utf-8", "replace").strip() or None


class PairScorer:
    """Scores the pairs it is given, within the rate, and counts them in the metrics."""

    def __init__(self, settings: ProxySettings, metrics: ProxyMetrics, client: httpx.AsyncClient) -> None:
        assert settings.shadow is not None
        self.settings = settings
        self.metrics = metrics
        self.timeout = reading_timeout(settings)
        self.scorer = Scorer(client, timeout=self.timeout)
        self.bucket = TokenBucket(settings.score_rate, burst_of(settings.score_rate))
        self._stopped: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def stop(self) -> None:
        """The proxy is stopping: pairs being scored are stored without their figures, and no more are scored."""
        if not self._stopped.done():
            self._stopped.set_result(None)

    async def score(self, path: str, plan: Plan, answers: dict[Side, Answer], outcome: Outcome) -> dict[str, Any]:
        """The pair's ``score`` and ``noise_score`` fields (``shadowdiff.triage.scoring.score_pair``),
        or nothing when it is not scored (sampled, no candidate answer, over the rate)."""
        cand = answers[Side.CANDIDATE]
        if not plan.comparable or not cand.ok or self._stopped.done():
            return {}
        # (a pair whose answer cannot be scored costs the servers nothing: it takes no place)
        if scorable(path, plan.request, answers[Side.BASELINE]) is None and not self.bucket.take():
            self.metrics.scores.labels("rate_limited").inc()
            return {}
        replica = Side.REPLICA in answers
        task = asyncio.ensure_future(score_pair(self.scorer, path, plan.request, answers,
                                                self._upstreams(plan.headers, replica), outcome))
        try:
            done, _ = await asyncio.wait((task, self._stopped), timeout=2 * self.timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
        found: dict[str, Any]
        if task in done:
            try:
                found = task.result()
            except Exception as exc:   # nothing scoring does may cost the pair
                log.warning("a pair could not be scored (%s): %s", path, failure_text(exc))
                found = _unscorable(f"scoring failed: {type(exc).__name__}", replica)
        else:
            found = _unscorable("the proxy stopped before the pair was scored" if self._stopped.done()
                                else f"no scores within {2 * self.timeout:g} s", replica)
        self._count(found)
        return found

    def _count(self, found: dict[str, Any]) -> None:
        score, noise = found.get("score"), found.get("noise_score")
        self.metrics.scores.labels("scored" if score and "agreement" in score else "unscorable").inc()
        for side, figures in ((Side.CANDIDATE, score), (Side.REPLICA, noise)):
            if figures and "agreement" in figures:
                self.metrics.token_agreement.labels(side.value).observe(float(figures["agreement"]))

    def _upstreams(self, headers: list[tuple[bytes, bytes]], replica: bool) -> list[Upstream]:
        """The three servers with the credentials the proxy sends each (``shadowdiff.proxy.shadow``)."""
        s = self.settings
        assert s.shadow is not None
        client = client_authorization(headers)
        sides = [(s.primary_side, s.primary, None), (s.shadow_side, s.shadow, s.shadow_api_key)]
        if replica and s.replica is not None:
            sides.append((Side.REPLICA, s.replica, s.replica_key))
        upstreams = []
        for side, url, api_key in sides:
            bare, authorization = credentials(URL(url), api_key, client)
            upstreams.append(Upstream(side, str(bare), s.model_of(side), authorization=authorization))
        return upstreams


def _unscorable(why: str, replica: bool) -> dict[str, Any]:
    return {"score": {"unscorable": why}, "noise_score": {"unscorable": why} if replica else None}
