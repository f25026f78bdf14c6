"""Log-probabilities consistent with the text, in vLLM's chat and completions shapes.

Each position gets a probability distribution built deterministically from the
prompt key, the position and the token: the emitted token is the top-1 (greedy), and
the probabilities of the listed tokens never sum above 1. Three regimes matter to
shadowdiff:

* an ordinary position: top-1 is confident, the runner-up far behind;
* a *near-tie* (``drift.near_tie_alternative``): top-1 and top-2 within a few points,
  where benign drift begins;
* the first divergent token of a drifted answer (``Divergence``): a near-tie for
  wording or formatting drift, a large margin for a confident change.

Prompt positions (``prompt_logprobs``, an echoed prompt) rank the prompt's own token
among hash-chosen predictions (``prompt_position``), except in an answer after a chat's
assistant header, which ``teacher`` scores against the server's own answer with the
functions above.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from shadowdiff.simulator.drift import alternative, near_tie_alternative
from shadowdiff.simulator.hashing import mix, text_id, unit
from shadowdiff.simulator.vocab import ADDED_TOKENS, BYTE_TOKENS, SPECIAL_TOKENS, Vocabulary

_PROMPT_SALT = 0x5BD1E995
_FILLER = (
    " the", ",", ".", " and", " a", " of", " to", " is", "\n", " in", " that", " it",
    " for", " with", " as", " on", " be", " this", " by", " at", " or", " which",
    " an", " are", " from", " can", " not", " but", " we", " one",
)


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where an answer first departs from the baseline's, for the logprobs there."""

    index: int
    baseline_token: str
    confident: bool


@dataclass(frozen=True, slots=True)
class Position:
    """The distribution at one position: the token there (emitted, or the prompt's), then
    the top-k; ``rank`` is that token's rank in the distribution (1 for a greedy output)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...]
    rank: int = 1


def _residual(first: float, second: str | None, second_p: float | None, key: int,
              index: int, chosen: str, k: int, vocab: Vocabulary) -> Position:
    """Fill the top-k list with decreasing shares of the leftover probability mass."""
    top: list[tuple[str, float]] = [(chosen, math.log(first))]
    used = {chosen}
    left = 1.0 - first
    if second is not None and second_p is not None and second not in used:
        top.append((second, math.log(second_p)))
        used.add(second)
        left -= second_p
    share = 0.6
    j = 0
    while len(top) < k:
        j += 1
        if j <= len(_FILLER):
            candidate = _FILLER[(mix(key, index, j) + j) % len(_FILLER)]
        else:
            span = vocab.size - BYTE_TOKENS - len(SPECIAL_TOKENS) - len(ADDED_TOKENS)
            candidate = vocab.token_text(BYTE_TOKENS + len(SPECIAL_TOKENS) + mix(key, index, j) % span)
        if candidate in used:
            continue
        used.add(candidate)
        mass = max(left * share, 1e-12)
        top.append((candidate, math.log(mass)))
        left -= mass
        share = 0.5
    return Position(chosen, top[0][1], tuple(top[:k]))


def position(key: int, index: int, token: str, k: int, vocab: Vocabulary,
             divergence: Divergence | None = None) -> Position:
    """The distribution at output position ``index`` (``k`` entries in ``top``)."""
    k = max(k, 1)
    salt = text_id(token)
    u1, u2 = unit(key, index, salt, 1), unit(key, index, salt, 2)
    if divergence is not None and divergence.index == index:
        if divergence.confident:
            first = 0.70 + 0.2 * u1
            return _residual(first, divergence.baseline_token, (1 - first) * 0.6, key, index,
                             token, k, vocab)
        first = 0.45 + 0.03 * u1
        return _residual(first, divergence.baseline_token, first - 0.01 - 0.07 * u2, key,
                         index, token, k, vocab)
    alt = near_tie_alternative(key, index, token)
    if alt is not None:
        first = 0.45 + 0.03 * u1
        return _residual(first, alt, first - 0.01 - 0.07 * u2, key, index, token, k, vocab)
    first = 1.0 - (0.001 + 0.2 * u1 * u1)
    runner_up = alternative(token)
    return _residual(first, runner_up, (1 - first) * 0.6 if runner_up else None, key, index,
                     token, k, vocab)


def chat_content(positions: Sequence[Position], top_n: int) -> dict[str, Any]:
    """The chat ``logprobs`` object: ``{"content": [...]}``."""

    def entry(token: str, logprob: float) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode())}

    return {"content": [
        {**entry(p.token, p.logprob), "top_logprobs": [entry(t, lp) for t, lp in p.top[:top_n]]}
        for p in positions
    ]}


def completion_logprobs(positions: Sequence[Position | None], tokens: Sequence[str],
                        top_n: int, offset: int = 0) -> dict[str, Any]:
    """The completions ``logprobs`` object; ``None`` positions (the first echoed prompt
    token) carry null values, as vLLM sends them."""
    text_offset: list[int] = []
    token_logprobs: list[float | None] = []
    top_logprobs: list[dict[str, float] | None] = []
    at = offset
    for p, token in zip(positions, tokens, strict=True):
        text_offset.append(at)
        at += len(token)
        if p is None:
            token_logprobs.append(None)
            top_logprobs.append(None)
            continue
        token_logprobs.append(p.logprob)
        # The sampled token first, then the top N; equal strings collapse in the dict.
        top = {p.token: p.logprob}
        for t, lp in p.top[:top_n]:
            top.setdefault(t, lp)
        top_logprobs.append(top)
    return {"text_offset": text_offset, "token_logprobs": token_logprobs, "tokens": list(tokens),
            "top_logprobs": top_logprobs}


def _prompt_rank(key: int, index: int) -> int:
    """Where the prompt's own token ranks among the model's predictions: often first
    (text is predictable), often not, sometimes far down (a name, a typo)."""
    u = unit(key, index, _PROMPT_SALT)
    if u < 0.55:
        return 1
    if u < 0.75:
        return 2
    if u < 0.88:
        return 3 + int((u - 0.75) / 0.13 * 3)
    return 6 + int((u - 0.88) / 0.12 * 200)


def _alternatives(key: int, index: int, taken: str, vocab: Vocabulary) -> Iterator[str]:
    """Other single tokens a model could have predicted, never ``taken``, none twice."""
    used = {taken}
    span = vocab.size - BYTE_TOKENS - len(SPECIAL_TOKENS) - len(ADDED_TOKENS)
    j = 0
    while True:
        j += 1
        if j <= len(_FILLER):
            candidate = _FILLER[(mix(key, index, j) + j) % len(_FILLER)]
        else:
            candidate = vocab.token_text(BYTE_TOKENS + len(SPECIAL_TOKENS) + mix(key, index, j) % span)
        if candidate not in used:
            used.add(candidate)
            yield candidate


def prompt_position(key: int, index: int, token_id: int, text: str, k: int, vocab: Vocabulary) -> Position:
    """The distribution at prompt position ``index``: the prompt's token at its own rank
    (``_prompt_rank``), and the ``k`` most likely tokens, ranks 1 to ``k``, the prompt's
    token among them where its rank is at most ``k``."""
    key ^= _PROMPT_SALT
    rank = _prompt_rank(key, index)
    decay = 0.3 + 0.3 * unit(key, index, 2)
    # geometric over the first five ranks, then slower and slower; the listed mass stays below 1
    first = (1 - decay) * (0.5 + 0.4 * unit(key, index, 1))

    def logprob(r: int) -> float:
        return math.log(first) + min(r - 1, 4) * math.log(decay) - 0.3 * min(max(r - 5, 0), 5) - 0.1 * max(r - 10, 0)

    others = _alternatives(key, index, text, vocab)
    top = tuple((text if r == rank else next(others), logprob(r)) for r in range(1, k + 1))
    return Position(text, logprob(rank), top, rank)


def prompt_positions(key: int, token_ids: Sequence[int], texts: Sequence[str], k: int,
                     vocab: Vocabulary) -> list[Position | None]:
    """``prompt_position`` at every prompt position but the first, which has none."""
    return [None, *(prompt_position(key, i, token_ids[i], texts[i], k, vocab) for i in range(1, len(token_ids)))]


def as_runner_up(p: Position, token: str, k: int) -> Position:
    """The distribution ``p`` (its top list at least 2 long) with ``token`` in the
    runner-up's place: rank 2, with the runner-up's logprob; ``k`` entries listed."""
    (first, second), rest = p.top[:2], p.top[2:]
    top = (first, (token, second[1]), *(t for t in rest if t[0] != token))
    return Position(token, second[1], top[:k], rank=2)


def rival(key: int, index: int, token: str, vocab: Vocabulary) -> str:
    """The token a model prefers over ``token`` where it disagrees at a near-tie: the
    token's own alternative if it has one (a synonym, another line break), else a
    common filler; never ``token`` itself."""
    alt = alternative(token)
    if alt is not None and alt != token and vocab.token_id(alt) is not None:
        return alt
    return next(_alternatives(key, index, token, vocab))


def prompt_logprobs(positions: Sequence[Position | None], token_ids: Sequence[int],
                    vocab: Vocabulary) -> list[dict[str, dict[str, Any]] | None]:
    """vLLM's ``prompt_logprobs`` from the prompt's positions: None for the first token,
    then at every position the actual token with its true rank, then the top ``k`` (ranks
    1 to k), keyed by token id (v1/engine/logprobs.py, append_logprobs_for_next_position:
    the prompt's token first, and where it is among the top k, once)."""
    out: list[dict[str, dict[str, Any]] | None] = []
    for p, token_id in zip(positions, token_ids, strict=True):
        if p is None:
            out.append(None)
            continue
        text = vocab.decode([token_id], skip_special=False)
        entries: dict[str, dict[str, Any]] = {
            str(token_id): {"logprob": p.logprob, "rank": p.rank, "decoded_token": text}}
        for rank, (alt, lp) in enumerate(p.top, start=1):
            alt_id = token_id if rank == p.rank else vocab.token_id(alt)
            if alt_id is not None and str(alt_id) not in entries:
                entries[str(alt_id)] = {"logprob": lp, "rank": rank,
                                        "decoded_token": text if rank == p.rank else alt}
        out.append(entries)
    return out
