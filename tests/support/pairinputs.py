"""A mirrored request's pair as the pairs' thread and the pair process are handed it, made up."""

from __future__ import annotations

from typing import Any

import orjson

from shadowdiff.answers.records import Answer
from shadowdiff.proxy.pairmaking import MakerSettings, PairInputs
from shadowdiff.proxy.settings import DEFAULT_REDACTIONS
from shadowdiff.proxy.shadow import Plan, ShadowReply
from shadowdiff.proxy.tap import Tapped
from shadowdiff.vocabulary import Side

SETTINGS = MakerSettings(Side.BASELINE, None, 0.9, DEFAULT_REDACTIONS)
# two answers that differ in a number: a near pair, triaged and stored
GOOD = ("The Amazon carries 209,000 cubic metres a second.", "The Amazon carries 206,000 cubic metres a second.")


def body(text: str) -> bytes:
    return orjson.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}})


def pair_inputs(i: int, baseline: str, candidate: str, extra: dict[str, Any] | None = None) -> PairInputs:
    """Pair ``i`` (key ``k<i>``) of two non-streamed answers, its client's credentials in its headers."""
    request = {"model": "m", "messages": [{"role": "user", "content": f"question {i}"}], "temperature": 0,
               **(extra or {})}
    plan = Plan(b"{}", request, False, True, headers=[(b"authorization", b"Bearer sk-secretvalue12345")])
    tapped = Tapped(body(baseline), 200, False, 1.0, None, None, 1.5)
    shadow = ShadowReply(Answer(Side.CANDIDATE, "m"), "ok", body(candidate), False, 1.0, None, 1.4)
    return PairInputs(f"k{i}", i, "/v1/chat/completions", plan, tapped, shadow, None, False, True)
