"""Making a mirrored request's pair from its two answers: read, compare, triage, redact.

What grows with the answers, and nothing else: no metrics, no event loop, no store. It
runs in the pairs' thread or in the pair process (``shadowdiff.proxy.pairprocess``), so
everything it takes and gives is plain data that pickles: a ``Maker`` is built from
``MakerSettings`` on either side of a pipe, ``PairInputs`` go in, a ``Made`` comes out,
and the proxy counts it (``shadowdiff.proxy.pairs``) wherever it was made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shadowdiff.answers.compare import Comparison, Thresholds, compare_answers, error_comparison
from shadowdiff.answers.parse import answer_from, read_answer
from shadowdiff.answers.records import Answer, Pair, prompt_text
from shadowdiff.answers.redact import Redactor, header_secrets
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.proxy.shadow import Plan, ShadowReply
from shadowdiff.proxy.tap import Tapped
from shadowdiff.store.writer import held_size
from shadowdiff.triage.pairing import assemble_pair
from shadowdiff.vocabulary import CHANGED, Outcome, Side, Tally

# what the run's counts are to add for a pair: (``pairs`` or ``noise`` or capped, outcome, comparable)
TallyKey = tuple[str, str, bool]


@dataclass(frozen=True)
class MakerSettings:
    """What making a pair takes of the proxy's settings (sent to the pair process)."""

    primary_side: Side
    primary_model: str | None
    near: float
    redact: tuple[str, ...]

    @classmethod
    def of(cls, settings: ProxySettings) -> MakerSettings:
        return cls(settings.primary_side, settings.primary_model, settings.near, settings.redact)


@dataclass(frozen=True)
class PairInputs:
    """A mirrored request and its answers as they came, and what is to be made of them."""

    key: str
    seq: int
    path: str
    plan: Plan
    tapped: Tapped
    shadow: ShadowReply
    replica: ShadowReply | None
    kept: bool       # stored even if it did not change (``keep_rate``)
    stores: bool     # the proxy has a store

    @property
    def size(self) -> int:
        """The bytes it holds, about: the request's and the answers'."""
        return (len(self.plan.body) + len(self.tapped.raw) + self.shadow.size
                + (self.replica.size if self.replica is not None else 0))


@dataclass(frozen=True)
class Measured:
    """What the metrics count of a compared pair: the shadow's call, each side's output,
    the outcome and the noise floor's, and, for a change, where and how it diverged."""

    shadow_side: Side
    reason: str                  # how the shadow's call ended (``ok``, or why it failed)
    shadow_ok: bool
    shadow_duration: float | None
    shadow_ttft: float | None
    shadow_ttfat: float | None
    output: tuple[tuple[Side, int, float], ...]   # per answered side: completion tokens, duration
    outcome: Outcome
    comparable: bool
    noise: Outcome | None
    tallies: tuple[TallyKey, ...]
    similarity: float | None = None     # a change's, with where it diverged and its signals' kinds
    first_char: int | None = None
    kinds: frozenset[str] = frozenset()


TALLIES = 10    # where the tallies are in ``plain``'s values


def plain(m: Measured) -> tuple[Any, ...]:
    """``m`` as plain values (strings for its enums): what the pair process sends back for a
    pair it made and stored, unpickled on the proxy's event loop (``from_plain``, later, in
    the pairs' thread). Enums unpickle slowly: a lookup by value each."""
    return (m.shadow_side.value, m.reason, m.shadow_ok, m.shadow_duration, m.shadow_ttft, m.shadow_ttfat,
            tuple((side.value, tokens, seconds) for side, tokens, seconds in m.output), m.outcome.value,
            m.comparable, None if m.noise is None else m.noise.value, m.tallies, m.similarity, m.first_char,
            tuple(m.kinds))


def from_plain(parts: tuple[Any, ...]) -> Measured:
    (side, reason, ok, duration, ttft, ttfat, output, outcome, comparable, noise, tallies, similarity, first_char,
     kinds) = parts
    return Measured(Side(side), reason, ok, duration, ttft, ttfat,
                    tuple((Side(s), tokens, seconds) for s, tokens, seconds in output), Outcome(outcome),
                    comparable, None if noise is None else Outcome(noise), tallies, similarity, first_char,
                    frozenset(kinds))


@dataclass
class Compared:
    """A pair's answers read and compared."""

    answers: dict[Side, Answer]
    shadow: Answer
    reason: str
    comparison: Comparison
    noise: Comparison | None
    changed: bool          # comparable, and changed in substance
    comparable: bool
    tallies: list[TallyKey] = field(default_factory=list)


@dataclass
class Made:
    """A compared pair as made: ``measured`` always; ``stored``, redacted, with its size,
    when it is to be stored (every change, the rest when kept)."""

    measured: Measured
    stored: Pair | None
    size: int


class Maker:
    def __init__(self, settings: MakerSettings) -> None:
        self.settings = settings
        self.thresholds = Thresholds(near=settings.near)
        self.redactor = Redactor(settings.redact)

    def make(self, inputs: PairInputs) -> Made:
        """The pair of ``inputs``, compared, triaged and redacted: what the pair task needs
        when it does not score the pair (a scored pair is made in two steps around its scoring)."""
        compared = self.compared(inputs.tapped, inputs.plan, inputs.shadow, inputs.replica)
        return self.made(inputs.key, inputs.seq, inputs.path, inputs.plan, compared, {}, inputs.kept, inputs.stores)

    def compared(self, tapped: Tapped, plan: Plan, shadow: ShadowReply, replica: ShadowReply | None) -> Compared:
        """The answers read, by side, and compared."""
        primary = self._primary_answer(tapped, plan)
        shadow_answer, reason = shadow.read()
        answers = {primary.side: primary, shadow_answer.side: shadow_answer}
        comparison = self._compare(answers[Side.BASELINE], answers[Side.CANDIDATE])
        noise = None
        if replica is not None:
            answers[Side.REPLICA], _ = replica.read()
            noise = self._compare(answers[Side.BASELINE], answers[Side.REPLICA])
        changed = plan.comparable and comparison.outcome in CHANGED
        compared = Compared(answers, shadow_answer, reason, comparison, noise, changed, plan.comparable)
        if noise is not None:
            compared.tallies.append(("noise", noise.outcome.value, plan.comparable))
        outcome = comparison.outcome
        compared.tallies.append(("pairs", outcome.value, plan.comparable))
        base, cand = answers[Side.BASELINE], answers[Side.CANDIDATE]
        if plan.comparable and outcome is not Outcome.ERROR and base.capped & cand.capped:
            compared.tallies.append((Tally.CAPPED, outcome.value, True))
        return compared

    def made(self, key: str, seq: int, path: str, plan: Plan, compared: Compared, scores: dict[str, Any],
             kept: bool, stores: bool) -> Made:
        """The pair, triaged on the true answers, when it changed or is kept (a cascade is
        one more signal, counted with the others); and as it is stored, redacted, with its
        size, when it is stored (every change, the rest when ``kept``)."""
        keep = stores and (compared.changed or kept)
        if not (compared.changed or keep):
            return Made(measured(compared), None, 0)
        pair = assemble_pair(key, seq, path, prompt_text(plan.request), plan.request, compared.answers,
                             compared.comparison, noise=compared.noise, scores=scores,
                             category=_category(plan.request), comparable=plan.comparable)
        found = measured(compared, pair if compared.changed else None)
        if not keep:
            return Made(found, None, 0)
        stored = self.redactor.with_literals(header_secrets(plan.headers)).pair(pair)
        return Made(found, stored, held_size(stored, len(plan.body)))

    def _compare(self, a: Answer, b: Answer) -> Comparison:
        """The comparison of two answers; an error one if a side failed."""
        if not (a.ok and b.ok):
            return error_comparison(a.finish_reason, b.finish_reason)
        return compare_answers(a, b, self.thresholds)

    def _primary_answer(self, tapped: Tapped, plan: Plan) -> Answer:
        s = self.settings
        base = Answer(s.primary_side, plan.request.get("model") if s.primary_model is None else s.primary_model)
        reading = read_answer(tapped.raw, tapped.stream)
        return answer_from(base, reading, tapped.status, tapped.started, tapped.first, tapped.ended,
                           tapped.first_answer, tapped.last if tapped.stream else None)   # a body: all at once


def measured(compared: Compared, change: Pair | None = None) -> Measured:
    """What the metrics count of ``compared``; with ``change``, the pair it made when it
    changed (its similarity, first divergence and signals)."""
    shadow = compared.shadow
    comparison = change.comparison if change is not None else None
    return Measured(
        shadow.side, compared.reason, shadow.ok, shadow.duration, shadow.ttft, shadow.ttfat,
        tuple((a.side, a.completion_tokens, a.duration) for a in compared.answers.values()
              if a.ok and a.completion_tokens and a.duration),
        compared.comparison.outcome, compared.comparable,
        compared.noise.outcome if compared.noise is not None else None,
        tuple(compared.tallies),
        comparison.similarity if comparison is not None else None,
        comparison.first_char if comparison is not None else None,
        frozenset(s["kind"] for s in (change.signals or [])) if change is not None else frozenset())


def _category(request: dict[str, Any]) -> str | None:
    metadata = request.get("metadata")
    category = metadata.get("category") if isinstance(metadata, dict) else None
    return None if category is None else str(category)
