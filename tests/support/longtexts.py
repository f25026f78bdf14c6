"""Long answers for the comparison's tests and its benchmark: the simulator's prose
joined to a length, and the same text with a wording drift from the middle on (the
common FP8 case)."""

from __future__ import annotations

from shadowdiff.simulator import profiles
from shadowdiff.simulator.baseline_text import generate, prompt_key
from shadowdiff.simulator.drift import apply_profile
from shadowdiff.simulator.vocab import vocabulary


def long_answer(length: int, seed: int) -> str:
    """``length`` characters of the simulator's answers to questions numbered by ``seed``."""
    parts, total, i = [], 0, 0
    while total < length:
        parts.append(generate(f"Question {seed}-{i}: explain rivers, bridges and taxes.").text)
        total += len(parts[-1])
        i += 1
    return "\n\n".join(parts)[:length]


def drifted(text: str, prompt: str = "drift") -> str:
    """``text`` with the simulator's wording drift (seeded by ``prompt``) from its middle on."""
    half = len(text) // 2
    wording = profiles.Profile("w", {profiles.DriftKind.WORDING: 1.0})
    return text[:half] + apply_profile(wording, prompt_key(prompt), prompt, vocabulary().encode(text[half:])).text
