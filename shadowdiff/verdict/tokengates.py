"""The gates on how far the candidate departs from the baseline token by token: the
measures of teacher-forced scoring (``shadowdiff.statistics.scorestats``), each with
its 95 % interval over prompts.

They are what tells a mild quantization from a harsh one when every answer changed in
both: a long answer changes at its first near-tie whatever the quantization, while the
share of the baseline's tokens the candidate would not have chosen, and the KL
divergence between the two sides' next-token distributions, grow with the damage.

- ``--max-token-disagreement``: the excess disagreement, beyond the baseline's own (the
  figure to gate on where the baseline does not read its own answers back as its own
  throughout, as vLLM does not: 97.5-99.4 %);
- ``--min-token-agreement``: the candidate's agreement itself;
- ``--max-kl``: the KL divergence per token, in nats.

Every gate reads its interval alike (``reading``): it fails only when the whole interval
is on the wrong side of its limit, passes only when the whole interval is on the right
side, and is incomplete in between, where more prompts would narrow it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shadowdiff.statistics.scorestats import per_token, percent, points

FAIL, PASS, INCOMPLETE = "fail", "pass", "incomplete"


@dataclass(frozen=True)
class TokenGate:
    name: str            # the gate's name (``shadowdiff.verdict.gates``) and the threshold's key
    key: str             # the measure's key in the run's token agreement
    flag: str
    upper: bool          # a limit from above (max) or from below (min)
    what: str            # the measure, for "the excess disagreement has no interval"
    limit: Callable[[float], str]       # the limit as it reads: "2 points"
    measure: Callable[[dict[str, Any]], str]   # the measure with its interval
    failed: str          # why a FAIL, given the measure and the flag: a sentence's body

    def text(self, limit: float) -> str:
        return f"{self.flag} {self.limit(limit)}"


GATES = (
    TokenGate("max_token_disagreement", "excess_disagreement", "--max-token-disagreement", True,
              "excess disagreement", lambda v: f"{v * 100:g} points", points,
              "the candidate disagrees with the baseline's own reading of its answers on {measure} of their tokens "
              "beyond the baseline's own disagreement, above {flag}"),
    TokenGate("min_token_agreement", "agreement", "--min-token-agreement", False,
              "token agreement", lambda v: f"{v * 100:g} %", percent,
              "the candidate reads the baseline's answers as its own top choice on only {measure} of their tokens, "
              "below {flag}"),
    TokenGate("max_kl", "kl", "--max-kl", True,
              "KL divergence per token", lambda v: f"{v:g} nats a token", per_token,
              "the candidate's next-token distributions depart from the baseline's by a KL divergence of "
              "{measure}, above {flag}"),
)
BY_NAME = {gate.name: gate for gate in GATES}


def reading(interval: Mapping[str, Any], limit: float, upper: bool = True) -> str:
    """A gate on an interval: FAIL when the whole interval is beyond its limit, PASS only
    when the whole interval is within it, INCOMPLETE while it straddles it."""
    low, high = interval["low"], interval["high"]
    if upper:
        return FAIL if low > limit else PASS if high <= limit else INCOMPLETE
    return FAIL if high < limit else PASS if low >= limit else INCOMPLETE


def given(thresholds: Mapping[str, Any]) -> list[tuple[TokenGate, float]]:
    """The token gates a verdict was given, with their limits, in ``GATES``' order."""
    return [(gate, thresholds[gate.name]) for gate in GATES if thresholds.get(gate.name) is not None]


def status(agreement: Mapping[str, Any], gates: list[tuple[TokenGate, float]]) -> str:
    """All the given gates' reading of a run's token agreement together: FAIL if one fails,
    PASS if all pass, else INCOMPLETE (a measure without an interval checked nothing)."""
    readings = []
    for gate, limit in gates:
        interval = agreement.get(gate.key)
        readings.append(INCOMPLETE if not interval or interval.get("high") is None
                        else reading(interval, limit, gate.upper))
    return FAIL if FAIL in readings else PASS if all(r == PASS for r in readings) else INCOMPLETE
