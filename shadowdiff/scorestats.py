"""A run's token agreement: its pairs' teacher-forced scores (shadowdiff.scoring), pooled.

The pooled agreement weighs every token alike (agreed tokens over scored tokens, as
llama.cpp's "same top p" does); the distribution over pairs shows whether disagreement
is spread thin or concentrated in a few answers. The replica's tally is the noise floor:
what the same measure gives between two runs of the baseline.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

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

    def add(self, score: dict[str, Any] | None) -> None:
        if not score:
            return
        if "agreement" not in score:
            self.unscored[str(score.get("unscorable", "unknown"))[:200]] += 1
            return
        n, agreement = int(score["tokens"]), float(score["agreement"])
        self.pairs += 1
        self.tokens += n
        self.agreed += int(score["agreed"])
        self.agreement_sum += agreement
        self.cascades += bool(score.get("cascade"))
        self.bins[_bin(agreement)] += 1
        if score.get("kl") is not None:
            self.kl_tokens += n
            self.kl_sum += float(score["kl"]) * n
            self.drop_sum += float(score["mean_drop"]) * n
            self.baseline_agreed += float(score["baseline_agreement"]) * n
            drop = float(score["max_drop"])
            self.max_drop = drop if self.max_drop is None else max(self.max_drop, drop)

    def as_json(self) -> dict[str, Any] | None:
        if not self.pairs and not self.unscored:
            return None
        measured = self.kl_tokens or None
        return {
            "pooled": self.agreed / self.tokens if self.tokens else None,
            "pairs": self.pairs, "tokens": self.tokens, "agreed": self.agreed,
            "mean_per_pair": self.agreement_sum / self.pairs if self.pairs else None,
            "distribution": [*({"from": EDGES[i], "to": EDGES[i + 1], "pairs": n}
                               for i, n in enumerate(self.bins[:-1])),
                             {"from": 1.0, "to": 1.0, "pairs": self.bins[-1]}],
            "kl_per_token": self.kl_sum / measured if measured else None,
            "mean_drop": self.drop_sum / measured if measured else None,
            "max_drop": self.max_drop,
            "baseline_agreement": self.baseline_agreed / measured if measured else None,
            "cascades": self.cascades,
            "unscored": dict(self.unscored.most_common()),
        }


def _bin(agreement: float) -> int:
    if agreement >= 1.0:
        return len(EDGES) - 1
    for i in range(len(EDGES) - 1):
        if agreement < EDGES[i + 1]:
            return i
    return len(EDGES) - 2
