"""The proxy's Prometheus metrics: namespace ``shadowdiff_``, base units, bounded labels.

Every label value is one of the constants below (never a prompt, user, key or path)
and is created at start-up, so dashboards see zeros rather than missing series. The
registry is injectable, so tests (and several apps in one process) never share
counters.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from proxy.compare import Outcome
from proxy.records import Side

ROUTES = ("chat", "completions", "other")
STATUS_CLASSES = ("1xx", "2xx", "3xx", "4xx", "5xx")
# shadow requests: (result, reason)
SHADOW_REASONS = {
    "mirrored": ("ok",),
    "skipped": ("sampled_out", "in_flight_bound", "unparsable", "too_large", "excluded", "primary_error",
                "client_disconnected"),
    "failed": ("timeout", "connect_error", "http_error", "reset", "malformed", "error_event", "incomplete"),
}
PAIR_OUTCOMES = (*(o.value for o in Outcome), "aborted")
SIMILARITY_BUCKETS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)


def route_of(path: str) -> str:
    if path == "/v1/chat/completions":
        return "chat"
    if path == "/v1/completions":
        return "completions"
    return "other"


def status_class(status: int) -> str:
    return f"{min(max(status // 100, 1), 5)}xx"


class ProxyMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("shadowdiff_requests", "Client requests forwarded to the primary, by route and "
                                "status class of the answer.", ("route", "status_class"), registry=r)
        self.shadow = Counter("shadowdiff_shadow_requests", "Requests considered for mirroring, by result "
                              "(mirrored, skipped, failed) and reason.", ("result", "reason"), registry=r)
        self.pairs = Counter("shadowdiff_pairs", "Pairs of answers, by outcome and whether decoding was "
                             "deterministic (comparable).", ("outcome", "comparable"), registry=r)
        self.similarity = Histogram("shadowdiff_pair_similarity", "Normalized Indel similarity of comparable "
                                    "pairs that are not byte-identical.", buckets=SIMILARITY_BUCKETS, registry=r)
        self.duration = Histogram("shadowdiff_upstream_request_duration_seconds", "Time from sending a request "
                                  "upstream to the last byte of its answer.", ("side",),
                                  buckets=LATENCY_BUCKETS, registry=r)
        self.ttft = Histogram("shadowdiff_upstream_time_to_first_token_seconds", "Time from sending a request "
                              "upstream to the first generated text.", ("side",), buckets=LATENCY_BUCKETS,
                              registry=r)
        self.shadow_in_flight = Gauge("shadowdiff_shadow_requests_in_flight", "Shadow requests under way.",
                                      registry=r)
        self.stored = Counter("shadowdiff_pairs_stored", "Pairs written to the store.", registry=r)
        # children looked up once: labels() costs a lock and a dict walk per call
        self._requests = {(route, cls): self.requests.labels(route, cls)
                          for route in ROUTES for cls in STATUS_CLASSES}
        for result, reasons in SHADOW_REASONS.items():
            for reason in reasons:
                self.shadow.labels(result, reason)
        for outcome in PAIR_OUTCOMES:
            for comparable in ("true", "false"):
                self.pairs.labels(outcome, comparable)
        for side in Side:
            self.duration.labels(side.value)
            self.ttft.labels(side.value)

    def request(self, path: str, status: int) -> None:
        self._requests[route_of(path), status_class(status)].inc()

    def shadow_event(self, result: str, reason: str) -> None:
        self.shadow.labels(result, reason).inc()
