"""A request's answers, once compared, made one ``Pair``: margin, triage, scores.

The proxy, replay and ``shadowdiff compare`` each compare the answers their own way
(and replay and the proxy score them their own way); the pair they store is made here,
so that its triage reads the same in all three.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from shadowdiff.answers.compare import Comparison, off_loop
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.triage.signals import triage_answers, with_cascade
from shadowdiff.vocabulary import Side


def divergence_margin(base: Answer, comparison: Comparison) -> float | None:
    """The baseline's top-1/top-2 margin at the first token where the answers part, if it
    logged one there (how sure the baseline was where the candidate went elsewhere)."""
    if comparison.first_token is not None and base.margins and comparison.first_token < len(base.margins):
        return base.margins[comparison.first_token]
    return None


def assemble_pair(key: str, seq: int, endpoint: str, prompt: str, request: dict[str, Any],
                  answers: dict[Side, Answer], comparison: Comparison, *, noise: Comparison | None = None,
                  scores: dict[str, Any] | None = None, category: str | None = None,
                  comparable: bool = True) -> Pair:
    """The ``Pair`` of ``answers`` (by side; a baseline's and a candidate's at least) and
    their ``comparison``: the baseline's ``divergence_margin``, the triage signals (with a
    ``cascade`` when ``scores`` flag one), and the ``score`` and ``noise_score`` fields of
    ``scores`` (``shadowdiff.triage.scoring.score_pair``), if the pair was scored."""
    base, cand = answers[Side.BASELINE], answers[Side.CANDIDATE]
    margin = divergence_margin(base, comparison)
    scores = scores or {}
    triage = with_cascade(triage_answers(base, cand, comparison, margin), scores.get("score"))
    return Pair(key=key, seq=seq, endpoint=endpoint, prompt=prompt, request=request, comparison=comparison,
                answers=answers, category=category, comparable=comparable, margin=margin, noise=noise,
                **triage, **scores)


async def assemble_pair_off_loop(key: str, seq: int, endpoint: str, prompt: str, request: dict[str, Any],
                                 answers: dict[Side, Answer], comparison: Comparison, *,
                                 noise: Comparison | None = None, scores: dict[str, Any] | None = None,
                                 category: str | None = None, comparable: bool = True) -> Pair:
    """``assemble_pair`` for callers on an event loop: long answers in a thread (the
    signals read every part of both; 5 MB of text took 1.5 s)."""
    assemble = functools.partial(assemble_pair, key, seq, endpoint, prompt, request, answers, comparison,
                                 noise=noise, scores=scores, category=category, comparable=comparable)
    if off_loop(answers[Side.BASELINE], answers[Side.CANDIDATE]):
        return await asyncio.to_thread(assemble)
    return assemble()
