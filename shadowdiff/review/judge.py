"""An optional LLM judge: asks the rubric question of any OpenAI-compatible server.

For each pair changed in substance (``near`` or ``divergent``) the judge sees the prompt and the
two answers as A and B, in an order that is random per pair but stable (judges favour
a position; a fixed baseline-first order would bias every call the same way). The order
is the review page's own (``Blinding``, keyed by the store's secret), so the judge's
letters are the reviewer's: its reason is stored as it wrote it, in letters, and shown
as it is; an order anyone could compute (it once was a hash of the pair's key) would
let a reviewer map its letters to the sides. It must answer with one JSON object; what
it says is stored as the pair's *suggested* verdict (on the real sides) and reason,
shown to reviewers beside the signals. It never counts toward PASS: the acceptance
verdict reads people's verdicts only.

The reply's shape is asked for twice: in words (the system prompt) and, where the server
takes it, as a JSON schema in ``response_format``, which the server enforces while
decoding (``FORMATS``: OpenAI's structured outputs for vLLM and SGLang, then the JSON mode
with a schema of llama-cpp-python's server): a small model asked in words alone answered
in no usable shape (SmolLM2-135M on vLLM: 0 of 29 judged); held to the schema it cannot
stray from it. A form the server refuses (an HTTP error naming the field, or a 400/422
that the next form does not get) is not asked again in the run, and the run says so.

An answer that is still not the JSON asked for (cut at ``max_tokens``, a server that
ignores the schema) is counted, shown, and left unjudged, not guessed at; a judge that is
down or erroring is retried (``shadowdiff.answers.client``), then reported.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from shadowdiff.answers.arrivals import answers_session
from shadowdiff.answers.client import Caller, Upstream
from shadowdiff.answers.compare import render
from shadowdiff.answers.invisible import json_text, safe_text
from shadowdiff.answers.records import Answer
from shadowdiff.errors import ConfigError, InputError
from shadowdiff.review.blind import Blinding
from shadowdiff.store import Store, StoredPair, schema
from shadowdiff.store.review import ReviewQueue
from shadowdiff.vocabulary import SUBSTANTIVE, Side, Verdict

SYSTEM = """You review two answers to the same prompt, produced by two deployments of one model.
The rubric question: is there a factual or numerical claim that one answer gets right and the other gets wrong?
Wording, reordering, formatting and equally defensible readings are not regressions.
An answer may hold its reasoning as <think>...</think>, tool calls as <tool_call>NAME ARGUMENTS</tool_call>,
a refusal as <refusal>...</refusal>, and further choices after "--- choice N ---" lines: judge all of it,
a wrong tool argument or a wrong step in the reasoning included.

Reply with exactly one JSON object and nothing else:
{"verdict": V, "worse": W, "reason": "one or two sentences"}
where V is one of:
  "equivalent" - the same answer;
  "wording"    - worded differently, same content;
  "minor"      - one answer is slightly worse (formatting, a repeated word, cut short) but no fact differs;
  "ambiguous"  - the answers differ but both readings are defensible;
  "factual"    - one answer states a fact or number wrongly that the other gets right;
and W is "A" or "B" (the worse answer) for "minor" and "factual", otherwise null.
In the reason, call the answers "Answer A" and "Answer B"."""

_JUDGED = {Verdict.EQUIVALENT, Verdict.WORDING, Verdict.MINOR, Verdict.AMBIGUOUS, Verdict.FACTUAL}
# The reply the system prompt describes, as a JSON schema for ``response_format``.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": sorted(_JUDGED)},
        "worse": {"anyOf": [{"type": "string", "enum": ["A", "B"]}, {"type": "null"}]},
        "reason": {"type": "string", "maxLength": 600},
    },
    "required": ["verdict", "worse", "reason"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {"type": "json_schema", "json_schema": {"name": "rubric_verdict", "strict": True, "schema": SCHEMA}}
# Tried in this order, the first the server takes kept for the run: OpenAI's structured
# outputs (vLLM, SGLang, TGI's OpenAI route), then the JSON mode with a schema that
# llama-cpp-python's server enforces by grammar (it refuses "json_schema"), then words only.
FORMATS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("a JSON schema (response_format json_schema)", RESPONSE_FORMAT),
    ("a JSON schema in JSON mode (response_format json_object with a schema)",
     {"type": "json_object", "schema": SCHEMA}),
)
SHOWN = 5    # unreadable replies shown whole (cut at SNIPPET characters) in the command's output
SNIPPET = 300
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL)   # reasoning models' scratchpad


@dataclass(frozen=True)
class JudgeSettings:
    url: str
    model: str
    api_key: str | None = None
    concurrency: int = 4
    max_chars: int = 8000          # per answer: long answers are cut (and the judge told so)
    max_tokens: int = 300
    timeout: float = 120.0         # seconds for each attempt of a call, whole

    def __post_init__(self) -> None:
        if not re.match(r"^https?://[^/]+", self.url):
            raise ConfigError(f"--judge must be an http(s) URL, got {self.url!r}")
        if self.concurrency < 1:
            raise ConfigError("--judge-concurrency must be at least 1")
        if not self.timeout > 0:
            raise ConfigError("--judge-timeout must be a number of seconds above 0")


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    worse_side: Side | None     # factual: the wrong side; minor and improvement: the worse one
    reason: str                 # as the judge wrote it: the answers are A and B, in the review page's order


@dataclass
class JudgeTally:
    judged: Counter[str] = field(default_factory=Counter)
    unparsable: int = 0
    failed: int = 0
    first_problem: str | None = None
    # how the replies were held to SCHEMA (a FORMATS name), or None: asked in words only
    structured: str | None = FORMATS[0][0]
    refused: list[str] = field(default_factory=list)   # each form the server would not take, and what it said
    unreadable: list[tuple[str, str, str]] = field(default_factory=list)   # (pair key, why, the reply), the first SHOWN

    def problem(self, text: str) -> None:
        self.first_problem = self.first_problem or text

    def cannot_read(self, key: str, why: str, reply: str) -> None:
        self.unparsable += 1
        self.problem(f"pair {key}: {why}")
        if len(self.unreadable) < SHOWN:
            self.unreadable.append((key, why, reply if len(reply) <= SNIPPET else reply[:SNIPPET] + " [...]"))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... cut: {len(text) - limit} more characters]"


def messages(pair: StoredPair, baseline_first: bool, max_chars: int) -> list[dict[str, str]]:
    base, cand = pair.answers.get(Side.BASELINE), pair.answers.get(Side.CANDIDATE)
    # the whole answer, as the comparison saw it: reasoning, tool calls, every choice
    texts = [render(base.choices) if base else "", render(cand.choices) if cand else ""]
    first, second = texts if baseline_first else texts[::-1]
    user = (f"PROMPT:\n{_cut(pair['prompt'] or '', max_chars)}\n\n"
            f"ANSWER A:\n{_cut(first, max_chars)}\n\nANSWER B:\n{_cut(second, max_chars)}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _first_object(text: str) -> dict[str, Any]:
    """The first JSON object with a verdict in ``text`` (judges wrap it in prose, fences or thinking)."""
    text = _THINKING.sub("", text)
    decoder = json.JSONDecoder()
    problem = "no JSON object in the judge's reply"
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            problem = f"the judge's JSON does not parse: {exc.msg}"
            continue
        if isinstance(value, dict) and "verdict" in value:
            return value
    raise InputError(problem)


def parse_judgement(content: str, baseline_first: bool) -> Judgement:
    """The judge's reply as a verdict on the real sides; ``InputError`` if it is not one."""
    data = _first_object(content)
    verdict_text = data.get("verdict")
    if not isinstance(verdict_text, str) or verdict_text.lower() not in _JUDGED:
        raise InputError(f"the judge's verdict is not one of {', '.join(sorted(_JUDGED))}")
    verdict = Verdict(verdict_text.lower())

    def side_of(letter: str) -> Side:
        return Side.BASELINE if (letter.upper() == "A") == baseline_first else Side.CANDIDATE

    # kept in the judge's letters, which are the review page's: rewriting "Answer A" to
    # side names left its other mentions ("B is worse. A is wrong") in letters anyway
    reason = str(data.get("reason") or "")[:2000]
    if verdict not in (Verdict.MINOR, Verdict.FACTUAL):
        return Judgement(verdict, None, reason)
    worse = data.get("worse")
    if not isinstance(worse, str) or worse.upper() not in ("A", "B"):
        raise InputError(f"a {verdict.value} verdict must say which answer is worse (A or B)")
    worse_side = side_of(worse)
    if verdict is Verdict.MINOR and worse_side is Side.BASELINE:
        # a slightly worse baseline is, from the candidate's side, an improvement
        return Judgement(Verdict.IMPROVEMENT, worse_side, reason)
    return Judgement(verdict, worse_side, reason)


def pairs_to_judge(store: Store, run_id: str, redo: bool = False) -> list[int]:
    p = schema.pairs.c
    query = sa.select(p.id).where(p.run_id == run_id, p.outcome.in_(SUBSTANTIVE), p.comparable.is_(True))
    if not redo:
        query = query.where(p.judge_verdict.is_(None))
    with store.engine.connect() as c:
        return [int(i) for i in c.execute(query.order_by(p.priority.desc(), p.id)).scalars()]


async def judge_run(store: Store, run_id: str, settings: JudgeSettings, redo: bool = False,
                    progress: Callable[[], object] | None = None) -> JudgeTally:
    """Ask the judge about every pair changed in substance of ``run_id`` not judged yet."""
    queue = ReviewQueue(store)
    blinding = Blinding(store.secret("blind_key"))
    tally = JudgeTally()
    # The judge is not one of the compared sides; REPLICA is only the label its answers carry.
    upstream = Upstream(Side.REPLICA, settings.url, settings.model, settings.api_key)
    ids = await asyncio.to_thread(pairs_to_judge, store, run_id, redo)
    limit = asyncio.Semaphore(settings.concurrency)
    async with answers_session(settings.concurrency, settings.timeout) as session:
        caller = Caller(session, timeout=settings.timeout)   # (each attempt whole, as --judge-timeout says)
        asking = _Asking(caller, upstream, tally)

        async def one(pair_id: int) -> None:
            async with limit:
                pair = await asyncio.to_thread(queue.pair, pair_id)
                if pair is None:
                    return
                order = blinding.a_is_baseline(pair_id)
                answer = await asking.ask({"messages": messages(pair, order, settings.max_chars), "temperature": 0,
                                           "max_tokens": settings.max_tokens})
                if answer.error is not None:
                    tally.failed += 1
                    tally.problem(f"pair {pair['key']}: {answer.error}")
                else:
                    try:
                        judgement = parse_judgement(answer.text, order)
                    except InputError as exc:
                        why = str(exc) + (f" (the reply was cut at max_tokens {settings.max_tokens})"
                                       if answer.finish_reason == "length" else "")
                        tally.cannot_read(pair["key"], why, answer.text)
                    else:
                        await asyncio.to_thread(
                            queue.set_judge, pair_id, judgement.verdict.value,
                            judgement.worse_side.value if judgement.worse_side else None, judgement.reason)
                        tally.judged[judgement.verdict.value] += 1
            if progress is not None:
                progress()

        await asyncio.gather(*(one(i) for i in ids))
    return tally


class _Asking:
    """Asks the judge in the first of ``FORMATS`` its server takes, then in words only.

    A refusal is an HTTP error that names the field, or a 400/422 (or, from llama.cpp's
    server, a 500 naming the field) that goes away when the same request is asked in the
    next form: a 400 for a prompt too long stays in every form, and keeps the schema for
    the other pairs. Requests in flight beside the first refusal are each asked again in
    the next form, so no pair is lost to the switch."""

    def __init__(self, caller: Caller, upstream: Upstream, tally: JudgeTally) -> None:
        self.caller, self.upstream, self.tally = caller, upstream, tally
        self.form = 0   # the index in FORMATS of the form asked now; len(FORMATS): words only

    async def ask(self, body: dict[str, Any]) -> Answer:
        form, refused = self.form, []
        while True:
            extra = {"response_format": FORMATS[form][1]} if form < len(FORMATS) else {}
            answer = await self.caller.call(self.upstream, "/v1/chat/completions", {**body, **extra})
            if form == len(FORMATS) or not _refusal(answer):
                break
            refused.append((form, answer))
            form += 1
        # the earlier forms were refused if this one was taken, or if each refusal named the field
        if refused and (answer.error is None or all(_named(a) for _, a in refused)) and self.form < form:
            self.tally.refused += [f"{FORMATS[f][0]}: {(a.error or '')[:200]}"
                                   for f, a in refused if f >= self.form]
            self.form = form
            self.tally.structured = FORMATS[form][0] if form < len(FORMATS) else None
        return answer


def _named(answer: Answer) -> bool:
    return any(word in (answer.error or "").lower() for word in ("response_format", "json_schema", "structured"))


def _refusal(answer: Answer) -> bool:
    """Whether an error may be the server refusing ``response_format`` (asked again in the next form to tell)."""
    if answer.error is None or answer.status is None or not 400 <= answer.status < 600:
        return False
    return _named(answer) or answer.status in (400, 422)


def describe(tally: JudgeTally) -> str:
    parts = [f"{sum(tally.judged.values())} pairs judged"]
    parts += [f"{n} {verdict}" for verdict, n in sorted(tally.judged.items())]
    if tally.unparsable:
        parts.append(f"{tally.unparsable} replies not in the asked format")
    if tally.failed:
        parts.append(f"{tally.failed} calls failed")
    text = ", ".join(parts)
    if tally.refused:
        text += "\nthe judge's server refused " + "; then ".join(map(safe_text, tally.refused))
    if sum(tally.judged.values()) or tally.unparsable:
        text += (f"\nreplies held to {tally.structured}" if tally.structured else
                 "\nasked in words only, which small models often do not follow")
    if tally.unreadable:
        shown = len(tally.unreadable)
        text += (f"\nreplies that could not be read ({shown} of {tally.unparsable} shown; those pairs stay unjudged):"
                 + "".join(f"\n  pair {safe_text(key)}: {safe_text(why)}\n    {json_text(reply)}"
                           for key, why, reply in tally.unreadable))
    elif tally.first_problem:
        text += f"\nfirst problem: {safe_text(tally.first_problem)}"
    return text + "\n(suggestions only: a person's verdict decides PASS)"

