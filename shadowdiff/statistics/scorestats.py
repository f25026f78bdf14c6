"""A run's token agreement: its pairs' teacher-forced scores (shadowdiff.triage.scoring), pooled.

The pooled agreement weighs every token alike (agreed tokens over scored tokens, as
llama.cpp's "same top p" does); the distribution over pairs shows whether disagreement
is spread thin or concentrated in a few answers. The replica's tally is the noise floor:
what the same measure gives between two runs of the baseline.

Agreement alone is misread on a real engine: vLLM reading its own bf16 answers back
agrees with itself on only 97.5-99.4 % of their tokens (a whole answer read at once is
computed unlike one written token by token, and near-ties fall either way), so a
candidate's 97 % says little by itself. The figure to read is the **excess
disagreement**: per prompt, the tokens the candidate disagrees on beyond those the
baseline disagrees on with itself, (baseline's own agreement - candidate's) x tokens,
pooled over prompts with an interval that treats the prompt as the unit
(``shadowdiff.statistics.confidence.ClusteredRatio``). The replica's excess is its noise floor, and
``beyond_replica`` the candidate's disagreement beyond the replica's on the same answers.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from shadowdiff.statistics.confidence import ClusteredRatio, Interval

# Below this share of its own answers' tokens read as its own top choice, the baseline's
# answers were not its greedy reading (another model or template on the scoring route, a
# server changed mid-run): the figures measure that, not the candidate. Real engines sit
# well above it (vLLM bf16 on SmolLM2-135M: 97.5-99.4 %; llama.cpp F16: 100 %).
SELF_AGREEMENT = 0.90

# Finer near 1, where quantization lives; exactly 1 is a bin of its own.
EDGES = (0.0, 0.9, 0.95, 0.98, 0.99, 0.995, 1.0)


@dataclass
class ScoreTally:
    """Scores of one side (the candidate's, or the replica's) over a run's pairs."""

    pairs: int = 0
    tokens: int = 0
    agreed: int = 0
    agreement_sum: float = 0.0
    kl_tokens: int = 0
    kl_sum: float = 0.0             # per-token KL times tokens, over pairs that have one
    drop_sum: float = 0.0           # mean drop times tokens
    max_drop: float | None = None
    baseline_agreed: float = 0.0    # the baseline's agreement with itself, times tokens
    cascades: int = 0
    bins: list[int] = field(default_factory=lambda: [0] * len(EDGES))   # the last: exactly 1
    unscored: Counter[str] = field(default_factory=Counter)
    excess: ClusteredRatio = field(default_factory=ClusteredRatio)           # beyond the baseline's own
    beyond_replica: ClusteredRatio = field(default_factory=ClusteredRatio)   # beyond the replica's
    kl: ClusteredRatio = field(default_factory=ClusteredRatio)               # per token, over prompts
    agreement: ClusteredRatio = field(default_factory=ClusteredRatio)        # the pooled agreement, over prompts

    def add(self, score: dict[str, Any] | None, replica: dict[str, Any] | None = None) -> None:
        """One pair's score; ``replica``: the replica's score of the same answer, if any."""
        if not score:
            return
        if "agreement" not in score:
            self.unscored[str(score.get("unscorable", "unknown"))[:200]] += 1
            return
        if not _valid(score):
            # scoring never stores such figures; a store edited by hand (or by another tool) may
            self.unscored["the stored figures are not a score (tokens, agreement or KL out of range)"] += 1
            return
        n, agreement = int(score["tokens"]), float(score["agreement"])
        self.pairs += 1
        self.tokens += n
        self.agreed += int(score["agreed"])
        self.agreement_sum += agreement
        self.agreement.add(int(score["agreed"]), n)
        self.cascades += bool(score.get("cascade"))
        self.bins[_bin(agreement)] += 1
        if score.get("kl") is not None:
            self.kl_tokens += n
            self.kl_sum += float(score["kl"]) * n
            self.kl.add(float(score["kl"]) * n, n)
            self.drop_sum += float(score["mean_drop"]) * n
            self.baseline_agreed += float(score["baseline_agreement"]) * n
            drop = float(score["max_drop"])
            self.max_drop = drop if self.max_drop is None else max(self.max_drop, drop)
            self.excess.add((float(score["baseline_agreement"]) - agreement) * n, n)
        # the replica read the same answer: the same tokens, or the two are not comparable
        if replica and replica.get("agreement") is not None and _valid(replica) and int(replica["tokens"]) == n:
            self.beyond_replica.add((float(replica["agreement"]) - agreement) * n, n)

    def as_json(self) -> dict[str, Any] | None:
        if not self.pairs and not self.unscored:
            return None
        measured = self.kl_tokens or None
        return {
            "pooled": self.agreed / self.tokens if self.tokens else None,
            "agreement": _excess(self.agreement, floor=0.0, ceiling=1.0),   # with its 95 % interval over prompts
            "pairs": self.pairs, "tokens": self.tokens, "agreed": self.agreed,
            "mean_per_pair": self.agreement_sum / self.pairs if self.pairs else None,
            "distribution": [*({"from": EDGES[i], "to": EDGES[i + 1], "pairs": n}
                               for i, n in enumerate(self.bins[:-1])),
                             {"from": 1.0, "to": 1.0, "pairs": self.bins[-1]}],
            "kl_per_token": self.kl_sum / measured if measured else None,
            "kl": _excess(self.kl, floor=0.0),     # the same, with its 95 % interval over prompts
            "mean_drop": self.drop_sum / measured if measured else None,
            "max_drop": self.max_drop,
            "baseline_agreement": self.baseline_agreed / measured if measured else None,
            "cascades": self.cascades,
            "unscored": dict(self.unscored.most_common()),
            "excess_disagreement": _excess(self.excess),
            "beyond_replica": _excess(self.beyond_replica),
        }


def _share(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def _valid(score: dict[str, Any]) -> bool:
    """Whether a stored score's figures can be pooled: whole counts, shares in [0, 1], and
    finite KL, drops (NaN fails every comparison, so it is caught here too)."""
    tokens, agreed = score.get("tokens"), score.get("agreed")
    if not (isinstance(tokens, int) and isinstance(agreed, int) and 0 <= agreed <= tokens and tokens > 0):
        return False
    if not _share(score.get("agreement")):
        return False
    if score.get("kl") is None:
        return True
    finite = all(isinstance(score.get(k), int | float) and math.isfinite(score[k])
                 for k in ("kl", "mean_drop", "max_drop"))
    return finite and _share(score.get("baseline_agreement"))


def _excess(ratio: ClusteredRatio, floor: float | None = None, ceiling: float | None = None) -> dict[str, Any] | None:
    """A share of tokens with its interval (None without one), and how many pairs and tokens it is over;
    the interval cut to what the measure can be (``floor``, ``ceiling``: an agreement is no more than 1,
    a KL divergence no less than 0, whatever a normal approximation over few prompts says)."""
    if ratio.estimate is None:
        return None
    interval: Interval | None = ratio.interval()
    low = None if interval is None else interval.low if floor is None else max(floor, interval.low)
    high = None if interval is None else interval.high if ceiling is None else min(ceiling, interval.high)
    return {"estimate": ratio.estimate, "low": low, "high": high, "pairs": ratio.clusters, "tokens": int(ratio.n),
            "confidence": interval.confidence if interval else None, "method": interval.method if interval else None}


def _bin(agreement: float) -> int:
    if agreement >= 1.0:
        return len(EDGES) - 1
    for i in range(len(EDGES) - 1):
        if agreement < EDGES[i + 1]:
            return i
    return len(EDGES) - 2


def points(excess: dict[str, Any] | None) -> str:
    """An excess disagreement in points of tokens, with its interval when it has one."""
    if not excess:
        return "—"
    text = f"{excess['estimate'] * 100:+.2f} points"
    if excess["low"] is not None:
        text += f" (95 % interval {excess['low'] * 100:+.2f} to {excess['high'] * 100:+.2f}, {excess['pairs']} prompts)"
    else:
        text += f" ({excess['pairs']} prompt: no interval)"
    return text


def percent(share: dict[str, Any] | None) -> str:
    """A share of tokens (the pooled agreement) in per cent, with its interval when it has one."""
    if not share:
        return "—"
    text = f"{share['estimate'] * 100:.2f} %"
    if share["low"] is not None:
        text += f" (95 % interval {share['low'] * 100:.2f} to {share['high'] * 100:.2f} %, {share['pairs']} prompts)"
    return text


def per_token(kl: dict[str, Any] | None) -> str:
    """A KL divergence per token, in nats, with its interval when it has one."""
    if not kl:
        return "—"
    text = f"{kl['estimate']:.4f} nats a token"
    if kl["low"] is not None:
        text += f" (95 % interval {kl['low']:.4f} to {kl['high']:.4f}, {kl['pairs']} prompts)"
    return text


def unreadable(t: dict[str, Any]) -> str | None:
    """Why the token figures cannot be read as a measure of the candidate, or None when they can."""
    own = t["baseline_agreement"]
    if own is None:
        return ("the baseline did not score its own answers, so the candidate's agreement cannot be set against the "
                "baseline's own (which is not 100 % on a real engine: vLLM bf16 reads its own answers at 97.5-99.4 %)")
    if own < SELF_AGREEMENT:
        return (f"the baseline reads its own answers as its top choice on only {own * 100:.2f} % of their tokens "
                f"(under {SELF_AGREEMENT:.0%}): they were not its own greedy reading (another model or chat template "
                "on the scoring route, or a server changed mid-run), so these figures are not a measure of the "
                "candidate")
    return None
