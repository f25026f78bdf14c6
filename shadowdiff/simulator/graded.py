"""The answer a simulated deployment gives to a gradable question, right or wrong.

A question ``questions.solve`` recognises (the gradable workload's kinds, or a plain
arithmetic question) gets a short answer: a sentence or two of working, then the line
``Answer: <value>``. Which value:

* the baseline is right on a share ``accuracy`` of the questions (``--accuracy``). A
  stable hash of the question decides which, so a question is right or wrong on every
  call, in every process, on every machine; raising the accuracy only adds right ones.
  A wrong value is a plausible one: a number off by a little or by a slipped digit,
  the day before or after, another option;
* a profile's ``number`` drift (the flipped fact) changes the value on the prompts it
  selects: a right answer becomes wrong, and a wrong one becomes another value, which is
  the right one with probability ``RECOVERY`` (a candidate that fixes a baseline
  mistake, as quantization noise sometimes does);
* every other drift (wording, formatting, repetition, an aside, an early stop) changes
  the working only, and so does a replica's rare flip at a near-tie: the value stays.

The answer becomes tokens like any other, so streams, logprobs and usage follow.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass
from fractions import Fraction

from shadowdiff.simulator import baseline_text, drift, questions
from shadowdiff.simulator.gradable import ANSWER_PREFIX, Form, Solution, number_text
from shadowdiff.simulator.hashing import mix, unit
from shadowdiff.simulator.profiles import DriftKind, Profile

DEFAULT_ACCURACY = 0.9
RECOVERY = 0.25         # of the flipped answers the baseline got wrong: these come out right
_SALT_RIGHT, _SALT_WRONG = 59, 61


@dataclass(frozen=True, slots=True)
class Answered:
    """A gradable question's final answer: the baseline's text, this deployment's text."""

    base: str
    text: str
    kind: DriftKind | None      # the drift applied (None: the baseline's answer)
    planned: DriftKind | None
    replica_flipped: bool


def wrong_values(solution: Solution) -> tuple[str, ...]:
    """Plausible wrong answers to ``solution``, nearest mistakes first."""
    right = solution.answer
    if solution.form is Form.LETTER:
        return tuple(letter for letter, _ in solution.labels if letter != right)
    if solution.form is Form.WEEKDAY:
        at = questions.WEEKDAYS.index(right)
        return tuple(questions.WEEKDAYS[(at + d) % 7] for d in (1, -1, 2, -2))
    if solution.form is Form.DATE:
        day = datetime.date.fromisoformat(right).toordinal()
        near = (day + d for d in (1, -1, 2, -2, 3, -3))     # the calendar's ends cut some off
        return tuple(datetime.date.fromordinal(n).isoformat() for n in near
                     if datetime.date.min.toordinal() <= n <= datetime.date.max.toordinal())
    value = Fraction(right)
    step = Fraction(1, value.denominator)     # one in the last place: 1 for an integer
    slips = [value + step, value - step, value + 2 * step, value - 2 * step]
    # an integer's carry or borrow forgotten; a decimal's point in the wrong place
    slips += [value + 10, value - 10] if value.denominator == 1 else [value * 10, value / 10]
    # a count or a measure is not negative, so neither is a plausible mistake about one
    texts = (number_text(v) for v in slips if v != value and (v >= 0 or value < 0))
    return tuple(dict.fromkeys(t for t in texts if t is not None))


def said_by_baseline(solution: Solution, question: str, accuracy: float) -> str:
    """The value a baseline at ``accuracy`` answers ``question`` with."""
    key = baseline_text.prompt_key(question)
    if unit(key, _SALT_RIGHT) < accuracy:
        return solution.answer
    wrong = wrong_values(solution)
    return wrong[mix(key, _SALT_WRONG) % len(wrong)]


def flipped(solution: Solution, said: str, rng: random.Random) -> str:
    """The value after a flipped fact: wrong where ``said`` was right; where it was wrong,
    right with probability ``RECOVERY``, else another wrong value."""
    if said != solution.answer and rng.random() < RECOVERY:
        return solution.answer
    return rng.choice([v for v in wrong_values(solution) if v != said])


def working(solution: Solution, value: str) -> str:
    """What comes before the answer line: how ``value`` was found, then a closing sentence
    (so that an early stop, which ends the working at a sentence, has one to end at)."""
    return f"{solution.explain(value)} The result is {value}."


def text(working: str, value: str) -> str:
    """The whole answer: the working, then the answer line."""
    return f"{working}\n\n{ANSWER_PREFIX}{value}"


def answer(profile: Profile, seed: int, accuracy: float, key: int, prompt: str) -> Answered | None:
    """The final answer to ``prompt`` (its key ``key``) if it asks a gradable question,
    else None; ``seed`` is the server's (a replica's is not 0)."""
    question = baseline_text.subject(prompt).strip()
    solution = questions.solve(question)
    if solution is None:
        return None
    said = said_by_baseline(solution, question, accuracy)
    planned = drift.planned_kind(profile, key)
    base = working(solution, said)
    value, shown = said, base
    kind: DriftKind | None = None
    if planned is DriftKind.NUMBER:
        value, kind = flipped(solution, said, drift.detail_rng(profile, key)), planned
        shown = working(solution, value)
    else:
        # Drift of the text kinds reaches the working only: the answer line keeps its value.
        drifted = drift.apply_profile(profile, key, prompt, drift.retokenize(base))
        shown, kind = drifted.text, drifted.kind
    replica = drift.replica_flip(key, seed, profile.replica_rate, prompt, drift.retokenize(shown))
    return Answered(text(base, said), text(replica or shown, value), kind, planned, replica is not None)

