"""Everything ``shadowdiff simulate`` can be told, in one immutable object."""

from __future__ import annotations

from dataclasses import dataclass, field

from shadowdiff.errors import ConfigError
from simulator.faults import FaultSettings
from simulator.profiles import BUILTIN, Profile
from simulator.scheduler import LatencyModel

VLLM_VERSION = "0.34.0"


@dataclass(frozen=True)
class SimulatorSettings:
    """The simulator's configuration; ``build_app`` takes one of these."""

    served_model_names: tuple[str, ...] = ("simulated-model",)
    model: str | None = None                # the "checkpoint path" shown as root
    profile: Profile = field(default_factory=lambda: BUILTIN["baseline"])
    seed: int = 0
    max_model_len: int = 32768
    max_logprobs: int = 20                  # -1: no limit
    api_keys: tuple[str, ...] = ()          # any one of them is accepted
    latency: LatencyModel = field(default_factory=LatencyModel)
    faults: FaultSettings = field(default_factory=FaultSettings)
    enable_request_id_headers: bool = False
    sse_keep_alive_interval: float = 0.0    # 0: off, as in vLLM
    kv_cache_tokens: int = 262144           # capacity behind vllm:kv_cache_usage_perc
    default_temperature: float = 1.0        # vLLM's default without generation_config
    version: str = VLLM_VERSION

    def __post_init__(self) -> None:
        if not self.served_model_names or not all(self.served_model_names):
            raise ConfigError("--served-model-name needs at least one non-empty name")
        if self.max_model_len < 1:
            raise ConfigError("--max-model-len must be at least 1")
        if self.max_logprobs < -1:
            raise ConfigError("--max-logprobs must be -1 (no limit) or a count")
        if self.sse_keep_alive_interval < 0:
            raise ConfigError("--sse-keep-alive-interval must not be negative")

    @property
    def model_name(self) -> str:
        """The name responses and metrics use: the first served name."""
        return self.served_model_names[0]

    @property
    def root(self) -> str:
        return self.model or self.model_name

    def logprobs_allowed(self, requested: int) -> bool:
        return self.max_logprobs == -1 or requested <= self.max_logprobs
