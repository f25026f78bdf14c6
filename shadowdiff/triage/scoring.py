"""Teacher-forced scoring: how a server reads the baseline's own answer, token by token.

Greedy outputs exaggerate a change: one near-tie decided the other way at token 5 makes
the next 250 tokens differ, though the candidate would have agreed with the baseline
everywhere else. Teacher forcing measures the disagreement itself: each scorer (the
candidate, the replica, and the baseline itself) is given the prompt followed by the
baseline's answer, generates nothing, and reports at each answer position the
log-probability and rank of the baseline's token and its own top-k. From that, per pair:

* ``agreement``: the share of the answer's tokens that are the scorer's own top-1;
* ``first_disagreement``: the first answer position where they are not (0-based);
* ``mean_drop`` / ``max_drop``: the baseline's log-probability of its own token minus the
  scorer's, averaged and at worst (nats; positive: the scorer is less sure of it);
* ``kl``: KL(baseline || scorer) per token, estimated from the two top-k lists (below);
* ``baseline_agreement``: the same agreement of the baseline with itself, which the
  others are read against: a little under 1.0 on a real engine, because reading a whole
  answer in one prefill is computed unlike writing it token by token (vLLM bf16 on
  SmolLM2: 97.5-99.4 %; llama.cpp F16: 99.8-100 %); far under it, the answer was not the
  baseline's greedy reading (``shadowdiff.statistics.scorestats``).

Two engines are known, tried in this order once per server (what answered is kept):

* vLLM: ``POST /tokenize`` with the chat messages (``add_generation_prompt``) for the
  prompt's ids, and with the answer as a final assistant message
  (``continue_final_message``) for the answer's, then ``POST /v1/completions`` with those
  ids as the prompt, ``max_tokens`` 1 and ``prompt_logprobs`` k (the route vLLM's own
  tests compare quantized models by). A completions prompt is tokenized as text. An
  answer that filled the context is read without its last token (vLLM must have room
  to generate one).
* llama.cpp's server (llama-cpp-python): ``POST /extras/tokenize`` for the ids, then
  ``/v1/completions`` with ``echo`` and ``logprobs`` k over the ids. It renders no chat
  template for a caller, so only completions prompts can be scored there; its echoed
  logprobs line up with the tokens only when the prompt starts with the BOS token (it
  drops that token and shifts by one otherwise), which is checked on every answer.

Only greedy pairs (temperature 0 or top_k 1: a seed makes sampling repeatable, not
greedy) whose answers are text are scored: an answer with reasoning or tool calls cannot
be rebuilt from its text (the template renders them its own way). A pair that cannot be
scored says why (``{"unscorable": reason}``); a server that cannot score at all (no
engine's routes answer for its first pairs) says so once and is not asked again, while a
pair its engine refuses (``CannotScorePair``) costs that pair only.

The KL estimate: over the baseline's top-k tokens plus one bucket for everything else,
a token missing from the scorer's top-k given the scorer's k-th probability (an upper
bound on it, so the estimate leans low). It is a comparison between runs of the same k,
not the full-vocabulary KL that llama.cpp's ``perplexity --kl-divergence`` computes.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from shadowdiff.answers.client import Upstream
from shadowdiff.answers.compare import is_greedy
from shadowdiff.answers.records import Answer
from shadowdiff.answers.tokencount import shown
from shadowdiff.vocabulary import Outcome, Side

log = logging.getLogger("shadowdiff.scoring")

TOP_K = 10               # the top-k asked at each position (vLLM allows 20 by default)
CASCADE_AGREEMENT = 0.99  # a changed pair agreeing on this share of tokens or more is a cascade
GIVE_UP_AFTER = 3        # a server that failed this many pairs before scoring any is not asked again
# vLLM sends a log-probability of -inf as -9999.0: read as this floor (e^-100 is nothing
# next to any listed token), so that one impossible token cannot make a run's mean KL 9,998
LOGPROB_FLOOR = -100.0
_FLOOR = 1e-12


def _logprob(value: Any) -> float:
    """A server's log-probability, checked: a finite number at most 0 (a little above, for
    rounding), floored at ``LOGPROB_FLOOR``; ``CannotScore`` otherwise (NaN, infinities,
    positive values, strings), which must never reach a store (PostgreSQL's JSON refuses NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value > 1e-6:
        raise CannotScore(f"a log-probability is not a finite number at most 0: {value!r}"[:200])
    return max(float(min(value, 0.0)), LOGPROB_FLOOR)


def _rank(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CannotScore(f"a rank is not a whole number from 1: {value!r}"[:200])
    return value


class CannotScore(Exception):
    """Why one pair could not be scored by one server."""


class CannotScorePair(CannotScore):
    """The server is this engine (its routes answered), but this pair cannot be scored on it
    (an answer that does not tokenize as a continuation, a request it refuses): never a
    reason to give the server up, nor to try another engine's routes."""


@dataclass(frozen=True, slots=True)
class Step:
    """One answer position as a scorer read it."""

    logprob: float           # the answer's token, under the scorer
    rank: int                # its rank among the scorer's predictions (1: its own choice); k+1 below the top-k
    top: dict[str, float]    # the scorer's top-k: token (id or text) to log-probability


@dataclass(frozen=True, slots=True)
class Job:
    """What is scored: the request (its endpoint and body) and the baseline's answer text."""

    endpoint: str
    body: dict[str, Any]
    answer: str


def scorable(endpoint: str, body: dict[str, Any], answer: Answer) -> str | None:
    """Why a pair's baseline answer cannot be scored, or None when it can."""
    if answer.error is not None:
        return "the baseline has no answer"
    if answer.reasoning or answer.tool_calls or answer.refusal:
        return "the answer has reasoning, tool calls or a refusal, which its text cannot rebuild"
    if not answer.text:
        return "the answer is empty"
    if endpoint.endswith("/completions") and not endpoint.endswith("/chat/completions") \
            and not isinstance(body.get("prompt"), str):
        return "the prompt is not one text (token ids or a list of prompts)"
    if endpoint.endswith("/chat/completions") and not isinstance(body.get("messages"), list):
        return "the request has no messages"
    return None


class _Engine:
    """One engine's way of scoring: its tokenizer and its logprobs over a given prompt."""

    name = ""

    def __init__(self, client: httpx.AsyncClient, k: int) -> None:
        self.client = client
        self.k = k

    async def steps(self, upstream: Upstream, job: Job) -> list[Step]:
        raise NotImplementedError

    async def _post(self, upstream: Upstream, url: str, body: dict[str, Any]) -> Any:
        response = await self.client.post(url, json=body, headers=upstream.headers)
        if response.status_code != 200:
            raise CannotScore(f"{url.rsplit('/', 1)[-1]} answered {response.status_code}: "
                              f"{_message(response)}")
        # orjson first: a scoring answer is large (every position's top-k). It reads an
        # integer beyond 64 bits as a float, where the standard library kept an int: such a
        # rank or token id is refused below either way (no vocabulary is that large).
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError:
            pass
        try:   # ... and the standard library for what orjson refuses (-Infinity, NaN)
            return response.json()
        except ValueError:
            # (the route alone: the base URL may carry credentials, and reasons are stored)
            raise CannotScore(f"{url.rsplit('/', 1)[-1]} answered something that is not JSON") from None

    @staticmethod
    def _split(prompt: list[int], full: list[int]) -> list[int]:
        if len(full) <= len(prompt) or full[:len(prompt)] != prompt:
            raise CannotScore("the answer does not tokenize as a continuation of the prompt")
        return full[len(prompt):]


def _message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        text = error.get("message") if isinstance(error, dict) else response.text
    except (ValueError, AttributeError):
        text = response.text
    return " ".join(str(text).split())[:300]


def _ids(data: Any, field: str = "tokens") -> list[int]:
    tokens = data.get(field) if isinstance(data, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise CannotScore(f"the tokenizer answered no {field!r} list of ids")
    return tokens


class Vllm(_Engine):
    """vLLM: /tokenize renders the chat template; ``prompt_logprobs`` read the given ids."""

    name = "vllm"

    async def steps(self, upstream: Upstream, job: Job) -> list[Step]:
        url = upstream.root + "/tokenize"
        model = upstream.model or job.body.get("model")
        if job.endpoint.endswith("/chat/completions"):
            chat = {"model": model, "messages": job.body["messages"], "add_special_tokens": False}
            for field in ("tools", "chat_template_kwargs"):
                if job.body.get(field) is not None:
                    chat[field] = job.body[field]
            prompt = _ids(await self._post(upstream, url, {**chat, "add_generation_prompt": True}))
            full = _ids(await self._post(upstream, url, {
                **chat, "messages": [*job.body["messages"], {"role": "assistant", "content": job.answer}],
                "add_generation_prompt": False, "continue_final_message": True}))
        else:
            text = job.body["prompt"]
            prompt = _ids(await self._post(upstream, url, {"model": model, "prompt": text}))
            full = _ids(await self._post(upstream, url, {"model": model, "prompt": text + job.answer}))
        try:
            answer = self._split(prompt, full)
            listed = await self._prompt_logprobs(upstream, model, full)
            if len(listed) < len(full):
                # the answer filled the context: it was read without its last token (_prompt_logprobs)
                answer = answer[:len(listed) - len(full)]
            return [self._step(listed[len(prompt) + i], token) for i, token in enumerate(answer)]
        except CannotScorePair:
            raise
        except CannotScore as exc:   # the tokenizer answered: vLLM, and this pair is the trouble
            raise CannotScorePair(str(exc)) from None

    async def _prompt_logprobs(self, upstream: Upstream, model: Any, full: list[int]) -> list[Any]:
        """The ``prompt_logprobs`` of ``full``, one entry a token. vLLM must generate a token
        (``max_tokens`` at least 1), so an answer cut at the context length leaves no room:
        it answers 400 (``max_tokens must be at least 1, got 0``); that answer is read again
        without its last token, which is then not scored."""
        ids = full
        for _ in range(2):
            try:
                data = await self._post(upstream, upstream.root + "/v1/completions", {
                    "model": model, "prompt": ids, "max_tokens": 1, "temperature": 0, "prompt_logprobs": self.k})
            except CannotScore as exc:
                full_context = "answered 400" in str(exc) and ("max_tokens" in str(exc) or "context" in str(exc))
                if not full_context or len(ids) < len(full):
                    raise
                ids = full[:-1]
                continue
            choices = data.get("choices") if isinstance(data, dict) else None
            listed = (choices[0].get("prompt_logprobs") if isinstance(choices, list) and choices
                      and isinstance(choices[0], dict) else None) or data.get("prompt_logprobs")
            if not isinstance(listed, list) or len(listed) != len(ids):
                raise CannotScore("the server answered no prompt_logprobs for every prompt token")
            return listed
        raise AssertionError("not reached")   # pragma: no cover

    def _step(self, entry: Any, token: int) -> Step:
        if not isinstance(entry, dict) or str(token) not in entry:
            raise CannotScore("a prompt_logprobs entry lacks the prompt's own token")
        try:
            own = entry[str(token)]
            top = {key: _logprob(e["logprob"]) for key, e in entry.items() if _rank(e["rank"]) <= self.k}
            return Step(_logprob(own["logprob"]), _rank(own["rank"]), top)
        except (TypeError, KeyError):
            raise CannotScore("a prompt_logprobs entry is not {id: {logprob, rank}}") from None


class LlamaCpp(_Engine):
    """llama-cpp-python's server: /extras/tokenize, and the echoed prompt's logprobs."""

    name = "llama.cpp"

    async def steps(self, upstream: Upstream, job: Job) -> list[Step]:
        if job.endpoint.endswith("/chat/completions"):
            raise CannotScore("llama.cpp's server renders no chat template for a caller: only completions "
                              "prompts can be scored on it")
        url = upstream.root + "/extras/tokenize"
        model = upstream.model or job.body.get("model")
        text = job.body["prompt"]
        prompt = _ids(await self._post(upstream, url, {"model": model, "input": text}))
        full = _ids(await self._post(upstream, url, {"model": model, "input": text + job.answer}))
        self._split(prompt, full)   # the answer must tokenize as a continuation
        # its completions take text only: the same text it tokenized into ``full``
        data = await self._post(upstream, upstream.root + "/v1/completions", {
            "model": model, "prompt": text + job.answer, "max_tokens": 1, "temperature": 0, "echo": True,
            "logprobs": self.k})
        try:
            logprobs = data["choices"][0]["logprobs"]
            tokens, values, tops = logprobs["tokens"], logprobs["token_logprobs"], logprobs["top_logprobs"]
        except (TypeError, KeyError, IndexError):
            raise CannotScore("the server answered no echoed logprobs") from None
        if not (isinstance(tokens, list) and len(tokens) == len(values) == len(tops) and tokens
                and all(isinstance(t, str) for t in tokens)):
            raise CannotScore("the echoed logprobs are not lists of one length")
        # The entries are the prompt's tokens, the BOS token left out wherever it is, then
        # the generated token unless it was the end of the text. They line up with their
        # logprobs only when the prompt starts with the BOS token: llama-cpp-python reads
        # entry i's logprob from the distribution after token i otherwise (0.3.36, llama.py).
        joined = "".join(tokens)
        generated = 0 if joined.endswith(job.answer) else 1
        if generated and not joined[:-len(tokens[-1]) or None].endswith(job.answer):
            raise CannotScore("the echoed tokens do not end with the answer's text")
        entries = len(tokens) - generated
        if entries == len(full):
            raise CannotScore("the prompt does not start with the BOS token, and llama-cpp-python's echoed "
                              "logprobs are one token off for such prompts")
        if entries != len(full) - full.count(full[0]):
            raise CannotScore("the echoed logprobs do not line up with the prompt's tokens")
        at = slice(entries - (len(full) - len(prompt)), entries)
        if "".join(tokens[at]) != job.answer:
            raise CannotScore("the echoed tokens are not the answer's text")
        return [self._step(v, t, top) for v, t, top in zip(values[at], tokens[at], tops[at], strict=True)]

    def _step(self, value: Any, token: str, top: Any) -> Step:
        if not isinstance(top, dict) or not top:
            raise CannotScore("an echoed logprobs entry is empty")
        value = _logprob(value)
        listed = {str(t): _logprob(lp) for t, lp in top.items()}
        # the top-k by text (and the token itself, added last); its rank: one more than
        # the listed tokens more likely than it
        ranked = sorted(listed.values(), reverse=True)[:self.k]
        rank = 1 + sum(1 for lp in ranked if lp > value)
        return Step(float(value), rank if value >= ranked[-1] else self.k + 1, listed)


def measure(steps: Sequence[Step], own: Sequence[Step] | None) -> dict[str, Any]:
    """A scorer's figures for one answer, given its steps and the baseline's own (``own``)."""
    n = len(steps)
    agreed = sum(1 for s in steps if s.rank == 1)
    first = next((i for i, s in enumerate(steps) if s.rank != 1), None)
    out: dict[str, Any] = {"agreement": agreed / n, "tokens": n, "agreed": agreed, "first_disagreement": first}
    if own is not None and len(own) == n:
        drops = [b.logprob - s.logprob for b, s in zip(own, steps, strict=True)]
        out["mean_drop"] = sum(drops) / n
        out["max_drop"] = max(drops)
        out["kl"] = sum(kl_estimate(b.top, s.top) for b, s in zip(own, steps, strict=True)) / n
        out["baseline_agreement"] = sum(1 for b in own if b.rank == 1) / n
    return out


def kl_estimate(p: dict[str, float], q: dict[str, float]) -> float:
    """KL(p || q) over p's listed tokens plus one bucket for the rest (module docstring)."""
    if not p or not q:
        return 0.0
    q_floor = min(q.values())
    total = 0.0
    p_listed = q_listed = 0.0
    for token, lp in p.items():
        pp, lq = math.exp(lp), q.get(token, q_floor)
        total += pp * (lp - lq)
        p_listed += pp
        q_listed += math.exp(lq)
    p_rest, q_rest = max(1 - p_listed, 0.0), max(1 - q_listed, _FLOOR)
    if p_rest > _FLOOR:
        total += p_rest * (math.log(p_rest) - math.log(q_rest))
    return max(total, 0.0)


class Scorer:
    """Scores the baseline's answers under each other side (and the baseline itself)."""

    def __init__(self, client: httpx.AsyncClient, k: int = TOP_K, timeout: float | None = 60.0) -> None:
        self.engines = (Vllm(client, k), LlamaCpp(client, k))
        self.timeout = timeout
        self._engine: dict[str, _Engine | None] = {}   # a server's root: the engine that scored (None: none can)
        self._failures: dict[str, int] = {}
        self._reason: dict[str, str] = {}
        self._probing: dict[str, asyncio.Lock] = {}

    async def score(self, job: Job, base: Upstream, others: Sequence[Upstream]) -> dict[Side, dict[str, Any]]:
        """Each of ``others``' score of ``job``'s answer (``{"unscorable": why}`` where it
        cannot be had); the baseline's own reading gives the drops and the KL."""
        if others and all(self._engine.get(u.root, False) is None for u in others):
            # every scorer has been given up: the baseline's reading would serve nothing
            return {u.side: {"unscorable": self._reason[u.root]} for u in others}
        own_read, *reads = await asyncio.gather(self._steps(base, job), *(self._steps(u, job) for u in others))
        own = own_read if isinstance(own_read, list) else None
        out: dict[Side, dict[str, Any]] = {}
        for upstream, read in zip(others, reads, strict=True):
            if isinstance(read, str):
                out[upstream.side] = {"unscorable": read}
            else:
                out[upstream.side] = {**measure(read, own), "engine": self._name(upstream)}
                if own is None:
                    out[upstream.side]["baseline_unscored"] = own_read
        return out

    def _name(self, upstream: Upstream) -> str:
        engine = self._engine.get(upstream.root)
        return engine.name if engine is not None else ""

    async def _steps(self, upstream: Upstream, job: Job) -> list[Step] | str:
        root = upstream.root
        if root in self._engine:
            engine = self._engine[root]
            if engine is None:
                return self._reason[root]
            try:
                return await self._bounded(engine, upstream, job)
            except CannotScore as exc:
                return str(exc)
        async with self._probing.setdefault(root, asyncio.Lock()):   # the first pairs find the engine
            if root in self._engine:
                return await self._steps(upstream, job)
            reasons = []
            for engine in self.engines:
                try:
                    steps = await self._bounded(engine, upstream, job)
                except CannotScorePair as exc:   # the server is this engine; the pair is the trouble
                    self._engine[root] = engine
                    return str(exc)
                except CannotScore as exc:
                    reasons.append(f"{engine.name}: {exc}")
                    continue
                self._engine[root] = engine
                return steps
            reason = "; ".join(reasons)
            self._failures[root] = self._failures.get(root, 0) + 1
            if self._failures[root] >= GIVE_UP_AFTER:
                self._engine[root] = None
                self._reason[root] = f"the server cannot score answers ({reason})"
                log.warning("%s: teacher-forced scoring failed on the first %d pairs, and is not asked again (%s)",
                            shown(root), GIVE_UP_AFTER, reason)
            return reason

    async def _bounded(self, engine: _Engine, upstream: Upstream, job: Job) -> list[Step]:
        try:
            async with asyncio.timeout(self.timeout):
                return await engine.steps(upstream, job)
        except TimeoutError:
            raise CannotScore(f"no scores within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise CannotScore(f"{type(exc).__name__}: {exc}") from None


async def score_pair(scorer: Scorer, endpoint: str, body: dict[str, Any], answers: dict[Side, Answer],
                     upstreams: Sequence[Upstream], outcome: Outcome) -> dict[str, Any]:
    """The ``score`` and ``noise_score`` fields of a pair: the candidate's and the replica's
    reading of the baseline's answer, the candidate's flagged as a ``cascade`` when the
    texts differ in substance (``outcome`` near or divergent) though it agrees on ``CASCADE_AGREEMENT`` of
    the tokens or more. Nothing for a pair that samples or lacks a candidate's answer."""
    base, cand = answers.get(Side.BASELINE), answers.get(Side.CANDIDATE)
    if base is None or cand is None or not cand.ok or not is_greedy(body):
        return {}
    by_side = {u.side: u for u in upstreams}
    others = [by_side[s] for s in (Side.CANDIDATE, Side.REPLICA) if s in by_side and answers.get(s) is not None]
    reason = scorable(endpoint, body, base)
    found: dict[Side, dict[str, Any]]
    if reason is not None:
        found = {u.side: {"unscorable": reason} for u in others}
    else:
        found = await scorer.score(Job(endpoint, body, base.text), by_side[Side.BASELINE], others)
    score = found.get(Side.CANDIDATE)
    if score is not None and "agreement" in score:
        changed = outcome in (Outcome.NEAR, Outcome.DIVERGENT)
        score["cascade"] = bool(changed and float(score["agreement"]) >= CASCADE_AGREEMENT)
    return {"score": score, "noise_score": found.get(Side.REPLICA)}
