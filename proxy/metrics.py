"""The proxy's Prometheus metrics: namespace ``shadowdiff_``, base units, bounded labels.

Every label value is one of the constants below (never a prompt, user, key or path)
and is created at start-up, so dashboards see zeros rather than missing series. The
registry is injectable, so tests (and several apps in one process) never share
counters.

Two kinds of series:

* counters, histograms and the in-flight gauge, updated as requests pass. Under
  several uvicorn workers (``PROMETHEUS_MULTIPROC_DIR`` set) prometheus-client writes
  them to per-process files, and ``exposition`` sums them across workers.
* ``StateCollector``: facts read when scraped, the same whichever worker answers —
  the review queue's depth and the verdicts in the store (global across replicas
  sharing a store, so aggregate them with ``max``, not ``sum``), build info, the model
  pair, and the divergence margin the alert compares against. The store's figures
  come through ``store_health.LastKnown``: a scrape never waits more than a second
  for the database, and gets the last value read (with its age) when it is slow.
"""

from __future__ import annotations

import contextlib
import glob
import os
import platform
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from shadowdiff.answers.records import side_against
from shadowdiff.triage.signals import SIGNAL_KINDS
from shadowdiff.vocabulary import Outcome, Side, Verdict

if TYPE_CHECKING:
    from shadowdiff.proxy.store_health import LastKnown

ReviewState = tuple[int, dict[tuple[str, str], int]]   # queue depth, verdicts by (verdict, wrong side)

ROUTES = ("chat", "completions", "other")
STATUS_CLASSES = ("1xx", "2xx", "3xx", "4xx", "5xx")
# shadow requests: (result, reason)
SHADOW_REASONS = {
    "mirrored": ("ok",),
    "skipped": ("sampled_out", "in_flight_bound", "pairs_behind", "unparsable", "too_large", "excluded",
                "primary_error", "client_disconnected", "drained", "proxy_error", "upload_cut", "unforwardable"),
    "failed": ("timeout", "connect_error", "http_error", "reset", "malformed", "error_event", "incomplete"),
}
# (aborted: the client left; refused: the baseline, as primary, refused the client's request)
PAIR_OUTCOMES = (*(o.value for o in Outcome), "aborted", "refused")
# fine near 1: a same-profile candidate agrees on nearly every token, and the alert is about the last percent
AGREEMENT_BUCKETS = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)
SCORE_RESULTS = ("scored", "unscorable", "rate_limited")
SIMILARITY_BUCKETS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)
POSITION_BUCKETS = (0, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)
# the side a verdict goes against: baseline or candidate for a directional one, none for the others
WRONG_SIDES = ("baseline", "candidate", "none")


def route_of(path: str) -> str:
    if path == "/v1/chat/completions":
        return "chat"
    if path == "/v1/completions":
        return "completions"
    return "other"


def status_class(status: int) -> str:
    return f"{min(max(status // 100, 1), 5)}xx"


def multiprocess_dir() -> str | None:
    """Where several workers' metric files live, when there are several workers."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class ProxyMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        sides = ("side",)
        self.requests = Counter("shadowdiff_requests", "Client requests forwarded to the primary, by route and "
                                "status class of the answer.", ("route", "status_class"), registry=r)
        self.shadow = Counter("shadowdiff_shadow_requests", "Requests considered for mirroring, by result "
                              "(mirrored, skipped, failed) and reason.", ("result", "reason"), registry=r)
        self.pairs = Counter("shadowdiff_pairs", "Pairs of answers (baseline and candidate), by outcome and "
                             "whether decoding was deterministic (comparable).", ("outcome", "comparable"),
                             registry=r)
        self.noise_pairs = Counter("shadowdiff_noise_pairs", "Noise-floor pairs (baseline and its replica, "
                                   "comparable requests only), by outcome.", ("outcome",), registry=r)
        self.similarity = Histogram("shadowdiff_pair_similarity", "Normalized Indel similarity of comparable "
                                    "pairs that are not byte-identical.", buckets=SIMILARITY_BUCKETS, registry=r)
        self.first_divergence = Histogram(
            "shadowdiff_pair_first_divergence_characters", "Where comparable pairs that are not byte-identical "
            "first differ, in characters from the start of the answer.", buckets=POSITION_BUCKETS, registry=r)
        self.signals = Counter("shadowdiff_pair_signals", "Triage signals found in comparable pairs that "
                               "changed, by kind.", ("kind",), registry=r)
        self.duration = Histogram("shadowdiff_upstream_request_duration_seconds", "Time from sending a request "
                                  "upstream to the last byte of its answer.", sides, buckets=LATENCY_BUCKETS,
                                  registry=r)
        self.ttft = Histogram("shadowdiff_upstream_time_to_first_token_seconds", "Time from sending a request "
                              "upstream to the first generated token of any kind (reasoning included).", sides,
                              buckets=LATENCY_BUCKETS, registry=r)
        self.ttfat = Histogram("shadowdiff_upstream_time_to_first_answer_token_seconds", "Time from sending a "
                               "request upstream to the first answer token (text, tool call or refusal), after "
                               "any reasoning.", sides, buckets=LATENCY_BUCKETS, registry=r)
        self.output_tokens = Counter("shadowdiff_upstream_output_tokens", "Output tokens of the answers of "
                                     "mirrored requests, by side.", sides, registry=r)
        self.generation = Counter("shadowdiff_upstream_generation_seconds", "Time the answers of mirrored "
                                  "requests took, first byte sent to last byte received, by side (divide "
                                  "output tokens by it for tokens per second).", sides, registry=r)
        self.shadow_in_flight = Gauge("shadowdiff_shadow_requests_in_flight", "Shadow requests under way.",
                                      registry=r, multiprocess_mode="livesum")
        self.pair_process_up = Gauge(
            "shadowdiff_pair_process_up", "1 while the pair process (--pair-worker process) makes the pairs; 0 "
            "while the proxy's own thread does (no pair process, or it is not available: the log says why).",
            registry=r, multiprocess_mode="livesum")
        self.pair_process_restarts = Counter(
            "shadowdiff_pair_process_restarts", "Pair processes (--pair-worker process) started again after one "
            "died or hung over a batch; the pairs it failed over are counted as the proxy's errors.", registry=r)
        self.pairs_pending = Gauge("shadowdiff_pairs_pending", "Mirrored requests whose pair is not complete: "
                                   "waiting for an answer, or to be read, compared and triaged (past "
                                   "--max-shadow-in-flight plus the pairs thread's queue, requests are not "
                                   "mirrored: reason pairs_behind).", registry=r, multiprocess_mode="livesum")
        self.retries = Counter("shadowdiff_upstream_retries", "Requests sent again on a fresh connection, by "
                               "side, after a pooled connection the upstream had closed failed before any byte "
                               "of the answer.", sides, registry=r)
        self.token_agreement = Histogram(
            "shadowdiff_token_agreement", "Teacher-forced token agreement (--score-rate): the share of the "
            "baseline's answer tokens that the candidate (or the replica, the noise floor) would have chosen "
            "itself, per scored pair, by side.", sides, buckets=AGREEMENT_BUCKETS, registry=r)
        self.scores = Counter("shadowdiff_scores", "Greedy pairs considered for teacher-forced scoring "
                              "(--score-rate), by result: scored, unscorable (the candidate could not read "
                              "the answer: no tokenizer route, an answer with tool calls, a timeout...), or "
                              "rate_limited (over the rate, not scored).", ("result",), registry=r)
        # Counters cannot tell scoring that is off from scoring that counts nothing: the
        # "scoring stopped" alert needs the rate that was asked for. Summed over workers
        # (each scores up to --score-rate) and gone with a dead one.
        self.score_rate = Gauge("shadowdiff_score_rate_pairs_per_second", "Pairs a second this proxy may score "
                                "(--score-rate, times its workers); 0 when scoring is off.", registry=r,
                                multiprocess_mode="livesum")
        self.stored = Counter("shadowdiff_pairs_stored", "Pairs written to the store.", registry=r)
        self.dropped = Counter("shadowdiff_pairs_dropped", "Pairs compared but never stored, by reason: the "
                               "queue for a failing store was full (queue_full), the proxy stopped before "
                               "the store came back (shutdown), or the store refused the pair (rejected), all three "
                               "counted in the run's outcomes; or the pair process ended holding it unwritten "
                               "(lost: the proxy then leaves its run incomplete).",
                               ["reason"], registry=r)
        self.pruned = Counter("shadowdiff_pairs_pruned", "Stored pairs deleted by retention (--retain): older "
                              "than it, never reviewed ones. The run's outcome counts keep them.", registry=r)
        self.store_up = Gauge("shadowdiff_store_up", "1 while the store takes writes and reads, 0 while it is "
                              "failing (pairs are held, then dropped and counted).", registry=r,
                              multiprocess_mode="livemin")
        self.store_queue = Gauge("shadowdiff_store_queue_pairs", "Pairs held in memory for the store "
                                 "(--store-queue bounds them).", registry=r, multiprocess_mode="livesum")
        self.store_queue_bytes = Gauge("shadowdiff_store_queue_bytes", "Memory the pairs held for the store take, "
                                       "estimated from their texts (--store-queue-bytes bounds it).", registry=r,
                                       multiprocess_mode="livesum")
        # children looked up once: labels() costs a lock and a dict walk per call
        self._requests = {(route, cls): self.requests.labels(route, cls)
                          for route in ROUTES for cls in STATUS_CLASSES}
        for result, reasons in SHADOW_REASONS.items():
            for reason in reasons:
                self.shadow.labels(result, reason)
        for reason in ("queue_full", "shutdown", "rejected", "lost"):
            self.dropped.labels(reason)
        for outcome in PAIR_OUTCOMES:
            self.noise_pairs.labels(outcome)
            for comparable in ("true", "false"):
                self.pairs.labels(outcome, comparable)
        for result in SCORE_RESULTS:
            self.scores.labels(result)
        for side in (Side.CANDIDATE, Side.REPLICA):
            self.token_agreement.labels(side.value)
        for kind in SIGNAL_KINDS:
            self.signals.labels(kind)
        for side in Side:
            for family in (self.duration, self.ttft, self.ttfat, self.output_tokens, self.generation,
                           self.retries):
                family.labels(side.value)

    def request(self, path: str, status: int) -> None:
        self._requests[route_of(path), status_class(status)].inc()

    def shadow_event(self, result: str, reason: str) -> None:
        self.shadow.labels(result, reason).inc()


class StateCollector(Collector):
    """Series read at scrape time: the review queue and verdicts (from the store), build
    info, the model pair, and the alert's divergence margin."""

    def __init__(self, *, version: str, baseline: str, candidate: str, margin: float,
                 review: LastKnown[ReviewState] | None = None) -> None:
        self.version, self.baseline, self.candidate, self.margin = version, baseline, candidate, margin
        # (read at most every ``fresh_for`` seconds: scrapes from several Prometheus
        # servers must not become a query storm on a shared database)
        self.review = review

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily("shadowdiff_build_info", "shadowdiff's version and Python; always 1.",
                                 labels=("version", "python"))
        info.add_metric((self.version, platform.python_version()), 1.0)
        yield info
        pair = GaugeMetricFamily("shadowdiff_model_pair_info", "The baseline and candidate this proxy compares; "
                                 "always 1 (join on it to label rates by model pair).",
                                 labels=("baseline", "candidate"))
        pair.add_metric((self.baseline, self.candidate), 1.0)
        yield pair
        yield GaugeMetricFamily("shadowdiff_alert_divergence_margin_ratio", "How far the divergence rate may "
                                "rise above the noise floor before the alert fires (--alert-margin).",
                                value=self.margin)
        if self.review is None:
            return
        state, age = self.review.get()
        if state is None or age is None:
            return         # never read yet (the store has been failing since start-up): absent, not zero
        depth, verdicts = state
        yield GaugeMetricFamily("shadowdiff_review_state_age_seconds", "How old the review figures below are: "
                                "the last read of the store that succeeded (they are read at most every 10 s; "
                                "more while the store is failing).", value=age)
        yield GaugeMetricFamily("shadowdiff_review_queue_pairs",
                                "Pairs changed in substance (near or divergent), comparable, from live traffic "
                                "in the store without a verdict yet (store-wide: aggregate with max).",
                                value=float(depth))
        family = GaugeMetricFamily("shadowdiff_review_verdicts", "Verdicts on pairs from live traffic in the "
                                   "store, by verdict and the side it goes against: the wrong side of a factual "
                                   "verdict, the worse side of a minor or improvement one (improvement, "
                                   "wrong_side=baseline: the candidate is better); none for the others "
                                   "(store-wide: aggregate with max).", labels=("verdict", "wrong_side"))
        for (verdict, wrong), n in verdict_series(verdicts).items():
            family.add_metric((verdict, wrong), float(n))
        yield family


def verdict_series(verdicts: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """The verdicts series from the store's counts by (verdict, wrong side or "none"): one
    per verdict and side it may go against, zeros included."""
    series = dict.fromkeys(((v.value, wrong) for v in Verdict
                            for wrong in (WRONG_SIDES[:2] if v.directional else WRONG_SIDES[2:])), 0)
    for (verdict, wrong), n in verdicts.items():
        try:
            # a minor or improvement verdict stored without a side (older stores) counts under the side it meant
            side = side_against(Verdict(verdict), None if wrong == "none" else wrong)
        except ValueError:
            continue    # nothing this version wrote: no series of its own, and never a failed scrape
        key = (verdict, side.value if side else "none")
        if key in series:
            series[key] += n
    return series


def exposition(metrics: ProxyMetrics, state: StateCollector) -> bytes:
    """The text a scrape gets: this process's series, or every worker's when there are several."""
    if multiprocess_dir() is None:
        return generate_latest(metrics.registry)
    _forget_dead_workers(multiprocess_dir() or "")
    registry = CollectorRegistry()
    WorkersCollector(registry)  # type: ignore[no-untyped-call]
    registry.register(state)
    return generate_latest(registry)


class WorkersCollector(multiprocess.MultiProcessCollector):
    """prometheus_client's sum over the workers' files, leaving out a file still empty.

    A worker creates each file before it sizes it (``MmapedDict.__init__``), and reading it in
    that moment raises, which fails the whole scrape with a 500: seen when one worker was
    scraped while the other counted its first score
    (https://github.com/prometheus/client_python/issues/1199). An empty file holds nothing yet.
    """

    def collect(self) -> Iterator[Metric]:
        files = []
        for path in glob.glob(os.path.join(self._path, "*.db")):   # as upstream: no dotfiles
            with contextlib.suppress(FileNotFoundError):   # a dead worker's, removed meanwhile
                if os.path.getsize(path) > 0:
                    files.append(path)
        metrics: Iterator[Metric] = self.merge(files, accumulate=True)  # type: ignore[no-untyped-call]
        return metrics


_LIVE_GAUGE_FILE = re.compile(r"^gauge_live\w+?_(\d+)\.db$")


def _forget_dead_workers(directory: str) -> None:
    """Drop the live gauges of workers that died without a clean shutdown.

    A worker killed (OOM, SIGKILL) never runs ``mark_process_dead``; uvicorn starts a
    new one, and the dead one's in-flight gauge would stay in the sum for good.
    """
    for path in Path(directory).glob("gauge_live*.db"):
        match = _LIVE_GAUGE_FILE.match(path.name)
        if match is None:
            continue
        pid = int(match.group(1))
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
        except PermissionError:
            pass   # alive, someone else's
