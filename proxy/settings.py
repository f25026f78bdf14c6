"""Everything ``shadowdiff serve`` can be told, in one immutable object.

Settings come from flags, ``SHADOWDIFF_*`` environment variables and a TOML config
file (``--config``), in that order of precedence; ``shadowdiff.proxy.cli`` does the merging,
``build_app(settings)`` takes the result.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from shadowdiff.answers import baseurl
from shadowdiff.answers.redact import DEFAULT_PATTERNS, check_patterns, public_url
from shadowdiff.answers.targets import same_target
from shadowdiff.commands.listen import check_forwarded, check_tls
from shadowdiff.errors import ConfigError
from shadowdiff.vocabulary import Side

MIRRORED_PATHS = ("/v1/chat/completions", "/v1/completions")
# Redacted from everything serve keeps, always (``--redact`` adds to them): e-mail
# addresses, keys and tokens, credentials (shadowdiff.answers.redact).
DEFAULT_REDACTIONS = DEFAULT_PATTERNS


@dataclass(frozen=True)
class CaptureSettings:
    """Writing the requests the proxy sees to OpenAI Batch JSONL, for later replay."""

    path: Path
    sample_rate: float = 1.0
    max_bytes: int = 100 * 1024 * 1024     # rotate past this size
    keep: int = 5                          # rotated files kept

    def __post_init__(self) -> None:
        if not 0.0 <= self.sample_rate <= 1.0:
            raise ConfigError("--capture-rate must be within 0..1")
        if self.max_bytes < 1024:
            raise ConfigError("--capture-max-bytes must be at least 1024")
        if self.keep < 1:
            raise ConfigError("--capture-keep must be at least 1")


# The settings in seconds, and the most each may be: beyond it a typo, not a choice (the
# idle timeout must stay below the upstreams' keep-alive; see upstream_idle_timeout).
_SECONDS = {"shadow_timeout": 86_400.0, "connect_timeout": 3600.0, "primary_timeout": 86_400.0,
            "drain_timeout": 3600.0, "upstream_idle_timeout": 300.0, "client_idle_timeout": 3600.0,
            "store_timeout": 3600.0, "retain_every": 86_400.0}


PAIR_WORKERS = ("auto", "process", "thread")


@dataclass(frozen=True)
class ProxySettings:
    """The proxy's configuration."""

    primary: str
    shadow: str | None = None
    primary_side: Side = Side.BASELINE
    primary_model: str | None = None       # rewrite the model field for the primary (None: untouched)
    shadow_model: str | None = None        # the model name the shadow serves
    shadow_api_key: str | None = None      # replaces the client's Authorization for the shadow
    replica: str | None = None             # a second baseline: the noise floor
    replica_model: str | None = None       # the model name the replica serves (default: the baseline's)
    replica_rate: float = 0.1              # share of comparable mirrored requests also sent to the replica
    replica_api_key: str | None = None     # bearer token for the replica (default: the baseline's credentials)
    sample_rate: float = 1.0
    sample_header: str | None = None       # hash this header for consistent sampling
    max_shadow_in_flight: int = 64
    shadow_timeout: float = 120.0
    connect_timeout: float = 10.0
    primary_timeout: float = 600.0         # no byte from the primary for this long: 504
    max_mirror_body: int = 1024 * 1024     # larger bodies are forwarded, not mirrored
    exclude_models: tuple[str, ...] = ()   # requests for these models are not mirrored
    store: str = "shadowdiff.sqlite"
    keep_rate: float = 0.01                # identical and sampled pairs kept in the store
    near: float = 0.9
    capture: CaptureSettings | None = None
    redact: tuple[str, ...] = DEFAULT_REDACTIONS   # applied to whatever is stored, captured or logged
    drain_timeout: float = 30.0
    labels: dict[str, str] = field(default_factory=dict)  # recorded with the run (model pair, GPU...)
    review_token: str | None = None        # opens the review UI under /review (None: no UI)
    metrics_token: str | None = None       # /metrics only with this bearer token (None: open)
    alert_margin: float = 0.05             # exported for the divergence alert: allowed rise above the noise floor
    deployment: str | None = None          # processes with this name (and these settings) share one run
    # Below the upstreams' own keep-alive (vLLM's uvicorn, llama.cpp's, SGLang's: 5 s), so
    # the proxy, not the upstream, closes an idle connection: one the upstream closes
    # while a request is being put on it is a reset.
    upstream_idle_timeout: float = 4.0
    # Above the clients' own pool expiry (httpx's and the openai client's: 5 s; aiohttp's: 15 s;
    # a load balancer's idle timeout, AWS ALB's: 60 s), for the same reason the other way round:
    # the client closes an idle connection, not the proxy. uvicorn's 5 s reset requests a client
    # sent on a connection its pool still held whenever the proxy stalled across that deadline
    # (bench/resets.py). nginx's keepalive_timeout default.
    client_idle_timeout: float = 75.0
    store_queue: int = 10_000              # pairs held for a failing store, at most...
    store_queue_bytes: int = 64 * 1024 * 1024   # ...and bytes of them; past either, dropped and counted
    store_timeout: float = 10.0            # any one database call of the proxy (PostgreSQL), at most
    retain: float | None = None            # seconds: prune the deployment's older pairs (None: keep every pair)
    retain_every: float = 600.0            # seconds between those prunes
    tls_cert: str | None = None            # serve HTTPS with this certificate (PEM)...
    tls_key: str | None = None             # ...and its key
    forwarded_allow_ips: str | None = None   # proxies whose X-Forwarded-Proto/-For are believed (None: none)
    # greedy pairs teacher-forced scored per second, at most (shadowdiff.proxy.scoring); 0: none. Off by
    # default: each scored pair costs every upstream a prefill of its prompt and answer.
    score_rate: float = 0.0
    # the primary's server and model as the shadow too: refused unless asked for (its noise)
    allow_same_target: bool = False
    # where the pairs are made (shadowdiff.proxy.pairprocess): "process", "thread", or "auto" (a
    # process with two cores or more). The command's default is auto; built here, a thread
    # (an app made in a test or an embedding process starts no child of its own unasked).
    pair_worker: str = "thread"

    def __post_init__(self) -> None:
        # (in this order: with several wrong, the first named is the one said)
        self._check_upstreams()
        self._check_rates()
        if self.max_shadow_in_flight < 1:
            raise ConfigError("--max-shadow-in-flight must be at least 1")
        if self.pair_worker not in PAIR_WORKERS:
            raise ConfigError(f"--pair-worker must be one of {', '.join(PAIR_WORKERS)}, got {self.pair_worker!r}")
        check_patterns(self.redact)
        self._check_limits()
        self._check_times()
        check_tls(self.tls_cert, self.tls_key)
        check_forwarded(self.forwarded_allow_ips)

    def _check_upstreams(self) -> None:
        for name in ("primary", "shadow", "replica"):
            url = getattr(self, name)
            if url is not None:
                baseurl.check(f"--{name}", url)
        if self.replica is not None and self.shadow is None:
            raise ConfigError("--replica needs --shadow: the noise floor is measured beside a comparison")
        if (self.shadow is not None and not self.allow_same_target
                and same_target(self.primary, self.primary_model, self.shadow, self.shadow_model)):
            # every pair would agree, and the run would PASS on no evidence about any candidate
            raise ConfigError(f"--primary and --shadow are the same server and model ({self.shadow}): give the "
                              "shadow's own address (or --shadow-model), or --allow-same-target to measure the "
                              "server against itself (its noise)")

    def _check_rates(self) -> None:
        for name in ("sample_rate", "keep_rate", "replica_rate", "alert_margin"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"--{name.replace('_', '-')} must be within 0..1")

    def _check_limits(self) -> None:
        for name in ("review_token", "metrics_token"):
            token = getattr(self, name)
            if token is not None and len(token) < 8:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 8 characters")
        if self.deployment is not None and not 0 < len(self.deployment) <= 255:
            raise ConfigError("--deployment must be 1 to 255 characters")
        if self.store_queue < 1 or self.store_queue_bytes < 1:
            raise ConfigError("--store-queue and --store-queue-bytes must be at least 1")

    def _check_times(self) -> None:
        for name, most in _SECONDS.items():
            value = getattr(self, name)
            # (NaN passes every comparison but "not", and infinity would disable what it bounds)
            if not 0 < value <= most:
                raise ConfigError(f"--{name.replace('_', '-')} must be a number of seconds above 0 and at "
                                  f"most {most:g}, got {value!r}")
        if not 0 <= self.score_rate < math.inf:
            raise ConfigError(f"--score-rate must be a number of pairs per second, 0 (off) or more, "
                              f"got {self.score_rate!r}")
        if self.retain is not None and not 0 < self.retain < math.inf:
            raise ConfigError("--retain must be longer than zero")

    @property
    def scheme(self) -> str:
        """How clients reach the proxy itself: https with --tls-cert."""
        return "https" if self.tls_cert else "http"

    @property
    def shadow_side(self) -> Side:
        return Side.CANDIDATE if self.primary_side is Side.BASELINE else Side.BASELINE

    @property
    def replica_key(self) -> str | None:
        """The replica stands beside the baseline: it gets the baseline's credentials —
        the client's when the baseline is the primary, ``shadow_api_key`` when it is the shadow."""
        if self.replica_api_key is not None:
            return self.replica_api_key
        return self.shadow_api_key if self.primary_side is Side.CANDIDATE else None

    def model_of(self, side: Side) -> str | None:
        """The model name configured for a side (None: the client's, untouched)."""
        if side is Side.REPLICA:
            return self.replica_model or self.model_of(Side.BASELINE)
        return self.primary_model if side is self.primary_side else self.shadow_model

    def name_of(self, side: Side) -> str:
        """A side's name for the model-pair info metric: its model, else its host."""
        url = public_url(self.primary if side is self.primary_side else (self.shadow or ""))
        return self.model_of(side) or re.sub(r"^https?://", "", url).rstrip("/") or side.value

    def recorded(self) -> dict[str, object]:
        """What is stored with the run (no secrets: no API key, no password in a URL)."""
        primary, shadow, replica = (None if u is None else public_url(u) for u in (self.primary, self.shadow,
                                                                                     self.replica))
        return {
            "primary": primary, "shadow": shadow, "primary_side": self.primary_side.value,
            "primary_model": self.primary_model, "shadow_model": self.shadow_model,
            "sample_rate": self.sample_rate, "sample_header": self.sample_header,
            "max_shadow_in_flight": self.max_shadow_in_flight, "shadow_timeout": self.shadow_timeout,
            "keep_rate": self.keep_rate, "thresholds": {"near": self.near}, "labels": dict(self.labels),
            "replica": replica, "replica_model": self.model_of(Side.REPLICA) if self.replica else None,
            "replica_rate": self.replica_rate if self.replica else None,
            "sides": {self.primary_side.value: {"url": primary, "model": self.primary_model},
                      **({self.shadow_side.value: {"url": shadow, "model": self.shadow_model}}
                         if self.shadow else {})},
        }


def settings_to_json(settings: ProxySettings) -> str:
    """The settings as JSON, for worker processes that build their own app."""
    data = asdict(settings)
    data["primary_side"] = settings.primary_side.value
    if settings.capture is not None:
        data["capture"] = {**asdict(settings.capture), "path": str(settings.capture.path)}
    return json.dumps(data)


def settings_from_json(text: str) -> ProxySettings:
    data = json.loads(text)
    capture = data.pop("capture")
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()
                              if k != "primary_side"}
    return ProxySettings(
        **fields,
        primary_side=Side(data["primary_side"]),
        capture=CaptureSettings(**{**capture, "path": Path(capture["path"])}) if capture else None)
