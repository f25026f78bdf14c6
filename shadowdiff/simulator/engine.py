"""The simulated engine: the state one simulator process shares across requests."""

from __future__ import annotations

from collections import OrderedDict

from shadowdiff.simulator.baseline_text import prompt_key
from shadowdiff.simulator.faults import FaultInjector
from shadowdiff.simulator.metrics import EngineMetrics
from shadowdiff.simulator.sampling import Generator
from shadowdiff.simulator.scheduler import Scheduler
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.simulator.teacher import Scorer
from shadowdiff.simulator.vocab import Vocabulary, vocabulary


class Engine:
    """Generator, prompt scorer, scheduler, fault injector, metrics and the KV/prefix-cache books."""

    def __init__(self, settings: SimulatorSettings) -> None:
        self.settings = settings
        self.vocab: Vocabulary = vocabulary()
        self.generator = Generator(settings.profile, settings.seed, self.vocab, accuracy=settings.accuracy)
        self.scorer = Scorer(self.generator, thinks=settings.thinks, tool_parser=settings.parsers.tools is not None)
        self.scheduler = Scheduler(settings.latency)
        self.faults = FaultInjector(settings.faults)
        self.metrics = EngineMetrics(settings.model_name, settings.max_model_len)
        self.kv_tokens = 0
        self._prefixes: OrderedDict[int, None] = OrderedDict()   # prompt hashes, most recent last
        self.metrics.running.set_function(lambda: self.scheduler.running)
        self.metrics.waiting.set_function(lambda: self.scheduler.waiting)
        self.metrics.kv_usage.set_function(
            lambda: min(1.0, self.kv_tokens / max(settings.kv_cache_tokens, 1))
        )

    def prefix_lookup(self, prompt: str, prompt_tokens: int) -> None:
        """Count a prefix-cache query; a prompt seen before counts as a full hit."""
        self.metrics.prefix_queries.inc(prompt_tokens)
        key = prompt_key(prompt)
        if key in self._prefixes:
            self._prefixes.move_to_end(key)
            self.metrics.prefix_hits.inc(prompt_tokens)
            return
        self._prefixes[key] = None
        if len(self._prefixes) > 4096:
            self._prefixes.popitem(last=False)
