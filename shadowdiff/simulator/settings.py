"""Everything ``shadowdiff simulate`` can be told, in one immutable object."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field

from shadowdiff.errors import ConfigError
from shadowdiff.simulator.faults import FaultSettings
from shadowdiff.simulator.graded import DEFAULT_ACCURACY
from shadowdiff.simulator.parsers import REASONING_PARSERS, TOOL_PARSERS, Parsers
from shadowdiff.simulator.profiles import BUILTIN, Profile
from shadowdiff.simulator.scheduler import LatencyModel

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
    reasoning_parser: str | None = None     # --reasoning-parser
    enable_auto_tool_choice: bool = False
    tool_call_parser: str | None = None     # --tool-call-parser (in effect with the flag above)
    thinking: bool | None = None            # the model thinks; None: if a reasoning parser is set
    quantization: str | None = None         # None: the profile's; "none": not quantized
    accuracy: float = DEFAULT_ACCURACY      # --accuracy: share of gradable questions answered right

    def __post_init__(self) -> None:
        if not self.served_model_names or not all(self.served_model_names):
            raise ConfigError("--served-model-name needs at least one non-empty name")
        if self.max_model_len < 1:
            raise ConfigError("--max-model-len must be at least 1")
        if self.max_logprobs < -1:
            raise ConfigError("--max-logprobs must be -1 (no limit) or a count")
        if not 0.0 <= self.accuracy <= 1.0:
            raise ConfigError(f"--accuracy must be within 0..1 (a share of questions), got {self.accuracy}")
        if self.sse_keep_alive_interval < 0:
            raise ConfigError("--sse-keep-alive-interval must not be negative")
        # vLLM's start-up checks and messages (entrypoints/common/cli_args.py)
        if self.enable_auto_tool_choice and not self.tool_call_parser:
            raise ConfigError("Error: --enable-auto-tool-choice requires --tool-call-parser")
        if self.enable_auto_tool_choice and self.tool_call_parser not in TOOL_PARSERS:
            raise ConfigError(f"invalid tool call parser: {self.tool_call_parser} "
                              f"(chose from {{ {','.join(TOOL_PARSERS)} }})")
        if self.reasoning_parser and self.reasoning_parser not in REASONING_PARSERS:
            raise ConfigError(f"invalid reasoning parser: {self.reasoning_parser} "
                              f"(chose from {{ {','.join(REASONING_PARSERS)} }})")

    @property
    def model_name(self) -> str:
        """The name responses and metrics use: the first served name."""
        return self.served_model_names[0]

    @property
    def root(self) -> str:
        return self.model or self.model_name

    @property
    def parsers(self) -> Parsers:
        return Parsers(self.reasoning_parser or None,
                       self.tool_call_parser if self.enable_auto_tool_choice else None)

    @property
    def thinks(self) -> bool:
        """Whether the model writes ``<think>…</think>`` before a chat answer."""
        return bool(self.reasoning_parser) if self.thinking is None else self.thinking

    @functools.cached_property
    def fingerprint(self) -> str:
        """``system_fingerprint`` as vLLM 0.34 makes it (serve/utils/fingerprint.py):
        ``vllm-<version>-`` and 8 hex digits of a SHA-256 over the engine configuration
        (config/utils.py hash_config). The configuration hashed here is the part the
        simulator models: the checkpoint, its context length and its quantization, and not
        the served name or the seed, which vLLM leaves out too; so replicas agree and a
        BF16 and an FP8 server of one model differ."""
        quantization = self.quantization if self.quantization is not None else self.profile.quantization
        if quantization is not None and quantization.lower() == "none":
            quantization = None
        factors = {"model": self.root, "max_model_len": self.max_model_len, "quantization": quantization,
                   "dtype": "bfloat16"}
        digest = hashlib.sha256(json.dumps(factors, sort_keys=True).encode()).hexdigest()
        return f"vllm-{self.version}-{digest[:8]}"

    def logprobs_allowed(self, requested: int) -> bool:
        return self.max_logprobs == -1 or requested <= self.max_logprobs
