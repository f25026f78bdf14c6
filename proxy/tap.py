"""The primary's answer as the forwarder saw it pass."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tapped:
    """The primary's answer as it passed: raw bytes and when they came."""

    raw: bytes
    status: int
    stream: bool
    started: float
    first: float | None          # the first generated token passed
    first_answer: float | None   # the first answer token (not reasoning) passed
    ended: float
    overflow: bool = False
    last: float | None = None    # the last generated token passed
