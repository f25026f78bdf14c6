"""Fault injection, for testing everything that stands on the simulator.

Each completion request draws at most one fault, with the configured rates
(``--fault KIND=RATE``); with ``--fault-seed`` the sequence of draws is reproducible.
The faults are the ways an upstream really fails a proxy or a replay client:

=============  ===================================================================
``error_500``  HTTP 500 with vLLM's error body, before anything else is sent
``error_503``  HTTP 503 (vLLM's "retryable" engine error)
``error_429``  HTTP 429 with ``Retry-After``, as a rate-limiting gateway sends it
``hang``       nothing at all for ``--fault-hang-seconds`` before the first byte
``slow``       a slow drip: ``--fault-slow-seconds`` between tokens
``reset``      the connection is dropped mid-body, after ``--fault-after-tokens``
``error_frame`` a ``data: {"error": ...}`` frame after the 200 (then ``[DONE]``)
``malformed``  a frame that is not valid JSON (a non-streamed body cut short)
``split_utf8`` a multi-byte UTF-8 character split across two writes
=============  ===================================================================
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from shadowdiff.errors import ProfileError


class Fault(StrEnum):
    ERROR_500 = "error_500"
    ERROR_503 = "error_503"
    ERROR_429 = "error_429"
    HANG = "hang"
    SLOW = "slow"
    RESET = "reset"
    ERROR_FRAME = "error_frame"
    MALFORMED = "malformed"
    SPLIT_UTF8 = "split_utf8"

    @property
    def status(self) -> int | None:
        """The HTTP status of an error fault, None for faults that answer 200."""
        return {"error_500": 500, "error_503": 503, "error_429": 429}.get(self.value)


@dataclass(frozen=True)
class FaultSettings:
    rates: Mapping[Fault, float] = field(default_factory=lambda: MappingProxyType({}))
    seed: int | None = None
    after_tokens: int = 3
    hang_seconds: float = 3600.0
    slow_seconds: float = 0.5
    retry_after: int = 1
    split_pause: float = 0.05

    def __post_init__(self) -> None:
        total = sum(self.rates.values())
        if any(not 0.0 <= r <= 1.0 for r in self.rates.values()) or total > 1.0 + 1e-9:
            raise ProfileError(f"fault rates must be within 0..1 and add up to at most 1 (got {total:.3f})")
        if self.after_tokens < 0:
            raise ProfileError("--fault-after-tokens must not be negative")


def parse_fault(spec: str) -> tuple[Fault, float]:
    """Parse ``KIND=RATE`` (``reset=0.1``); a bare ``KIND`` means rate 1."""
    kind, sep, rate = spec.partition("=")
    try:
        return Fault(kind.strip()), float(rate) if sep else 1.0
    except ValueError:
        kinds = ", ".join(f.value for f in Fault)
        raise ProfileError(f"--fault {spec!r}: kind must be one of {kinds}, rate a number") from None


class FaultInjector:
    """Draws the fault (or none) for each completion request."""

    def __init__(self, settings: FaultSettings) -> None:
        self.settings = settings
        self._rng = random.Random(settings.seed)

    def draw(self) -> Fault | None:
        if not self.settings.rates:
            return None
        u = self._rng.random()
        edge = 0.0
        for fault in Fault:
            edge += self.settings.rates.get(fault, 0.0)
            if u < edge:
                return fault
        return None
