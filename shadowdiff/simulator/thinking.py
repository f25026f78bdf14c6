"""The thinking a reasoning model writes before its chat answer (``<think>…</think>``).

Like the answer, it is a pure function of the prompt: a few sentences that restate the
question and work through some arithmetic, each step correct ("17 * 23 = 391"), so a
changed number in the thinking (the ``reasoning_number`` drift) is a visible mistake
while the final answer stays the same. It never contains ``<`` or ``>``: those would
look like the start of a ``</think>`` or ``<tool_call>`` to vLLM's parsers.
"""

from __future__ import annotations

import random
import re

from shadowdiff.simulator import baseline_text, lexicon
from shadowdiff.simulator.hashing import mix

_SALT = 53
_NUMBER = re.compile(r"\d{1,4}")


def _operands(about: str, rng: random.Random) -> tuple[int, int, int]:
    """Two factors and an addend: the question's own small numbers first."""
    found = [int(n) for n in _NUMBER.findall(about) if 2 <= int(n) <= 999][:2]
    while len(found) < 2:
        found.append(rng.randint(12, 49))
    return found[0], found[1], rng.randint(5, 95)


def write(prompt: str, *, calls_tool: bool = False) -> str:
    """The thinking for ``prompt``; ``calls_tool``: the answer that follows is a tool call."""
    about = baseline_text.subject(prompt)
    rng = random.Random(mix(baseline_text.prompt_key(prompt), _SALT))
    topic = baseline_text.topic_words(about)[0]
    a, b, c = _operands(about, rng)
    product = a * b
    noun, noun2 = rng.choice(lexicon.NOUNS), rng.choice(lexicon.NOUNS)
    sentences = [
        rng.choice((f"Okay, the user is asking about {topic}.",
                    f"Let me think about {topic} first.",
                    f"The question is about {topic}, so I should be careful.")),
        f"Working through the numbers: {a} * {b} = {product}, and {product} + {c} = {product + c}.",
        rng.choice((f"So the {noun} is about {product + c}, which matters for the {noun2}.",
                    f"That makes {product + c} in total; the {noun} depends on it.",
                    f"Dividing by {b} gives back {a}, so the {noun} checks out.")),
    ]
    if rng.random() < 0.5:
        d = rng.randint(2, 9)
        sentences.append(f"As a check, {c} * {d} = {c * d}, close enough to the {noun2}.")
    sentences.append("I should use a tool to get the details." if calls_tool
                     else rng.choice(("Now I can write the answer.", "I will answer with the key points.")))
    return " ".join(sentences)
