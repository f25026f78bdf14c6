"""Cheap, stable pseudo-random numbers derived from integers.

Python's ``hash`` is salted per process, and ``random.Random(seed)`` costs a few
microseconds to build, too much per token. SplitMix64 mixes integers into uniform
64-bit values; everything the simulator decides per prompt or per token position
goes through ``unit`` so it is identical in every process.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1


def mix(*values: int) -> int:
    """A 64-bit hash of a tuple of integers (SplitMix64 applied in sequence)."""
    state = 0x9E3779B97F4A7C15
    for value in values:
        state = (state ^ (value & _MASK)) + 0x9E3779B97F4A7C15 & _MASK
        z = state
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _MASK
        state = z ^ (z >> 31)
    return state


def unit(*values: int) -> float:
    """A uniform float in [0, 1) determined by ``values``."""
    return mix(*values) / 2.0**64


def text_id(text: str) -> int:
    """A stable integer for a short string (for mixing tokens into a hash)."""
    value = 1469598103934665603
    for byte in text.encode():
        value = (value ^ byte) * 1099511628211 & _MASK
    return value
