"""The simulator's ``/metrics``: vLLM's main metric names, with real values.

Names, labels (``model_name``, ``engine``) and bucket boundaries follow vLLM v1's
Prometheus logger, so dashboards and the proxy's own checks can be tried against the
simulator. Each app gets its own ``CollectorRegistry``: several simulators in one
test process never share counters.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
TOKEN_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
                         1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
                           40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
FINISHED_REASONS = ("stop", "length", "abort", "repetition", "error")


def _one_two_five(limit: int) -> list[float]:
    """vLLM's ``build_1_2_5_buckets``: 1, 2, 5, 10, 20, 50, ... up to ``limit``."""
    out: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > limit:
                return out
            out.append(float(value))
        exponent += 1


class EngineMetrics:
    """The vLLM metric families, registered in a registry of their own."""

    def __init__(self, model_name: str, max_model_len: int) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ("model_name", "engine")
        values = (model_name, "0")
        r = self.registry

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, labels, registry=r)

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, labels, registry=r)

        def histogram(name: str, doc: str, buckets: tuple[float, ...] | list[float]) -> Histogram:
            return Histogram(name, doc, labels, buckets=buckets, registry=r)

        def one(metric: Counter | Gauge | Histogram) -> Any:
            return metric.labels(*values)

        self.prompt_tokens = one(counter("vllm:prompt_tokens", "Number of prefill tokens processed."))
        self.generation_tokens = one(counter("vllm:generation_tokens", "Number of generation tokens processed."))
        self.preemptions = one(counter("vllm:num_preemptions", "Cumulative number of preemptions from the engine."))
        self.prefix_queries = one(counter(
            "vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens."))
        self.prefix_hits = one(counter(
            "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."))
        success = Counter("vllm:request_success", "Count of successfully processed requests.",
                          (*labels, "finished_reason"), registry=r)
        self.success = {reason: success.labels(*values, reason) for reason in FINISHED_REASONS}
        self.running = one(gauge("vllm:num_requests_running", "Number of requests in model execution batches."))
        self.waiting = one(gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."))
        self.kv_usage = one(gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."))
        tokens = _one_two_five(max_model_len)
        self.ttft = one(histogram("vllm:time_to_first_token_seconds",
                                  "Histogram of time to first token in seconds.", TTFT_BUCKETS))
        self.itl = one(histogram("vllm:inter_token_latency_seconds",
                                 "Histogram of inter-token latency in seconds.", TOKEN_LATENCY_BUCKETS))
        self.tpot = one(histogram("vllm:request_time_per_output_token_seconds",
                                  "Histogram of time_per_output_token_seconds per request.", TOKEN_LATENCY_BUCKETS))
        phases = {
            "e2e": ("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds."),
            "queue": ("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request."),
            "prefill": ("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request."),
            "decode": ("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request."),
            "inference": ("vllm:request_inference_time_seconds",
                          "Histogram of time spent in RUNNING phase for request."),
        }
        latency = {k: one(histogram(name, doc, REQUEST_LATENCY_BUCKETS)) for k, (name, doc) in phases.items()}
        self.e2e, self.queue, self.prefill = latency["e2e"], latency["queue"], latency["prefill"]
        self.decode, self.inference = latency["decode"], latency["inference"]
        self.request_prompt_tokens = one(histogram(
            "vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokens))
        self.request_generation_tokens = one(histogram(
            "vllm:request_generation_tokens", "Number of generation tokens processed.", tokens))
        self.request_max_tokens = one(histogram(
            "vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", tokens))

    def finished(self, *, reason: str, prompt_tokens: int, generation_tokens: int,
                 max_tokens: int, queued: float, prefill: float, decode: float) -> None:
        """Record one finished request (timings in seconds)."""
        self.success.get(reason, self.success["error"]).inc()
        self.prompt_tokens.inc(prompt_tokens)
        self.generation_tokens.inc(generation_tokens)
        self.request_prompt_tokens.observe(prompt_tokens)
        self.request_generation_tokens.observe(generation_tokens)
        self.request_max_tokens.observe(max_tokens)
        self.queue.observe(queued)
        self.prefill.observe(prefill)
        self.decode.observe(decode)
        self.inference.observe(prefill + decode)
        self.e2e.observe(queued + prefill + decode)
        self.ttft.observe(queued + prefill)
        if generation_tokens > 1:
            per_token = decode / (generation_tokens - 1)
            self.tpot.observe(per_token)
            # vLLM observes every gap between tokens; the simulator's gaps within one
            # request are equal, so the same value is observed once per gap.
            for _ in range(generation_tokens - 1):
                self.itl.observe(per_token)
