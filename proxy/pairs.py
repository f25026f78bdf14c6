"""Turning a mirrored request's two answers into a pair: compare, count, store.

Each mirrored request gets a small task that waits for the primary's tapped answer
and the shadow's, has them made into a pair (``shadowdiff.proxy.pairmaking``: read,
compared with the core's comparison and signals as replay does, and, when stored,
redacted) by the pairs' thread or the pair process it hands them to
(``shadowdiff.proxy.pairwork``, ``shadowdiff.proxy.pairprocess``: nothing that grows with
the answers runs on the event loop), counts it in the metrics and hands the pair to the
store writer (both in that thread):
every comparable pair that is not identical is stored; identical and sampled
(non-deterministic) pairs are counted, and kept at ``keep_rate``. With ``--score-rate``,
greedy pairs are also teacher-forced scored here (``shadowdiff.proxy.scoring``), the client long
served. The tasks are tracked so that shutdown can wait for them.

``in_flight`` counts the chat and completions requests this process holds that its run
has not counted yet: from the request's arrival (``serving``, around the forwarder)
until it is counted - as not mirrored, or by its pair task once its outcome is in (the
client may have been served long before, the shadow still answering). Counts are handed
to the writer about once a second, and written soon after: ``unwritten`` adds the
requests counted and not yet in the store. The heartbeat reports ``unwritten``, and each
write of counts takes the requests it finishes off the heartbeat's number in the same
transaction (``Store.add_counts``); if this process is killed, what the store holds then
is counted in its run as lost with it (``store.members``) - never a request the run
counted, nor one it never will.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import random
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shadowdiff.answers.records import Pair
from shadowdiff.answers.redact import Redactor, failure_text
from shadowdiff.proxy import pairprocess, pairwork
from shadowdiff.proxy.metrics import ProxyMetrics
from shadowdiff.proxy.pairmaking import (
    TALLIES,
    Compared,
    Made,
    Maker,
    MakerSettings,
    Measured,
    PairInputs,
    TallyKey,
    from_plain,
    measured,
)
from shadowdiff.proxy.pairprocess import PairProcess
from shadowdiff.proxy.pairwork import PairWork
from shadowdiff.proxy.scoring import PairScorer
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.proxy.shadow import Plan, ShadowReply
from shadowdiff.proxy.shadowcalls import KeptCall, ShadowChannel
from shadowdiff.proxy.tap import Tapped
from shadowdiff.store.writer import PairWriter
from shadowdiff.vocabulary import NotCompared, Side, Tally

_COUNTS_EVERY = 1.0   # seconds between hand-overs of outcome counts to the writer
log = logging.getLogger("shadowdiff.proxy")


class _Held:
    """One request in ``PairRecorder.in_flight``, released once: when the run counts it."""

    def __init__(self, recorder: PairRecorder) -> None:
        self.recorder = recorder
        self.open = True
        self.handed = False      # to a pair task, which releases it once its outcome is counted
        recorder.in_flight += 1

    def release(self, counted: bool = False) -> None:
        """Out of ``in_flight``; ``counted``: its counts were just added (``_count_in_run``),
        and it waits for them to reach the store (``PairRecorder.unwritten``)."""
        if self.open:
            self.open = False
            # (read by the heartbeat's thread between the two lines, it is held twice rather than not at all)
            if counted:
                self.recorder.released += 1
            self.recorder.in_flight -= 1


# The request the current task serves (set by ``PairRecorder.serving``): the forwarder
# calls ``track`` and ``not_mirrored`` from within it, or from tasks started from it.
_HELD: contextvars.ContextVar[_Held | None] = contextvars.ContextVar("shadowdiff_held", default=None)


class PairRecorder:
    def __init__(self, settings: ProxySettings, metrics: ProxyMetrics, writer: PairWriter | None,
                 redactor: Redactor) -> None:
        self.settings = settings
        self.redactor = redactor
        self.metrics = metrics
        self.writer = writer
        self.scorer: PairScorer | None = None   # with --score-rate, set at start-up
        making = MakerSettings.of(settings)
        self.maker = Maker(making)
        # the pairs' thread, and the pair process if there is one: reading, comparing, triage, redaction
        process = None
        # with a pair process, the shadow's calls are its too (shadowdiff.proxy.shadowcalls): the
        # app gives this channel to its ``Mirror``
        self.channel: ShadowChannel | None = None
        if pairprocess.wanted(settings.pair_worker):
            self.channel = ShadowChannel(settings, metrics)
            process = PairProcess(making, on_restart=metrics.pair_process_restarts.inc, calls=settings,
                                  on_spawn=self.channel.attach)
            self.channel.on_lost = process.lost
            self.channel.on_hung = process.hung
        self.work = PairWork(self.maker, process, on_process=lambda up: metrics.pair_process_up.set(int(up)))
        self.pending: set[asyncio.Task[None]] = set()
        # pairs not complete, at most (``behind``): the shadow's places and the pairs thread's queue
        self.bound = settings.max_shadow_in_flight + pairwork.MAX_WAITING
        self.closed = False          # set at shutdown, once the writer is closed
        self._rng = random.Random()
        self._seq = 0
        # Outcome counts for the store, handed to the writer about once a second rather
        # than per pair: every hand-over wakes the writer's thread, which competes with
        # the event loop for the GIL.
        self._counts: Counter[tuple[str, str, bool]] = Counter()
        self._flush: asyncio.TimerHandle | None = None
        self.in_flight = 0           # requests held that the run has not counted (see the module's docstring)
        self.released = 0            # requests counted since the counts were last handed to the writer

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """Around one chat or completions request: it is in ``in_flight`` until the run
        counts it (if it is mirrored, its pair task releases it), or until it is served."""
        held = _Held(self)
        token = _HELD.set(held)
        try:
            yield
        finally:
            _HELD.reset(token)
            if not held.handed:
                held.release()

    def track(self, key: str | None, path: str, plan: Plan, primary: asyncio.Future[Any],
              shadow: asyncio.Future[Any], replica: asyncio.Task[ShadowReply] | None = None,
              kept: KeptCall | None = None) -> None:
        """Follow one mirrored request until its answers are in (or it is aborted).

        ``primary`` resolves to the ``Tapped`` answer, ``None`` if the client went
        away, or a ``NoAnswer`` (the primary failed, or the shutdown's deadline cut it); ``replica``, when the
        request was also sent to the replica, gives the noise floor's answer. ``kept``: the
        shadow's call keeps its answer in the pair process, which makes the pair
        (``Mirror.start``).
        """
        self._seq += 1
        held = _HELD.get()
        if held is not None:
            held.handed = True
        calls = _Calls(shadow, replica, held, kept)
        task = asyncio.create_task(self._finish(key or uuid.uuid4().hex, self._seq, path, plan, primary, calls))
        self.pending.add(task)
        self.metrics.pairs_pending.inc()
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.pending.discard(task)
        self.metrics.pairs_pending.dec()

    @property
    def behind(self) -> bool:
        """Whether the pairs not complete have reached their bound (the shadow's requests in
        flight and the pairs thread's queue, both full): a new one would wait in memory,
        holding its answers, for CPU the proxy does not have. Mirroring then stops taking
        requests (``pairs_behind``) until it catches up, rather than grow without end."""
        return len(self.pending) >= self.bound

    async def _finish(self, key: str, seq: int, path: str, plan: Plan, primary_future: asyncio.Future[Any],
                      calls: _Calls) -> None:
        comparable = "true" if plan.comparable else "false"
        try:
            await self._complete(key, seq, path, plan, primary_future, calls, comparable)
        except asyncio.CancelledError:
            if not calls.counted:
                # shutdown stopped waiting for it (``drain``): still one of the run's requests
                self.metrics.pairs.labels("error", comparable).inc()
                self._count_in_run(Tally.NOT_COMPARED, NotCompared.DRAINED, plan.comparable)
            raise
        except Exception as exc:
            # one line, through the formatter that never prints a request's headers or query
            log.error("a pair could not be completed (%s %s): %s", path, key, failure_text(exc))
            log.debug("where the pair failed", exc_info=True)
            self.metrics.pairs.labels("error", comparable).inc()
            if not calls.counted:   # a request the run saw and never checked: an error against it
                self._count_in_run(Tally.NOT_COMPARED, NotCompared.PROXY_FAILED, plan.comparable)
        finally:
            calls.cancel()
            calls.count()

    async def _complete(self, key: str, seq: int, path: str, plan: Plan, primary_future: asyncio.Future[Any],
                        calls: _Calls, comparable: str) -> None:
        tapped = await primary_future
        if not isinstance(tapped, Tapped) or tapped.status != 200 or tapped.overflow:
            # The client went away, or the primary failed or was too long: nothing to compare.
            await self._not_compared(tapped, plan, calls, comparable)
            return
        # Every comparable pair that changed is kept; identical, unanswered, sampled and failed
        # ones are counted, and kept at keep_rate (a dead shadow must not flood the store).
        kept = self.writer is not None and self._rng.random() < self.settings.keep_rate
        stores = self.writer is not None
        if calls.kept is not None:
            # made (and stored) where the shadow's answer is: only what is counted comes back
            found, stored, size = await calls.kept.pair(key, seq, path, tapped, kept, stores)
            self._count_in_run_all(found[TALLIES])
            calls.count()
            # (in the pairs' thread: the metrics take their locks there; not waited for, unless
            # the pair is for the proxy's writer, which the shutdown closes once the pairs are done)
            counted = functools.partial(self._counted_plain, found, stored, size)
            if stored is None:
                self.work.post(counted)
            else:
                await self.work.run(counted)
            return
        shadow = await calls.shadow
        replica = await calls.replica if calls.replica is not None else None
        if self.scorer is None:
            # (one job: read, compared, and triaged and redacted if it is stored or changed)
            made = await self.work.make(PairInputs(key, seq, path, plan, tapped, shadow, replica, kept, stores),
                                        self._counted)
            self._count_in_run_all(made.measured.tallies)
            calls.count()
        else:
            compared = await self.work.run(functools.partial(self._compared, tapped, plan, shadow, replica))
            self._count_in_run_all(compared.tallies)
            calls.count()
            # (here, the client long served: the pair task runs once the primary's answer was sent whole)
            scores = await self.scorer.score(path, plan, compared.answers, compared.comparison.outcome)
            await self.work.run(functools.partial(self._made, key, seq, path, plan, compared, scores, kept, stores))

    def _counted(self, made: Made) -> Made:
        """(in the pairs' thread) A pair made in one step, in the metrics, and to the store."""
        self._in_metrics(made.measured)
        self._observe_change(made.measured)
        self._store(made)
        return made

    def _counted_plain(self, found: tuple[Any, ...], stored: Pair | None, size: int) -> None:
        """(in the pairs' thread) A pair the pair process made, in the metrics, and to the
        store if the process's writer could not take it."""
        self._counted(Made(from_plain(found), stored, size))

    def _store(self, made: Made) -> None:
        """(in the pairs' thread: the writer's queue takes its own lock, and the event loop is
        spared the hand-over) A pair that is kept, to the store's writer."""
        if made.stored is not None and self._open_for(made.stored):
            assert self.writer is not None
            self.writer.submit(made.stored, made.size)

    def _compared(self, tapped: Tapped, plan: Plan, shadow: ShadowReply, replica: ShadowReply | None) -> Compared:
        """(in the pairs' thread) The answers read, by side, and compared, in the metrics."""
        compared = self.maker.compared(tapped, plan, shadow, replica)
        self._in_metrics(measured(compared))
        return compared

    def _made(self, key: str, seq: int, path: str, plan: Plan, compared: Compared, scores: dict[str, Any],
              kept: bool, stores: bool) -> Made:
        """(in the pairs' thread) A compared pair made with its scores (``Maker.made``), its change in the metrics."""
        made = self.maker.made(key, seq, path, plan, compared, scores, kept, stores)
        self._observe_change(made.measured)
        self._store(made)
        return made

    def _count_in_run_all(self, tallies: Iterable[TallyKey]) -> None:
        """A compared pair in the run's counts (its metrics are counted: ``_in_metrics``)."""
        for of, outcome, comparable in tallies:
            self._count_in_run(of, outcome, comparable)

    async def _not_compared(self, tapped: Any, plan: Plan, calls: _Calls, comparable: str) -> None:
        """Count a request whose primary gave nothing to compare, once its shadow is stopped."""
        calls.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await calls.shadow
        if calls.replica is not None:
            self.metrics.noise_pairs.labels("aborted").inc()
        skipped, why = _not_compared_reasons(tapped)
        self.metrics.shadow_event("skipped", skipped)
        # Nothing was compared; the run counts why, so that its report shows every
        # request the proxy saw, and a failing primary counts against the run. When
        # the candidate is the primary, its refusing a request or a client giving up
        # on it is the candidate's doing, as far as anyone can tell: errors too.
        gone = tapped is None
        if self.settings.primary_side is Side.CANDIDATE and why in (NotCompared.CLIENT_LEFT, NotCompared.PRIMARY_4XX):
            why = NotCompared.CANDIDATE_LEFT if gone else NotCompared.CANDIDATE_4XX
        # a client's own bad request (the baseline refused it) is no upstream error
        self.metrics.pairs.labels("aborted" if gone else "refused" if why is NotCompared.PRIMARY_4XX else "error",
                                  comparable).inc()
        self._count_in_run(Tally.NOT_COMPARED, why, plan.comparable)
        calls.count()

    def _in_metrics(self, m: Measured) -> None:
        """(in the pairs' thread: the metrics take their own locks) A compared pair in the
        metrics: the shadow's call and its timings (the primary's are recorded by the
        forwarder, for every request), the noise floor's pair, each side's output, the
        outcome."""
        self.metrics.shadow_event("mirrored" if m.reason == "ok" else "failed", m.reason)
        side = m.shadow_side.value
        if m.shadow_duration is not None:
            self.metrics.duration.labels(side).observe(m.shadow_duration)
        if m.shadow_ok and m.shadow_ttft is not None:
            self.metrics.ttft.labels(side).observe(m.shadow_ttft)
        if m.shadow_ok and m.shadow_ttfat is not None:
            self.metrics.ttfat.labels(side).observe(m.shadow_ttfat)
        if m.noise is not None:
            self.metrics.noise_pairs.labels(m.noise.value).inc()
        for answered, tokens, seconds in m.output:
            self.metrics.output_tokens.labels(answered.value).inc(tokens)
            self.metrics.generation.labels(answered.value).inc(seconds)
        self.metrics.pairs.labels(m.outcome.value, "true" if m.comparable else "false").inc()

    def _observe_change(self, m: Measured) -> None:
        """A comparable pair that changed: its similarity, where it diverged and its signals, in the metrics."""
        if m.similarity is None:
            return
        self.metrics.similarity.observe(m.similarity)
        if m.first_char is not None:
            self.metrics.first_divergence.observe(m.first_char)
        for kind in m.kinds:
            self.metrics.signals.labels(kind).inc()

    def _open_for(self, pair: Pair) -> bool:
        """Whether a pair to be stored can be: not once the store is closed."""
        if self.closed:
            log.warning("a pair completed after the store was closed; it is counted, not stored")
            return False
        return True

    def not_mirrored(self, why: str) -> None:
        """Count a request the shadow never got (``NOT_MIRRORED_REASONS``) in the run: its
        report states the share of the traffic that was compared."""
        self._count_in_run(Tally.NOT_MIRRORED, why, False)
        if (held := _HELD.get()) is not None:
            held.release(counted=True)

    def _count_in_run(self, of: str, outcome: str, comparable: bool) -> None:
        """Count in the run's counts (handed to the writer about once a second)."""
        if self.writer is not None and not self.closed:
            self._counts[of, outcome, comparable] += 1
            if self._flush is None:
                self._flush = asyncio.get_running_loop().call_later(_COUNTS_EVERY, self.flush_counts)

    def flush_counts(self) -> None:
        """Hand the outcome counts so far to the writer (also at shutdown, before it closes)."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if (self._counts or self.released) and self.writer is not None:
            self.writer.add_counts(self._counts, self.released)
        self._counts = Counter()
        self.released = 0

    @property
    def unwritten(self) -> int:
        """(read by the heartbeat's thread) The requests this process holds whose counts are not
        in the store yet: held, counted and not handed to the writer, or held by the writer."""
        return self.in_flight + self.released + (self.writer.requests_unwritten if self.writer is not None else 0)

    async def drain(self, seconds: float) -> None:
        """Wait for the pairs still being completed (at shutdown), at most ``seconds``;
        those still waiting then (for a shadow that hangs) are counted in the run as not
        compared, ``drained``, before the writer closes, rather than vanishing from it."""
        if self.scorer is not None:
            self.scorer.stop()   # pairs being scored are stored now, without their figures
        if not self.pending:
            return
        _, late = await asyncio.wait(set(self.pending), timeout=seconds)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        if late:
            # (``seconds`` is what the shutdown had left of the setting: say the setting)
            log.warning("%d pairs were not complete after --drain-timeout %g s; counted as not compared (drained)",
                        len(late), self.settings.drain_timeout)


@dataclass
class _Calls:
    """The calls a mirrored request made besides the primary's."""

    shadow: asyncio.Future[Any]     # the ``ShadowReply``; ``kept``, the pair as made
    replica: asyncio.Task[ShadowReply] | None
    held: _Held | None = None   # the request's place in ``in_flight``
    kept: KeptCall | None = None  # the pair process makes the pair (``Mirror.start``)
    counted: bool = False   # whether the pair's outcome is in the counts yet

    def count(self) -> None:
        """The pair's outcome is in the run's counts (or never will be): the request leaves ``in_flight``."""
        self.counted = True
        if self.held is not None:
            self.held.release(counted=True)

    def cancel(self) -> None:
        for task in (self.shadow, self.replica):
            if task is not None and not task.done():
                task.cancel()


class NoAnswer(StrEnum):
    """What the primary's future holds when it has no answer to compare (``PairRecorder.track``;
    ``None``: the client left). The values are the shadow's ``skipped`` metric's labels."""

    FAILED = "primary_error"
    DRAINED = "drained"


def _not_compared_reasons(tapped: Any) -> tuple[str, NotCompared]:
    """Why a primary's answer (``PairRecorder.track``) gave nothing to compare: the shadow's
    ``skipped`` metric's label and the run's not-compared reason (as the baseline's, when a primary)."""
    if tapped is None:
        return "client_disconnected", NotCompared.CLIENT_LEFT
    if tapped is NoAnswer.DRAINED:
        return NoAnswer.DRAINED, NotCompared.DRAINED
    if getattr(tapped, "overflow", False):
        return "too_large", NotCompared.TOO_LARGE
    if isinstance(tapped, Tapped) and 400 <= tapped.status < 500:
        return NoAnswer.FAILED, NotCompared.PRIMARY_4XX
    return NoAnswer.FAILED, NotCompared.PRIMARY_FAILED
